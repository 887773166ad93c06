//! Load bench: starts the local server (release build, embedded SQLite store on disk) as a child
//! process, drives it over HTTP with N concurrent clients, and prints requests/s, latency
//! percentiles and the server's peak RSS.
//!
//! cargo build --release -p taskledger-local -p taskledger-tests
//! target/release/loadbench [--clients 16] [--seconds 10] [--server target/release/taskledger]

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

struct Args {
    clients: usize,
    seconds: u64,
    server: String,
}

fn args() -> Args {
    let mut a = Args {
        clients: 16,
        seconds: 10,
        server: "target/release/taskledger".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_default();
        match flag.as_str() {
            "--clients" => a.clients = value.parse().unwrap_or(a.clients),
            "--seconds" => a.seconds = value.parse().unwrap_or(a.seconds),
            "--server" => a.server = value,
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

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
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
    client
        .post(url)
        .header("A2A-Version", "1.0")
        .json(&body)
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

fn report(name: &str, lat: &[Duration], elapsed: Duration) {
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
    let dir = std::env::temp_dir().join(format!("taskledger-bench-{port}"));
    let _ = std::fs::remove_dir_all(&dir);
    let child = Command::new(&a.server)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .arg("--data-dir")
        .arg(&dir)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
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
    println!(
        "taskledger loadbench: {} clients, {} s per phase, embedded SQLite store, server pid {pid}",
        a.clients, a.seconds
    );

    // Tasks to read back.
    let mut ids = Vec::new();
    for i in 0..200 {
        let v = rpc(&client, &url, "SendMessage", send_params(i)).await;
        ids.push(
            v["result"]["task"]["id"]
                .as_str()
                .expect("task id")
                .to_string(),
        );
    }
    let ids = Arc::new(ids);

    let (c, u) = (client.clone(), url.clone());
    let (lat, el) = phase(a.clients, a.seconds, move |cl, i| {
        let (c, u) = (c.clone(), u.clone());
        async move {
            let v = rpc(&c, &u, "SendMessage", send_params(cl * 1_000_000 + i)).await;
            assert!(v.get("result").is_some(), "{v}");
        }
    })
    .await;
    report("SendMessage(returnImmediately)", &lat, el);
    tokio::time::sleep(Duration::from_millis(500)).await;

    let (c, u, ids2) = (client.clone(), url.clone(), ids.clone());
    let (lat, el) = phase(a.clients, a.seconds, move |cl, i| {
        let (c, u) = (c.clone(), u.clone());
        let id = ids2[(cl * 7919 + i) % ids2.len()].clone();
        async move {
            let v = rpc(&c, &u, "GetTask", json!({"id": id})).await;
            assert!(v.get("result").is_some(), "{v}");
        }
    })
    .await;
    report("GetTask", &lat, el);

    let (c, u) = (client.clone(), url.clone());
    let (lat, el) = phase(a.clients, a.seconds.min(5), move |_, _| {
        let (c, u) = (c.clone(), u.clone());
        async move {
            let v = rpc(
                &c,
                &u,
                "ListTasks",
                json!({"pageSize": 50, "historyLength": 0}),
            )
            .await;
            assert!(v.get("result").is_some(), "{v}");
        }
    })
    .await;
    report("ListTasks(pageSize 50)", &lat, el);

    // Commit → agent → COMPLETED through the durable path (feed, relay, worker), one at a time.
    let mut to_done = Vec::new();
    for i in 0..200 {
        let t = Instant::now();
        let v = rpc(&client, &url, "SendMessage", send_params(9_000_000 + i)).await;
        let id = v["result"]["task"]["id"].as_str().expect("id").to_string();
        loop {
            let t2 = rpc(
                &client,
                &url,
                "GetTask",
                json!({"id": id, "historyLength": 0}),
            )
            .await;
            if t2["result"]["status"]["state"] == "TASK_STATE_COMPLETED" {
                break;
            }
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

    let total = rpc(&client, &url, "ListTasks", json!({"pageSize": 1})).await["result"]
        ["totalSize"]
        .as_i64()
        .unwrap_or(0);
    match peak_rss_kib(pid) {
        Some(kib) => println!(
            "server peak RSS: {:.1} MiB ({total} tasks stored)",
            kib as f64 / 1024.0
        ),
        None => println!("server peak RSS: unavailable"),
    }
    drop(server);
}
