//! Durability of the embedded store: the local server (its own binary, on SQLite in WAL mode)
//! is killed with SIGKILL in the middle of concurrent SendMessage load; after a restart on the
//! same data directory every task whose creation was acknowledged is there and reaches
//! COMPLETED (its agent work was committed with it, in the durable feed).

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use taskledger_tests::binary::{free_port, rpc, server_binary, wait_up};

/// Concurrent clients sending while the server dies.
const CLIENTS: usize = 8;

fn start(dir: &std::path::Path, port: u16) -> Child {
    Command::new(server_binary())
        // The embedded store, whatever AWS endpoint the environment names.
        .args([
            "--store",
            "sqlite",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .arg("--data-dir")
        .arg(dir)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .expect("the taskledger binary starts (cargo test --workspace builds it)")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_task_survives_a_sigkill_under_load_and_completes() {
    let dir = std::env::temp_dir().join(format!("taskledger-crash-{}", uuid::Uuid::new_v4()));
    let port = free_port();
    let mut server = start(&dir, port);
    let client = reqwest::Client::new();
    wait_up(&client, port).await;

    let acknowledged = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut load = Vec::new();
    for c in 0..CLIENTS {
        let (client, acknowledged) = (client.clone(), acknowledged.clone());
        load.push(tokio::spawn(async move {
            for i in 0.. {
                let message = json!({"messageId": format!("tck-complete-task-crash-{c}-{i}"),
                    "role": "ROLE_USER", "parts": [{"text": "hello"}]});
                let params =
                    json!({"message": message, "configuration": {"returnImmediately": true}});
                match rpc(&client, port, "SendMessage", params).await {
                    Some(v) => {
                        if let Some(id) = v["result"]["task"]["id"].as_str() {
                            acknowledged.lock().unwrap().push(id.to_string());
                        }
                    }
                    // The server is gone: stop sending.
                    None => return,
                }
            }
        }));
    }
    // Let the load build up, then kill the server mid-flight.
    let deadline = Instant::now() + Duration::from_secs(10);
    while acknowledged.lock().unwrap().len() < 200 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill().expect("SIGKILL");
    let _ = server.wait();
    for l in load {
        let _ = l.await;
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(
        acknowledged.len() >= 50,
        "load reached the server before the kill ({} acknowledged)",
        acknowledged.len()
    );

    // Restart on the same data: every acknowledged task is there and completes.
    let port = free_port();
    let mut server = start(&dir, port);
    wait_up(&client, port).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut missing = Vec::new();
    for id in &acknowledged {
        loop {
            let v = rpc(
                &client,
                port,
                "GetTask",
                json!({"id": id, "historyLength": 0}),
            )
            .await
            .expect("the restarted server answers");
            let state = v["result"]["status"]["state"].as_str().map(str::to_string);
            match state.as_deref() {
                Some("TASK_STATE_COMPLETED") => break,
                Some(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(20)).await
                }
                _ => {
                    missing.push((id.clone(), v));
                    break;
                }
            }
        }
    }
    let _ = server.kill();
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged tasks lost or not completed: {:?}",
        missing.len(),
        acknowledged.len(),
        missing.first()
    );
}
