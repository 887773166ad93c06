//! GetTask's answers as they were sent (in the binding's encoding), kept while the store's change stamp says
//! nothing has been committed since they were read (ADR 026): a client polling a task that has
//! not moved gets the same bytes without a read of the store. Any commit, by this process or
//! another on the same store, moves the stamp; then every answer is read afresh.

use std::sync::{Arc, Mutex};

use hashlink::LruCache;
use taskledger_domain::ids::{HistoryLength, Principal, TaskId};

/// Bytes of answers kept at most (the least recently used go first).
pub const ANSWER_CACHE_BYTES: usize = 4 << 20;
/// The largest answer kept; a larger one is read each time.
pub const ANSWER_MAX_BYTES: usize = 64 << 10;
/// What an entry costs besides its bytes (key, visibility, bookkeeping), for the budget.
const ENTRY_OVERHEAD: usize = 256;

/// Which answer: the task, the history asked for, and how the caller's binding and version
/// render it (`variant`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct AnswerKey {
    pub task_id: TaskId,
    pub history: HistoryLength,
    pub variant: u8,
}

/// Who may see the task an answer shows (its owner, and the principals it is shared with),
/// and until when (a finished task's expiry: after it, nobody).
#[derive(Debug, Clone)]
pub(crate) struct Audience {
    pub owner: Principal,
    pub shared: Vec<Principal>,
    pub expires: Option<taskledger_domain::time::Timestamp>,
}

impl Audience {
    fn includes(&self, who: &Principal) -> bool {
        (self.owner == *who || self.shared.contains(who))
            && self
                .expires
                .is_none_or(|at| taskledger_domain::time::Timestamp::now() < at)
    }
}

struct Entry {
    stamp: u64,
    audience: Audience,
    answer: Arc<[u8]>,
}

impl Entry {
    fn cost(&self) -> usize {
        self.answer.len() + ENTRY_OVERHEAD
    }
}

/// What the cache knows of an answer.
pub(crate) enum Lookup {
    /// Current, and the caller may see it.
    Hit(Arc<[u8]>),
    /// Not kept, or kept from before the last commit: read it.
    Miss,
}

pub(crate) struct AnswerCache {
    inner: Mutex<Inner>,
}

struct Inner {
    entries: LruCache<AnswerKey, Entry>,
    bytes: usize,
    budget: usize,
}

impl AnswerCache {
    pub(crate) fn new(budget: usize) -> Self {
        Self {
            inner: Mutex::new(Inner {
                entries: LruCache::new_unbounded(),
                bytes: 0,
                budget,
            }),
        }
    }

    /// The answer kept for `key`, if it was read at `stamp` (nothing committed since) and `who`
    /// may see it. A caller who may not is told nothing here: the store answers it.
    pub(crate) fn get(&self, key: &AnswerKey, stamp: u64, who: &Principal) -> Lookup {
        let Ok(mut inner) = self.inner.lock() else {
            return Lookup::Miss;
        };
        match inner.entries.get(key) {
            Some(e) if e.stamp == stamp && e.audience.includes(who) => {
                Lookup::Hit(e.answer.clone())
            }
            _ => Lookup::Miss,
        }
    }

    /// Keeps an answer read after `stamp` was taken (older ones for the key go).
    pub(crate) fn put(&self, key: AnswerKey, stamp: u64, audience: Audience, answer: Arc<[u8]>) {
        if answer.len() > ANSWER_MAX_BYTES {
            return;
        }
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        let entry = Entry {
            stamp,
            audience,
            answer,
        };
        inner.bytes += entry.cost();
        if let Some(old) = inner.entries.insert(key, entry) {
            inner.bytes -= old.cost();
        }
        while inner.bytes > inner.budget {
            match inner.entries.remove_lru() {
                Some((_, old)) => inner.bytes -= old.cost(),
                None => break,
            }
        }
    }

    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.inner.lock().map(|i| i.bytes).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: &str) -> AnswerKey {
        AnswerKey {
            task_id: TaskId::parse(id).unwrap(),
            history: HistoryLength::All,
            variant: 0,
        }
    }
    fn alice() -> Principal {
        Principal::new("acme", "alice").unwrap()
    }
    fn bob() -> Principal {
        Principal::new("acme", "bob").unwrap()
    }
    fn json(s: &str) -> Arc<[u8]> {
        Arc::from(s.as_bytes())
    }
    fn owned_by(p: Principal) -> Audience {
        Audience {
            owner: p,
            shared: vec![],
            expires: None,
        }
    }
    fn hit(l: Lookup) -> Option<String> {
        match l {
            Lookup::Hit(j) => Some(String::from_utf8(j.to_vec()).unwrap()),
            Lookup::Miss => None,
        }
    }

    #[test]
    fn given_a_kept_answer_when_the_stamp_is_the_same_then_it_is_served() {
        let c = AnswerCache::new(ANSWER_CACHE_BYTES);
        c.put(key("t"), 7, owned_by(alice()), json(r#"{"id":"t"}"#));
        assert_eq!(
            hit(c.get(&key("t"), 7, &alice())).as_deref(),
            Some(r#"{"id":"t"}"#)
        );
    }

    #[test]
    fn given_a_kept_answer_when_anything_was_committed_since_then_it_is_read_again() {
        let c = AnswerCache::new(ANSWER_CACHE_BYTES);
        c.put(key("t"), 7, owned_by(alice()), json("{}"));
        assert!(hit(c.get(&key("t"), 8, &alice())).is_none());
    }

    #[test]
    fn given_a_kept_answer_of_a_finished_task_when_it_expires_then_nobody_gets_it() {
        let c = AnswerCache::new(ANSWER_CACHE_BYTES);
        let now = taskledger_domain::time::Timestamp::now();
        let mut audience = owned_by(alice());
        audience.expires = Some(now.plus_millis(60_000));
        c.put(key("live"), 1, audience.clone(), json("{}"));
        assert!(hit(c.get(&key("live"), 1, &alice())).is_some());
        audience.expires = Some(now);
        c.put(key("gone"), 1, audience, json("{}"));
        assert!(hit(c.get(&key("gone"), 1, &alice())).is_none());
    }

    #[test]
    fn given_a_kept_answer_when_someone_else_asks_then_only_its_audience_gets_it() {
        let c = AnswerCache::new(ANSWER_CACHE_BYTES);
        let shared = Audience {
            owner: alice(),
            shared: vec![bob()],
            expires: None,
        };
        c.put(key("t"), 1, shared, json("{}"));
        assert!(hit(c.get(&key("t"), 1, &bob())).is_some());
        let carol = Principal::new("acme", "carol").unwrap();
        assert!(hit(c.get(&key("t"), 1, &carol)).is_none());
        let other_tenant = Principal::new("other", "alice").unwrap();
        assert!(hit(c.get(&key("t"), 1, &other_tenant)).is_none());
    }

    #[test]
    fn given_other_history_or_variant_when_asked_then_each_is_its_own_answer() {
        let c = AnswerCache::new(ANSWER_CACHE_BYTES);
        c.put(key("t"), 1, owned_by(alice()), json("1"));
        let mut other = key("t");
        other.history = HistoryLength::Last(1);
        assert!(hit(c.get(&other, 1, &alice())).is_none());
        other = key("t");
        other.variant = 1;
        assert!(hit(c.get(&other, 1, &alice())).is_none());
    }

    #[test]
    fn given_a_full_budget_when_one_more_is_kept_then_the_least_recently_used_goes() {
        let one = 100 + ENTRY_OVERHEAD;
        let c = AnswerCache::new(2 * one);
        let body = format!("\"{}\"", "x".repeat(98));
        c.put(key("a"), 1, owned_by(alice()), json(&body));
        c.put(key("b"), 1, owned_by(alice()), json(&body));
        assert!(hit(c.get(&key("a"), 1, &alice())).is_some());
        c.put(key("c"), 1, owned_by(alice()), json(&body));
        assert!(
            hit(c.get(&key("b"), 1, &alice())).is_none(),
            "b was used least recently"
        );
        assert!(hit(c.get(&key("a"), 1, &alice())).is_some());
        assert_eq!(c.bytes(), 2 * one);
    }

    #[test]
    fn given_an_answer_at_the_size_limit_then_it_is_kept_and_one_past_it_is_not() {
        let c = AnswerCache::new(ANSWER_CACHE_BYTES);
        let at_limit = format!("\"{}\"", "x".repeat(ANSWER_MAX_BYTES - 2));
        c.put(key("a"), 1, owned_by(alice()), json(&at_limit));
        assert!(hit(c.get(&key("a"), 1, &alice())).is_some());
        let past = format!("\"{}\"", "x".repeat(ANSWER_MAX_BYTES - 1));
        c.put(key("b"), 1, owned_by(alice()), json(&past));
        assert!(hit(c.get(&key("b"), 1, &alice())).is_none());
    }

    #[test]
    fn given_an_answer_kept_again_then_the_budget_counts_it_once() {
        let c = AnswerCache::new(ANSWER_CACHE_BYTES);
        c.put(key("a"), 1, owned_by(alice()), json("1"));
        c.put(key("a"), 2, owned_by(alice()), json("2"));
        assert_eq!(c.bytes(), 1 + ENTRY_OVERHEAD);
        assert_eq!(hit(c.get(&key("a"), 2, &alice())).as_deref(), Some("2"));
    }
}
