//! Export and import: tasks written from SQLite, replayed into DynamoDB and written again give
//! the same bytes, and read back the same through the API; an import is idempotent; a bad or
//! newer-version file stops at its first bad line, having written nothing of that task; the
//! binary's `export` and `import` do the same from the command line.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{json, Value};
use taskledger_app::archive::Selection;
use taskledger_domain::archive::{header, FORMAT_VERSION};
use taskledger_domain::retention::Retention;
use taskledger_local::archive::{export, import, ArchiveKeys, ImportFlags};
use taskledger_local::{Config, Storage};
use taskledger_tests::binary::server_binary;
use taskledger_tests::{aws_endpoint, error_code, fast_timings, Server};

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "taskledger-archive-{name}-{}",
        uuid::Uuid::new_v4()
    ))
}

/// A server on `storage`, quick scenarios.
async fn server_on(storage: Storage) -> Server {
    let mut c = Config::in_memory().with_conformance_scenarios();
    c.storage = storage;
    c.timings = fast_timings();
    Server::start_with(c).await
}

/// Tasks of several shapes: artifacts, chunks, an answered question, a cancel.
async fn some_tasks(s: &Server) -> Vec<String> {
    let mut ids = Vec::new();
    for m in [
        "tck-artifact-text-a1",
        "tck-stream-artifact-chunked-a2",
        "tck-artifact-data-a3",
    ] {
        ids.push(
            s.send_task(m, "hello").await["id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    let asked = s.send_task("tck-input-required-a4", "hi").await;
    let asked = asked["id"].as_str().unwrap().to_string();
    s.ok(
        "SendMessage",
        json!({"message": {"messageId": "a4-answer", "role": "ROLE_USER", "taskId": asked,
            "parts": [{"text": "here you are"}]}}),
    )
    .await;
    ids.push(asked);
    let canceled = s.send_task("tck-input-required-a5", "hi").await;
    let canceled = canceled["id"].as_str().unwrap().to_string();
    s.ok("CancelTask", json!({"id": canceled})).await;
    ids.push(canceled);
    ids
}

fn forever() -> Retention {
    Retention::forever()
}

#[tokio::test]
async fn sqlite_to_file_to_dynamodb_to_file_gives_the_same_bytes() {
    if !aws_endpoint() {
        return;
    }
    let dir = temp("sqlite");
    let original = server_on(Storage::Dir(dir.clone())).await;
    let ids = some_tasks(&original).await;
    let (a, b) = (temp("a.ndjson"), temp("b.ndjson"));
    let sqlite = Storage::Dir(dir.clone());
    let out = export(
        &sqlite,
        &forever(),
        &Selection::All,
        &ArchiveKeys::default(),
        Some(&a),
    )
    .await
    .unwrap();
    assert_eq!(out.tasks, ids.len() as u64);
    let prefix = format!("tl-arch-{}-", uuid::Uuid::new_v4().simple());
    let dynamo = |create_tables| Storage::Dynamo {
        index_shards: 1,
        prefix: prefix.clone(),
        create_tables,
        counter: None,
        pollers: false,
    };
    // Tables made by a server start; the import writes into them.
    let copy = server_on(dynamo(true)).await;
    let imported = import(
        &dynamo(false),
        &forever(),
        &ArchiveKeys::default(),
        &ImportFlags::default(),
        &a,
    )
    .await
    .unwrap();
    assert_eq!((imported.tasks, imported.events), (out.tasks, out.events));
    export(
        &dynamo(false),
        &forever(),
        &Selection::All,
        &ArchiveKeys::default(),
        Some(&b),
    )
    .await
    .unwrap();
    let (bytes_a, bytes_b) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert!(bytes_a.len() > 1000);
    assert!(bytes_a == bytes_b, "the two exports differ");
    // Read through the API, each task is the same on both stores.
    for id in &ids {
        let params = json!({"id": id, "historyLength": 1000});
        let (there, here) = (
            original.ok("GetTask", params.clone()).await,
            copy.ok("GetTask", params).await,
        );
        assert_eq!(there, here, "{id}");
    }
    // Again: nothing written, every task already there whole.
    let again = import(
        &dynamo(false),
        &forever(),
        &ArchiveKeys::default(),
        &ImportFlags::default(),
        &a,
    )
    .await
    .unwrap();
    assert_eq!((again.events, again.unchanged), (0, ids.len() as u64));
    // One task only, then a tenant's.
    let one = temp("one.ndjson");
    let task = taskledger_domain::ids::TaskId::parse(ids[0].clone()).unwrap();
    let r = export(
        &sqlite,
        &forever(),
        &Selection::Task(task),
        &ArchiveKeys::default(),
        Some(&one),
    )
    .await
    .unwrap();
    assert_eq!(r.tasks, 1);
    let r = export(
        &sqlite,
        &forever(),
        &Selection::Tenant("nobody".into()),
        &ArchiveKeys::default(),
        Some(&one),
    )
    .await
    .unwrap();
    assert_eq!(r.tasks, 0);
}

/// An export of `n` fresh tasks on an in-memory-free SQLite dir: its lines.
async fn exported_lines() -> (Vec<String>, Vec<String>) {
    let dir = temp("src");
    let s = server_on(Storage::Dir(dir.clone())).await;
    let ids = some_tasks(&s).await;
    let file = temp("lines.ndjson");
    export(
        &Storage::Dir(dir),
        &forever(),
        &Selection::All,
        &ArchiveKeys::default(),
        Some(&file),
    )
    .await
    .unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    (text.lines().map(str::to_string).collect(), ids)
}

#[tokio::test]
async fn a_bad_line_stops_the_import_there_having_written_nothing_of_its_task() {
    let (mut lines, _) = exported_lines().await;
    // The second task's third line is broken.
    let second: String = serde_json::from_str::<Value>(&lines[1]).unwrap()["taskId"]
        .as_str()
        .unwrap()
        .to_string();
    let starts = lines
        .iter()
        .position(|l| !l.contains(&format!("\"taskId\":\"{second}\"")) && l != &lines[0])
        .unwrap();
    let broken_task: String = serde_json::from_str::<Value>(&lines[starts]).unwrap()["taskId"]
        .as_str()
        .unwrap()
        .to_string();
    let bad_line = starts + 3;
    lines[bad_line - 1] = lines[bad_line - 1].replace("\"seq\":3", "\"seq\":9");
    let file = temp("bad.ndjson");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let target = temp("target");
    let err = import(
        &Storage::Dir(target.clone()),
        &forever(),
        &ArchiveKeys::default(),
        &ImportFlags::default(),
        &file,
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.starts_with(&format!("line {bad_line}:")), "{err}");
    let s = server_on(Storage::Dir(target)).await;
    assert_eq!(
        s.ok("GetTask", json!({"id": second})).await["id"],
        second.as_str(),
        "the task before the bad line is imported"
    );
    let v = s.call("GetTask", json!({"id": broken_task})).await;
    assert_eq!(error_code(&v), -32001, "nothing of the broken task: {v}");
}

#[tokio::test]
async fn a_newer_format_version_is_refused_at_line_1() {
    let (mut lines, ids) = exported_lines().await;
    lines[0] = header().replace(
        &format!("\"version\":{FORMAT_VERSION}"),
        &format!("\"version\":{}", FORMAT_VERSION + 1),
    );
    let file = temp("newer.ndjson");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let target = temp("newer-target");
    let err = import(
        &Storage::Dir(target.clone()),
        &forever(),
        &ArchiveKeys::default(),
        &ImportFlags::default(),
        &file,
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.starts_with("line 1: format version 2"), "{err}");
    let s = server_on(Storage::Dir(target)).await;
    assert_eq!(s.total_tasks().await, 0, "{ids:?}");
}

fn run(args: &[&str]) -> std::process::Output {
    Command::new(server_binary())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the taskledger binary runs")
}

#[tokio::test]
async fn the_binary_exports_and_imports_from_the_command_line() {
    let dir = temp("cli-src");
    let s = server_on(Storage::Dir(dir.clone())).await;
    let ids = some_tasks(&s).await;
    let (file, copy) = (temp("cli.ndjson"), temp("cli-copy"));
    let (dir_s, file_s, copy_s) = (
        dir.to_str().unwrap(),
        file.to_str().unwrap(),
        copy.to_str().unwrap(),
    );
    let out = run(&[
        "--store",
        "sqlite",
        "--data-dir",
        dir_s,
        "export",
        "--all",
        "--out",
        file_s,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the export is private to its owner");
    }
    let out = run(&[
        "--store",
        "sqlite",
        "--data-dir",
        copy_s,
        "import",
        "--file",
        file_s,
    ]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!("imported {} tasks", ids.len())),
        "{said}"
    );
    // Written again from the copy: the same bytes.
    let again = temp("cli-again.ndjson");
    let out = run(&[
        "--store",
        "sqlite",
        "--data-dir",
        copy_s,
        "export",
        "--all",
        "--out",
        again.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert_eq!(
        std::fs::read(&file).unwrap(),
        std::fs::read(&again).unwrap()
    );
    // A file of another format stops at line 1, and says so.
    std::fs::write(&file, "{\"format\":\"other\",\"version\":1}\n").unwrap();
    let out = run(&[
        "--store",
        "sqlite",
        "--data-dir",
        copy_s,
        "import",
        "--file",
        file_s,
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("line 1"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
