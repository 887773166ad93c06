//! Push notifications end to end on the embedded store: config operations over JSON-RPC, and
//! deliveries to a real webhook receiver on 127.0.0.1 (retries, order, de-duplication, dead
//! letters and redrive, the SSRF guard, headers and signatures).

use std::time::Duration;

use serde_json::{json, Value};
use taskledger_domain::ports::PushOutbox;
use taskledger_domain::push::{AddressPolicy, RetryPolicy};
use taskledger_local::{Config, PushSettings, Storage};
use taskledger_tests::receiver::{published_key, state_of, verify_signature, Receiver, Script};
use taskledger_tests::{error_code, fast_timings, Server};

/// Quick retries so tests finish in seconds.
fn quick_retry() -> RetryPolicy {
    RetryPolicy {
        base: Duration::from_millis(40),
        cap: Duration::from_millis(400),
        horizon: Duration::from_secs(30),
    }
}

fn config(storage: Storage, policy: AddressPolicy) -> Config {
    let mut c = Config::in_memory().with_conformance_scenarios();
    c.storage = storage;
    c.timings = fast_timings();
    c.push = PushSettings {
        policy,
        signing_key_pem: None,
        retry: quick_retry(),
    };
    c
}

async fn dev_server() -> Server {
    Server::start_with(config(Storage::Memory, AddressPolicy::allow_loopback())).await
}

fn message(id: &str, text: &str, task_id: Option<&str>) -> Value {
    let mut m = json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]});
    if let Some(t) = task_id {
        m["taskId"] = json!(t);
    }
    m
}

/// Starts an input-required task with a config registered inline, then completes it.
async fn input_required_then_complete(s: &Server, hook: Value) -> String {
    let v = s
        .call(
            "SendMessage",
            json!({
                "message": message(&format!("tck-input-required-{}", uuid::Uuid::new_v4()), "start", None),
                "configuration": {"taskPushNotificationConfig": hook},
            }),
        )
        .await;
    let id = v["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{v}"))
        .to_string();
    s.wait_state(&id, "TASK_STATE_INPUT_REQUIRED").await;
    let v = s
        .call(
            "SendMessage",
            json!({"message": message(&format!("more-{}", uuid::Uuid::new_v4()), "here you go", Some(&id))}),
        )
        .await;
    assert!(v.get("error").is_none(), "{v}");
    s.wait_state(&id, "TASK_STATE_COMPLETED").await;
    id
}

#[tokio::test]
async fn config_operations_follow_the_spec() {
    let s = dev_server().await;
    assert_eq!(s.card().await["capabilities"]["pushNotifications"], true);
    let done = s.send_task("tck-complete-task-1", "x").await;
    let id = done["id"].as_str().unwrap();
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED");

    // On a terminal task, with the client's own id.
    let created = s
        .ok(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "id": "cfg-1", "url": "https://example.com/hook",
                   "token": "opaque", "authentication": {"scheme": "Bearer", "credentials": "s3cr3t"}}),
        )
        .await;
    assert_eq!(
        created,
        // the credentials never leave the server (ADR 022); the token comes back as given
        json!({"id": "cfg-1", "taskId": id, "url": "https://example.com/hook", "token": "opaque",
               "authentication": {"scheme": "Bearer"}})
    );
    // Without an id, one is generated; snake_case input is accepted.
    let generated = s
        .ok(
            "CreateTaskPushNotificationConfig",
            json!({"task_id": id, "url": "https://example.com/other"}),
        )
        .await;
    let gen_id = generated["id"].as_str().unwrap();
    assert!(uuid::Uuid::parse_str(gen_id).is_ok(), "{generated}");

    let got = s
        .ok(
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "cfg-1"}),
        )
        .await;
    assert_eq!(got, created);

    // Paginated list.
    let page1 = s
        .ok(
            "ListTaskPushNotificationConfigs",
            json!({"taskId": id, "pageSize": 1}),
        )
        .await;
    assert_eq!(page1["configs"].as_array().unwrap().len(), 1);
    assert_eq!(page1["configs"][0]["id"], "cfg-1");
    let token = page1["nextPageToken"].as_str().unwrap();
    assert!(!token.is_empty());
    let page2 = s
        .ok(
            "ListTaskPushNotificationConfigs",
            json!({"taskId": id, "pageSize": 1, "pageToken": token}),
        )
        .await;
    assert_eq!(page2["configs"][0]["id"], gen_id);
    assert_eq!(page2["nextPageToken"], "");
    let all = s
        .ok("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    assert_eq!(all["configs"].as_array().unwrap().len(), 2);
    assert_eq!(
        s.err(
            "ListTaskPushNotificationConfigs",
            json!({"taskId": id, "pageSize": 101})
        )
        .await,
        -32602
    );

    // Delete is idempotent; a deleted config is not found.
    for _ in 0..2 {
        assert_eq!(
            s.ok(
                "DeleteTaskPushNotificationConfig",
                json!({"taskId": id, "id": "cfg-1"})
            )
            .await,
            json!({})
        );
    }
    assert_eq!(
        s.err(
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "cfg-1"})
        )
        .await,
        -32001
    );
    // Unknown tasks are not found.
    assert_eq!(
        s.err(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "nope", "url": "https://example.com/h"})
        )
        .await,
        -32001
    );
    assert_eq!(
        s.err("ListTaskPushNotificationConfigs", json!({"taskId": "nope"}))
            .await,
        -32001
    );
}

#[tokio::test]
async fn configs_are_scoped_to_the_tasks_owner() {
    let mut c = config(Storage::Memory, AddressPolicy::allow_loopback());
    c.tokens =
        taskledger_app::identity::TokenAuthenticator::parse_table("ta=acme/alice,tb=acme/bob")
            .unwrap();
    let s = Server::start_with(c).await;
    let alice = s.as_user("ta");
    let bob = s.as_user("tb");
    let id = alice.send_task("tck-complete-task-2", "x").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    alice
        .ok(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "id": "mine", "url": "https://example.com/h"}),
        )
        .await;
    assert_eq!(
        bob.err(
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "mine"})
        )
        .await,
        -32001
    );
    assert_eq!(
        bob.err(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": "https://example.com/h"})
        )
        .await,
        -32001
    );
    assert_eq!(
        bob.err(
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": id, "id": "mine"})
        )
        .await,
        -32001
    );
}

#[tokio::test]
async fn internal_addresses_are_refused_at_creation() {
    let s = Server::start_with(config(Storage::Memory, AddressPolicy::strict())).await;
    let id = s.send_task("tck-complete-task-3", "x").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/hook",
        "http://127.0.0.1:9/hook",
        "http://[fd00:ec2::254]/",
        "ftp://example.com/hook",
    ] {
        let v = s
            .call(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": id, "url": url}),
            )
            .await;
        assert_eq!(error_code(&v), -32602, "{url}: {v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains("url"),
            "{v}"
        );
    }
    // Inline on SendMessage too; nothing is created.
    let before = s.total_tasks().await;
    let v = s
        .call(
            "SendMessage",
            json!({"message": message("m-ssrf", "x", None),
                   "configuration": {"taskPushNotificationConfig": {"url": "http://10.0.0.1/h"}}}),
        )
        .await;
    assert_eq!(error_code(&v), -32602, "{v}");
    assert_eq!(s.total_tasks().await, before);
}

#[tokio::test]
async fn deliveries_survive_an_endpoint_that_is_down_in_order_once_each() {
    let s = dev_server().await;
    let r = Receiver::start(Script::FailFirst(3)).await;
    let id = input_required_then_complete(&s, json!({"url": r.url})).await;
    r.wait_for(Duration::from_secs(20), |u| {
        u.last().and_then(state_of).as_deref() == Some("TASK_STATE_COMPLETED")
    })
    .await;
    let unique = r.unique();
    let seqs: Vec<u64> = unique.iter().map(|d| d.seq()).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "in event order: {seqs:?}"
    );
    let states: Vec<String> = unique.iter().filter_map(state_of).collect();
    assert_eq!(
        states.first().map(String::as_str),
        Some("TASK_STATE_WORKING")
    );
    assert!(states.contains(&"TASK_STATE_INPUT_REQUIRED".to_string()));
    assert_eq!(
        states.last().map(String::as_str),
        Some("TASK_STATE_COMPLETED")
    );
    assert!(unique.iter().all(|d| d.task_id() == id));
    // The first delivery was refused three times, then accepted: same delivery id each time.
    let seen = r.seen();
    assert_eq!(seen.iter().filter(|x| x.status == 503).count(), 3);
    let first_id = seen[0].header("x-taskledger-delivery-id").unwrap();
    assert!(seen[..4]
        .iter()
        .all(|x| x.header("x-taskledger-delivery-id") == Some(first_id)));
    // Every accepted request was a new (task, sequence): nothing after the 2xx was re-sent.
    assert_eq!(
        seen.len(),
        3 + unique.len(),
        "no duplicates after acceptance"
    );
}

#[tokio::test]
async fn a_permanent_failure_is_tried_once_dead_lettered_and_redriven() {
    let dir = std::env::temp_dir().join(format!("tl-push-{}", uuid::Uuid::new_v4().simple()));
    let s = Server::start_with(config(
        Storage::Dir(dir.clone()),
        AddressPolicy::allow_loopback(),
    ))
    .await;
    let r = Receiver::start(Script::Always(400)).await;
    let id = input_required_then_complete(&s, json!({"url": r.url, "id": "bad"})).await;
    let store = taskledger_infra::SqliteStore::open(&dir).unwrap();
    let mut letters = Vec::new();
    for _ in 0..400 {
        letters = store.dead_letters(100).await.unwrap();
        if letters
            .iter()
            .any(|l| l.delivery.body.contains("TASK_STATE_COMPLETED"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(letters.len() >= 3, "{letters:?}");
    for l in &letters {
        assert_eq!(l.attempts, 1);
        assert!(l.reason.contains("HTTP 400"), "{}", l.reason);
        assert_eq!(l.delivery.task_id, id);
    }
    // One attempt per delivery.
    let seen = r.seen();
    assert_eq!(
        seen.len(),
        letters.len(),
        "each delivery tried exactly once"
    );

    // Redrive once the receiver is fixed: every dead letter arrives.
    r.set_script(Script::FailFirst(0));
    assert_eq!(store.redrive().await.unwrap(), letters.len() as u64);
    let n = letters.len();
    r.wait_for(Duration::from_secs(10), |u| u.len() == n).await;
    assert!(store.dead_letters(100).await.unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_hostname_resolving_to_loopback_is_refused_at_send_time() {
    let dir = std::env::temp_dir().join(format!("tl-push-{}", uuid::Uuid::new_v4().simple()));
    let s = Server::start_with(config(Storage::Dir(dir.clone()), AddressPolicy::strict())).await;
    let r = Receiver::start(Script::Always(200)).await;
    // A host name passes creation: its address is only known when connecting.
    let url = format!("http://localhost:{}/hook", r.port);
    input_required_then_complete(&s, json!({"url": url})).await;
    let store = taskledger_infra::SqliteStore::open(&dir).unwrap();
    let mut letters = Vec::new();
    for _ in 0..400 {
        letters = store.dead_letters(100).await.unwrap();
        if letters.len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(!letters.is_empty());
    for l in &letters {
        assert_eq!(l.attempts, 1, "a refusal is permanent");
        assert!(l.reason.contains("loopback"), "{}", l.reason);
    }
    assert!(r.seen().is_empty(), "nothing reached the receiver");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn headers_carry_the_credentials_token_sequence_and_a_verifiable_signature() {
    use p256::pkcs8::{EncodePrivateKey, LineEnding};
    let key = p256::ecdsa::SigningKey::from_slice(&[5u8; 32]).unwrap();
    let mut c = config(Storage::Memory, AddressPolicy::allow_loopback());
    c.push.signing_key_pem = Some(key.to_pkcs8_pem(LineEnding::LF).unwrap().to_string());
    let s = Server::start_with(c).await;
    let r = Receiver::start(Script::Always(200)).await;
    input_required_then_complete(
        &s,
        json!({"url": r.url, "token": "tok-1",
               "authentication": {"scheme": "Bearer", "credentials": "s3cr3t"}}),
    )
    .await;
    r.wait_for(Duration::from_secs(10), |u| {
        u.last().and_then(state_of).as_deref() == Some("TASK_STATE_COMPLETED")
    })
    .await;
    let (jwk, vk) = published_key(&s).await;
    assert_eq!(jwk["alg"], "ES256");
    for d in r.seen() {
        assert_eq!(d.header("authorization"), Some("Bearer s3cr3t"));
        assert_eq!(d.header("x-a2a-notification-token"), Some("tok-1"));
        assert_eq!(d.header("content-type"), Some("application/a2a+json"));
        assert_eq!(
            d.header("content-length"),
            Some(d.body.len().to_string().as_str()),
            "a fixed-length body"
        );
        assert!(d.header("transfer-encoding").is_none());
        assert!(d.seq() > 0);
        let body = d.json();
        assert!(
            body.get("statusUpdate").is_some() || body.get("artifactUpdate").is_some(),
            "{body}"
        );
        let header = verify_signature(&d, &vk);
        assert_eq!(header["kid"], jwk["kid"]);
    }
    // Without a signing key, no key set is published.
    let plain = dev_server().await;
    let status = plain
        .client
        .get(format!("{}/.well-known/jwks.json", plain.base))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_config_registered_mid_task_receives_only_later_events() {
    let s = dev_server().await;
    let r = Receiver::start(Script::Always(200)).await;
    let v = s
        .call(
            "SendMessage",
            json!({"message": message("tck-input-required-mid", "start", None)}),
        )
        .await;
    let id = v["result"]["task"]["id"].as_str().unwrap().to_string();
    s.wait_state(&id, "TASK_STATE_INPUT_REQUIRED").await;
    s.ok(
        "CreateTaskPushNotificationConfig",
        json!({"taskId": id, "url": r.url}),
    )
    .await;
    s.call(
        "SendMessage",
        json!({"message": message("mid-2", "go on", Some(&id))}),
    )
    .await;
    s.wait_state(&id, "TASK_STATE_COMPLETED").await;
    r.wait_for(Duration::from_secs(10), |u| {
        u.last().and_then(state_of).as_deref() == Some("TASK_STATE_COMPLETED")
    })
    .await;
    let states: Vec<String> = r.unique().iter().filter_map(state_of).collect();
    assert!(
        !states.contains(&"TASK_STATE_INPUT_REQUIRED".to_string()),
        "an update from before the registration was pushed: {states:?}"
    );
    assert!(!states.is_empty());
}

#[tokio::test]
async fn artifact_updates_are_pushed() {
    let s = dev_server().await;
    let r = Receiver::start(Script::Always(200)).await;
    let v = s
        .call(
            "SendMessage",
            json!({"message": message("tck-input-required-art", "start", None),
                   "configuration": {"taskPushNotificationConfig": {"url": r.url}}}),
        )
        .await;
    let id = v["result"]["task"]["id"].as_str().unwrap().to_string();
    s.wait_state(&id, "TASK_STATE_INPUT_REQUIRED").await;
    s.call(
        "SendMessage",
        json!({"message": message("tck-artifact-text-2", "go on", Some(&id))}),
    )
    .await;
    s.wait_state(&id, "TASK_STATE_COMPLETED").await;
    r.wait_for(Duration::from_secs(10), |u| {
        u.iter().any(|d| d.json().get("artifactUpdate").is_some())
            && u.last().and_then(state_of).as_deref() == Some("TASK_STATE_COMPLETED")
    })
    .await;
    let art = r
        .unique()
        .into_iter()
        .find(|d| d.json().get("artifactUpdate").is_some())
        .unwrap()
        .json();
    assert_eq!(art["artifactUpdate"]["taskId"], id.as_str());
    assert!(art["artifactUpdate"]["artifact"]["parts"].is_array());
}
