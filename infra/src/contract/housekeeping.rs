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

pub async fn finished_tasks_past_their_expiry_are_neither_listed_nor_counted<S: Store>(
    store: Arc<S>,
) {
    use taskledger_domain::ids::HistoryLength;
    use taskledger_domain::ids::PageSize;
    use taskledger_domain::ports::{ListQuery, ListScope, ViewOptions};
    use taskledger_domain::retention::Retention;
    // Finished at 10 s and 50 s; one at work since 10 s; one waiting since 12 s.
    let cases = [
        ("ex-old-done", TaskState::Completed, 10),
        ("ex-new-done", TaskState::Failed, 50),
        ("ex-old-working", TaskState::Working, 10),
        ("ex-old-waiting", TaskState::InputRequired, 12),
    ];
    for (id, state, s) in cases {
        let task = create_task_at(store.as_ref(), id, "c-ex", &alice(), at(s - 1)).await;
        set_state(store.as_ref(), &task, state, at(s)).await;
    }
    // A 30 s retention at 40 s: finished at or before 10 s is past its expiry.
    let retention = Retention::parse("30s", "").expect("retention");
    let now = at(40);
    let cutoff = retention.finished_before("acme", now);
    assert_eq!(cutoff, Some(at(10)));
    let query = |state: Option<TaskState>, context: bool| ListQuery {
        scope: ListScope::All,
        context_id: context.then(|| taskledger_domain::ids::ContextId::parse("c-ex").unwrap()),
        state,
        status_after: None,
        finished_before: cutoff,
        after: None,
        page_size: PageSize::parse(Some(50)).expect("size"),
        view: ViewOptions::exact(HistoryLength::All, false),
    };
    for context in [false, true] {
        let page = store
            .list(&alice(), &query(None, context))
            .await
            .expect("list");
        let mut listed: Vec<&str> = page.tasks.iter().map(|v| v.head.id.as_str()).collect();
        listed.sort();
        assert_eq!(
            listed,
            ["ex-new-done", "ex-old-waiting", "ex-old-working"],
            "context {context}"
        );
        assert_eq!(page.total_size, 3, "context {context}");
        let done = store
            .list(&alice(), &query(Some(TaskState::Completed), context))
            .await
            .expect("list");
        assert!(
            done.tasks.is_empty() && done.total_size == 0,
            "context {context}"
        );
        let ctx = context.then(|| taskledger_domain::ids::ContextId::parse("c-ex").unwrap());
        let counts = store
            .count_by_state(&alice(), ListScope::All, ctx.as_ref(), cutoff)
            .await
            .expect("counts");
        assert_eq!(
            counts,
            [
                (TaskState::Working, 1),
                (TaskState::Failed, 1),
                (TaskState::InputRequired, 1)
            ],
            "context {context}"
        );
    }
    // Without a cutoff everything is there.
    let all = store
        .count_by_state(&alice(), ListScope::All, None, None)
        .await
        .expect("counts");
    assert_eq!(all.iter().map(|(_, n)| n).sum::<u64>(), 4);
    // A store that deletes expired tasks itself deletes only those.
    let purged = store
        .purge_expired(&retention, now, 10)
        .await
        .expect("purge");
    for id in &purged {
        assert_eq!(id.as_str(), "ex-old-done");
        assert!(store.load(id).await.expect("load").is_none());
    }
    let kept = taskledger_domain::ids::TaskId::parse("ex-new-done").unwrap();
    assert!(store.load(&kept).await.expect("load").is_some());
    assert!(store
        .purge_expired(&Retention::forever(), now, 10)
        .await
        .expect("purge")
        .is_empty());
}
