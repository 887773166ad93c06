//! Binding parity: one sequence of operations run through JSON-RPC, HTTP+JSON and gRPC against
//! one server gives the same tasks and results on each, once the values that are per run are
//! normalised.
//!
//! Normalised, and nothing else:
//! - ids the server or the run makes: task ids, context ids (each binding's own context), page
//!   tokens, the generated push config id and the agent's message ids (UUIDs) — each becomes
//!   `<id N>` by order of first appearance, wherever it stands (a whole string, or inside one:
//!   an error message naming the task), so the transcripts must also agree on where each id
//!   recurs;
//! - timestamps: every string that is an RFC 3339 UTC instant (`status.timestamp`,
//!   `kagent.dev/a2a/task-created-at`, …) becomes `<time>`.
//!
//! Everything else — states, history, artifacts, metadata, the test's message ids, the
//! extension envelope, counts, page sizes, errors (code, message, ErrorInfo) — must be equal as
//! it comes back. (The harness's gRPC translation itself prints the REQUIRED ListTasks and
//! ListTaskPushNotificationConfigs response fields proto3 leaves out at their default values,
//! e.g. `"nextPageToken": ""`: see `binding::with_required_defaults`.)

use std::collections::HashMap;

use serde_json::{json, Value};
use taskledger_local::GrpcSettings;
use taskledger_tests::{test_config, Binding, Server};

const KEY: &str = "io.github.madarauchiha-314.tiny-harness/task";
const MEDIA: &str = "application/vnd.tiny-harness.task+json";

fn envelope() -> Value {
    json!({
        "name": "Release", "goal": "Ship 1.0",
        "acceptance_criteria": [{"text": "changelog written"}],
        "participants": [
            {"id": "ann", "kind": "human", "role": "admin"},
            {"id": "bob", "kind": "human", "role": "assignee"}
        ]
    })
}

fn message(id: &str, text: &str, ctx: &str, task: Option<&str>, env: bool) -> Value {
    let mut parts = vec![json!({"text": text})];
    if env {
        parts.push(json!({"data": envelope(), "mediaType": MEDIA}));
    }
    let mut m = json!({"messageId": id, "role": "ROLE_USER", "parts": parts,
                       "contextId": ctx, "metadata": {"participant_id": "ann"}});
    if let Some(t) = task {
        m["taskId"] = json!(t);
    }
    m
}

/// A transcript: each step's label and its whole JSON-RPC response (result or error).
type Transcript = Vec<(String, Value)>;

/// The sequence, on one binding, in a context of its own.
async fn run(s: &Server) -> Transcript {
    let ctx = format!("parity-{}-{}", s.binding.name(), uuid::Uuid::new_v4());
    let mut out: Transcript = Vec::new();
    macro_rules! step {
        ($label:expr, $method:expr, $params:expr) => {{
            let v = s.call($method, $params).await;
            out.push(($label.to_string(), v.clone()));
            v
        }};
    }
    // Create with the task extension's envelope: the task waits for input.
    let v = step!(
        "create",
        "SendMessage",
        json!({"message": message("tck-input-required-p1", "let us ship", &ctx, None, true)})
    );
    let t1 = v["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{v}"))
        .to_string();
    assert_eq!(v["result"]["task"]["metadata"][KEY]["name"], "Release");
    // Continue it to completion.
    step!(
        "continue",
        "SendMessage",
        json!({"message": message("tck-complete-task-p2", "go ahead", &ctx, Some(&t1), false)})
    );
    // Another task, canceled while it waits.
    let v = step!(
        "create another",
        "SendMessage",
        json!({"message": message("tck-input-required-p3", "maybe later", &ctx, None, false),
               "configuration": {"historyLength": 1}})
    );
    let t2 = v["result"]["task"]["id"].as_str().unwrap().to_string();
    step!("cancel", "CancelTask", json!({"id": t2}));
    step!("cancel again", "CancelTask", json!({"id": t2}));
    step!("cancel a completed task", "CancelTask", json!({"id": t1}));
    // Push configs on the completed task (no more events, so nothing is delivered).
    step!(
        "push create",
        "CreateTaskPushNotificationConfig",
        json!({"taskId": t1, "id": "hook-1", "url": "https://example.com/hook", "token": "tok",
               "authentication": {"scheme": "Bearer", "credentials": "s3cr3t"}})
    );
    step!(
        "push create, id generated",
        "CreateTaskPushNotificationConfig",
        json!({"taskId": t1, "url": "https://example.com/other"})
    );
    step!(
        "push get",
        "GetTaskPushNotificationConfig",
        json!({"taskId": t1, "id": "hook-1"})
    );
    let v = step!(
        "push list page 1",
        "ListTaskPushNotificationConfigs",
        json!({"taskId": t1, "pageSize": 1})
    );
    let token = v["result"]["nextPageToken"].as_str().unwrap().to_string();
    step!(
        "push list page 2",
        "ListTaskPushNotificationConfigs",
        json!({"taskId": t1, "pageSize": 1, "pageToken": token})
    );
    step!(
        "push delete",
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": t1, "id": "hook-1"})
    );
    step!(
        "push delete again",
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": t1, "id": "hook-1"})
    );
    step!(
        "push list after delete",
        "ListTaskPushNotificationConfigs",
        json!({"taskId": t1})
    );
    step!(
        "push get deleted",
        "GetTaskPushNotificationConfig",
        json!({"taskId": t1, "id": "hook-1"})
    );
    // GetTask with history 0, 1 and all.
    step!(
        "get, history 0",
        "GetTask",
        json!({"id": t1, "historyLength": 0})
    );
    step!(
        "get, history 1",
        "GetTask",
        json!({"id": t1, "historyLength": 1})
    );
    step!("get, all history", "GetTask", json!({"id": t1}));
    step!("get canceled", "GetTask", json!({"id": t2}));
    step!(
        "get unknown",
        "GetTask",
        json!({"id": "parity-no-such-task"})
    );
    // ListTasks with filters and paging.
    step!("list context", "ListTasks", json!({"contextId": ctx}));
    step!(
        "list completed, with artifacts",
        "ListTasks",
        json!({"contextId": ctx, "status": "TASK_STATE_COMPLETED", "includeArtifacts": true})
    );
    step!(
        "list history 0",
        "ListTasks",
        json!({"context_id": ctx, "history_length": 0})
    );
    step!(
        "list in the future",
        "ListTasks",
        json!({"contextId": ctx, "statusTimestampAfter": "2100-01-01T00:00:00Z"})
    );
    let mut token = String::new();
    for page in 1.. {
        let v = step!(
            format!("list page {page}"),
            "ListTasks",
            json!({"contextId": ctx, "pageSize": 1, "pageToken": token})
        );
        token = v["result"]["nextPageToken"].as_str().unwrap().to_string();
        if token.is_empty() {
            break;
        }
        assert!(page < 5, "paging ends");
    }
    step!("list bad page size", "ListTasks", json!({"pageSize": 0}));
    out
}

/// Whether `s` is an RFC 3339 UTC instant (`2026-01-02T03:04:05[.fff…]Z`).
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && s.ends_with('Z')
        && s[..19]
            .bytes()
            .enumerate()
            .all(|(i, c)| [4, 7, 10, 13, 16].contains(&i) || c.is_ascii_digit())
        && (b.len() == 20
            || (b[19] == b'.' && s[20..s.len() - 1].bytes().all(|c| c.is_ascii_digit())))
}

/// The per-run values of a transcript's results, as they first appear: every `contextId`,
/// `taskId` and `nextPageToken`, and every `id` or `messageId` that is a UUID (task ids,
/// generated config ids, the agent's message ids; the test's own ids are no UUIDs and stay).
fn per_run_ids(t: &Transcript) -> Vec<String> {
    fn collect(v: &Value, key: Option<&str>, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    collect(x, Some(k), out);
                }
            }
            Value::Array(a) => a.iter().for_each(|x| collect(x, key, out)),
            Value::String(s) if !s.is_empty() => {
                let per_run = matches!(key, Some("contextId" | "taskId" | "nextPageToken"))
                    || (matches!(key, Some("id" | "messageId"))
                        && uuid::Uuid::parse_str(s).is_ok());
                if per_run && !out.contains(s) {
                    out.push(s.clone());
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (_, v) in t {
        collect(&v["result"], None, &mut out);
    }
    out
}

fn normalise(t: &Transcript) -> Transcript {
    let ids = per_run_ids(t);
    let names: HashMap<&str, String> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), format!("<id {}>", i + 1)))
        .collect();
    fn walk(v: &mut Value, ids: &[String], names: &HashMap<&str, String>) {
        match v {
            Value::Object(m) => m.values_mut().for_each(|x| walk(x, ids, names)),
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, ids, names)),
            Value::String(s) => {
                if is_timestamp(s) {
                    *s = "<time>".into();
                } else if let Some(n) = names.get(s.as_str()) {
                    *s = n.clone();
                } else {
                    // a sub-task id (`<task>.1`) or a message naming an id (`task <id> not
                    // found`): the id inside is replaced where it stands
                    for id in ids {
                        if s.contains(id.as_str()) {
                            *s = s.replace(id.as_str(), &names[id.as_str()]);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    t.iter()
        .map(|(label, v)| {
            let mut v = v.clone();
            walk(&mut v, &ids, &names);
            (label.clone(), v)
        })
        .collect()
}

#[tokio::test]
async fn the_three_bindings_give_the_same_tasks_and_results() {
    let mut config = test_config();
    config.grpc = Some(GrpcSettings::loopback());
    let server = Server::start_with(config).await;
    let mut transcripts = Vec::new();
    for b in Binding::ALL {
        let t = run(&server.over(b)).await;
        transcripts.push((b, normalise(&t)));
    }
    let (_, reference) = &transcripts[0];
    for (b, t) in &transcripts[1..] {
        assert_eq!(t.len(), reference.len(), "{b:?}: the same steps");
        for ((label, want), (_, got)) in reference.iter().zip(t) {
            assert!(
                got == want,
                "{label}: {} differs from JSON-RPC\n  {}: {got}\n  jsonrpc: {want}",
                b.name(),
                b.name()
            );
        }
    }
}
