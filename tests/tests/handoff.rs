//! DMP work/v1 handoffs and their task-proposal gate, black-box on the harness's binding and
//! store: proposed (AUTH_REQUIRED with gate/v1 state, seen alike by GetTask, ListTasks and a
//! stream), approved or declined by the owner, answered once under a race, refused when bad.

use serde_json::{json, Value};
use taskledger_tests::{error_code, Server};

const WORK: &str = "https://dispatch.foo/a2a/ext/work/v1";
const GATE: &str = "https://dispatch.foo/a2a/ext/gate/v1";
const ENVELOPE: &str = "https://dispatch.foo/a2a/ext/envelope/v1";
const ACTIVE: &[(&str, &str)] = &[(
    "A2A-Extensions",
    "https://dispatch.foo/a2a/ext/work/v1, https://dispatch.foo/a2a/ext/envelope/v1",
)];

fn suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

fn handoff_message(work: Value) -> Value {
    json!({"message": {"messageId": format!("h-{}", suffix()), "role": "ROLE_USER",
        "parts": [{"text": "please take this over"}], "metadata": {WORK: work}}})
}

async fn propose(s: &Server) -> Value {
    let work = json!({"skill": "handoff", "title": "Export the API as CSV",
        "acceptance": ["CSV and JSON"], "writes": ["src/export/**"], "priority": "urgent",
        "labels": ["export"]});
    let v = s
        .call_with("SendMessage", handoff_message(work), ACTIVE)
        .await;
    assert!(v.get("error").is_none(), "{v}");
    v["result"]["task"].clone()
}

fn answer(task_id: &str, gate: &str, choice: Option<&str>) -> Value {
    let mut envelope = json!({"kind": "answer", "replyTo": gate});
    if let Some(c) = choice {
        envelope["choice"] = json!(c);
    }
    json!({"message": {"messageId": format!("a-{}", suffix()), "taskId": task_id,
        "role": "ROLE_USER", "parts": [{"text": "decided"}], "metadata": {ENVELOPE: envelope}}})
}

fn gate_of(task: &Value) -> String {
    task["status"]["message"]["metadata"][GATE]["gates"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("an open gate: {task}"))
        .to_string()
}

#[tokio::test]
async fn a_handoff_waits_on_the_owner_and_every_read_shows_the_same_gate() {
    let s = Server::start().await;
    let task = propose(&s).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_AUTH_REQUIRED");
    let said = &task["status"]["message"];
    assert_eq!(
        said["parts"][0]["text"],
        "Waiting for the project owner to approve this handoff."
    );
    assert_eq!(said["extensions"], json!([GATE]));
    let gate = &said["metadata"][GATE]["gates"][0];
    assert_eq!(gate["type"], "task-proposal");
    assert_eq!(gate["waitingOn"], "owner");
    let state = &task["metadata"][WORK];
    assert_eq!(state["status"], "draft");
    assert_eq!(state["title"], "Export the API as CSV");
    let id = task["id"].as_str().unwrap();
    let got = s.ok("GetTask", json!({"id": id})).await;
    assert_eq!(got["status"], task["status"]);
    let listed = s
        .ok("ListTasks", json!({"status": "TASK_STATE_AUTH_REQUIRED"}))
        .await;
    assert!(listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["id"] == id && t["status"] == task["status"]));
    // The agent never ran on the proposal: only the client's message and the gate's sentence.
    let history = got["history"].as_array().unwrap();
    assert_eq!(history.len(), 2, "{history:?}");
}

#[tokio::test]
async fn the_owner_approves_one_handoff_and_declines_another() {
    let s = Server::start().await;
    let task = propose(&s).await;
    let id = task["id"].as_str().unwrap();
    let approved = s
        .call_with(
            "SendMessage",
            answer(id, &gate_of(&task), Some("approve")),
            ACTIVE,
        )
        .await;
    let t = &approved["result"]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_SUBMITTED", "{approved}");
    assert_eq!(
        t["status"]["message"]["parts"][0]["text"],
        "Approved; waiting to be scheduled."
    );
    assert_eq!(t["metadata"][WORK]["status"], "ready");
    let other = propose(&s).await;
    let oid = other["id"].as_str().unwrap();
    let declined = s
        .call_with(
            "SendMessage",
            answer(oid, &gate_of(&other), Some("decline")),
            ACTIVE,
        )
        .await;
    let t = &declined["result"]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_REJECTED", "{declined}");
    assert_eq!(t["metadata"][WORK]["status"], "dropped");
    // Status requests see both.
    let status = s
        .call_with(
            "SendMessage",
            handoff_message(json!({"skill": "status", "task": id})),
            ACTIVE,
        )
        .await;
    let reply = &status["result"]["message"];
    assert_eq!(
        reply["metadata"][WORK]["handoffs"][0]["status"], "ready",
        "{status}"
    );
    let all = s
        .call_with(
            "SendMessage",
            handoff_message(json!({"skill": "status"})),
            ACTIVE,
        )
        .await;
    assert_eq!(
        all["result"]["message"]["metadata"][WORK]["handoffs"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "{all}"
    );
}

#[tokio::test]
async fn two_answers_race_and_exactly_one_decides() {
    let s = Server::start().await;
    let task = propose(&s).await;
    let id = task["id"].as_str().unwrap().to_string();
    let gate = gate_of(&task);
    let (a, b) = tokio::join!(
        s.call_with("SendMessage", answer(&id, &gate, Some("approve")), ACTIVE),
        s.call_with("SendMessage", answer(&id, &gate, Some("decline")), ACTIVE),
    );
    let won: Vec<&Value> = [&a, &b]
        .into_iter()
        .filter(|v| v.get("error").is_none())
        .collect();
    let lost: Vec<&Value> = [&a, &b]
        .into_iter()
        .filter(|v| v.get("error").is_some())
        .collect();
    assert_eq!((won.len(), lost.len()), (1, 1), "{a}\n{b}");
    assert_eq!(
        error_code(lost[0]),
        -32004,
        "the loser is told the gate closed"
    );
    assert!(lost[0]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("already answered"));
    let t = s.ok("GetTask", json!({"id": id})).await;
    assert_eq!(t["status"], won[0]["result"]["task"]["status"]);
}

#[tokio::test]
async fn bad_answers_and_bad_requests_are_refused_and_change_nothing() {
    let s = Server::start().await;
    let task = propose(&s).await;
    let id = task["id"].as_str().unwrap();
    let gate = gate_of(&task);
    for (params, code, field) in [
        (answer(id, &gate, Some("reject")), -32602, "choice"),
        (answer(id, &gate, None), -32602, "choice"),
        (answer(id, "gate-99", Some("approve")), -32602, "replyTo"),
    ] {
        let v = s.call_with("SendMessage", params, ACTIVE).await;
        assert_eq!(error_code(&v), code, "{v}");
        assert_eq!(v["error"]["data"][0]["metadata"]["field"], field, "{v}");
    }
    // A plain message is no answer: the task waits for its gate.
    let plain = json!({"message": {"messageId": format!("p-{}", suffix()), "taskId": id,
        "role": "ROLE_USER", "parts": [{"text": "hurry"}]}});
    assert_eq!(
        error_code(&s.call_with("SendMessage", plain, ACTIVE).await),
        -32004
    );
    let t = s.ok("GetTask", json!({"id": id})).await;
    assert_eq!(t["status"], task["status"], "nothing changed");
    // work/v1 refusals name the field.
    for (work, field) in [
        (json!({"skill": "deploy"}), "work.skill"),
        (json!({"skill": "handoff", "title": "  "}), "work.title"),
        (
            json!({"skill": "handoff", "title": "t", "writes": ["src/ok.rs", "/etc/passwd"]}),
            "work.writes[1]",
        ),
        (json!(["not", "an", "object"]), "work"),
    ] {
        let v = s
            .call_with("SendMessage", handoff_message(work), ACTIVE)
            .await;
        assert_eq!(error_code(&v), -32602, "{v}");
        assert_eq!(v["error"]["data"][0]["metadata"]["field"], field, "{v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(field),
            "{v}"
        );
    }
}

#[tokio::test]
async fn without_the_extension_active_a_handoff_is_an_ordinary_message() {
    let s = Server::start().await;
    let work = json!({"skill": "handoff", "title": "Export"});
    let mut params = handoff_message(work);
    params["message"]["messageId"] = json!(format!("tck-complete-task-{}", suffix()));
    let v = s.call("SendMessage", params).await;
    let t = &v["result"]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
    assert!(t["metadata"].get(WORK).is_none());
}

#[tokio::test]
async fn an_operator_lands_the_work_item_and_a_subscriber_sees_every_step() {
    use taskledger_local::{operator, Storage};
    // The operator's command runs on the server's store, as a second process would.
    let storage = match taskledger_tests::test_storage() {
        Storage::Memory => Storage::Dir(
            std::env::temp_dir().join(format!("tl-handoff-{}", uuid::Uuid::new_v4().simple())),
        ),
        other => other,
    };
    let mut config = taskledger_tests::test_config();
    config.storage = storage.clone();
    config.stream_poll = std::time::Duration::from_millis(50);
    let s = Server::start_with(config).await;
    let task = propose(&s).await;
    let id = task["id"].as_str().unwrap().to_string();
    s.call_with(
        "SendMessage",
        answer(&id, &gate_of(&task), Some("approve")),
        ACTIVE,
    )
    .await;
    // A subscriber from the approval on, read to the end of its stream.
    let subscriber = {
        let s = s.over(s.binding);
        let id = id.clone();
        tokio::spawn(async move {
            s.stream("SubscribeToTask", json!({"id": id}))
                .await
                .stream()
                .rest()
                .await
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    for status in ["working", "review", "landing"] {
        let t = operator::advance_work(&storage, &Default::default(), &id, status, vec![])
            .await
            .unwrap();
        assert_eq!(t.status.state.as_str(), "TASK_STATE_WORKING", "{status}");
    }
    let evidence: Vec<Value> = (0..60)
        .map(|i| {
            json!({"command": format!("cargo test {i}"), "exitCode": 0, "durationMs": 5,
            "summary": "ok"})
        })
        .collect();
    let artifacts = serde_json::from_value(json!([
        {"kind": "pr", "url": "https://git.example.com/p/7", "number": 7, "state": "merged"},
        {"kind": "evidence", "items": evidence},
    ]))
    .unwrap();
    let landed = operator::advance_work(&storage, &Default::default(), &id, "landed", artifacts)
        .await
        .unwrap();
    assert_eq!(landed.status.state.as_str(), "TASK_STATE_COMPLETED");
    // Landed is final: the operator is refused.
    assert!(
        operator::advance_work(&storage, &Default::default(), &id, "working", vec![])
            .await
            .is_err()
    );
    let t = s.ok("GetTask", json!({"id": id})).await;
    assert_eq!(t["status"]["message"]["parts"][0]["text"], "Landed.");
    assert_eq!(t["metadata"][WORK]["status"], "landed");
    let artifacts = t["artifacts"].as_array().unwrap();
    let ids: Vec<&str> = artifacts
        .iter()
        .map(|a| a["artifactId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["pr", "evidence"]);
    assert_eq!(artifacts[1]["metadata"]["truncated"], true);
    assert_eq!(
        artifacts[1]["parts"][0]["data"]["items"]
            .as_array()
            .unwrap()
            .len(),
        50
    );
    let events = tokio::time::timeout(std::time::Duration::from_secs(10), subscriber)
        .await
        .expect("the stream ended at the terminal state")
        .unwrap();
    let stages: Vec<String> = events
        .iter()
        .filter(|e| e.kind() == "statusUpdate")
        .filter_map(|e| e.body()["status"]["message"]["metadata"][WORK]["status"].as_str())
        .map(str::to_string)
        .collect();
    assert_eq!(
        stages,
        ["working", "review", "landing", "landed"],
        "{events:?}"
    );
    if let Storage::Dir(dir) = storage {
        let _ = std::fs::remove_dir_all(dir);
    }
}
