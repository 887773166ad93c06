//! The ListTasks cases of the storage contract: order, paging, each filter, and every
//! combination of the filters with paging and totalSize.

use std::collections::HashSet;
use std::sync::Arc;

use taskledger_domain::ids::{ContextId, HistoryLength, PageSize, TaskId};
use taskledger_domain::ports::{ListQuery, ViewOptions};
use taskledger_domain::task::TaskCommand;
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Message, TaskState};

use super::{alice, bob, create_task_at, run, set_state, Store};

pub async fn list_orders_pages_and_filters<S: Store>(store: Arc<S>) {
    let base = Timestamp::parse("2026-05-01T00:00:00Z").expect("ts");
    // seven tasks; two share a status timestamp to exercise the id tiebreak
    let stamps = [0, 10, 20, 20, 30, 40, 50];
    for (i, ms) in stamps.iter().enumerate() {
        let ctx = if i % 2 == 0 { "even" } else { "odd" };
        create_task_at(
            &*store,
            &format!("t-list-{i}"),
            ctx,
            &alice(),
            base.plus_millis(*ms),
        )
        .await;
    }
    create_task_at(&*store, "t-list-bob", "even", &bob(), base).await;
    // finish one
    let done = TaskId::parse("t-list-6").expect("id");
    set_state(&*store, &done, TaskState::Completed, base.plus_millis(60)).await;

    let query = |page: i32| ListQuery {
        scope: Default::default(),
        context_id: None,
        state: None,
        status_after: None,
        finished_before: None,
        after: None,
        page_size: PageSize::parse(Some(page)).expect("size"),
        view: ViewOptions::exact(HistoryLength::Last(0), false),
    };
    let mut seen = Vec::new();
    let mut q = query(4); // the page boundary falls between two tasks of one timestamp
    let mut pages = 0;
    loop {
        let page = store.list(&alice(), &q).await.expect("list");
        assert_eq!(page.total_size, 7);
        pages += 1;
        seen.extend(page.tasks.iter().map(|t| t.head.id.to_string()));
        match page.next {
            Some(c) => q.after = Some(c),
            None => break,
        }
        assert!(pages < 10, "paging must end");
    }
    assert_eq!(pages, 2);
    assert_eq!(
        seen,
        ["t-list-6", "t-list-5", "t-list-4", "t-list-3", "t-list-2", "t-list-1", "t-list-0"]
    );
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), 7);

    let mut q = query(100);
    q.context_id = Some(ContextId::parse("odd").expect("ctx"));
    let page = store.list(&alice(), &q).await.expect("list");
    assert_eq!(page.total_size, 3);
    assert!(page.next.is_none());
    assert!(page
        .tasks
        .iter()
        .all(|t| t.head.context_id.as_str() == "odd"));

    let mut q = query(100);
    q.state = Some(TaskState::Completed);
    let page = store.list(&alice(), &q).await.expect("list");
    assert_eq!(page.tasks.len(), 1);
    assert_eq!(page.tasks[0].head.id.as_str(), "t-list-6");

    let mut q = query(100);
    q.status_after = Some(base.plus_millis(30));
    let page = store.list(&alice(), &q).await.expect("list");
    assert_eq!(page.total_size, 3, "status timestamp >= the bound");

    let page = store.list(&bob(), &query(100)).await.expect("list");
    assert_eq!(page.total_size, 1);
    assert_eq!(page.tasks[0].head.id.as_str(), "t-list-bob");
}

/// Every combination of the ListTasks filters (none, context, state, status time, each pair, all
/// three), paged two at a time: each store gives the same pages and totals as the rule
/// "the owner's tasks matching every filter given, newest status first, then id, descending".
pub async fn list_filters_in_every_combination<S: Store>(store: Arc<S>) {
    let base = Timestamp::parse("2026-06-01T00:00:00Z").expect("ts");
    // (id, context, final state, status time in ms after base)
    let tasks: [(&str, &str, Option<TaskState>, i64); 10] = [
        ("t-f-0", "a", None, 0),
        ("t-f-1", "a", Some(TaskState::Completed), 15),
        ("t-f-2", "b", Some(TaskState::Completed), 25),
        ("t-f-3", "a", Some(TaskState::InputRequired), 35),
        ("t-f-4", "a", Some(TaskState::Completed), 45),
        ("t-f-5", "b", Some(TaskState::InputRequired), 55),
        ("t-f-6", "a", Some(TaskState::Completed), 65),
        ("t-f-7", "b", None, 70),
        ("t-f-8", "a", Some(TaskState::Working), 80),
        ("t-f-9", "a", Some(TaskState::Completed), 80),
    ];
    for (i, (id, ctx, state, ms)) in tasks.iter().enumerate() {
        let created = if state.is_some() { i as i64 } else { *ms };
        let task_id = create_task_at(&*store, id, ctx, &alice(), base.plus_millis(created)).await;
        if let Some(state) = state {
            set_state(&*store, &task_id, *state, base.plus_millis(*ms)).await;
        }
    }
    // Someone else's tasks in the same contexts and states never show.
    let other = create_task_at(&*store, "t-f-bob", "a", &bob(), base.plus_millis(50)).await;
    set_state(&*store, &other, TaskState::Completed, base.plus_millis(60)).await;

    let contexts = [None, Some("a"), Some("b")];
    let states = [
        None,
        Some(TaskState::Completed),
        Some(TaskState::InputRequired),
    ];
    let afters = [None, Some(40), Some(80)];
    for ctx in contexts {
        for state in states {
            for after in afters {
                let mut expected: Vec<(i64, &str)> = tasks
                    .iter()
                    .filter(|(_, c, s, ms)| {
                        let s = s.unwrap_or(TaskState::Submitted);
                        ctx.is_none_or(|x| x == *c)
                            && state.is_none_or(|x| x == s)
                            && after.is_none_or(|a| *ms >= a)
                    })
                    .map(|(id, _, _, ms)| (*ms, *id))
                    .collect();
                expected.sort_by(|a, b| b.cmp(a));
                let expected: Vec<&str> = expected.into_iter().map(|(_, id)| id).collect();
                let mut q = ListQuery {
                    scope: Default::default(),
                    context_id: ctx.map(|c| ContextId::parse(c).expect("ctx")),
                    state,
                    status_after: after.map(|ms| base.plus_millis(ms)),
                    finished_before: None,
                    after: None,
                    page_size: PageSize::parse(Some(2)).expect("size"),
                    view: ViewOptions::exact(HistoryLength::Last(0), false),
                };
                let what = format!("context {ctx:?}, state {state:?}, status after {after:?} ms");
                let mut seen = Vec::new();
                for page_no in 0.. {
                    assert!(page_no <= expected.len(), "{what}: paging must end");
                    let page = store.list(&alice(), &q).await.expect("list");
                    assert_eq!(page.total_size, expected.len() as u64, "{what}: totalSize");
                    assert!(page.tasks.len() <= 2, "{what}: page size");
                    seen.extend(page.tasks.iter().map(|t| t.head.id.to_string()));
                    match page.next {
                        Some(c) => q.after = Some(c),
                        None => break,
                    }
                }
                assert_eq!(seen, expected, "{what}");
            }
        }
    }
}

/// A task keeps its place in the list order through commits that leave its status: a
/// client paging while such a commit lands (a turn's bookkeeping, a user message) sees each
/// task once. Status times here fall inside a millisecond, which the wire does not show.
pub async fn a_commit_that_leaves_the_status_keeps_the_list_order<S: Store>(store: Arc<S>) {
    let base = Timestamp::parse("2026-07-01T00:00:00.000000100Z").expect("ts");
    let older = create_task_at(&*store, "t-keep-0", "keep", &alice(), base).await;
    let newer = create_task_at(&*store, "t-keep-1", "keep", &alice(), base).await;
    set_state(
        &*store,
        &older,
        TaskState::Working,
        Timestamp::from_unix_nanos(base.unix_nanos() + 300),
    )
    .await;
    set_state(
        &*store,
        &newer,
        TaskState::InputRequired,
        Timestamp::from_unix_nanos(base.unix_nanos() + 700),
    )
    .await;
    let mut q = ListQuery {
        scope: Default::default(),
        context_id: Some(ContextId::parse("keep").expect("ctx")),
        state: None,
        status_after: None,
        finished_before: None,
        after: None,
        page_size: PageSize::parse(Some(1)).expect("size"),
        view: ViewOptions::exact(HistoryLength::Last(0), false),
    };
    let first = store.list(&alice(), &q).await.expect("list");
    assert_eq!(first.tasks[0].head.id, newer);
    // The agent says something on the newest task (its status stays): its head is read from
    // the store and written back.
    let said = TaskCommand::AppendAgentMessage {
        message: Message::agent_text("m-keep", "more"),
        at: Timestamp::now(),
    };
    run(&*store, &newer, said).await.expect("message");
    q.after = first.next;
    let second = store.list(&alice(), &q).await.expect("list");
    let ids: Vec<_> = second.tasks.iter().map(|t| t.head.id.clone()).collect();
    assert_eq!(
        ids,
        [older],
        "the second page holds the other task, not the first again"
    );
    assert!(second.next.is_none());
}
