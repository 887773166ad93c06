//! The feed's newest entries, kept in memory as the writer commits them, so this process's
//! relay reads the entries it was just told of without a read transaction of its own.
//!
//! Under steady commits the relay is woken after nearly every commit and read the feed on a
//! reader connection each time: a read transaction (the WAL index looked at, the reader's page
//! cache dropped, the new pages read again) for one or two rows, ~5 % of a SendMessage's server
//! CPU (perf, issue 55). The writer now hands the rows it committed to the tail, and a read
//! after a cursor is served from it when the tail holds the entry right after that cursor and
//! every one after it up to the answer's end, and answers "nothing newer" after its newest entry
//! only while the change stamp (`stamp.rs`) still reads what this store's own last commit set
//! it to — no process has committed since. Otherwise (at start-up, when a consumer has fallen
//! behind the tail, when another process may have written entries the tail has not seen) the
//! feed is read from the file as before. An entry is in the tail only once its transaction is
//! committed, so the tail never shows what the file does not hold.

use std::collections::VecDeque;
use std::sync::Mutex;

use taskledger_domain::agent::turns::WORK_EVENT;
use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::CommittedEvent;

/// Entries the tail keeps: the newest ones, older ones forgotten first. A relay further behind
/// than this reads the file.
pub const FEED_TAIL_ENTRIES: usize = 512;
/// Bytes of text (pushed updates, traces, ids) the tail keeps at most, older entries forgotten
/// first: pushed updates carry whole artifacts. An entry larger than this alone is not kept
/// (the tail starts over empty, and that entry is read from the file).
pub const FEED_TAIL_BYTES: usize = 4 * 1024 * 1024;

/// A feed entry as a consumer reads it: the same from the file and from the tail.
pub(super) fn feed_event(
    task_id: TaskId,
    seq: u64,
    event_type: String,
    pushed: Option<String>,
    trace: Option<String>,
) -> CommittedEvent {
    CommittedEvent {
        task_id,
        seq,
        pushed,
        // Rows of expired tasks are deleted by the reaper; nothing to stamp.
        finished: false,
        expiring: false,
        // The feed holds work requests, pushed updates and, when the store feeds a lifecycle
        // bus, the events that tell it something.
        lifecycle: event_type != WORK_EVENT,
        event_type,
        trace,
    }
}

/// The newest committed feed entries, positions ascending.
#[derive(Default)]
pub(super) struct FeedTail {
    state: Mutex<TailState>,
}

#[derive(Default)]
struct TailState {
    entries: VecDeque<(u64, CommittedEvent)>,
    /// What `entries` hold, in `size`s.
    bytes: usize,
    /// The change stamp this store's writer set at its last commit, when the tail was told of
    /// it: while the stamp reads this, nothing was committed after the newest entry.
    seen: Option<u64>,
}

/// An entry's bytes of text, as `FEED_TAIL_BYTES` counts them.
fn size(e: &CommittedEvent) -> usize {
    e.task_id.as_str().len()
        + e.event_type.len()
        + e.pushed.as_ref().map_or(0, String::len)
        + e.trace.as_ref().map_or(0, String::len)
}

impl TailState {
    fn push(&mut self, pos: u64, event: CommittedEvent) {
        let bytes = size(&event);
        if bytes > FEED_TAIL_BYTES {
            // Not kept, and nothing before it either: kept, they would look like the newest.
            self.clear();
            return;
        }
        while self.entries.len() >= FEED_TAIL_ENTRIES || self.bytes + bytes > FEED_TAIL_BYTES {
            self.pop_front();
        }
        self.bytes += bytes;
        self.entries.push_back((pos, event));
    }

    fn pop_front(&mut self) {
        if let Some((_, e)) = self.entries.pop_front() {
            self.bytes -= size(&e);
        }
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }
}

impl FeedTail {
    /// Entries of a committed transaction (none, for one that fed nothing), in position order,
    /// and the change stamp its commit set. An entry at or below the newest one kept (a
    /// position given out again: nothing in this store does that) empties the tail first, so
    /// what it holds stays ascending.
    pub(super) fn publish(&self, committed: Vec<(u64, CommittedEvent)>, stamp: u64) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        state.seen = Some(stamp);
        for (pos, event) in committed {
            if state.entries.back().is_some_and(|(last, _)| *last >= pos) {
                state.clear();
            }
            state.push(pos, event);
        }
    }

    /// Entries before `pos` are gone from the file (every consumer has passed them): gone from
    /// the tail too.
    pub(super) fn forget_before(&self, pos: u64) {
        if let Ok(mut state) = self.state.lock() {
            while state.entries.front().is_some_and(|(p, _)| *p < pos) {
                state.pop_front();
            }
        }
    }

    /// The entries after `cursor`, at most `limit`, when the tail holds the one at `cursor + 1`:
    /// the run of consecutive positions from there; none when `cursor` is the newest entry and
    /// the change stamp reads `stamp_now` as the last commit left it. `None`: read the file.
    pub(super) fn after(
        &self,
        cursor: u64,
        limit: u32,
        stamp_now: Option<u64>,
    ) -> Option<Vec<(u64, CommittedEvent)>> {
        let state = self.state.lock().ok()?;
        let entries = &state.entries;
        let (first, newest) = (entries.front()?.0, entries.back()?.0);
        if cursor == newest {
            return (stamp_now.is_some() && stamp_now == state.seen).then(Vec::new);
        }
        let next = cursor.checked_add(1)?;
        if next < first || cursor > newest {
            return None;
        }
        let start = usize::try_from(next - first).ok()?;
        if entries.get(start)?.0 != next {
            // A gap before `next` (entries of another process): the positions are not
            // consecutive here, so where `next` sits is not known.
            return None;
        }
        let mut out: Vec<(u64, CommittedEvent)> = Vec::new();
        for (pos, event) in entries.iter().skip(start).take(limit as usize) {
            if out.last().is_some_and(|(last, _)| *last + 1 != *pos) {
                // Past a gap the file may hold entries the tail has not seen.
                break;
            }
            out.push((*pos, event.clone()));
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stamp the tests' commits leave.
    const STAMP: u64 = 7;

    impl FeedTail {
        fn publish_now(&self, committed: Vec<(u64, CommittedEvent)>) {
            self.publish(committed, STAMP)
        }

        fn after_now(&self, cursor: u64, limit: u32) -> Option<Vec<(u64, CommittedEvent)>> {
            self.after(cursor, limit, Some(STAMP))
        }
    }

    fn entry(pos: u64) -> (u64, CommittedEvent) {
        let id = TaskId::parse(format!("t-{pos}")).unwrap();
        (pos, feed_event(id, 3, WORK_EVENT.into(), None, None))
    }

    fn positions(entries: Option<Vec<(u64, CommittedEvent)>>) -> Option<Vec<u64>> {
        entries.map(|e| e.into_iter().map(|(p, _)| p).collect())
    }

    #[test]
    fn given_consecutive_entries_when_read_after_a_cursor_then_the_run_after_it_up_to_the_limit() {
        let tail = FeedTail::default();
        tail.publish_now((5..=9).map(entry).collect());
        assert_eq!(positions(tail.after_now(4, 10)), Some(vec![5, 6, 7, 8, 9]));
        assert_eq!(positions(tail.after_now(6, 2)), Some(vec![7, 8]));
        assert_eq!(
            positions(tail.after_now(9, 10)),
            Some(vec![]),
            "nothing newer"
        );
    }

    #[test]
    fn given_the_newest_entry_when_a_commit_came_after_it_then_the_file_is_read() {
        let tail = FeedTail::default();
        tail.publish_now((5..=9).map(entry).collect());
        let after = |stamp| positions(tail.after(9, 10, stamp));
        assert_eq!(
            after(Some(STAMP + 1)),
            None,
            "another process committed since"
        );
        assert_eq!(after(None), None, "a commit is under way");
        assert_eq!(after(Some(STAMP)), Some(vec![]));
        tail.publish(Vec::new(), STAMP + 2);
        assert_eq!(
            after(Some(STAMP + 2)),
            Some(vec![]),
            "a commit that fed nothing"
        );
        assert_eq!(
            positions(tail.after(6, 10, Some(STAMP + 3))),
            Some(vec![7, 8, 9]),
            "held entries are served whatever the stamp"
        );
    }

    #[test]
    fn given_a_cursor_before_the_tail_when_read_then_the_file_is_read() {
        let tail = FeedTail::default();
        assert_eq!(
            positions(tail.after_now(0, 10)),
            None,
            "an empty tail knows nothing"
        );
        tail.publish_now((5..=9).map(entry).collect());
        assert_eq!(
            positions(tail.after_now(3, 10)),
            None,
            "entry 4 is not held"
        );
        assert_eq!(
            positions(tail.after_now(10, 10)),
            None,
            "entry 11 is not held yet"
        );
    }

    #[test]
    fn given_a_gap_when_read_then_the_answer_stops_before_it_and_a_read_in_it_goes_to_the_file() {
        let tail = FeedTail::default();
        tail.publish_now(vec![entry(5), entry(6), entry(8), entry(9)]);
        assert_eq!(positions(tail.after_now(4, 10)), Some(vec![5, 6]));
        assert_eq!(
            positions(tail.after_now(6, 10)),
            None,
            "entry 7 is another process's"
        );
        assert_eq!(
            positions(tail.after_now(7, 10)),
            None,
            "where 8 sits is not known"
        );
    }

    #[test]
    fn given_as_many_entries_as_it_keeps_and_one_more_then_only_the_oldest_is_forgotten() {
        let tail = FeedTail::default();
        let full = FEED_TAIL_ENTRIES as u64;
        tail.publish_now((1..=full).map(entry).collect());
        assert_eq!(
            positions(tail.after_now(0, 1)),
            Some(vec![1]),
            "all kept at the bound"
        );
        tail.publish_now(vec![entry(full + 1)]);
        assert_eq!(
            positions(tail.after_now(0, 1)),
            None,
            "one past it: entry 1 is forgotten"
        );
        assert_eq!(
            positions(tail.after_now(1, 1)),
            Some(vec![2]),
            "the oldest kept"
        );
        assert_eq!(positions(tail.after_now(full, 5)), Some(vec![full + 1]));
    }

    /// An entry whose text is `bytes` long in all.
    fn sized(pos: u64, bytes: usize) -> (u64, CommittedEvent) {
        let (pos, mut e) = entry(pos);
        let pushed = bytes - size(&e);
        e.pushed = Some("x".repeat(pushed));
        (pos, e)
    }

    #[test]
    fn given_entries_of_as_many_bytes_as_it_keeps_and_one_more_then_the_oldest_is_forgotten() {
        let tail = FeedTail::default();
        let quarter = FEED_TAIL_BYTES / 4;
        tail.publish_now((1..=4).map(|p| sized(p, quarter)).collect());
        assert_eq!(
            positions(tail.after_now(0, 10)),
            Some(vec![1, 2, 3, 4]),
            "at the bound"
        );
        tail.publish_now(vec![entry(5)]);
        assert_eq!(
            positions(tail.after_now(0, 10)),
            None,
            "past it: 1 is forgotten"
        );
        assert_eq!(positions(tail.after_now(1, 10)), Some(vec![2, 3, 4, 5]));
    }

    #[test]
    fn given_an_entry_larger_than_the_tail_when_published_then_the_tail_starts_over_empty() {
        let tail = FeedTail::default();
        tail.publish_now(vec![entry(1), sized(2, FEED_TAIL_BYTES)]);
        assert_eq!(positions(tail.after_now(0, 10)), None, "1 made room");
        assert_eq!(
            positions(tail.after_now(1, 10)),
            Some(vec![2]),
            "as large as it keeps"
        );
        tail.publish_now(vec![sized(3, FEED_TAIL_BYTES + 1)]);
        assert_eq!(
            positions(tail.after_now(2, 10)),
            None,
            "not \"nothing newer\": 3 is read"
        );
        assert_eq!(positions(tail.after_now(0, 10)), None);
        tail.publish_now(vec![entry(4)]);
        assert_eq!(positions(tail.after_now(3, 10)), Some(vec![4]));
    }

    #[test]
    fn given_entries_pruned_from_the_file_when_read_from_before_them_then_the_file_is_read() {
        let tail = FeedTail::default();
        tail.publish_now((5..=9).map(entry).collect());
        tail.forget_before(7);
        assert_eq!(positions(tail.after_now(4, 10)), None);
        assert_eq!(positions(tail.after_now(6, 10)), Some(vec![7, 8, 9]));
    }

    #[test]
    fn given_a_position_again_when_published_then_the_tail_starts_over_from_it() {
        let tail = FeedTail::default();
        tail.publish_now((5..=9).map(entry).collect());
        tail.publish_now(vec![entry(7)]);
        assert_eq!(positions(tail.after_now(6, 10)), Some(vec![7]));
        assert_eq!(positions(tail.after_now(4, 10)), None);
    }
}
