//! One job at a time per task, in the order they were handed over: a task's turns, relayed
//! events and deliveries never overtake each other, while tasks run side by side. A task's
//! queue exists only while it has jobs. And the one jitter every backoff uses.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

type Job = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Uniform in [0, 1): the jitter of every backoff (commit retries, push retries).
pub fn jitter() -> f64 {
    (uuid::Uuid::new_v4().as_u128() % 1_000_000) as f64 / 1_000_000.0
}

#[derive(Clone, Default)]
pub struct PerTask {
    queues: Arc<Mutex<HashMap<String, UnboundedSender<Job>>>>,
}

impl PerTask {
    /// Runs `job` after the jobs handed over before for the same task.
    pub fn submit(&self, task_id: &str, job: impl Future<Output = ()> + Send + 'static) {
        let Ok(mut queues) = self.queues.lock() else {
            return;
        };
        let job: Job = Box::pin(job);
        let job = match queues.get(task_id) {
            // The worker removes its entry under this lock, so a listed queue is alive.
            Some(tx) => match tx.send(job) {
                Ok(()) => return,
                Err(e) => e.0,
            },
            None => job,
        };
        let (tx, rx) = unbounded_channel();
        queues.insert(task_id.to_string(), tx);
        tokio::spawn(run(self.queues.clone(), task_id.to_string(), job, rx));
    }

    /// Tasks with jobs queued or running.
    pub fn len(&self) -> usize {
        self.queues.lock().map(|q| q.len()).unwrap_or_default()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

async fn run(
    queues: Arc<Mutex<HashMap<String, UnboundedSender<Job>>>>,
    task_id: String,
    first: Job,
    mut rx: UnboundedReceiver<Job>,
) {
    let mut next = Some(first);
    while let Some(job) = next.take() {
        job.await;
        let Ok(mut q) = queues.lock() else { return };
        match rx.try_recv() {
            Ok(job) => next = Some(job),
            Err(_) => {
                q.remove(&task_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_task_s_jobs_run_in_order_one_at_a_time_and_tasks_side_by_side() {
        let per_task = PerTask::default();
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        for i in 0..20u64 {
            let log = log.clone();
            per_task.submit("t", async move {
                // later jobs are quicker: only the queue keeps them in order
                tokio::time::sleep(Duration::from_millis(20 - i)).await;
                log.lock().unwrap().push(format!("t{i}"));
            });
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        per_task.submit("u", async move {
            let _ = tx.send(());
        });
        tokio::time::timeout(Duration::from_millis(100), rx)
            .await
            .expect("u does not wait for t")
            .unwrap();
        for _ in 0..100 {
            if per_task.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(per_task.is_empty(), "queues go away with their last job");
        let expected: Vec<String> = (0..20).map(|i| format!("t{i}")).collect();
        assert_eq!(*log.lock().unwrap(), expected);
    }
}
