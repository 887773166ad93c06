//! The official Python SDK's A2A servers as upstream agents (`tests/upstream/agent_v1.py` on
//! a2a-sdk 1.x, `agent_v03.py` on 0.3), started on a free port: the interpreters come from
//! `scripts/test.sh` (`TASKLEDGER_UPSTREAM_PY1`, `TASKLEDGER_UPSTREAM_PY03`); without them a test
//! says "skipped" (unless `TASKLEDGER_REQUIRE_UPSTREAM` is set).

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::binary::free_port;

/// A Python partner, killed when dropped.
pub struct Partner {
    child: Child,
    pub url: String,
}

impl Drop for Partner {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Sdk {
    V1,
    V03,
}

fn python(sdk: Sdk) -> Option<String> {
    let var = match sdk {
        Sdk::V1 => "TASKLEDGER_UPSTREAM_PY1",
        Sdk::V03 => "TASKLEDGER_UPSTREAM_PY03",
    };
    match std::env::var(var) {
        Ok(p) if !p.is_empty() => Some(p),
        _ => {
            assert!(
                std::env::var("TASKLEDGER_REQUIRE_UPSTREAM").is_err(),
                "{var} is required"
            );
            eprintln!("skipped: no {var} (scripts/test.sh sets it)");
            None
        }
    }
}

pub async fn partner(sdk: Sdk, flags: &[&str]) -> Option<Partner> {
    let py = python(sdk)?;
    let port = free_port();
    let script = match sdk {
        Sdk::V1 => "agent_v1.py",
        Sdk::V03 => "agent_v03.py",
    };
    let path = format!("{}/upstream/{script}", env!("CARGO_MANIFEST_DIR"));
    let mut child = Command::new(py)
        .arg(path)
        .arg(port.to_string())
        .args(flags)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("the Python partner starts");
    let url = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let card = if flags.contains(&"--legacy-card") {
        "agent.json"
    } else {
        "agent-card.json"
    };
    for _ in 0..200 {
        let r = client.get(format!("{url}/.well-known/{card}")).send().await;
        if r.is_ok_and(|r| r.status().is_success()) {
            return Some(Partner { child, url });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the {sdk:?} partner did not come up");
}
