//! Load bench: starts the local server (release build, embedded SQLite store on disk) as a child
//! process, drives it with N concurrent clients over JSON-RPC (HTTP/1.1, one pooled connection
//! per client), HTTP+JSON (`--binding rest`, the same) or gRPC (`--binding grpc`: HTTP/2 h2c,
//! one channel per client), and prints requests/s, latency percentiles, the CPU time per
//! request of the server and of the clients (they share the machine's cores), and the server's
//! peak RSS. With gRPC it also times the ProtoJSON transcoding of one GetTask in-process.
//!
//! cargo build --release -p taskledger-local -p taskledger-tests
//! target/release/loadbench [--clients 16] [--seconds 10] [--server target/release/taskledger]
//!                          [--binding jsonrpc|rest|grpc|jsonrpc03] [--alternate N]
//!                          [--peer URL [--peer-pid PID]]
//! `jsonrpc03` is A2A 0.3's JSON-RPC (`message/send`, `tasks/get`, no version header) on the
//! same endpoint: with `--alternate N` it prints its req/s against 1.0's (ADR 031).
//! With `--alternate N`, one server serves both bindings and N rounds alternate a JSON-RPC phase
//! and a `--binding` phase (GetTask rounds, then SendMessage rounds, ≤ 5 s each, in A B / B A
//! order), printing the ratio per round
//! and the median (the binding cost comparison of issue 11).
//! The server it starts logs at `--log LEVEL` (`RUST_LOG`, `warn` by default): a taskledger
//! started by hand as a `--peer` must be given the same (`RUST_LOG=warn`), or the comparison
//! carries the ~10 % of server CPU that formatting the per-request spans at `info` costs.
//! With `--peer URL` (another A2A 1.0 server's JSON-RPC endpoint, e.g. turul-a2a's echo agent at
//! `http://127.0.0.1:3000/jsonrpc`) the same load alternates between that server and taskledger
//! (`--alternate N` rounds, 3 by default), printing taskledger/peer per round and the median,
//! so anyone can reproduce the side-by-side ratios (issue 55); `--peer-pid` adds the peer's CPU
//! per request.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use taskledger_app::grpc::convert;
use taskledger_app::grpc::proto::{self, a2a_service_client::A2aServiceClient};
use taskledger_tests::binary::free_port;
use tonic::transport::Channel;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Binding {
    JsonRpc,
    Rest,
    Grpc,
    /// A2A 0.3's JSON-RPC methods on the same endpoint (`message/send`, `tasks/get`; ADR 031).
    JsonRpc03,
}

struct Args {
    clients: usize,
    seconds: u64,
    server: String,
    binding: Binding,
    /// Pairs of alternating phases (JSON-RPC, then `binding`) on one server: 0 = off.
    alternate: usize,
    /// Another A2A server's JSON-RPC endpoint to alternate with, and its process (for its CPU).
    peer: Option<String>,
    peer_pid: Option<u32>,
    /// The log filter the server is started with (`RUST_LOG`): `warn` by default, so that the
    /// figures are of the work, not of log formatting; `info` is the server's own default.
    log: String,
}

fn args() -> Args {
    let mut a = Args {
        clients: 16,
        seconds: 10,
        server: "target/release/taskledger".into(),
        binding: Binding::JsonRpc,
        alternate: 0,
        peer: None,
        peer_pid: None,
        log: "warn".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_default();
        match flag.as_str() {
            "--clients" => a.clients = value.parse().unwrap_or(a.clients),
            "--seconds" => a.seconds = value.parse().unwrap_or(a.seconds),
            "--server" => a.server = value,
            "--alternate" => a.alternate = value.parse().unwrap_or(0),
            "--peer" => a.peer = Some(value),
            "--peer-pid" => a.peer_pid = value.parse().ok(),
            "--log" => a.log = value,
            "--binding" => {
                a.binding = match value.as_str() {
                    "jsonrpc" => Binding::JsonRpc,
                    "rest" => Binding::Rest,
                    "grpc" => Binding::Grpc,
                    "jsonrpc03" => Binding::JsonRpc03,
                    other => {
                        eprintln!("--binding is jsonrpc, rest, grpc or jsonrpc03, not {other:?}");
                        std::process::exit(2);
                    }
                }
            }
            other => {
                eprintln!("unknown flag {other}");
                std::process::exit(2);
            }
        }
    }
    a
}

struct ServerProcess {
    child: Child,
    dir: std::path::PathBuf,
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// CPU time (user + system, all threads) a process has used, from `/proc/<pid>/stat`.
fn cpu_time(pid: &str) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold spaces): utime and
    // stime are the 12th and 13th, in clock ticks (USER_HZ, 100 on Linux).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: u64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}

/// CPU used by the server and by this client while something ran, and the server's peak RSS
/// at the end (the high-water mark only grows: the phase where it rose is the one to look at).
#[derive(Clone, Copy)]
struct Cpu {
    server: Duration,
    client: Duration,
    peak_rss_kib: Option<u64>,
}

struct CpuMark {
    pid: String,
    server: Duration,
    client: Duration,
}

impl CpuMark {
    fn now(pid: u32) -> Self {
        let pid = pid.to_string();
        Self {
            server: cpu_time(&pid),
            client: cpu_time("self"),
            pid,
        }
    }

    fn since(&self) -> Cpu {
        Cpu {
            server: cpu_time(&self.pid).saturating_sub(self.server),
            client: cpu_time("self").saturating_sub(self.client),
            peak_rss_kib: self.pid.parse().ok().and_then(peak_rss_kib),
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn rpc(client: &reqwest::Client, url: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut req = client.post(url);
    // A 0.3 method goes without a version, as 0.3 clients send it.
    if !method.contains('/') {
        req = req.header("A2A-Version", "1.0");
    }
    req.json(&body)
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("json")
}

fn send_params(i: usize) -> Value {
    json!({
        "message": {"messageId": format!("bench-{i}"), "role": "ROLE_USER", "parts": [{"text": "benchmark payload"}]},
        "configuration": {"returnImmediately": true, "historyLength": 0}
    })
}

/// The same send as `send_params`, in 0.3's shapes (0.3 cannot ask for no history: 0 is no
/// limit there, so the answer carries the one message).
fn send_params_03(i: usize) -> Value {
    json!({
        "message": {"kind": "message", "messageId": format!("bench-{i}"), "role": "user",
            "parts": [{"kind": "text", "text": "benchmark payload"}]},
        "configuration": {"blocking": false}
    })
}

fn grpc_send(i: usize) -> tonic::Request<proto::SendMessageRequest> {
    grpc_request(proto::SendMessageRequest {
        message: Some(proto::Message {
            message_id: format!("bench-{i}"),
            role: proto::Role::User as i32,
            parts: vec![proto::Part {
                content: Some(proto::part::Content::Text("benchmark payload".into())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        configuration: Some(proto::SendMessageConfiguration {
            return_immediately: true,
            history_length: Some(0),
            ..Default::default()
        }),
        ..Default::default()
    })
}

fn grpc_request<T>(message: T) -> tonic::Request<T> {
    let mut r = tonic::Request::new(message);
    r.metadata_mut().insert(
        "a2a-version",
        tonic::metadata::MetadataValue::from_static("1.0"),
    );
    r
}

/// One client's connection: a pooled HTTP client for JSON-RPC, or a gRPC channel.
#[derive(Clone)]
enum Api {
    JsonRpc {
        client: reqwest::Client,
        url: String,
    },
    /// A2A 0.3's JSON-RPC on the same endpoint.
    JsonRpc03 {
        client: reqwest::Client,
        url: String,
    },
    /// HTTP+JSON below this base (`…/a2a/rest`).
    Rest {
        client: reqwest::Client,
        base: String,
    },
    Grpc(A2aServiceClient<Channel>),
}

/// One HTTP+JSON request; the body as JSON.
async fn rest(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    body: Option<Value>,
) -> Value {
    let mut req = client.request(method, url).header("A2A-Version", "1.0");
    if let Some(b) = body {
        req = req.json(&b);
    }
    req.send()
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON reply")
}

impl Api {
    /// SendMessage with returnImmediately; the new task's id.
    async fn send(&self, i: usize) -> String {
        match self {
            Api::JsonRpc { client, url } => {
                let v = rpc(client, url, "SendMessage", send_params(i)).await;
                v["result"]["task"]["id"]
                    .as_str()
                    .unwrap_or_else(|| panic!("no task: {v}"))
                    .to_string()
            }
            Api::JsonRpc03 { client, url } => {
                let v = rpc(client, url, "message/send", send_params_03(i)).await;
                v["result"]["id"]
                    .as_str()
                    .unwrap_or_else(|| panic!("no task: {v}"))
                    .to_string()
            }
            Api::Rest { client, base } => {
                let url = format!("{base}/message:send");
                let v = rest(client, reqwest::Method::POST, url, Some(send_params(i))).await;
                v["task"]["id"]
                    .as_str()
                    .unwrap_or_else(|| panic!("no task: {v}"))
                    .to_string()
            }
            Api::Grpc(c) => {
                let r = c.clone().send_message(grpc_send(i)).await.expect("send");
                match r.into_inner().payload {
                    Some(proto::send_message_response::Payload::Task(t)) => t.id,
                    other => panic!("no task: {other:?}"),
                }
            }
        }
    }

    /// GetTask; the task's state name.
    async fn state(&self, id: &str, history_length: Option<i32>) -> String {
        match self {
            Api::JsonRpc { client, url } => {
                let mut params = json!({"id": id});
                if let Some(h) = history_length {
                    params["historyLength"] = json!(h);
                }
                let v = rpc(client, url, "GetTask", params).await;
                v["result"]["status"]["state"]
                    .as_str()
                    .unwrap_or_else(|| panic!("no task: {v}"))
                    .to_string()
            }
            Api::JsonRpc03 { client, url } => {
                let mut params = json!({"id": id});
                if let Some(h) = history_length.filter(|h| *h > 0) {
                    params["historyLength"] = json!(h);
                }
                let v = rpc(client, url, "tasks/get", params).await;
                v["result"]["status"]["state"]
                    .as_str()
                    .unwrap_or_else(|| panic!("no task: {v}"))
                    .to_string()
            }
            Api::Rest { client, base } => {
                let query = history_length
                    .map(|h| format!("?historyLength={h}"))
                    .unwrap_or_default();
                let url = format!("{base}/tasks/{id}{query}");
                let v = rest(client, reqwest::Method::GET, url, None).await;
                v["status"]["state"]
                    .as_str()
                    .unwrap_or_else(|| panic!("no task: {v}"))
                    .to_string()
            }
            Api::Grpc(c) => {
                let t = c
                    .clone()
                    .get_task(grpc_request(proto::GetTaskRequest {
                        id: id.to_string(),
                        history_length,
                        ..Default::default()
                    }))
                    .await
                    .expect("get")
                    .into_inner();
                let state = t.status.map(|s| s.state).unwrap_or_default();
                proto::TaskState::try_from(state)
                    .map(|s| s.as_str_name().to_string())
                    .unwrap_or_default()
            }
        }
    }

    /// ListTasks (page of 50, no history); the total.
    async fn list(&self) -> i64 {
        match self {
            // 0.3 has no ListTasks: the 1.0 method on the same endpoint.
            Api::JsonRpc { client, url } | Api::JsonRpc03 { client, url } => {
                let v = rpc(
                    client,
                    url,
                    "ListTasks",
                    json!({"pageSize": 50, "historyLength": 0}),
                )
                .await;
                v["result"]["totalSize"]
                    .as_i64()
                    .unwrap_or_else(|| panic!("{v}"))
            }
            Api::Rest { client, base } => {
                let url = format!("{base}/tasks?pageSize=50&historyLength=0");
                let v = rest(client, reqwest::Method::GET, url, None).await;
                v["totalSize"].as_i64().unwrap_or_else(|| panic!("{v}"))
            }
            Api::Grpc(c) => {
                let r = c
                    .clone()
                    .list_tasks(grpc_request(proto::ListTasksRequest {
                        page_size: Some(50),
                        history_length: Some(0),
                        ..Default::default()
                    }))
                    .await
                    .expect("list")
                    .into_inner();
                r.total_size as i64
            }
        }
    }
}

/// Time per transcoding of a stored task (written as a GetTask reply's bytes as the server
/// does, and through its ProtoJSON as the stream path does) and of a GetTask request (bytes
/// read as ProtoJSON), in-process: the binding's own overhead.
fn transcoding_cost(task: &Value) {
    use prost::Message as _;
    let task: taskledger_domain::wire::Task = serde_json::from_value(task.clone()).expect("a task");
    let req = proto::GetTaskRequest {
        id: task.id.clone(),
        history_length: Some(10),
        ..Default::default()
    }
    .encode_to_vec();
    let desc = convert::descriptor_of("lf.a2a.v1.GetTaskRequest").expect("a descriptor");
    let n = 20_000;
    let t = Instant::now();
    for _ in 0..n {
        let bytes = convert::reply_to_bytes("lf.a2a.v1.Task", &task).expect("encodes");
        std::hint::black_box(bytes);
    }
    let reply = t.elapsed() / n;
    let t = Instant::now();
    for _ in 0..n {
        let v = serde_json::to_value(&task).expect("json");
        let bytes = convert::protojson_to_bytes("lf.a2a.v1.Task", &v).expect("transcodes");
        std::hint::black_box(bytes);
    }
    let via_json = t.elapsed() / n;
    let t = Instant::now();
    for _ in 0..n {
        let v = convert::bytes_to_protojson(&desc, req.as_slice()).expect("decodes");
        std::hint::black_box(v.expect("transcodes"));
    }
    let request = t.elapsed() / n;
    let t = Instant::now();
    for _ in 0..n {
        let v = serde_json::to_value(&task).expect("json");
        std::hint::black_box(serde_json::to_vec(&v).expect("json"));
    }
    let json = t.elapsed() / n;
    println!(
        "transcoding (in-process, per call): Task reply {:.1} µs (through its ProtoJSON \
         {:.1} µs), GetTask request {:.1} µs; for scale, the JSON-RPC reply of the same Task \
         (Value, bytes) {:.1} µs",
        reply.as_secs_f64() * 1e6,
        via_json.as_secs_f64() * 1e6,
        request.as_secs_f64() * 1e6,
        json.as_secs_f64() * 1e6
    );
}

/// Runs `clients` loops for `seconds`; each iteration is one request. Returns sorted latencies.
async fn phase<F, Fut>(clients: usize, seconds: u64, op: F) -> (Vec<Duration>, Duration)
where
    F: Fn(usize, usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let op = Arc::new(op);
    let start = Instant::now();
    let deadline = start + Duration::from_secs(seconds);
    let mut handles = Vec::new();
    for c in 0..clients {
        let op = op.clone();
        handles.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut i = 0;
            while Instant::now() < deadline {
                let t = Instant::now();
                op(c, i).await;
                lat.push(t.elapsed());
                i += 1;
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.expect("client"));
    }
    let elapsed = start.elapsed();
    all.sort();
    (all, elapsed)
}

/// One phase's line: throughput, latency, and CPU per request of the server and of the client
/// (these share the machine's cores, so CPU per request is the steadier comparison).
fn report(name: &str, lat: &[Duration], elapsed: Duration, cpu: Cpu) {
    let per = |d: Duration| d.as_secs_f64() * 1e6 / lat.len().max(1) as f64;
    println!(
        "{name:<28} {:>8} req  {:>9.0} req/s  p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms  \
         cpu/req server {:>5.0} µs client {:>5.0} µs  peak RSS {}",
        lat.len(),
        lat.len() as f64 / elapsed.as_secs_f64(),
        percentile(lat, 0.50).as_secs_f64() * 1e3,
        percentile(lat, 0.99).as_secs_f64() * 1e3,
        lat.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
        per(cpu.server),
        per(cpu.client),
        cpu.peak_rss_kib
            .map_or("?".to_string(), |k| format!("{:.1} MiB", k as f64 / 1024.0)),
    );
}

/// A phase's figures when the server's process is not ours to read (a peer without its pid).
fn report_without_cpu(name: &str, lat: &[Duration], elapsed: Duration) {
    println!(
        "{name:<28} {:>8} req  {:>9.0} req/s  p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms",
        lat.len(),
        lat.len() as f64 / elapsed.as_secs_f64(),
        percentile(lat, 0.50).as_secs_f64() * 1e3,
        percentile(lat, 0.99).as_secs_f64() * 1e3,
        lat.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
    );
}

#[tokio::main]
async fn main() {
    let a = args();
    let port = free_port();
    let grpc_port = free_port();
    let dir = std::env::temp_dir().join(format!("taskledger-bench-{port}"));
    let _ = std::fs::remove_dir_all(&dir);
    let mut command = Command::new(&a.server);
    command
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .arg("--data-dir")
        .arg(&dir)
        .env("RUST_LOG", &a.log)
        .stdout(Stdio::null());
    if a.binding == Binding::Grpc || a.alternate > 0 {
        command.args(["--grpc-listen", &format!("127.0.0.1:{grpc_port}")]);
    }
    let child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", a.server));
    let server = ServerProcess { child, dir };
    let pid = server.child.id();
    let base = format!("http://127.0.0.1:{port}");
    let url = format!("{base}/a2a");
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(a.clients * 2)
        .build()
        .expect("client");
    for _ in 0..100 {
        if client
            .get(format!("{base}/.well-known/agent-card.json"))
            .send()
            .await
            .is_ok()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if let Some(peer) = &a.peer {
        let peer_apis = (0..a.clients.max(1))
            .map(|_| Api::JsonRpc {
                client: client.clone(),
                url: peer.clone(),
            })
            .collect();
        let sides = [
            Side {
                name: "peer",
                apis: Arc::new(peer_apis),
                pid: a.peer_pid,
            },
            Side {
                name: "taskledger",
                apis: connect(Binding::JsonRpc, a.clients, &client, &base, grpc_port).await,
                pid: Some(pid),
            },
        ];
        println!("taskledger (JSON-RPC, embedded SQLite on disk) against the peer at {peer}");
        alternate(&a, sides, a.alternate.max(1)).await;
        return;
    }
    if a.alternate > 0 {
        let sides = [
            Side {
                name: "JSON-RPC",
                apis: connect(Binding::JsonRpc, a.clients, &client, &base, grpc_port).await,
                pid: Some(pid),
            },
            Side {
                name: "binding",
                apis: connect(a.binding, a.clients, &client, &base, grpc_port).await,
                pid: Some(pid),
            },
        ];
        alternate(&a, sides, a.alternate).await;
        return;
    }
    let apis = connect(a.binding, a.clients, &client, &base, grpc_port).await;
    let api = apis[0].clone();
    println!(
        "taskledger loadbench: {} clients over {}, {} s per phase, embedded SQLite store, server pid {pid}",
        a.clients,
        match a.binding {
            Binding::JsonRpc => "JSON-RPC (HTTP/1.1)",
            Binding::Rest => "HTTP+JSON (HTTP/1.1)",
            Binding::Grpc => "gRPC (HTTP/2 h2c, a channel each)",
            Binding::JsonRpc03 => "A2A 0.3 JSON-RPC (HTTP/1.1)",
        },
        a.seconds
    );

    // Tasks to read back.
    let mut ids = Vec::new();
    for i in 0..200 {
        ids.push(api.send(i).await);
    }
    let ids = Arc::new(ids);

    let clients = apis.clone();
    let mark = CpuMark::now(pid);
    let (lat, el) = phase(a.clients, a.seconds, move |cl, i| {
        let api = clients[cl].clone();
        async move {
            api.send(cl * 1_000_000 + i).await;
        }
    })
    .await;
    report("SendMessage(returnImmediately)", &lat, el, mark.since());
    tokio::time::sleep(Duration::from_millis(500)).await;

    let (clients, ids2) = (apis.clone(), ids.clone());
    let mark = CpuMark::now(pid);
    let (lat, el) = phase(a.clients, a.seconds, move |cl, i| {
        let api = clients[cl].clone();
        let id = ids2[(cl * 7919 + i) % ids2.len()].clone();
        async move {
            assert!(!api.state(&id, None).await.is_empty());
        }
    })
    .await;
    report("GetTask", &lat, el, mark.since());

    let clients = apis.clone();
    let mark = CpuMark::now(pid);
    let (lat, el) = phase(a.clients, a.seconds.min(5), move |cl, _| {
        let api = clients[cl].clone();
        async move {
            assert!(api.list().await > 0);
        }
    })
    .await;
    report("ListTasks(pageSize 50)", &lat, el, mark.since());

    // Commit → agent → COMPLETED through the durable path (feed, relay, worker), one at a time.
    let mut to_done = Vec::new();
    for i in 0..200 {
        let t = Instant::now();
        let id = api.send(9_000_000 + i).await;
        while api.state(&id, Some(0)).await != "TASK_STATE_COMPLETED" {
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        to_done.push(t.elapsed());
    }
    to_done.sort();
    println!(
        "SendMessage -> COMPLETED (agent via the durable feed): p50 {:.2} ms  p99 {:.2} ms",
        percentile(&to_done, 0.5).as_secs_f64() * 1e3,
        percentile(&to_done, 0.99).as_secs_f64() * 1e3
    );

    if a.binding == Binding::Grpc {
        let v = rpc(&client, &url, "GetTask", json!({"id": ids[0]})).await;
        transcoding_cost(&v["result"]);
    }

    let total = api.list().await;
    match peak_rss_kib(pid) {
        Some(kib) => println!(
            "server peak RSS: {:.1} MiB ({total} tasks stored)",
            kib as f64 / 1024.0
        ),
        None => println!("server peak RSS: unavailable"),
    }
    drop(server);
}

/// `clients` connections over `binding`.
async fn connect(
    binding: Binding,
    clients: usize,
    client: &reqwest::Client,
    base: &str,
    grpc_port: u16,
) -> Arc<Vec<Api>> {
    let url = format!("{base}/a2a");
    let mut apis = Vec::new();
    for _ in 0..clients.max(1) {
        apis.push(match binding {
            Binding::JsonRpc => Api::JsonRpc {
                client: client.clone(),
                url: url.clone(),
            },
            Binding::Rest => Api::Rest {
                client: client.clone(),
                base: format!("{base}/a2a/rest"),
            },
            Binding::JsonRpc03 => Api::JsonRpc03 {
                client: client.clone(),
                url: url.clone(),
            },
            Binding::Grpc => {
                let channel = Channel::from_shared(format!("http://127.0.0.1:{grpc_port}"))
                    .expect("uri")
                    .connect()
                    .await
                    .expect("gRPC connects");
                Api::Grpc(A2aServiceClient::new(channel))
            }
        });
    }
    Arc::new(apis)
}

/// One side of an alternating comparison: its connections, and its server's process.
struct Side {
    name: &'static str,
    apis: Arc<Vec<Api>>,
    pid: Option<u32>,
}

/// `rounds` pairs of a phase on each side, first for GetTask, then for SendMessage (so the
/// agent work a send phase leaves behind does not fall on a read phase), each pair in
/// alternating order (A B, then B A): req/s and server CPU per request of each, the second
/// side's ratio to the first per pair, and the median ratio.
async fn alternate(a: &Args, sides: [Side; 2], rounds: usize) {
    // Tasks to read back, made on each side (the same server's when both sides are one).
    let mut ids = Vec::new();
    for side in &sides {
        let mut made = Vec::new();
        for i in 0..200 {
            made.push(side.apis[0].send(i).await);
        }
        ids.push(Arc::new(made));
    }
    let seconds = a.seconds.clamp(1, 5);
    let (first, second) = (sides[0].name, sides[1].name);
    for op in ["GetTask", "SendMessage"] {
        let mut ratios: Vec<(f64, f64)> = Vec::new();
        for round in 0..rounds {
            let mut row = [(0.0, f64::NAN); 2];
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for side in order {
                let (apis, ids2) = (sides[side].apis.clone(), ids[side].clone());
                let base = (round * 2 + side) * 10_000_000 + 1_000_000;
                let mark = sides[side].pid.map(CpuMark::now);
                let (lat, el) = phase(a.clients, seconds, move |cl, i| {
                    let api = apis[cl].clone();
                    let id = ids2[(cl * 7919 + i) % ids2.len()].clone();
                    async move {
                        if op == "GetTask" {
                            assert!(!api.state(&id, None).await.is_empty());
                        } else {
                            api.send(base + cl * 100_000 + i).await;
                        }
                    }
                })
                .await;
                let cpu = mark.map(|m| m.since());
                print!("round {round} {} ", sides[side].name);
                match cpu {
                    Some(cpu) => report(op, &lat, el, cpu),
                    None => report_without_cpu(op, &lat, el),
                }
                row[side] = (
                    lat.len() as f64 / el.as_secs_f64(),
                    cpu.map_or(f64::NAN, |c| per_request(&c, lat.len())),
                );
            }
            let r = (row[1].0 / row[0].0, row[1].1 / row[0].1);
            println!(
                "round {round}: {op} {second}/{first} req/s {:.3}, server cpu/req {:.3}",
                r.0, r.1
            );
            ratios.push(r);
        }
        let median = |f: fn(&(f64, f64)) -> f64| {
            let mut v: Vec<f64> = ratios.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
        };
        println!(
            "median {op} {second}/{first} over {} rounds: req/s {:.3}, server cpu/req {:.3}",
            ratios.len(),
            median(|r| r.0),
            median(|r| r.1)
        );
        // Let the agent finish what the phases started before the next operation.
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
}

fn per_request(cpu: &Cpu, n: usize) -> f64 {
    cpu.server.as_secs_f64() * 1e6 / n.max(1) as f64
}
