//! No panic is reachable from stored data: a task's events as a store or an archive may hold
//! them — every time at the ends of the range, every number at its largest — folded, projected
//! and read by every pure read path (replay, GetTask's assembly, the first-commit answer, the
//! stream and push updates, the 1.1 timeline, the board's turns, retention and the reaper's
//! rules). Each test mutates a realistic task's JSON, as an attacker who writes the store or
//! crafts an archive would, and runs it all; proptest reports any panic as a failure.

use proptest::prelude::*;
use serde_json::{json, Value};

use crate::ids::{ContextId, HistoryLength, Principal, TaskId};
use crate::projection;
use crate::retention::Retention;
use crate::task::stored::{EventPayload, StoredEvent};
use crate::task::{CreateTask, TaskAggregate, TaskCommand, TaskEvent};
use crate::time::Timestamp;
use crate::wire::{Artifact, Message, Part, TaskState};

fn at(s: i64) -> Timestamp {
    Timestamp::parse("2026-01-01T00:00:00Z")
        .unwrap()
        .plus_secs(s)
}

fn owner() -> Principal {
    Principal::new("acme", "alice").unwrap()
}

/// A task that went through most of what a task goes through, decided by the aggregate.
fn realistic() -> Vec<TaskEvent> {
    let mut state = TaskAggregate::default();
    let mut all = Vec::new();
    let mut run = |state: &mut TaskAggregate, c: TaskCommand| {
        if let Ok(events) = state.decide(c) {
            for e in &events {
                state.apply_event(e);
            }
            all.extend(events);
        }
    };
    run(
        &mut state,
        TaskCommand::CreateTask(CreateTask {
            task_id: TaskId::parse("t-1").unwrap(),
            context_id: ContextId::parse("c-1").unwrap(),
            owner: owner(),
            message: Message::user_text("m-1", "hello"),
            at: at(0),
            extension: None,
            awaiting_assignee: None,
        }),
    );
    let artifact = |text: &str| Artifact {
        artifact_id: "a-1".into(),
        name: Some("out".into()),
        description: None,
        parts: vec![Part::text(text)],
        metadata: None,
        extensions: Vec::new(),
        start_generation: None,
        end_generation: None,
    };
    for c in [
        TaskCommand::ChangeStatus {
            state: TaskState::Working,
            message: None,
            at: at(1),
        },
        TaskCommand::LoadSkill {
            name: "s".into(),
            at: at(2),
        },
        TaskCommand::RecordUsage {
            model: Some("m".into()),
            usage: crate::extensions::usage::Usage {
                input_tokens: 10,
                output_tokens: 5,
                reasoning_tokens: 1,
                cached_input_tokens: 2,
                total_tokens: 16,
            },
            at: at(3),
        },
        TaskCommand::AddArtifact {
            artifact: artifact("part one"),
            append: false,
            last_chunk: false,
            at: at(4),
        },
        TaskCommand::AddArtifact {
            artifact: artifact("part two"),
            append: true,
            last_chunk: true,
            at: at(5),
        },
        TaskCommand::AppendAgentMessage {
            message: Message::agent_text("m-2", "working on it"),
            at: at(6),
        },
        TaskCommand::ContinueAgentWork {
            after: 3,
            steps_taken: 4,
            at: at(7),
        },
        TaskCommand::FinishAgentTurn {
            work_seq: 3,
            at: at(8),
        },
        TaskCommand::ChangeStatus {
            state: TaskState::Completed,
            message: Some(Message::agent_text("m-3", "done")),
            at: at(9),
        },
    ] {
        run(&mut state, c);
    }
    all
}

/// Times at and near the ends of what a stored event may hold.
fn extreme_time() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        Just(Some("9999-12-31T23:59:59.999999999Z".to_string())),
        Just(Some("9999-12-31T00:00:00Z".to_string())),
        Just(Some("0000-01-01T00:00:00Z".to_string())),
        Just(Some("1677-09-21T00:12:43.145224191Z".to_string())),
        Just(Some("2262-04-11T23:47:16.854775808Z".to_string())),
        Just(Some("1970-01-01T00:00:00Z".to_string())),
        Just(Some("2025-12-31T23:59:59Z".to_string())),
    ]
}

/// Numbers at and near the ends of the integer types stored fields use.
fn extreme_number() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        Just(Some(json!(0))),
        Just(Some(json!(1))),
        Just(Some(json!(u32::MAX))),
        Just(Some(json!(i64::MAX))),
        Just(Some(json!(u64::MAX))),
        Just(Some(json!(u64::MAX - 1))),
    ]
}

/// Replaces, in order, each timestamp string and each number of `v` with the next choice
/// (`None`: left as it is).
fn mutate(
    v: &mut Value,
    times: &mut impl Iterator<Item = Option<String>>,
    numbers: &mut impl Iterator<Item = Option<Value>>,
) {
    match v {
        Value::String(s) if Timestamp::parse(s).is_ok() => {
            if let Some(Some(t)) = times.next() {
                *s = t;
            }
        }
        Value::Number(_) => {
            if let Some(Some(n)) = numbers.next() {
                *v = n;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| mutate(x, times, numbers)),
        Value::Object(o) => o.values_mut().for_each(|x| mutate(x, times, numbers)),
        _ => {}
    }
}

/// Every pure read path over the stored events.
fn read_everything(stored: &[StoredEvent], now: Timestamp) {
    let events: Vec<TaskEvent> = stored.iter().filter_map(|e| e.decode().ok()).collect();
    for h in [
        HistoryLength::All,
        HistoryLength::Last(0),
        HistoryLength::Last(2),
    ] {
        let _ = projection::replay(&events, h);
        let _ = projection::first_commit_view(&events, h, true);
        let _ = projection::timeline::timeline(stored, h);
    }
    let _ = projection::push::updates(&TaskAggregate::default(), &events);
    let mut state = TaskAggregate::default();
    for e in &events {
        let _ = projection::stream::recorded(&state, e);
        let _ = projection::push::update_of(&state, e);
        state.apply_event(e);
    }
    for e in stored {
        let _ = projection::stream::item("t-1", "c-1", e);
        let _ = projection::stream::revoked(e);
    }
    let numbered: Vec<_> = stored
        .iter()
        .filter_map(|e| Some((e.seq, e.decode().ok()?, e.recorded_at)))
        .collect();
    let _ = projection::work::turns(&numbered);
    if let Ok(state) = crate::ports::replay_state(stored) {
        if let Some(head) = state.head() {
            for retention in [Retention::default(), Retention::forever()] {
                let _ = retention.expires_at(head);
                let _ = retention.is_expired(head, now);
                let _ = retention.finished_before("acme", now);
            }
            let _ = serde_json::to_string(head);
            let _ = head.shared_with();
            let _ = projection::assemble(head, None, None);
        }
        for c in [
            TaskCommand::FailStalledTask {
                deadline_secs: u64::MAX,
                at: now,
            },
            TaskCommand::FinishAgentTurn {
                work_seq: u64::MAX,
                at: now,
            },
            TaskCommand::AppendAgentMessage {
                message: Message::agent_text("m-9", "late"),
                at: now,
            },
            TaskCommand::RecordUsage {
                model: Some("m".into()),
                usage: crate::extensions::usage::Usage {
                    input_tokens: u64::MAX,
                    output_tokens: u64::MAX,
                    reasoning_tokens: u64::MAX,
                    cached_input_tokens: u64::MAX,
                    total_tokens: u64::MAX,
                },
                at: now,
            },
        ] {
            if let Ok(events) = state.decide(c) {
                let mut s = state.clone();
                for e in &events {
                    s.apply_event(e);
                }
            }
        }
    }
}

fn stored(events: &[(Value, String)]) -> Vec<StoredEvent> {
    events
        .iter()
        .enumerate()
        .filter_map(|(i, (payload, recorded))| {
            let event: TaskEvent = serde_json::from_value(payload.clone()).ok()?;
            Some(StoredEvent {
                seq: i as u64 + 1,
                event_type: event.name().to_string(),
                event_version: crate::task::EVENT_VERSION.to_string(),
                payload: EventPayload::from(payload.clone()),
                recorded_at: Timestamp::parse(recorded).unwrap_or(Timestamp::MAX),
                update: None,
            })
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn no_read_path_panics_on_extreme_stored_times_and_numbers(
        times in proptest::collection::vec(extreme_time(), 200),
        numbers in proptest::collection::vec(extreme_number(), 200),
        recorded in proptest::collection::vec(extreme_time(), 16),
        now in extreme_time(),
    ) {
        let mut times = times.into_iter().cycle();
        let mut numbers = numbers.into_iter().cycle();
        let mut recorded = recorded.into_iter().cycle();
        let events: Vec<(Value, String)> = realistic()
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let mut v = serde_json::to_value(e).unwrap();
                mutate(&mut v, &mut times, &mut numbers);
                let r = recorded
                    .next()
                    .flatten()
                    .unwrap_or_else(|| at(i as i64).to_rfc3339_nanos());
                (v, r)
            })
            .collect();
        let now = now.and_then(|n| Timestamp::parse(&n).ok()).unwrap_or_else(Timestamp::now);
        read_everything(&stored(&events), now);
    }
}

#[test]
fn a_task_finished_in_the_year_9999_expires_at_the_end_of_time_without_a_panic() {
    let mut events: Vec<(Value, String)> = realistic()
        .iter()
        .map(|e| (serde_json::to_value(e).unwrap(), at(0).to_rfc3339_nanos()))
        .collect();
    let last = events.last_mut().unwrap();
    let late = "9999-12-31T23:59:59.999999999Z";
    mutate(
        &mut last.0,
        &mut std::iter::repeat(Some(late.to_string())),
        &mut std::iter::repeat(None),
    );
    let stored = stored(&events);
    let state = crate::ports::replay_state(&stored).unwrap();
    let head = state.head().unwrap();
    assert_eq!(head.status.state, TaskState::Completed);
    assert_eq!(Retention::default().expires_at(head), Some(Timestamp::MAX));
    assert!(!Retention::default().is_expired(head, Timestamp::now()));
    read_everything(&stored, Timestamp::now());
}
