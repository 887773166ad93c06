//! A task's lifecycle published from the relay (ADR 038): on the embedded store to the events
//! webhook (`--events-webhook`), each event in the EventBridge envelope and signed as pushes
//! are; on DynamoDB to an EventBridge bus on the emulator (moto's events), a rule delivering
//! them to an SQS queue. Summary detail carries no text of the task.

use std::time::Duration;

use serde_json::{json, Value};
use taskledger_local::Storage;
use taskledger_tests::receiver::{published_key, verify_signature, Receiver, Script};
use taskledger_tests::{aws_endpoint, test_config, Server};

/// A task that asks for input ("book a flight"), is answered ("window seat") and completes;
/// returns its id.
async fn asked_then_answered(s: &Server) -> String {
    let asked = format!("tck-input-required-{}", uuid::Uuid::new_v4().simple());
    let v = s
        .call(
            "SendMessage",
            json!({"message": {"messageId": asked, "role": "ROLE_USER",
                "parts": [{"text": "book a flight"}]}}),
        )
        .await;
    let id = v["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{v}"))
        .to_string();
    let v = s
        .call(
            "SendMessage",
            json!({"message": {"messageId": format!("answer-{}", uuid::Uuid::new_v4().simple()), "taskId": id,
                "role": "ROLE_USER", "parts": [{"text": "window seat"}]}}),
        )
        .await;
    assert!(v.get("error").is_none(), "{v}");
    s.wait_state(&id, "TASK_STATE_COMPLETED").await;
    id
}

/// (detail-type, state) of each event of `task`, in the order received.
fn told(events: &[Value], task: &str) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|e| e["detail"]["taskId"] == task)
        .map(|e| {
            (
                e["detail-type"].as_str().unwrap_or_default().to_string(),
                e["detail"]["state"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect()
}

fn completed(events: &[Value], task: &str) -> bool {
    told(events, task)
        .iter()
        .any(|(t, s)| t == "Task Status Changed" && s == "TASK_STATE_COMPLETED")
}

fn check_story(events: &[Value], task: &str) {
    let story = told(events, task);
    let statuses: Vec<&str> = story
        .iter()
        .filter(|(t, _)| t == "Task Status Changed")
        .map(|(_, s)| s.as_str())
        .collect();
    assert_eq!(statuses.first(), Some(&"TASK_STATE_SUBMITTED"), "{story:?}");
    assert_eq!(statuses.last(), Some(&"TASK_STATE_COMPLETED"), "{story:?}");
    assert!(statuses.contains(&"TASK_STATE_INPUT_REQUIRED"), "{story:?}");
    assert!(
        story.iter().any(|(t, _)| t == "Task Input Required"),
        "{story:?}"
    );
    assert!(
        story.iter().any(|(t, _)| t == "Task Artifact Updated"),
        "{story:?}"
    );
    for e in events.iter().filter(|e| e["detail"]["taskId"] == task) {
        assert_eq!(e["source"], "taskledger");
        let d = &e["detail"];
        assert_eq!(d["tenant"], "default", "{e}");
        assert!(d["contextId"].is_string() && d["seq"].is_u64(), "{e}");
        let text = e.to_string();
        for private in ["book a flight", "window seat"] {
            assert!(
                !text.contains(private),
                "summary detail carries {private}: {e}"
            );
        }
    }
    // Per task, in the order of its log.
    let seqs: Vec<u64> = events
        .iter()
        .filter(|e| e["detail"]["taskId"] == task)
        .map(|e| e["detail"]["seq"].as_u64().unwrap())
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] <= w[1]), "{seqs:?}");
}

#[tokio::test]
async fn the_events_webhook_hears_each_tasks_lifecycle_signed() {
    use p256::pkcs8::{EncodePrivateKey, LineEnding};
    let r = Receiver::start(Script::Always(200)).await;
    let mut config = test_config();
    config.storage = Storage::Memory;
    config.lifecycle.webhook = Some(r.url.clone());
    let key = p256::ecdsa::SigningKey::from_slice(&[7u8; 32]).unwrap();
    config.push.signing_key_pem = Some(key.to_pkcs8_pem(LineEnding::LF).unwrap().to_string());
    let s = Server::start_with(config).await;
    let id = asked_then_answered(&s).await;
    r.wait_for(Duration::from_secs(10), |seen| {
        completed(&seen.iter().map(|x| x.json()).collect::<Vec<_>>(), &id)
    })
    .await;
    let seen = r.seen();
    let events: Vec<Value> = seen.iter().map(|x| x.json()).collect();
    check_story(&events, &id);
    // Signed with the key the server publishes.
    let (_, vk) = published_key(&s).await;
    for d in &seen {
        verify_signature(d, &vk);
        let id = d.header("x-taskledger-delivery-id").expect("an id");
        assert_eq!(id, d.json()["id"], "the delivery id is the event's");
    }
}

#[tokio::test]
async fn a_webhook_that_fails_gets_the_events_again_and_none_is_lost() {
    let r = Receiver::start(Script::FailFirst(2)).await;
    let mut config = test_config();
    config.storage = Storage::Memory;
    config.lifecycle.webhook = Some(r.url.clone());
    let s = Server::start_with(config).await;
    let id = asked_then_answered(&s).await;
    r.wait_for(Duration::from_secs(20), |seen| {
        completed(&seen.iter().map(|x| x.json()).collect::<Vec<_>>(), &id)
    })
    .await;
    let unique: Vec<Value> = r.unique().iter().map(|x| x.json()).collect();
    check_story(&unique, &id);
    assert!(
        r.seen().len() > unique.len(),
        "the failed posts were retried"
    );
}

#[tokio::test]
async fn on_dynamodb_the_lifecycle_reaches_an_eventbridge_rule() {
    if !aws_endpoint() {
        return;
    }
    let events = taskledger_infra::lifecycle::EventBridgeLifecycle::client_from_env().await;
    let sqs = taskledger_infra::sqs::client_from_env().await;
    let tag = uuid::Uuid::new_v4().simple().to_string();
    let bus = format!("tl-bus-{tag}");
    events.create_event_bus().name(&bus).send().await.unwrap();
    let queue = sqs
        .create_queue()
        .queue_name(format!("tl-lifecycle-{tag}"))
        .send()
        .await
        .unwrap()
        .queue_url()
        .unwrap()
        .to_string();
    let arn = sqs
        .get_queue_attributes()
        .queue_url(&queue)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap()
        .attributes()
        .unwrap()[&aws_sdk_sqs::types::QueueAttributeName::QueueArn]
        .clone();
    events
        .put_rule()
        .name(format!("tl-rule-{tag}"))
        .event_bus_name(&bus)
        .event_pattern(json!({"source": ["taskledger"]}).to_string())
        .send()
        .await
        .unwrap();
    events
        .put_targets()
        .rule(format!("tl-rule-{tag}"))
        .event_bus_name(&bus)
        .targets(
            aws_sdk_eventbridge::types::Target::builder()
                .id("queue")
                .arn(arn)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();

    let mut config = test_config();
    config.storage = Storage::Dynamo {
        index_shards: 1,
        prefix: format!("tl-lc-{tag}-"),
        create_tables: true,
        counter: None,
        pollers: true,
    };
    config.lifecycle.bus = Some(bus);
    let s = Server::start_with(config).await;
    let id = asked_then_answered(&s).await;
    let mut got: Vec<Value> = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !completed(&got, &id) && std::time::Instant::now() < deadline {
        let out = sqs
            .receive_message()
            .queue_url(&queue)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap();
        for m in out.messages() {
            got.push(serde_json::from_str(m.body().unwrap_or_default()).unwrap());
            sqs.delete_message()
                .queue_url(&queue)
                .receipt_handle(m.receipt_handle().unwrap())
                .send()
                .await
                .unwrap();
        }
    }
    assert!(completed(&got, &id), "{got:?}");
    check_story(&got, &id);
}
