//! The latest state of the tasks this process used last, as it committed or read them (ADR 025).
//! A read uses a kept state only if the store's head is still at its version (one small read
//! instead of loading and parsing the task); a command decides on it as it is, since the
//! store's version check refuses a commit decided on an out-of-date state, and the retry reads
//! the store. So other processes on the same store (a second server, `taskledger work
//! advance`) are seen at once.
//!
//! A commit that asks for a turn is counted here from just before its append until it kept
//! its state: the feed can hand its turn over before the request resumed from the append (the
//! writer acknowledges a group of commits at once, and the relay reads all of them on the
//! first one's nudge), and such a turn waits for those commits of its task instead of reading
//! the store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use hashlink::LruCache;
use taskledger_domain::ids::TaskId;
use taskledger_domain::task::{TaskAggregate, TaskEvent};
use tokio::sync::oneshot;

/// Tasks whose state is kept (the least recently used go first).
pub const STATE_CACHE_TASKS: usize = 1024;

/// The events of the commit that left a kept state, numbered from `first_seq`: what a turn
/// that this commit requested looks at, without reading the log back.
#[derive(Debug)]
pub(crate) struct CommitEvents {
    pub first_seq: u64,
    pub events: Vec<TaskEvent>,
}

impl CommitEvents {
    /// The events with their sequence numbers, oldest first.
    pub fn numbered(&self) -> impl DoubleEndedIterator<Item = (u64, &TaskEvent)> + Clone {
        let first = self.first_seq;
        self.events
            .iter()
            .enumerate()
            .map(move |(i, e)| (first + i as u64, e))
    }
}

struct Kept {
    state: Arc<TaskAggregate>,
    /// Set when the state was kept by this process's commit that asked for agent work.
    commit: Option<Arc<CommitEvents>>,
}

/// The commits of one task under way that asked for a turn, and the turns waiting for them.
#[derive(Default)]
struct Asking {
    commits: usize,
    waiting: Vec<oneshot::Sender<()>>,
}

struct Inner {
    tasks: LruCache<TaskId, Kept>,
    asking: HashMap<TaskId, Asking>,
}

impl Inner {
    /// One commit of `task_id` that asked for a turn is over: its turns go on once none is left.
    fn asked(&mut self, task_id: &TaskId) {
        let Some(a) = self.asking.get_mut(task_id) else {
            return;
        };
        a.commits = a.commits.saturating_sub(1);
        if a.commits == 0 {
            if let Some(a) = self.asking.remove(task_id) {
                for w in a.waiting {
                    // A turn that stopped waiting is fine.
                    let _ = w.send(());
                }
            }
        }
    }
}

pub(crate) struct StateCache {
    inner: Mutex<Inner>,
}

/// A commit asking for a turn, under way: counted until it keeps its state (`kept`) or ends
/// without (dropped: refused, failed or cancelled).
pub(crate) struct AskingCommit<'a> {
    cache: &'a StateCache,
    task_id: &'a TaskId,
}

impl AskingCommit<'_> {
    /// Keeps the state the commit left with its events, and ends it, in one step.
    pub(crate) fn kept(self, state: &Arc<TaskAggregate>, commit: Arc<CommitEvents>) {
        if let Ok(mut inner) = self.cache.inner.lock() {
            insert(&mut inner.tasks, self.task_id, state, Some(commit));
            inner.asked(self.task_id);
        }
        // Ended here: the drop must not end it again.
        std::mem::forget(self);
    }
}

impl Drop for AskingCommit<'_> {
    fn drop(&mut self) {
        if let Ok(mut inner) = self.cache.inner.lock() {
            inner.asked(self.task_id);
        }
    }
}

impl StateCache {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Inner {
                tasks: LruCache::new(capacity.max(1)),
                asking: HashMap::new(),
            }),
        }
    }

    /// The state last seen of `task_id`, if kept.
    pub(crate) fn get(&self, task_id: &TaskId) -> Option<Arc<TaskAggregate>> {
        self.inner
            .lock()
            .ok()?
            .tasks
            .get(task_id)
            .map(|k| k.state.clone())
    }

    /// Counts a commit of `task_id` that asks for a turn, from before its append.
    pub(crate) fn asking<'a>(&'a self, task_id: &'a TaskId) -> AskingCommit<'a> {
        if let Ok(mut inner) = self.inner.lock() {
            inner.asking.entry(task_id.clone()).or_default().commits += 1;
        }
        AskingCommit {
            cache: self,
            task_id,
        }
    }

    /// Resolves once no commit of `task_id` that asked for a turn is under way (`None`: none
    /// is now).
    pub(crate) fn after_asking(&self, task_id: &TaskId) -> Option<oneshot::Receiver<()>> {
        let mut inner = self.inner.lock().ok()?;
        let a = inner.asking.get_mut(task_id)?;
        let (tx, rx) = oneshot::channel();
        a.waiting.push(tx);
        Some(rx)
    }

    /// The state last seen of `task_id` and, if this process's commit left it, that commit's
    /// events.
    pub(crate) fn get_with_commit(
        &self,
        task_id: &TaskId,
    ) -> Option<(Arc<TaskAggregate>, Option<Arc<CommitEvents>>)> {
        let mut inner = self.inner.lock().ok()?;
        inner
            .tasks
            .get(task_id)
            .map(|k| (k.state.clone(), k.commit.clone()))
    }

    /// Keeps `state` unless a newer version of the task is kept already (a read that started
    /// before a commit may end after it).
    pub(crate) fn put(&self, task_id: &TaskId, state: &Arc<TaskAggregate>) {
        if let Ok(mut inner) = self.inner.lock() {
            insert(&mut inner.tasks, task_id, state, None);
        }
    }

    /// Drops what is kept of `task_id` (it was found out of date).
    pub(crate) fn forget(&self, task_id: &TaskId) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.tasks.remove(task_id);
        }
    }
}

/// Keeps `state` unless a newer version of the task is kept already.
impl super::Ledger {
    /// A commit of `task_id` under way that asks for a turn (`asks`), counted until it keeps
    /// its state (none without a cache, or when it asks for none).
    pub(super) fn asking<'a>(
        &'a self,
        task_id: &'a TaskId,
        asks: bool,
    ) -> Option<AskingCommit<'a>> {
        self.states
            .as_ref()
            .filter(|_| asks)
            .map(|c| c.asking(task_id))
    }

    /// Keeps the state a commit left — with its events, for the turn it asked for — and ends
    /// its count: the cache's bookkeeping after an append, in one call.
    pub(super) fn keep(
        &self,
        task_id: &TaskId,
        state: &Arc<TaskAggregate>,
        asking: Option<AskingCommit<'_>>,
        made: CommitEvents,
    ) {
        match (asking, &self.states) {
            (Some(asking), _) => asking.kept(state, Arc::new(made)),
            (None, Some(c)) => c.put(task_id, state),
            (None, None) => {}
        }
    }

    /// Forgets what is kept of `task_id` (a lost race, a restore): the next read takes the
    /// store's.
    pub(super) fn forget(&self, task_id: &TaskId) {
        if let Some(c) = &self.states {
            c.forget(task_id);
        }
    }
}

fn insert(
    tasks: &mut LruCache<TaskId, Kept>,
    task_id: &TaskId,
    state: &Arc<TaskAggregate>,
    commit: Option<Arc<CommitEvents>>,
) {
    if tasks
        .get(task_id)
        .is_some_and(|k| k.state.version >= state.version)
    {
        return;
    }
    let kept = Kept {
        state: state.clone(),
        commit,
    };
    tasks.insert(task_id.clone(), kept);
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskledger_domain::task::TaskAggregate;

    fn at(version: u64) -> Arc<TaskAggregate> {
        Arc::new(TaskAggregate {
            version,
            ..Default::default()
        })
    }

    fn id(s: &str) -> TaskId {
        TaskId::parse(s).unwrap()
    }

    #[test]
    fn given_a_kept_state_when_an_older_one_is_put_then_the_newer_stays() {
        let c = StateCache::new(4);
        c.put(&id("t"), &at(5));
        c.put(&id("t"), &at(4));
        assert_eq!(c.get(&id("t")).map(|s| s.version), Some(5));
        c.put(&id("t"), &at(6));
        assert_eq!(c.get(&id("t")).map(|s| s.version), Some(6));
    }

    #[test]
    fn given_a_full_cache_when_one_more_task_is_kept_then_the_least_recently_used_goes() {
        let c = StateCache::new(2);
        c.put(&id("a"), &at(1));
        c.put(&id("b"), &at(1));
        c.get(&id("a"));
        c.put(&id("c"), &at(1));
        assert!(c.get(&id("b")).is_none(), "b was used least recently");
        assert!(c.get(&id("a")).is_some());
        assert!(c.get(&id("c")).is_some());
    }

    #[test]
    fn given_a_kept_state_when_it_is_forgotten_then_it_is_read_again() {
        let c = StateCache::new(2);
        c.put(&id("a"), &at(3));
        c.forget(&id("a"));
        assert!(c.get(&id("a")).is_none());
    }

    fn events() -> Arc<CommitEvents> {
        Arc::new(CommitEvents {
            first_seq: 1,
            events: Vec::new(),
        })
    }

    #[test]
    fn given_no_commit_asking_for_a_turn_when_a_turn_asks_then_it_does_not_wait() {
        let c = StateCache::new(2);
        assert!(c.after_asking(&id("t")).is_none());
        drop(c.asking(&id("t")));
        assert!(
            c.after_asking(&id("t")).is_none(),
            "a refused commit is over"
        );
    }

    #[test]
    fn given_a_commit_asking_for_a_turn_when_it_keeps_its_state_then_the_waiting_turn_goes_on_and_finds_it(
    ) {
        let c = StateCache::new(2);
        let t = id("t");
        let asking = c.asking(&t);
        let mut waiting = c.after_asking(&t).expect("a commit is under way");
        assert!(waiting.try_recv().is_err(), "still under way");
        assert!(
            c.after_asking(&id("other")).is_none(),
            "only its own task waits"
        );
        asking.kept(&at(2), events());
        assert!(waiting.try_recv().is_ok());
        let (state, commit) = c.get_with_commit(&t).expect("kept");
        assert_eq!((state.version, commit.is_some()), (2, true));
        assert!(c.after_asking(&t).is_none());
    }

    #[test]
    fn given_a_commit_asking_for_a_turn_when_it_ends_without_keeping_then_the_turn_goes_on() {
        let c = StateCache::new(2);
        let t = id("t");
        let asking = c.asking(&t);
        let mut waiting = c.after_asking(&t).expect("under way");
        drop(asking);
        assert!(
            waiting.try_recv().is_ok(),
            "a failed or cancelled commit ends the wait"
        );
        assert!(c.get(&t).is_none());
    }

    #[test]
    fn given_two_commits_of_a_task_asking_for_turns_when_one_ends_then_the_turn_waits_for_the_other(
    ) {
        let c = StateCache::new(2);
        let t = id("t");
        let (first, second) = (c.asking(&t), c.asking(&t));
        let mut waiting = c.after_asking(&t).expect("under way");
        first.kept(&at(2), events());
        assert!(waiting.try_recv().is_err(), "the second is still under way");
        second.kept(&at(3), events());
        assert!(waiting.try_recv().is_ok());
        assert_eq!(c.get(&t).map(|s| s.version), Some(3));
    }
}
