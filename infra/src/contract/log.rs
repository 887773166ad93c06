//! Contract cases for the events extension (ADR 037): the log reads the same from any position,
//! the middle of a commit included (a DynamoDB item holds a commit's events, ADR 036), pages
//! of it join up without a gap or a repeat, each event carries the generation after it, and
//! the task as of a generation folds from it.

use std::sync::Arc;

use taskledger_domain::ports::{commit_for, replay_state};
use taskledger_domain::projection::log::{self, LogReader};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::TaskState;

use super::stream::worked_then_done;
use super::{alice, create_task, state_of, Store};

pub async fn a_log_pages_the_same_from_any_position<S: Store>(store: Arc<S>) {
    let id = create_task(&*store, "t-log", "c").await;
    let before = state_of(&*store, &id).await;
    let now = Timestamp::now();
    let events = worked_then_done(now);
    store
        .append(&commit_for(id.clone(), &before, &events, now))
        .await
        .expect("append");
    let all = store.events(&id, 0).await.expect("the log");
    let last = all.last().map_or(0, |e| e.seq);
    assert_eq!(last, before.version + 3);
    for from in 0..=last {
        let tail = store
            .events(&id, from)
            .await
            .expect("the log from a position");
        let seqs: Vec<u64> = tail.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (from + 1..=last).collect::<Vec<_>>(), "after {from}");
    }
    let head = replay_state(&all).expect("folds").head.expect("a task");
    for limit in 1..=3 {
        let (mut after, mut seen) = (0, Vec::new());
        loop {
            let (page, next, more) =
                log::page(&head, &all, after, limit, LogReader::Client(&alice()));
            seen.extend(page.iter().map(|r| r.seq));
            after = next;
            if !more {
                break;
            }
        }
        assert_eq!(seen, (1..=last).collect::<Vec<_>>(), "pages of {limit}");
    }
    let generations = log::generations(&all);
    assert_eq!(
        generations.last(),
        Some(&4),
        "created 1, working 2, artifact 3, completed 4"
    );
    let at_two = replay_state(&all[..log::events_as_of(&all, 2)]).expect("folds");
    assert_eq!(
        at_two.head.expect("a task").status.state,
        TaskState::Working
    );
}
