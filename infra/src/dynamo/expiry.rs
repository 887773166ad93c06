//! Retention on DynamoDB's list indexes: a finished task whose status time is at or before the
//! caller's cutoff is past its expiry and must not be listed or counted, even before the
//! table's TTL deletes it. Finished tasks sort by the time they finished (`g1sk`), so on the
//! state index the cutoff is a bound of the key condition; the context index carries the state
//! key, so its items are told apart as they are read; the owner index carries neither, so its
//! total has the expired ones (counted on the state index) taken off and a page drops them.

use taskledger_domain::ports::ListQuery;
use taskledger_domain::task::TaskAggregate;
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::TaskState;

use super::schema;

/// The least list sort key of a finished task still shown (its status after the cutoff).
pub(super) fn fresh_floor(cutoff: Timestamp) -> String {
    schema::list_sort_floor(cutoff.unix_nanos().saturating_add(1))
}

/// Whether an index item of a task in `state`, sorting at `sort_key`, is past its expiry.
pub(super) fn is_expired_key(state: TaskState, sort_key: &str, cutoff: Option<Timestamp>) -> bool {
    cutoff.is_some_and(|c| state.is_terminal() && sort_key < fresh_floor(c).as_str())
}

/// Whether a read head is past its expiry at `cutoff`.
pub(super) fn is_expired_head(state: &TaskAggregate, cutoff: Option<Timestamp>) -> bool {
    let (Some(c), Some(h)) = (cutoff, state.head.as_ref()) else {
        return false;
    };
    h.status.state.is_terminal() && h.status.timestamp.unwrap_or(h.created_at) <= c
}

/// The key range of a state index Query: from `status_after`, and for a finished state from
/// the cutoff on.
pub(super) fn state_range(state: TaskState, q: &ListQuery) -> KeyRange {
    let after = q
        .status_after
        .map(|t| schema::list_sort_floor(t.unix_nanos()));
    let fresh = q
        .finished_before
        .filter(|_| state.is_terminal())
        .map(fresh_floor);
    match (after, fresh) {
        (Some(a), Some(f)) => KeyRange::From(a.max(f)),
        (Some(x), None) | (None, Some(x)) => KeyRange::From(x),
        (None, None) => KeyRange::All,
    }
}

/// The part of an index's sort key (`g1sk`) a Query reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum KeyRange {
    All,
    From(String),
}

impl KeyRange {
    /// The key condition on the index partition `#ip = :p`, with the range's values.
    pub(super) fn condition(&self) -> (&'static str, Vec<(&'static str, String)>) {
        match self {
            Self::All => ("#ip = :p", vec![]),
            Self::From(lo) => ("#ip = :p AND g1sk >= :lo", vec![(":lo", lo.clone())]),
        }
    }
}
