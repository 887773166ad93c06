//! Extension data on a metadata map (DMP §8.3): a value sits in `metadata[<URI>]`, written
//! only for an active extension; on a Message or Artifact the caller also names the URI in
//! `extensions`. One trait so gate/v1 and work/v1 state are read and written alike.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

/// A value that lives under one extension URI in `metadata`.
pub trait ExtensionData: Serialize + DeserializeOwned {
    /// The extension URI this value sits under.
    const URI: &'static str;

    /// The value under `URI`.
    fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("extension data is plain data")
    }

    /// Writes this value under `URI`, leaving the other members as they are.
    fn write_into(&self, metadata: &mut Map<String, Value>) {
        metadata.insert(Self::URI.to_owned(), self.to_value());
    }

    /// A metadata map holding only this value.
    fn to_metadata(&self) -> Map<String, Value> {
        let mut m = Map::new();
        self.write_into(&mut m);
        m
    }

    /// Reads the value back: `None` when absent or not of this shape.
    fn from_metadata(metadata: &Map<String, Value>) -> Option<Self> {
        serde_json::from_value(metadata.get(Self::URI)?.clone()).ok()
    }
}
