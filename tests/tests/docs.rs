//! The documentation runs (issue 54): every shell block of the README and the guides marked
//! `<!-- runnable: … -->` is run, as written, against a freshly started server (the binary on a
//! free port, in memory, `--conformance-scenarios`; the block's `127.0.0.1:8080` pointed at it),
//! and must succeed; every relative link in them names a file that exists.

use std::path::{Path, PathBuf};
use std::process::Command;

use taskledger_tests::binary::{free_port, server_binary, wait_up};
use taskledger_tests::source::root;

/// The README and the guides.
fn documents() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md")];
    let mut guides: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    guides.sort();
    out.extend(guides);
    out
}

/// The shell blocks marked runnable in `text`: `(line, code)`.
fn runnable(text: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_start().starts_with("<!-- runnable") {
            let open = i + 1;
            assert!(
                lines.get(open).is_some_and(|l| l.trim() == "```sh"),
                "line {}: a runnable mark must sit right above a ```sh block",
                i + 1
            );
            let end = (open + 1..lines.len())
                .find(|&j| lines[j].trim() == "```")
                .expect("the block ends");
            out.push((open + 1, lines[open + 1..end].join("\n")));
            i = end;
        }
        i += 1;
    }
    out
}

#[tokio::test]
async fn every_runnable_shell_block_runs() {
    let port = free_port();
    let mut server = Command::new(server_binary())
        .args([
            "--in-memory",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--conformance-scenarios",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_up(&reqwest::Client::new(), port).await;
    let mut ran = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for (line, code) in runnable(&text) {
            let code = code.replace("127.0.0.1:8080", &format!("127.0.0.1:{port}"));
            let out = Command::new("bash")
                .args(["-euo", "pipefail", "-c", &code])
                .output()
                .unwrap();
            let said = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && !said.contains("\"error\""),
                "{}:{line}: {}\n{said}\n{}",
                doc.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            ran += 1;
        }
    }
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        ran >= 2,
        "the README's curl session is runnable ({ran} blocks)"
    );
}

#[test]
fn every_relative_link_names_a_file() {
    let mut broken = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let dir = doc.parent().unwrap_or(Path::new("."));
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].split('#').next().unwrap_or_default();
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            if !dir.join(target).exists() {
                broken.push(format!("{}: {target}", doc.display()));
            }
        }
    }
    assert!(broken.is_empty(), "links to nothing: {broken:?}");
}
