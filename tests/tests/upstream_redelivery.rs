//! A turn of an upstream task delivered again (issue 52, ADR 034): the worker ran it partway —
//! the user's message sent upstream, some of the upstream's events committed — and died; the
//! queue delivers the same turn again. It sends nothing upstream a second time (the mirror says
//! the input was forwarded), follows the same upstream task, and every event is applied once;
//! the turn delivered once more after it finished does nothing. Against the official Python
//! SDK's 1.x server (`TASKLEDGER_UPSTREAM_PY1`, set by scripts/test.sh; skipped without it).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use taskledger_app::compose::{AgentChoice, UpstreamChoice};
use taskledger_app::runners::{handle_turn, TurnOutcome};
use taskledger_app::{Dispatch, Service, ServiceSettings};
use taskledger_domain::cursor::CursorCodec;
use taskledger_domain::ids::Principal;
use taskledger_domain::ports::WorkFeed;
use taskledger_domain::push::AddressPolicy;
use taskledger_infra::SqliteStore;
use taskledger_tests::upstream::{partner, Sdk};

async fn upstream_tasks(client: &reqwest::Client, url: &str) -> Vec<Value> {
    let v: Value = client
        .post(format!("{url}/"))
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v["result"]["tasks"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn a_turn_delivered_again_sends_nothing_twice_and_applies_each_event_once() {
    let Some(partner) = partner(Sdk::V1, &[]).await else {
        return;
    };
    let url = partner.url.clone();
    let client = reqwest::Client::new();
    let mut choice = UpstreamChoice::new(&url, AddressPolicy::allow_loopback()).unwrap();
    choice.follow.window = Duration::from_secs(30);
    let agent = AgentChoice::Upstream(choice)
        .build(Default::default())
        .await
        .unwrap();
    let store = Arc::new(SqliteStore::in_memory());
    let svc = Service::new(
        store.clone(),
        store.clone(),
        agent,
        CursorCodec::new(b"k".to_vec()),
        ServiceSettings {
            dispatch: Dispatch::Feed,
            ..Default::default()
        },
    );
    let req = serde_json::from_value(json!({"message": {"messageId": "m-1", "role": "ROLE_USER",
        "parts": [{"text": "slow 2"}]}, "configuration": {"returnImmediately": true}}))
    .unwrap();
    svc.send_message(&Principal::anonymous(), req, None)
        .await
        .unwrap();
    let turn = store.feed_after(0, 10).await.unwrap()[0].1.turn().unwrap();
    // the first delivery dies partway: after its second tick is committed
    let first = tokio::spawn({
        let (svc, turn) = (svc.clone(), turn.clone());
        async move { handle_turn(&svc, &turn).await }
    });
    for _ in 0..300 {
        let (state, _) = svc.agent_view(&turn.task_id).await.unwrap();
        if state
            .head()
            .unwrap()
            .artifacts
            .first()
            .map_or(0, |a| a.chunks)
            >= 2
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    first.abort();
    let _ = first.await;
    // delivered again: it follows the same upstream task to the end
    assert_eq!(handle_turn(&svc, &turn).await.unwrap(), TurnOutcome::Ran);
    let (state, _) = svc.agent_view(&turn.task_id).await.unwrap();
    let head = state.head().unwrap();
    assert_eq!(head.status.state.as_str(), "TASK_STATE_COMPLETED");
    assert_eq!(head.artifacts[0].chunks, 4, "tick 1 to 4, each once");
    assert_eq!(
        upstream_tasks(&client, &url).await.len(),
        1,
        "sent upstream once"
    );
    // and once more after it finished: nothing (a finished task needs no record of the turn:
    // a redelivery finds it terminal), and nothing more upstream
    assert_eq!(
        handle_turn(&svc, &turn).await.unwrap(),
        TurnOutcome::Nothing
    );
    assert_eq!(upstream_tasks(&client, &url).await.len(), 1);
}
