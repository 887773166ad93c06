//! MCP call overhead (issue 52): N `tools/call echo` to an MCP server over Streamable HTTP,
//! through taskledger's adapter (`infra::mcp::McpServer`, rmcp on the SSRF-guarded client,
//! as the model loop calls it) and as bare JSON-RPC POSTs on one session (reqwest); p50/p99 of
//! each and the difference. Usage: mcpbench URL [N] (e.g. server-everything's
//! http://127.0.0.1:3001/mcp).

use std::time::Instant;

use serde_json::{json, Value};
use taskledger_domain::agent::mcp::ToolServer;
use taskledger_domain::push::AddressPolicy;
use taskledger_infra::mcp::McpServer;

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() as f64 * p) as usize).min(v.len() - 1)]
}

async fn bare(url: &str, n: usize) -> Vec<f64> {
    let c = reqwest::Client::new();
    let post = |body: Value, session: Option<String>| {
        let mut r = c
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(s) = session {
            r = r
                .header("mcp-session-id", s)
                .header("mcp-protocol-version", "2025-06-18");
        }
        r.send()
    };
    let init = post(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "mcpbench", "version": "1"}}}),
        None,
    )
    .await
    .expect("initialize");
    let session = init
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let _ = init.text().await;
    let _ = post(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        session.clone(),
    )
    .await;
    let mut out = Vec::new();
    for i in 0..n {
        let t = Instant::now();
        let r = post(
            json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"message": "bench"}}}),
            session.clone(),
        )
        .await
        .expect("tools/call");
        let text = r.text().await.expect("answer");
        assert!(text.contains("bench"), "{text}");
        out.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    out
}

async fn adapter(url: &str, n: usize) -> Vec<f64> {
    let s = McpServer::http("ev", url, AddressPolicy::allow_loopback(), vec![]).expect("server");
    s.tools().await.expect("tools");
    let mut out = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        let r = s
            .call("echo", json!({"message": "bench"}), None)
            .await
            .expect("call");
        assert!(r.text.contains("bench"));
        out.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    out
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let url = args.get(1).expect("usage: mcpbench URL [N]").clone();
    let n: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(500);
    bare(&url, 20).await;
    adapter(&url, 20).await;
    let (mut b, mut a) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        b.extend(bare(&url, n / 3).await);
        a.extend(adapter(&url, n / 3).await);
    }
    let (b50, b99, a50, a99) = (
        pct(&mut b, 0.5),
        pct(&mut b, 0.99),
        pct(&mut a, 0.5),
        pct(&mut a, 0.99),
    );
    println!("bare JSON-RPC:  p50 {b50:.3} ms  p99 {b99:.3} ms");
    println!("adapter (rmcp): p50 {a50:.3} ms  p99 {a99:.3} ms");
    println!(
        "overhead:       p50 {:.3} ms  p99 {:.3} ms",
        a50 - b50,
        a99 - b99
    );
}
