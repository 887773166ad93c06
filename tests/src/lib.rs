//! Harness for the black-box tests: starts the local server on a free port and talks to it
//! over real sockets, like any client would, through the binding `TASKLEDGER_TEST_BINDING`
//! names (JSON-RPC by default, HTTP+JSON or gRPC: `binding`).

pub mod binary;
pub mod binding;
pub mod board;
pub mod chat;
pub mod grpc;
pub mod mcp_probe;
pub mod otlp;
pub mod proxy;
pub mod receiver;
pub mod source;
pub mod stream;
pub mod upstream;

pub use binding::{binding, Binding, GrpcEndpoint};

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};
use taskledger_app::agent::ScenarioTimings;
use taskledger_domain::error::ErrorTable;
use taskledger_local::{Config, GrpcSettings, Running, Storage};

pub struct Server {
    pub base: String,
    pub client: reqwest::Client,
    pub token: Option<String>,
    /// The binding `call` speaks.
    pub binding: Binding,
    /// The gRPC side, when the server serves it.
    pub grpc: Option<GrpcEndpoint>,
    /// The error table the server answers with (HTTP+JSON and gRPC errors are checked
    /// against it).
    pub error_table: ErrorTable,
}

/// Shorter pauses for the timed scenarios, so tests stay quick.
pub fn fast_timings() -> ScenarioTimings {
    ScenarioTimings {
        delayed_complete: Duration::from_millis(300),
        resubscribe: Duration::from_millis(600),
        stall: Duration::from_secs(3600),
        acts: taskledger_app::agent::ActsTimings {
            long_running: Duration::from_millis(300),
            cancel_hold: Duration::from_secs(30),
        },
    }
}

/// Whether the agent answered a task's newest message: the task is interrupted or terminal with
/// the agent's message last in the history it was read with (`historyLength` ≥ 1).
pub fn agent_answered(t: &taskledger_domain::wire::Task) -> bool {
    let last_is_agent = t
        .history
        .as_ref()
        .and_then(|h| h.last())
        .is_some_and(|m| m.role == taskledger_domain::wire::Role::Agent);
    last_is_agent && (t.status.state.is_interrupted() || t.status.state.is_terminal())
}

/// Whether an AWS endpoint (emulator) is configured for the AWS tests; when the test script
/// requires one (`TASKLEDGER_REQUIRE_DYNAMODB`), a missing endpoint fails instead of skipping.
pub fn aws_endpoint() -> bool {
    if std::env::var("AWS_ENDPOINT_URL").is_ok() {
        return true;
    }
    assert!(
        std::env::var("TASKLEDGER_REQUIRE_DYNAMODB").is_err(),
        "AWS tests required"
    );
    eprintln!("skipped: no AWS endpoint");
    false
}

/// The store the black-box tests run on: SQLite in memory, or DynamoDB on a table prefix of
/// the test's own when `TASKLEDGER_TEST_STORE=dynamodb` (endpoint from `AWS_ENDPOINT_URL`).
pub fn test_storage() -> Storage {
    if std::env::var("TASKLEDGER_TEST_STORE").as_deref() == Ok("dynamodb") {
        Storage::Dynamo {
            index_shards: 1,
            prefix: format!("tl-api-{}-", uuid::Uuid::new_v4().simple()),
            create_tables: true,
            counter: None,
            pollers: false,
        }
    } else {
        Storage::Memory
    }
}

/// Sets how often a stream sends a keep-alive comment and how often it looks at the store for
/// commits made by other processes.
pub fn stream_timings(config: &mut Config, keep_alive: Duration, poll: Duration) {
    config.stream_keep_alive = keep_alive;
    config.stream_poll = poll;
}

/// A test configuration on `test_storage()` with quick scenario timings.
pub fn test_config() -> Config {
    let mut config = Config::in_memory().with_conformance_scenarios();
    config.storage = test_storage();
    config.timings = fast_timings();
    config
}

impl Server {
    pub async fn start() -> Self {
        Self::start_with(test_config()).await
    }

    /// Starts a server on `config`, called through `binding()`; on gRPC the server also
    /// serves gRPC on a free loopback port (unless `config.grpc` already says where).
    pub async fn start_with(mut config: Config) -> Self {
        if binding().is_grpc() && config.grpc.is_none() {
            config.grpc = Some(GrpcSettings::loopback());
        }
        let table = config.error_table;
        let running = taskledger_local::start(config)
            .await
            .expect("server starts");
        Self::running(&running, table)
    }

    /// A client of a started server (both addresses), through `binding()`.
    pub fn running(running: &Running, error_table: ErrorTable) -> Self {
        Self {
            error_table,
            grpc: running.grpc.map(GrpcEndpoint::new),
            ..Self::at(running.http)
        }
    }

    /// A client of a server already listening at `addr` over HTTP, through `binding()` (a
    /// server whose gRPC port is not known cannot be called over gRPC: see `running`).
    pub fn at(addr: std::net::SocketAddr) -> Self {
        Self {
            base: format!("http://{addr}"),
            client: reqwest::Client::new(),
            token: None,
            binding: binding(),
            grpc: None,
            error_table: ErrorTable::default(),
        }
    }

    /// The same server, called through `binding`.
    pub fn over(&self, binding: Binding) -> Self {
        assert!(
            !binding.is_grpc() || self.grpc.is_some(),
            "this server does not serve gRPC"
        );
        Self {
            binding,
            ..self.clone_client()
        }
    }

    pub fn as_user(&self, token: &str) -> Self {
        Self {
            token: Some(token.to_string()),
            ..self.clone_client()
        }
    }

    fn clone_client(&self) -> Self {
        Self {
            base: self.base.clone(),
            client: self.client.clone(),
            token: self.token.clone(),
            binding: self.binding,
            grpc: self.grpc.clone(),
            error_table: self.error_table,
        }
    }

    /// Whether `params` can be sent as `method` on this server's binding: JSON-RPC carries any
    /// JSON; HTTP+JSON needs path fields it can write in a path and a query without nested
    /// objects; gRPC needs values the request message can hold. `Err` says why not.
    pub fn expressible(&self, method: &str, params: &Value) -> Result<(), String> {
        match self.binding {
            Binding::JsonRpc => Ok(()),
            Binding::Rest => binding::rest_request(method, params).map(|_| ()),
            Binding::Grpc => binding::grpc_expressible(method, params),
        }
    }

    pub fn endpoint(&self) -> String {
        format!("{}/a2a", self.base)
    }

    /// Posts a raw body with the given headers; returns status and parsed JSON (Null if none).
    pub async fn post_raw(
        &self,
        path: &str,
        body: Vec<u8>,
        headers: &[(&str, &str)],
    ) -> (StatusCode, Value) {
        let mut req = self.client.post(format!("{}{path}", self.base)).body(body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(t) = &self.token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        let resp = req.send().await.expect("request sent");
        let status = resp.status();
        let bytes = resp.bytes().await.expect("body");
        let v = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, v)
    }

    /// A call of `method` with `params` (its JSON-RPC form) and `A2A-Version: 1.0` over the
    /// server's binding; returns the JSON-RPC response object (translated back from HTTP+JSON
    /// or gRPC on those bindings: `binding`).
    pub async fn call(&self, method: &str, params: Value) -> Value {
        self.call_with(method, params, &[]).await
    }

    /// `call` with extra headers (gRPC: metadata, keys lowercase).
    pub async fn call_with(&self, method: &str, params: Value, extra: &[(&str, &str)]) -> Value {
        match self.binding {
            Binding::JsonRpc => self.call_jsonrpc(method, params, extra).await,
            Binding::Rest => binding::rest_call(self, method, params, extra).await,
            Binding::Grpc => binding::grpc_call(self, method, params, extra).await,
        }
    }

    async fn call_jsonrpc(&self, method: &str, params: Value, extra: &[(&str, &str)]) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        // An extra header replaces a default of the same name (`A2A-Version: 1.1`).
        let mut headers: Vec<(&str, &str)> =
            [("Content-Type", "application/json"), ("A2A-Version", "1.0")]
                .into_iter()
                .filter(|(k, _)| !extra.iter().any(|(e, _)| e.eq_ignore_ascii_case(k)))
                .collect();
        headers.extend_from_slice(extra);
        let (status, v) = self
            .post_raw("/a2a", serde_json::to_vec(&body).expect("json"), &headers)
            .await;
        assert_eq!(status, StatusCode::OK, "JSON-RPC exchanges answer 200: {v}");
        v
    }

    /// The `result` of a call that must succeed.
    pub async fn ok(&self, method: &str, params: Value) -> Value {
        let v = self.call(method, params).await;
        assert!(v.get("error").is_none(), "{method} failed: {v}");
        v["result"].clone()
    }

    /// The error code of a call that must fail.
    pub async fn err(&self, method: &str, params: Value) -> i64 {
        let v = self.call(method, params).await;
        error_code(&v)
    }

    /// Sends a text message; `extra` is merged into the message object.
    pub async fn send(&self, message_id: &str, text: &str, extra: Value, config: Value) -> Value {
        let mut message =
            json!({"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]});
        if let (Some(m), Some(e)) = (message.as_object_mut(), extra.as_object()) {
            m.extend(e.clone());
        }
        self.call(
            "SendMessage",
            json!({"message": message, "configuration": config}),
        )
        .await
    }

    /// Sends and returns the task of a successful result.
    pub async fn send_task(&self, message_id: &str, text: &str) -> Value {
        let v = self.send(message_id, text, json!({}), json!({})).await;
        assert!(v.get("error").is_none(), "send failed: {v}");
        v["result"]["task"].clone()
    }

    /// Sends `message` with `returnImmediately` and returns the new task's id.
    pub async fn start_task(&self, message: Value) -> String {
        let v = self
            .call(
                "SendMessage",
                json!({"message": message, "configuration": {"returnImmediately": true}}),
            )
            .await;
        v["result"]["task"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("no task: {v}"))
            .to_string()
    }

    /// Polls until the task exists and is in `state` (work happens in the background).
    pub async fn wait_state(&self, id: &str, state: &str) -> Value {
        let mut last = Value::Null;
        for _ in 0..400 {
            last = self.call("GetTask", json!({"id": id})).await;
            if last["result"]["status"]["state"] == state {
                return last["result"].clone();
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("{id} never reached {state}: {last}");
    }

    /// The agent card, as any client fetches it.
    /// A GET of `path` (from the server's root) read as JSON.
    pub async fn get_json(&self, path: &str) -> Value {
        self.client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("GET request")
            .json()
            .await
            .expect("a JSON answer")
    }

    pub async fn card(&self) -> Value {
        self.get_json("/.well-known/agent-card.json").await
    }

    pub async fn total_tasks(&self) -> i64 {
        self.ok("ListTasks", json!({"pageSize": 1})).await["totalSize"]
            .as_i64()
            .expect("totalSize")
    }
}

/// The JSON-RPC error code of a response, checking the error's shape on the way.
pub fn error_code(v: &Value) -> i64 {
    let e = v
        .get("error")
        .unwrap_or_else(|| panic!("expected an error, got {v}"));
    let obj = e.as_object().expect("error object");
    assert!(
        obj.keys()
            .all(|k| ["code", "message", "data"].contains(&k.as_str())),
        "only code, message, data: {e}"
    );
    assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()));
    let info = &e["data"][0];
    assert_eq!(info["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
    assert_eq!(info["domain"], "a2a-protocol.org");
    assert!(info["reason"].as_str().is_some());
    e["code"].as_i64().expect("code")
}

/// True if any value anywhere in `v` is JSON `null`.
pub fn has_null(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.iter().any(has_null),
        Value::Object(o) => o.values().any(has_null),
        _ => false,
    }
}

/// Push settings for tests with a webhook receiver on 127.0.0.1: loopback allowed, no signing,
/// quick retries.
pub fn loopback_push() -> taskledger_local::PushSettings {
    taskledger_local::PushSettings {
        policy: taskledger_domain::push::AddressPolicy::allow_loopback(),
        signing_key_pem: None,
        retry: taskledger_domain::push::RetryPolicy {
            base: Duration::from_millis(40),
            cap: Duration::from_millis(200),
            horizon: Duration::from_secs(30),
        },
    }
}
