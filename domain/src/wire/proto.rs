//! ProtoJSON helpers shared by the wire types: `Metadata` (a `google.protobuf.Struct`), `null`
//! read as the default, and unset booleans left out.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// A JSON object (`google.protobuf.Struct`).
pub type Metadata = Map<String, Value>;

/// Treats an explicit `null` like an absent field (ProtoJSON: null means "default").
pub(crate) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}
