//! What the streaming tests share: the tasks they stream (built through the public API
//! only) and the checks every stream of a task obeys.

use serde_json::{json, Value};

use super::StreamEvent;
use crate::Server;

/// Whether a state ends a task.
pub fn is_terminal(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_COMPLETED"
            | "TASK_STATE_FAILED"
            | "TASK_STATE_CANCELED"
            | "TASK_STATE_REJECTED"
    )
}

/// Whether a state interrupts a task (it waits for its client).
pub fn is_interrupted(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_INPUT_REQUIRED" | "TASK_STATE_AUTH_REQUIRED"
    )
}

/// The kinds of a list of events, with each status update's state: `["task",
/// "statusUpdate:TASK_STATE_WORKING", "artifactUpdate", …]`.
pub fn shape(events: &[StreamEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| match (e.kind(), e.state()) {
            ("statusUpdate", Some(s)) => format!("statusUpdate:{s}"),
            (k, _) => k.to_string(),
        })
        .collect()
}

/// The event data of a list (what a comparison across bindings compares), each RFC 3339
/// instant in one spelling: ProtoJSON may write a whole second as `…:03Z` where the JSON
/// bindings write `…:03.000Z` (both are the same Timestamp).
pub fn data(events: &[StreamEvent]) -> Vec<Value> {
    events
        .iter()
        .map(|e| {
            let mut v = e.data.clone();
            canonical_instants(&mut v);
            v
        })
        .collect()
}

/// Rewrites every RFC 3339 UTC instant in `v` without trailing zeros in its fraction.
pub fn canonical_instants(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let Some(c) = canonical_instant(s) {
                *s = c;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(canonical_instants),
        Value::Object(members) => members.values_mut().for_each(canonical_instants),
        _ => {}
    }
}

fn canonical_instant(s: &str) -> Option<String> {
    let body = s.strip_suffix('Z')?;
    let (whole, fraction) = body.split_once('.').unwrap_or((body, ""));
    let b = whole.as_bytes();
    let shape = b.len() == 19
        && [4, 7].iter().all(|&i| b[i] == b'-')
        && b[10] == b'T'
        && [13, 16].iter().all(|&i| b[i] == b':')
        && b.iter()
            .enumerate()
            .all(|(i, c)| [4, 7, 10, 13, 16].contains(&i) || c.is_ascii_digit());
    if !shape || !fraction.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let fraction = fraction.trim_end_matches('0');
    Some(if fraction.is_empty() {
        format!("{whole}Z")
    } else {
        format!("{whole}.{fraction}Z")
    })
}

/// Checks what every stream of a task obeys: every event belongs to `task_id`; SSE ids (when
/// present) strictly increase; no state follows a terminal one.
pub fn check_order(task_id: &str, events: &[StreamEvent]) {
    let mut last_id = None;
    let mut ended = false;
    for e in events {
        assert!(!ended, "an event after the terminal state: {}", e.data);
        let owner = match e.kind() {
            "task" => &e.body()["id"],
            _ => &e.body()["taskId"],
        };
        assert_eq!(owner, task_id, "an event of another task: {}", e.data);
        if let (Some(prev), Some(id)) = (last_id, e.id) {
            assert!(id > prev, "SSE ids increase: {prev} then {id}");
        }
        last_id = e.id.or(last_id);
        ended = e.state().is_some_and(is_terminal);
    }
}

/// The test's own tag for message ids: `tck-…-<tag>` ids never repeat across tests.
pub fn tag() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

/// A task that waits for input (`tck-input-required`, sent blocking); returns its id.
pub async fn waiting_task(s: &Server, tag: &str) -> String {
    let t = s
        .send_task(&format!("tck-input-required-{tag}"), "start")
        .await;
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{t}");
    t["id"].as_str().expect("task id").to_string()
}

/// Answers a waiting task with a message that asks for more input again: the agent's turn
/// shows a WORKING and an INPUT_REQUIRED update. Blocking: returns once the task waits again.
pub async fn answer(s: &Server, id: &str, tag: &str, round: usize) {
    let v = s
        .send(
            &format!("tck-input-required-{tag}-{round}"),
            &format!("answer {round}"),
            json!({"taskId": id}),
            json!({}),
        )
        .await;
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "round {round}: {v}"
    );
}

/// Finishes a waiting task with the chunked-artifact scenario (WORKING with chunk 1, chunk 2
/// with `lastChunk`, COMPLETED). Blocking.
pub async fn finish_chunked(s: &Server, id: &str, tag: &str) -> Value {
    let v = s
        .send(
            &format!("tck-stream-artifact-chunked-{tag}"),
            "finish",
            json!({"taskId": id}),
            json!({}),
        )
        .await;
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{v}"
    );
    v["result"]["task"].clone()
}

/// A finished task with at least `min` updates a client sees: waiting, answered until the
/// count is reached (2 updates a round), finished with chunks. Returns its id.
pub async fn long_task(s: &Server, min: usize) -> String {
    let tag = tag();
    let id = waiting_task(s, &tag).await;
    for round in 0..min.div_ceil(2) {
        answer(s, &id, &tag, round).await;
    }
    finish_chunked(s, &id, &tag).await;
    id
}

/// The same server over a binding whose streams carry SSE ids (gRPC's do not: its events are
/// matched to the JSON-RPC stream of the same task by position).
pub fn with_ids(s: &Server) -> Server {
    if s.binding.is_grpc() {
        s.over(crate::Binding::JsonRpc)
    } else {
        s.over(s.binding)
    }
}

/// The events of `all` after sequence `n`.
pub fn after(all: &[StreamEvent], n: u64) -> Vec<StreamEvent> {
    all.iter().filter(|e| e.seq() > n).cloned().collect()
}

/// `got` is `want`: the same StreamResponses, and the same SSE ids where `got` has them.
pub fn assert_same(got: &[StreamEvent], want: &[StreamEvent], what: &str) {
    assert_eq!(
        data(got),
        data(want),
        "{what}: {:?} vs {:?}",
        shape(got),
        shape(want)
    );
    if got.iter().all(|e| e.id.is_some()) {
        let ids = |v: &[StreamEvent]| v.iter().map(|e| e.id).collect::<Vec<_>>();
        assert_eq!(ids(got), ids(want), "{what}: SSE ids");
    }
}

/// Reads events until one reports `state`; returns them all (that one last).
pub async fn until_state(stream: &mut super::EventStream, state: &str) -> Vec<StreamEvent> {
    let mut out = Vec::new();
    loop {
        let e = stream.expect().await;
        let done = e.state() == Some(state);
        out.push(e);
        if done {
            return out;
        }
    }
}

/// The texts of the parts of an event's artifact.
pub fn artifact_texts(e: &StreamEvent) -> Vec<String> {
    e.body()["artifact"]["parts"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p["text"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_are_compared_in_one_spelling() {
        let mut v = json!({"a": "2026-12-01T12:28:03.000Z", "b": ["2026-12-01T12:28:03.940Z"],
                           "c": "2026-12-01T12:28:03Z", "d": "not 2026-12-01T12:28:03.000Z",
                           "e": "2026-12-01T12:28:03.123456789Z"});
        canonical_instants(&mut v);
        assert_eq!(
            v,
            json!({"a": "2026-12-01T12:28:03Z", "b": ["2026-12-01T12:28:03.94Z"],
                   "c": "2026-12-01T12:28:03Z", "d": "not 2026-12-01T12:28:03.000Z",
                   "e": "2026-12-01T12:28:03.123456789Z"})
        );
    }
}
