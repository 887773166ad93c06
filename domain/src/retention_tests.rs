//! Retention: periods parse at and past their bounds; a finished task expires at its terminal
//! time plus its tenant's period, a task at work or waiting never does.

use super::*;
use crate::ids::{ContextId, Principal, TaskId};
use crate::task::{CreateTask, TaskAggregate, TaskCommand};
use crate::wire::{Message, TaskState};

fn at(s: i64) -> Timestamp {
    Timestamp::from_unix_nanos(1_800_000_000_000_000_000 + s * 1_000_000_000)
}

fn head(tenant: &str, state: Option<TaskState>) -> TaskHead {
    let mut s = TaskAggregate::default();
    let mut events = s
        .decide(TaskCommand::CreateTask(CreateTask {
            task_id: TaskId::parse("t-1").unwrap(),
            context_id: ContextId::parse("c-1").unwrap(),
            owner: Principal::new(tenant, "alice").unwrap(),
            message: Message::user_text("m-1", "hi"),
            at: at(0),
            extension: None,
            awaiting_assignee: None,
        }))
        .unwrap();
    for e in &events {
        s.apply_event(e);
    }
    if let Some(state) = state {
        events = s
            .decide(TaskCommand::ChangeStatus {
                state,
                message: None,
                at: at(100),
            })
            .unwrap();
        for e in &events {
            s.apply_event(e);
        }
    }
    s.head.unwrap()
}

#[test]
fn periods_parse_with_units_and_zero_is_forever() {
    assert_eq!(Period::parse("90d").unwrap().secs(), Some(90 * 86_400));
    assert_eq!(Period::parse("12h").unwrap().secs(), Some(43_200));
    assert_eq!(Period::parse("30m").unwrap().secs(), Some(1_800));
    assert_eq!(Period::parse("45s").unwrap().secs(), Some(45));
    assert_eq!(Period::parse(" 7 ").unwrap().secs(), Some(7));
    assert_eq!(Period::parse("0").unwrap(), Period::FOREVER);
    assert_eq!(Period::parse("0d").unwrap(), Period::FOREVER);
    for bad in ["", "-1", "1.5d", "d", "3w", "ten", "1 d"] {
        assert!(
            matches!(Period::parse(bad), Err(RetentionError::NotAPeriod(_))),
            "{bad:?}"
        );
    }
}

#[test]
fn a_period_at_its_maximum_is_kept_and_one_past_it_is_refused() {
    let max = MAX_RETENTION_SECS.to_string();
    assert_eq!(
        Period::parse(&max).unwrap().secs(),
        Some(MAX_RETENTION_SECS)
    );
    assert_eq!(
        Period::parse("3650d").unwrap().secs(),
        Some(MAX_RETENTION_SECS)
    );
    let past = (MAX_RETENTION_SECS + 1).to_string();
    assert!(matches!(
        Period::parse(&past),
        Err(RetentionError::TooLong { .. })
    ));
    assert!(matches!(
        Period::parse("99999999999999999999d"),
        Err(RetentionError::TooLong { .. })
    ));
}

#[test]
fn tenants_override_the_default() {
    let r = Retention::parse("90d", "acme=1h, beta=0").unwrap();
    assert_eq!(r.period("acme").secs(), Some(3_600));
    assert_eq!(r.period("beta"), Period::FOREVER);
    assert_eq!(r.period("other").secs(), Some(90 * 86_400));
    assert!(!r.is_forever());
    assert!(Retention::parse("0", "a=0").unwrap().is_forever());
    for bad in ["acme", "=1h", "acme=soon"] {
        assert!(Retention::parse("90d", bad).is_err(), "{bad:?}");
    }
}

#[test]
fn overrides_are_kept_up_to_their_limit_and_refused_past_it() {
    let list = |n: usize| {
        (0..n)
            .map(|i| format!("t{i}=1d"))
            .collect::<Vec<_>>()
            .join(",")
    };
    assert!(Retention::parse("1d", &list(MAX_TENANT_OVERRIDES)).is_ok());
    assert_eq!(
        Retention::parse("1d", &list(MAX_TENANT_OVERRIDES + 1)),
        Err(RetentionError::TooManyOverrides(MAX_TENANT_OVERRIDES + 1))
    );
}

#[test]
fn a_finished_task_expires_at_its_terminal_time_plus_its_tenants_period() {
    let r = Retention::parse("60s", "keep=0").unwrap();
    let done = head("acme", Some(TaskState::Completed));
    assert_eq!(r.expires_at(&done), Some(at(160)));
    assert!(!r.is_expired(&done, at(159)));
    assert!(r.is_expired(&done, at(160)));
    assert_eq!(r.finished_before("acme", at(160)), Some(at(100)));
    // kept forever by its tenant
    assert_eq!(r.expires_at(&head("keep", Some(TaskState::Failed))), None);
    // at work or waiting: never
    for state in [
        None,
        Some(TaskState::Working),
        Some(TaskState::InputRequired),
    ] {
        assert_eq!(r.expires_at(&head("acme", state)), None, "{state:?}");
    }
}
