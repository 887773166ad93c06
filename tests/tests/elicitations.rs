//! Draft A2A 1.1 elicitations (a2aproject/A2A#2149), black-box on one server over JSON-RPC,
//! HTTP+JSON and gRPC: a help request, a handoff's task-proposal gate and a tool approval are
//! elicitations a 1.1 caller sees BLOCKED while the task waits and RESOLVED once answered —
//! on the task, as the delta of the status that changed them, in the timeline and on a stream
//! — and a 1.0 or 0.3 caller sees none of it. A message may name the elicitations it answers;
//! one it names that the task never made is not a reason to refuse it.

use serde_json::{json, Value};
use taskledger_local::{Config, GrpcSettings};
use taskledger_tests::{test_config, Binding, Server};

const V1_1: &[(&str, &str)] = &[("A2A-Version", "1.1")];
const MEDIA: &str = "application/vnd.tiny-harness.task+json";
const WORK: &str = "https://dispatch.foo/a2a/ext/work/v1";
const ENVELOPE: &str = "https://dispatch.foo/a2a/ext/envelope/v1";
const HITL: &str = "https://kagent.dev/extensions/hitl/v1";

/// One server, JSON-RPC and HTTP+JSON on its HTTP port and gRPC on its own.
async fn server(config: Config) -> Server {
    let mut config = config;
    config.grpc = Some(GrpcSettings::loopback());
    let running = taskledger_local::start(config)
        .await
        .expect("server starts");
    Server::running(&running, Default::default())
}

fn suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

async fn ok(s: &Server, method: &str, params: Value, headers: &[(&str, &str)]) -> Value {
    let v = s.call_with(method, params, headers).await;
    assert!(v.get("error").is_none(), "{method}: {v}");
    v["result"].clone()
}

/// `(id, state, kind)` of each elicitation of `list` (none when absent).
fn brief(list: &Value) -> Vec<(String, String, String)> {
    list.as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        e["elicitationId"].as_str().unwrap_or("?").to_string(),
                        e["state"].as_str().unwrap_or("?").to_string(),
                        e["metadata"]["kind"].as_str().unwrap_or("?").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn one(id: &str, state: &str, kind: &str) -> Vec<(String, String, String)> {
    vec![(id.to_string(), state.to_string(), kind.to_string())]
}

/// No draft 1.1 elicitation anywhere in `v` (a task, a page, a stream event).
fn has_no_elicitation(v: &Value) -> bool {
    !v.to_string().contains("licitation")
}

/// A tiny-harness message from `sender`, with the envelope when it opens a task.
fn harness_message(id: &str, text: &str, sender: &str, task: Option<&str>) -> Value {
    harness_message_approving(id, text, sender, task, &[])
}

/// The same, opening a task on which the tools `approve` need a person's approval.
fn harness_message_approving(
    id: &str,
    text: &str,
    sender: &str,
    task: Option<&str>,
    approve: &[&str],
) -> Value {
    let mut parts = vec![json!({"text": text})];
    if task.is_none() {
        parts.push(
            json!({"data": {"name": "Release", "goal": "Ship 1.0", "participants": [
            {"id": "ann", "kind": "human", "role": "admin"},
            {"id": "bob", "kind": "human", "role": "assignee"}], "approve_tools": approve},
            "mediaType": MEDIA}),
        );
    }
    let mut m = json!({"messageId": id, "role": "ROLE_USER", "parts": parts,
        "metadata": {"participant_id": sender}});
    if let Some(t) = task {
        m["taskId"] = json!(t);
    }
    m
}

/// The 0.3 reads of task `id`: JSON-RPC `tasks/get` and HTTP+JSON `GET /v1/tasks/{id}`.
async fn reads_03(s: &Server, id: &str) -> Vec<Value> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": id}});
    let (_, rpc) = s
        .post_raw(
            "/a2a",
            serde_json::to_vec(&body).unwrap(),
            &[("Content-Type", "application/json")],
        )
        .await;
    assert_eq!(rpc["result"]["kind"], "task", "{rpc}");
    let rest: Value = s
        .client
        .get(format!("{}/a2a/rest/v1/tasks/{id}", s.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(rest["id"], id, "{rest}");
    vec![rpc, rest]
}

#[tokio::test]
async fn a_help_request_is_blocked_then_resolved_for_1_1_on_every_binding_and_unseen_before() {
    let server = server(test_config()).await;
    for binding in Binding::ALL {
        let s = server.over(binding);
        // The agent asks bob (th-ask-bob): the task waits, INPUT_REQUIRED.
        let sent = ok(
            &s,
            "SendMessage",
            json!({"message": harness_message("th-ask-bob", "Deploy it", "ann", None)}),
            V1_1,
        )
        .await;
        let task = &sent["task"];
        assert_eq!(
            task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
            "{task}"
        );
        let id = task["id"].as_str().unwrap().to_string();
        let asked = task["elicitations"][0]["elicitationId"]
            .as_str()
            .unwrap_or_else(|| panic!("{binding:?}: an elicitation: {task}"))
            .to_string();
        let waiting = one(&asked, "ELICITATION_STATE_BLOCKED", "help-request");
        assert_eq!(brief(&task["elicitations"]), waiting, "{binding:?}: {task}");
        assert_eq!(brief(&task["status"]["elicitations"]), waiting);
        assert_eq!(task["elicitations"][0]["metadata"]["participantId"], "bob");
        // The same through GetTask and ListTasks at 1.1; none of it at 1.0 or 0.3.
        let got = ok(&s, "GetTask", json!({"id": id}), V1_1).await;
        assert_eq!(brief(&got["elicitations"]), waiting, "{binding:?}: {got}");
        let page = ok(
            &s,
            "ListTasks",
            json!({"contextId": task["contextId"]}),
            V1_1,
        )
        .await;
        assert_eq!(brief(&page["tasks"][0]["elicitations"]), waiting, "{page}");
        let got = ok(&s, "GetTask", json!({"id": id}), &[]).await;
        assert!(has_no_elicitation(&got), "{binding:?}, 1.0: {got}");
        let page = ok(
            &s,
            "ListTasks",
            json!({"contextId": task["contextId"]}),
            &[],
        )
        .await;
        assert!(has_no_elicitation(&page), "{binding:?}, 1.0: {page}");
        // Someone else names it (and one the task never made): taken in, not an answer.
        let mut by_ann = harness_message(&format!("m-{}", suffix()), "b?", "ann", Some(&id));
        by_ann["elicitationIds"] = json!([asked, "no-such-elicitation"]);
        let v = ok(
            &s,
            "SendMessage",
            json!({"message": by_ann, "configuration": {"returnImmediately": true}}),
            V1_1,
        )
        .await;
        assert_eq!(
            brief(&v["task"]["elicitations"]),
            waiting,
            "{binding:?}: {v}"
        );
        // bob answers, naming it: resolved, and the answering status carries the change.
        let mut by_bob = harness_message(&format!("m-{}", suffix()), "take a", "bob", Some(&id));
        by_bob["elicitationIds"] = json!([asked]);
        let answered = ok(&s, "SendMessage", json!({"message": by_bob}), V1_1).await;
        let task = &answered["task"];
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
        let resolved = one(&asked, "ELICITATION_STATE_RESOLVED", "help-request");
        assert_eq!(
            brief(&task["elicitations"]),
            resolved,
            "{binding:?}: {task}"
        );
        // The timeline has both changes, each on the status that made it, and the hint on
        // bob's message.
        let got = ok(&s, "GetTask", json!({"id": id}), V1_1).await;
        let deltas: Vec<_> = got["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| {
                e["status"]["elicitations"]
                    .as_array()
                    .map(|_| brief(&e["status"]["elicitations"]))
            })
            .collect();
        assert_eq!(
            deltas,
            [waiting.clone(), resolved.clone()],
            "{binding:?}: {got}"
        );
        let named: Vec<&Value> = got["history"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m.get("elicitationIds").is_some())
            .collect();
        assert_eq!(named.len(), 2, "{got}");
        assert_eq!(named[1]["elicitationIds"], json!([asked]));
        // 1.0 and 0.3 see the finished task without any of it.
        let got = ok(&s, "GetTask", json!({"id": id}), &[]).await;
        assert_eq!(got["status"]["state"], "TASK_STATE_COMPLETED");
        assert!(has_no_elicitation(&got), "{binding:?}, 1.0: {got}");
        for read in reads_03(&server, &id).await {
            assert!(has_no_elicitation(&read), "0.3: {read}");
        }
    }
}

#[tokio::test]
async fn a_handoff_proposal_is_an_elicitation_its_answer_resolves() {
    let server = server(test_config()).await;
    let active = [
        V1_1[0],
        (
            "A2A-Extensions",
            "https://dispatch.foo/a2a/ext/work/v1, https://dispatch.foo/a2a/ext/envelope/v1",
        ),
    ];
    for binding in Binding::ALL {
        let s = server.over(binding);
        let work = json!({"skill": "handoff", "title": "Export the API as CSV", "priority": "low"});
        let message = json!({"messageId": format!("h-{}", suffix()), "role": "ROLE_USER",
            "parts": [{"text": "please take this over"}], "metadata": {WORK: work}});
        let task =
            ok(&s, "SendMessage", json!({"message": message}), &active).await["task"].clone();
        assert_eq!(
            task["status"]["state"], "TASK_STATE_AUTH_REQUIRED",
            "{task}"
        );
        let gate = task["elicitations"][0]["elicitationId"]
            .as_str()
            .unwrap_or_else(|| panic!("{binding:?}: {task}"))
            .to_string();
        assert!(gate.starts_with("gate-"), "the gate's own id: {gate}");
        assert_eq!(
            brief(&task["elicitations"]),
            one(&gate, "ELICITATION_STATE_BLOCKED", "task-proposal")
        );
        let answer = json!({"message": {"messageId": format!("a-{}", suffix()),
            "taskId": task["id"], "role": "ROLE_USER", "parts": [{"text": "yes"}],
            "elicitationIds": [gate],
            "metadata": {ENVELOPE: {"kind": "answer", "replyTo": gate, "choice": "approve"}}}});
        let done = ok(&s, "SendMessage", answer, &active).await["task"].clone();
        assert_eq!(done["status"]["state"], "TASK_STATE_SUBMITTED", "{done}");
        let resolved = one(&gate, "ELICITATION_STATE_RESOLVED", "task-proposal");
        assert_eq!(
            brief(&done["elicitations"]),
            resolved,
            "{binding:?}: {done}"
        );
        assert_eq!(brief(&done["status"]["elicitations"]), resolved);
        let v1_0 = ok(&s, "GetTask", json!({"id": task["id"]}), &[]).await;
        assert!(has_no_elicitation(&v1_0), "{v1_0}");
    }
}

#[tokio::test]
async fn a_tool_approval_streams_its_elicitation_to_1_1_and_not_to_1_0() {
    let server = server(test_config()).await;
    let hitl = [("A2A-Extensions", HITL)];
    for binding in Binding::ALL {
        let s = server.over(binding);
        for version in ["1.1", "1.0"] {
            let headers = [hitl[0], ("A2A-Version", version)];
            let params = json!({"message": harness_message_approving(
                &format!("th-ask-bob:{}", suffix()), "Deploy it", "ann", None,
                &["ask_participant"])});
            let events = s
                .stream_with("SendStreamingMessage", params, &headers)
                .await
                .stream()
                .rest()
                .await;
            let last = events
                .last()
                .unwrap_or_else(|| panic!("{binding:?}: no event"));
            assert_eq!(
                last.state(),
                Some("TASK_STATE_INPUT_REQUIRED"),
                "{events:?}"
            );
            if version == "1.0" {
                assert!(
                    events.iter().all(|e| has_no_elicitation(&e.data)),
                    "{binding:?}, 1.0: {events:?}"
                );
                continue;
            }
            let delta = brief(&last.body()["status"]["elicitations"]);
            assert_eq!(delta.len(), 1, "{binding:?}: {events:?}");
            assert_eq!(
                (delta[0].1.as_str(), delta[0].2.as_str()),
                ("ELICITATION_STATE_BLOCKED", "tool-approval")
            );
        }
    }
}
