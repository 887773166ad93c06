//! The API function's own binary as Lambda runs it: `cargo lambda watch --only-lambda-apis`
//! emulates the Lambda runtime API, the built `api` binary polls it (in response-streaming mode,
//! as behind the Function URL, or buffered, as behind API Gateway), and invocations carry the
//! Function URL event of an IAM-signed caller. The table is on the AWS emulator; a local server
//! on the same table plays the relay and worker Lambdas (stream poller → turn queue → agent).
//!
//! Checks: events reach the client while the stream is open (streamed) or all at its end
//! (buffered); a stream cut by `TASKLEDGER_STREAM_MAX_SECS` resumes with `Last-Event-ID`, with
//! no gap and no duplicate, until the task is terminal, and the chain equals what a server
//! without a time limit streams from the same store; a caller without a verified IAM identity
//! is refused. Ignored by `cargo test`: `scripts/test.sh` installs cargo-lambda, builds the
//! `api` binary and runs it (`TASKLEDGER_CARGO_LAMBDA`, `TASKLEDGER_API_BIN`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use taskledger_app::agent::ScenarioTimings;
use taskledger_domain::ids::Principal;
use taskledger_local::{Config, Storage};
use taskledger_tests::aws_endpoint;
use taskledger_tests::binary::{free_port, tool, Proc};

/// The caller of the fixture's event, as `IamAuthenticator` maps it.
const TENANT: &str = "111122223333";
const SUBJECT: &str = "arn:aws:sts::111122223333:assumed-role/a2a-client";
/// How long the Lambda keeps a stream open, and how long the worker keeps the task WORKING.
const STREAM_MAX_SECS: u64 = 4;
const WORKING_FOR: Duration = Duration::from_secs(10);

/// One SSE event: its `id:`, its `data:` as JSON, and when it was read.
#[derive(Debug, Clone)]
struct Sse {
    id: Option<u64>,
    data: Value,
    at: Instant,
}

/// Takes the complete events off the front of `buf`.
fn take_events(buf: &mut Vec<u8>, at: Instant, out: &mut Vec<Sse>) {
    while let Some(end) = buf.windows(2).position(|w| w == b"\n\n") {
        let block: Vec<u8> = buf.drain(..end + 2).collect();
        let text = String::from_utf8(block).expect("utf-8 event");
        let (mut id, mut data) = (None, String::new());
        for line in text.lines() {
            if let Some(v) = line.strip_prefix("id: ") {
                id = Some(v.parse().expect("numeric id"));
            } else if let Some(v) = line.strip_prefix("data: ") {
                data.push_str(v);
            }
        }
        if !data.is_empty() {
            let data = serde_json::from_str(&data).expect("JSON data");
            out.push(Sse { id, data, at });
        }
    }
}

/// The `StreamResponse` of a JSON-RPC event and whether it ends a subscription.
fn result(e: &Sse) -> &Value {
    &e.data["result"]
}

fn is_terminal(e: &Sse) -> bool {
    let r = result(e);
    let state = r["statusUpdate"]["status"]["state"]
        .as_str()
        .or(r["task"]["status"]["state"].as_str());
    matches!(
        state,
        Some(
            "TASK_STATE_COMPLETED"
                | "TASK_STATE_FAILED"
                | "TASK_STATE_CANCELED"
                | "TASK_STATE_REJECTED"
        )
    )
}

/// The fixture's Function URL event (an IAM-signed caller) for a request.
fn event(method: &str, path: &str, body: Option<&Value>, headers: &[(&str, &str)]) -> Value {
    let mut e: Value = serde_json::from_str(include_str!(
        "../../functions/app/fixtures/function-url-iam-request.json"
    ))
    .expect("fixture");
    e["rawPath"] = json!(path);
    e["requestContext"]["http"]["path"] = json!(path);
    e["requestContext"]["http"]["method"] = json!(method);
    e["requestContext"]["requestId"] = json!(uuid::Uuid::new_v4().to_string());
    e["body"] = body.map_or(Value::Null, |b| json!(b.to_string()));
    for (k, v) in headers {
        e["headers"][*k] = json!(v);
    }
    e
}

fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
}

/// The emulated Lambda (runtime API + the `api` binary) and the local server beside it.
struct Rig {
    base: String,
    streaming: bool,
    client: reqwest::Client,
    worker: taskledger_local::Running,
    logs: PathBuf,
    _watch: Proc,
    _api: Proc,
}

impl Rig {
    async fn start(streaming: bool) -> Option<Self> {
        if !aws_endpoint() {
            return None;
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("root");
        let exe = std::env::current_exe().expect("test binary");
        let target = exe.parent().and_then(Path::parent).expect("target dir");
        let api_bin = tool("TASKLEDGER_API_BIN", target.join("api"));
        let cargo_lambda = tool("TASKLEDGER_CARGO_LAMBDA", "cargo-lambda".into());
        assert!(
            api_bin.exists(),
            "{} is missing: cargo build -p taskledger-api",
            api_bin.display()
        );
        let prefix = format!("tl-lambda-{}-", uuid::Uuid::new_v4().simple());

        // The relay and the worker, on the table the Lambda uses (created here).
        let mut c = Config::in_memory().with_conformance_scenarios();
        c.storage = Storage::Dynamo {
            index_shards: 1,
            prefix: prefix.clone(),
            create_tables: true,
            counter: None,
            pollers: true,
        };
        c.timings = ScenarioTimings {
            delayed_complete: WORKING_FOR,
            resubscribe: WORKING_FOR,
            ..Default::default()
        };
        let who = Principal::new(TENANT, SUBJECT).expect("principal");
        c.tokens = [("t".to_string(), who)].into();
        let worker = taskledger_local::start(c).await.expect("local server");

        let logs = std::env::temp_dir().join(format!("{prefix}logs"));
        std::fs::create_dir_all(&logs).expect("log dir");
        let log =
            |name: &str| Stdio::from(std::fs::File::create(logs.join(name)).expect("log file"));
        let port = free_port();
        let watch = Command::new(&cargo_lambda)
            .args(["lambda", "watch", "--only-lambda-apis", "-A", "127.0.0.1"])
            .args(["-P", &port.to_string()])
            .current_dir(root)
            .stdout(log("watch.out"))
            .stderr(log("watch.err"))
            .spawn()
            .unwrap_or_else(|e| {
                panic!("{}: {e} (pip install cargo-lambda)", cargo_lambda.display())
            });
        let watch = Proc(watch);
        let up = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                up.elapsed() < Duration::from_secs(30),
                "cargo lambda watch is not up"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut api = Command::new(&api_bin);
        api.env(
            "AWS_LAMBDA_RUNTIME_API",
            format!("http://127.0.0.1:{port}/.rt/api"),
        )
        .env("AWS_LAMBDA_FUNCTION_NAME", "api")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("RUST_LOG", "info")
        .env("TASKLEDGER_TABLE_PREFIX", &prefix)
        .env("TASKLEDGER_CURSOR_KEY", "a-test-key-of-32-characters-....")
        .env("TASKLEDGER_PUSH_ENABLED", "false")
        .env("TASKLEDGER_AUTH", "iam")
        .env("TASKLEDGER_STREAM_MAX_SECS", STREAM_MAX_SECS.to_string())
        .env(
            "TASKLEDGER_RESPONSE_STREAMING",
            if streaming { "1" } else { "0" },
        )
        .stdout(log("api.out"))
        .stderr(log("api.err"));
        let api = Proc(api.spawn().expect("api binary"));
        Some(Self {
            base: format!("http://127.0.0.1:{port}"),
            streaming,
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .expect("client"),
            worker,
            logs,
            _watch: watch,
            _api: api,
        })
    }

    fn logs(&self) -> String {
        ["api.out", "api.err", "watch.err"]
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(self.logs.join(f)).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(15).collect();
                format!(
                    "--- {f}\n{}",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The emulator's Invoke call with `event` as the payload, as the Function URL would make it.
    async fn post_invocation(&self, event: &Value) -> reqwest::Response {
        let url = format!("{}/2015-03-31/functions/api/invocations", self.base);
        match self.client.post(url).json(event).send().await {
            Ok(r) => r,
            Err(e) => panic!("invoke: {e}\n{}", self.logs()),
        }
    }

    /// Invokes the function with `event` (as the Function URL would) and reads the reply: the
    /// status, the content type and the SSE events, with when each was read; and when it ended.
    async fn invoke(&self, event: &Value) -> (u16, String, Vec<Sse>, Instant) {
        let mut resp = self.post_invocation(event).await;
        let mut events = Vec::new();
        if self.streaming {
            let status = resp.status().as_u16();
            let kind = header(resp.headers(), "content-type");
            let mut buf = Vec::new();
            while let Some(chunk) = resp.chunk().await.expect("chunk") {
                buf.extend_from_slice(&chunk);
                take_events(&mut buf, Instant::now(), &mut events);
            }
            (status, kind, events, Instant::now())
        } else {
            // The buffered reply: the payload format 2.0 response, whole.
            let reply: Value = resp.json().await.expect("function response");
            let at = Instant::now();
            let body = reply["body"].as_str().unwrap_or_default();
            let mut buf = body.as_bytes().to_vec();
            take_events(&mut buf, at, &mut events);
            let kind = reply["headers"]["content-type"]
                .as_str()
                .unwrap_or("")
                .to_string();
            (
                reply["statusCode"].as_u64().unwrap_or(0) as u16,
                kind,
                events,
                at,
            )
        }
    }

    /// Invokes the buffered function with `event` for a JSON answer: the status and the body.
    async fn invoke_json(&self, event: &Value) -> (u16, Value) {
        let reply: Value = self
            .post_invocation(event)
            .await
            .json()
            .await
            .expect("function response");
        let body = reply["body"].as_str().unwrap_or_default();
        let body = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {reply}"));
        (reply["statusCode"].as_u64().unwrap_or(0) as u16, body)
    }

    /// SubscribeToTask after `last`, again each time the stream is cut, until the task is
    /// terminal: every event follows the one before it.
    async fn resume_until_terminal(&self, task_id: &str, mut last: u64) -> Vec<Sse> {
        let mut all = Vec::new();
        for _ in 0..10 {
            let body = rpc("SubscribeToTask", json!({"id": task_id}));
            let last_id = last.to_string();
            let e = event("POST", "/a2a", Some(&body), &[("last-event-id", &last_id)]);
            let (status, _, events, _) = self.invoke(&e).await;
            assert_eq!(status, 200, "{}", self.logs());
            for e in &events {
                let id = e.id.expect("every update has an id");
                assert!(
                    id > last,
                    "event {id} after {last}: a duplicate or out of order"
                );
                last = id;
            }
            let done = events.last().is_some_and(is_terminal);
            all.extend(events);
            if done {
                return all;
            }
        }
        panic!("not terminal after 10 resumes\n{}", self.logs());
    }

    /// What the local server (no time limit) streams from the same store after `after`.
    async fn uncut(&self, task_id: &str, after: u64) -> Vec<(u64, Value)> {
        let resp = self
            .client
            .post(format!("http://{}/a2a", self.worker.http))
            .header("a2a-version", "1.0")
            .header("authorization", "Bearer t")
            .header("last-event-id", after.to_string())
            .json(&rpc("SubscribeToTask", json!({"id": task_id})))
            .send()
            .await
            .expect("local subscribe");
        let mut buf = resp.bytes().await.expect("body").to_vec();
        let mut events = Vec::new();
        take_events(&mut buf, Instant::now(), &mut events);
        events
            .iter()
            .map(|e| (e.id.unwrap(), result(e).clone()))
            .collect()
    }
}

impl Drop for Rig {
    /// The logs stay for a failed test only.
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.logs);
        }
    }
}

fn header(h: &reqwest::header::HeaderMap, name: &str) -> String {
    h.get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

fn send_streaming(message_id: &str) -> Value {
    let body = rpc(
        "SendStreamingMessage",
        json!({"message": {"messageId": message_id, "role": "ROLE_USER",
            "parts": [{"text": "stream it"}]}}),
    );
    event("POST", "/a2a", Some(&body), &[])
}

fn ids_and_results(events: &[Sse]) -> Vec<(u64, Value)> {
    events
        .iter()
        .map(|e| (e.id.unwrap(), result(e).clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs cargo-lambda and the api binary: run by scripts/test.sh"]
async fn a_function_url_stream_arrives_as_committed_and_resumes_after_its_time_limit() {
    let Some(rig) = Rig::start(true).await else {
        return;
    };
    let sent = Instant::now();
    let (status, kind, first, ended) = rig
        .invoke(&send_streaming("tck-delayed-complete-lambda"))
        .await;
    assert_eq!(status, 200, "{}", rig.logs());
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    let task = &result(&first[0])["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_SUBMITTED", "{first:?}");
    let task_id = task["id"].as_str().unwrap().to_string();
    assert!(
        first
            .iter()
            .any(|e| result(e)["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"),
        "the worker's update arrived on the open stream: {first:?}"
    );
    // Streamed: the Task arrived at once, seconds before the stream ended at its time limit.
    let open = ended - sent;
    assert!(
        open >= Duration::from_secs(STREAM_MAX_SECS) - Duration::from_millis(500),
        "cut at {open:?}"
    );
    assert!(
        open < WORKING_FOR,
        "ended at {open:?}, before the task completed"
    );
    assert!(
        ended - first[0].at >= Duration::from_millis(1500),
        "the first event arrived {:?} before the end: not streamed",
        ended - first[0].at
    );
    let last = first.last().unwrap();
    assert!(!is_terminal(last), "cut by the time limit, not settled");

    // Resumed from the last event seen, with no gap and no duplicate, until COMPLETED.
    let rest = rig
        .resume_until_terminal(&task_id, last.id.expect("the last event has an id"))
        .await;
    let chain = ids_and_results(&first[1..].iter().chain(&rest).cloned().collect::<Vec<_>>());
    assert_eq!(chain, rig.uncut(&task_id, first[0].id.unwrap()).await);

    // A bad Last-Event-ID is an error before any stream opens.
    let body = rpc("SubscribeToTask", json!({"id": task_id}));
    let bad = event("POST", "/a2a", Some(&body), &[("last-event-id", "x")]);
    let resp = rig.post_invocation(&bad).await;
    assert!(header(resp.headers(), "content-type").starts_with("application/json"));
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["code"], -32602, "{v}");

    // The card served here announces this endpoint (the Host header) and SigV4.
    let card = event("GET", "/.well-known/agent-card.json", None, &[]);
    let card: Value = rig.post_invocation(&card).await.json().await.unwrap();
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        "https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws/a2a"
    );
    assert_eq!(
        card["securitySchemes"]["awsSigV4"]["httpAuthSecurityScheme"]["scheme"],
        "AWS4-HMAC-SHA256"
    );
    // The same card at the legacy path 0.3-era callers fetch, and the pure 1.0 card to 1.x.
    let legacy = event("GET", "/.well-known/agent.json", None, &[]);
    let legacy: Value = rig.post_invocation(&legacy).await.json().await.unwrap();
    assert_eq!(legacy, card);
    let pure = event(
        "GET",
        "/.well-known/agent.json",
        None,
        &[("a2a-version", "1.0")],
    );
    let pure: Value = rig.post_invocation(&pure).await.json().await.unwrap();
    // (This endpoint, SigV4 behind a Function URL, merges no 0.3 fields either way.)
    for field in [
        "url",
        "preferredTransport",
        "protocolVersion",
        "additionalInterfaces",
    ] {
        assert!(pure.get(field).is_none(), "{field} in the 1.0 card: {pure}");
    }

    // Through the emulated Function URL itself, which signs nothing: refused.
    let resp = rig
        .client
        .post(format!("{}/lambda-url/api/a2a", rig.base))
        .header("a2a-version", "1.0")
        .json(&rpc("ListTasks", json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs cargo-lambda and the api binary: run by scripts/test.sh"]
async fn a_buffered_stream_returns_at_its_time_limit_and_resumes() {
    let Some(rig) = Rig::start(false).await else {
        return;
    };
    let sent = Instant::now();
    let (status, kind, first, ended) = rig
        .invoke(&send_streaming("tck-delayed-complete-buffered"))
        .await;
    assert_eq!(status, 200, "{}", rig.logs());
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    // Everything at once, when the stream ended at its time limit (below a gateway's timeout).
    let open = ended - sent;
    assert!(
        open >= Duration::from_secs(STREAM_MAX_SECS) - Duration::from_millis(500)
            && open < WORKING_FOR,
        "returned after {open:?}"
    );
    let task_id = result(&first[0])["task"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let last = first.last().unwrap();
    assert!(!is_terminal(last), "{first:?}");
    let rest = rig.resume_until_terminal(&task_id, last.id.unwrap()).await;
    let chain = ids_and_results(&first[1..].iter().chain(&rest).cloned().collect::<Vec<_>>());
    assert_eq!(chain, rig.uncut(&task_id, first[0].id.unwrap()).await);

    // The same function serves A2A 0.3 (ADR 031): JSON-RPC by its method names, HTTP+JSON
    // under /a2a/rest/v1, each answer in 0.3's shapes.
    // A 0.3 client sends no A2A-Version (the fixture's caller is a 1.0 one).
    let v03 = |mut e: Value| {
        e["headers"].as_object_mut().unwrap().remove("a2a-version");
        e
    };
    let get = rpc("tasks/get", json!({"id": task_id}));
    let (status, body) = rig
        .invoke_json(&v03(event("POST", "/a2a", Some(&get), &[])))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["kind"], "task", "{body}");
    assert_eq!(body["result"]["id"], task_id.as_str(), "{body}");
    assert_eq!(body["result"]["status"]["state"], "completed", "{body}");
    let path = format!("/a2a/rest/v1/tasks/{task_id}");
    let (status, body) = rig.invoke_json(&v03(event("GET", &path, None, &[]))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], task_id.as_str(), "{body}");
    assert_eq!(body["status"]["state"], "TASK_STATE_COMPLETED", "{body}");
}
