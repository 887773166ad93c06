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

/// ProtoJSON `int64`: written as a decimal string, read from a string or a number (`null`
/// and absence are unset).
pub(crate) mod int64 {
    use serde::{de, Deserialize, Deserializer, Serializer};
    use serde_json::Value;

    pub fn serialize<S: Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(n) => s.serialize_str(&n.to_string()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        match Option::<Value>::deserialize(d)? {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n
                .as_u64()
                .map(Some)
                .ok_or_else(|| de::Error::custom(format!("{n} is not a non-negative integer"))),
            Some(Value::String(s)) => s
                .trim()
                .parse::<u64>()
                .map(Some)
                .map_err(|_| de::Error::custom(format!("{s:?} is not a non-negative integer"))),
            Some(other) => Err(de::Error::custom(format!(
                "expected an integer (a number or a decimal string), got {other}"
            ))),
        }
    }
}

/// A required int64 as ProtoJSON writes it (a decimal string), read from a number or a string.
pub(crate) mod int64_required {
    use serde::{de, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        super::int64::deserialize(d)?.ok_or_else(|| de::Error::custom("an integer is required"))
    }
}
