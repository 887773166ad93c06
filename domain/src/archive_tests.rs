//! The archive format: written lines read back as the same task; every kind of bad line
//! stops the read at its number.

use super::*;
use crate::ids::{ContextId, Principal};
use crate::task::{CreateTask, TaskAggregate, TaskCommand};
use crate::wire::{Message, TaskState};

fn at(s: i64) -> Timestamp {
    Timestamp::from_unix_nanos(1_800_000_000_000_000_000 + s * 1_000_000_007)
}

/// A task's stored events: created (three events, one commit), then completed.
fn stored(id: &str) -> Vec<StoredEvent> {
    let mut s = TaskAggregate::default();
    let mut out = Vec::new();
    let created = s
        .decide(TaskCommand::CreateTask(CreateTask {
            task_id: TaskId::parse(id).unwrap(),
            context_id: ContextId::parse("c-1").unwrap(),
            owner: Principal::new("acme", "alice").unwrap(),
            message: Message::user_text("m-1", "hello"),
            at: at(0),
            extension: None,
            awaiting_assignee: None,
        }))
        .unwrap();
    for e in &created {
        s.apply_event(e);
        out.push(StoredEvent::new(s.version, e, at(0)));
    }
    let done = s
        .decide(TaskCommand::ChangeStatus {
            state: TaskState::Completed,
            message: None,
            at: at(1),
        })
        .unwrap();
    for e in &done {
        s.apply_event(e);
        out.push(StoredEvent::new(s.version, e, at(1)));
    }
    out
}

fn archive(tasks: &[&str]) -> Vec<String> {
    let mut lines = vec![header()];
    for id in tasks {
        let task_id = TaskId::parse(*id).unwrap();
        lines.extend(stored(id).iter().map(|e| line(&task_id, e)));
    }
    lines
}

fn read(lines: Vec<String>) -> Vec<Result<ArchivedTask, ArchiveError>> {
    let mut r = Reader::new(lines.into_iter().enumerate().map(|(i, l)| (i + 1, l)));
    std::iter::from_fn(|| r.next_task()).collect()
}

#[test]
fn written_tasks_read_back_whole_with_their_commits() {
    let tasks = read(archive(&["t-1", "t-2"]));
    assert_eq!(tasks.len(), 2);
    let t1 = tasks[0].as_ref().unwrap();
    assert_eq!(t1.task_id.as_str(), "t-1");
    assert_eq!(t1.first_line, 2);
    let original = stored("t-1");
    assert_eq!(t1.events.len(), original.len());
    for ((e, recorded), o) in t1.events.iter().zip(&original) {
        assert_eq!(*e, o.decode().unwrap());
        assert_eq!(*recorded, o.recorded_at);
    }
    // The creation's events were one commit, the completion another.
    let commits = t1.commits_after(0);
    assert_eq!(commits.len(), 2);
    assert_eq!(commits[0].1, at(0));
    assert_eq!(commits[1].0.len(), original.len() - commits[0].0.len());
    assert_eq!(t1.commits_after(original.len() as u64).len(), 0);
    assert_eq!(tasks[1].as_ref().unwrap().first_line, 2 + original.len());
    // The same lines written again are the same bytes.
    let again: Vec<String> = std::iter::once(header())
        .chain(original.iter().map(|e| line(&t1.task_id, e)))
        .collect();
    assert_eq!(again, archive(&["t-1"]));
}

#[test]
fn a_newer_or_foreign_header_stops_the_read_at_line_1() {
    let mut lines = archive(&["t-1"]);
    lines[0] = format!(
        r#"{{"format":"{FORMAT}","version":{}}}"#,
        FORMAT_VERSION + 1
    );
    let e = read(lines.clone())[0].clone().unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.reason.contains("version 2"), "{e}");
    lines[0] = r#"{"format":"other","version":1}"#.into();
    assert_eq!(read(lines)[0].clone().unwrap_err().line, 1);
    assert_eq!(read(vec![])[0].clone().unwrap_err().line, 1);
}

#[test]
fn the_first_bad_line_stops_the_read_with_its_number() {
    let good = archive(&["t-1", "t-2"]);
    let n = stored("t-1").len();
    // the second task's second event is broken in each way in turn
    let at_line = 2 + n + 1;
    let broken = |edit: &dyn Fn(&str) -> String| {
        let mut lines = good.clone();
        lines[at_line - 1] = edit(&lines[at_line - 1]);
        read(lines)
    };
    for (what, edit) in [
        (
            "not JSON",
            &(|_: &str| "{".to_string()) as &dyn Fn(&str) -> String,
        ),
        ("a skipped event", &|l: &str| {
            l.replace("\"seq\":2", "\"seq\":3")
        }),
        ("an unknown event", &|l: &str| {
            l.replace("\"type\":\"", "\"type\":\"Nope")
        }),
        ("a bad time", &|l: &str| {
            l.replace("\"recordedAt\":\"", "\"recordedAt\":\"x")
        }),
        ("an unknown field", &|l: &str| {
            l.replacen('{', "{\"extra\":1,", 1)
        }),
    ] {
        let out = broken(edit);
        assert!(out[0].is_ok(), "{what}: the first task is whole");
        let e = out[1]
            .clone()
            .err()
            .unwrap_or_else(|| panic!("{what}: read as good"));
        assert_eq!(e.line, at_line, "{what}: {e}");
    }
}

#[test]
fn a_line_at_its_limit_is_read_and_one_past_it_is_refused() {
    let mut lines = archive(&["t-1"]);
    let pad = |l: &str, to: usize| {
        let mut l = l.to_string();
        l.push_str(&" ".repeat(to - l.len()));
        l
    };
    lines[1] = pad(&lines[1], MAX_LINE_BYTES);
    assert!(read(lines.clone())[0].is_ok());
    lines[1] = pad(&lines[1], MAX_LINE_BYTES + 1);
    let e = read(lines)[0].clone().unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.reason.contains("longer than"), "{e}");
}

#[test]
fn a_task_whose_events_do_not_create_it_is_refused_at_its_first_line() {
    let mut lines = archive(&["t-1"]);
    // drop the creation's first event: numbering breaks at once
    lines.remove(1);
    let e = read(lines)[0].clone().unwrap_err();
    assert_eq!(e.line, 2, "{e}");
}

#[test]
fn object_keys_keep_names_inside_their_tenant_prefix() {
    let id = TaskId::parse("t-1.a_b").unwrap();
    assert_eq!(object_key("acme", &id), "tasks/acme/t-1.a_b.ndjson");
    // A tenant cannot leave its prefix or make one of its own.
    assert_eq!(object_key("a/b", &id), "tasks/a%2Fb/t-1.a_b.ndjson");
    assert_eq!(object_key("..", &id), "tasks/%2E%2E/t-1.a_b.ndjson");
    assert_eq!(object_key("é ?", &id), "tasks/%C3%A9%20%3F/t-1.a_b.ndjson");
    let dots = TaskId::parse("..").unwrap();
    assert_eq!(object_key("acme", &dots), "tasks/acme/%2E%2E.ndjson");
}
