//! The log as a product (issue 56), timed: a task of ~1,000 events built through the API, then
//! pages of its log (`ListTaskEvents`, 100 events after a random position) and as-of reads
//! (`GetTask asOfGeneration`, a random generation) against the release server on the embedded
//! store, with GetTask (the task now) alongside for scale; p50/p99 in ms and requests/s, one
//! client. Usage: logbench <release-binary> [--rounds N] [--reads N].

#[path = "common.rs"]
mod common;

use std::time::Instant;

use serde_json::{json, Value};

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() as f64 * p) as usize).min(v.len() - 1)]
}

async fn rpc(c: &reqwest::Client, base: &str, method: &str, params: Value) -> Value {
    let v: Value = c
        .post(format!("{base}/a2a"))
        .header("A2A-Version", "1.1")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .expect("the server answers")
        .json()
        .await
        .expect("JSON");
    assert!(v.get("error").is_none(), "{method}: {v}");
    v["result"].clone()
}

fn flag(args: &[String], name: &str, default: usize) -> usize {
    args.windows(2)
        .find(|w| w[0] == name)
        .and_then(|w| w[1].parse().ok())
        .unwrap_or(default)
}

/// One series: `n` calls of `make(i)`, timed; prints p50/p99 and the rate.
async fn series(
    c: &reqwest::Client,
    base: &str,
    what: &str,
    n: usize,
    make: impl Fn(usize) -> (&'static str, Value),
) {
    let mut ms = Vec::with_capacity(n);
    let started = Instant::now();
    for i in 0..n {
        let (method, params) = make(i);
        let t = Instant::now();
        rpc(c, base, method, params).await;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let rate = n as f64 / started.elapsed().as_secs_f64();
    println!(
        "{what:<38} p50 {:>7.3} ms  p99 {:>7.3} ms  {rate:>8.0} req/s",
        pct(&mut ms, 0.5),
        pct(&mut ms, 0.99)
    );
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let server = args
        .get(1)
        .expect("usage: logbench <release-binary> [--rounds N] [--reads N]");
    let rounds = flag(&args, "--rounds", 200);
    let reads = flag(&args, "--reads", 500);
    let s = common::ServerProcess::start(server, &["--conformance-scenarios".to_string()]).await;
    println!("server pid {} (for perf)", s.pid());
    let c = reqwest::Client::new();
    let base = s.base.as_str();
    // A task that asks for input again on every answer whose id is a scenario's.
    let first = rpc(
        &c,
        base,
        "SendMessage",
        json!({"message": {"messageId": "tck-input-required-0",
        "role": "ROLE_USER", "parts": [{"text": "go"}]}}),
    )
    .await;
    let id = first["task"]["id"].as_str().unwrap().to_string();
    let built = Instant::now();
    for n in 1..rounds {
        rpc(
            &c,
            base,
            "SendMessage",
            json!({"message": {"messageId": format!("tck-input-required-{n}"),
            "taskId": id, "role": "ROLE_USER", "parts": [{"text": format!("answer {n}")}]}}),
        )
        .await;
    }
    let page = rpc(&c, base, "ListTaskEvents", json!({"id": id, "limit": 1000})).await;
    let events = page["events"].as_array().unwrap().len();
    let last = page["events"].as_array().unwrap().last().unwrap();
    let generation: usize = last["generation"].as_str().unwrap().parse().unwrap();
    println!(
        "task {id}: {events} events, generation {generation} ({rounds} rounds in {:.1} s)",
        built.elapsed().as_secs_f64()
    );
    let mut seed = 0x9e37_79b9_u64;
    let mut next = move |bound: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % bound as u64) as usize
    };
    let afters: Vec<usize> = (0..reads)
        .map(|_| next(events.saturating_sub(100).max(1)))
        .collect();
    let gens: Vec<usize> = (0..reads).map(|_| 1 + next(generation)).collect();
    for round in 0..2 {
        println!("round {}", round + 1);
        series(&c, base, "GetTask (now, historyLength 10)", reads, |_| {
            ("GetTask", json!({"id": id, "historyLength": 10}))
        })
        .await;
        series(
            &c,
            base,
            "ListTaskEvents (100 after a random seq)",
            reads,
            |i| {
                (
                    "ListTaskEvents",
                    json!({"id": id, "after": afters[i], "limit": 100}),
                )
            },
        )
        .await;
        series(&c, base, "GetTask asOfGeneration (random)", reads, |i| {
            (
                "GetTask",
                json!({"id": id, "asOfGeneration": gens[i].to_string(), "historyLength": 10}),
            )
        })
        .await;
    }
}
