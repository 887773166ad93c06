//! The A2A client taskledger is to an upstream agent (ADR 034): its card discovered at
//! `/.well-known/agent-card.json`, else the 0.2 path `/.well-known/agent.json`, kept and
//! revalidated with its ETag; JSON-RPC calls in the version its interface speaks (1.0 with
//! `A2A-Version: 1.0`, or 0.3's `message/send`…), each answer read as a 1.0 `StreamResponse`.
//! Each call is a client span whose context is a root of its own, linked to the turn's (the
//! upstream is another party: it sees no trace of our callers).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use taskledger_domain::agent::upstream::{
    read_card, UpstreamCard, UpstreamInterface, UpstreamProtocol, CARD_PATHS,
    MAX_UPSTREAM_CARD_BYTES,
};
use taskledger_domain::ports::{Outbound, OutboundError, OutboundEvents, OutboundRequest};
use taskledger_domain::wire::{Message, Role, StreamResponse};
use tracing::Instrument;

use super::spans::{self, About};
use crate::telemetry;

/// How long a card read is trusted, by default, before it is revalidated (`If-None-Match`).
pub const CARD_REVALIDATE_EVERY: Duration = Duration::from_secs(30);

/// What went wrong talking to the upstream.
#[derive(Debug, Clone, PartialEq)]
pub enum Trouble {
    /// The call came to nothing (down, slow, 5xx): trying again later may help.
    Transient(OutboundError),
    /// The upstream answered, but not with what A2A says (or refused the call): the details
    /// are for the log, not for participants (`telemetry::incident`).
    Broken(String),
    /// The SSRF rules refuse the upstream's address.
    AddressRefused,
    /// The upstream answered a call with a JSON-RPC error (its words are for the log).
    Refused(String),
}

impl std::fmt::Display for Trouble {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Trouble::Transient(e) => write!(f, "{e}"),
            Trouble::Broken(why) => write!(f, "{why}"),
            Trouble::AddressRefused => write!(f, "the address is refused by the SSRF rules"),
            Trouble::Refused(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for Trouble {}

impl Trouble {
    /// The kind of trouble as a call's span names it (OpenTelemetry's `error.type`): the HTTP
    /// status, `timeout`, or what went wrong.
    pub fn kind(&self) -> String {
        match self {
            Trouble::Transient(OutboundError::Status(code)) => code.to_string(),
            Trouble::Transient(OutboundError::Timeout) => "timeout".into(),
            Trouble::Transient(_) => "unavailable".into(),
            Trouble::Broken(_) => "malformed_response".into(),
            Trouble::AddressRefused => "address_refused".into(),
            Trouble::Refused(_) => "rpc_error".into(),
        }
    }
}

impl From<OutboundError> for Trouble {
    fn from(e: OutboundError) -> Self {
        if e.transient() {
            Trouble::Transient(e)
        } else if matches!(e, OutboundError::Refused(_)) {
            Trouble::AddressRefused
        } else {
            Trouble::Broken(e.to_string())
        }
    }
}

struct Known {
    card: UpstreamCard,
    etag: Option<String>,
    path: &'static str,
    read_at: Instant,
}

/// The upstream agent, as a client reaches it.
pub struct A2aClient {
    http: Arc<dyn Outbound>,
    base: String,
    known: Mutex<Option<Arc<Known>>>,
    ids: std::sync::atomic::AtomicU64,
    /// How long a card read is trusted before it is revalidated.
    card_ttl: Duration,
    /// A background read of the card is under way (`refresh_if_stale`).
    refreshing: std::sync::atomic::AtomicBool,
}

impl A2aClient {
    /// The agent whose card is under `base` (`--agent-url`).
    pub fn new(http: Arc<dyn Outbound>, base: &str, card_ttl: Duration) -> Self {
        Self {
            http,
            base: base.trim_end_matches('/').to_string(),
            known: Mutex::new(None),
            ids: std::sync::atomic::AtomicU64::new(1),
            card_ttl,
            refreshing: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Reads the card again in the background when none is held or the one held is past its
    /// TTL — one read at a time: what serves our own card (which advertises the upstream's
    /// skills) never waits on the upstream, and is stale no longer than the TTL and one request,
    /// also where no turn runs (the API function on AWS).
    pub fn refresh_if_stale(self: &Arc<Self>) {
        use std::sync::atomic::Ordering;
        let stale = self.known.lock().is_ok_and(|k| {
            k.as_ref()
                .is_none_or(|k| k.read_at.elapsed() >= self.card_ttl)
        });
        if !stale || self.refreshing.swap(true, Ordering::SeqCst) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.refreshing.store(false, Ordering::SeqCst);
            return;
        };
        let me = self.clone();
        runtime.spawn(async move {
            if let Err(e) = me.card().await {
                tracing::debug!(error = %e, "the upstream's card was not read again");
            }
            me.refreshing.store(false, Ordering::SeqCst);
        });
    }

    /// The card as last read, without asking (our own card's advertised skills).
    pub fn cached(&self) -> Option<UpstreamCard> {
        self.known
            .lock()
            .ok()
            .and_then(|k| k.as_ref().map(|k| k.card.clone()))
    }

    /// The card: the one held while fresh, else revalidated (a 304 keeps it) or read anew.
    pub async fn card(&self) -> Result<UpstreamCard, Trouble> {
        let held = self.known.lock().ok().and_then(|k| k.clone());
        if let Some(k) = held
            .as_ref()
            .filter(|k| k.read_at.elapsed() < self.card_ttl)
        {
            return Ok(k.card.clone());
        }
        let paths: Vec<&'static str> = match &held {
            Some(k) => vec![k.path],
            None => CARD_PATHS.to_vec(),
        };
        let mut last = Trouble::Broken("no card path answered".into());
        for path in paths {
            let (span, trace) = spans::card();
            let reply = self
                .http
                .call(OutboundRequest {
                    url: format!("{}{path}", self.base),
                    etag: held.as_ref().and_then(|k| k.etag.clone()),
                    trace,
                    ..Default::default()
                })
                .instrument(span)
                .await;
            let reply = match reply {
                Ok(r) => r,
                Err(e) => {
                    last = e.into();
                    continue;
                }
            };
            if let (304, Some(k)) = (reply.status, held.as_ref()) {
                let fresh = Known {
                    card: k.card.clone(),
                    etag: k.etag.clone(),
                    path,
                    read_at: Instant::now(),
                };
                return Ok(self.keep(fresh));
            }
            if reply.status == 404 {
                last = Trouble::Broken(format!("no agent card at {path} (HTTP 404)"));
                continue;
            }
            if !(200..300).contains(&reply.status) {
                last = OutboundError::Status(reply.status).into();
                continue;
            }
            if reply.body.len() > MAX_UPSTREAM_CARD_BYTES {
                return Err(OutboundError::TooLarge(MAX_UPSTREAM_CARD_BYTES).into());
            }
            let json: Value = serde_json::from_slice(&reply.body)
                .map_err(|e| Trouble::Broken(format!("the agent card is not JSON: {e}")))?;
            let card = read_card(&json).map_err(Trouble::Broken)?;
            return Ok(self.keep(Known {
                card,
                etag: reply.etag,
                path,
                read_at: Instant::now(),
            }));
        }
        Err(last)
    }

    fn keep(&self, known: Known) -> UpstreamCard {
        let card = known.card.clone();
        if let Ok(mut k) = self.known.lock() {
            *k = Some(Arc::new(known));
        }
        card
    }

    fn envelope(&self, i: &UpstreamInterface, method: Method, params: Value) -> OutboundRequest {
        let id = self.ids.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method.name(i.protocol), "params": params});
        OutboundRequest {
            url: i.url.clone(),
            body: Some(body.to_string().into_bytes()),
            headers: match i.protocol {
                UpstreamProtocol::V1 => vec![("A2A-Version".into(), "1.0".into())],
                UpstreamProtocol::V03 => vec![],
            },
            etag: None,
            trace: None,
        }
    }

    /// Sends `message` (a user's, ours) to the upstream — to its task `link` when there is one
    /// — as a stream of its events.
    pub async fn send_stream(
        &self,
        i: &UpstreamInterface,
        message: &Message,
        link: Option<(&str, &str)>,
    ) -> Result<Box<dyn OutboundEvents>, Trouble> {
        let params = json!({ "message": outgoing(i.protocol, message, link) });
        self.open(i, Method::Stream, params, about(message, link))
            .await
    }

    /// Sends `message` without waiting for the work (`returnImmediately` / `blocking: false`):
    /// the task as it is, or the agent's direct reply.
    pub async fn send(
        &self,
        i: &UpstreamInterface,
        message: &Message,
        link: Option<(&str, &str)>,
    ) -> Result<StreamResponse, Trouble> {
        let m = outgoing(i.protocol, message, link);
        let params = match i.protocol {
            UpstreamProtocol::V1 => {
                json!({"message": m, "configuration": {"returnImmediately": true}})
            }
            UpstreamProtocol::V03 => json!({"message": m, "configuration": {"blocking": false}}),
        };
        self.unary(i, Method::Send, params, about(message, link))
            .await
    }

    /// The upstream task as it is (no history).
    pub async fn get_task(
        &self,
        i: &UpstreamInterface,
        task_id: &str,
    ) -> Result<StreamResponse, Trouble> {
        let answer = self
            .unary(
                i,
                Method::Get,
                json!({ "id": task_id, "historyLength": 0 }),
                About {
                    task: Some(task_id),
                    ..About::default()
                },
            )
            .await?;
        match answer {
            StreamResponse::Task(_) => Ok(answer),
            _ => Err(Trouble::Broken(
                "GetTask answered with something else than a task".into(),
            )),
        }
    }

    /// Cancels the upstream task.
    pub async fn cancel(&self, i: &UpstreamInterface, task_id: &str) -> Result<(), Trouble> {
        let about = About {
            task: Some(task_id),
            ..About::default()
        };
        self.unary(i, Method::Cancel, json!({ "id": task_id }), about)
            .await
            .map(|_| ())
    }

    async fn open(
        &self,
        i: &UpstreamInterface,
        method: Method,
        params: Value,
        about: About<'_>,
    ) -> Result<Box<dyn OutboundEvents>, Trouble> {
        let (span, trace) = spans::call(
            method.name(UpstreamProtocol::V1),
            method.name(i.protocol),
            i,
            about,
        );
        let mut req = self.envelope(i, method, params);
        req.trace = trace;
        let started = Instant::now();
        let r = self.http.stream(req).instrument(span.clone()).await;
        telemetry::metrics().upstream(outcome(&r), started.elapsed());
        let r = r.map_err(Trouble::from);
        spans::close(&span, r.as_ref().map(|_| None).map_err(Trouble::kind));
        r
    }

    async fn unary(
        &self,
        i: &UpstreamInterface,
        method: Method,
        params: Value,
        about: About<'_>,
    ) -> Result<StreamResponse, Trouble> {
        let (span, trace) = spans::call(
            method.name(UpstreamProtocol::V1),
            method.name(i.protocol),
            i,
            about,
        );
        let mut req = self.envelope(i, method, params);
        req.trace = trace;
        let started = Instant::now();
        let r = self.http.call(req).instrument(span.clone()).await;
        telemetry::metrics().upstream(outcome(&r), started.elapsed());
        let answer = r.map_err(Trouble::from).and_then(|reply| {
            if !(200..300).contains(&reply.status) {
                return Err(OutboundError::Status(reply.status).into());
            }
            let body = String::from_utf8_lossy(&reply.body);
            match (method, i.protocol) {
                // 1.0 answers GetTask and CancelTask with the bare task.
                (Method::Get | Method::Cancel, UpstreamProtocol::V1) => decode_task(&body),
                _ => decode(i.protocol, &body),
            }
        });
        spans::close(
            &span,
            answer.as_ref().map(spans::task_of).map_err(Trouble::kind),
        );
        answer
    }
}

fn outcome<T>(r: &Result<T, OutboundError>) -> telemetry::CallOutcome {
    match r {
        Ok(_) => telemetry::CallOutcome::Ok,
        Err(OutboundError::Timeout) => telemetry::CallOutcome::Timeout,
        Err(_) => telemetry::CallOutcome::Error,
    }
}

#[derive(Debug, Clone, Copy)]
enum Method {
    Send,
    Stream,
    Get,
    Cancel,
}

impl Method {
    fn name(self, p: UpstreamProtocol) -> &'static str {
        match (self, p) {
            (Method::Send, UpstreamProtocol::V1) => "SendMessage",
            (Method::Stream, UpstreamProtocol::V1) => "SendStreamingMessage",
            (Method::Get, UpstreamProtocol::V1) => "GetTask",
            (Method::Cancel, UpstreamProtocol::V1) => "CancelTask",
            (Method::Send, UpstreamProtocol::V03) => "message/send",
            (Method::Stream, UpstreamProtocol::V03) => "message/stream",
            (Method::Get, UpstreamProtocol::V03) => "tasks/get",
            (Method::Cancel, UpstreamProtocol::V03) => "tasks/cancel",
        }
    }
}

/// What a send is about: the message, and the upstream's task and context it continues.
fn about<'a>(m: &'a Message, link: Option<(&'a str, &'a str)>) -> About<'a> {
    About {
        task: link.map(|(t, _)| t),
        context: link.map(|(_, c)| c),
        message: Some(m.message_id.as_str()),
    }
}

/// Our user's message as the upstream is sent it: the user's words, none of our ids or
/// server-kept metadata; the upstream task's ids when it has one.
fn outgoing(p: UpstreamProtocol, m: &Message, link: Option<(&str, &str)>) -> Value {
    let mut m = m.clone();
    m.role = Role::User;
    taskledger_domain::task::intake::strip_server_keys(&mut m.metadata);
    m.metadata = m.metadata.filter(|meta| !meta.is_empty());
    m.task_id = link.map(|(t, _)| t.to_string());
    m.context_id = link.map(|(_, c)| c.to_string()).filter(|c| !c.is_empty());
    m.reference_task_ids.clear();
    let v = serde_json::to_value(&m).unwrap_or(Value::Null);
    match p {
        UpstreamProtocol::V1 => v,
        UpstreamProtocol::V03 => crate::v03::objects::message_out(&v),
    }
}

/// The upstream's timestamps are its own: our events carry ours (and a timestamp we cannot
/// read would refuse an answer otherwise sound).
fn drop_timestamps(v: &mut Value) {
    for key in ["task", "statusUpdate"] {
        if let Some(s) = v.get_mut(key).and_then(|x| x.get_mut("status")) {
            if let Some(o) = s.as_object_mut() {
                o.remove("timestamp");
            }
        }
    }
}

/// A 1.0 answer whose result is a bare `Task`, as the `StreamResponse` holding it.
fn decode_task(data: &str) -> Result<StreamResponse, Trouble> {
    let mut v = result_of(data)?;
    v = json!({ "task": v });
    drop_timestamps(&mut v);
    serde_json::from_value(v)
        .map_err(|e| Trouble::Broken(format!("an answer that is no Task: {e}")))
}

/// The `result` of a JSON-RPC answer; its `error` as trouble.
fn result_of(data: &str) -> Result<Value, Trouble> {
    let mut v: Value = serde_json::from_str(data)
        .map_err(|e| Trouble::Broken(format!("the answer is not JSON: {e}")))?;
    if let Some(err) = v.get("error") {
        let code = err.get("code").and_then(Value::as_i64).unwrap_or(0);
        let message: String = err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .chars()
            .take(300)
            .collect();
        return Err(Trouble::Refused(format!(
            "the agent answered JSON-RPC error {code}: {message}"
        )));
    }
    v.get_mut("result")
        .map(Value::take)
        .ok_or_else(|| Trouble::Broken("the answer has neither result nor error".into()))
}

/// One JSON-RPC answer (a whole reply or one stream event) as a 1.0 `StreamResponse`.
pub fn decode(p: UpstreamProtocol, data: &str) -> Result<StreamResponse, Trouble> {
    let result = result_of(data)?;
    let mut result = match p {
        UpstreamProtocol::V1 => result,
        UpstreamProtocol::V03 => crate::v03::answers::event_in(&result)
            .map_err(|e| Trouble::Broken(format!("a 0.3 answer that does not read: {e}")))?,
    };
    drop_timestamps(&mut result);
    serde_json::from_value(result)
        .map_err(|e| Trouble::Broken(format!("an answer that is no StreamResponse: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_of_both_versions_decode_and_errors_are_broken() {
        let v1 = decode(
            UpstreamProtocol::V1,
            r#"{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING","timestamp":"whenever"}}}}"#,
        )
        .unwrap();
        assert!(matches!(v1, StreamResponse::StatusUpdate(_)));
        let v03 = decode(
            UpstreamProtocol::V03,
            r#"{"jsonrpc":"2.0","id":1,"result":{"kind":"status-update","taskId":"t","contextId":"c","final":false,"status":{"state":"working"}}}"#,
        )
        .unwrap();
        assert_eq!(v1, v03);
        let err = decode(
            UpstreamProtocol::V1,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found"}}"#,
        )
        .unwrap_err();
        assert!(matches!(err, Trouble::Refused(m) if m.contains("-32001")));
        assert!(decode(UpstreamProtocol::V1, "not json").is_err());
        assert!(decode(UpstreamProtocol::V1, r#"{"result":{"bogus":1}}"#).is_err());
    }

    #[test]
    fn a_user_message_goes_out_without_our_ids_in_the_interfaces_version() {
        let mut m = Message::user_text("m-1", "hi");
        m.task_id = Some("ours".into());
        m.context_id = Some("ours-c".into());
        let v1 = outgoing(UpstreamProtocol::V1, &m, Some(("u-1", "uc")));
        assert_eq!(v1["taskId"], "u-1");
        assert_eq!(v1["role"], "ROLE_USER");
        let v03 = outgoing(UpstreamProtocol::V03, &m, None);
        assert_eq!(v03["kind"], "message");
        assert_eq!(v03["role"], "user");
        assert!(v03.get("taskId").is_none());
    }
}
