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
    // The README's curl session, the guides' streaming, push, extension and events sessions.
    assert!(
        ran >= 6,
        "the documented sessions are runnable ({ran} blocks)"
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

/// Every argument of a settings struct: its flag (hidden ones have none worth writing) and its
/// environment variable.
fn arguments<T: clap::Args>() -> Vec<(Option<String>, Option<String>)> {
    T::augment_args(clap::Command::new("settings"))
        .get_arguments()
        .map(|a| {
            let long = a
                .get_long()
                .filter(|_| !a.is_hide_set())
                .map(|l| format!("`--{l}`"));
            let env = a.get_env().map(|e| format!("`{}`", e.to_string_lossy()));
            (long, env)
        })
        .collect()
}

/// The table rows of the guide's section `heading` (its `## ` heading up to the next).
fn rows<'a>(guide: &'a str, heading: &str) -> Vec<&'a str> {
    let start = guide
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("docs/configuration.md has no section {heading:?}"));
    let section = &guide[start + 1..];
    let end = section[3..].find("\n## ").map_or(section.len(), |e| e + 3);
    section[..end]
        .lines()
        .filter(|l| l.starts_with("| `") || l.starts_with("| |"))
        .collect()
}

/// The parameter names of template.yaml.
fn template_parameters(template: &str) -> Vec<String> {
    let block = template
        .split("\nParameters:\n")
        .nth(1)
        .and_then(|p| p.split("\nConditions:").next())
        .unwrap_or_default();
    let names: Vec<String> = block
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   ") && l.trim_end().ends_with(':'))
        .map(|l| l.trim().trim_end_matches(':').to_string())
        .collect();
    assert!(names.len() > 20, "{names:?}");
    names
}

#[test]
fn every_setting_is_in_the_configuration_guide() {
    use taskledger_app::settings::{LambdaSettings, Settings};
    let guide = std::fs::read_to_string(root().join("docs/configuration.md")).unwrap();
    let template = std::fs::read_to_string(root().join("template.yaml")).unwrap();
    let parameters = template_parameters(&template);
    let sections = [
        ("Every deployment", arguments::<Settings>()),
        (
            "The local server's own",
            arguments::<taskledger_local::LocalFlags>(),
        ),
        // Set by the template only: their variables are what counts.
        (
            "The Lambda functions' own",
            arguments::<LambdaSettings>()
                .into_iter()
                .map(|(_, env)| (None, env))
                .collect(),
        ),
    ];
    let mut missing = Vec::new();
    for (heading, args) in &sections {
        let rows = rows(&guide, heading);
        for (long, env) in args {
            let row = rows.iter().find(|r| {
                long.as_ref().is_none_or(|l| r.contains(l.as_str()))
                    && env.as_ref().is_none_or(|e| r.contains(e.as_str()))
            });
            match row {
                None => missing.push(format!("{heading}: {long:?} {env:?}")),
                // Every shared setting says how AWS gets it: a template parameter (which must
                // exist and set the variable), or why not (a cell beginning with —).
                Some(row) if *heading == "Every deployment" => {
                    let aws = row.split('|').nth(4).unwrap_or_default().trim();
                    let named: Vec<&str> = aws.split('`').skip(1).step_by(2).collect();
                    let env = env.as_deref().unwrap_or_default().trim_matches('`');
                    if aws.starts_with('—') {
                        continue;
                    }
                    if named.is_empty() || !named.iter().all(|p| parameters.iter().any(|n| n == p))
                    {
                        missing.push(format!("{heading}: {env}'s template parameter {aws:?}"));
                    }
                    if !template.contains(&format!("{env}:")) {
                        missing.push(format!("{heading}: template.yaml never sets {env}"));
                    }
                }
                Some(_) => {}
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/configuration.md misses: {missing:#?}"
    );
}
