//! The most recent messages of a task's history, kept in its head (bounded by count and size),
//! so a reader asking for a short history reads the head only. The read model's history rows
//! hold what the tail let go of (ADR 029): a message is written as a row when it leaves the tail,
//! not when it enters history, so a task whose whole history fits the tail has no rows at all.
//! The rows are always the history's first `history_len - len()` messages.

use std::collections::VecDeque;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::ids::HistoryLength;
use crate::wire::Message;

/// Messages the head keeps at most.
pub const RECENT_MESSAGES: usize = 10;
/// JSON bytes of the messages the head keeps at most (a larger message is not kept: a reader
/// asking for it reads the history rows).
pub const RECENT_BYTES: usize = 4 * 1024;

/// What leaves the tail when a message enters it.
enum Leaving {
    /// The message is over `RECENT_BYTES`: everything, the message with it.
    All,
    /// The oldest `n` messages.
    Oldest(usize),
}

/// The last messages of history, oldest first, with their JSON sizes. Each message is shared
/// (`Arc`): a commit's new state is a copy of the one before it, and copying a head then
/// copies pointers, not the messages (the same JSON either way).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecentHistory {
    messages: VecDeque<Arc<Message>>,
    sizes: VecDeque<u32>,
}

impl RecentHistory {
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Keeps `m` as the newest message, dropping the oldest ones past the bounds. A message
    /// over `RECENT_BYTES` on its own empties the tail: what it holds must end at the newest.
    pub fn push(&mut self, m: &Message) {
        let size = crate::wire::json_size(m);
        match self.leaving(size) {
            Leaving::All => {
                self.messages.clear();
                self.sizes.clear();
            }
            Leaving::Oldest(n) => {
                // Bounded by each deque's own length: a stored tail whose two lists disagree
                // (a damaged snapshot) must not panic here.
                self.messages.drain(..n.min(self.messages.len()));
                self.sizes.drain(..n.min(self.sizes.len()));
                self.messages.push_back(Arc::new(m.clone()));
                self.sizes.push_back(size as u32);
            }
        }
    }

    /// The messages that leave the tail when `m` enters it as history position `pos`, oldest
    /// first with their positions (`m` itself when it is over `RECENT_BYTES`): the history rows
    /// the read model writes for it. The tail holds positions `pos - len()` to `pos - 1`.
    pub fn spilled_by(&self, m: &Message, pos: u64) -> Vec<(u64, Message)> {
        let first = pos.saturating_sub(self.messages.len() as u64);
        let at = |i: usize| first + i as u64;
        match self.leaving(crate::wire::json_size(m)) {
            Leaving::All => self
                .messages
                .iter()
                .enumerate()
                .map(|(i, old)| (at(i), Message::clone(old)))
                .chain(std::iter::once((pos, m.clone())))
                .collect(),
            Leaving::Oldest(n) => self
                .messages
                .iter()
                .take(n)
                .enumerate()
                .map(|(i, old)| (at(i), Message::clone(old)))
                .collect(),
        }
    }

    /// What leaves the tail when a message of `size` JSON bytes enters it: the one rule both
    /// `push` and `spilled_by` follow.
    fn leaving(&self, size: usize) -> Leaving {
        if size > RECENT_BYTES {
            return Leaving::All;
        }
        let mut count = self.messages.len() + 1;
        let mut total: usize = self.sizes.iter().map(|s| *s as usize).sum::<usize>() + size;
        let mut n = 0;
        // The message alone fits: at most every message held leaves (bounded by what it holds
        // even when a damaged snapshot's sizes disagree with its messages).
        while n < self.messages.len() && (count > RECENT_MESSAGES || total > RECENT_BYTES) {
            total -= self.sizes.get(n).map(|s| *s as usize).unwrap_or(0);
            count -= 1;
            n += 1;
        }
        Leaving::Oldest(n)
    }

    /// Every message it holds, oldest first.
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.messages.iter().map(|m| &**m)
    }

    /// The history a reader asked for, when the tail holds all of it: `Some(None)` for no
    /// history, `Some(Some(messages))` for the last ones; `None` when the history rows must be
    /// read. `history_len` is the length of the whole history.
    pub fn view(&self, history_len: u64, asked: HistoryLength) -> Option<Option<Vec<Message>>> {
        let want = match asked {
            HistoryLength::Last(0) => return Some(None),
            HistoryLength::Last(n) => (n as u64).min(history_len),
            HistoryLength::All => history_len,
        };
        if want > self.messages.len() as u64 {
            return None;
        }
        let skip = self.messages.len() - want as usize;
        Some(Some(self.messages().skip(skip).cloned().collect()))
    }

    /// At most the last `n` messages it holds (a server default may return fewer).
    pub fn last(&self, n: usize) -> Vec<Message> {
        let skip = self.messages.len().saturating_sub(n);
        self.messages().skip(skip).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(i: usize, text_len: usize) -> Message {
        Message::agent_text(format!("m{i}"), "x".repeat(text_len))
    }

    fn ids(v: &[Message]) -> Vec<String> {
        v.iter().map(|m| m.message_id.clone()).collect()
    }

    #[test]
    fn given_short_history_when_asked_for_all_then_the_tail_answers() {
        let mut r = RecentHistory::default();
        for i in 0..3 {
            r.push(&msg(i, 10));
        }
        assert_eq!(
            ids(&r.view(3, HistoryLength::All).unwrap().unwrap()),
            ["m0", "m1", "m2"]
        );
        assert_eq!(
            ids(&r.view(3, HistoryLength::Last(2)).unwrap().unwrap()),
            ["m1", "m2"]
        );
        assert_eq!(
            ids(&r.view(3, HistoryLength::Last(9)).unwrap().unwrap()).len(),
            3
        );
        assert_eq!(r.view(3, HistoryLength::Last(0)), Some(None));
    }

    #[test]
    fn given_more_than_the_bound_when_pushed_then_the_oldest_go_and_all_needs_the_rows() {
        let mut r = RecentHistory::default();
        for i in 0..RECENT_MESSAGES + 1 {
            r.push(&msg(i, 10));
        }
        assert_eq!(r.len(), RECENT_MESSAGES);
        let total = RECENT_MESSAGES as u64 + 1;
        assert!(r.view(total, HistoryLength::All).is_none());
        let last = r
            .view(total, HistoryLength::Last(RECENT_MESSAGES as u32))
            .unwrap()
            .unwrap();
        assert_eq!(last[0].message_id, "m1");
        assert!(r
            .view(total, HistoryLength::Last(RECENT_MESSAGES as u32 + 1))
            .is_none());
    }

    #[test]
    fn given_the_byte_bound_when_reached_then_kept_and_one_past_then_trimmed() {
        let size_of = |m: &Message| serde_json::to_vec(m).unwrap().len();
        let base = size_of(&msg(0, 0));
        // One message of exactly RECENT_BYTES is kept; one byte more is not.
        let mut r = RecentHistory::default();
        r.push(&msg(0, RECENT_BYTES - base));
        assert_eq!(r.len(), 1);
        r.push(&msg(1, RECENT_BYTES - base + 1));
        assert!(
            r.is_empty(),
            "a message over the bound alone empties the tail"
        );
        // Two halves fit; a third byte pushes the oldest out.
        let mut r = RecentHistory::default();
        r.push(&msg(0, RECENT_BYTES / 2 - base));
        r.push(&msg(1, RECENT_BYTES / 2 - base));
        assert_eq!(r.len(), 2);
        r.push(&msg(2, 1));
        assert_eq!(ids(&r.last(9)), ["m1", "m2"]);
    }

    /// Pushes `m` as position `pos` and returns what it spilled, checking that the tail and
    /// the rows together still hold positions 0..=pos in order.
    fn enter(r: &mut RecentHistory, rows: &mut Vec<(u64, Message)>, m: Message, pos: u64) {
        let spilled = r.spilled_by(&m, pos);
        r.push(&m);
        rows.extend(spilled);
        let positions: Vec<u64> = rows.iter().map(|(p, _)| *p).collect();
        let first_in_tail = pos + 1 - r.len() as u64;
        assert_eq!(positions, (0..first_in_tail).collect::<Vec<_>>());
    }

    #[test]
    fn given_a_tail_with_room_when_a_message_enters_then_nothing_is_spilled() {
        let mut r = RecentHistory::default();
        for i in 0..RECENT_MESSAGES - 1 {
            r.push(&msg(i, 10));
        }
        assert!(r
            .spilled_by(&msg(99, 10), RECENT_MESSAGES as u64 - 1)
            .is_empty());
    }

    #[test]
    fn given_a_full_tail_when_one_more_enters_then_the_oldest_is_spilled_at_its_position() {
        let (mut r, mut rows) = (RecentHistory::default(), Vec::new());
        for i in 0..RECENT_MESSAGES + 2 {
            enter(&mut r, &mut rows, msg(i, 10), i as u64);
        }
        assert_eq!(
            rows.iter()
                .map(|(_, m)| m.message_id.clone())
                .collect::<Vec<_>>(),
            ["m0", "m1"]
        );
        assert_eq!(r.len(), RECENT_MESSAGES);
    }

    #[test]
    fn given_the_byte_bound_when_reached_then_as_many_are_spilled_as_the_tail_drops() {
        let base = serde_json::to_vec(&msg(0, 0)).unwrap().len();
        let (mut r, mut rows) = (RecentHistory::default(), Vec::new());
        enter(&mut r, &mut rows, msg(0, 10), 0);
        enter(&mut r, &mut rows, msg(1, RECENT_BYTES / 2 - base), 1);
        enter(&mut r, &mut rows, msg(2, RECENT_BYTES / 2 - base), 2);
        assert_eq!(rows.len(), 1, "the first leaves to make room");
        enter(&mut r, &mut rows, msg(3, RECENT_BYTES - base), 3);
        assert_eq!(rows.len(), 3, "one at the bound takes the tail for itself");
        assert_eq!(ids(&r.last(9)), ["m3"]);
    }

    #[test]
    fn given_a_message_over_the_byte_bound_when_it_enters_then_it_and_the_tail_are_spilled() {
        let base = serde_json::to_vec(&msg(0, 0)).unwrap().len();
        let (mut r, mut rows) = (RecentHistory::default(), Vec::new());
        enter(&mut r, &mut rows, msg(0, 10), 0);
        enter(&mut r, &mut rows, msg(1, 10), 1);
        enter(&mut r, &mut rows, msg(2, RECENT_BYTES - base + 1), 2);
        assert!(r.is_empty());
        assert_eq!(rows.len(), 3);
        enter(&mut r, &mut rows, msg(3, 10), 3);
        assert_eq!(rows.len(), 3, "the tail takes up again after it");
        assert_eq!(ids(&r.last(9)), ["m3"]);
    }

    #[test]
    fn given_a_stored_tail_whose_lists_disagree_when_a_message_enters_then_nothing_panics() {
        let messages: Vec<Message> = (0..RECENT_MESSAGES + 2).map(|i| msg(i, 10)).collect();
        let mut r: RecentHistory =
            serde_json::from_value(serde_json::json!({"messages": messages, "sizes": []})).unwrap();
        let spilled = r.spilled_by(&msg(99, 10), 20);
        r.push(&msg(99, 10));
        assert_eq!(spilled.len(), 3);
        assert!(r.len() <= RECENT_MESSAGES);
        // More sizes than messages, all over the bound: nothing but the messages can leave.
        let mut r: RecentHistory = serde_json::from_value(
            serde_json::json!({"messages": [], "sizes": [RECENT_BYTES, RECENT_BYTES]}),
        )
        .unwrap();
        assert!(r.spilled_by(&msg(1, 10), 0).is_empty());
        r.push(&msg(1, 10));
        assert_eq!(r.len(), 1);
    }
}
