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

/// The events read, or the error that stopped the read (last).
fn read(lines: Vec<String>) -> Vec<Result<ArchivedEvent, ArchiveError>> {
    let mut r = Reader::new(lines.into_iter().enumerate().map(|(i, l)| (i + 1, l)));
    std::iter::from_fn(|| r.next_event()).collect()
}

fn error(lines: Vec<String>) -> ArchiveError {
    read(lines)
        .into_iter()
        .find_map(Result::err)
        .expect("the read stops at a bad line")
}

#[test]
fn written_tasks_read_back_event_by_event_with_their_times() {
    let events = read(archive(&["t-1", "t-2"]));
    let original = stored("t-1");
    assert_eq!(events.len(), 2 * original.len());
    for (i, (e, o)) in events.iter().zip(&original).enumerate() {
        let e = e.as_ref().unwrap();
        assert_eq!(e.task_id.as_str(), "t-1");
        assert_eq!(e.line, 2 + i);
        assert_eq!(e.seq, o.seq);
        assert_eq!(e.event, o.decode().unwrap());
        assert_eq!(e.recorded_at, o.recorded_at);
    }
    let second = events[original.len()].as_ref().unwrap();
    assert_eq!((second.task_id.as_str(), second.seq), ("t-2", 1));
    // The same lines written again are the same bytes.
    let t1 = TaskId::parse("t-1").unwrap();
    let again: Vec<String> = std::iter::once(header())
        .chain(original.iter().map(|e| line(&t1, e)))
        .collect();
    assert_eq!(again, archive(&["t-1"]));
}

#[test]
fn a_signature_line_comes_last_and_vouches_for_the_bytes_before_it() {
    let lines = archive(&["t-1", "t-2"]);
    let mut digest = Digest::default();
    digest.header(&lines[0]);
    for l in &lines[1..] {
        let task = if l.contains("\"taskId\":\"t-1\"") {
            "t-1"
        } else {
            "t-2"
        };
        digest.event(task, l);
    }
    let statement = digest.statement();
    assert_eq!(
        (statement.tasks, statement.events),
        (2, lines.len() as u64 - 1)
    );
    let signed = Signature {
        protected: "p".into(),
        statement: statement.clone(),
        signature: "s".into(),
    };
    let mut with_signature = lines.clone();
    with_signature.push(signature_line(signed.clone()));
    let mut r = Reader::new(
        with_signature
            .clone()
            .into_iter()
            .enumerate()
            .map(|(i, l)| (i + 1, l)),
    );
    while let Some(e) = r.next_event() {
        e.unwrap();
    }
    assert_eq!(r.signature(), Some(&signed));
    assert_eq!(
        r.statement(),
        statement,
        "the reader hashes what the writer hashed"
    );
    // Anything after it is refused.
    with_signature.push(lines[1].clone());
    let e = error(with_signature.clone());
    assert_eq!(e.line, with_signature.len());
    assert!(e.reason.contains("after the signature"), "{e}");
    // A malformed one too.
    let mut bad_signature = lines;
    bad_signature.push(r#"{"signature":{"protected":1}}"#.into());
    assert!(error(bad_signature).reason.contains("not a signature line"));
}

#[test]
fn a_newer_or_foreign_header_stops_the_read_at_line_1() {
    let mut lines = archive(&["t-1"]);
    lines[0] = format!(
        r#"{{"format":"{FORMAT}","version":{}}}"#,
        FORMAT_VERSION + 1
    );
    let e = error(lines.clone());
    assert_eq!(e.line, 1);
    assert!(e.reason.contains("version 2"), "{e}");
    lines[0] = r#"{"format":"other","version":1}"#.into();
    assert_eq!(error(lines).line, 1);
    assert_eq!(error(vec![]).line, 1);
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
        assert!(
            out[..at_line - 2].iter().all(Result::is_ok),
            "{what}: the lines before it read"
        );
        let e = out
            .last()
            .cloned()
            .and_then(Result::err)
            .unwrap_or_else(|| panic!("{what}: read as good"));
        assert_eq!(e.line, at_line, "{what}: {e}");
        assert_eq!(out.len(), at_line - 1, "{what}: nothing read after it");
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
    assert!(read(lines.clone()).iter().all(Result::is_ok));
    lines[1] = pad(&lines[1], MAX_LINE_BYTES + 1);
    let e = error(lines.clone());
    assert_eq!(e.line, 2);
    assert!(e.reason.contains("longer than"), "{e}");
    // A line of nothing but blanks is no exception.
    lines[1] = " ".repeat(MAX_LINE_BYTES + 1);
    let e = error(lines);
    assert_eq!(e.line, 2);
    assert!(e.reason.contains("longer than"), "{e}");
}

#[test]
fn a_task_whose_events_do_not_create_it_is_refused_at_its_first_line() {
    let mut lines = archive(&["t-1"]);
    // drop the creation's first event: numbering breaks at once
    lines.remove(1);
    let e = error(lines);
    assert_eq!(e.line, 2, "{e}");
    // a creation of another task under this one's id
    let mut lines = archive(&["t-1"]);
    lines[1] = lines[1].replacen("\"task_id\":\"t-1\"", "\"task_id\":\"t-9\"", 1);
    let e = error(lines);
    assert!(e.reason.contains("create task t-9"), "{e}");
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
