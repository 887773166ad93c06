//! Contract case for the change stamp (`TaskReadModel::change_stamp`): where a store gives one,
//! it stays while nothing is committed and moves with every commit.

use std::sync::Arc;

use taskledger_domain::wire::TaskState;

use super::{create_task, set_state, Store};
use taskledger_domain::time::Timestamp;

pub async fn a_change_stamp_moves_with_every_commit<S: Store>(store: Arc<S>) {
    let Some(before) = store.change_stamp().await.expect("stamp") else {
        return; // a store that cannot tell cheaply says so, and nothing is kept in front of it
    };
    assert_eq!(
        store.change_stamp().await.unwrap(),
        Some(before),
        "nothing committed"
    );
    let id = create_task(&*store, "t-stamp", "c").await;
    let created = store.change_stamp().await.unwrap().expect("a stamp");
    assert_ne!(created, before, "a creation moves it");
    assert_eq!(store.change_stamp().await.unwrap(), Some(created));
    set_state(&*store, &id, TaskState::Working, Timestamp::now()).await;
    let changed = store.change_stamp().await.unwrap().expect("a stamp");
    assert_ne!(changed, created, "a change to the task moves it");
}
