//! What the bench binaries share: the local server as a child process on a fresh data
//! directory (killed and cleaned up when dropped).

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use taskledger_tests::binary::free_port;

pub struct ServerProcess {
    pub child: Child,
    pub dir: std::path::PathBuf,
    pub base: String,
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl ServerProcess {
    /// `server` (the release binary) on a free port and a fresh SQLite data directory, with
    /// `extra` flags; returns once its agent card answers.
    pub async fn start(server: &str, extra: &[String]) -> Self {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("taskledger-bench-{port}"));
        let _ = std::fs::remove_dir_all(&dir);
        let child = Command::new(server)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .arg("--data-dir")
            .arg(&dir)
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {server}: {e}"));
        let s = Self {
            child,
            dir,
            base: format!("http://127.0.0.1:{port}"),
        };
        let client = reqwest::Client::new();
        for _ in 0..100 {
            let card = format!("{}/.well-known/agent-card.json", s.base);
            if client.get(card).send().await.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        s
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}
