//! Where a stream poller stands in one shard, and what it makes of each record it reads: pure,
//! so each rule is tested without a stream. It remembers a window of the records it relayed
//! (sequence number and a digest of the new image), which lets it tell a healthy iterator from
//! one that reads a copy of the shard that no longer receives records (moto swaps its table for
//! a deep copy whenever a transaction is canceled, and may reuse the sequence numbers of records
//! it rolled back).

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};

use serde_json::Value;

/// Records remembered, newest last.
pub const RELAYED_WINDOW: usize = 1024;
/// Empty reads in a row before the iterator is renewed at the last relayed record.
pub const REANCHOR_AFTER_EMPTY_READS: u32 = 10;
/// Empty reads of a renewed iterator before the last record is taken to be gone.
pub const ANCHOR_EMPTY_READS: u32 = 3;

/// Stream sequence numbers are decimal strings of up to 40 digits: compare them as numbers.
pub fn seq_after(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim_start_matches('0'), b.trim_start_matches('0'));
    (a.len(), a) > (b.len(), b)
}

/// A digest of a record's new image (records without one digest alike).
pub fn digest(image: Option<&Value>) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    image.map(Value::to_string).hash(&mut h);
    h.finish()
}

/// Where the next read starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Position {
    /// At this sequence number.
    At(String),
    /// At the oldest record the stream keeps.
    Horizon,
}

/// What to do with one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admit {
    Relay,
    /// Already relayed (the record a renewed iterator starts at, or one found again while
    /// resynchronising): skip it quietly.
    Known,
    /// At or before the last relayed record on a healthy iterator: skip it, and say so.
    ReRead,
    /// The shard does not hold what was relayed: stop this read and start again here.
    Diverged(Position),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    /// Reading on after the last relayed record.
    Follow,
    /// Renewed at the last relayed record: the first record read must be that one.
    Anchored { empty: u32 },
    /// Reading the window's span again: records not in the window are new, and the first one
    /// after `until` (the last relayed before) ends it. `seen_any`: a record was read since.
    Resync {
        until: String,
        from_horizon: bool,
        seen_any: bool,
    },
}

#[derive(Debug, Clone)]
pub struct ShardCursor {
    window: VecDeque<(String, u64)>,
    mode: Mode,
    empty_reads: u32,
}

impl Default for ShardCursor {
    fn default() -> Self {
        Self {
            window: VecDeque::new(),
            mode: Mode::Follow,
            empty_reads: 0,
        }
    }
}

impl ShardCursor {
    pub fn last_seq(&self) -> Option<&str> {
        self.window.back().map(|(s, _)| s.as_str())
    }

    /// Where a renewed iterator starts: at the last relayed record, or the oldest kept.
    pub fn renew(&mut self) -> Position {
        self.empty_reads = 0;
        match self.last_seq() {
            Some(seq) => {
                let at = Position::At(seq.to_string());
                self.mode = Mode::Anchored { empty: 0 };
                at
            }
            None => Position::Horizon,
        }
    }

    /// Records up to the oldest kept were trimmed before they were read.
    pub fn trimmed(&mut self) -> Position {
        self.window.clear();
        self.mode = Mode::Follow;
        Position::Horizon
    }

    fn resync(&mut self) -> Position {
        let until = self.last_seq().unwrap_or_default().to_string();
        match self.window.front() {
            Some((oldest, _)) => {
                let at = Position::At(oldest.clone());
                self.mode = Mode::Resync {
                    until,
                    from_horizon: false,
                    seen_any: false,
                };
                at
            }
            None => {
                self.mode = Mode::Follow;
                Position::Horizon
            }
        }
    }

    /// One record read, in order.
    pub fn admit(&mut self, seq: &str, digest: u64) -> Admit {
        self.empty_reads = 0;
        match &mut self.mode {
            Mode::Anchored { .. } => {
                if self
                    .window
                    .back()
                    .is_some_and(|(s, d)| s == seq && *d == digest)
                {
                    self.mode = Mode::Follow;
                    return Admit::Known;
                }
                Admit::Diverged(self.resync())
            }
            Mode::Resync {
                until, seen_any, ..
            } => {
                *seen_any = true;
                if self.window.iter().any(|(s, d)| s == seq && *d == digest) {
                    return Admit::Known;
                }
                if seq_after(seq, until) {
                    self.mode = Mode::Follow;
                }
                Admit::Relay
            }
            Mode::Follow => match self.last_seq() {
                Some(last) if !seq_after(seq, last) => Admit::ReRead,
                _ => Admit::Relay,
            },
        }
    }

    /// A record was relayed.
    pub fn relayed(&mut self, seq: &str, digest: u64) {
        self.window.push_back((seq.to_string(), digest));
        if self.window.len() > RELAYED_WINDOW {
            self.window.pop_front();
        }
    }

    /// A read returned nothing; returns where to read instead, if anywhere.
    pub fn empty_read(&mut self) -> Option<Position> {
        match &mut self.mode {
            Mode::Anchored { empty } => {
                *empty += 1;
                (*empty >= ANCHOR_EMPTY_READS).then(|| self.resync())
            }
            Mode::Resync {
                from_horizon,
                seen_any,
                ..
            } => {
                if *seen_any || *from_horizon {
                    // At the end of what the shard holds: new records come next.
                    return None;
                }
                // The shard does not even hold the window's oldest record: read all it holds.
                *from_horizon = true;
                Some(Position::Horizon)
            }
            Mode::Follow => {
                self.empty_reads += 1;
                if self.empty_reads < REANCHOR_AFTER_EMPTY_READS {
                    return None;
                }
                Some(self.renew())
            }
        }
    }

    /// True while re-reading after a divergence (records relayed then were missed before).
    pub fn resynchronising(&self) -> bool {
        matches!(self.mode, Mode::Resync { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relayed(c: &mut ShardCursor, seqs: &[(&str, u64)]) {
        for (s, d) in seqs {
            assert_eq!(c.admit(s, *d), Admit::Relay, "{s}");
            c.relayed(s, *d);
        }
    }

    #[test]
    fn sequence_numbers_compare_as_numbers() {
        assert!(seq_after("100", "99"));
        assert!(!seq_after("99", "100"));
        assert!(!seq_after("100", "100"));
        assert!(seq_after(
            "1100000000017454423010",
            "1100000000017454423009"
        ));
        assert!(seq_after("000101", "100"));
    }

    #[test]
    fn a_healthy_iterator_relays_in_order_and_flags_a_re_read() {
        let mut c = ShardCursor::default();
        relayed(&mut c, &[("1", 1), ("2", 2)]);
        assert_eq!(c.admit("2", 2), Admit::ReRead);
        assert_eq!(c.admit("1", 9), Admit::ReRead);
        assert_eq!(c.admit("3", 3), Admit::Relay);
    }

    #[test]
    fn a_quiet_shard_is_renewed_at_the_last_record_which_is_then_known() {
        let mut c = ShardCursor::default();
        relayed(&mut c, &[("1", 1), ("2", 2)]);
        for _ in 1..REANCHOR_AFTER_EMPTY_READS {
            assert_eq!(c.empty_read(), None);
        }
        assert_eq!(c.empty_read(), Some(Position::At("2".into())));
        assert_eq!(c.admit("2", 2), Admit::Known);
        assert_eq!(c.admit("3", 3), Admit::Relay);
    }

    #[test]
    fn a_quiet_shard_with_nothing_relayed_is_read_from_the_horizon() {
        let mut c = ShardCursor::default();
        for _ in 1..REANCHOR_AFTER_EMPTY_READS {
            assert_eq!(c.empty_read(), None);
        }
        assert_eq!(c.empty_read(), Some(Position::Horizon));
    }

    #[test]
    fn another_record_at_the_anchor_resyncs_and_relays_only_what_is_new() {
        // Relayed 1, 2 and then 3 and 4, which the shard later rolled back; it reused 3 and 4.
        let mut c = ShardCursor::default();
        relayed(&mut c, &[("1", 1), ("2", 2), ("3", 30), ("4", 40)]);
        assert_eq!(c.renew(), Position::At("4".into()));
        assert_eq!(c.admit("4", 41), Admit::Diverged(Position::At("1".into())));
        assert!(c.resynchronising());
        assert_eq!(c.admit("1", 1), Admit::Known);
        assert_eq!(c.admit("2", 2), Admit::Known);
        assert_eq!(c.admit("3", 31), Admit::Relay);
        c.relayed("3", 31);
        assert_eq!(c.admit("4", 41), Admit::Relay);
        c.relayed("4", 41);
        assert_eq!(c.admit("5", 50), Admit::Relay);
        assert!(!c.resynchronising());
        c.relayed("5", 50);
        assert_eq!(c.admit("5", 50), Admit::ReRead);
    }

    #[test]
    fn a_renewed_iterator_that_finds_nothing_at_the_anchor_resyncs() {
        // The shard rolled back 3 and holds only 1 and 2.
        let mut c = ShardCursor::default();
        relayed(&mut c, &[("1", 1), ("2", 2), ("3", 30)]);
        assert_eq!(c.renew(), Position::At("3".into()));
        for _ in 1..ANCHOR_EMPTY_READS {
            assert_eq!(c.empty_read(), None);
        }
        assert_eq!(c.empty_read(), Some(Position::At("1".into())));
        assert_eq!(c.admit("1", 1), Admit::Known);
        assert_eq!(c.admit("2", 2), Admit::Known);
        assert_eq!(c.admit("3", 31), Admit::Relay);
    }

    #[test]
    fn a_shard_without_the_window_s_oldest_record_is_read_from_the_horizon() {
        let mut c = ShardCursor::default();
        relayed(&mut c, &[("5", 5), ("6", 6)]);
        assert_eq!(c.renew(), Position::At("6".into()));
        assert_eq!(c.admit("6", 60), Admit::Diverged(Position::At("5".into())));
        assert_eq!(c.empty_read(), Some(Position::Horizon));
        assert_eq!(c.admit("5", 5), Admit::Known);
        assert_eq!(
            c.empty_read(),
            None,
            "at the end of the shard: wait for records"
        );
        assert!(c.resynchronising());
        assert_eq!(
            c.admit("6", 61),
            Admit::Relay,
            "a record in the rolled-back place"
        );
        c.relayed("6", 61);
        assert_eq!(c.admit("7", 7), Admit::Relay);
        assert!(!c.resynchronising());
    }

    #[test]
    fn trimmed_records_restart_at_the_horizon_with_an_empty_window() {
        let mut c = ShardCursor::default();
        relayed(&mut c, &[("5", 5)]);
        assert_eq!(c.trimmed(), Position::Horizon);
        assert_eq!(c.last_seq(), None);
        assert_eq!(c.admit("9", 9), Admit::Relay);
    }

    #[test]
    fn the_window_keeps_the_newest_records() {
        let mut c = ShardCursor::default();
        for i in 0..(RELAYED_WINDOW as u64 + 5) {
            c.relayed(&(i + 1).to_string(), i);
        }
        assert_eq!(c.window.len(), RELAYED_WINDOW);
        assert_eq!(c.window.front().map(|w| w.0.as_str()), Some("6"));
    }
}
