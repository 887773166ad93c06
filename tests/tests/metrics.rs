//! `/metrics` on the local server (embedded store): the operator's (issue 51) — with tokens
//! configured it answers to the metrics token only, never to a tenant's; scraped before and
//! after a scripted workload — sends that complete, a refused
//! read, a webhook that fails once then takes its deliveries, an open stream — it shows the
//! expected counter deltas, the tasks by state, and the open stream. One test in this binary:
//! the metrics are the process's.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::json;
use taskledger_local::{Config, Storage};
use taskledger_tests::binding::Binding;
use taskledger_tests::receiver::{Receiver, Script};
use taskledger_tests::{fast_timings, Server};

/// The samples of a scrape: `name{labels}` → value.
fn samples(text: &str) -> HashMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

async fn scrape(s: &Server, token: Option<&str>) -> (u16, String, HashMap<String, f64>) {
    let mut req = s.client.get(format!("{}/metrics", s.base));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let kind = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let text = r.text().await.unwrap();
    let parsed = if status == 200 {
        samples(&text)
    } else {
        HashMap::new()
    };
    (status, kind, parsed)
}

fn get(m: &HashMap<String, f64>, key: &str) -> f64 {
    m.get(key).copied().unwrap_or(0.0)
}

#[tokio::test]
async fn metrics_count_a_scripted_workload() {
    let mut c = Config::in_memory().with_conformance_scenarios();
    c.storage = Storage::Memory;
    c.timings = fast_timings();
    c.tokens = taskledger_app::identity::TokenAuthenticator::parse_table("ta=acme/alice").unwrap();
    c.push = taskledger_tests::loopback_push();
    let without = Server::start_with(c.clone()).await;
    c.metrics_token = Some("metrics-secret".into());
    let server = Server::start_with(c).await;
    // Counted under the binding the calls go over.
    let alice = server.over(Binding::JsonRpc).as_user("ta");

    // The operator's: no tenant's principal reads process-wide counts, and a server with
    // credentials but no metrics token refuses every scrape.
    let (status, _, _) = scrape(&server, None).await;
    assert_eq!(status, 401);
    let (status, _, _) = scrape(&server, Some("wrong")).await;
    assert_eq!(status, 401);
    let (status, _, _) = scrape(&server, Some("ta")).await;
    assert_eq!(status, 401, "alice's API token is no metrics token");
    assert_eq!(scrape(&without, Some("ta")).await.0, 403);
    let (status, kind, before) = scrape(&server, Some("metrics-secret")).await;
    assert_eq!(status, 200);
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");

    // Three tasks that complete, one refused read, a webhook that fails once then takes them.
    let hook = Receiver::start(Script::FailFirst(1)).await;
    let mut ids = Vec::new();
    for i in 0..3 {
        let t = alice
            .send_task(&format!("tck-input-required-m{i}"), "hi")
            .await;
        ids.push(t["id"].as_str().unwrap().to_string());
    }
    alice
        .ok(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": ids[0], "url": hook.url}),
        )
        .await;
    for (i, id) in ids.iter().enumerate() {
        alice
            .ok(
                "SendMessage",
                json!({"message": {"messageId": format!("m-answer-{i}"), "role": "ROLE_USER",
                    "taskId": id, "parts": [{"text": "here you are"}]}}),
            )
            .await;
        alice.wait_state(id, "TASK_STATE_COMPLETED").await;
    }
    assert_eq!(
        alice.err("GetTask", json!({"id": "no-such-task"})).await,
        -32001
    );
    hook.wait_for(Duration::from_secs(10), |r| {
        r.iter().filter(|x| x.status == 200).count() >= 2
    })
    .await;
    // A stream held open while scraping: a subscription to a task waiting for input.
    let waiting = alice.send_task("tck-input-required-m3", "hi").await;
    let waiting = waiting["id"].as_str().unwrap().to_string();
    let mut open = alice
        .client
        .post(format!("{}/a2a", alice.base))
        .bearer_auth("ta")
        .header("A2A-Version", "1.0")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask",
            "params": {"id": waiting}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(open.status(), 200);
    let first = open
        .chunk()
        .await
        .unwrap()
        .expect("the stream's first event");
    assert!(String::from_utf8_lossy(&first).contains("data:"));

    let (_, _, after) = scrape(&server, Some("metrics-secret")).await;
    let delta = |k: &str| get(&after, k) - get(&before, k);
    let binding = "jsonrpc";
    let ok = |m: &str| {
        format!("a2a_requests_total{{method=\"{m}\",binding=\"{binding}\",outcome=\"ok\"}}")
    };
    assert_eq!(delta(&ok("SendMessage")), 7.0, "{after:?}");
    assert_eq!(delta(&ok("SubscribeToTask")), 1.0);
    assert_eq!(
        delta(&format!(
            "a2a_requests_total{{method=\"GetTask\",binding=\"{binding}\",outcome=\"TASK_NOT_FOUND\"}}"
        )),
        1.0
    );
    assert!(
        delta(&format!(
            "a2a_request_duration_seconds_count{{method=\"SendMessage\",binding=\"{binding}\"}}"
        )) >= 6.0
    );
    // Each task: created, asked, answered, completed, its turns finished — commits each.
    assert!(delta("taskledger_commits_total") >= 12.0, "{after:?}");
    assert!(delta("taskledger_agent_turns_total{outcome=\"ran\"}") >= 6.0);
    assert!(delta("taskledger_agent_turn_duration_seconds_count") >= 6.0);
    assert!(delta("taskledger_push_deliveries_total{outcome=\"retried\"}") >= 1.0);
    assert!(delta("taskledger_push_deliveries_total{outcome=\"delivered\"}") >= 2.0);
    assert_eq!(
        get(&after, "taskledger_tasks{state=\"TASK_STATE_COMPLETED\"}"),
        3.0
    );
    assert_eq!(
        get(
            &after,
            "taskledger_tasks{state=\"TASK_STATE_INPUT_REQUIRED\"}"
        ),
        1.0
    );
    assert!(get(&after, "taskledger_open_streams") >= 1.0);
    drop(open);
}
