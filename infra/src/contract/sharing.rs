//! The sharing case of the storage contract: a task is found by the principals its
//! participants name — GetTask and ListTasks (each scope, with filters, paged, counted) — and no
//! longer once they stop being participants; nobody else finds it.

use std::sync::Arc;

use serde_json::json;
use taskledger_domain::ids::{ContextId, HistoryLength, PageSize, Principal, TaskId};
use taskledger_domain::ports::{ListQuery, ListScope, ViewOptions};
use taskledger_domain::task::{AppendUserMessage, TaskCommand};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Message, Part, TaskState};

use super::{alice, bob, create_task_at, run, set_state, Store};

fn carol() -> Principal {
    Principal::new("acme", "carol").expect("valid principal")
}

/// An envelope-only message from the owner setting the task's participants.
fn participants(id: &str, people: &[(&str, &str)]) -> TaskCommand {
    let people: Vec<_> = people
        .iter()
        .map(|(p, role)| json!({"id": p, "kind": "human", "role": role}))
        .collect();
    let mut message = Message::user_text(id, "");
    let mut part =
        Part::data(json!({"name": "Shared", "goal": "work together", "participants": people}));
    part.media_type = Some(taskledger_domain::extensions::harness::MEDIA_TYPE.into());
    message.parts = vec![part];
    TaskCommand::AppendUserMessage(AppendUserMessage {
        message,
        at: Timestamp::now(),
        caller: Some(alice()),
    })
}

async fn ids<S: Store>(
    store: &S,
    who: &Principal,
    scope: ListScope,
    ctx: Option<&str>,
) -> (Vec<String>, u64) {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .list(
                who,
                &ListQuery {
                    scope,
                    context_id: ctx.map(|c| ContextId::parse(c).expect("ctx")),
                    state: None,
                    status_after: None,
                    finished_before: None,
                    after: after.take(),
                    page_size: PageSize::parse(Some(1)).expect("size"),
                    view: ViewOptions::exact(HistoryLength::Last(0), false),
                },
            )
            .await
            .expect("list");
        let total = page.total_size;
        out.extend(page.tasks.iter().map(|v| v.head.id.to_string()));
        match page.next {
            Some(c) => after = Some(c),
            None => return (out, total),
        }
    }
}

pub async fn a_task_is_found_by_whom_it_is_shared_with<S: Store>(store: Arc<S>) {
    let base = Timestamp::parse("2026-06-01T00:00:00Z").expect("ts");
    let shared = create_task_at(&*store, "t-share-1", "c-share", &alice(), base).await;
    create_task_at(
        &*store,
        "t-share-own",
        "c-share",
        &alice(),
        base.plus_millis(1),
    )
    .await;
    create_task_at(&*store, "t-share-bob", "c-bob", &bob(), base.plus_millis(2)).await;
    let view = ViewOptions::exact(HistoryLength::All, false);
    assert!(store
        .get(&bob(), &shared, view)
        .await
        .expect("get")
        .is_none());

    // alice shares the task with bob (assignee) and carol (watcher)
    run(
        &*store,
        &shared,
        participants(
            "m-p1",
            &[
                ("alice", "admin"),
                ("bob", "assignee"),
                ("carol", "watcher"),
            ],
        ),
    )
    .await
    .expect("share");
    for who in [alice(), bob(), carol()] {
        let v = store.get(&who, &shared, view).await.expect("get");
        assert_eq!(v.expect("visible").head.id, shared, "{who}");
    }
    let mallory = Principal::new("acme", "mallory").expect("principal");
    let other_bob = Principal::new("globex", "bob").expect("principal");
    for who in [&mallory, &other_bob] {
        assert!(
            store.get(who, &shared, view).await.expect("get").is_none(),
            "{who}"
        );
    }
    // bob's list: his own task and the shared one, newest first, paged one by one, counted
    let (all, total) = ids(&*store, &bob(), ListScope::All, None).await;
    assert_eq!(
        (all, total),
        (vec!["t-share-bob".to_string(), "t-share-1".into()], 2)
    );
    assert_eq!(
        ids(&*store, &bob(), ListScope::Shared, None).await,
        (vec!["t-share-1".to_string()], 1)
    );
    assert_eq!(
        ids(&*store, &bob(), ListScope::Owned, None).await,
        (vec!["t-share-bob".to_string()], 1)
    );
    assert_eq!(
        ids(&*store, &bob(), ListScope::All, Some("c-share")).await,
        (vec!["t-share-1".to_string()], 1)
    );
    // the owner's list holds each of its tasks once; nothing is shared with it
    let (mine, total) = ids(&*store, &alice(), ListScope::All, None).await;
    assert_eq!((mine.len(), total), (2, 2), "{mine:?}");
    assert_eq!(ids(&*store, &alice(), ListScope::Shared, None).await.1, 0);
    assert_eq!(ids(&*store, &mallory, ListScope::All, None).await.1, 0);

    // a state change moves the shared entries with the head: carol finds it by its new state
    set_state(&*store, &shared, TaskState::Completed, Timestamp::now()).await;
    let page = store
        .list(
            &carol(),
            &ListQuery {
                scope: ListScope::All,
                context_id: None,
                state: Some(TaskState::Completed),
                status_after: None,
                finished_before: None,
                after: None,
                page_size: PageSize::parse(Some(10)).expect("size"),
                view: ViewOptions::exact(HistoryLength::Last(0), false),
            },
        )
        .await
        .expect("list");
    assert_eq!(page.total_size, 1);
    assert_eq!(page.tasks[0].head.status.state, TaskState::Completed);
}

pub async fn a_task_is_no_longer_found_by_whom_it_stops_being_shared_with<S: Store>(store: Arc<S>) {
    let task = create_task_at(&*store, "t-unshare", "c-un", &alice(), Timestamp::now()).await;
    run(
        &*store,
        &task,
        participants(
            "m-u1",
            &[
                ("alice", "admin"),
                ("bob", "assignee"),
                ("carol", "watcher"),
            ],
        ),
    )
    .await
    .expect("share");
    assert_eq!(ids(&*store, &carol(), ListScope::All, None).await.1, 1);
    run(
        &*store,
        &task,
        participants("m-u2", &[("alice", "admin"), ("bob", "assignee")]),
    )
    .await
    .expect("unshare");
    let view = ViewOptions::exact(HistoryLength::All, false);
    assert!(store
        .get(&carol(), &task, view)
        .await
        .expect("get")
        .is_none());
    assert_eq!(
        ids(&*store, &carol(), ListScope::All, None).await,
        (vec![], 0)
    );
    assert_eq!(ids(&*store, &bob(), ListScope::Shared, None).await.1, 1);
    let id = TaskId::parse("t-unshare").expect("id");
    assert!(store.get(&bob(), &id, view).await.expect("get").is_some());
}

pub async fn states_are_counted_for_the_tasks_a_list_would_find<S: Store>(store: Arc<S>) {
    let base = Timestamp::parse("2026-07-01T00:00:00Z").expect("ts");
    let shared = create_task_at(&*store, "t-count-1", "c-count", &alice(), base).await;
    create_task_at(
        &*store,
        "t-count-2",
        "c-count",
        &alice(),
        base.plus_millis(1),
    )
    .await;
    create_task_at(
        &*store,
        "t-count-3",
        "c-other",
        &alice(),
        base.plus_millis(2),
    )
    .await;
    create_task_at(
        &*store,
        "t-count-bob",
        "c-count",
        &bob(),
        base.plus_millis(3),
    )
    .await;
    run(
        &*store,
        &shared,
        participants("m-c1", &[("alice", "admin"), ("bob", "assignee")]),
    )
    .await
    .expect("share");
    let done = TaskId::parse("t-count-2").expect("id");
    set_state(&*store, &done, TaskState::Completed, Timestamp::now()).await;
    let count = |who: Principal, scope: ListScope, ctx: Option<&'static str>| {
        let store = store.clone();
        async move {
            let ctx = ctx.map(|c| ContextId::parse(c).expect("ctx"));
            store
                .count_by_state(&who, scope, ctx.as_ref(), None)
                .await
                .expect("count")
        }
    };
    let submitted = |n| (TaskState::Submitted, n);
    // alice: 2 submitted (one shared), 1 completed
    assert_eq!(
        count(alice(), ListScope::All, None).await,
        vec![submitted(2), (TaskState::Completed, 1)]
    );
    assert_eq!(
        count(alice(), ListScope::All, Some("c-count")).await,
        vec![submitted(1), (TaskState::Completed, 1)]
    );
    // bob: his own and the one shared with him; by scope
    assert_eq!(count(bob(), ListScope::All, None).await, vec![submitted(2)]);
    assert_eq!(
        count(bob(), ListScope::Shared, None).await,
        vec![submitted(1)]
    );
    assert_eq!(
        count(bob(), ListScope::Owned, Some("c-count")).await,
        vec![submitted(1)]
    );
    let mallory = Principal::new("acme", "mallory").expect("principal");
    assert_eq!(count(mallory, ListScope::All, None).await, vec![]);
}
