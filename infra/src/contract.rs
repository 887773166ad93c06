//! The storage contract: every store (SQLite, DynamoDB) must pass each of these.
//! `contract_tests!(expr)` expands to one `#[tokio::test]` per case, with a fresh store from `expr`.

use std::collections::HashSet;
use std::sync::Arc;

use taskledger_domain::ids::{
    ContextId, HistoryLength, IdempotencyKey, MessageId, PageSize, Principal, TaskId,
};
use taskledger_domain::intake;
use taskledger_domain::ports::{
    commit_for, restore, EventStore, IdempotencyRecord, ListQuery, MessageKey, StoreError,
    TaskReadModel, ViewOptions,
};
use taskledger_domain::projection::{assemble, limit_history};
use taskledger_domain::task::{AppendUserMessage, CreateTask, TaskAggregate, TaskCommand};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Artifact, Message, Part, TaskState};

/// A store under contract.
pub trait Store: EventStore + TaskReadModel + 'static {}
impl<T: EventStore + TaskReadModel + 'static> Store for T {}

pub fn alice() -> Principal {
    Principal::new("acme", "alice").expect("valid principal")
}

pub fn bob() -> Principal {
    Principal::new("acme", "bob").expect("valid principal")
}

pub fn user_message(id: &str, text: &str) -> Message {
    Message::user_text(id, text)
}

const ALL: ViewOptions = ViewOptions {
    history: HistoryLength::All,
    include_artifacts: true,
};

async fn state_of<S: Store + ?Sized>(store: &S, id: &TaskId) -> TaskAggregate {
    let loaded = store.load(id).await.expect("load").expect("task exists");
    restore(&loaded)
        .expect("restore")
        .expect("current snapshot")
}

async fn run<S: Store + ?Sized>(
    store: &S,
    id: &TaskId,
    cmd: TaskCommand,
) -> Result<TaskAggregate, StoreError> {
    let before = match store.load(id).await? {
        Some(l) => restore(&l)?.unwrap_or_default(),
        None => TaskAggregate::default(),
    };
    let events = before.decide(cmd).expect("command accepted");
    let commit = commit_for(id.clone(), &before, &events, Timestamp::now());
    let after = commit.snapshot.clone();
    store.append(commit).await?;
    Ok(after)
}

/// Creates a task for alice at `at` (now if `None`) and returns its id.
pub async fn create_task_at<S: Store + ?Sized>(
    store: &S,
    id: &str,
    ctx: &str,
    owner: &Principal,
    at: Timestamp,
) -> TaskId {
    let task_id = TaskId::parse(id).expect("id");
    run(
        store,
        &task_id,
        TaskCommand::CreateTask(CreateTask {
            task_id: task_id.clone(),
            context_id: ContextId::parse(ctx).expect("ctx"),
            owner: owner.clone(),
            message: user_message("m-0", "first"),
            at,
            extension: None,
            awaiting_assignee: None,
        }),
    )
    .await
    .expect("create");
    task_id
}

pub async fn create_task<S: Store + ?Sized>(store: &S, id: &str, ctx: &str) -> TaskId {
    create_task_at(store, id, ctx, &alice(), Timestamp::now()).await
}

fn append_cmd(id: &str, text: &str) -> TaskCommand {
    TaskCommand::AppendUserMessage(AppendUserMessage {
        message: user_message(id, text),
        at: Timestamp::now(),
    })
}

// ------------------------------------------------------------------ cases

pub async fn append_then_load<S: Store>(store: Arc<S>) {
    let id = create_task(&*store, "t-load", "c").await;
    run(&*store, &id, append_cmd("m-1", "second"))
        .await
        .expect("append");
    let state = state_of(&*store, &id).await;
    // created: TaskCreated, MessageAppended, AgentWorkRequested; a message: two more
    assert_eq!(state.version, 5);
    let events = store.events(&id, 0).await.expect("events");
    assert_eq!(
        events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5]
    );
    assert_eq!(events[0].event_type, "TaskCreated");
    assert!(events.iter().all(|e| e.decode().is_ok()));
    assert_eq!(store.events(&id, 3).await.expect("tail").len(), 2);
    assert!(store
        .load(&TaskId::parse("nope").expect("id"))
        .await
        .expect("load")
        .is_none());
}

pub async fn stale_version_conflicts_and_writes_nothing<S: Store>(store: Arc<S>) {
    let id = create_task(&*store, "t-stale", "c").await;
    let before = state_of(&*store, &id).await;
    let first = before.decide(append_cmd("m-1", "a")).expect("decide");
    let second = before.decide(append_cmd("m-2", "b")).expect("decide");
    store
        .append(commit_for(id.clone(), &before, &first, Timestamp::now()))
        .await
        .expect("first append wins");
    let err = store
        .append(commit_for(id.clone(), &before, &second, Timestamp::now()))
        .await
        .expect_err("stale append must conflict");
    assert_eq!(err, StoreError::Conflict(id.clone()));
    assert_eq!(store.events(&id, 0).await.expect("events").len(), 5);
    let view = store
        .get(&alice(), &id, ALL)
        .await
        .expect("get")
        .expect("task");
    assert_eq!(view.history.expect("history").len(), 2);
    // a second creation of the same id is a conflict too
    let fresh = TaskAggregate::default();
    let create = fresh
        .decide(TaskCommand::CreateTask(CreateTask {
            task_id: id.clone(),
            context_id: ContextId::parse("c").expect("ctx"),
            owner: alice(),
            message: user_message("m-x", "again"),
            at: Timestamp::now(),
            extension: None,
            awaiting_assignee: None,
        }))
        .expect("decide");
    let err = store
        .append(commit_for(id.clone(), &fresh, &create, Timestamp::now()))
        .await
        .expect_err("re-creation must conflict");
    assert_eq!(err, StoreError::Conflict(id));
}

pub async fn a_repeated_message_key_appends_nothing<S: Store>(store: Arc<S>) {
    let id = create_task(&*store, "t-dedup", "c").await;
    let msg = user_message("m-1", "hello");
    let key = MessageKey {
        task_id: id.clone(),
        message_id: MessageId::parse("m-1").expect("id"),
        fingerprint: intake::fingerprint(&msg),
    };
    for attempt in 0..2 {
        let before = state_of(&*store, &id).await;
        let events = before.decide(append_cmd("m-1", "hello")).expect("decide");
        let mut c = commit_for(id.clone(), &before, &events, Timestamp::now());
        c.message_key = Some(key.clone());
        let r = store.append(c).await;
        if attempt == 0 {
            r.expect("first append");
        } else {
            assert_eq!(r, Err(StoreError::DuplicateMessage(key.message_id.clone())));
        }
    }
    assert_eq!(state_of(&*store, &id).await.version, 5);
    // same id, other content: a new message
    let before = state_of(&*store, &id).await;
    let events = before
        .decide(append_cmd("m-1", "hello again"))
        .expect("decide");
    let mut c = commit_for(id.clone(), &before, &events, Timestamp::now());
    c.message_key = Some(MessageKey {
        fingerprint: intake::fingerprint(&user_message("m-1", "hello again")),
        ..key
    });
    store
        .append(c)
        .await
        .expect("other content is a new message");
    assert_eq!(state_of(&*store, &id).await.version, 7);
}

pub async fn an_idempotency_key_finds_the_first_task<S: Store>(store: Arc<S>) {
    let key = IdempotencyKey::parse("key-1").expect("key");
    let make = |id: &str| {
        let task_id = TaskId::parse(id).expect("id");
        let before = TaskAggregate::default();
        let events = before
            .decide(TaskCommand::CreateTask(CreateTask {
                task_id: task_id.clone(),
                context_id: ContextId::parse("c").expect("ctx"),
                owner: alice(),
                message: user_message("m-0", "first"),
                at: Timestamp::now(),
                extension: None,
                awaiting_assignee: None,
            }))
            .expect("decide");
        let mut c = commit_for(task_id.clone(), &before, &events, Timestamp::now());
        c.idempotency = Some(IdempotencyRecord {
            owner: alice(),
            key: key.clone(),
            fingerprint: "body-1".into(),
            task_id,
        });
        c
    };
    store.append(make("t-idem-1")).await.expect("first");
    let err = store.append(make("t-idem-2")).await.expect_err("second");
    assert_eq!(
        err,
        StoreError::IdempotencyKeyUsed {
            task_id: TaskId::parse("t-idem-1").expect("id"),
            fingerprint: "body-1".into()
        }
    );
    assert!(store
        .load(&TaskId::parse("t-idem-2").expect("id"))
        .await
        .expect("load")
        .is_none());
    let rec = store
        .idempotency(&alice(), &key)
        .await
        .expect("lookup")
        .expect("record");
    assert_eq!(rec.task_id.as_str(), "t-idem-1");
    assert!(store
        .idempotency(&bob(), &key)
        .await
        .expect("lookup")
        .is_none());
}

pub async fn many_tasks_concurrently<S: Store>(store: Arc<S>) {
    const TASKS: usize = 24;
    const MESSAGES: usize = 5;
    let mut handles = Vec::new();
    for t in 0..TASKS {
        let store = store.clone();
        handles.push(tokio::spawn(async move {
            let id = create_task(&*store, &format!("t-conc-{t:02}"), "c").await;
            for m in 0..MESSAGES {
                run(&*store, &id, append_cmd(&format!("m-{m}"), "x"))
                    .await
                    .expect("append to own task");
            }
        }));
    }
    for h in handles {
        h.await.expect("join");
    }
    for t in 0..TASKS {
        let id = TaskId::parse(format!("t-conc-{t:02}")).expect("id");
        let events = store.events(&id, 0).await.expect("events");
        assert_eq!(events.len(), 3 + 2 * MESSAGES);
        assert!(events
            .iter()
            .enumerate()
            .all(|(i, e)| e.seq == i as u64 + 1));
    }
    // racing writers on one task: every append lands exactly once or conflicts cleanly
    let id = create_task(&*store, "t-race", "c").await;
    let mut handles = Vec::new();
    for w in 0..8 {
        let (store, id) = (store.clone(), id.clone());
        handles.push(tokio::spawn(async move {
            run(&*store, &id, append_cmd(&format!("race-{w}"), "x")).await
        }));
    }
    let mut won = 0;
    for h in handles {
        match h.await.expect("join") {
            Ok(_) => won += 1,
            Err(StoreError::Conflict(_)) => {}
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert!(won >= 1);
    let events = store.events(&id, 0).await.expect("events");
    assert_eq!(events.len(), 3 + 2 * won);
    assert!(events
        .iter()
        .enumerate()
        .all(|(i, e)| e.seq == i as u64 + 1));
}

pub async fn get_is_scoped_to_the_owner_and_shapes_the_view<S: Store>(store: Arc<S>) {
    let id = create_task(&*store, "t-get", "c").await;
    for i in 1..=4 {
        run(
            &*store,
            &id,
            append_cmd(&format!("m-{i}"), &format!("msg {i}")),
        )
        .await
        .expect("append");
    }
    run(
        &*store,
        &id,
        TaskCommand::AddArtifact {
            artifact: Artifact {
                artifact_id: "a".into(),
                name: Some("result".into()),
                description: None,
                parts: vec![Part::text("one ")],
                metadata: None,
                extensions: vec![],
            },
            append: false,
            last_chunk: false,
            at: Timestamp::now(),
        },
    )
    .await
    .expect("artifact");
    run(
        &*store,
        &id,
        TaskCommand::AddArtifact {
            artifact: Artifact {
                artifact_id: "a".into(),
                name: None,
                description: None,
                parts: vec![Part::text("two")],
                metadata: None,
                extensions: vec![],
            },
            append: true,
            last_chunk: true,
            at: Timestamp::now(),
        },
    )
    .await
    .expect("chunk");
    assert!(store.get(&bob(), &id, ALL).await.expect("get").is_none());
    let v = store
        .get(&alice(), &id, ALL)
        .await
        .expect("get")
        .expect("visible");
    let task = assemble(&v.head, v.history, v.chunks);
    assert_eq!(task.history.as_ref().map(Vec::len), Some(5));
    let artifacts = task.artifacts.expect("artifacts");
    assert_eq!(
        artifacts[0].parts,
        vec![Part::text("one "), Part::text("two")]
    );
    let v = store
        .get(
            &alice(),
            &id,
            ViewOptions {
                history: HistoryLength::Last(2),
                include_artifacts: false,
            },
        )
        .await
        .expect("get")
        .expect("visible");
    let texts: Vec<String> = limit_history(v.history.expect("history"), HistoryLength::All)
        .expect("some")
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(texts, ["msg 3", "msg 4"]);
    assert!(v.chunks.is_none());
    let v = store
        .get(
            &alice(),
            &id,
            ViewOptions {
                history: HistoryLength::Last(0),
                include_artifacts: false,
            },
        )
        .await
        .expect("get")
        .expect("visible");
    assert!(v.history.is_none());
}

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
    run(
        &*store,
        &done,
        TaskCommand::ChangeStatus {
            state: TaskState::Completed,
            message: None,
            at: base.plus_millis(60),
        },
    )
    .await
    .expect("complete");

    let query = |page: i32| ListQuery {
        context_id: None,
        state: None,
        status_after: None,
        after: None,
        page_size: PageSize::parse(Some(page)).expect("size"),
        view: ViewOptions {
            history: HistoryLength::Last(0),
            include_artifacts: false,
        },
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
            run(
                &*store,
                &task_id,
                TaskCommand::ChangeStatus {
                    state: *state,
                    message: None,
                    at: base.plus_millis(*ms),
                },
            )
            .await
            .expect("status");
        }
    }
    // Someone else's tasks in the same contexts and states never show.
    let other = create_task_at(&*store, "t-f-bob", "a", &bob(), base.plus_millis(50)).await;
    run(
        &*store,
        &other,
        TaskCommand::ChangeStatus {
            state: TaskState::Completed,
            message: None,
            at: base.plus_millis(60),
        },
    )
    .await
    .expect("status");

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
                    context_id: ctx.map(|c| ContextId::parse(c).expect("ctx")),
                    state,
                    status_after: after.map(|ms| base.plus_millis(ms)),
                    after: None,
                    page_size: PageSize::parse(Some(2)).expect("size"),
                    view: ViewOptions {
                        history: HistoryLength::Last(0),
                        include_artifacts: false,
                    },
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

/// One `#[tokio::test]` per contract case, each on a fresh store made by awaiting `$make`
/// (`None`: the store is not available here, and the case says so and passes).
#[macro_export]
macro_rules! contract_tests {
    ($make:expr) => {
        $crate::contract_tests!(@case $make;
            append_then_load,
            stale_version_conflicts_and_writes_nothing,
            a_repeated_message_key_appends_nothing,
            an_idempotency_key_finds_the_first_task,
            many_tasks_concurrently,
            get_is_scoped_to_the_owner_and_shapes_the_view,
            list_orders_pages_and_filters,
            list_filters_in_every_combination
        );
    };
    (@case $make:expr; $($case:ident),+) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                match $make.await {
                    Some(store) => $crate::contract::$case(::std::sync::Arc::new(store)).await,
                    None => eprintln!("skipped: store not configured"),
                }
            }
        )+
    };
}
