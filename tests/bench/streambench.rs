//! Stream bench: starts the local server (release build, SQLite on disk) as a child process
//! and measures its streams over HTTP+JSON SSE (`GET /a2a/rest/tasks/{id}:subscribe`):
//!
//! 1. fan-out: `--subscribers` (100) streams of one task while the driver answers it
//!    `--rounds` (50) times (each answer: WORKING, then INPUT_REQUIRED) — events/s delivered
//!    in total, and commit → subscriber latency of the INPUT_REQUIRED updates (from the
//!    nanosecond timeline stamp the server writes on the update's message to the moment the
//!    subscriber has read it);
//! 2. many tasks: `--tasks` (1,000) tasks with one stream each — the server's RSS idle and with
//!    every stream open (memory per open stream), its CPU while they sit idle, then one answer
//!    to every task (16 at a time): events/s and latency again.
//!
//! cargo build --release -p taskledger-local -p taskledger-tests
//! target/release/streambench [--subscribers 100] [--rounds 50] [--tasks 1000]
//!                            [--server target/release/taskledger]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

#[path = "common.rs"]
mod common;
use common::ServerProcess;

struct Args {
    subscribers: usize,
    rounds: usize,
    tasks: usize,
    server: String,
}

fn args() -> Args {
    let mut a = Args {
        subscribers: 100,
        rounds: 50,
        tasks: 1000,
        server: "target/release/taskledger".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_default();
        match flag.as_str() {
            "--subscribers" => a.subscribers = value.parse().unwrap_or(a.subscribers),
            "--rounds" => a.rounds = value.parse().unwrap_or(a.rounds),
            "--tasks" => a.tasks = value.parse().unwrap_or(a.tasks),
            "--server" => a.server = value,
            other => {
                eprintln!("unknown flag {other}");
                std::process::exit(2);
            }
        }
    }
    a
}

fn proc_field(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// User + system CPU of a process, from `/proc/<pid>/stat` (clock ticks of 10 ms).
fn cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: u64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}

fn now_nanos() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// Nanoseconds since the epoch of an RFC 3339 UTC stamp with nine fraction digits.
fn stamp_nanos(s: &str) -> Option<i128> {
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
    Some(t.unix_timestamp_nanos())
}

/// What every subscriber saw.
#[derive(Default)]
struct Seen {
    events: AtomicU64,
    latencies: Mutex<Vec<Duration>>,
}

/// Reads one SSE stream to its end, counting events and timing INPUT_REQUIRED updates.
async fn subscribe(client: reqwest::Client, url: String, seen: Arc<Seen>, open: Arc<AtomicU64>) {
    let mut resp = match client.get(&url).header("A2A-Version", "1.0").send().await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("subscribe failed: {e}");
            return;
        }
    };
    open.fetch_add(1, Ordering::SeqCst);
    let mut buf = String::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let event: String = buf.drain(..end + 2).collect();
            let Some(data) = event.lines().find_map(|l| l.strip_prefix("data:")) else {
                continue;
            };
            let received = now_nanos();
            seen.events.fetch_add(1, Ordering::Relaxed);
            let Ok(v) = serde_json::from_str::<Value>(data.trim()) else {
                continue;
            };
            let status = &v["statusUpdate"]["status"];
            if status["state"] == "TASK_STATE_INPUT_REQUIRED" {
                let stamp = status["message"]["metadata"]["kagent.dev/a2a/timeline-position"]
                    .as_str()
                    .and_then(stamp_nanos);
                if let Some(s) = stamp {
                    let lat = Duration::from_nanos((received - s).max(0) as u64);
                    seen.latencies.lock().unwrap().push(lat);
                }
            }
        }
    }
}

async fn send(client: &reqwest::Client, base: &str, message: Value) -> Value {
    client
        .post(format!("{base}/a2a/rest/message:send"))
        .header("A2A-Version", "1.0")
        .json(&json!({"message": message}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json")
}

fn message(task: Option<&str>) -> Value {
    let mut m = json!({"messageId": format!("tck-input-required-{}", uuid::Uuid::new_v4()),
        "role": "ROLE_USER", "parts": [{"text": "go on"}]});
    if let Some(t) = task {
        m["taskId"] = json!(t);
    }
    m
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

fn report(name: &str, seen: &Seen, elapsed: Duration) {
    let mut lat = seen.latencies.lock().unwrap().clone();
    lat.sort();
    let events = seen.events.load(Ordering::SeqCst);
    println!(
        "{name:<34} {events:>8} events  {:>9.0} events/s  commit→subscriber p50 {:>6.2} ms  p99 {:>6.2} ms  ({} timed)",
        events as f64 / elapsed.as_secs_f64(),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        lat.len()
    );
}

/// Waits until `open` streams are connected and their first event (the Task) was read.
async fn wait_open(open: &AtomicU64, seen: &Seen, n: u64) {
    for _ in 0..600 {
        if open.load(Ordering::SeqCst) >= n && seen.events.load(Ordering::SeqCst) >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!("only {} of {n} streams open", open.load(Ordering::SeqCst));
}

#[tokio::main]
async fn main() {
    let a = args();
    let server = ServerProcess::start(&a.server, &[]).await;
    let pid = server.pid();
    let base = server.base.clone();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .expect("client");

    // 1. fan-out: many subscribers of one task.
    let task = send(&client, &base, message(None)).await;
    let id = task["task"]["id"].as_str().expect("a task").to_string();
    let seen = Arc::new(Seen::default());
    let open = Arc::new(AtomicU64::new(0));
    let url = format!("{base}/a2a/rest/tasks/{id}:subscribe");
    let streams: Vec<_> = (0..a.subscribers)
        .map(|_| {
            let c = reqwest::Client::new();
            tokio::spawn(subscribe(c, url.clone(), seen.clone(), open.clone()))
        })
        .collect();
    wait_open(&open, &seen, a.subscribers as u64).await;
    seen.events.store(0, Ordering::SeqCst);
    let started = Instant::now();
    for _ in 0..a.rounds {
        send(&client, &base, message(Some(&id))).await;
    }
    // Let the last updates arrive.
    let want = (a.subscribers * a.rounds * 2) as u64;
    for _ in 0..200 {
        if seen.events.load(Ordering::SeqCst) >= want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let elapsed = started.elapsed();
    report(
        &format!("{} subscribers of 1 task", a.subscribers),
        &seen,
        elapsed,
    );
    for s in streams {
        s.abort();
    }

    // 2. many tasks, one stream each.
    let mut ids = Vec::with_capacity(a.tasks);
    for chunk in (0..a.tasks).collect::<Vec<_>>().chunks(16) {
        let sends = chunk.iter().map(|_| send(&client, &base, message(None)));
        for t in futures_util::future::join_all(sends).await {
            ids.push(t["task"]["id"].as_str().expect("a task").to_string());
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle_rss = proc_field(pid, "VmRSS:");
    let seen = Arc::new(Seen::default());
    let open = Arc::new(AtomicU64::new(0));
    // Streams share a few pooled clients (one connection per stream, HTTP/1.1).
    let clients: Vec<reqwest::Client> = (0..8)
        .map(|_| {
            reqwest::Client::builder()
                .pool_max_idle_per_host(a.tasks)
                .build()
                .expect("client")
        })
        .collect();
    let streams: Vec<_> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let url = format!("{base}/a2a/rest/tasks/{id}:subscribe");
            tokio::spawn(subscribe(
                clients[i % clients.len()].clone(),
                url,
                seen.clone(),
                open.clone(),
            ))
        })
        .collect();
    wait_open(&open, &seen, a.tasks as u64).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let open_rss = proc_field(pid, "VmRSS:");
    let cpu_before = cpu(pid);
    let idle_for = Duration::from_secs(5);
    tokio::time::sleep(idle_for).await;
    let idle_cpu = cpu(pid).saturating_sub(cpu_before);
    println!(
        "{} open streams: RSS idle {} KiB, with the streams {} KiB: {:.1} KiB per open stream; \
         server CPU while they sit idle {:.1} % of a core",
        a.tasks,
        idle_rss,
        open_rss,
        open_rss.saturating_sub(idle_rss) as f64 / a.tasks as f64,
        idle_cpu.as_secs_f64() * 100.0 / idle_for.as_secs_f64()
    );
    seen.events.store(0, Ordering::SeqCst);
    let started = Instant::now();
    for chunk in ids.chunks(16) {
        let sends = chunk
            .iter()
            .map(|id| send(&client, &base, message(Some(id))));
        futures_util::future::join_all(sends).await;
    }
    let want = (a.tasks * 2) as u64;
    for _ in 0..300 {
        if seen.events.load(Ordering::SeqCst) >= want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    report(
        &format!("{} subscribers of {} tasks", a.tasks, a.tasks),
        &seen,
        started.elapsed(),
    );
    for s in streams {
        s.abort();
    }
    drop(server);
}
