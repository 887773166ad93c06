//! The local server as its own process: where cargo built its binary, and a free port for it.

use std::path::PathBuf;

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
