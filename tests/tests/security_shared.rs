//! Issue 51, class B, against a real server: what belongs to one principal on a shared task —
//! its webhook configs, their ids and room, and what happens to its deliveries — is read through
//! one caller-scoped accessor by the API and the board alike, and a failure reason never names
//! a URL (a webhook URL is a bearer capability).

use reqwest::StatusCode;
use serde_json::{json, Value};
use taskledger_tests::board::{page, people, session, shared_task};
use taskledger_tests::Server;

/// alice, bob and mallory of acme, push enabled with loopback webhooks allowed.
async fn server() -> Server {
    let mut c = people();
    c.push = taskledger_tests::loopback_push();
    Server::start_with(c).await
}

/// A loopback URL nothing listens on, with a secret in its query string.
fn dead_webhook(secret: &str) -> String {
    let port = taskledger_tests::binary::free_port();
    format!("http://127.0.0.1:{port}/hook?secret={secret}")
}

fn config(task: &str, id: &str, url: &str) -> Value {
    json!({"taskId": task, "id": id, "url": url})
}

#[tokio::test]
async fn the_owners_board_shows_no_participants_webhook_and_no_failure_names_a_url() {
    let s = server().await;
    let alice = s.as_user("a");
    let bob = s.as_user("b");
    let task = shared_task(&alice, &[("alice", "admin"), ("bob", "watcher")]).await;
    let bobs = dead_webhook("bob-s3cr3t");
    bob.ok(
        "CreateTaskPushNotificationConfig",
        config(&task, "bobs-hook", &bobs),
    )
    .await;
    let alices = dead_webhook("alice-s3cr3t");
    alice
        .ok(
            "CreateTaskPushNotificationConfig",
            config(&task, "alices-hook", &alices),
        )
        .await;
    // An update, so both webhooks fail (connection refused) and wait for a retry.
    alice
        .ok(
            "SendMessage",
            json!({"message": {"messageId": "tck-input-required-1", "role": "ROLE_USER",
                "taskId": task, "parts": [{"text": "more"}]}}),
        )
        .await;
    let path = format!("/board/tasks/{task}");
    let (alice_cookie, bob_cookie) = (session(&s, "a").await, session(&s, "b").await);
    let mut seen = String::new();
    for _ in 0..100 {
        let (status, _, body) = page(&s, &path, &alice_cookie).await;
        assert_eq!(status, StatusCode::OK);
        if body.contains("retrying at") || body.contains("dead-lettered") {
            seen = body;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(!seen.is_empty(), "alice's delivery never failed");
    assert!(seen.contains("alices-hook"), "her own delivery is listed");
    for leak in ["bobs-hook", "bob-s3cr3t", &bobs] {
        assert!(!seen.contains(leak), "alice's page shows {leak:?}");
    }
    assert!(
        !seen.contains("alice-s3cr3t?") && !seen.contains("for url ("),
        "a failure reason names a URL"
    );
    // bob sees his own, and only his own.
    let (_, _, body) = page(&s, &path, &bob_cookie).await;
    assert!(
        body.contains("bobs-hook") && !body.contains("alices-hook"),
        "{body}"
    );
    assert!(!body.contains("alice-s3cr3t"));
    // The timeline shows each viewer the config events the API's log shows them: their own.
    let timeline_sets = |page: &str| page.matches("<strong>PushConfigSet</strong>").count();
    assert_eq!(
        timeline_sets(&seen),
        1,
        "alice's timeline shows bob's config"
    );
    assert_eq!(
        timeline_sets(&body),
        1,
        "bob's timeline shows alice's config"
    );
}

#[tokio::test]
async fn a_watcher_takes_neither_the_owners_config_ids_nor_its_room() {
    let s = server().await;
    let alice = s.as_user("a");
    let bob = s.as_user("b");
    let task = shared_task(&alice, &[("alice", "admin"), ("bob", "watcher")]).await;
    let url = "https://hooks.example.com/x";
    // bob takes the id 0.3 gives a config by default (the task's id) and fills his room.
    bob.ok(
        "CreateTaskPushNotificationConfig",
        config(&task, &task, url),
    )
    .await;
    for i in 1..taskledger_domain::push::MAX_PUSH_CONFIGS_PER_PRINCIPAL {
        bob.ok(
            "CreateTaskPushNotificationConfig",
            config(&task, &format!("b-{i}"), url),
        )
        .await;
    }
    let full = bob
        .call(
            "CreateTaskPushNotificationConfig",
            config(&task, "one-more", url),
        )
        .await;
    assert!(
        full["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("limit"),
        "{full}"
    );
    // alice creates, reads, lists and deletes her own under the same id.
    let mine = alice
        .ok(
            "CreateTaskPushNotificationConfig",
            config(&task, &task, url),
        )
        .await;
    assert_eq!(mine["id"], task.as_str());
    let got = alice
        .ok(
            "GetTaskPushNotificationConfig",
            json!({"taskId": task, "id": task}),
        )
        .await;
    assert_eq!(got["url"], url);
    let listed = alice
        .ok("ListTaskPushNotificationConfigs", json!({"taskId": task}))
        .await;
    assert_eq!(
        listed["configs"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
    alice
        .ok(
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": task, "id": task}),
        )
        .await;
    let gone = alice
        .call(
            "GetTaskPushNotificationConfig",
            json!({"taskId": task, "id": task}),
        )
        .await;
    assert!(gone.get("error").is_some(), "{gone}");
    // bob's config of that id stands.
    let his = bob
        .ok(
            "GetTaskPushNotificationConfig",
            json!({"taskId": task, "id": task}),
        )
        .await;
    assert_eq!(his["id"], task.as_str());
}

/// Issue 51, class D: a caller's `traceparent` and `tracestate` go back to the caller's own
/// webhook only; another participant's webhook starts from nothing of theirs.
#[tokio::test]
async fn a_callers_trace_reaches_its_own_webhook_and_nobody_elses() {
    use taskledger_tests::receiver::{Receiver, Script};
    let s = server().await;
    let alice = s.as_user("a");
    let bob = s.as_user("b");
    let task = shared_task(&alice, &[("alice", "admin"), ("bob", "watcher")]).await;
    let (hers, his) = (
        Receiver::start(Script::Always(200)).await,
        Receiver::start(Script::Always(200)).await,
    );
    alice
        .ok(
            "CreateTaskPushNotificationConfig",
            config(&task, "hers", &hers.url),
        )
        .await;
    bob.ok(
        "CreateTaskPushNotificationConfig",
        config(&task, "his", &his.url),
    )
    .await;
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let v = alice
        .call_with(
            "SendMessage",
            json!({"message": {"messageId": "tck-input-required-2", "role": "ROLE_USER",
                "taskId": task, "parts": [{"text": "more"}]}}),
            &[
                ("traceparent", &format!("00-{trace_id}-00f067aa0ba902b7-01")),
                ("tracestate", "vendor=acct-5521"),
            ],
        )
        .await;
    assert!(v.get("error").is_none(), "{v}");
    let limit = std::time::Duration::from_secs(20);
    hers.wait_for(limit, |r| !r.is_empty()).await;
    his.wait_for(limit, |r| !r.is_empty()).await;
    for r in hers.unique() {
        let tp = r
            .header("traceparent")
            .expect("her webhook joins her trace");
        assert!(tp.contains(trace_id), "{tp}");
        assert_eq!(r.header("tracestate"), Some("vendor=acct-5521"));
    }
    for r in his.unique() {
        assert!(
            !r.header("traceparent").unwrap_or("").contains(trace_id),
            "bob's webhook joined alice's trace"
        );
        assert_eq!(
            r.header("tracestate"),
            None,
            "bob's webhook saw alice's tracestate"
        );
    }
}
