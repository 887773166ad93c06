//! How the writer thread forms a group of commits for one transaction (group commit).
//!
//! A transaction writes every page it changed to the WAL once, however many commits changed
//! it: the newest pages of the events, the feed, the lists' indexes and the database header
//! are shared by the commits of a group. Under load a SendMessage wrote ~80-90 KB (the WAL and
//! the checkpointer's copies; ~17 pages a transaction, ~2.4 commits a group). So once commits
//! arrive side by side, a group waits `GROUP_LINGER` at most for company, until it holds
//! `LINGER_UNTIL` commits (ADR 027, issue 55). One client never makes the writer wait: its
//! request's commit and its turn's are two at most, and waiting starts at `BUSY_FROM` (a rule
//! of "the last group held two", or one of the arrival rate, made one client wait after its
//! turns: 0.75-0.8x its sends).

use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant};

/// Most commits applied in one SQLite transaction (group commit).
pub const MAX_GROUP_COMMIT: usize = 64;

/// How long a group waits for more commits to join it once it has taken what was queued, when
/// the group before it was busy.
pub const GROUP_LINGER: Duration = Duration::from_micros(150);

/// A waiting group stops waiting once it holds this many commits (it still takes what is
/// queued, up to `MAX_GROUP_COMMIT`).
pub const LINGER_UNTIL: usize = 6;

/// A group of at least this many commits shows commits arriving side by side (one client
/// makes groups of two at most): the next group waits for company.
pub const BUSY_FROM: usize = 3;

/// While groups wait, one of at least this many keeps the next one waiting; a smaller one
/// (the load is gone) stops it.
pub const KEEP_FROM: usize = 2;

/// Whether groups wait for company, from the size of the last one.
#[derive(Debug, Default)]
pub(super) struct Busy {
    waiting: bool,
}

impl Busy {
    /// The group before held `last` commits: whether the next one waits.
    pub(super) fn next_group(&mut self, last: usize) -> bool {
        self.waiting = last >= if self.waiting { KEEP_FROM } else { BUSY_FROM };
        self.waiting
    }
}

/// `first` and what is queued behind it, up to `MAX_GROUP_COMMIT`; with `linger`, the group
/// also waits that long at most for more while it holds fewer than `LINGER_UNTIL`.
pub(super) fn gather<T>(jobs: &Receiver<T>, first: T, linger: Option<Duration>) -> Vec<T> {
    let mut group = vec![first];
    let until = linger.map(|d| Instant::now() + d);
    while group.len() < MAX_GROUP_COMMIT {
        let next = match (jobs.try_recv(), until) {
            (Ok(job), _) => Some(job),
            (Err(TryRecvError::Empty), Some(until)) if group.len() < LINGER_UNTIL => {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    None
                } else {
                    jobs.recv_timeout(left).ok()
                }
            }
            (Err(_), _) => None,
        };
        match next {
            Some(job) => group.push(job),
            None => break,
        }
    }
    group
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;

    use super::*;

    /// Whether each group of `sizes` in turn made the next one wait.
    fn waits(sizes: &[usize]) -> Vec<bool> {
        let mut busy = Busy::default();
        sizes.iter().map(|&n| busy.next_group(n)).collect()
    }

    #[test]
    fn one_clients_groups_of_one_and_two_never_make_the_writer_wait() {
        assert!(waits(&[1, 2, 1, 2, 2, 1, 2, 2, 2]).iter().all(|w| !w));
    }

    #[test]
    fn waiting_starts_at_busy_from_and_not_below() {
        assert_eq!(waits(&[BUSY_FROM - 1]), [false]);
        assert_eq!(waits(&[BUSY_FROM]), [true]);
    }

    #[test]
    fn waiting_goes_on_from_keep_from_and_stops_below_it() {
        assert_eq!(
            waits(&[BUSY_FROM, 6, KEEP_FROM, KEEP_FROM - 1, KEEP_FROM]),
            [true, true, true, false, false]
        );
    }

    #[test]
    fn a_group_that_does_not_linger_takes_only_what_is_queued() {
        let (tx, rx) = channel();
        tx.send(2).unwrap();
        tx.send(3).unwrap();
        assert_eq!(gather(&rx, 1, None), vec![1, 2, 3]);
        tx.send(4).unwrap();
        assert_eq!(gather(&rx, 5, None), vec![5, 4], "left for the next group");
    }

    #[test]
    fn a_group_holds_max_group_commit_and_one_past_it_waits_for_the_next() {
        let (tx, rx) = channel();
        for i in 1..=MAX_GROUP_COMMIT {
            tx.send(i).unwrap();
        }
        let group = gather(&rx, 0, Some(GROUP_LINGER));
        assert_eq!(group.len(), MAX_GROUP_COMMIT);
        assert_eq!(
            rx.try_recv(),
            Ok(MAX_GROUP_COMMIT),
            "one past: the next group's"
        );
    }

    #[test]
    fn a_lingering_group_takes_commits_that_arrive_while_it_waits_until_it_holds_linger_until() {
        let (tx, rx) = channel();
        let (go, last) = channel::<()>();
        // Sent while the group waits (a long linger, so a slow machine cannot miss them); the
        // group stops at `LINGER_UNTIL` without waiting out the linger. The one past the bound
        // is sent only once the group is formed: it is the next group's.
        let sender = std::thread::spawn(move || {
            for i in 1..LINGER_UNTIL {
                std::thread::sleep(Duration::from_millis(5));
                tx.send(i).unwrap();
            }
            last.recv().unwrap();
            tx.send(LINGER_UNTIL).unwrap();
        });
        let started = Instant::now();
        let group = gather(&rx, 0, Some(Duration::from_secs(30)));
        assert_eq!(group, (0..LINGER_UNTIL).collect::<Vec<_>>());
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "stopped at the bound"
        );
        go.send(()).unwrap();
        sender.join().unwrap();
        assert_eq!(
            rx.recv(),
            Ok(LINGER_UNTIL),
            "one past the bound: the next group's"
        );
    }

    #[test]
    fn a_lingering_group_ends_when_the_linger_is_over() {
        let (tx, rx) = channel::<usize>();
        assert_eq!(gather(&rx, 0, Some(Duration::from_millis(1))), vec![0]);
        drop(tx);
        // A closed queue ends the wait at once.
        assert_eq!(gather(&rx, 0, Some(Duration::from_secs(30))), vec![0]);
    }
}
