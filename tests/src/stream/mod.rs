//! The streaming side of the harness: `SendStreamingMessage` and `SubscribeToTask` over the
//! server's binding, read the way a client reads them — Server-Sent Events over a real socket
//! on JSON-RPC and HTTP+JSON (a small SSE reader on reqwest's body chunks), a tonic
//! server-streaming call on gRPC.
//!
//! Every event comes back as the `StreamResponse` in ProtoJSON (`data`), with its SSE `id:`
//! (none on gRPC) and its bytes on the wire (`raw`: the event's field lines on SSE, the
//! message's protobuf encoding on gRPC), so tests can compare what two subscribers got byte for
//! byte. On the way each event is checked: one `data:` JSON document per event, a JSON-RPC
//! envelope echoing the request id around a `result` (JSON-RPC), a bare `StreamResponse`
//! (HTTP+JSON), exactly one of `task`, `message`, `statusUpdate`, `artifactUpdate`.
//!
//! A request refused before its stream opens comes back as the JSON-RPC error response object
//! (translated from HTTP+JSON and gRPC errors by `binding`), as `Server::call` gives it.

use std::time::Duration;

use prost::Message as _;
use reqwest::header::CONTENT_TYPE;
use reqwest::Method as HttpMethod;
use serde_json::{json, Value};
use taskledger_app::grpc::convert;
use taskledger_app::grpc::proto::{self as pb, a2a_service_client::A2aServiceClient};
use taskledger_domain::card::REST_PATH;

use crate::binding::{self, Binding};
use crate::Server;

mod sse;
pub mod tasks;

use sse::read_sse;
pub use tasks::*;

/// How long a stream may stay silent (no event, no comment, not closed) before the test fails.
pub const IDLE_LIMIT: Duration = Duration::from_secs(10);

/// The JSON-RPC id of the harness's streaming requests: every event must echo it.
pub const REQUEST_ID: &str = "stream-7";

/// The members of a `StreamResponse`, exactly one of which each event has.
pub const MEMBERS: [&str; 4] = ["task", "message", "statusUpdate", "artifactUpdate"];

/// The resume header (gRPC: the `last-event-id` metadata key).
pub const LAST_EVENT_ID: &str = "Last-Event-ID";

/// One event of a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamEvent {
    /// The SSE `id:` (the task's event sequence); none on gRPC.
    pub id: Option<u64>,
    /// The `StreamResponse`, ProtoJSON.
    pub data: Value,
    /// The bytes on the wire: the SSE event's field lines (`id:`, `data:`, …, comments left
    /// out) joined by `\n`, or the gRPC message's protobuf encoding.
    pub raw: Vec<u8>,
}

impl StreamEvent {
    /// Which member it is: `task`, `message`, `statusUpdate` or `artifactUpdate`.
    pub fn kind(&self) -> &'static str {
        MEMBERS
            .into_iter()
            .find(|m| self.data.get(*m).is_some())
            .unwrap_or("?")
    }

    /// The member's value.
    pub fn body(&self) -> &Value {
        &self.data[self.kind()]
    }

    /// The state a Task or a status update reports.
    pub fn state(&self) -> Option<&str> {
        match self.kind() {
            "task" | "statusUpdate" => self.body()["status"]["state"].as_str(),
            _ => None,
        }
    }

    /// The SSE id, which must be there.
    pub fn seq(&self) -> u64 {
        self.id
            .unwrap_or_else(|| panic!("an event without an SSE id: {}", self.data))
    }
}

/// What a stream delivers: an event, or a comment (`: keep-alive`).
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Event(StreamEvent),
    Comment(String),
}

/// The answer to a streaming request: a stream, or an error before it opened.
pub enum Opened {
    Stream(Box<EventStream>),
    /// The JSON-RPC error response object.
    Refused(Value),
}

impl Opened {
    pub fn stream(self) -> EventStream {
        match self {
            Opened::Stream(s) => *s,
            Opened::Refused(v) => panic!("expected a stream, the request was refused: {v}"),
        }
    }

    /// The error response of a request refused before its stream opened (on gRPC: the call
    /// itself fails, with no response headers and no message).
    pub async fn refused(self) -> Value {
        match self {
            Opened::Refused(v) => v,
            Opened::Stream(mut s) => {
                let first = s.next_item().await;
                panic!(
                    "expected an error before the stream opened, got a {} stream ({}), first item {first:?}",
                    s.binding.name(),
                    s.content_type
                )
            }
        }
    }

    /// The JSON-RPC error code of the refusal (its shape checked by `error_code`).
    pub async fn code(self) -> i64 {
        crate::error_code(&self.refused().await)
    }
}

enum Source {
    Sse {
        resp: reqwest::Response,
        buf: Vec<u8>,
        /// The lines of the event being read.
        block: Vec<String>,
        /// JSON-RPC: each `data:` is a response object around the StreamResponse.
        envelope: bool,
    },
    Grpc(tonic::Streaming<pb::StreamResponse>),
}

/// An open stream.
pub struct EventStream {
    pub binding: Binding,
    /// The response's Content-Type (`application/grpc` on gRPC).
    pub content_type: String,
    /// Comments read so far, in order.
    pub comments: Vec<String>,
    source: Source,
    closed: bool,
}

impl EventStream {
    /// The next event or comment; `None` once the server closed the stream. Fails the test if
    /// the stream stays silent for `IDLE_LIMIT`.
    pub async fn next_item(&mut self) -> Option<Item> {
        match tokio::time::timeout(IDLE_LIMIT, self.read_item()).await {
            Ok(item) => item,
            Err(_) => panic!(
                "the {} stream was silent for {IDLE_LIMIT:?} without closing",
                self.binding.name()
            ),
        }
    }

    /// The next event (comments are kept in `comments`); `None` once the stream closed.
    pub async fn next(&mut self) -> Option<StreamEvent> {
        loop {
            match self.next_item().await? {
                Item::Event(e) => return Some(e),
                Item::Comment(c) => self.comments.push(c),
            }
        }
    }

    /// The next event, which must come.
    pub async fn expect(&mut self) -> StreamEvent {
        let binding = self.binding.name();
        self.next()
            .await
            .unwrap_or_else(|| panic!("the {binding} stream closed; an event was expected"))
    }

    /// Every event until the server closes the stream.
    pub async fn rest(mut self) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        while let Some(e) = self.next().await {
            out.push(e);
        }
        out
    }

    /// Reads for `d`, which must bring no event and no close (the stream stays open); returns
    /// the comments that came meanwhile.
    pub async fn stays_open_for(&mut self, d: Duration) -> Vec<String> {
        let mut seen = Vec::new();
        let deadline = tokio::time::Instant::now() + d;
        loop {
            match tokio::time::timeout_at(deadline, self.read_item()).await {
                Err(_) => return seen,
                Ok(None) => panic!("the stream closed; it should have stayed open"),
                Ok(Some(Item::Event(e))) => panic!("no event was expected, got {}", e.data),
                Ok(Some(Item::Comment(c))) => {
                    self.comments.push(c.clone());
                    seen.push(c);
                }
            }
        }
    }

    /// Whether the server has closed the stream (seen by a read).
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    async fn read_item(&mut self) -> Option<Item> {
        if self.closed {
            return None;
        }
        let item = match &mut self.source {
            Source::Grpc(g) => match g.message().await {
                Ok(Some(m)) => Some(Item::Event(grpc_event(&m))),
                Ok(None) => None,
                Err(s) => panic!("the gRPC stream ended with an error: {s:?}"),
            },
            Source::Sse {
                resp,
                buf,
                block,
                envelope,
            } => read_sse(resp, buf, block, *envelope).await,
        };
        if item.is_none() {
            self.closed = true;
        }
        item
    }
}

fn grpc_event(m: &pb::StreamResponse) -> StreamEvent {
    assert!(m.payload.is_some(), "a StreamResponse without a payload");
    let data = convert::to_protojson(m).unwrap_or_else(|e| panic!("{m:?}: {e}"));
    check_stream_response(&data);
    StreamEvent {
        id: None,
        data,
        raw: m.encode_to_vec(),
    }
}

/// A `StreamResponse` has exactly one of its four members.
pub fn check_stream_response(v: &Value) {
    let members: Vec<&String> = v
        .as_object()
        .unwrap_or_else(|| panic!("a StreamResponse is an object: {v}"))
        .keys()
        .collect();
    assert!(
        members.len() == 1 && MEMBERS.contains(&members[0].as_str()),
        "a StreamResponse has exactly one of {MEMBERS:?}: {v}"
    );
}

impl Server {
    /// `method` (`SendStreamingMessage` or `SubscribeToTask`) with `params` (JSON-RPC form)
    /// over the server's binding.
    pub async fn stream(&self, method: &str, params: Value) -> Opened {
        self.stream_with(method, params, &[]).await
    }

    /// `stream` with extra headers (gRPC: metadata, keys lowercased: `Last-Event-ID` is
    /// `last-event-id`).
    pub async fn stream_with(&self, method: &str, params: Value, extra: &[(&str, &str)]) -> Opened {
        match self.binding {
            Binding::JsonRpc => self.stream_jsonrpc("/a2a", method, params, extra).await,
            Binding::Rest => {
                let r = binding::rest_request(method, &params)
                    .unwrap_or_else(|why| panic!("{method} {params} over HTTP+JSON: {why}"));
                let mut path = r.path;
                if !r.query.is_empty() {
                    let query = form_urlencoded::Serializer::new(String::new())
                        .extend_pairs(&r.query)
                        .finish();
                    path = format!("{path}?{query}");
                }
                let body = r.body.map(|b| serde_json::to_vec(&b).expect("json"));
                self.stream_rest(r.method, &path, body, extra).await
            }
            Binding::Grpc => self.stream_grpc(method, params, extra).await,
        }
    }

    /// A JSON-RPC streaming request posted to `path` (`/a2a`, or the root `/`).
    pub async fn stream_jsonrpc(
        &self,
        path: &str,
        method: &str,
        params: Value,
        extra: &[(&str, &str)],
    ) -> Opened {
        let body = json!({"jsonrpc": "2.0", "id": REQUEST_ID, "method": method, "params": params});
        let mut req = self
            .client
            .post(format!("{}{path}", self.base))
            .header(CONTENT_TYPE, "application/json")
            .header("Accept", "text/event-stream")
            .body(serde_json::to_vec(&body).expect("json"));
        req = self.with_headers(req, extra);
        self.open_http(req, true).await
    }

    /// An HTTP+JSON streaming request: `path` below the base path (query included), the JSON
    /// body for a POST (`None`: no body at all).
    pub async fn stream_rest(
        &self,
        method: HttpMethod,
        path: &str,
        body: Option<Vec<u8>>,
        extra: &[(&str, &str)],
    ) -> Opened {
        let mut req = self
            .client
            .request(method, format!("{}{REST_PATH}{path}", self.base))
            .header("Accept", "text/event-stream");
        if let Some(b) = body {
            req = req.header(CONTENT_TYPE, "application/json").body(b);
        }
        req = self.with_headers(req, extra);
        self.open_http(req, false).await
    }

    fn with_headers(
        &self,
        mut req: reqwest::RequestBuilder,
        extra: &[(&str, &str)],
    ) -> reqwest::RequestBuilder {
        // An extra `A2A-Version` replaces the default.
        if !extra
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("A2A-Version"))
        {
            req = req.header("A2A-Version", "1.0");
        }
        for (k, v) in extra {
            req = req.header(*k, *v);
        }
        if let Some(t) = &self.token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        req
    }

    async fn open_http(&self, req: reqwest::RequestBuilder, envelope: bool) -> Opened {
        let resp = req.send().await.expect("request sent");
        let status = resp.status();
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        if status.is_success() && content_type.starts_with("text/event-stream") {
            assert_eq!(status.as_u16(), 200, "a stream answers 200");
            return Opened::Stream(Box::new(EventStream {
                binding: if envelope {
                    Binding::JsonRpc
                } else {
                    Binding::Rest
                },
                content_type,
                comments: Vec::new(),
                source: Source::Sse {
                    resp,
                    buf: Vec::new(),
                    block: Vec::new(),
                    envelope,
                },
                closed: false,
            }));
        }
        let bytes = resp.bytes().await.expect("body");
        let v: Value = serde_json::from_slice(&bytes).unwrap_or_else(|_| {
            panic!(
                "HTTP {status} {content_type}: neither a stream nor a JSON error: {}",
                String::from_utf8_lossy(&bytes)
            )
        });
        assert!(
            content_type.starts_with("application/json")
                || content_type.starts_with("application/a2a+json"),
            "an error before the stream is JSON, not {content_type:?}: {v}"
        );
        if envelope {
            assert_eq!(status.as_u16(), 200, "JSON-RPC errors answer 200: {v}");
            assert!(
                v.get("error").is_some(),
                "a single reply, not a stream: {v}"
            );
            assert_eq!(v["id"], REQUEST_ID, "the error echoes the request id: {v}");
            Opened::Refused(v)
        } else {
            assert!(
                !status.is_success(),
                "HTTP {status}: a reply, not a stream: {v}"
            );
            Opened::Refused(binding::rest_error(status, &v, self.error_table))
        }
    }

    async fn stream_grpc(&self, method: &str, params: Value, extra: &[(&str, &str)]) -> Opened {
        let endpoint = self.grpc.as_ref().expect("this server does not serve gRPC");
        let mut client = A2aServiceClient::new(endpoint.channel.clone());
        let token = self.token.as_deref();
        let fail = |why: String| -> ! { panic!("{method} {params} over gRPC: {why}") };
        let outcome = match method {
            "SendStreamingMessage" => {
                let m: pb::SendMessageRequest =
                    binding::grpc_message(&params).unwrap_or_else(|w| fail(w));
                let r = binding::grpc_request(m, token, extra);
                client.send_streaming_message(r).await
            }
            "SubscribeToTask" => {
                let m: pb::SubscribeToTaskRequest =
                    binding::grpc_message(&params).unwrap_or_else(|w| fail(w));
                let r = binding::grpc_request(m, token, extra);
                client.subscribe_to_task(r).await
            }
            other => fail(format!("{other} is no streaming RPC")),
        };
        match outcome {
            Ok(resp) => Opened::Stream(Box::new(EventStream {
                binding: Binding::Grpc,
                content_type: "application/grpc".into(),
                comments: Vec::new(),
                source: Source::Grpc(resp.into_inner()),
                closed: false,
            })),
            Err(s) => Opened::Refused(binding::grpc_error(&s, self.error_table)),
        }
    }

    /// `SubscribeToTask` of `id`, which must open.
    pub async fn subscribe(&self, id: &str) -> EventStream {
        self.stream("SubscribeToTask", json!({"id": id}))
            .await
            .stream()
    }

    /// `SubscribeToTask` of `id` resuming after `after` (`Last-Event-ID`), as sent.
    pub async fn resume(&self, id: &str, after: &str) -> Opened {
        self.stream_with(
            "SubscribeToTask",
            json!({"id": id}),
            &[(LAST_EVENT_ID, after)],
        )
        .await
    }

    /// Every event of a resume after `after`, which must open.
    pub async fn resumed(&self, id: &str, after: u64) -> Vec<StreamEvent> {
        self.resume(id, &after.to_string())
            .await
            .stream()
            .rest()
            .await
    }

    /// `SendStreamingMessage` of one text message; `extra` is merged into the message.
    pub async fn send_stream(&self, message_id: &str, text: &str, extra: Value) -> Opened {
        let mut message =
            json!({"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]});
        if let (Some(m), Some(e)) = (message.as_object_mut(), extra.as_object()) {
            m.extend(e.clone());
        }
        self.stream("SendStreamingMessage", json!({"message": message}))
            .await
    }
}
