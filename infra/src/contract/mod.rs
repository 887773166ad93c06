//! The storage contract: every store (SQLite, DynamoDB) must pass each of these.
//! `contract_tests!(expr)` expands to one `#[tokio::test]` per case, with a fresh store from `expr`.

use std::sync::Arc;

use taskledger_domain::ids::{
    ContextId, HistoryLength, IdempotencyKey, MessageId, Principal, TaskId,
};
use taskledger_domain::ports::{
    commit_for, restore, EventStore, Housekeeping, IdempotencyRecord, MessageKey, StoreError,
    TaskReadModel, ViewOptions,
};
use taskledger_domain::projection::{assemble, limit_history};
use taskledger_domain::task::intake;
use taskledger_domain::task::{AppendUserMessage, CreateTask, TaskAggregate, TaskCommand};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Artifact, Message, Part, TaskState};

/// A store under contract.
pub trait Store: EventStore + TaskReadModel + Housekeeping + 'static {}
impl<T: EventStore + TaskReadModel + Housekeeping + 'static> Store for T {}

pub fn alice() -> Principal {
    Principal::new("acme", "alice").expect("valid principal")
}

pub fn bob() -> Principal {
    Principal::new("acme", "bob").expect("valid principal")
}

pub fn user_message(id: &str, text: &str) -> Message {
    Message::user_text(id, text)
}

const ALL: ViewOptions = ViewOptions::exact(HistoryLength::All, true);

async fn state_of<S: Store + ?Sized>(store: &S, id: &TaskId) -> TaskAggregate {
    let loaded = store.load(id).await.expect("load").expect("task exists");
    restore(&loaded)
        .expect("restore")
        .expect("current snapshot")
}

/// Decides `cmd` on the task as stored and appends what it decided.
pub async fn run<S: Store + ?Sized>(
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
    store.append(&commit).await?;
    Ok(after)
}

/// Moves the task to `state` at `at` (the status change every list and count case makes).
async fn set_state<S: Store + ?Sized>(store: &S, id: &TaskId, state: TaskState, at: Timestamp) {
    run(
        store,
        id,
        TaskCommand::ChangeStatus {
            state,
            message: None,
            at,
        },
    )
    .await
    .expect("status change");
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

/// A user message `text` with message id `id`, as a command.
pub fn append_cmd(id: &str, text: &str) -> TaskCommand {
    TaskCommand::AppendUserMessage(AppendUserMessage {
        message: user_message(id, text),
        at: Timestamp::now(),
        caller: None,
    })
}

mod first;
mod history;
mod housekeeping;
mod list;
mod log;
mod sharing;
mod stamp;
mod stream;
pub use first::a_first_commit_reads_back_as_its_events_show;
pub use history::a_history_past_the_tail_reads_whole_and_in_order;
pub use housekeeping::{
    finished_tasks_past_their_expiry_are_neither_listed_nor_counted,
    tasks_at_work_are_found_by_the_age_of_their_status,
};
pub use list::{
    a_commit_that_leaves_the_status_keeps_the_list_order, list_filters_in_every_combination,
    list_orders_pages_and_filters,
};
pub use log::a_log_pages_the_same_from_any_position;
pub use sharing::{
    a_task_is_found_by_whom_it_is_shared_with,
    a_task_is_no_longer_found_by_whom_it_stops_being_shared_with,
    states_are_counted_for_the_tasks_a_list_would_find,
};
pub use stamp::a_change_stamp_moves_with_every_commit;
pub use stream::events_read_back_with_what_streams_show;

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
    assert_eq!(
        store.version(&id).await.expect("version"),
        Some(5),
        "the head's version is the loaded state's (what a state cache checks)"
    );
    let nope = TaskId::parse("nope").expect("id");
    assert!(store.load(&nope).await.expect("load").is_none());
    assert_eq!(store.version(&nope).await.expect("version"), None);
}

pub async fn stale_version_conflicts_and_writes_nothing<S: Store>(store: Arc<S>) {
    let id = create_task(&*store, "t-stale", "c").await;
    let before = state_of(&*store, &id).await;
    let first = before.decide(append_cmd("m-1", "a")).expect("decide");
    let second = before.decide(append_cmd("m-2", "b")).expect("decide");
    store
        .append(&commit_for(id.clone(), &before, &first, Timestamp::now()))
        .await
        .expect("first append wins");
    let err = store
        .append(&commit_for(id.clone(), &before, &second, Timestamp::now()))
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
        .append(&commit_for(id.clone(), &fresh, &create, Timestamp::now()))
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
        let r = store.append(&c).await;
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
        .append(&c)
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
    store.append(&make("t-idem-1")).await.expect("first");
    let err = store.append(&make("t-idem-2")).await.expect_err("second");
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
                end_generation: Default::default(),
                start_generation: Default::default(),
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
                end_generation: Default::default(),
                start_generation: Default::default(),
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
            ViewOptions::exact(HistoryLength::Last(2), false),
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
            ViewOptions::exact(HistoryLength::Last(0), false),
        )
        .await
        .expect("get")
        .expect("visible");
    assert!(v.history.is_none());
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
            a_history_past_the_tail_reads_whole_and_in_order,
            list_orders_pages_and_filters,
            list_filters_in_every_combination,
            a_commit_that_leaves_the_status_keeps_the_list_order,
            events_read_back_with_what_streams_show,
            a_log_pages_the_same_from_any_position,
            a_first_commit_reads_back_as_its_events_show,
            a_task_is_found_by_whom_it_is_shared_with,
            a_task_is_no_longer_found_by_whom_it_stops_being_shared_with,
            states_are_counted_for_the_tasks_a_list_would_find,
            a_change_stamp_moves_with_every_commit,
            tasks_at_work_are_found_by_the_age_of_their_status,
            finished_tasks_past_their_expiry_are_neither_listed_nor_counted
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
