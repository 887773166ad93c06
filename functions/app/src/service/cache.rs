//! The latest state of the tasks this process used last, as it committed or read them (ADR 025).
//! A read uses a kept state only if the store's head is still at its version (one small read
//! instead of loading and parsing the task); a command decides on it as it is, since the
//! store's version check refuses a commit decided on an out-of-date state, and the retry reads
//! the store. So other processes on the same store (a second server, `taskledger work
//! advance`) are seen at once.

use std::sync::{Arc, Mutex};

use hashlink::LruCache;
use taskledger_domain::ids::TaskId;
use taskledger_domain::task::{TaskAggregate, TaskEvent};

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

pub(crate) struct StateCache {
    tasks: Mutex<LruCache<TaskId, Kept>>,
}

impl StateCache {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            tasks: Mutex::new(LruCache::new(capacity.max(1))),
        }
    }

    /// The state last seen of `task_id`, if kept.
    pub(crate) fn get(&self, task_id: &TaskId) -> Option<Arc<TaskAggregate>> {
        self.tasks
            .lock()
            .ok()?
            .get(task_id)
            .map(|k| k.state.clone())
    }

    /// The state last seen of `task_id` and, if this process's commit left it, that commit's
    /// events.
    pub(crate) fn get_with_commit(
        &self,
        task_id: &TaskId,
    ) -> Option<(Arc<TaskAggregate>, Option<Arc<CommitEvents>>)> {
        let mut tasks = self.tasks.lock().ok()?;
        tasks
            .get(task_id)
            .map(|k| (k.state.clone(), k.commit.clone()))
    }

    /// Keeps `state` unless a newer version of the task is kept already (a read that started
    /// before a commit may end after it).
    pub(crate) fn put(&self, task_id: &TaskId, state: &Arc<TaskAggregate>) {
        self.insert(task_id, state, None);
    }

    /// Keeps the state a commit left, with the commit's events.
    pub(crate) fn put_committed(
        &self,
        task_id: &TaskId,
        state: &Arc<TaskAggregate>,
        commit: Option<Arc<CommitEvents>>,
    ) {
        self.insert(task_id, state, commit);
    }

    fn insert(
        &self,
        task_id: &TaskId,
        state: &Arc<TaskAggregate>,
        commit: Option<Arc<CommitEvents>>,
    ) {
        let Ok(mut tasks) = self.tasks.lock() else {
            return;
        };
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

    /// Drops what is kept of `task_id` (it was found out of date).
    pub(crate) fn forget(&self, task_id: &TaskId) {
        if let Ok(mut tasks) = self.tasks.lock() {
            tasks.remove(task_id);
        }
    }
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
}
