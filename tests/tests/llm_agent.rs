//! The model loop against an OpenAI-compatible mock LLM (a real HTTP server in the test),
//! scripted to call tools: a plan, steps completed, a help request answered, a sub-task spawned
//! and finished; plus the turn limit and a provider that keeps failing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Value};
use taskledger_app::agent::LlmAgent;
use taskledger_app::agent::TurnBudget;
use taskledger_app::runners::{handle_turn, handle_turn_within, run_feed_relay, TurnOutcome};
use taskledger_app::service::Change;
use taskledger_app::{Dispatch, Service, ServiceSettings};
use taskledger_domain::agent::llm::LanguageModel;
use taskledger_domain::agent::scripted::ScriptedModel;
use taskledger_domain::cursor::CursorCodec;
use taskledger_domain::extensions::usage::USAGE_EXTENSION_URI;
use taskledger_domain::ids::{Principal, TaskId};
use taskledger_domain::ports::{EventStore, WorkFeed};
use taskledger_domain::task::{TaskAggregate, TaskCommand, TaskEvent};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Message, Part, PartContent, SendMessageResponse, TaskState};
use taskledger_infra::llm::{OpenAiCompatible, OpenAiSettings};
use taskledger_infra::SqliteStore;
use taskledger_local::AgentChoice;
use taskledger_tests::chat::{answer, serve, tool};
use taskledger_tests::{test_config, Server};

const KEY: &str = "io.github.madarauchiha-314.tiny-harness/task";

/// A skills folder: one valid skill with a reference, and one with broken front matter.
fn skills_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("taskledger-llm-skills-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(dir.join("notes/references")).unwrap();
    std::fs::write(dir.join("notes/SKILL.md"), "---\nname: notes\ndescription: Writes release notes\n---\nAlways list breaking changes first.").unwrap();
    std::fs::write(
        dir.join("notes/references/template.md"),
        "## Breaking changes",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("broken")).unwrap();
    std::fs::write(dir.join("broken/SKILL.md"), "no front matter").unwrap();
    dir
}

#[derive(Clone, Copy)]
enum Script {
    Skills,
    Release,
    Loop,
    Broken,
    Ui,
    /// A plan of three steps, each completed in its own model step, then the answer.
    Steps,
}

struct Mock {
    script: Script,
    calls: AtomicUsize,
}

async fn chat(State(m): State<Arc<Mock>>, Json(req): Json<Value>) -> axum::response::Response {
    m.calls.fetch_add(1, Ordering::SeqCst);
    let messages = req["messages"].as_array().cloned().unwrap_or_default();
    let system = messages
        .iter()
        .filter(|x| x["role"] == "system")
        .map(|x| x["content"].as_str().unwrap_or_default().to_string())
        .collect::<String>();
    let made: usize = messages
        .iter()
        .map(|x| x["tool_calls"].as_array().map_or(0, Vec::len))
        .sum();
    let body = match m.script {
        Script::Broken => {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                r#"{"error": {"message": "down for org-Hq42 project proj_7731", "type": "server_error"}}"#,
            )
                .into_response()
        }
        Script::Steps => match made {
            0 => answer(
                None,
                vec![tool(
                    "p0",
                    "create_plan",
                    json!({"steps": [{"name": "One", "description": ""}, {"name": "Two", "description": "", "depends_on": ["One"]}, {"name": "Three", "description": "", "depends_on": ["Two"]}]}),
                )],
            ),
            1..=3 => {
                let step = ["one", "two", "three"][made - 1];
                answer(
                    None,
                    vec![tool(
                        &format!("p{made}"),
                        "complete_step",
                        json!({"step": step, "output": format!("{step} done")}),
                    )],
                )
            }
            _ => answer(Some("all three done"), vec![]),
        },
        Script::Ui => match made {
            // first a surface without a catalog: refused, nothing emitted
            0 => answer(
                None,
                vec![tool(
                    "u0",
                    "emit_ui",
                    json!({"messages": [{"version": "v0.9", "createSurface": {"surfaceId": "pick"}}]}),
                )],
            ),
            1 => {
                let last = messages.last().cloned().unwrap_or_default();
                assert_eq!(last["role"], "tool");
                assert!(
                    last["content"]
                        .as_str()
                        .unwrap_or_default()
                        .contains("messages[0].createSurface.catalogId"),
                    "the model is told which message and field failed: {last}"
                );
                answer(
                    None,
                    vec![tool(
                        "u1",
                        "emit_ui",
                        json!({"messages": [
                            {"version": "v0.9", "createSurface": {"surfaceId": "pick", "catalogId": "https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json"}},
                            {"version": "v0.9", "updateComponents": {"surfaceId": "pick", "components": [
                                {"id": "root", "component": "Column", "children": ["q", "eu"]},
                                {"id": "q", "component": "Text", "text": "Which region?"},
                                {"id": "eu", "component": "Button", "child": "q", "action": {"event": {"name": "eu"}}}]}},
                            {"version": "v0.9", "updateDataModel": {"surfaceId": "pick", "path": "/region", "value": "eu"}}
                        ]}),
                    )],
                )
            }
            2 => {
                let acted = messages
                    .iter()
                    .rev()
                    .find(|x| x["role"] == "user")
                    .and_then(|x| x["content"].as_str())
                    .is_some_and(|c| c.contains("[A2UI action] eu on surface pick from eu"));
                if acted {
                    answer(
                        None,
                        vec![tool(
                            "u2",
                            "emit_ui",
                            json!({"messages": [{"version": "v0.9", "deleteSurface": {"surfaceId": "pick"}}]}),
                        )],
                    )
                } else {
                    answer(Some("form shown"), vec![])
                }
            }
            _ => answer(Some("picked eu"), vec![]),
        },
        Script::Skills => match made {
            0 => {
                assert!(
                    system.contains("- notes: Writes release notes"),
                    "level 1: names and descriptions"
                );
                assert!(
                    !system.contains("broken"),
                    "an invalid skill is not offered"
                );
                answer(None, vec![tool("s0", "list_skills", json!({}))])
            }
            1 => answer(
                None,
                vec![tool("s1", "load_skill", json!({"name": "notes"}))],
            ),
            2 => {
                assert!(
                    system.contains("Always list breaking changes first."),
                    "level 2: the body once loaded"
                );
                answer(
                    None,
                    vec![tool(
                        "s2",
                        "load_skill_resource",
                        json!({"name": "notes", "kind": "references", "resource": "template.md"}),
                    )],
                )
            }
            3 => answer(
                None,
                vec![tool("s3", "unload_skill", json!({"name": "notes"}))],
            ),
            _ => {
                assert!(
                    !system.contains("Always list breaking changes first."),
                    "unloaded"
                );
                answer(Some("notes written"), vec![])
            }
        },
        Script::Loop => answer(
            None,
            vec![tool(
                &format!("c{made}"),
                "complete_step",
                json!({"step": "nope", "output": "x"}),
            )],
        ),
        Script::Release if system.contains("\"name\":\"Notify\"") => {
            // The sub-task takes a moment, so its parent is seen waiting for it.
            tokio::time::sleep(Duration::from_millis(150)).await;
            answer(Some("team notified"), vec![])
        }
        Script::Release => match made {
            0 => answer(
                None,
                vec![tool(
                    "c0",
                    "create_plan",
                    json!({"steps": [
                {"name": "Build", "description": "compile"},
                {"name": "Ship", "description": "publish", "depends_on": ["Build"]}]}),
                )],
            ),
            1 => answer(
                None,
                vec![tool(
                    "c1",
                    "complete_step",
                    json!({"step": "Build", "output": "built"}),
                )],
            ),
            2 => answer(
                None,
                vec![tool(
                    "c2",
                    "ask_participant",
                    json!({"participant_id": "bob", "question": "Which region?", "options": ["eu", "us"]}),
                )],
            ),
            3 => answer(
                None,
                vec![tool(
                    "c3",
                    "spawn_subtask",
                    json!({"name": "Notify", "goal": "tell the team"}),
                )],
            ),
            4 => answer(
                None,
                vec![tool(
                    "c4",
                    "complete_step",
                    json!({"step": "ship", "output": "shipped"}),
                )],
            ),
            _ => answer(Some("Released 1.0 to eu"), vec![]),
        },
    };
    Json(body).into_response()
}

/// The mock OpenAI-compatible server on a free port: its base URL and its call counter.
async fn mock_llm(script: Script) -> (String, Arc<Mock>) {
    let mock = Arc::new(Mock {
        script,
        calls: AtomicUsize::new(0),
    });
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(chat))
        .with_state(mock.clone());
    let addr = serve(app).await;
    (format!("http://{addr}/v1"), mock)
}

async fn start(script: Script, max_turns: u32) -> (Server, Arc<Mock>) {
    let (base_url, mock) = mock_llm(script).await;
    let mut config = test_config();
    let mut settings = OpenAiSettings::new(base_url, "mock-1");
    settings.initial_backoff = Duration::from_millis(5);
    config.agent = AgentChoice::OpenAi {
        settings,
        max_turns,
        skills_dir: Some(skills_dir()),
        approve_tools: vec![],
    };
    (Server::start_with(config).await, mock)
}

/// A service on an in-memory SQLite store whose agent is the loop on the mock LLM, with feed
/// dispatch: nothing runs until the test (or a relay it starts) hands turns to the worker.
async fn feed_service(
    script: Script,
    max_turns: u32,
) -> (Arc<Service>, Arc<SqliteStore>, Arc<Mock>) {
    let (base_url, mock) = mock_llm(script).await;
    let model = OpenAiCompatible::new(OpenAiSettings::new(base_url, "mock-1")).unwrap();
    let (svc, store) = feed_service_on(Arc::new(model), max_turns);
    (svc, store, mock)
}

/// Like `feed_service`, on any model.
fn feed_service_on(
    model: Arc<dyn LanguageModel>,
    max_turns: u32,
) -> (Arc<Service>, Arc<SqliteStore>) {
    let store = Arc::new(SqliteStore::in_memory());
    let svc = Service::new(
        store.clone(),
        store.clone(),
        LlmAgent::new(model, max_turns),
        CursorCodec::new(b"k".to_vec()),
        ServiceSettings {
            blocking_timeout: Duration::from_secs(1),
            dispatch: Dispatch::Feed,
            ..Default::default()
        },
    );
    (svc, store)
}

/// Sends a message that returns at once; the id of its task.
async fn send_now(svc: &Arc<Service>, message: Value) -> TaskId {
    let req = serde_json::from_value(
        json!({"message": message, "configuration": {"returnImmediately": true}}),
    )
    .unwrap();
    match svc
        .send_message(&Principal::anonymous(), req, None)
        .await
        .unwrap()
    {
        SendMessageResponse::Task(t) => TaskId::parse(t.id).unwrap(),
        other => panic!("a task: {other:?}"),
    }
}

/// A user's A2UI action on a surface component, from the participant ann.
fn ui_action(id: &str, task_id: &str, surface: &str, component: &str) -> Value {
    json!({"messageId": id, "taskId": task_id, "role": "ROLE_USER", "metadata": {"participant_id": "ann"},
           "parts": [{"mediaType": "application/a2ui+json", "data": {"version": "v0.9", "action": {
               "name": component, "surfaceId": surface, "sourceComponentId": component,
               "timestamp": "2026-11-30T10:00:00Z", "context": {}}}}]})
}

fn envelope_message(id: &str, text: &str) -> Value {
    json!({"messageId": id, "role": "ROLE_USER", "metadata": {"participant_id": "ann"}, "parts": [
        {"text": text},
        {"mediaType": "application/vnd.tiny-harness.task+json", "data": {"name": "Release", "goal": "Ship 1.0",
          "participants": [{"id": "ann", "kind": "human", "role": "admin"}, {"id": "bob", "kind": "human", "role": "assignee"}]}}
    ]})
}

#[tokio::test]
async fn the_loop_plans_asks_spawns_and_finishes() {
    let (s, mock) = start(Script::Release, 50).await;
    let id = s.start_task(envelope_message("m-1", "Ship it")).await;
    let t = s.wait_state(&id, "TASK_STATE_INPUT_REQUIRED").await;
    assert!(t["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("Which region?"));
    let plan = &t["metadata"][KEY]["plan"]["steps"];
    assert_eq!(plan[0]["state"], "done");
    assert_eq!(plan[0]["output"], "built");
    // the help request is answered; the loop spawns a sub-task, waits for it, then finishes
    let reply = json!({"messageId": "m-2", "taskId": id, "role": "ROLE_USER", "metadata": {"participant_id": "bob"}, "parts": [{"text": "eu"}]});
    s.call(
        "SendMessage",
        json!({"message": reply, "configuration": {"returnImmediately": true}}),
    )
    .await;
    let t = s.wait_state(&id, "TASK_STATE_COMPLETED").await;
    assert_eq!(t["artifacts"][0]["parts"][0]["text"], "Released 1.0 to eu");
    let ext = &t["metadata"][KEY];
    assert_eq!(ext["plan"]["steps"][1]["state"], "done");
    assert_eq!(ext["sub_tasks"][0]["task_id"], format!("{id}.1"));
    assert_eq!(ext["sub_tasks"][0]["state"], "TASK_STATE_COMPLETED");
    let child = s.ok("GetTask", json!({"id": format!("{id}.1")})).await;
    assert_eq!(child["artifacts"][0]["parts"][0]["text"], "team notified");
    // tool calls and results are in history, marked with their part type
    let history = t["history"].as_array().unwrap();
    let kinds: Vec<&str> = history
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap().iter())
        .filter_map(|p| p["metadata"]["kagent.dev/a2a/part-type"].as_str())
        .collect();
    assert_eq!(kinds.iter().filter(|k| **k == "function_call").count(), 5);
    assert_eq!(
        kinds.iter().filter(|k| **k == "function_response").count(),
        5
    );
    // usage over the task's life: 6 calls of 15 tokens on the parent
    let usage = &t["metadata"]["https://kagent.dev/extensions/usage/v1"];
    assert_eq!(usage["totalTokens"], 90);
    assert_eq!(usage["models"][0]["model"], "mock-1");
    assert_eq!(
        mock.calls.load(Ordering::SeqCst),
        7,
        "six parent turns and one child turn"
    );
}

#[tokio::test]
async fn emit_ui_shows_a_surface_and_the_users_action_resumes_the_task() {
    let (s, mock) = start(Script::Ui, 50).await;
    let id = s.start_task(envelope_message("m-1", "ask me")).await;
    // The surface has a button: the task waits for the user's action.
    let t = s.wait_state(&id, "TASK_STATE_INPUT_REQUIRED").await;
    let artifacts = t["artifacts"].as_array().unwrap();
    let ui: Vec<&Value> = artifacts.iter().filter(|a| a["name"] == "a2ui").collect();
    assert_eq!(
        ui.len(),
        1,
        "the refused call emitted nothing: {artifacts:?}"
    );
    let a = ui[0];
    assert!(a["artifactId"].as_str().unwrap().starts_with("a2ui:"));
    assert_eq!(
        a["extensions"][0],
        "https://a2ui.org/a2a-extension/a2ui/v0.9.1"
    );
    let parts = a["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 3, "one part per message");
    assert!(parts
        .iter()
        .all(|p| p["mediaType"] == "application/a2ui+json"));
    assert_eq!(parts[0]["data"]["createSurface"]["surfaceId"], "pick");
    assert_eq!(
        parts[1]["data"]["updateComponents"]["components"][0]["id"],
        "root"
    );
    assert_eq!(parts[2]["data"]["updateDataModel"]["value"], "eu");
    let answer = artifacts.iter().find(|a| a["name"] == "answer").unwrap();
    assert_eq!(answer["parts"][0]["text"], "form shown");
    let results: Vec<Value> = t["history"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap().clone())
        .filter(|p| p["metadata"]["kagent.dev/a2a/part-type"] == "function_response")
        .map(|p| p["data"]["response"].clone())
        .collect();
    assert_eq!(results.len(), 2);
    assert!(results[0]["error"]
        .as_str()
        .unwrap()
        .starts_with("tool.invalid_arguments: messages[0].createSurface.catalogId"));
    assert_eq!(
        results[1]["result"],
        "3 A2UI message(s) emitted in an a2ui artifact"
    );
    assert_eq!(mock.calls.load(Ordering::SeqCst), 3);

    // An action on a surface or component the task did not create is discarded: refused with
    // the reason, nothing enters history, the agent is not called.
    let history_len = t["history"].as_array().unwrap().len();
    for (mid, surface, component, why) in [
        ("a-1", "other", "eu", "no surface \"other\""),
        ("a-2", "pick", "nope", "has no component \"nope\""),
    ] {
        s.call(
            "SendMessage",
            json!({"message": ui_action(mid, &id, surface, component)}),
        )
        .await;
        let t = s.wait_state(&id, "TASK_STATE_INPUT_REQUIRED").await;
        let reason = t["status"]["message"]["parts"][0]["text"].as_str().unwrap();
        assert!(reason.contains(why), "{reason}");
        assert_eq!(t["history"].as_array().unwrap().len(), history_len);
    }
    assert_eq!(mock.calls.load(Ordering::SeqCst), 3);

    // A valid action resumes the task; the model sees it as text, closes the surface, finishes.
    s.call(
        "SendMessage",
        json!({"message": ui_action("a-3", &id, "pick", "eu")}),
    )
    .await;
    let t = s.wait_state(&id, "TASK_STATE_COMPLETED").await;
    let answer = t["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "answer")
        .unwrap();
    assert_eq!(answer["parts"][0]["text"], "picked eu");
    assert_eq!(mock.calls.load(Ordering::SeqCst), 5);
    // the card declares the extension and its media type
    let card = s.card().await;
    assert!(card["capabilities"]["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["uri"] == "https://a2ui.org/a2a-extension/a2ui/v0.9.1"));
}

#[tokio::test]
async fn skills_are_listed_loaded_read_and_unloaded() {
    let (s, _mock) = start(Script::Skills, 50).await;
    let id = s.start_task(envelope_message("m-1", "write notes")).await;
    let t = s.wait_state(&id, "TASK_STATE_COMPLETED").await;
    let results: Vec<Value> = t["history"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap().clone())
        .filter(|p| p["metadata"]["kagent.dev/a2a/part-type"] == "function_response")
        .map(|p| p["data"]["response"].clone())
        .collect();
    assert_eq!(results.len(), 4);
    assert_eq!(results[0]["result"], "notes: Writes release notes");
    assert_eq!(
        results[2]["result"], "## Breaking changes",
        "level 3: a resource on demand"
    );
    assert_eq!(t["artifacts"][0]["parts"][0]["text"], "notes written");
}

#[tokio::test]
async fn the_turn_limit_fails_the_task() {
    let (s, _mock) = start(Script::Loop, 3).await;
    let id = s.start_task(envelope_message("m-1", "loop")).await;
    let t = s.wait_state(&id, "TASK_STATE_FAILED").await;
    assert_eq!(
        t["status"]["message"]["parts"][0]["text"],
        "turn limit reached"
    );
    // every bad call got a typed error result, nothing ran
    let errors = t["history"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap().iter())
        .filter(|p| p["data"]["response"]["error"].is_string())
        .count();
    assert_eq!(errors, 3);
}

#[tokio::test]
async fn a_provider_that_keeps_failing_fails_the_task_clearly() {
    let (s, mock) = start(Script::Broken, 50).await;
    let id = s.start_task(envelope_message("m-1", "go")).await;
    let t = s.wait_state(&id, "TASK_STATE_FAILED").await;
    let said = t["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(said.contains("model provider kept failing"), "{said}");
    // What every participant reads names the failure and a correlation id: never the
    // provider's error body (its organisation and project) or its URL (issue 51, D).
    assert!(said.contains("correlation id"), "{said}");
    for secret in ["org-Hq42", "proj_7731", "127.0.0.1", "http"] {
        assert!(!said.contains(secret), "{said}");
    }
    assert_eq!(
        mock.calls.load(Ordering::SeqCst),
        4,
        "retried, then gave up"
    );
}

/// Fault injection: the worker died after committing the model's tool call and before running
/// it. The redelivered turn runs the pending call once, does not ask the model for it again, and
/// a further redelivery repeats nothing.
#[tokio::test]
async fn a_turn_resumed_after_a_crash_runs_pending_tools_once() {
    let (svc, store, mock) = feed_service(Script::Release, 50).await;
    let id = send_now(&svc, envelope_message("m-1", "Ship it")).await;
    // what a step commits before running its tools: the model's call
    let mut call = Message::agent_text("call-msg", "");
    call.parts = vec![Part {
        content: PartContent::Data(
            json!({"id": "c0", "name": "create_plan", "args": {"steps": [
            {"name": "Build", "description": "compile"},
            {"name": "Ship", "description": "publish", "depends_on": ["Build"]}]}}),
        ),
        metadata: Some(
            json!({"kagent.dev/a2a/part-type": "function_call"})
                .as_object()
                .unwrap()
                .clone(),
        ),
        filename: None,
        media_type: Some("application/json".into()),
    }];
    svc.execute(Change::by_agent(&id), |_| {
        vec![TaskCommand::AppendAgentMessage {
            message: call.clone(),
            at: Timestamp::now(),
        }]
    })
    .await
    .unwrap();
    let turn = store.feed_after(0, 10).await.unwrap()[0].1.turn().unwrap();
    assert_eq!(handle_turn(&svc, &turn).await.unwrap(), TurnOutcome::Ran);
    let plans = |events: &[taskledger_domain::task::stored::StoredEvent]| {
        events
            .iter()
            .filter(|e| e.event_type == "PlanCreated")
            .count()
    };
    let events = store.events(&id, 0).await.unwrap();
    assert_eq!(plans(&events), 1, "the pending create_plan ran once");
    // the model was first asked after the plan existed (its script's second answer)
    let state = svc.ledger().current(&id).await.unwrap().unwrap();
    let plan = state
        .head()
        .unwrap()
        .ext
        .as_ref()
        .unwrap()
        .plan
        .clone()
        .unwrap();
    assert_eq!(plan.steps[0].output.as_deref(), Some("built"));
    let before = events.len();
    let asked = mock.calls.load(Ordering::SeqCst);
    assert_eq!(
        handle_turn(&svc, &turn).await.unwrap(),
        TurnOutcome::Duplicate
    );
    assert_eq!(store.events(&id, 0).await.unwrap().len(), before);
    assert_eq!(
        mock.calls.load(Ordering::SeqCst),
        asked,
        "a redelivery asks the model nothing"
    );
}

/// A turn says the task is WORKING in a commit of its own while the model has yet to answer (a
/// provider over the network), and in the answer's commit when the model answers at once (the
/// scripted model): either way the task's events hold WORKING between SUBMITTED and COMPLETED.
#[tokio::test]
async fn a_turn_says_working_first_unless_the_model_answers_at_once() {
    // the provider is down: the turn is WORKING while it retries, then the task fails
    let (base_url, _mock) = mock_llm(Script::Broken).await;
    let mut settings = OpenAiSettings::new(base_url, "mock-1");
    settings.initial_backoff = Duration::from_millis(5);
    let remote = OpenAiCompatible::new(settings).unwrap();
    let models: [(Arc<dyn LanguageModel>, usize); 2] =
        [(Arc::new(ScriptedModel), 1), (Arc::new(remote), 2)];
    for (model, commits) in models {
        let (svc, store) = feed_service_on(model, 1);
        let id = send_now(
            &svc,
            json!({"messageId": "m-1", "role": "ROLE_USER",
            "parts": [{"text": "hello"}]}),
        )
        .await;
        let mut changes = svc.changes();
        let turn = store.feed_after(0, 10).await.unwrap()[0].1.turn().unwrap();
        assert_eq!(handle_turn(&svc, &turn).await.unwrap(), TurnOutcome::Ran);
        let mut seen = 0;
        while let Ok(c) = changes.try_recv() {
            assert_eq!(c.task_id, id);
            seen += 1;
        }
        assert_eq!(seen, commits, "commits of the turn");
        let states: Vec<TaskState> = store
            .events(&id, 0)
            .await
            .unwrap()
            .iter()
            .filter_map(|e| match e.decode().ok()? {
                TaskEvent::StatusChanged { state, .. } => Some(state),
                _ => None,
            })
            .collect();
        assert_eq!(states.first(), Some(&TaskState::Working), "{states:?}");
        assert!(
            states[1..].iter().all(|s| *s != TaskState::Working),
            "{states:?}"
        );
        assert!(states.last().unwrap().is_terminal(), "{states:?}");
    }
}

/// Usage extension: every status update that ends an execution (the help request, the wait for
/// the sub-task, the completion) carries the task-lifetime totals so far, as a streaming or push
/// client would receive them (`TaskStatusUpdateEvent.metadata`); the last equals Task.metadata.
#[tokio::test]
async fn usage_rides_on_each_status_update_that_ends_an_execution() {
    let (svc, store, _mock) = feed_service(Script::Release, 50).await;
    tokio::spawn(run_feed_relay(svc.clone(), store.clone(), "agent"));
    let wait = |id: TaskId, state: TaskState| {
        let svc = svc.clone();
        async move {
            for _ in 0..200 {
                let s = svc.ledger().current(&id).await.unwrap().unwrap();
                if s.head().unwrap().status.state == state {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            panic!("{id} never reached {state:?}");
        }
    };
    let id = send_now(&svc, envelope_message("m-1", "Ship it")).await;
    wait(id.clone(), TaskState::InputRequired).await;
    send_now(
        &svc,
        json!({"messageId": "m-2", "taskId": id.as_str(), "role": "ROLE_USER",
        "metadata": {"participant_id": "bob"}, "parts": [{"text": "eu"}]}),
    )
    .await;
    wait(id.clone(), TaskState::Completed).await;

    // every status update, in order, as built from the committed events
    let mut state = TaskAggregate::default();
    let mut updates = Vec::new();
    for stored in store.events(&id, 0).await.unwrap() {
        state.apply_event(&stored.decode().unwrap());
        let head = state.head().unwrap();
        if head.status_version == state.version {
            let u = head.status_update();
            let total = u
                .metadata
                .as_ref()
                .map(|m| m[USAGE_EXTENSION_URI]["totalTokens"].clone());
            updates.push((stored.event_type.clone(), u.status.state, total));
        }
    }
    let ending: Vec<_> = updates
        .iter()
        .filter(|(_, _, total)| total.is_some())
        .map(|(kind, state, total)| (kind.as_str(), *state, total.clone().unwrap()))
        .collect();
    assert_eq!(
        ending,
        vec![
            ("HelpRequested", TaskState::InputRequired, json!(45)),
            ("SubTasksAwaited", TaskState::Working, json!(60)),
            ("StatusChanged", TaskState::Completed, json!(90)),
        ],
        "all status updates: {updates:?}"
    );
    assert!(
        updates
            .iter()
            .filter(|(_, s, _)| *s == TaskState::Working)
            .any(|(_, _, t)| t.is_none()),
        "an update that starts work carries none: {updates:?}"
    );
    let task = svc
        .get_task(
            &Principal::anonymous(),
            serde_json::from_value(json!({"id": id.as_str()})).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        task.metadata.unwrap()[USAGE_EXTENSION_URI]["totalTokens"],
        90,
        "the final update and the stored task agree"
    );
}

/// The default agent is the model loop on the scripted model: conformance prefixes and the
/// tiny-harness scripts run through tool calls and final answers, with usage counted.
#[tokio::test]
async fn the_default_agent_is_the_model_loop_on_the_scripted_model() {
    let s = Server::start().await;
    // a plain message: the scripted model echoes it as its final answer
    let v = s.send("m-plain", "hello there", json!({}), json!({})).await;
    let t = &v["result"]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        t["artifacts"][0]["parts"][0]["text"],
        "Received: hello there"
    );
    assert_eq!(
        t["status"]["message"]["parts"][0]["text"],
        "Received: hello there"
    );
    let usage = &t["metadata"]["https://kagent.dev/extensions/usage/v1"];
    assert_eq!(usage["models"][0]["model"], "scripted");
    assert_eq!(usage["outputTokens"], 3, "Received: hello there");
    // th-ui: an emit_ui call, its result, then the final answer; the surface has a button, so
    // the task waits for the user's action
    let id = s
        .start_task(envelope_message("th-ui-1", "Pick a region"))
        .await;
    let t = s.wait_state(&id, "TASK_STATE_INPUT_REQUIRED").await;
    let ui = t["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "a2ui")
        .cloned()
        .expect("an a2ui artifact");
    assert_eq!(
        ui["parts"][0]["data"]["createSurface"]["surfaceId"],
        "scripted"
    );
    assert_eq!(
        ui["parts"][1]["data"]["updateComponents"]["components"][1]["text"]["path"],
        "/said"
    );
    assert_eq!(
        ui["parts"][2]["data"]["updateDataModel"]["value"]["said"],
        "Pick a region"
    );
    let kinds: Vec<&str> = t["history"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap().iter())
        .filter_map(|p| p["metadata"]["kagent.dev/a2a/part-type"].as_str())
        .collect();
    assert_eq!(kinds, ["function_call", "function_response"]);
    assert_eq!(
        t["status"]["message"]["parts"][0]["text"],
        "The surface is shown."
    );
    // the user presses the button: the model reads the action, closes the surface, finishes
    let mut acted = ui_action("act-1", &id, "scripted", "ok");
    acted["parts"][0]["data"]["action"]["context"] = json!({"name": "Ada"});
    let v = s.call("SendMessage", json!({"message": acted})).await;
    let t = &v["result"]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
    // the agent read what the user typed, with the action
    assert!(
        t["history"]
            .to_string()
            .contains(r#"[A2UI action] ok on surface scripted from ok with {\"name\":\"Ada\"}"#),
        "{t}"
    );
    assert_eq!(
        t["status"]["message"]["parts"][0]["text"],
        "Action received; the surface is closed."
    );
    // a follow-up on a task waiting for input goes through the model too
    let w = s.send_task("tck-input-required-s", "first").await;
    let wid = w["id"].as_str().unwrap();
    let v = s
        .send(
            "tck-complete-task-s",
            "done",
            json!({"taskId": wid}),
            json!({}),
        )
        .await;
    assert_eq!(
        v["result"]["task"]["status"]["message"]["parts"][0]["text"],
        "Hello from TCK"
    );
}

/// A worker with next to no time left per invocation (the Lambda deadline minus the margin is
/// already past) takes one model step per turn and records a continuation each time: the turn
/// needing five steps completes over five turns, and no tool runs twice, nor the model again.
#[tokio::test]
async fn a_long_turn_goes_on_through_continuations_and_repeats_nothing() {
    let (svc, store, mock) = feed_service(Script::Steps, 50).await;
    let id = send_now(&svc, envelope_message("m-1", "Do the three steps")).await;
    // the worker: each queued turn, with a budget spent before it starts
    let tiny = || TurnBudget::until(tokio::time::Instant::now(), Duration::ZERO);
    let (mut read, mut outcomes, mut turns) = (0, Vec::new(), Vec::new());
    while outcomes.len() < 20 {
        let batch = store.feed_after(read, 10).await.unwrap();
        if batch.is_empty() {
            break;
        }
        for (pos, event) in batch {
            read = pos;
            let turn = event.turn().unwrap();
            outcomes.push(handle_turn_within(&svc, &turn, tiny()).await.unwrap());
            turns.push(turn);
        }
    }
    assert_eq!(
        outcomes,
        [
            TurnOutcome::Continued,
            TurnOutcome::Continued,
            TurnOutcome::Continued,
            TurnOutcome::Continued,
            TurnOutcome::Ran
        ],
        "one step per turn"
    );
    let state = svc.ledger().current(&id).await.unwrap().unwrap();
    let head = state.head().unwrap();
    assert_eq!(head.status.state, TaskState::Completed);
    let plan = head.ext.as_ref().unwrap().plan.as_ref().unwrap();
    assert!(plan
        .steps
        .iter()
        .all(|s| s.output.as_deref() == Some(&format!("{} done", s.id))));
    assert_eq!(
        mock.calls.load(Ordering::SeqCst),
        5,
        "the model was asked once per step"
    );
    let events = store.events(&id, 0).await.unwrap();
    let count = |kind: &str| events.iter().filter(|e| e.event_type == kind).count();
    assert_eq!(count("PlanCreated"), 1);
    assert_eq!(count("StepCompleted"), 3);
    assert_eq!(count("ExecutionContinued"), 4);
    // every call has exactly one result
    let t = svc
        .get_task(
            &Principal::anonymous(),
            serde_json::from_value(json!({"id": id.as_str()})).unwrap(),
        )
        .await
        .unwrap();
    let ids = |kind: &str| {
        let mut v: Vec<String> = t
            .history
            .iter()
            .flatten()
            .flat_map(|m| m.parts.iter())
            .filter(|p| {
                p.metadata
                    .as_ref()
                    .and_then(|m| m.get("kagent.dev/a2a/part-type"))
                    == Some(&json!(kind))
            })
            .filter_map(|p| match &p.content {
                PartContent::Data(d) => d["id"].as_str().map(str::to_string),
                _ => None,
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(ids("function_call"), ["p0", "p1", "p2", "p3"]);
    assert_eq!(ids("function_response"), ids("function_call"));
    // redelivering every turn, with all the time in the world, repeats nothing
    let before = events.len();
    for turn in &turns {
        let again = handle_turn(&svc, turn).await.unwrap();
        assert!(
            matches!(again, TurnOutcome::Superseded | TurnOutcome::Nothing),
            "{again:?}"
        );
    }
    assert_eq!(store.events(&id, 0).await.unwrap().len(), before);
    assert_eq!(mock.calls.load(Ordering::SeqCst), 5);
}

/// The turn limit counts the steps of the whole execution, continuations included.
#[tokio::test]
async fn the_turn_limit_holds_across_continuations() {
    let (svc, store, mock) = feed_service(Script::Loop, 3).await;
    let id = send_now(&svc, envelope_message("m-1", "loop")).await;
    let tiny = || TurnBudget::until(tokio::time::Instant::now(), Duration::ZERO);
    let mut read = 0;
    let mut outcomes = Vec::new();
    while let Some((pos, event)) = store.feed_after(read, 1).await.unwrap().pop() {
        read = pos;
        let turn = event.turn().unwrap();
        outcomes.push(handle_turn_within(&svc, &turn, tiny()).await.unwrap());
        assert!(outcomes.len() < 10, "continues for ever: {outcomes:?}");
    }
    assert_eq!(
        outcomes,
        [
            TurnOutcome::Continued,
            TurnOutcome::Continued,
            TurnOutcome::Ran
        ]
    );
    let state = svc.ledger().current(&id).await.unwrap().unwrap();
    let head = state.head().unwrap();
    assert_eq!(head.status.state, TaskState::Failed);
    assert_eq!(
        head.status.message.as_ref().unwrap().text(),
        "turn limit reached"
    );
    assert_eq!(
        mock.calls.load(Ordering::SeqCst),
        3,
        "three steps in all, not per turn"
    );
}
