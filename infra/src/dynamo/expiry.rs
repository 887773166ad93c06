//! Retention on DynamoDB's list indexes: a finished task whose status time is at or before the
//! caller's cutoff is past its expiry and must not be listed or counted, even before the
//! table's TTL deletes it. Finished tasks sort by the time they finished (`g1sk`), so on the
//! state index the cutoff is a bound of the key condition; the context index carries the state
//! key, so its items are told apart as they are read; the owner index carries neither, so its
//! total has the expired ones (counted on the state index) taken off and a page drops them.

use taskledger_domain::ids::Principal;
use taskledger_domain::ports::{ListQuery, ListScope, StoreError};
use taskledger_domain::task::TaskAggregate;
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::TaskState;

use super::list::KeyRange;
use super::schema::{self, BY_STATE};
use super::store::DynamoStore;

/// The least list sort key of a finished task still shown (its status after the cutoff).
pub(super) fn fresh_floor(cutoff: Timestamp) -> String {
    schema::list_sort_floor(cutoff.unix_nanos().saturating_add(1))
}

/// Just above every list sort key whose status time is the cutoff (`#` < `$`).
fn expired_ceiling(cutoff: Timestamp) -> String {
    format!("{:020}$", cutoff.unix_nanos().max(0))
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

impl DynamoStore {
    /// How many of the owner's finished tasks in `scope` (after `status_after`) are past
    /// their expiry: what the owner index still counts until TTL deletes them.
    pub(super) async fn expired_count(
        &self,
        owner: &Principal,
        scope: ListScope,
        status_after: Option<Timestamp>,
        cutoff: Timestamp,
    ) -> Result<u64, StoreError> {
        let lower = status_after.map(|t| schema::list_sort_floor(t.unix_nanos()));
        let range = match lower {
            Some(lo) => KeyRange::Between(lo, expired_ceiling(cutoff)),
            None => KeyRange::Below(expired_ceiling(cutoff)),
        };
        let mut reads = Vec::new();
        for st in TaskState::ALL.into_iter().filter(|s| s.is_terminal()) {
            for shard in 0..self.index_shards {
                let key =
                    schema::index_key(&schema::state_key(owner, st), shard, self.index_shards);
                let range = range.clone();
                reads.push(async move {
                    self.count_keys(BY_STATE, "g3pk", key, scope, false, range)
                        .await
                        .map(|(n, _)| n)
                });
            }
        }
        let mut n = 0;
        for r in futures_util::future::join_all(reads).await {
            n += r?;
        }
        Ok(n)
    }
}
