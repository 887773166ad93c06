//! The deadline reaper's candidates: the tasks at work (SUBMITTED or WORKING) whose status is
//! older than a time, oldest first, page by page; never a task waiting or finished.

use std::sync::Arc;

use taskledger_domain::ports::AtWork;
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::TaskState;

use super::{alice, create_task_at, set_state, Store};

fn at(s: u32) -> Timestamp {
    Timestamp::parse(&format!("2026-01-01T00:00:{s:02}Z")).expect("time")
}

fn ids(found: &[AtWork]) -> Vec<&str> {
    found.iter().map(|a| a.task_id.as_str()).collect()
}

pub async fn tasks_at_work_are_found_by_the_age_of_their_status<S: Store>(store: Arc<S>) {
    // One task in each state a reaper must tell apart, its status at 1..=6 s.
    let cases = [
        ("hk-submitted", None, 1),
        ("hk-working", Some(TaskState::Working), 2),
        ("hk-input", Some(TaskState::InputRequired), 3),
        ("hk-done", Some(TaskState::Completed), 4),
        ("hk-failed", Some(TaskState::Failed), 5),
        ("hk-working-late", Some(TaskState::Working), 6),
    ];
    for (id, state, s) in cases {
        let created = if state.is_some() { s - 1 } else { s };
        let task = create_task_at(store.as_ref(), id, "c-hk", &alice(), at(created)).await;
        if let Some(state) = state {
            set_state(store.as_ref(), &task, state, at(s)).await;
        }
    }
    let all = store.stalled(at(59), None, 10).await.expect("stalled");
    assert_eq!(ids(&all), ["hk-submitted", "hk-working", "hk-working-late"]);
    assert_eq!(all[0].status_nanos, at(1).unix_nanos());
    // Strictly older than `before`: the late one's status is at 6 s.
    let early = store.stalled(at(6), None, 10).await.expect("stalled");
    assert_eq!(ids(&early), ["hk-submitted", "hk-working"]);
    assert!(store
        .stalled(at(1), None, 10)
        .await
        .expect("stalled")
        .is_empty());
    // Page by page, after the last one read.
    let first = store.stalled(at(59), None, 2).await.expect("stalled");
    assert_eq!(ids(&first), ["hk-submitted", "hk-working"]);
    let rest = store
        .stalled(at(59), first.last(), 2)
        .await
        .expect("stalled");
    assert_eq!(ids(&rest), ["hk-working-late"]);
    assert!(store
        .stalled(at(59), rest.last(), 2)
        .await
        .expect("stalled")
        .is_empty());
    // A task that finishes leaves the candidates.
    let late = all[2].task_id.clone();
    set_state(store.as_ref(), &late, TaskState::Completed, at(7)).await;
    let after = store.stalled(at(59), None, 10).await.expect("stalled");
    assert_eq!(ids(&after), ["hk-submitted", "hk-working"]);
}
