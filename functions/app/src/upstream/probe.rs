//! Our A2A client under ACTS's client tests (§10, `tck-client-parse`): a canned answer is
//! served on a loopback port of this process — for every request, the JSON-RPC id echoed as a
//! server would — and the client the upstream forwarder uses calls it as it calls an upstream,
//! through its HTTP adapter, envelope handling, error mapping and decoding. What the client
//! made of it is the result: a send's answer with its `task`/`message` discriminator, GetTask's
//! task, a card as the client reads it (name, JSON-RPC interfaces, capabilities, skills, modes),
//! or the error it raised.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};
use taskledger_domain::agent::upstream::{UpstreamCard, UpstreamInterface, UpstreamProtocol};
use taskledger_domain::ports::Outbound;
use taskledger_domain::wire::{Message, StreamResponse};

use super::client::{A2aClient, Trouble};
use crate::agent::acts::ClientProbe;

/// How long the client may take over one canned answer (a loopback call).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// The client under test, reaching only the fixtures it serves itself.
pub struct ClientParser {
    http: Arc<dyn Outbound>,
}

impl ClientParser {
    /// `http` must let loopback addresses through (the fixture listens on 127.0.0.1).
    pub fn new(http: Arc<dyn Outbound>) -> Self {
        Self { http }
    }

    async fn run(&self, operation: &str, base: &str) -> Result<Value, Trouble> {
        let client = A2aClient::new(self.http.clone(), base, Duration::ZERO);
        let interface = UpstreamInterface {
            url: format!("{base}/"),
            protocol: UpstreamProtocol::V1,
        };
        let rendered = |v: Result<Value, serde_json::Error>| {
            v.map_err(|e| Trouble::Broken(format!("cannot render the parsed answer: {e}")))
        };
        match operation {
            "send_message" => {
                let message = Message::user_text(uuid::Uuid::new_v4().to_string(), "acts");
                let answer = client.send(&interface, &message, None).await?;
                rendered(serde_json::to_value(&answer))
            }
            "get_task" => match client.get_task(&interface, "acts").await? {
                StreamResponse::Task(task) => rendered(serde_json::to_value(&task)),
                other => rendered(serde_json::to_value(&other)),
            },
            "get_agent_card" | "get_extended_agent_card" => Ok(card_as_read(&client.card().await?)),
            other => Err(Trouble::Broken(format!(
                "unsupported client operation {other:?} (send_message, get_task, get_agent_card, \
                 get_extended_agent_card)"
            ))),
        }
    }
}

/// A card as our client reads it: what it uses of one, in the card's own field names.
fn card_as_read(card: &UpstreamCard) -> Value {
    json!({
        "name": card.name,
        "capabilities": card.capabilities,
        "supportedInterfaces": card.offered.iter().map(|i| json!({
            "url": i.url, "protocolBinding": "JSONRPC", "protocolVersion": i.protocol.label(),
        })).collect::<Vec<_>>(),
        "skills": card.advertised.skills,
        "defaultInputModes": card.advertised.input_modes,
        "defaultOutputModes": card.advertised.output_modes,
    })
}

#[async_trait]
impl ClientProbe for ClientParser {
    async fn parse(&self, operation: &str, wire_payload: Value) -> Value {
        let had_error = wire_payload.get("error").cloned();
        let fixture = match Fixture::serve(wire_payload).await {
            Ok(f) => f,
            Err(e) => return json!({"error": {"message": format!("no fixture port: {e}")}}),
        };
        let parsed = tokio::time::timeout(PROBE_TIMEOUT, self.run(operation, &fixture.base)).await;
        drop(fixture);
        match parsed {
            Ok(Ok(value)) => value,
            // The answer's own error is what the client surfaced (CLIENT-PARSE-004).
            Ok(Err(e)) => match had_error {
                Some(wire) => json!({"error": wire, "raised": e.to_string()}),
                None => json!({"error": {"message": e.to_string(), "type": e.kind()}}),
            },
            Err(_) => json!({"error": {"message": "the client did not finish in time"}}),
        }
    }
}

/// A loopback server answering every request with one payload.
struct Fixture {
    base: String,
    task: tokio::task::JoinHandle<()>,
}

impl Fixture {
    async fn serve(payload: Value) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let payload = Arc::new(payload);
        let app = axum::Router::new().fallback(move |body: axum::body::Bytes| {
            let payload = payload.clone();
            async move {
                (
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    answer(&payload, &body),
                )
            }
        });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { base, task })
    }
}

/// A fixture ends with its call, however the call ends (a canceled turn too).
impl Drop for Fixture {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The payload as the answer to `request`: a JSON-RPC envelope takes the request's id (the
/// canned one cannot match the id the client chose).
fn answer(payload: &Value, request: &[u8]) -> String {
    let mut payload = payload.clone();
    let enveloped = ["jsonrpc", "result", "error"]
        .iter()
        .any(|k| payload.get(k).is_some());
    let id = serde_json::from_slice::<Value>(request)
        .ok()
        .and_then(|r| r.get("id").cloned());
    if let (true, Some(id), Some(o)) = (enveloped, id, payload.as_object_mut()) {
        o.insert("id".into(), id);
    }
    payload.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_envelope_takes_the_requests_id_and_a_bare_card_stays_as_it_is() {
        let env = json!({"jsonrpc": "2.0", "id": "req-1", "result": {"id": "t"}});
        let out: Value = serde_json::from_str(&answer(&env, br#"{"id": 7}"#)).unwrap();
        assert_eq!(out["id"], 7);
        let card = json!({"name": "n", "version": "1"});
        let out: Value = serde_json::from_str(&answer(&card, br#"{"id": 7}"#)).unwrap();
        assert_eq!(out, card);
    }
}
