//! Retention: a finished task past its expiry is gone for every caller at once — GetTask,
//! ListTasks (its page and its total), the counts, a resumed stream — whatever its store has
//! deleted yet; a tenant's own period overrides the default; on DynamoDB every item of a
//! finished task carries its expiry for the table's TTL; settings out of bounds stop the
//! server before it starts.

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;
use taskledger_domain::ids::Principal;
use taskledger_domain::retention::Retention;
use taskledger_local::{Config, Storage};
use taskledger_tests::binary::server_binary;
use taskledger_tests::{aws_endpoint, error_code, fast_timings, test_config, Server};

/// Starts a server keeping finished tasks `period` (tenant `keep`: forever), with two callers.
async fn server(period: &str) -> Server {
    let mut config = test_config();
    config.retention = Retention::parse(period, "keep=0").unwrap();
    config.tokens = HashMap::from([
        (
            "tok-a".to_string(),
            Principal::new("acme", "alice").unwrap(),
        ),
        ("tok-k".to_string(), Principal::new("keep", "kim").unwrap()),
    ]);
    Server::start_with(config).await
}

fn ids(list: &serde_json::Value) -> Vec<String> {
    list["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_finished_task_past_its_expiry_is_gone_everywhere_at_once() {
    let s = server("2s").await;
    let (alice, kim) = (s.as_user("tok-a"), s.as_user("tok-k"));
    let done = alice.send_task("tck-artifact-text-r1", "hi").await;
    let done = done["id"].as_str().unwrap().to_string();
    let waiting = alice.send_task("tck-input-required-r1", "hi").await;
    let waiting = waiting["id"].as_str().unwrap().to_string();
    let kept = kim.send_task("tck-artifact-text-r2", "hi").await;
    let kept = kept["id"].as_str().unwrap().to_string();
    let list = alice.ok("ListTasks", json!({})).await;
    assert_eq!(list["totalSize"], 2, "{list}");
    // Past the 2 s: the finished task is gone; the waiting one and the other tenant's stay.
    tokio::time::sleep(Duration::from_millis(2300)).await;
    let v = alice.call("GetTask", json!({"id": done})).await;
    assert_eq!(error_code(&v), -32001, "{v}");
    let list = alice.ok("ListTasks", json!({})).await;
    assert_eq!(ids(&list), [waiting]);
    assert_eq!(list["totalSize"], 1, "{list}");
    let done_list = alice
        .ok("ListTasks", json!({"status": "TASK_STATE_COMPLETED"}))
        .await;
    assert_eq!(done_list["totalSize"], 0, "{done_list}");
    let resumed = alice.resume(&done, "0").await.code().await;
    assert_eq!(resumed, -32001);
    let v = alice
        .call(
            "SendMessage",
            json!({"message": {"messageId": "late", "role": "ROLE_USER", "taskId": done,
                "parts": [{"text": "still there?"}]}}),
        )
        .await;
    assert_eq!(error_code(&v), -32001, "{v}");
    // The other tenant keeps its tasks forever.
    let v = kim.ok("GetTask", json!({"id": kept})).await;
    assert_eq!(v["status"]["state"], "TASK_STATE_COMPLETED");
    // The reaper deletes it meanwhile; the answer stays the same.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let v = alice.call("GetTask", json!({"id": done})).await;
    assert_eq!(error_code(&v), -32001, "{v}");
    assert_eq!(alice.ok("ListTasks", json!({})).await["totalSize"], 1);
}

#[tokio::test]
async fn a_task_at_work_or_waiting_never_expires() {
    let s = server("1s").await;
    let alice = s.as_user("tok-a");
    let waiting = alice.send_task("tck-input-required-r3", "hi").await;
    let id = waiting["id"].as_str().unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let v = alice.ok("GetTask", json!({"id": id})).await;
    assert_eq!(v["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
}

/// Runs the binary with `args` and returns its stderr; it must refuse to start.
fn refused(args: &[&str]) -> String {
    let dir = std::env::temp_dir().join(format!("taskledger-ret-{}", uuid::Uuid::new_v4()));
    let out = Command::new(server_binary())
        .args(["--store", "sqlite", "--listen", "127.0.0.1:0"])
        .args(args)
        .arg("--data-dir")
        .arg(&dir)
        .stdin(Stdio::null())
        .output()
        .expect("the taskledger binary runs");
    assert!(!out.status.success(), "{args:?} was accepted");
    assert!(!dir.exists(), "{args:?} created the data directory");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn settings_out_of_bounds_are_refused_at_start_with_a_clear_message() {
    let negative = refused(&["--retention=-1"]);
    assert!(negative.contains("\"-1\" is not a period"), "{negative}");
    let past = refused(&["--retention", "3651d"]);
    assert!(past.contains("past the longest retention"), "{past}");
    let tenant = refused(&["--retention-tenants", "acme"]);
    assert!(tenant.contains("\"acme\" is not tenant=period"), "{tenant}");
    let stall = refused(&["--stall-deadline-secs", "31622401"]);
    assert!(stall.contains("past its maximum"), "{stall}");
    let lease = refused(&["--turn-lease-secs", "2"]);
    assert!(lease.contains("not between 3 and 960"), "{lease}");
}

#[tokio::test]
async fn on_dynamodb_every_item_of_a_finished_task_carries_its_expiry() {
    if !aws_endpoint() {
        return;
    }
    let prefix = format!("tl-ret-{}-", uuid::Uuid::new_v4().simple());
    let mut c = Config::in_memory().with_conformance_scenarios();
    c.storage = Storage::Dynamo {
        index_shards: 1,
        prefix: prefix.clone(),
        create_tables: true,
        counter: None,
        pollers: true,
    };
    c.timings = fast_timings();
    c.retention = Retention::parse("1h", "").unwrap();
    let s = Server::start_with(c).await;
    // Items written while it works (history, chunks, events), then the finishing commit.
    let task = s.send_task("tck-stream-artifact-chunked-ttl", "hi").await;
    let id = task["id"].as_str().unwrap().to_string();
    let finished = chrono_secs(task["status"]["timestamp"].as_str().unwrap());
    let ddb = taskledger_infra::dynamo::client_from_env().await;
    let table = format!("{prefix}tasks");
    let ttl = ddb
        .describe_time_to_live()
        .table_name(&table)
        .send()
        .await
        .unwrap();
    let spec = ttl.time_to_live_description().unwrap();
    assert_eq!(spec.attribute_name(), Some("expires"));
    // The relay stamps the older items once it sees the finishing event.
    let mut missing = Vec::new();
    for _ in 0..100 {
        let out = ddb
            .query()
            .table_name(&table)
            .key_condition_expression("pk = :p")
            .expression_attribute_values(
                ":p",
                aws_sdk_dynamodb::types::AttributeValue::S(format!("T#{id}")),
            )
            .send()
            .await
            .unwrap();
        let items = out.items();
        assert!(items.len() > 5, "{items:?}");
        missing = items
            .iter()
            .filter(|i| i.get("expires").is_none())
            .map(|i| i["sk"].as_s().unwrap().clone())
            .collect();
        if missing.is_empty() {
            for i in items {
                let at: i64 = i["expires"].as_n().unwrap().parse().unwrap();
                assert_eq!(at, finished + 3600, "{:?}", i["sk"]);
            }
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("items without an expiry: {missing:?}");
}

/// Epoch seconds of an RFC 3339 time.
fn chrono_secs(rfc3339: &str) -> i64 {
    taskledger_domain::time::Timestamp::parse(rfc3339)
        .unwrap()
        .unix_secs()
}
