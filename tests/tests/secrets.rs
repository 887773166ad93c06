//! Push-config secrets at rest (ADR 022): a config's token and credentials are sealed before
//! they reach the store — the SQLite files never hold them in clear — the API never shows the
//! credentials again, and the webhook still receives both; after a key rotation (a new key put
//! in front of the old) configs sealed before are still delivered.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use taskledger_domain::push::{AddressPolicy, RetryPolicy};
use taskledger_infra::secrets::SecretBox;
use taskledger_local::{Config, PushSettings, Storage};
use taskledger_tests::receiver::{state_of, Receiver, Script};
use taskledger_tests::{fast_timings, Server};

const CREDENTIALS: &str = "s3cr3t-credentials-4f2a";
const TOKEN: &str = "notification-token-9c1e";

fn config(dir: &Path, keys: Option<&Path>) -> Config {
    let mut c = Config::in_memory().with_conformance_scenarios();
    c.storage = Storage::Dir(dir.to_path_buf());
    c.timings = fast_timings();
    c.secrets_key_file = keys.map(Path::to_path_buf);
    c.push = PushSettings {
        policy: AddressPolicy::allow_loopback(),
        signing_key_pem: None,
        retry: RetryPolicy {
            base: Duration::from_millis(40),
            cap: Duration::from_millis(400),
            horizon: Duration::from_secs(30),
        },
    };
    c
}

/// A fresh data directory, removed when dropped.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new() -> Self {
        let p = std::env::temp_dir().join(format!("taskledger-secrets-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every byte the store wrote (the database, its WAL), as text.
fn stored_bytes(dir: &Path) -> String {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("taskledger.sqlite")
        {
            all.extend(std::fs::read(&path).unwrap());
        }
    }
    String::from_utf8_lossy(&all).into_owned()
}

/// A task waiting for input, with a config registered inline; the answer completes it.
async fn task_with_config(s: &Server, url: &str, id: &str) -> String {
    let config = json!({"url": url, "id": id, "token": TOKEN,
        "authentication": {"scheme": "Bearer", "credentials": CREDENTIALS}});
    let v = s
        .call(
            "SendMessage",
            json!({"message": {"messageId": format!("tck-input-required-{id}"), "role": "ROLE_USER",
                "parts": [{"text": "start"}]},
                "configuration": {"taskPushNotificationConfig": config, "returnImmediately": false}}),
        )
        .await;
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{v}"
    );
    v["result"]["task"]["id"].as_str().unwrap().to_string()
}

async fn complete(s: &Server, task: &str) {
    let v = s
        .call(
            "SendMessage",
            json!({"message": {"messageId": format!("{task}-answer"), "role": "ROLE_USER",
                "taskId": task, "parts": [{"text": "done"}]}}),
        )
        .await;
    assert!(v.get("result").is_some(), "{v}");
}

async fn delivered(r: &Receiver) {
    r.wait_for(Duration::from_secs(10), |u| {
        u.last().and_then(state_of).as_deref() == Some("TASK_STATE_COMPLETED")
    })
    .await;
    for d in r.seen() {
        assert_eq!(
            d.header("authorization"),
            Some(format!("Bearer {CREDENTIALS}").as_str())
        );
        assert_eq!(d.header("x-a2a-notification-token"), Some(TOKEN));
    }
}

#[tokio::test]
async fn secrets_are_sealed_at_rest_redacted_on_read_and_delivered_in_clear() {
    let dir = TempDir::new();
    let s = Server::start_with(config(dir.path(), None)).await;
    let r = Receiver::start(Script::Always(200)).await;
    let task = task_with_config(&s, &r.url, "cfg-a").await;
    let shown: Value = s
        .ok(
            "GetTaskPushNotificationConfig",
            json!({"taskId": task, "id": "cfg-a"}),
        )
        .await;
    assert_eq!(
        shown["authentication"],
        json!({"scheme": "Bearer"}),
        "{shown}"
    );
    assert_eq!(shown["token"], TOKEN);
    let list = s
        .ok("ListTaskPushNotificationConfigs", json!({"taskId": task}))
        .await;
    assert!(!list.to_string().contains(CREDENTIALS), "{list}");
    complete(&s, &task).await;
    delivered(&r).await;
    // the key file was made at first start, owner-only; the store holds no secret in clear
    assert!(dir.path().join(taskledger_local::SECRETS_KEY_FILE).exists());
    let bytes = stored_bytes(dir.path());
    assert!(bytes.contains("enc:v1:"), "sealed values are stored");
    for secret in [CREDENTIALS, TOKEN] {
        assert!(!bytes.contains(secret), "{secret} is stored in clear");
    }
}

#[tokio::test]
async fn after_a_key_rotation_configs_sealed_before_are_still_delivered() {
    let dir = TempDir::new();
    let keys = dir.path().join("keys");
    let old = SecretBox::new_key_line("old");
    std::fs::write(&keys, format!("{old}\n")).unwrap();
    let r = Receiver::start(Script::Always(200)).await;
    let task = {
        let s = Server::start_with(config(dir.path(), Some(&keys))).await;
        task_with_config(&s, &r.url, "cfg-r").await
    };
    // rotate: a new key seals from now on, the old one still opens
    std::fs::write(
        &keys,
        format!("{}\n{old}\n", SecretBox::new_key_line("new")),
    )
    .unwrap();
    let s = Server::start_with(config(dir.path(), Some(&keys))).await;
    let shown = s
        .ok(
            "GetTaskPushNotificationConfig",
            json!({"taskId": task, "id": "cfg-r"}),
        )
        .await;
    assert_eq!(shown["token"], TOKEN, "{shown}");
    complete(&s, &task).await;
    delivered(&r).await;
    let second = task_with_config(&s, &r.url, "cfg-n").await;
    assert!(!second.is_empty());
    assert!(stored_bytes(dir.path()).contains("enc:v1:new:"));
}
