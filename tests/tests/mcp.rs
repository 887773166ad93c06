//! MCP tools for the model agent (issue 52, ADR 034), against the official MCP test server
//! (`@modelcontextprotocol/server-everything`, Streamable HTTP, started here on loopback by
//! `tests/mcp/everything_loopback.mjs`) and a mock OpenAI-compatible model: the tools are
//! listed and offered as `everything__<tool>` with their schemas, `echo` and `get-sum` are
//! called and their results recorded as kagent `function_call`/`function_response` parts, a
//! tool error goes back to the model, a call the approval list names waits for a person
//! (kagent hitl/v1) and runs once approved.
//!
//! The server comes from `scripts/test.sh` (`npm ci` into tests/mcp/node_modules,
//! `TASKLEDGER_MCP_EVERYTHING` set); without it these tests say "skipped" (unless
//! `TASKLEDGER_REQUIRE_MCP` is set).

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::routing::post;
use axum::Json;
use serde_json::{json, Value};
use taskledger_app::compose::{AgentChoice, McpServerSpec};
use taskledger_domain::push::AddressPolicy;
use taskledger_tests::binary::free_port;
use taskledger_tests::chat::{answer, serve, tool};
use taskledger_tests::{test_config, Server};

struct Everything {
    child: Child,
    url: String,
}

impl Drop for Everything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn everything() -> Option<Everything> {
    let script = match std::env::var("TASKLEDGER_MCP_EVERYTHING") {
        Ok(s) if !s.is_empty() => s,
        _ => {
            assert!(
                std::env::var("TASKLEDGER_REQUIRE_MCP").is_err(),
                "TASKLEDGER_MCP_EVERYTHING is required"
            );
            eprintln!("skipped: no TASKLEDGER_MCP_EVERYTHING (scripts/test.sh sets it)");
            return None;
        }
    };
    let port = free_port();
    let mut child = Command::new("node")
        .arg(script)
        .arg(port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("node starts server-everything");
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Some(Everything {
                child,
                url: format!("http://127.0.0.1:{port}/mcp"),
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("server-everything did not come up");
}

/// The model: asks for `calls` once, then answers with what the tools said.
#[derive(Clone)]
struct Model {
    calls: Vec<Value>,
    seen: Arc<Mutex<Vec<Value>>>,
}

async fn chat(State(m): State<Model>, Json(req): Json<Value>) -> Json<Value> {
    m.seen.lock().unwrap().push(req.clone());
    let results: Vec<String> = req["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|x| x["role"] == "tool")
        .map(|x| x["content"].as_str().unwrap_or_default().to_string())
        .collect();
    Json(if results.is_empty() {
        answer(None, m.calls.clone())
    } else {
        answer(
            Some(&format!("the tools said: {}", results.join(" | "))),
            vec![],
        )
    })
}

async fn server(ev: &Everything, calls: Vec<Value>, approve: &[&str]) -> (Server, Model) {
    let spec = McpServerSpec::new("everything", &ev.url, AddressPolicy::allow_loopback());
    server_on(spec, calls, approve).await
}

async fn server_on(spec: McpServerSpec, calls: Vec<Value>, approve: &[&str]) -> (Server, Model) {
    server_on_trusting(spec, calls, approve, &[]).await
}

async fn server_on_trusting(
    spec: McpServerSpec,
    calls: Vec<Value>,
    approve: &[&str],
    trust: &[&str],
) -> (Server, Model) {
    server_with(spec, calls, approve, trust, None).await
}

/// The model agent with `spec`'s tools, on `storage` (none: the tests' default store).
async fn server_with(
    spec: McpServerSpec,
    calls: Vec<Value>,
    approve: &[&str],
    trust: &[&str],
    storage: Option<taskledger_local::Storage>,
) -> (Server, Model) {
    let model = Model {
        calls,
        seen: Arc::default(),
    };
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(chat))
        .with_state(model.clone());
    let addr = serve(app).await;
    let mut config = test_config();
    let settings =
        taskledger_infra::llm::OpenAiSettings::new(format!("http://{addr}/v1"), "mock-1");
    config.agent = AgentChoice::OpenAi {
        settings,
        max_turns: 5,
        skills_dir: None,
        approve_tools: approve.iter().map(|s| s.to_string()).collect(),
    };
    config.mcp = vec![spec];
    config.mcp_trust = trust.iter().map(|s| s.to_string()).collect();
    if let Some(storage) = storage {
        config.storage = storage;
        config.blocking_timeout = Duration::from_secs(20);
    }
    (Server::start_with(config).await, model)
}

fn responses(task: &Value) -> Vec<Value> {
    task["history"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .filter(|p| p["metadata"]["kagent.dev/a2a/part-type"] == "function_response")
        .map(|p| p["data"].clone())
        .collect()
}

#[tokio::test]
async fn the_model_calls_everythings_echo_and_get_sum_and_reads_their_results() {
    let Some(ev) = everything().await else {
        return;
    };
    let calls = vec![
        tool("c1", "everything__echo", json!({"message": "hi"})),
        tool("c2", "everything__get-sum", json!({"a": 2, "b": 3})),
        tool("c3", "everything__get-sum", json!({"a": "two"})),
    ];
    let (s, model) = server(&ev, calls, &[]).await;
    let t = s.send_task("m-mcp-1", "add things").await;
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    let t = s.ok("GetTask", json!({"id": t["id"]})).await;
    let r = responses(&t);
    assert_eq!(r.len(), 3, "{r:?}");
    assert_eq!(r[0]["name"], "everything__echo");
    assert!(
        r[0]["response"]["result"].as_str().unwrap().contains("hi"),
        "{r:?}"
    );
    assert!(
        r[1]["response"]["result"].as_str().unwrap().contains('5'),
        "{r:?}"
    );
    assert!(
        r[2]["response"]["error"].is_string(),
        "an error goes back: {r:?}"
    );
    // the model was offered the server's tools, qualified, with their schemas
    let first = model.seen.lock().unwrap()[0].clone();
    let offered: Vec<&Value> = first["tools"].as_array().unwrap().iter().collect();
    let echo = offered
        .iter()
        .find(|t| t["function"]["name"] == "everything__echo")
        .expect("echo offered");
    assert_eq!(echo["function"]["parameters"]["type"], "object");
}

#[tokio::test]
async fn a_tool_on_the_approval_list_waits_for_a_person_and_runs_once_approved() {
    let Some(ev) = everything().await else {
        return;
    };
    let calls = vec![tool("c1", "everything__get-sum", json!({"a": 40, "b": 2}))];
    let (s, _) = server(&ev, calls, &["everything__*"]).await;
    let hitl = taskledger_domain::extensions::hitl::HITL_URI;
    let waiting = s
        .call_with(
            "SendMessage",
            json!({"message": {"messageId": "m-mcp-2", "role": "ROLE_USER",
                "parts": [{"text": "add"}], "extensions": [hitl]}}),
            &[("A2A-Extensions", hitl)],
        )
        .await;
    let t = &waiting["result"]["task"];
    assert_eq!(
        t["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{waiting}"
    );
    let id = t["id"].as_str().unwrap();
    assert!(
        responses(&s.ok("GetTask", json!({"id": id})).await).is_empty(),
        "not run yet"
    );
    let gate = t["status"]["message"]["metadata"][hitl]["tools"][0]["id"].clone();
    let approve = json!({"message": {"messageId": "m-mcp-3", "role": "ROLE_USER", "taskId": id,
        "extensions": [hitl], "parts": [{"text": ""}],
        "metadata": {hitl: {"type": "tool_approval_response",
            "approvals": [{"id": gate, "approved": true}]}}}});
    let done = s
        .call_with("SendMessage", approve, &[("A2A-Extensions", hitl)])
        .await;
    assert_eq!(
        done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
    let r = responses(&s.ok("GetTask", json!({"id": id})).await);
    assert!(
        r[0]["response"]["result"].as_str().unwrap().contains("42"),
        "{r:?}"
    );
}

#[tokio::test]
async fn a_stdio_server_of_the_local_server_is_called_the_same_way() {
    let Some(ev) = everything().await else {
        return;
    };
    drop(ev);
    let script = std::env::var("TASKLEDGER_MCP_EVERYTHING").unwrap();
    let dir = std::path::Path::new(&script).parent().unwrap();
    let index = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let spec = McpServerSpec::stdio("everything", &format!("node {} stdio", index.display()));
    let calls = vec![tool(
        "c1",
        "everything__echo",
        json!({"message": "over stdio"}),
    )];
    let (s, _) = server_on(spec, calls, &[]).await;
    let t = s.send_task("m-mcp-stdio", "echo").await;
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    let r = responses(&s.ok("GetTask", json!({"id": t["id"]})).await);
    assert!(
        r[0]["response"]["result"]
            .as_str()
            .unwrap()
            .contains("over stdio"),
        "{r:?}"
    );
}

/// The probe server's tools: one annotated destructive, one not.
fn probe_tools() -> Value {
    json!([
        {"name": "wipe", "description": "wipes", "inputSchema": {"type": "object"},
         "annotations": {"destructiveHint": true}},
        {"name": "look", "description": "looks", "inputSchema": {"type": "object"}}
    ])
}

#[tokio::test]
async fn a_destructive_tool_waits_for_a_person_unless_trusted_and_every_call_carries_its_token() {
    use taskledger_tests::mcp_probe::probe;
    let p = probe(probe_tools()).await;
    let mut spec = McpServerSpec::new("probe", &p.url, AddressPolicy::allow_loopback());
    spec.token = taskledger_app::compose::UpstreamToken::new("probe-s3cret");
    // Given no approval list: the destructive tool waits, the other runs.
    let calls = vec![tool("c1", "probe__wipe", json!({}))];
    let (s, _) = server_on(spec.clone(), calls, &[]).await;
    let hitl = taskledger_domain::extensions::hitl::HITL_URI;
    let waiting = s
        .call_with(
            "SendMessage",
            json!({"message": {"messageId": "m-probe-1", "role": "ROLE_USER",
                "parts": [{"text": "wipe it"}], "extensions": [hitl]}}),
            &[("A2A-Extensions", hitl)],
        )
        .await;
    assert_eq!(
        waiting["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{waiting}"
    );
    assert!(p.calls.lock().unwrap().is_empty(), "ran without approval");
    let calls = vec![tool("c2", "probe__look", json!({}))];
    let (s, _) = server_on(spec.clone(), calls, &[]).await;
    let t = s.send_task("m-probe-2", "look").await;
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    // Trusted by the deployment: the destructive tool runs at once.
    let calls = vec![tool("c3", "probe__wipe", json!({}))];
    let (s, _) = server_on_trusting(spec, calls, &[], &["probe__*"]).await;
    let t = s.send_task("m-probe-3", "wipe it").await;
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    let seen = p.calls.lock().unwrap().clone();
    let names: Vec<&str> = seen
        .iter()
        .map(|(_, p)| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["look", "wipe"]);
    for (headers, _) in &seen {
        assert_eq!(headers["authorization"], "Bearer probe-s3cret");
    }
}

#[tokio::test]
async fn an_mcp_url_the_ssrf_rules_refuse_is_refused_at_start() {
    for url in [
        "http://127.0.0.1:3001/mcp",
        "http://10.0.0.8/mcp",
        "http://169.254.169.254/latest",
        "file:///etc/passwd",
    ] {
        let spec = McpServerSpec::new("x", url, AddressPolicy::strict());
        let e = taskledger_app::compose::mcp_tools(&[spec], vec![])
            .err()
            .unwrap_or_else(|| panic!("{url} accepted"));
        assert!(e.contains("x"), "{url}: {e}");
    }
    let ok = McpServerSpec::new(
        "x",
        "https://tools.example.com/mcp",
        AddressPolicy::strict(),
    );
    assert!(taskledger_app::compose::mcp_tools(&[ok], vec![]).is_ok());
}

#[tokio::test]
async fn the_local_server_lists_the_tools_at_start() {
    use std::sync::atomic::Ordering;
    let p = taskledger_tests::mcp_probe::probe(probe_tools()).await;
    let spec = McpServerSpec::new("probe", &p.url, AddressPolicy::allow_loopback());
    let (_s, model) = server_on(spec, vec![], &[]).await;
    for _ in 0..100 {
        if p.lists.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(p.lists.load(Ordering::SeqCst), 1, "listed once at start");
    assert!(model.seen.lock().unwrap().is_empty(), "before any turn");
}

#[tokio::test]
async fn an_mcp_call_goes_through_the_dynamodb_stream_and_the_turn_queue() {
    // The AWS path: the commit's stream record becomes a turn on the queue, the worker's model
    // loop calls server-everything's echo, and its result is committed from there.
    if !taskledger_tests::aws_endpoint() {
        return;
    }
    let Some(ev) = everything().await else {
        return;
    };
    let spec = McpServerSpec::new("everything", &ev.url, AddressPolicy::allow_loopback());
    let calls = vec![tool(
        "c1",
        "everything__echo",
        json!({"message": "via the queue"}),
    )];
    let storage = taskledger_local::Storage::Dynamo {
        index_shards: 1,
        prefix: format!("tl-mcp-{}-", uuid::Uuid::new_v4().simple()),
        create_tables: true,
        counter: None,
        pollers: true,
    };
    let (s, _) = server_with(spec, calls, &[], &[], Some(storage)).await;
    let t = s.send_task("m-mcp-queue", "echo").await;
    let id = t["id"].as_str().unwrap().to_string();
    let t = s.wait_state(&id, "TASK_STATE_COMPLETED").await;
    let r = responses(&s.ok("GetTask", json!({"id": id})).await);
    assert!(
        r[0]["response"]["result"]
            .as_str()
            .unwrap_or_default()
            .contains("via the queue"),
        "{r:?} {t}"
    );
}
