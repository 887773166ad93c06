//! The gRPC side of the harness: a tonic client from the generated stubs, talking to the local
//! server's gRPC port over a real socket, sending `a2a-version: 1.0` (and a bearer token when
//! set) the way any client would.

use std::net::SocketAddr;

use taskledger_app::grpc::proto::{self, a2a_service_client::A2aServiceClient};
use taskledger_local::{Config, GrpcSettings};
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use tonic_types::StatusExt;

pub use taskledger_app::grpc::proto as pb;

/// A started server with both bindings.
pub struct GrpcServer {
    /// The HTTP side (card, JSON-RPC), for comparisons.
    pub http: crate::Server,
    pub grpc: SocketAddr,
    pub client: A2aServiceClient<Channel>,
    token: Option<String>,
}

impl GrpcServer {
    /// The in-memory store with quick scenario timings, gRPC on a free loopback port.
    pub async fn start() -> Self {
        let mut config = Config::in_memory().with_conformance_scenarios();
        config.timings = crate::fast_timings();
        Self::start_with(config).await
    }

    pub async fn start_with(mut config: Config) -> Self {
        if config.grpc.is_none() {
            config.grpc = Some(GrpcSettings::loopback());
        }
        let table = config.error_table;
        let running = taskledger_local::start(config)
            .await
            .expect("server starts");
        let grpc = running.grpc.expect("gRPC is served");
        Self {
            http: crate::Server::running(&running, table).over(crate::Binding::JsonRpc),
            grpc,
            client: connect_lazy(grpc),
            token: None,
        }
    }

    /// The same server, calling with a bearer token.
    pub fn as_user(&self, token: &str) -> Self {
        Self {
            http: self.http.as_user(token),
            grpc: self.grpc,
            client: self.client.clone(),
            token: Some(token.to_string()),
        }
    }

    /// A request with `a2a-version: 1.0` and the token, if any.
    pub fn req<T>(&self, message: T) -> Request<T> {
        let mut r = Request::new(message);
        r.metadata_mut()
            .insert("a2a-version", MetadataValue::from_static("1.0"));
        if let Some(t) = &self.token {
            let v = format!("Bearer {t}").parse().expect("ascii token");
            r.metadata_mut().insert("authorization", v);
        }
        r
    }

    /// Sends a text message (blocking unless `return_immediately`); returns the task.
    pub async fn send_task(&self, message_id: &str, text: &str) -> pb::Task {
        let r = self
            .client
            .clone()
            .send_message(self.req(send_request(message_id, text, false)))
            .await
            .unwrap_or_else(|s| panic!("send failed: {s:?}"))
            .into_inner();
        match r.payload {
            Some(proto::send_message_response::Payload::Task(t)) => t,
            other => panic!("expected a task, got {other:?}"),
        }
    }

    pub async fn get_task(&self, id: &str, history_length: Option<i32>) -> pb::Task {
        self.client
            .clone()
            .get_task(self.req(pb::GetTaskRequest {
                id: id.into(),
                history_length,
                ..Default::default()
            }))
            .await
            .unwrap_or_else(|s| panic!("GetTask {id}: {s:?}"))
            .into_inner()
    }
}

/// A plaintext (h2c) client of `addr` that connects on its first call.
pub fn connect_lazy(addr: SocketAddr) -> A2aServiceClient<Channel> {
    let channel = Channel::from_shared(format!("http://{addr}"))
        .expect("uri")
        .connect_lazy();
    A2aServiceClient::new(channel)
}

/// A plaintext (h2c) channel to `addr`.
pub async fn connect(addr: SocketAddr) -> A2aServiceClient<Channel> {
    let channel = Channel::from_shared(format!("http://{addr}"))
        .expect("uri")
        .connect()
        .await
        .expect("gRPC connects");
    A2aServiceClient::new(channel)
}

/// A user message with one text part.
pub fn user_message(message_id: &str, text: &str) -> pb::Message {
    pb::Message {
        message_id: message_id.into(),
        role: pb::Role::User as i32,
        parts: vec![pb::Part {
            content: Some(proto::part::Content::Text(text.into())),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// A SendMessage request for one text message.
pub fn send_request(
    message_id: &str,
    text: &str,
    return_immediately: bool,
) -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        message: Some(user_message(message_id, text)),
        configuration: Some(pb::SendMessageConfiguration {
            return_immediately,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The status's code and its ErrorInfo reason, checking the A2A domain on the way.
pub fn code_and_reason(s: &Status) -> (Code, String) {
    let info = s
        .get_details_error_info()
        .unwrap_or_else(|| panic!("no ErrorInfo in {s:?}"));
    assert_eq!(info.domain, "a2a-protocol.org", "{s:?}");
    (s.code(), info.reason)
}

/// The state of a task as its enum.
pub fn state(t: &pb::Task) -> pb::TaskState {
    pb::TaskState::try_from(t.status.as_ref().expect("status").state).expect("known state")
}

/// A codec that leaves messages as their bytes: a call whose reply is read with a descriptor
/// other than the binding's (the A2A drafts' own message text, `draft_message`).
#[derive(Debug, Default, Clone, Copy)]
pub struct RawCodec;

#[derive(Debug, Default, Clone, Copy)]
pub struct RawBytes;

impl tonic::codec::Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawBytes;
    type Decoder = RawBytes;

    fn encoder(&mut self) -> RawBytes {
        RawBytes
    }

    fn decoder(&mut self) -> RawBytes {
        RawBytes
    }
}

impl tonic::codec::Encoder for RawBytes {
    type Item = Vec<u8>;
    type Error = Status;

    fn encode(
        &mut self,
        item: Vec<u8>,
        dst: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), Status> {
        use prost::bytes::BufMut;
        dst.put_slice(&item);
        Ok(())
    }
}

impl tonic::codec::Decoder for RawBytes {
    type Item = Vec<u8>;
    type Error = Status;

    fn decode(&mut self, src: &mut tonic::codec::DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        use prost::bytes::Buf;
        let n = src.remaining();
        Ok(Some(src.copy_to_bytes(n).to_vec()))
    }
}

/// One unary call of `lf.a2a.v1.A2AService/<rpc>` with `request` as its bytes and `version`
/// as `a2a-version`; the reply's bytes.
pub async fn raw_unary(
    addr: SocketAddr,
    rpc: &str,
    request: Vec<u8>,
    version: &'static str,
) -> Result<Vec<u8>, Status> {
    let channel = Channel::from_shared(format!("http://{addr}"))
        .expect("uri")
        .connect()
        .await
        .expect("gRPC connects");
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.expect("ready");
    let path =
        tonic::codegen::http::uri::PathAndQuery::try_from(format!("/lf.a2a.v1.A2AService/{rpc}"))
            .expect("path");
    let mut r = Request::new(request);
    r.metadata_mut()
        .insert("a2a-version", MetadataValue::from_static(version));
    grpc.unary(r, path, RawCodec)
        .await
        .map(tonic::Response::into_inner)
}

/// Message `name` of a proto file in `tests/fixtures` (an A2A draft's own text), compiled with
/// protox: what a client built from that draft reads.
pub fn draft_message(fixture: &str, name: &str) -> prost_reflect::MessageDescriptor {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let files = protox::compile([fixture], [dir]).unwrap_or_else(|e| panic!("{fixture}: {e}"));
    let pool = prost_reflect::DescriptorPool::from_file_descriptor_set(files)
        .unwrap_or_else(|e| panic!("{fixture}: {e}"));
    pool.get_message_by_name(name)
        .unwrap_or_else(|| panic!("{fixture} has no message {name}"))
}
