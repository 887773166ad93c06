//! One turn at a time per task: a map of per-task locks whose entries go away with their last
//! holder, so it holds only tasks with work in flight; and the one jitter every backoff uses.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

type Slot = Arc<tokio::sync::Mutex<()>>;

/// Uniform in [0, 1): the jitter of every backoff (commit retries, push retries).
pub fn jitter() -> f64 {
    (uuid::Uuid::new_v4().as_u128() % 1_000_000) as f64 / 1_000_000.0
}

#[derive(Clone, Default)]
pub struct TaskLocks {
    slots: Arc<Mutex<HashMap<String, Slot>>>,
}

/// Held while a task's turn runs; dropping it lets the next turn of the task in.
pub struct TaskGuard {
    locks: TaskLocks,
    task_id: String,
    slot: Slot,
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl TaskLocks {
    /// Waits for the task's lock.
    pub async fn acquire(&self, task_id: &str) -> TaskGuard {
        let slot = self
            .slots
            .lock()
            .map(|mut m| m.entry(task_id.to_string()).or_default().clone())
            .unwrap_or_default();
        let guard = slot.clone().lock_owned().await;
        TaskGuard {
            locks: self.clone(),
            task_id: task_id.to_string(),
            slot,
            guard: Some(guard),
        }
    }

    /// Tasks with a holder or a waiter.
    pub fn len(&self) -> usize {
        self.slots.lock().map(|m| m.len()).unwrap_or_default()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        drop(self.guard.take());
        if let Ok(mut m) = self.locks.slots.lock() {
            // Only the map and this guard hold the slot: nobody waits for it.
            if Arc::strong_count(&self.slot) == 2 {
                m.remove(&self.task_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_task_s_turns_run_one_at_a_time_and_the_map_empties() {
        let locks = TaskLocks::default();
        let first = locks.acquire("t").await;
        let other = locks.acquire("u").await;
        let waiting = {
            let locks = locks.clone();
            tokio::spawn(async move { locks.acquire("t").await })
        };
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "the second turn of t waits");
        drop(first);
        let second = waiting.await.expect("acquired");
        assert_eq!(locks.len(), 2);
        drop(second);
        drop(other);
        assert!(locks.is_empty());
    }
}
