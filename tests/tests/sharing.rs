//! Shared tasks through the public API (ADR 021): the participants of a task are principals
//! of its tenant, who see it, find it in their lists and act as their role allows; the sender
//! of a message is the caller; everyone else is told the task does not exist. Runs on every
//! binding (`TASKLEDGER_TEST_BINDING`).

use serde_json::{json, Value};
use taskledger_domain::ids::Principal;
use taskledger_tests::{error_code, test_config, Server};

const MEDIA: &str = "application/vnd.tiny-harness.task+json";
const KEY: &str = "io.github.madarauchiha-314.tiny-harness/task";
const TASK_NOT_FOUND: i64 = -32001;
const INVALID_PARAMS: i64 = -32602;

/// alice owns; bob and carol are her colleagues; mallory is not on the task; globex's bob is
/// another tenant's.
fn people() -> taskledger_local::Config {
    let mut config = test_config();
    config.tokens = [
        ("a", "acme", "alice"),
        ("b", "acme", "bob"),
        ("c", "acme", "carol"),
        ("m", "acme", "mallory"),
        ("x", "globex", "bob"),
    ]
    .into_iter()
    .map(|(t, tenant, s)| (t.to_string(), Principal::new(tenant, s).unwrap()))
    .collect();
    config
}

fn team() -> Value {
    json!({
        "name": "Release", "goal": "Ship 1.0",
        "participants": [
            {"id": "alice", "kind": "human", "role": "admin"},
            {"id": "bob", "kind": "human", "role": "assignee"},
            {"id": "carol", "kind": "human", "role": "watcher"}
        ]
    })
}

/// A message with text; `sender` names a participant (none: the caller speaks as itself).
fn message(id: &str, text: &str, sender: Option<&str>, task: Option<&str>) -> Value {
    let mut m = json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]});
    if let Some(s) = sender {
        m["metadata"] = json!({"participant_id": s});
    }
    if let Some(t) = task {
        m["taskId"] = json!(t);
    }
    m
}

async fn send(s: &Server, m: Value) -> Value {
    s.call(
        "SendMessage",
        json!({"message": m, "configuration": {"returnImmediately": true}}),
    )
    .await
}

/// alice's task shared with bob (assignee) and carol (watcher), waiting for bob's answer.
async fn shared_task(alice: &Server) -> String {
    let mut m = message("th-ask-bob", "Deploy it", None, None);
    m["parts"]
        .as_array_mut()
        .unwrap()
        .push(json!({"data": team(), "mediaType": MEDIA}));
    let v = alice
        .call(
            "SendMessage",
            json!({"message": m, "configuration": {"returnImmediately": false}}),
        )
        .await;
    let t = &v["result"]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{v}");
    t["id"].as_str().unwrap().to_string()
}

fn texts(task: &Value) -> Vec<String> {
    task["history"]
        .as_array()
        .map(|h| {
            h.iter()
                .filter_map(|m| m["parts"][0]["text"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn the_participants_see_the_task_and_nobody_else_does() {
    let s = Server::start_with(people()).await;
    let (alice, bob, carol) = (s.as_user("a"), s.as_user("b"), s.as_user("c"));
    let id = shared_task(&alice).await;
    if pushes(&s).await {
        alice
            .ok(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": id, "id": "alices", "url": "http://127.0.0.1:9/hook"}),
            )
            .await;
    }
    for who in [&alice, &bob, &carol] {
        let t = who.ok("GetTask", json!({"id": id})).await;
        assert_eq!(t["id"], id);
        let list = who.ok("ListTasks", json!({})).await;
        assert_eq!(list["totalSize"], 1, "{list}");
        assert_eq!(list["tasks"][0]["id"], id);
    }
    // not a participant, or another tenant's bob: the task does not exist, for every operation
    for stranger in [s.as_user("m"), s.as_user("x")] {
        assert_eq!(
            stranger.err("GetTask", json!({"id": id})).await,
            TASK_NOT_FOUND
        );
        assert_eq!(
            stranger.err("CancelTask", json!({"id": id})).await,
            TASK_NOT_FOUND
        );
        let v = send(
            &stranger,
            message("m-s", "let me in", Some("bob"), Some(&id)),
        )
        .await;
        assert_eq!(error_code(&v), TASK_NOT_FOUND, "{v}");
        let list = stranger.ok("ListTasks", json!({})).await;
        assert_eq!(list["totalSize"], 0, "{list}");
        if !pushes(&s).await {
            continue;
        }
        let v = stranger
            .call(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": id, "url": "http://127.0.0.1:9/hook"}),
            )
            .await;
        assert_eq!(error_code(&v), TASK_NOT_FOUND, "{v}");
        let config = json!({"taskId": id, "id": "alices"});
        for method in [
            "GetTaskPushNotificationConfig",
            "DeleteTaskPushNotificationConfig",
        ] {
            assert_eq!(
                stranger.err(method, config.clone()).await,
                TASK_NOT_FOUND,
                "{method}"
            );
        }
        assert_eq!(
            stranger
                .err("ListTaskPushNotificationConfigs", json!({"taskId": id}))
                .await,
            TASK_NOT_FOUND
        );
    }
    // nor can a stranger subscribe to it (JSON-RPC: the refusal is the stream's one event)
    for token in ["m", "x"] {
        let r = s
            .client
            .post(format!("{}/a2a", s.base))
            .header("A2A-Version", "1.0")
            .header("Authorization", format!("Bearer {token}"))
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": id}}))
            .send()
            .await
            .unwrap();
        let body = r.text().await.unwrap();
        assert!(body.contains("-32001"), "{token}: {body}");
        assert!(!body.contains("Deploy it"), "{token}: {body}");
    }
    let t = alice.ok("GetTask", json!({"id": id})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(texts(&t).iter().filter(|x| *x == "let me in").count(), 0);
    // alice's config is untouched by the strangers' attempts
    if pushes(&s).await {
        let kept = alice
            .ok(
                "GetTaskPushNotificationConfig",
                json!({"taskId": id, "id": "alices"}),
            )
            .await;
        assert_eq!(kept["id"], "alices");
    }
}

#[tokio::test]
async fn each_participant_acts_as_its_role_and_only_as_itself() {
    let s = Server::start_with(people()).await;
    let (alice, bob, carol) = (s.as_user("a"), s.as_user("b"), s.as_user("c"));
    let id = shared_task(&alice).await;

    // a watcher reads: its message is refused with a status that says why, history unchanged
    let v = send(&carol, message("m-c", "I have thoughts", None, Some(&id))).await;
    let status = &v["result"]["task"]["status"];
    assert!(
        status["message"]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .contains("carol is a watcher"),
        "{v}"
    );
    // bob speaking as carol is spoofing: refused, nothing enters history
    let v = send(
        &bob,
        message("m-spoof", "carol says yes", Some("carol"), Some(&id)),
    )
    .await;
    assert!(
        v["result"]["task"]["status"]["message"]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .contains("only an admin may speak for carol"),
        "{v}"
    );
    // neither cancels nor changes the participants
    assert_eq!(
        carol.err("CancelTask", json!({"id": id})).await,
        INVALID_PARAMS
    );
    let mut m = message("m-roles", "", None, Some(&id));
    let mut env = team();
    env["participants"][2]["role"] = json!("admin");
    m["parts"] = json!([{"data": env, "mediaType": MEDIA}]);
    let v = send(&bob, m).await;
    assert_eq!(error_code(&v), INVALID_PARAMS, "{v}");
    assert!(v.to_string().contains("only an admin"), "{v}");
    let t = alice.ok("GetTask", json!({"id": id})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let history = texts(&t);
    for refused in ["I have thoughts", "carol says yes"] {
        assert!(!history.iter().any(|x| x == refused), "{history:?}");
    }
    assert_eq!(t["metadata"][KEY]["participants"][2]["role"], "watcher");

    // bob is the asked one: his answer, sent as himself, resumes the task, and history says
    // who spoke
    let v = send(&bob, message("m-answer", "take a", None, Some(&id))).await;
    assert!(v.get("result").is_some(), "{v}");
    let t = alice.wait_state(&id, "TASK_STATE_COMPLETED").await;
    let answer = t["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["parts"][0]["text"] == "take a")
        .expect("the answer is in history")
        .clone();
    assert_eq!(answer["metadata"]["participant_id"], "bob");
}

#[tokio::test]
async fn an_admin_may_act_for_a_participant_and_the_owner_cancels() {
    let s = Server::start_with(people()).await;
    let (alice, bob) = (s.as_user("a"), s.as_user("b"));
    let id = shared_task(&alice).await;
    // alice (admin) answers for bob: the question is bob's, so the task resumes
    let v = send(
        &alice,
        message("m-for-bob", "take b", Some("bob"), Some(&id)),
    )
    .await;
    assert!(v.get("result").is_some(), "{v}");
    alice.wait_state(&id, "TASK_STATE_COMPLETED").await;

    // on a second task, the owner cancels what bob (an assignee) may not
    let second = shared_task(&alice).await;
    assert_eq!(
        bob.err("CancelTask", json!({"id": second})).await,
        INVALID_PARAMS
    );
    let t = alice.ok("CancelTask", json!({"id": second})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_CANCELED");
}

/// Whether the server takes push configs (not where no push worker runs: DynamoDB without SQS).
async fn pushes(s: &Server) -> bool {
    s.card().await["capabilities"]["pushNotifications"] == true
}

#[tokio::test]
async fn push_configs_on_a_shared_task_are_each_principals_own() {
    let s = Server::start_with(people()).await;
    if !pushes(&s).await {
        eprintln!("skipped: this server takes no push configs");
        return;
    }
    let (alice, bob) = (s.as_user("a"), s.as_user("b"));
    let id = shared_task(&alice).await;
    let config = |cfg: &str| json!({"taskId": id, "id": cfg, "url": "http://127.0.0.1:9/hook"});
    bob.ok("CreateTaskPushNotificationConfig", config("bobs"))
        .await;
    alice
        .ok("CreateTaskPushNotificationConfig", config("alices"))
        .await;
    let ids = |v: Value| -> Vec<String> {
        v["configs"]
            .as_array()
            .map(|c| {
                c.iter()
                    .map(|c| c["id"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let list = json!({"taskId": id});
    assert_eq!(
        ids(bob
            .ok("ListTaskPushNotificationConfigs", list.clone())
            .await),
        ["bobs"]
    );
    assert_eq!(
        ids(alice
            .ok("ListTaskPushNotificationConfigs", list.clone())
            .await),
        ["alices"]
    );
    // another's config is not found, not replaced, and not deleted
    let get = json!({"taskId": id, "id": "bobs"});
    assert_eq!(
        alice
            .err("GetTaskPushNotificationConfig", get.clone())
            .await,
        TASK_NOT_FOUND
    );
    // The same id is hers to use (ids are each principal's own: issue 51), and what she does
    // with hers leaves his as it was.
    let hers = alice
        .ok("CreateTaskPushNotificationConfig", config("bobs"))
        .await;
    assert_eq!(hers["id"], "bobs");
    alice
        .ok("DeleteTaskPushNotificationConfig", get.clone())
        .await;
    assert_eq!(
        alice
            .err("GetTaskPushNotificationConfig", get.clone())
            .await,
        TASK_NOT_FOUND
    );
    let mine = bob.ok("GetTaskPushNotificationConfig", get).await;
    assert_eq!(mine["id"], "bobs");
}

/// `scope` picks owned or shared tasks: a JSON-RPC param, an HTTP+JSON query parameter, and
/// gRPC metadata (`taskledger-scope`), on one server serving all three.
#[tokio::test]
async fn a_list_scope_picks_owned_or_shared_tasks_on_every_binding() {
    let mut config = people();
    config.grpc = Some(taskledger_local::GrpcSettings::loopback());
    let s = Server::start_with(config).await;
    let (alice, bob) = (s.as_user("a"), s.as_user("b"));
    let shared = shared_task(&alice).await;
    let own = bob.send_task("m-own", "mine").await;
    let own = own["id"].as_str().unwrap().to_string();
    let expect = [("", 2), ("owned", 1), ("shared", 1)];
    let id_of = |scope: &str| match scope {
        "owned" => own.clone(),
        _ => shared.clone(),
    };
    for (scope, n) in expect {
        // JSON-RPC
        let mut params = json!({});
        if !scope.is_empty() {
            params["scope"] = json!(scope);
        }
        let v = bob
            .over(taskledger_tests::Binding::JsonRpc)
            .ok("ListTasks", params)
            .await;
        assert_eq!(v["totalSize"], n, "jsonrpc {scope}: {v}");
        if n == 1 {
            assert_eq!(v["tasks"][0]["id"], id_of(scope));
        }
        // HTTP+JSON
        let r = s
            .client
            .get(format!("{}/a2a/rest/tasks?scope={scope}", s.base))
            .header("A2A-Version", "1.0")
            .header("Authorization", "Bearer b")
            .send()
            .await
            .unwrap();
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["totalSize"], n, "rest {scope}: {v}");
        // gRPC
        let extra: Vec<(&str, &str)> = if scope.is_empty() {
            vec![]
        } else {
            vec![("taskledger-scope", scope)]
        };
        let v = bob
            .over(taskledger_tests::Binding::Grpc)
            .call_with("ListTasks", json!({}), &extra)
            .await;
        assert_eq!(v["result"]["totalSize"], n, "grpc {scope}: {v}");
    }
    let v = bob
        .over(taskledger_tests::Binding::JsonRpc)
        .call("ListTasks", json!({"scope": "everyone"}))
        .await;
    assert_eq!(error_code(&v), INVALID_PARAMS, "{v}");
    let r = s
        .client
        .get(format!("{}/a2a/rest/tasks?scope=everyone", s.base))
        .header("A2A-Version", "1.0")
        .header("Authorization", "Bearer b")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::BAD_REQUEST);
}

/// With callers who authenticate, the card declares an extended card; each binding serves it
/// to an authenticated caller, naming that caller and its limits; nobody else gets it.
#[tokio::test]
async fn an_authenticated_caller_gets_its_extended_card_on_every_binding() {
    let mut config = people();
    config.grpc = Some(taskledger_local::GrpcSettings::loopback());
    config.max_streams = Some(3);
    let s = Server::start_with(config).await;
    let public = s.card().await;
    assert_eq!(public["capabilities"]["extendedAgentCard"], true);
    for binding in [
        taskledger_tests::Binding::JsonRpc,
        taskledger_tests::Binding::Rest,
        taskledger_tests::Binding::Grpc,
    ] {
        let card = s
            .as_user("b")
            .over(binding)
            .ok("GetExtendedAgentCard", json!({}))
            .await;
        assert_eq!(card["name"], public["name"], "{binding:?}");
        let skills: Vec<&str> = card["skills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap())
            .collect();
        assert!(skills.contains(&"shared-tasks"), "{binding:?}: {skills:?}");
        let limits = card["capabilities"]["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["uri"] == "urn:taskledger:ext:caller-limits:v1")
            .expect("the caller's limits")
            .clone();
        assert_eq!(limits["params"]["principal"], "acme/bob", "{binding:?}");
        assert_eq!(limits["params"]["openStreams"], 3, "{binding:?}");
    }
    // without a token: 401, no card
    let r = s
        .client
        .get(format!("{}/a2a/rest/extendedAgentCard", s.base))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::UNAUTHORIZED);
}
