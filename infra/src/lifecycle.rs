//! Lifecycle sinks (ADR 038): a task's lifecycle events published to an EventBridge bus
//! (`PutEvents`, feature `eventbridge`) or POSTed to a webhook, signed as push deliveries are
//! (`X-Taskledger-Signature`, detached JWS). Both write the EventBridge envelope: `source`
//! `taskledger`, a `detail-type`, and the `detail`; a webhook event's `id` is its task, event
//! and type, the same on a redelivery.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use taskledger_domain::ports::{LifecycleSink, StoreError};
#[cfg(feature = "eventbridge")]
use taskledger_domain::projection::lifecycle::MAX_BATCH;
use taskledger_domain::projection::lifecycle::{LifecycleEvent, SOURCE};
use taskledger_domain::push;

use crate::webhook::PushSigner;

/// How long one webhook POST may take.
pub const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// The id a consumer tells a redelivered event by: task, event and type.
pub fn event_id(e: &LifecycleEvent) -> String {
    format!(
        "{}:{}:{}",
        e.task_id,
        e.seq,
        e.detail_type.to_ascii_lowercase().replace(' ', "-")
    )
}

/// The EventBridge envelope of `e`, as a rule or a webhook receiver reads it.
pub fn envelope(e: &LifecycleEvent) -> Value {
    json!({
        "version": "0",
        "id": event_id(e),
        "source": SOURCE,
        "detail-type": e.detail_type,
        "time": e.detail.get("time").cloned().unwrap_or(Value::Null),
        "resources": [],
        "detail": e.detail,
    })
}

/// Lifecycle events POSTed one by one to a webhook (the local server's `--events-webhook`).
pub struct WebhookLifecycle {
    client: reqwest::Client,
    url: reqwest::Url,
    signer: Option<Arc<PushSigner>>,
}

impl WebhookLifecycle {
    /// A sink POSTing to `url` (http or https), signing with `signer` when there is one.
    pub fn new(url: &str, signer: Option<Arc<PushSigner>>) -> Result<Self, String> {
        let url = reqwest::Url::parse(url).map_err(|e| format!("events webhook {url:?}: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "events webhook: scheme {} is not http or https",
                url.scheme()
            ));
        }
        let client = reqwest::Client::builder()
            .timeout(WEBHOOK_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()
            .map_err(|e| format!("events webhook client: {e}"))?;
        Ok(Self {
            client,
            url,
            signer,
        })
    }
}

#[async_trait::async_trait]
impl LifecycleSink for WebhookLifecycle {
    async fn publish(&self, events: &[LifecycleEvent]) -> Result<(), StoreError> {
        for e in events {
            let body = envelope(e).to_string().into_bytes();
            let mut req = self
                .client
                .post(self.url.clone())
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header(push::DELIVERY_ID_HEADER, event_id(e));
            if let Some(signer) = &self.signer {
                req = req.header(push::SIGNATURE_HEADER, signer.sign(&body));
            }
            let sent = req.body(body).send().await.map_err(|err| {
                StoreError::Unavailable(format!("events webhook: {}", err.without_url()))
            })?;
            if !sent.status().is_success() {
                return Err(StoreError::Unavailable(format!(
                    "events webhook answered {}",
                    sent.status()
                )));
            }
        }
        Ok(())
    }
}

/// Several sinks, each given every event in turn (a bus and a webhook).
pub struct Sinks(pub Vec<Arc<dyn LifecycleSink>>);

#[async_trait::async_trait]
impl LifecycleSink for Sinks {
    async fn publish(&self, events: &[LifecycleEvent]) -> Result<(), StoreError> {
        for sink in &self.0 {
            sink.publish(events).await?;
        }
        Ok(())
    }
}

/// Lifecycle events put on an EventBridge bus, at most `MAX_BATCH` a call, in order.
#[cfg(feature = "eventbridge")]
pub struct EventBridgeLifecycle {
    client: aws_sdk_eventbridge::Client,
    bus: String,
}

#[cfg(feature = "eventbridge")]
impl EventBridgeLifecycle {
    pub fn new(client: aws_sdk_eventbridge::Client, bus: impl Into<String>) -> Self {
        Self {
            client,
            bus: bus.into(),
        }
    }

    /// A client from the environment (credentials, region, `AWS_ENDPOINT_URL`).
    pub async fn client_from_env() -> aws_sdk_eventbridge::Client {
        aws_sdk_eventbridge::Client::new(&aws_config::load_from_env().await)
    }
}

#[cfg(feature = "eventbridge")]
#[async_trait::async_trait]
impl LifecycleSink for EventBridgeLifecycle {
    async fn publish(&self, events: &[LifecycleEvent]) -> Result<(), StoreError> {
        use aws_sdk_eventbridge::types::PutEventsRequestEntry;
        for chunk in events.chunks(MAX_BATCH) {
            let entries = chunk
                .iter()
                .map(|e| {
                    PutEventsRequestEntry::builder()
                        .source(SOURCE)
                        .detail_type(e.detail_type)
                        .detail(e.detail.to_string())
                        .event_bus_name(&self.bus)
                        .build()
                })
                .collect::<Vec<_>>();
            let out = self
                .client
                .put_events()
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|e| {
                    StoreError::Unavailable(format!(
                        "EventBridge PutEvents: {}",
                        aws_sdk_eventbridge::error::DisplayErrorContext(&e)
                    ))
                })?;
            if out.failed_entry_count() > 0 {
                let why = out
                    .entries()
                    .iter()
                    .filter_map(|r| r.error_message())
                    .next()
                    .unwrap_or("no reason given");
                return Err(StoreError::Unavailable(format!(
                    "EventBridge took {} of {} events: {why}",
                    chunk.len() as i32 - out.failed_entry_count(),
                    chunk.len()
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_keeps_its_id_across_deliveries_and_carries_the_envelope() {
        let e = LifecycleEvent {
            detail_type: "Task Status Changed",
            task_id: "t-1".into(),
            seq: 7,
            detail: json!({"taskId": "t-1", "time": "2026-01-01T00:00:00.000Z"}),
        };
        assert_eq!(event_id(&e), "t-1:7:task-status-changed");
        let v = envelope(&e);
        assert_eq!(v["source"], "taskledger");
        assert_eq!(v["detail-type"], "Task Status Changed");
        assert_eq!(v["time"], "2026-01-01T00:00:00.000Z");
        assert_eq!(v["detail"]["taskId"], "t-1");
    }

    #[test]
    fn only_http_and_https_webhooks_are_taken() {
        assert!(WebhookLifecycle::new("https://hooks.example.com/e", None).is_ok());
        assert!(WebhookLifecycle::new("file:///etc/passwd", None).is_err());
        assert!(WebhookLifecycle::new("not a url", None).is_err());
    }
}
