//! The events of one commit in one item (ADR 036): `E#<last seq>`, the events deflated in the
//! binary attribute `evs` as a JSON array of records, the commit's recording time, trace and
//! expiry on the item, and what the stream's filters select by on top (`wk`: it holds a work
//! request; `pu`: it pushes an update; `sst`: the terminal state it reports). Items written
//! before hold one event each in plain attributes, and read as a batch of one.

use std::collections::HashMap;
use taskledger_domain::projection::lifecycle::is_lifecycle;

use aws_sdk_dynamodb::types::AttributeValue;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use taskledger_domain::ports::StoreError;
use taskledger_domain::task::stored::{EventPayload, EventUpdate, RecordedStatus, StoredEvent};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::TaskState;

use super::schema;
use super::snapshot;

/// Most JSON bytes of events one item holds before the next starts (deflated, far below
/// DynamoDB's 400 KB item); an event larger than this has an item of its own.
pub const MAX_BATCH_JSON_BYTES: usize = 256 * 1024;
/// Item attribute: the events, deflated.
pub const EVENTS_ATTR: &str = "evs";
/// Item attribute: the first sequence number the item holds.
pub const FIRST_ATTR: &str = "first";
/// Item attribute (`"1"`): the item holds a work request (the relay's stream filter).
pub const WORK_ATTR: &str = "wk";
/// Item attribute (`"1"`): the item pushes an update to webhook subscribers.
pub const PUSHES_ATTR: &str = "pu";
/// Marks an item holding an event a lifecycle bus is told of (the relay's filter selects it
/// when the stack publishes to a bus, ADR 038).
pub const LIFECYCLE_ATTR: &str = "lc";

type Item = HashMap<String, AttributeValue>;

/// One event as an item holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub seq: u64,
    #[serde(rename = "type")]
    pub event_type: String,
    pub ver: String,
    pub payload: Box<RawValue>,
    /// The task's generation after it, when a client sees it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gen: Option<u64>,
    /// For a status update: the state it reports and the `StreamResponse` a stream sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sst: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub su: Option<String>,
    /// The update it pushes to webhook subscribers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push: Option<String>,
}

impl Record {
    /// The record of `e`, pushing `push`.
    pub fn of(e: &StoredEvent, push: Option<&str>) -> Result<Self, StoreError> {
        let payload = RawValue::from_string(e.payload.as_str().to_string())
            .map_err(|err| StoreError::Other(format!("an event's payload: {err}")))?;
        Ok(Self {
            seq: e.seq,
            event_type: e.event_type.clone(),
            ver: e.event_version.clone(),
            payload,
            gen: e.update.as_ref().map(|u| u.generation),
            sst: e
                .update
                .as_ref()
                .and_then(|u| u.status.as_ref())
                .map(|s| s.state.as_str().to_string()),
            su: e
                .update
                .as_ref()
                .and_then(|u| u.status.as_ref())
                .map(|s| s.body.clone()),
            push: push.map(str::to_string),
        })
    }

    /// The event as the store hands it out, recorded at `recorded_at`.
    pub fn stored(self, recorded_at: Timestamp) -> Result<StoredEvent, StoreError> {
        let update = match (self.gen, self.sst, self.su) {
            (None, _, _) => None,
            (Some(generation), None, _) => Some(EventUpdate {
                generation,
                status: None,
            }),
            (Some(generation), Some(state), Some(body)) => Some(EventUpdate {
                generation,
                status: Some(RecordedStatus {
                    state: TaskState::from_name(&state).ok_or_else(|| {
                        StoreError::Corrupt(format!("unknown task state {state:?}"))
                    })?,
                    body,
                }),
            }),
            (Some(_), Some(_), None) => {
                return Err(StoreError::Corrupt(
                    "a status update without its body".into(),
                ))
            }
        };
        let payload: EventPayload = serde_json::from_str(self.payload.get())
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        Ok(StoredEvent {
            seq: self.seq,
            event_type: self.event_type,
            event_version: self.ver,
            payload,
            recorded_at,
            update,
        })
    }

    /// Whether it reports a terminal state.
    pub fn finishes(&self) -> bool {
        self.sst
            .as_deref()
            .and_then(TaskState::from_name)
            .is_some_and(TaskState::is_terminal)
    }
}

/// The records split into groups of at most `MAX_BATCH_JSON_BYTES` of JSON each (an event
/// larger alone), in order: one item each.
pub fn groups(records: Vec<Record>) -> Vec<Vec<Record>> {
    let mut out: Vec<Vec<Record>> = Vec::new();
    let mut size = 0;
    for r in records {
        let n = r.payload.get().len()
            + r.su.as_ref().map_or(0, String::len)
            + r.push.as_ref().map_or(0, String::len);
        match out.last_mut() {
            Some(last) if size + n <= MAX_BATCH_JSON_BYTES => {
                size += n;
                last.push(r);
            }
            _ => {
                size = n;
                out.push(vec![r]);
            }
        }
    }
    out
}

/// The attributes of an item holding `records` (the keys, time, trace and expiry are the
/// caller's): the deflated events and the filters' markers.
pub fn attributes(records: &[Record]) -> Result<Item, StoreError> {
    let json = serde_json::to_string(records)
        .map_err(|e| StoreError::Other(format!("cannot serialise events: {e}")))?;
    let mut item = HashMap::from([
        (EVENTS_ATTR.to_string(), snapshot::encode(&json)?),
        (
            FIRST_ATTR.to_string(),
            AttributeValue::N(records.first().map_or(0, |r| r.seq).to_string()),
        ),
    ]);
    let work = taskledger_domain::agent::turns::WORK_EVENT;
    if records.iter().any(|r| r.event_type == work) {
        item.insert(WORK_ATTR.into(), AttributeValue::S("1".into()));
    }
    if records.iter().any(|r| r.push.is_some()) {
        item.insert(PUSHES_ATTR.into(), AttributeValue::S("1".into()));
    }
    if records
        .iter()
        .any(|r| is_lifecycle(&r.event_type, r.gen.is_some()))
    {
        item.insert(LIFECYCLE_ATTR.into(), AttributeValue::S("1".into()));
    }
    if let Some(r) = records.iter().rev().find(|r| r.finishes()) {
        item.insert(
            schema::STATUS_STATE_ATTR.into(),
            AttributeValue::S(r.sst.clone().unwrap_or_default()),
        );
    }
    Ok(item)
}

/// The records of an event item: a batch, or one event in the attributes written before.
pub fn records_of_item(item: &Item) -> Result<Vec<Record>, StoreError> {
    let s = |k: &str| match item.get(k) {
        Some(AttributeValue::S(v)) => Some(v.as_str()),
        _ => None,
    };
    if let Some(AttributeValue::B(blob)) = item.get(EVENTS_ATTR) {
        return decode(blob.as_ref());
    }
    let sk = s("sk").ok_or_else(|| StoreError::Corrupt("an event item without a key".into()))?;
    let seq = schema::parse_event_sk(sk)
        .ok_or_else(|| StoreError::Corrupt(format!("bad event key {sk}")))?;
    let gen = match item.get(schema::GENERATION_ATTR) {
        Some(AttributeValue::N(n)) => Some(
            n.parse()
                .map_err(|_| StoreError::Corrupt("a generation that is no number".into()))?,
        ),
        _ => None,
    };
    legacy(seq, s, gen)
}

/// The records of an event item's stream image (attribute-value JSON, binary in base64);
/// `None` when the image is no event item or cannot be read.
pub fn records_of_image(image: &Value) -> Option<Vec<Record>> {
    let s = |k: &str| {
        image
            .get(k)
            .and_then(|v| v.get("S"))
            .and_then(Value::as_str)
    };
    if let Some(b64) = image
        .get(EVENTS_ATTR)
        .and_then(|v| v.get("B"))
        .and_then(Value::as_str)
    {
        let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
        return decode(&bytes).ok();
    }
    let seq = schema::parse_event_sk(s("sk")?)?;
    let gen = image
        .get(schema::GENERATION_ATTR)
        .and_then(|v| v.get("N"))
        .and_then(Value::as_str)
        .and_then(|n| n.parse().ok());
    legacy(seq, s, gen).ok()
}

/// One event in the plain attributes of an item written before batches.
fn legacy<'a>(
    seq: u64,
    s: impl Fn(&str) -> Option<&'a str>,
    gen: Option<u64>,
) -> Result<Vec<Record>, StoreError> {
    let need =
        |k: &str| s(k).ok_or_else(|| StoreError::Corrupt(format!("an event item lacks {k}")));
    let payload =
        match s("payload") {
            Some(p) => RawValue::from_string(p.to_string())
                .map_err(|e| StoreError::Corrupt(e.to_string()))?,
            // A stream image carries what the relay reads; its payload is read from the table.
            None => RawValue::from_string("null".into())
                .map_err(|e| StoreError::Corrupt(e.to_string()))?,
        };
    Ok(vec![Record {
        seq,
        event_type: need("type")?.to_string(),
        ver: s("ver").unwrap_or_default().to_string(),
        payload,
        gen,
        sst: s(schema::STATUS_STATE_ATTR).map(str::to_string),
        su: s(schema::STATUS_UPDATE_ATTR).map(str::to_string),
        push: s(super::store::PUSH_ATTR).map(str::to_string),
    }])
}

fn decode(bytes: &[u8]) -> Result<Vec<Record>, StoreError> {
    let json = snapshot::inflate(bytes)?;
    serde_json::from_str(&json).map_err(|e| StoreError::Corrupt(format!("an event batch: {e}")))
}
