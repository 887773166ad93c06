//! The local server as its own process: where cargo built its binary, a free port for it, and
//! waiting until it answers.

use std::path::PathBuf;
use std::time::Duration;

/// `target/<profile>/taskledger`, next to the test binary's `deps/` folder (`cargo test
/// --workspace` builds it).
pub fn server_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .map(|dir| dir.join("taskledger"))
        .expect("target directory")
}

/// A loopback port nothing listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Returns once a server on `port` answers its agent card (30 s at most, then panics: a debug
/// build starting while every other test runs can take seconds).
pub async fn wait_up(client: &reqwest::Client, port: u16) {
    for _ in 0..1200 {
        let card = format!("http://127.0.0.1:{port}/.well-known/agent-card.json");
        if client.get(card).send().await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the server did not come up on port {port}");
}

/// A JSON-RPC call (A2A 1.0) to a server binary on `port`; `None` when it does not answer
/// (killed, restarting) within 10 s or answers with something that is not JSON.
pub async fn rpc(
    client: &reqwest::Client,
    port: u16,
    method: &str,
    params: serde_json::Value,
) -> Option<serde_json::Value> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let r = client
        .post(format!("http://127.0.0.1:{port}/a2a"))
        .header("A2A-Version", "1.0")
        .json(&body)
        .timeout(std::time::Duration::from_secs(10))
        .send()
        .await
        .ok()?;
    r.json().await.ok()
}

/// The server binary as its own process, until dropped (killed then).
pub struct ServerProcess {
    child: std::process::Child,
    pub port: u16,
    pub client: reqwest::Client,
}

impl ServerProcess {
    /// The binary on a SQLite store in `dir`, with `extra` flags — as deployed: the
    /// conformance scenarios off unless `extra` says `--conformance-scenarios`.
    pub async fn sqlite_with(dir: &std::path::Path, extra: &[&str]) -> Self {
        let dir = dir.to_str().expect("a UTF-8 path");
        Self::start(&["--store", "sqlite", "--data-dir", dir], extra).await
    }

    /// The binary on DynamoDB (the emulator `AWS_ENDPOINT_URL` names), its tables under
    /// `prefix` (made when missing), the stream poller and the SQS queues' pollers running —
    /// the AWS path in one process; `dir` holds its local files.
    pub async fn dynamodb_with(dir: &std::path::Path, prefix: &str, extra: &[&str]) -> Self {
        let dir = dir.to_str().expect("a UTF-8 path");
        let store = [
            "--store",
            "dynamodb",
            "--create-tables",
            "--table-prefix",
            prefix,
            "--data-dir",
            dir,
        ];
        Self::start(&store, extra).await
    }

    async fn start(store: &[&str], extra: &[&str]) -> Self {
        let port = free_port();
        let listen = format!("127.0.0.1:{port}");
        let mut args = store.to_vec();
        args.extend_from_slice(&["--listen", &listen]);
        args.extend_from_slice(extra);
        let child = std::process::Command::new(server_binary())
            .args(&args)
            .env_remove("TASKLEDGER_CONFORMANCE_SCENARIOS")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the taskledger binary starts");
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("a client");
        wait_up(&client, port).await;
        Self {
            child,
            port,
            client,
        }
    }

    /// The binary on a SQLite store in `dir`.
    pub async fn sqlite(dir: &std::path::Path) -> Self {
        Self::sqlite_with(dir, &[]).await
    }

    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A JSON-RPC call; panics when the server does not answer.
    pub async fn call(&self, method: &str, params: serde_json::Value) -> serde_json::Value {
        rpc(&self.client, self.port, method, params)
            .await
            .unwrap_or_else(|| panic!("{method}: the server does not answer"))
    }

    /// Whether the process still runs.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A child process, killed when dropped.
pub struct Proc(pub std::process::Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A tool's path from the environment variable `var` (set by `scripts/test.sh`), else `default`.
pub fn tool(var: &str, default: PathBuf) -> PathBuf {
    std::env::var_os(var).map_or(default, PathBuf::from)
}
