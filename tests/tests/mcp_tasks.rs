//! Every task an MCP task too (issue 56, ADR 039), through rmcp's client (the official Rust
//! SDK) against a freshly started server: `send_message` answered with an MCP task for a
//! client of the Tasks extension (polled with `tasks/get` to its result), and with the finished
//! task's result for one without; a task asked over A2A read, answered (`tasks/update`) and
//! cancelled over MCP, and the reverse; each caller only its own tasks; bad calls refused with
//! MCP's errors.

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, Implementation, ProtocolVersion, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService, ServiceError,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{json, Value};
use taskledger_domain::ids::Principal;
use taskledger_tests::{test_config, Server};

const INVALID_PARAMS: i32 = -32602;

fn people() -> taskledger_local::Config {
    let mut config = test_config();
    config.tokens = [("a", "acme", "alice"), ("m", "acme", "mallory")]
        .into_iter()
        .map(|(t, tenant, s)| (t.to_string(), Principal::new(tenant, s).unwrap()))
        .collect();
    config
}

/// An MCP client of the server as the holder of `token`; `tasks`: it declares MCP's Tasks
/// extension (the 2026-07-28 protocol), else it speaks 2025-11-25 without it.
async fn client(s: &Server, token: &str, tasks: bool) -> RunningService<RoleClient, ClientConfig> {
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", s.base))
        .auth_header(token.to_string());
    let transport = StreamableHttpClientTransport::from_config(config);
    let caps = if tasks {
        ClientCapabilities::builder().enable_tasks().build()
    } else {
        ClientCapabilities::default()
    };
    let info = ClientConfig::new(caps, Implementation::new("taskledger-tests", "1"))
        .with_protocol_version(if tasks {
            ProtocolVersion::LATEST
        } else {
            ProtocolVersion::LATEST_WITH_INITIALIZE
        });
    let lifecycle = if tasks {
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::LATEST],
        }
    } else {
        ClientLifecycleMode::Initialize
    };
    info.serve_with_lifecycle(transport, lifecycle)
        .await
        .expect("the MCP client connects")
}

fn args(v: Value) -> rmcp::model::JsonObject {
    match v {
        Value::Object(m) => m,
        _ => panic!("an object"),
    }
}

fn code(e: ServiceError) -> i32 {
    match e {
        ServiceError::McpError(d) => d.code.0,
        other => panic!("not an MCP error: {other}"),
    }
}

/// Polls `tasks/get` until the task leaves `working`.
async fn settled(c: &RunningService<RoleClient, ClientConfig>, id: &str) -> Value {
    for _ in 0..200 {
        let got = c.get_task(GetTaskParams::new(id)).await.expect("tasks/get");
        if got.task.status() != TaskStatus::Working {
            return serde_json::to_value(&got).unwrap();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} stays working");
}

/// An A2A task of alice's that asks for input (created over A2A).
async fn asked_over_a2a(s: &Server) -> String {
    let v = s
        .as_user("a")
        .call(
            "SendMessage",
            json!({"message": {"messageId": format!("tck-input-required-{}", uuid::Uuid::new_v4().simple()),
                "role": "ROLE_USER", "parts": [{"text": "book a flight"}]}}),
        )
        .await;
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{v}"
    );
    v["result"]["task"]["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_tool_call_is_an_mcp_task_and_the_same_a2a_task() {
    let s = Server::start_with(people()).await;
    let c = client(&s, "a", true).await;
    let tools = c.list_tools(None).await.unwrap();
    assert_eq!(tools.tools.len(), 1);
    assert_eq!(tools.tools[0].name, "send_message");
    let created = c
        .call_tool_once(
            CallToolRequestParams::new("send_message")
                .with_arguments(args(json!({"text": "summarise the quarter"}))),
        )
        .await
        .unwrap();
    let CallToolResponse::Task(created) = created else {
        panic!("a task for a client of the Tasks extension: {created:?}")
    };
    let id = created.task.task_id.clone();
    assert_eq!(created.task.poll_interval_ms, Some(1_000));
    assert!(
        created.task.ttl_ms.is_some(),
        "kept as long as the retention says"
    );
    let done = settled(&c, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["structuredContent"]["taskId"], id.as_str());
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("summarise the quarter"),
        "{done}"
    );
    // The same task over A2A.
    let t = s.as_user("a").ok("GetTask", json!({"id": id})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(t["history"][0]["parts"][0]["text"], "summarise the quarter");
    // Nobody else reads it, over MCP either.
    let m = client(&s, "m", true).await;
    assert_eq!(
        code(m.get_task(GetTaskParams::new(&id)).await.unwrap_err()),
        INVALID_PARAMS
    );
    assert_eq!(
        code(
            c.get_task(GetTaskParams::new("no-such-task"))
                .await
                .unwrap_err()
        ),
        INVALID_PARAMS
    );
    // Each ran through the operations layer as a binding's requests do: counted as `mcp`.
    let counted = |method: &str, outcome: &str| {
        taskledger_app::telemetry::metrics()
            .snapshot()
            .requests
            .iter()
            .any(|(m, b, o, n)| m.name() == method && b.label() == "mcp" && *o == outcome && *n > 0)
    };
    assert!(counted("SendMessage", "ok"));
    assert!(counted("GetTask", "ok"));
    assert!(counted("GetTask", "TASK_NOT_FOUND"));
}

#[tokio::test]
async fn a_task_asked_over_a2a_is_answered_over_mcp() {
    let s = Server::start_with(people()).await;
    let id = asked_over_a2a(&s).await;
    let c = client(&s, "a", true).await;
    let asked = settled(&c, &id).await;
    assert_eq!(asked["status"], "input_required", "{asked}");
    let requests = asked["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1);
    let (key, ask) = requests.iter().next().unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    // An answer to a question not asked is ignored; the one asked goes to the task.
    let stale = [(
        "answer-0".to_string(),
        json!({"action": "accept", "content": {"text": "x"}}),
    )];
    c.update_task(UpdateTaskParams::new(&id, stale.into_iter().collect()))
        .await
        .unwrap();
    let still = c.get_task(GetTaskParams::new(&id)).await.unwrap();
    assert_eq!(still.task.status(), TaskStatus::InputRequired);
    let answer = [(
        key.clone(),
        json!({"action": "accept", "content": {"text": "window seat"}}),
    )];
    c.update_task(UpdateTaskParams::new(&id, answer.into_iter().collect()))
        .await
        .unwrap();
    s.as_user("a").wait_state(&id, "TASK_STATE_COMPLETED").await;
    let t = s.as_user("a").ok("GetTask", json!({"id": id})).await;
    let texts: Vec<&str> = t["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["parts"][0]["text"].as_str())
        .collect();
    assert!(texts.contains(&"window seat"), "{texts:?}");
    let done = settled(&c, &id).await;
    assert_eq!(done["status"], "completed");
}

#[tokio::test]
async fn a_task_cancelled_over_mcp_is_canceled_over_a2a_and_a_second_cancel_is_acknowledged() {
    let s = Server::start_with(people()).await;
    let id = asked_over_a2a(&s).await;
    let c = client(&s, "a", true).await;
    let m = client(&s, "m", true).await;
    assert_eq!(
        code(m.cancel_task(CancelTaskParams::new(&id)).await.unwrap_err()),
        INVALID_PARAMS
    );
    c.cancel_task(CancelTaskParams::new(&id)).await.unwrap();
    let t = s.as_user("a").ok("GetTask", json!({"id": id})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_CANCELED");
    c.cancel_task(CancelTaskParams::new(&id)).await.unwrap();
    assert_eq!(settled(&c, &id).await["status"], "cancelled");
}

#[tokio::test]
async fn a_client_without_tasks_gets_the_result_and_bad_calls_are_refused() {
    let s = Server::start_with(people()).await;
    let c = client(&s, "a", false).await;
    let r = c
        .call_tool(
            CallToolRequestParams::new("send_message")
                .with_arguments(args(json!({"text": "hello there"}))),
        )
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false));
    let structured = r.structured_content.clone().unwrap();
    assert_eq!(structured["state"], "TASK_STATE_COMPLETED", "{r:?}");
    let id = structured["taskId"].as_str().unwrap();
    let t = s.as_user("a").ok("GetTask", json!({"id": id})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED");
    for bad in [
        CallToolRequestParams::new("send_message").with_arguments(args(json!({}))),
        CallToolRequestParams::new("send_message").with_arguments(args(json!({"text": 7}))),
        CallToolRequestParams::new("send_message")
            .with_arguments(args(json!({"text": "x".repeat(64 * 1024 + 1)}))),
        CallToolRequestParams::new("no_such_tool").with_arguments(args(json!({"text": "x"}))),
        CallToolRequestParams::new("send_message")
            .with_arguments(args(json!({"text": "more", "taskId": "no-such-task"}))),
    ] {
        let e = c.call_tool(bad.clone()).await.unwrap_err();
        assert_eq!(code(e), INVALID_PARAMS, "{bad:?}");
    }
    // Without credentials the endpoint answers 401 before MCP starts.
    let r = reqwest::Client::new()
        .post(format!("{}/mcp", s.base))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // A legacy call outside a session is refused, saying why.
    let r = reqwest::Client::new()
        .post(format!("{}/mcp", s.base))
        .bearer_auth("a")
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-06-18")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","arguments":{"text":"x"}}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("Session ID is required"));
}
