//! The floor plan's rules that can be read off the source (ADR 012), checked on every run:
//! no product file over 600 lines (tests and generated code aside), no Lambda main over 60,
//! crates that depend downwards only — the domain names no I/O crate (no runtime, no AWS, no
//! HTTP, no database) and no crate of ours, the adapters name no application crate — and the
//! application crate names adapters only in its composition.

use std::path::{Path, PathBuf};

use taskledger_tests::source::{crates, is_test_file, product_code, root, rust_files};

/// The longest product file, in lines.
const MAX_FILE_LINES: usize = 600;
/// The longest Lambda main, in lines.
const MAX_MAIN_LINES: usize = 60;

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).unwrap().lines().count()
}

/// Product source: the domain, the adapters, the application crate and every binary.
fn product_files() -> Vec<PathBuf> {
    crates()
        .iter()
        .flat_map(|(_, src)| rust_files(src))
        .filter(|f| !is_test_file(f))
        .collect()
}

#[test]
fn no_product_file_is_over_its_limit() {
    let files = product_files();
    assert!(
        files.len() > 100,
        "the tree was read: {} files",
        files.len()
    );
    let over: Vec<String> = files
        .iter()
        .filter(|f| lines(f) > MAX_FILE_LINES)
        .map(|f| format!("{} ({} lines)", f.display(), lines(f)))
        .collect();
    assert!(over.is_empty(), "over {MAX_FILE_LINES} lines: {over:?}");
}

#[test]
fn every_lambda_main_is_thin() {
    let mut mains = 0;
    for f in std::fs::read_dir(root().join("functions")).unwrap() {
        let dir = f.unwrap().path();
        let main = dir.join("src/main.rs");
        // The local all-in-one server is a program of its own, not a Lambda.
        if !main.is_file() || dir.ends_with("local") {
            continue;
        }
        mains += 1;
        let n = lines(&main);
        assert!(n <= MAX_MAIN_LINES, "{}: {n} lines", main.display());
        // A main runs what the composition assembled: it builds no AWS client or adapter.
        let text = std::fs::read_to_string(&main).unwrap();
        for builds in [
            "client_from_env",
            "Queue::new(",
            "S3Archive::new(",
            "WebhookSender::new(",
        ] {
            assert!(
                !text.contains(builds),
                "{} builds an adapter ({builds}): assemble it in functions/app/src/compose",
                main.display()
            );
        }
    }
    assert!(
        mains >= 6,
        "api, relay, worker, push, reaper, archive: {mains}"
    );
}

/// The `[dependencies]` names of a crate's manifest.
fn dependencies(manifest: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root().join(manifest)).unwrap();
    let mut names = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == "[dependencies]";
            continue;
        }
        if inside && !line.is_empty() && !line.starts_with('#') {
            names.push(line.split(['=', '.', ' ']).next().unwrap().to_string());
        }
    }
    names
}

#[test]
fn crates_depend_downwards_and_the_domain_does_no_io() {
    let domain = dependencies("domain/Cargo.toml");
    assert!(domain.len() > 5, "{domain:?}");
    for name in &domain {
        for io in [
            "tokio", "aws-", "aws_", "reqwest", "hyper", "axum", "rusqlite", "tonic", "lambda",
        ] {
            assert!(!name.starts_with(io), "the domain depends on {name}");
        }
        assert!(
            !name.starts_with("taskledger-"),
            "the domain depends on {name}"
        );
    }
    for name in dependencies("infra/Cargo.toml") {
        assert!(
            !["taskledger-app", "taskledger-local"].contains(&name.as_str()),
            "the adapters depend on {name}"
        );
    }
    assert!(
        !dependencies("functions/app/Cargo.toml").contains(&"taskledger-local".to_string()),
        "the application crate depends on the local server"
    );
}

/// The application crate names infra's adapters only in its composition (`compose/`): every
/// other room gets them through the domain's ports. Test modules may name them.
#[test]
fn only_the_composition_names_adapters() {
    let mut files = rust_files(&root().join("functions/app/src"));
    files.retain(|f| !is_test_file(f) && !f.components().any(|c| c.as_os_str() == "compose"));
    assert!(files.len() > 50, "{}", files.len());
    let named: Vec<String> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let product = product_code(&text);
            product.contains("taskledger_infra")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        named.is_empty(),
        "adapters named outside compose/: {named:?}"
    );
}

#[test]
fn every_file_is_created_through_the_one_private_writer() {
    // Issue 51, class F: a file made by path elsewhere could follow a link or keep a looser
    // mode; `infra/src/files.rs` creates them all (build scripts aside).
    let opens = [
        "OpenOptions::new",
        "File::create",
        "fs::write(",
        "File::options",
    ];
    let writer = root().join("infra/src/files.rs");
    let found: Vec<String> = product_files()
        .iter()
        .filter(|f| **f != writer && f.file_name().is_some_and(|n| n != "build.rs"))
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let product = product_code(&text);
            let product = product.replace("PrivateFile::create", "");
            opens
                .iter()
                .find(|o| product.contains(*o))
                .map(|o| format!("{}: {o}", f.display()))
        })
        .collect();
    assert!(
        found.is_empty(),
        "files created outside infra::files: {found:?}"
    );
}

#[test]
fn only_the_ledger_appends_to_the_store() {
    // Issue 54: every event reaches the store through the ledger (a command's commit, or an
    // archive's restore), so every one passes the gate; adapters implement `append`.
    let ledger = root().join("functions/app/src/service/ledger");
    let found: Vec<String> = crates()
        .iter()
        .filter(|(name, _)| name != "infra" && name != "domain")
        .flat_map(|(_, src)| rust_files(src))
        .filter(|f| !is_test_file(f) && !f.starts_with(&ledger))
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let product = product_code(&text);
            product.contains(".append(&")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(found.is_empty(), "appends outside the ledger: {found:?}");
}

#[test]
fn only_the_front_door_reaches_the_0_3_shapes() {
    // Issue 54: a request's protocol line is a value (`call::Line`) that owns what varies by
    // line; the bindings, runners and service ask it, never the 0.3 translation (`v03/`).
    // The card's own module signs the card 0.3 fetchers read (ADR 031); the upstream client is
    // the outgoing edge, speaking the 0.3 wire to an upstream agent that serves 0.3 (ADR 034).
    let app = root().join("functions/app/src");
    let allowed = [
        app.join("call/mod.rs"),
        app.join("call/routes.rs"),
        app.join("card.rs"),
        app.join("lib.rs"),
        app.join("upstream/client.rs"),
    ];
    let found: Vec<String> = rust_files(&app)
        .into_iter()
        .filter(|f| !is_test_file(f) && !f.starts_with(app.join("v03")) && !allowed.contains(f))
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let product = product_code(&text);
            product.contains("crate::v03")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        found.is_empty(),
        "the 0.3 shapes reached outside call.rs: {found:?}"
    );
}

#[test]
fn only_the_settings_read_the_environment() {
    // Issue 54: one settings model (`compose::settings`) reads every variable, for the local
    // server and every Lambda alike; everything else is handed the values. Build scripts read
    // Cargo's variables.
    let settings = root().join("functions/app/src/compose/settings");
    let found: Vec<String> = product_files()
        .iter()
        .filter(|f| !f.starts_with(&settings) && f.file_name().is_some_and(|n| n != "build.rs"))
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let product = product_code(&text);
            product.contains("env::var")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        found.is_empty(),
        "the environment read outside the settings: {found:?}"
    );
}
