//! Issue 51, classes A and F, through the real binary: archives crafted as an attacker would
//! craft them are refused at their line by the one gate every stored event passes, and change
//! nothing; a store holding what no gate would let in (written to the store directly) does not
//! stop the server; a line of any length costs the import no more memory than the bound;
//! `--tenant` and `--require-signed` place and vouch for an archive; push secrets are sealed on
//! the way in; `export --out` never writes through a looser file or a link.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};
use taskledger_domain::archive::{header, line};
use taskledger_domain::extensions::harness::{
    Participant, ParticipantKind, Role, TaskExtensionData,
};
use taskledger_domain::ids::{ContextId, ParticipantId, Principal, TaskId};
use taskledger_domain::ports::{commit_for, EventStore};
use taskledger_domain::push::PushConfigSpec;
use taskledger_domain::task::stored::StoredEvent;
use taskledger_domain::task::TaskEvent;
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Message, PushProtocol, TaskState};
use taskledger_tests::binary::{server_binary, ServerProcess};

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("tl-sec-import-{name}-{}", uuid::Uuid::new_v4()))
}

/// An hour ago, plus `s` seconds (recent: finished tasks are still kept by the default
/// retention).
fn at(s: i64) -> Timestamp {
    static BASE: std::sync::OnceLock<Timestamp> = std::sync::OnceLock::new();
    BASE.get_or_init(|| Timestamp::now().minus_secs(3600))
        .plus_secs(s)
}

/// The principal a server without tokens serves (every task here is its, so the server reads
/// them back).
fn owner() -> Principal {
    Principal::anonymous()
}

fn created(id: &str, owner: Principal) -> Vec<TaskEvent> {
    let task_id = TaskId::parse(id).unwrap();
    let mut m = Message::user_text(format!("{id}-m1"), "hello");
    m.task_id = Some(id.into());
    m.context_id = Some("c-1".into());
    vec![
        TaskEvent::TaskCreated {
            task_id,
            context_id: ContextId::parse("c-1").unwrap(),
            owner,
            at: at(0),
        },
        TaskEvent::MessageAppended {
            message: m,
            at: at(0),
            acted_by: None,
        },
    ]
}

fn status(state: TaskState, s: i64) -> TaskEvent {
    TaskEvent::StatusChanged {
        state,
        message: None,
        at: at(s),
    }
}

/// An archive of tasks, each a list of commits (events recorded together, at the commit's
/// time): the header and a line per event.
/// A task's commits: the events of each, and when it was recorded.
type Commits = Vec<(Vec<TaskEvent>, Timestamp)>;

fn archive(tasks: &[(&str, Commits)]) -> String {
    let mut out = vec![header()];
    for (id, commits) in tasks {
        let task_id = TaskId::parse(*id).unwrap();
        let mut seq = 0;
        for (events, recorded) in commits {
            for e in events {
                seq += 1;
                out.push(line(&task_id, &StoredEvent::new(seq, e, *recorded)));
            }
        }
    }
    out.join("\n") + "\n"
}

fn run(args: &[&str]) -> (bool, String) {
    let out = Command::new(server_binary())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the taskledger binary runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn import(dir: &Path, file: &Path, extra: &[&str]) -> (bool, String) {
    let mut args = vec![
        "--store",
        "sqlite",
        "--data-dir",
        dir.to_str().unwrap(),
        "import",
        "--file",
        file.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(&args)
}

fn write(name: &str, text: &str) -> PathBuf {
    let f = temp(name);
    std::fs::write(&f, text).unwrap();
    f
}

fn state_of(task: &Value) -> &str {
    task["result"]["status"]["state"].as_str().unwrap_or("")
}

#[tokio::test]
async fn events_the_domain_would_never_decide_are_refused_at_their_line_and_change_nothing() {
    let done = |id: &str| {
        vec![
            (created(id, owner()), at(0)),
            (vec![status(TaskState::Completed, 5)], at(5)),
        ]
    };
    let dir = temp("store");
    let base = write("base.ndjson", &archive(&[("t-done", done("t-done"))]));
    let (ok, said) = import(&dir, &base, &[]);
    assert!(ok, "{said}");
    let huge = {
        let mut m = Message::user_text("t-open-big", "x".repeat(3 * 1024 * 1024));
        m.task_id = Some("t-open".into());
        m
    };
    let late = Timestamp::parse("9999-12-31T23:59:59Z").unwrap();
    for (what, extra, expect) in [
        (
            "COMPLETED then WORKING",
            vec![status(TaskState::Working, 6)],
            "after task t-done finished",
        ),
        (
            "an event of the year 9999",
            vec![TaskEvent::UsageRecorded {
                model: None,
                usage: Default::default(),
                at: late,
            }],
            "outside the times",
        ),
    ] {
        let mut commits = done("t-done");
        commits.push((extra, at(6)));
        let file = write("crafted.ndjson", &archive(&[("t-done", commits)]));
        let (ok, said) = import(&dir, &file, &[]);
        assert!(!ok, "{what}: imported");
        assert!(
            said.contains("line 5:") && said.contains(expect),
            "{what}: {said}"
        );
    }
    // A 3 MiB message on a task at work (the API takes 1 MiB a body).
    let open = vec![
        (created("t-open", owner()), at(0)),
        (
            vec![TaskEvent::MessageAppended {
                message: huge,
                at: at(6),
                acted_by: None,
            }],
            at(6),
        ),
    ];
    let (ok, said) = import(
        &dir,
        &write("big.ndjson", &archive(&[("t-open", open)])),
        &[],
    );
    assert!(
        !ok && said.contains("line 4:") && said.contains("past 1048576"),
        "{said}"
    );
    // A message after a cancel.
    let canceled = vec![
        (created("t-cx", owner()), at(0)),
        (vec![TaskEvent::TaskCanceled { at: at(2) }], at(2)),
        (
            vec![TaskEvent::MessageAppended {
                message: Message::user_text("t-cx-m2", "more"),
                at: at(3),
                acted_by: None,
            }],
            at(3),
        ),
    ];
    let file = write("cx.ndjson", &archive(&[("t-cx", canceled)]));
    let (ok, said) = import(&dir, &file, &[]);
    assert!(
        !ok && said.contains("line 5:") && said.contains("TASK_STATE_CANCELED"),
        "{said}"
    );
    // Nothing of any of them was written: the task is as the base archive left it, the
    // canceled one stands as far as its good commits went.
    let server = ServerProcess::sqlite(&dir).await;
    let t = server
        .call("GetTask", json!({"id": "t-done", "historyLength": 10}))
        .await;
    assert_eq!(state_of(&t), "TASK_STATE_COMPLETED", "{t}");
    assert_eq!(
        t["result"]["history"].as_array().map(Vec::len),
        Some(1),
        "{t}"
    );
    let t = server
        .call("GetTask", json!({"id": "t-open", "historyLength": 10}))
        .await;
    assert_eq!(
        t["result"]["history"].as_array().map(Vec::len),
        Some(1),
        "{t}"
    );
    let t = server
        .call("GetTask", json!({"id": "t-cx", "historyLength": 10}))
        .await;
    assert_eq!(state_of(&t), "TASK_STATE_CANCELED", "{t}");
    assert_eq!(
        t["result"]["history"].as_array().map(Vec::len),
        Some(1),
        "{t}"
    );
}

fn shared_task() -> Commits {
    let person = |id: &str, role| Participant {
        id: id.into(),
        kind: ParticipantKind::Human,
        role,
        display_name: String::new(),
    };
    let data = TaskExtensionData {
        name: "shared".into(),
        goal: "work together".into(),
        kind: None,
        description: String::new(),
        acceptance_criteria: vec![],
        participants: vec![person("alice", Role::Admin), person("bob", Role::Watcher)],
        parent_tasks: vec![],
        sub_tasks: vec![],
        plan: None,
        lifecycle: None,
        model: None,
        reasoning_effort: None,
        approve_tools: vec![],
    };
    let mut first = created("t-shared", owner());
    first.push(TaskEvent::ExtensionUpdated {
        data,
        by: None,
        at: at(0),
    });
    vec![(first, at(0)), (vec![status(TaskState::Working, 1)], at(1))]
}

#[tokio::test]
async fn a_participant_cannot_make_themself_admin_of_a_live_task_with_its_export_plus_one_event() {
    let dir = temp("live");
    let (ok, said) = import(
        &dir,
        &write("s.ndjson", &archive(&[("t-shared", shared_task())])),
        &[],
    );
    assert!(ok, "{said}");
    let bob = ParticipantId::parse("bob").unwrap();
    let mut commits = shared_task();
    commits.push((
        vec![TaskEvent::ParticipantRoleChanged {
            participant_id: bob.clone(),
            role: Role::Admin,
            by: Some(bob),
            at: at(2),
        }],
        at(2),
    ));
    let (ok, said) = import(
        &dir,
        &write("p.ndjson", &archive(&[("t-shared", commits)])),
        &[],
    );
    assert!(!ok, "the promotion was imported");
    assert!(
        said.contains("line 6:") && said.contains("only an admin"),
        "{said}"
    );
    let server = ServerProcess::sqlite(&dir).await;
    let t = server.call("GetTask", json!({"id": "t-shared"})).await;
    let participants = &t["result"]["metadata"]
        [taskledger_domain::extensions::harness::METADATA_KEY]["participants"];
    assert_eq!(participants[1]["role"], "watcher", "{t}");
}

#[tokio::test]
async fn a_store_holding_times_no_gate_lets_in_does_not_stop_the_server() {
    // Written to the store directly, as a tampered table would hold it: a task finished in
    // the year 9999 (its expiry once overflowed and aborted the server on the first read).
    let dir = temp("tampered");
    {
        let store = taskledger_infra::SqliteStore::open(&dir).unwrap();
        let late = Timestamp::parse("9999-12-31T23:59:59.999Z").unwrap();
        let mut state = taskledger_domain::task::TaskAggregate::default();
        for (events, recorded) in [
            (created("t-9999", owner()), at(0)),
            (vec![status(TaskState::Completed, 0)], late),
        ] {
            let events: Vec<TaskEvent> = events
                .into_iter()
                .map(|e| match e {
                    TaskEvent::StatusChanged { state, message, .. } => TaskEvent::StatusChanged {
                        state,
                        message,
                        at: late,
                    },
                    e => e,
                })
                .collect();
            let commit = commit_for(TaskId::parse("t-9999").unwrap(), &state, &events, recorded);
            store.append(&commit).await.unwrap();
            state = commit.snapshot;
        }
    }
    let mut server = ServerProcess::sqlite(&dir).await;
    for _ in 0..2 {
        let t = server.call("GetTask", json!({"id": "t-9999"})).await;
        assert_eq!(state_of(&t), "TASK_STATE_COMPLETED", "{t}");
        let l = server.call("ListTasks", json!({})).await;
        assert!(l["result"]["tasks"].is_array(), "{l}");
    }
    let board = server
        .client
        .get(format!(
            "http://127.0.0.1:{}/board/tasks/t-9999",
            server.port
        ))
        .send()
        .await
        .unwrap();
    assert!(board.status().is_success(), "{}", board.status());
    assert!(server.alive(), "the server stopped");
}

/// The most memory a child process held, from `wait4`'s report: what it used at its peak.
fn wait_peak_kib(child: std::process::Child) -> (bool, i64) {
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    // SAFETY: `usage` and `status` are valid for writes; the pid is our own child.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid);
    (
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        usage.ru_maxrss,
    )
}

#[tokio::test]
async fn a_line_of_150_mib_is_refused_without_being_read_whole() {
    let file = temp("long.ndjson");
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
        writeln!(f, "{}", header()).unwrap();
        let chunk = vec![b'x'; 1024 * 1024];
        for _ in 0..150 {
            f.write_all(&chunk).unwrap();
        }
        f.write_all(b"\n").unwrap();
    }
    let dir = temp("long-store");
    let child = Command::new(server_binary())
        .args([
            "--store",
            "sqlite",
            "--data-dir",
            dir.to_str().unwrap(),
            "import",
            "--file",
            file.to_str().unwrap(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (ok, peak_kib) = wait_peak_kib(child);
    assert!(!ok, "a 150 MiB line was imported");
    assert!(
        peak_kib < 100 * 1024,
        "the import held {peak_kib} KiB for a 150 MiB line"
    );
    let (_, said) = import(&dir, &file, &[]);
    assert!(said.contains("line 2: longer than 4194304 bytes"), "{said}");
    std::fs::remove_file(&file).unwrap();
}

#[tokio::test]
async fn an_archive_is_placed_in_one_tenant_and_a_signed_one_is_vouched_for() {
    let bob_of_other = Principal::new("other", "bob").unwrap();
    let text = archive(&[
        ("t-mine", vec![(created("t-mine", owner()), at(0))]),
        ("t-other", vec![(created("t-other", bob_of_other), at(0))]),
    ]);
    let dir = temp("tenant");
    let (ok, said) = import(
        &dir,
        &write("tenants.ndjson", &text),
        &["--tenant", "default"],
    );
    assert!(
        !ok && said.contains("line 4:") && said.contains("tenant other's, not default's"),
        "{said}"
    );
    let file = write(
        "mine.ndjson",
        &archive(&[("t-mine", vec![(created("t-mine", owner()), at(0))])]),
    );
    // Signed: exported by a server with a signing key, imported requiring it.
    let key = temp("key.pem");
    std::fs::write(&key, signing_key_pem()).unwrap();
    let key_s = key.to_str().unwrap();
    let signed_dir = temp("signed");
    let (ok, said) = import(&signed_dir, &file, &[]);
    assert!(ok, "{said}");
    let exported = temp("signed.ndjson");
    let (ok, said) = run(&[
        "--store",
        "sqlite",
        "--data-dir",
        signed_dir.to_str().unwrap(),
        "--push-signing-key-file",
        key_s,
        "export",
        "--all",
        "--out",
        exported.to_str().unwrap(),
    ]);
    assert!(ok, "{said}");
    let signed_text = std::fs::read_to_string(&exported).unwrap();
    assert!(signed_text
        .lines()
        .last()
        .unwrap()
        .starts_with("{\"signature\""));
    let required = ["--push-signing-key-file", key_s, "import", "--file"];
    let import_signed = |dir: &Path, file: &Path| {
        let mut args = vec!["--store", "sqlite", "--data-dir", dir.to_str().unwrap()];
        args.extend_from_slice(&required);
        args.extend_from_slice(&[file.to_str().unwrap(), "--require-signed"]);
        run(&args)
    };
    let (ok, said) = import_signed(&temp("signed-copy"), &exported);
    assert!(ok, "{said}");
    // The archive is read once: what is imported is what was verified, however the path
    // changes between the two (a pipe, which can be read only once, shows it).
    let pipe = temp("signed.fifo");
    let made = Command::new("mkfifo").arg(&pipe).status().unwrap();
    assert!(made.success());
    let writer = {
        let (pipe, text) = (pipe.clone(), signed_text.clone());
        std::thread::spawn(move || std::fs::write(pipe, text))
    };
    let (ok, said) = import_signed(&temp("signed-pipe"), &pipe);
    writer.join().unwrap().unwrap();
    assert!(ok, "a signed archive read once: {said}");
    // Unsigned, or changed by a byte: refused, nothing written.
    let target = temp("refused");
    let (ok, said) = import_signed(&target, &file);
    assert!(!ok && said.contains("no signature line"), "{said}");
    let tampered = write(
        "tampered.ndjson",
        &signed_text.replacen("hello", "hellO", 1),
    );
    let (ok, said) = import_signed(&target, &tampered);
    assert!(
        !ok && said.contains("not the ones its signature vouches for"),
        "{said}"
    );
    let server = ServerProcess::sqlite(&target).await;
    let l = server.call("ListTasks", json!({})).await;
    assert_eq!(l["result"]["totalSize"], 0, "{l}");
}

fn signing_key_pem() -> String {
    use p256::pkcs8::EncodePrivateKey;
    p256::SecretKey::from_slice(&[9u8; 32])
        .unwrap()
        .to_pkcs8_pem(p256::pkcs8::LineEnding::LF)
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn push_secrets_in_an_archive_are_stored_sealed() {
    let mut first = created("t-push", owner());
    first.push(TaskEvent::PushConfigSet {
        config: PushConfigSpec {
            id: "p-1".into(),
            url: "https://hooks.example.com/a".into(),
            token: Some("plain-token-7731".into()),
            scheme: Some("Bearer".into()),
            credentials: Some("plain-credentials-7731".into()),
            owner: None,
            protocol: PushProtocol::V1,
        },
        at: at(0),
    });
    let dir = temp("sealed");
    let (ok, said) = import(
        &dir,
        &write("push.ndjson", &archive(&[("t-push", vec![(first, at(0))])])),
        &[],
    );
    assert!(ok, "{said}");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("plain-token-7731") && !text.contains("plain-credentials-7731"));
    }
    let server = ServerProcess::sqlite(&dir).await;
    let c = server
        .call(
            "GetTaskPushNotificationConfig",
            json!({"taskId": "t-push", "id": "p-1"}),
        )
        .await;
    assert_eq!(
        c["result"]["token"], "plain-token-7731",
        "opened for its owner: {c}"
    );
}

#[test]
fn export_out_replaces_a_looser_file_or_a_link_and_never_writes_through() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp("export-src");
    let (ok, said) = import(
        &dir,
        &write(
            "e.ndjson",
            &archive(&[("t-e", vec![(created("t-e", owner()), at(0))])]),
        ),
        &[],
    );
    assert!(ok, "{said}");
    let export_to = |out: &Path| {
        run(&[
            "--store",
            "sqlite",
            "--data-dir",
            dir.to_str().unwrap(),
            "export",
            "--all",
            "--out",
            out.to_str().unwrap(),
        ])
    };
    let loose = temp("loose.ndjson");
    std::fs::write(&loose, "old").unwrap();
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(export_to(&loose).0);
    let mode = std::fs::metadata(&loose).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the export is private");
    assert!(std::fs::read_to_string(&loose).unwrap().contains("t-e"));
    let target = temp("victim");
    std::fs::write(&target, "do not touch").unwrap();
    let link = temp("link.ndjson");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert!(export_to(&link).0);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "do not touch");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_file());
}
