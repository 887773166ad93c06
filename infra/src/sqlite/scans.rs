//! The threads that run scans (ListTasks pages, counts by state): one per reader connection,
//! for the store's life.
//!
//! A scan takes milliseconds (a page's `COUNT(*)` walks the caller's index entries), too long
//! for the async runtime's threads. On the runtime's blocking pool every concurrent scan ran on
//! a thread of its own, made and ended as load came and went, and each of those threads kept
//! what its scans had allocated (the C allocator's per-thread arenas, where SQLite's pages
//! live): 16 concurrent ListTasks ran on 23 threads and took the server to ~80 MB even with
//! SQLite's heap bounded (`HEAP_LIMIT_BYTES`). A fixed set of threads, as many as there are
//! reader connections to run on, kept it at 53–64 MB; more scans at once would only wait for a
//! connection anyway.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

type Job = Box<dyn FnOnce() + Send>;

/// The queue of scans and the threads that take from it; they end when it is dropped.
pub(super) struct Scans {
    jobs: Sender<Job>,
}

impl Scans {
    /// Starts `threads` scan threads; `None` when not one could be started (scans then run on
    /// the runtime's blocking pool, as before).
    pub(super) fn start(threads: usize) -> Option<Self> {
        let (jobs, queue) = channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        let started = (0..threads.max(1))
            .filter(|i| {
                let queue = queue.clone();
                std::thread::Builder::new()
                    .name(format!("sqlite-scan-{i}"))
                    .spawn(move || run(&queue))
                    .is_ok()
            })
            .count();
        (started > 0).then_some(Self { jobs })
    }

    /// Queues `job`; `false` when no scan thread is left to run it.
    pub(super) fn run(&self, job: impl FnOnce() + Send + 'static) -> bool {
        self.jobs.send(Box::new(job)).is_ok()
    }
}

fn run(queue: &Mutex<Receiver<Job>>) {
    loop {
        // The lock is held only while waiting for the next job, never while one runs.
        let next = match queue.lock() {
            Ok(q) => q.recv(),
            Err(_) => return,
        };
        let Ok(job) = next else { return };
        // A scan that panics fails its own request (its reply is dropped), not the thread.
        let _ = catch_unwind(AssertUnwindSafe(job));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_on_the_scan_threads_and_a_panic_leaves_them_running() {
        let scans = Scans::start(2).expect("threads");
        let (tx, rx) = channel();
        assert!(scans.run(|| panic!("a scan that fails")));
        for i in 0..10 {
            let tx = tx.clone();
            assert!(scans.run(move || {
                let name = std::thread::current().name().map(str::to_string);
                tx.send((i, name)).ok();
            }));
        }
        let mut seen: Vec<_> = (0..10).map(|_| rx.recv().expect("a job ran")).collect();
        seen.sort();
        assert_eq!(seen.len(), 10);
        for (i, (n, name)) in seen.into_iter().enumerate() {
            assert_eq!(n, i);
            assert!(name.is_some_and(|t| t.starts_with("sqlite-scan-")));
        }
    }
}
