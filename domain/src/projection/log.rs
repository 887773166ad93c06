//! A task's log as a reader sees it (taskledger's events extension, `EVENTS_URI`): each event
//! with its sequence number, the task's generation after it, when it was recorded and its
//! payload as the export format writes it — secrets never (a push config's token and
//! credentials), and another principal's push configs not at all (each principal sees and
//! manages its own: `Subscription::belongs_to`). The same fold answers "the task as of
//! generation N": the events up to the last one that leaves the task at N.

use crate::ids::Principal;
use crate::task::stored::StoredEvent;
use crate::task::{TaskEvent, TaskHead};
use crate::wire::TaskEventRecord;

/// The extension a card declares for the events API and as-of reads.
pub const EVENTS_URI: &str = "urn:taskledger:ext:events:v1";
/// A page's events when the request names no limit.
pub const DEFAULT_EVENTS_PAGE: u32 = 100;
/// The most events a page holds.
pub const MAX_EVENTS_PAGE: u32 = 1000;

/// What the card says of the extension: its method, path and gRPC service, and its page
/// bounds.
pub fn card_params() -> crate::wire::Metadata {
    let v = serde_json::json!({
        "jsonrpcMethod": "ListTaskEvents",
        "httpPath": "/tasks/{id}/events",
        "grpcService": "taskledger.events.v1.TaskEvents",
        "defaultPageSize": DEFAULT_EVENTS_PAGE,
        "maxPageSize": MAX_EVENTS_PAGE,
        "getTaskParams": ["asOfGeneration"],
        "subscribeParams": ["after"],
    });
    match v {
        serde_json::Value::Object(m) => m,
        _ => crate::wire::Metadata::new(),
    }
}

/// Who reads the log: the agent (every task), or a client the task is visible to.
#[derive(Debug, Clone, Copy)]
pub enum LogReader<'a> {
    Agent,
    Client(&'a Principal),
}

/// A request's `limit`: unset or 0 is the default page; negative or past `MAX_EVENTS_PAGE` is
/// refused (the message names the bounds).
pub fn page_limit(raw: Option<i64>) -> Result<u32, String> {
    match raw {
        None | Some(0) => Ok(DEFAULT_EVENTS_PAGE),
        Some(n) if (1..=i64::from(MAX_EVENTS_PAGE)).contains(&n) => Ok(n as u32),
        Some(n) => Err(format!(
            "{n} is not a page size: between 1 and {MAX_EVENTS_PAGE} (0 or unset: \
             {DEFAULT_EVENTS_PAGE})"
        )),
    }
}

/// The task's generation after each of `events` (the whole log, in order): the generation
/// the last update a client was shown recorded, 1 before the first.
pub fn generations(events: &[StoredEvent]) -> Vec<u64> {
    let mut current = 1;
    events
        .iter()
        .map(|e| {
            if let Some(u) = &e.update {
                current = current.max(u.generation);
            }
            current
        })
        .collect()
}

/// How many of `events` (the whole log, in order) the task as of `generation` holds: every
/// event up to the last one that leaves the task at that generation.
pub fn events_as_of(events: &[StoredEvent], generation: u64) -> usize {
    generations(events)
        .iter()
        .take_while(|g| **g <= generation)
        .count()
}

/// A page of the log (`events` is the whole log, in order): what `reader` sees of the events
/// after `after`, scanning at most `limit`; with the last sequence number scanned (where the
/// next page starts) and whether events remain past it.
pub fn page(
    head: &TaskHead,
    events: &[StoredEvent],
    after: u64,
    limit: u32,
    reader: LogReader<'_>,
) -> (Vec<TaskEventRecord>, u64, bool) {
    let generations = generations(events);
    let start = events.partition_point(|e| e.seq <= after);
    let end = events.len().min(start + limit as usize);
    let records = events[start..end]
        .iter()
        .zip(&generations[start..end])
        .filter_map(|(e, g)| record(head, e, *g, reader))
        .collect();
    let last = events[..end].last().map_or(after, |e| e.seq.max(after));
    (records, last, end < events.len())
}

/// One event as `reader` sees it; `None` when it is not theirs to see.
fn record(
    head: &TaskHead,
    e: &StoredEvent,
    generation: u64,
    reader: LogReader<'_>,
) -> Option<TaskEventRecord> {
    let mut payload = e.payload.to_value();
    if let Ok(event) = e.decode() {
        if !shows(head, &event, reader) {
            return None;
        }
        if let TaskEvent::PushConfigSet { .. } = event {
            if let Some(config) = payload
                .get_mut(e.event_type.as_str())
                .and_then(|p| p.get_mut("config"))
                .and_then(serde_json::Value::as_object_mut)
            {
                config.remove("token");
                config.remove("credentials");
            }
        }
    }
    Some(TaskEventRecord {
        seq: e.seq,
        event_type: e.event_type.clone(),
        event_version: e.event_version.clone(),
        generation,
        recorded_time: e.recorded_at.to_rfc3339_nanos(),
        payload,
    })
}

/// Whether `reader` sees the stored event `e` of the task whose head is `head` — the rule a
/// page applies, for every other reader of the log (the board's timeline).
pub fn shown(head: &TaskHead, e: &StoredEvent, reader: LogReader<'_>) -> bool {
    e.decode().map_or(true, |event| shows(head, &event, reader))
}

/// Whether `reader` sees `event`: everything but the push configs of other principals.
fn shows(head: &TaskHead, event: &TaskEvent, reader: LogReader<'_>) -> bool {
    let LogReader::Client(who) = reader else {
        return true;
    };
    match event {
        TaskEvent::PushConfigSet { config, .. } => {
            config.owner.as_ref().unwrap_or(&head.owner) == who
        }
        // The key of another principal's config is `id\nprincipal`; the owner's is its id.
        TaskEvent::PushConfigDeleted { key, .. } => {
            match key.as_deref().and_then(|k| k.split_once('\n')) {
                Some((_, principal)) => principal == who.to_string(),
                None => head.owner == *who,
            }
        }
        _ => true,
    }
}
