//! `Part`: one piece of message or artifact content (text, raw bytes, a URL or data), with
//! the proto oneof checked on the way in.

use base64::Engine;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::proto::Metadata;

/// The content of a part: exactly one of `text`, `raw`, `url`, `data` (proto oneof `content`).
#[derive(Debug, Clone, PartialEq)]
pub enum PartContent {
    Text(String),
    /// Decoded bytes; base64 (standard, padded) on the wire.
    Raw(Vec<u8>),
    Url(String),
    Data(Value),
}

/// `lf.a2a.v1.Part`.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub content: PartContent,
    pub metadata: Option<Metadata>,
    pub filename: Option<String>,
    pub media_type: Option<String>,
}

impl Part {
    pub fn text(t: impl Into<String>) -> Self {
        Self {
            content: PartContent::Text(t.into()),
            metadata: None,
            filename: None,
            media_type: None,
        }
    }
    pub fn data(v: Value) -> Self {
        Self {
            content: PartContent::Data(v),
            metadata: None,
            filename: None,
            media_type: None,
        }
    }
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(t) => Some(t),
            _ => None,
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartRepr {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    raw: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Metadata>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    filename: Option<String>,
    #[serde(default, alias = "media_type", skip_serializing_if = "Option::is_none")]
    media_type: Option<String>,
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut r = PartRepr {
            text: None,
            raw: None,
            url: None,
            data: None,
            metadata: self.metadata.clone(),
            filename: self.filename.clone(),
            media_type: self.media_type.clone(),
        };
        match &self.content {
            PartContent::Text(t) => r.text = Some(t.clone()),
            PartContent::Raw(b) => {
                r.raw = Some(base64::engine::general_purpose::STANDARD.encode(b))
            }
            PartContent::Url(u) => r.url = Some(u.clone()),
            PartContent::Data(v) => r.data = Some(v.clone()),
        }
        r.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let r = PartRepr::deserialize(d)?;
        let mut contents = Vec::with_capacity(1);
        if let Some(t) = r.text {
            contents.push(PartContent::Text(t));
        }
        if let Some(b) = r.raw {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b.as_bytes())
                .map_err(|e| D::Error::custom(format!("raw is not valid base64: {e}")))?;
            contents.push(PartContent::Raw(bytes));
        }
        if let Some(u) = r.url {
            contents.push(PartContent::Url(u));
        }
        if let Some(v) = r.data {
            contents.push(PartContent::Data(v));
        }
        if contents.len() != 1 {
            return Err(D::Error::custom(format!(
                "a part must have exactly one of text, raw, url, data (found {})",
                contents.len()
            )));
        }
        Ok(Part {
            content: contents.remove(0),
            metadata: r.metadata,
            filename: r.filename,
            media_type: r.media_type,
        })
    }
}
