//! The head item's snapshot (ADR 036): its JSON deflated into the binary attribute `snapz`, so
//! a head of a few kilobytes costs one write unit (1 KB) where its text cost three. Heads
//! written before carry the text in `snap`, and read as they are until their next commit.

use std::collections::HashMap;
use std::io::{Read, Write};

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use flate2::Compression;
use taskledger_domain::ports::StoreError;

/// A DynamoDB item (as `store::Item`; named here so the store's module is not imported).
type Item = HashMap<String, AttributeValue>;

/// Head attribute: the snapshot JSON, deflated.
pub const SNAPSHOT_ATTR: &str = "snapz";
/// Head attribute of heads written before ADR 036: the snapshot JSON as text.
pub const SNAPSHOT_TEXT_ATTR: &str = "snap";
/// Most bytes a stored snapshot inflates to (a head holds at most a status message and a
/// history tail, each far below): more is a corrupt item, refused before it is read whole.
pub const MAX_SNAPSHOT_BYTES: usize = 16 * 1024 * 1024;

/// The attribute value of a snapshot whose JSON is `json`.
pub fn encode(json: &str) -> Result<AttributeValue, StoreError> {
    let mut out = DeflateEncoder::new(Vec::with_capacity(json.len() / 3), Compression::fast());
    out.write_all(json.as_bytes())
        .and_then(|_| out.finish())
        .map(|bytes| AttributeValue::B(Blob::new(bytes)))
        .map_err(|e| StoreError::Other(format!("cannot deflate a snapshot: {e}")))
}

/// The snapshot JSON of a head item, from whichever attribute holds it.
pub fn text(item: &Item) -> Result<String, StoreError> {
    match (item.get(SNAPSHOT_ATTR), item.get(SNAPSHOT_TEXT_ATTR)) {
        (Some(AttributeValue::B(blob)), _) => inflate(blob.as_ref()),
        (None, Some(AttributeValue::S(text))) => Ok(text.clone()),
        _ => Err(StoreError::Corrupt(format!(
            "a head item lacks its snapshot ({SNAPSHOT_ATTR} or {SNAPSHOT_TEXT_ATTR})"
        ))),
    }
}

pub(super) fn inflate(bytes: &[u8]) -> Result<String, StoreError> {
    let mut json = String::new();
    let read = DeflateDecoder::new(bytes)
        .take(MAX_SNAPSHOT_BYTES as u64 + 1)
        .read_to_string(&mut json)
        .map_err(|e| StoreError::Corrupt(format!("a head's snapshot does not inflate: {e}")))?;
    if read > MAX_SNAPSHOT_BYTES {
        return Err(StoreError::Corrupt(format!(
            "a head's snapshot inflates past {MAX_SNAPSHOT_BYTES} bytes"
        )));
    }
    Ok(json)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(attr: &str, v: AttributeValue) -> Item {
        HashMap::from([(attr.to_string(), v)])
    }

    #[test]
    fn a_snapshot_reads_back_from_either_attribute() {
        let json = r#"{"version":3,"head":{"id":"t-1","recent":{"messages":["a","a","a"]}}}"#;
        assert_eq!(
            text(&head(SNAPSHOT_ATTR, encode(json).unwrap())).unwrap(),
            json
        );
        assert_eq!(
            text(&head(SNAPSHOT_TEXT_ATTR, AttributeValue::S(json.into()))).unwrap(),
            json
        );
        assert!(matches!(text(&HashMap::new()), Err(StoreError::Corrupt(_))));
    }

    #[test]
    fn a_repetitive_snapshot_deflates_to_a_fraction() {
        let message = r#"{"messageId":"m","contextId":"01a24e41-bf14-74df-8eab-7e2256ccb4dc","role":"ROLE_USER","parts":[{"text":"Please summarise the attached quarterly numbers."}]}"#;
        let json = format!("[{}]", [message; 8].join(","));
        let AttributeValue::B(blob) = encode(&json).unwrap() else {
            panic!("a binary attribute")
        };
        assert!(
            blob.as_ref().len() * 4 < json.len(),
            "{}",
            blob.as_ref().len()
        );
    }

    #[test]
    fn a_snapshot_inflating_past_the_bound_is_refused_and_one_at_it_is_read() {
        let at = "x".repeat(MAX_SNAPSHOT_BYTES);
        let AttributeValue::B(blob) = encode(&at).unwrap() else {
            panic!("a binary attribute")
        };
        assert_eq!(inflate(blob.as_ref()).unwrap().len(), MAX_SNAPSHOT_BYTES);
        let past = "x".repeat(MAX_SNAPSHOT_BYTES + 1);
        let AttributeValue::B(blob) = encode(&past).unwrap() else {
            panic!("a binary attribute")
        };
        assert!(matches!(
            inflate(blob.as_ref()),
            Err(StoreError::Corrupt(_))
        ));
        assert!(matches!(
            inflate(b"not deflate"),
            Err(StoreError::Corrupt(_))
        ));
    }
}
