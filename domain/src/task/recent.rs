//! The most recent messages of a task's history, kept in its head (bounded by count and size),
//! so a reader asking for a short history reads the head only; the full history stays in the
//! read model's history rows.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::ids::HistoryLength;
use crate::wire::Message;

/// Messages the head keeps at most.
pub const RECENT_MESSAGES: usize = 10;
/// JSON bytes of the messages the head keeps at most (a larger message is not kept: a reader
/// asking for it reads the history rows).
pub const RECENT_BYTES: usize = 4 * 1024;

/// The last messages of history, oldest first, with their JSON sizes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecentHistory {
    messages: VecDeque<Message>,
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
        if size > RECENT_BYTES {
            self.messages.clear();
            self.sizes.clear();
            return;
        }
        self.messages.push_back(m.clone());
        self.sizes.push_back(size as u32);
        let mut total: usize = self.sizes.iter().map(|s| *s as usize).sum();
        while self.messages.len() > RECENT_MESSAGES || total > RECENT_BYTES {
            self.messages.pop_front();
            total -= self.sizes.pop_front().map(|s| s as usize).unwrap_or(0);
        }
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
        Some(Some(self.messages.iter().skip(skip).cloned().collect()))
    }

    /// At most the last `n` messages it holds (a server default may return fewer).
    pub fn last(&self, n: usize) -> Vec<Message> {
        let skip = self.messages.len().saturating_sub(n);
        self.messages.iter().skip(skip).cloned().collect()
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
}
