//! Events as stored: type + version + payload, and the upcasters that lift old shapes.

use std::sync::LazyLock;

use cqrs_es::persist::{EventUpcaster, SemanticVersionEventUpcaster, SerializedEvent};
use cqrs_es::{Aggregate, DomainEvent};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::task::{TaskAggregate, TaskEvent};
use crate::time::Timestamp;

/// One event in the store: the sequence number is the aggregate version it produced.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    pub seq: u64,
    pub event_type: String,
    pub event_version: String,
    /// The externally tagged event JSON (`{"MessageAppended": {…}}`).
    pub payload: EventPayload,
    pub recorded_at: Timestamp,
    /// What a stream receives of it, recorded at commit; `None` for events a client does not
    /// see (and for events stored before streams read the log).
    pub update: Option<EventUpdate>,
}

/// An event a client sees: the task's generation after it, and for a status update the
/// update as rendered at commit (it carries head state the event does not, such as usage
/// totals). An artifact update is rendered from the payload when read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventUpdate {
    pub generation: u64,
    /// `None` for an artifact event.
    pub status: Option<RecordedStatus>,
}

/// A status update as a stream sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedStatus {
    /// The state it reports (where a stream decides to end).
    pub state: crate::wire::TaskState,
    /// The `StreamResponse` JSON, `{"statusUpdate": …}`.
    pub body: String,
}

/// An event's JSON as written: checked JSON text, kept as text (stores write it as it is) and
/// parsed only when the event is decoded. A store reads it back as any other JSON column: its
/// deserialisation refuses anything but one JSON value.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(transparent)]
pub struct EventPayload(Box<RawValue>);

impl EventPayload {
    /// The JSON of `event`.
    pub fn of(event: &TaskEvent) -> Self {
        // Events hold no map with non-string keys, the one thing JSON cannot write.
        serde_json::value::to_raw_value(event).map_or_else(|_| Self::null(), Self)
    }

    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// The payload as a JSON tree (upcasting, views that pick fields out of any event).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.as_str()).unwrap_or(Value::Null)
    }

    fn null() -> Self {
        Self(RawValue::NULL.to_owned())
    }
}

impl From<Value> for EventPayload {
    fn from(v: Value) -> Self {
        // A `Value` always serialises.
        serde_json::value::to_raw_value(&v).map_or_else(|_| Self::null(), Self)
    }
}

/// Equal when the JSON is the same, whatever the order of object members.
impl PartialEq for EventPayload {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str() || self.to_value() == other.to_value()
    }
}

impl StoredEvent {
    pub fn new(seq: u64, event: &TaskEvent, recorded_at: Timestamp) -> Self {
        Self {
            seq,
            event_type: event.event_type(),
            event_version: event.event_version(),
            payload: EventPayload::of(event),
            recorded_at,
            update: None,
        }
    }

    /// Upcasts an old shape if needed, then parses.
    pub fn decode(&self) -> Result<TaskEvent, String> {
        let (kind, version) = (&self.event_type, &self.event_version);
        let parsed = if UPCASTERS.iter().any(|u| u.can_upcast(kind, version)) {
            let serialized = SerializedEvent::new(
                String::new(),
                self.seq as usize,
                TaskAggregate::TYPE.to_string(),
                kind.clone(),
                version.clone(),
                self.payload.to_value(),
                Value::Null,
            );
            let upcast = UPCASTERS.iter().fold(serialized, |e, u| {
                if u.can_upcast(&e.event_type, &e.event_version) {
                    u.upcast(e)
                } else {
                    e
                }
            });
            serde_json::from_value(upcast.payload)
        } else {
            serde_json::from_str(self.payload.as_str())
        };
        parsed.map_err(|e| format!("event {kind} v{version} #{}: {e}", self.seq))
    }
}

/// Every upcaster, oldest first, built once.
static UPCASTERS: LazyLock<Vec<Box<dyn EventUpcaster>>> = LazyLock::new(upcasters);

/// The 0.3-era state names some early events carried, and their 1.0 names.
const LEGACY_STATES: [(&str, &str); 8] = [
    ("submitted", "TASK_STATE_SUBMITTED"),
    ("working", "TASK_STATE_WORKING"),
    ("completed", "TASK_STATE_COMPLETED"),
    ("failed", "TASK_STATE_FAILED"),
    ("canceled", "TASK_STATE_CANCELED"),
    ("input-required", "TASK_STATE_INPUT_REQUIRED"),
    ("rejected", "TASK_STATE_REJECTED"),
    ("auth-required", "TASK_STATE_AUTH_REQUIRED"),
];

/// Every upcaster, oldest first.
pub fn upcasters() -> Vec<Box<dyn EventUpcaster>> {
    vec![Box::new(SemanticVersionEventUpcaster::new(
        "StatusChanged",
        "1.0.0",
        // 0.x wrote `{"StatusChanged": {"state": "working", "at": …}}` with 0.3 state names.
        Box::new(|mut payload: Value| {
            if let Some(state) = payload.pointer_mut("/StatusChanged/state") {
                if let Some(old) = state.as_str() {
                    if let Some((_, new)) = LEGACY_STATES.iter().find(|(o, _)| *o == old) {
                        *state = Value::String((*new).to_string());
                    }
                }
            }
            payload
        }),
    ))]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::TaskState;
    use serde_json::json;

    #[test]
    fn an_event_round_trips_through_its_stored_form() {
        let at = Timestamp::parse("2026-01-01T00:00:00.000000001Z").unwrap();
        let e = TaskEvent::StatusChanged {
            state: TaskState::Working,
            message: None,
            at,
        };
        let s = StoredEvent::new(3, &e, at);
        assert_eq!(s.event_type, "StatusChanged");
        assert_eq!(s.event_version, "1.0");
        assert_eq!(s.decode().unwrap(), e);
    }

    #[test]
    fn a_payload_read_back_must_be_one_json_value() {
        let ok: EventPayload = serde_json::from_str(r#"{"Canceled": {"at": "x"}}"#).unwrap();
        assert_eq!(
            ok.as_str(),
            r#"{"Canceled": {"at": "x"}}"#,
            "kept as written"
        );
        for bad in [r#"{"Canceled": "#, "1 2", ""] {
            assert!(
                serde_json::from_str::<EventPayload>(bad).is_err(),
                "{bad:?}"
            );
        }
        assert!(
            serde_json::from_str::<EventPayload>(r#""not json""#).is_ok(),
            "a JSON string is one value"
        );
    }

    #[test]
    fn an_old_status_changed_shape_is_upcast() {
        let s = StoredEvent {
            seq: 2,
            event_type: "StatusChanged".into(),
            event_version: "0.3".into(),
            payload:
                json!({"StatusChanged": {"state": "input-required", "at": "2026-01-01T00:00:00Z"}})
                    .into(),
            recorded_at: Timestamp::now(),
            update: None,
        };
        match s.decode().unwrap() {
            TaskEvent::StatusChanged { state, .. } => assert_eq!(state, TaskState::InputRequired),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn a_current_event_is_left_alone_by_the_upcasters() {
        let s = StoredEvent {
            seq: 2,
            event_type: "StatusChanged".into(),
            event_version: "1.0".into(),
            payload: json!({"StatusChanged": {"state": "working", "at": "2026-01-01T00:00:00Z"}})
                .into(),
            recorded_at: Timestamp::now(),
            update: None,
        };
        assert!(
            s.decode().is_err(),
            "1.0 payloads must already use 1.0 names"
        );
    }
}
