//! The local server's `--workers` (ADR 030), through its own binary: a count in range serves,
//! and the count at the limit parses; none out of range starts a server.

use std::process::{Command, Stdio};

use serde_json::json;
use taskledger_local::runtime::MAX_WORKERS;
use taskledger_tests::binary::{free_port, server_binary, wait_up};
use taskledger_tests::{Binding, Server};

/// Runs the binary with `--workers <workers>` and returns its exit status and stderr (for
/// counts that must be refused before anything starts).
fn refused(workers: &str) -> String {
    let dir = std::env::temp_dir().join(format!("taskledger-workers-{}", uuid::Uuid::new_v4()));
    let out = Command::new(server_binary())
        .args([
            "--store",
            "sqlite",
            "--listen",
            "127.0.0.1:0",
            "--workers",
            workers,
        ])
        .arg("--data-dir")
        .arg(&dir)
        .stdin(Stdio::null())
        .output()
        .expect("the taskledger binary runs");
    assert!(!out.status.success(), "--workers {workers} was accepted");
    assert!(
        !dir.exists(),
        "--workers {workers} created the data directory"
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn worker_counts_out_of_range_are_refused_before_anything_starts() {
    let zero = refused("0");
    assert!(
        zero.contains("worker threads must be 1 to 1024, not 0"),
        "{zero}"
    );
    let past = refused(&(MAX_WORKERS + 1).to_string());
    assert!(past.contains("not 1025"), "{past}");
    let word = refused("many");
    assert!(word.contains("not a whole number"), "{word}");
}

#[tokio::test]
async fn a_server_on_the_given_workers_serves_tasks_to_completion() {
    for workers in ["1", "3"] {
        let dir = std::env::temp_dir().join(format!("taskledger-workers-{}", uuid::Uuid::new_v4()));
        let port = free_port();
        let mut child = Command::new(server_binary())
            .args(["--store", "sqlite", "--workers", workers, "--listen"])
            .arg(format!("127.0.0.1:{port}"))
            .arg("--data-dir")
            .arg(&dir)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .expect("the taskledger binary starts");
        let server = Server::at(([127, 0, 0, 1], port).into()).over(Binding::JsonRpc);
        wait_up(&server.client, port).await;
        let id = server
            .start_task(json!({
                "messageId": format!("tck-complete-task-{workers}"),
                "role": "ROLE_USER",
                "parts": [{"text": "hello"}]
            }))
            .await;
        let task = server.wait_state(&id, "TASK_STATE_COMPLETED").await;
        assert_eq!(task["id"], id.as_str());
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
