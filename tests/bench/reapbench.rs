//! The SQLite retention reaper's pause: `--tasks` finished tasks past their expiry in an
//! on-disk store, deleted the way the reaper does (a batch of `PURGE_BATCH` per write, a pause
//! between writes) while a committer appends to a live task every 5 ms. Prints each write's
//! hold on the writer (p50/p99/max), the deletion rate, and the committer's latency before and
//! during the deletions.
//!
//! `target/release/reapbench [--tasks 20000]`

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use taskledger_domain::ids::{ContextId, Principal, TaskId};
use taskledger_domain::ports::{commit_for, restore, EventStore, Housekeeping, PURGE_BATCH};
use taskledger_domain::retention::Retention;
use taskledger_domain::task::{AppendUserMessage, CreateTask, TaskAggregate, TaskCommand};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Message, TaskState};
use taskledger_infra::sqlite::SqliteStore;

fn pct(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1000.0
}

async fn run(
    store: &SqliteStore,
    id: &TaskId,
    before: &TaskAggregate,
    cmd: TaskCommand,
    at: Timestamp,
) -> TaskAggregate {
    let events = before.decide(cmd).expect("accepted");
    let commit = commit_for(id.clone(), before, &events, at);
    store.append(&commit).await.expect("append");
    commit.snapshot
}

/// Appends a message to `id` every 5 ms until `stop`; the latencies.
async fn committer(store: Arc<SqliteStore>, id: TaskId, stop: Arc<AtomicBool>) -> Vec<Duration> {
    let mut out = Vec::new();
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let state = restore(&store.load(&id).await.unwrap().unwrap())
            .unwrap()
            .unwrap();
        let cmd = TaskCommand::AppendUserMessage(AppendUserMessage {
            message: Message::user_text(format!("live-{n}"), "still here"),
            at: Timestamp::now(),
            caller: None,
        });
        let t = Instant::now();
        run(&store, &id, &state, cmd, Timestamp::now()).await;
        out.push(t.elapsed());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    out.sort();
    out
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let tasks: usize = args
        .iter()
        .position(|a| a == "--tasks")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let dir = std::env::temp_dir().join(format!("taskledger-reapbench-{}", uuid::Uuid::new_v4()));
    let store = Arc::new(SqliteStore::open(&dir).expect("store"));
    let owner = Principal::new("acme", "alice").unwrap();
    let long_ago = Timestamp::now().plus_millis(-86_400_000);
    let fill = Instant::now();
    for i in 0..tasks {
        let id = TaskId::parse(format!("old-{i:06}")).unwrap();
        let created = run(
            &store,
            &id,
            &TaskAggregate::default(),
            TaskCommand::CreateTask(CreateTask {
                task_id: id.clone(),
                context_id: ContextId::parse("c").unwrap(),
                owner: owner.clone(),
                message: Message::user_text("m-0", "an old task"),
                at: long_ago,
                extension: None,
                awaiting_assignee: None,
            }),
            long_ago,
        )
        .await;
        run(
            &store,
            &id,
            &created,
            TaskCommand::ChangeStatus {
                state: TaskState::Completed,
                message: Some(Message::agent_text("m-1", "done")),
                at: long_ago,
            },
            long_ago,
        )
        .await;
    }
    println!(
        "{tasks} finished tasks written in {:.1} s",
        fill.elapsed().as_secs_f64()
    );
    let live = TaskId::parse("live").unwrap();
    run(
        &store,
        &live,
        &TaskAggregate::default(),
        TaskCommand::CreateTask(CreateTask {
            task_id: live.clone(),
            context_id: ContextId::parse("c").unwrap(),
            owner,
            message: Message::user_text("m-0", "a live task"),
            at: Timestamp::now(),
            extension: None,
            awaiting_assignee: None,
        }),
        Timestamp::now(),
    )
    .await;

    // The committer alone, then while the reaper deletes.
    let stop = Arc::new(AtomicBool::new(false));
    let quiet = tokio::spawn(committer(store.clone(), live.clone(), stop.clone()));
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::Relaxed);
    let quiet = quiet.await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let busy = tokio::spawn(committer(store.clone(), live.clone(), stop.clone()));
    let retention = Retention::parse("1h", "").unwrap();
    let mut holds = Vec::new();
    let started = Instant::now();
    let mut purged = 0;
    loop {
        let t = Instant::now();
        let ids = store
            .purge_expired(&retention, Timestamp::now(), PURGE_BATCH)
            .await
            .expect("purge");
        holds.push(t.elapsed());
        purged += ids.len();
        if ids.len() < PURGE_BATCH as usize {
            break;
        }
        // The reaper's pause between writes.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let busy = busy.await.unwrap();
    holds.sort();
    println!(
        "purged {purged} tasks in {:.1} s ({:.0} tasks/s, pauses included); a write of {PURGE_BATCH} holds the writer p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        took.as_secs_f64(),
        purged as f64 / took.as_secs_f64(),
        pct(&holds, 0.5),
        pct(&holds, 0.99),
        pct(&holds, 1.0)
    );
    println!(
        "a live task's commit: alone p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} commits); while the reaper deletes p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} commits)",
        pct(&quiet, 0.5),
        pct(&quiet, 0.99),
        pct(&quiet, 1.0),
        quiet.len(),
        pct(&busy, 0.5),
        pct(&busy, 0.99),
        pct(&busy, 1.0),
        busy.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
