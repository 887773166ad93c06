//! `lf.a2a.v1.A2AService` as tonic serves it: the request path names the RPC (its input and
//! output types and whether it streams, read from the descriptor pool), and the messages cross
//! tonic as bytes (`RawCodec`). A request is read once, from its bytes into ProtoJSON, and a
//! reply written once, from ProtoJSON into its bytes: no generated message is built on the way
//! (the generated server decoded each request into its prost type and re-encoded each reply
//! from one, two extra passes over every message). Framing, the size limits and the status
//! responses are tonic's own `Grpc` handler, as in generated code.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context as TaskContext, Poll};

use prost::bytes::{Buf, BufMut, Bytes};
use prost_reflect::MessageDescriptor;
use tonic::body::Body;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http;
use tonic::server::{Grpc, NamedService};
use tonic::{Request, Status};

use super::convert::pool;
use super::A2aGrpc;
use crate::call::Entry;
use crate::http::MAX_BODY_BYTES;
use crate::operations::Method;

/// taskledger's events extension, served beside them on the same port.
pub use crate::call::GRPC_EVENTS_SERVICE as EVENTS_SERVICE_NAME;
/// The service's full name (the path prefix of its RPCs).
pub use crate::call::GRPC_SERVICE as SERVICE_NAME;
/// A2A 0.3's service, served beside it on the same port (ADR 031).
pub use crate::call::GRPC_SERVICE_03 as V03_SERVICE_NAME;

/// One RPC of the service.
#[derive(Debug)]
pub struct Rpc {
    pub method: Method,
    /// The entry it is (its line, and for 0.3 the method as 0.3 names it).
    pub entry: Entry,
    pub path: String,
    pub input: MessageDescriptor,
    /// The output type's full name (`google.protobuf.Empty` for a delete).
    pub output: String,
    pub streaming: bool,
}

/// The RPCs of the three services, from the descriptor pool.
pub fn rpcs() -> &'static [Rpc] {
    static RPCS: OnceLock<Vec<Rpc>> = OnceLock::new();
    RPCS.get_or_init(|| {
        let mut all = Vec::new();
        for name in [SERVICE_NAME, V03_SERVICE_NAME, EVENTS_SERVICE_NAME] {
            let service = pool()
                .get_service_by_name(name)
                .expect("the descriptor set holds the three services");
            all.extend(service.methods().map(|m| {
                let entry = Entry::grpc(name, m.name()).expect("every RPC is an operation");
                Rpc {
                    method: entry.method(),
                    entry,
                    path: format!("/{name}/{}", m.name()),
                    input: m.input(),
                    output: m.output().full_name().to_string(),
                    streaming: m.is_server_streaming(),
                }
            }));
        }
        all
    })
}

/// Messages as the bytes on the wire: a request's are handed over as received, a reply's
/// were encoded already.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawCodec;

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Bytes;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

/// The binding as a tonic service (`Server::add_service`).
#[derive(Clone)]
pub struct A2aServiceServer {
    binding: Arc<A2aGrpc>,
}

impl A2aServiceServer {
    pub fn new(binding: A2aGrpc) -> Self {
        Self {
            binding: Arc::new(binding),
        }
    }
}

impl NamedService for A2aServiceServer {
    const NAME: &'static str = SERVICE_NAME;
}

/// The binding under another service name on the same port: every path is routed by
/// `rpcs()`, whichever service it names.
macro_rules! served_as {
    ($(#[$doc:meta])* $name:ident, $service:expr) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $name(pub A2aServiceServer);

        impl NamedService for $name {
            const NAME: &'static str = $service;
        }

        impl tower::Service<http::Request<Body>> for $name {
            type Response = http::Response<Body>;
            type Error = Infallible;
            type Future = BoxFuture<Self::Response>;

            fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
                self.0.poll_ready(cx)
            }

            fn call(&mut self, req: http::Request<Body>) -> Self::Future {
                self.0.call(req)
            }
        }
    };
}

served_as!(
    /// The same binding under A2A 0.3's service name (`a2a.v1.A2AService`).
    A2aV03ServiceServer,
    V03_SERVICE_NAME
);
served_as!(
    /// The same binding under the events extension's service name.
    EventsServiceServer,
    EVENTS_SERVICE_NAME
);

type BoxFuture<T> = Pin<Box<dyn Future<Output = Result<T, Infallible>> + Send + 'static>>;

/// What tonic's generated servers answer for a path they do not serve.
fn unimplemented() -> http::Response<Body> {
    let mut response = http::Response::new(Body::default());
    let headers = response.headers_mut();
    headers.insert(
        Status::GRPC_STATUS,
        (tonic::Code::Unimplemented as i32).into(),
    );
    headers.insert(
        http::header::CONTENT_TYPE,
        tonic::metadata::GRPC_CONTENT_TYPE,
    );
    response
}

impl tower::Service<http::Request<Body>> for A2aServiceServer {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response>;

    fn poll_ready(&mut self, _cx: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let Some(rpc) = rpcs().iter().find(|r| r.path == req.uri().path()) else {
            return Box::pin(async { Ok(unimplemented()) });
        };
        let binding = self.binding.clone();
        Box::pin(async move {
            let mut grpc =
                Grpc::new(RawCodec).apply_max_message_size_config(Some(MAX_BODY_BYTES), None);
            let response = if rpc.streaming {
                let call = tower::service_fn(move |r: Request<Bytes>| {
                    let binding = binding.clone();
                    async move { binding.stream(rpc, r).await }
                });
                grpc.server_streaming(call, req).await
            } else {
                let call = tower::service_fn(move |r: Request<Bytes>| {
                    let binding = binding.clone();
                    async move { binding.unary(rpc, r).await }
                });
                grpc.unary(call, req).await
            };
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rpc_is_routed_with_its_types() {
        let rpcs = rpcs();
        assert_eq!(
            rpcs.len(),
            11 + 10 + 1,
            "1.0's, 0.3's and the events extension's"
        );
        let events = rpcs
            .iter()
            .find(|r| r.path == "/taskledger.events.v1.TaskEvents/ListTaskEvents")
            .unwrap();
        assert_eq!(events.method, Method::ListTaskEvents);
        assert_eq!(events.output, "taskledger.events.v1.ListTaskEventsResponse");
        let sub = rpcs
            .iter()
            .find(|r| r.path == "/a2a.v1.A2AService/TaskSubscription")
            .unwrap();
        assert_eq!(sub.method, Method::SubscribeToTask);
        assert!(sub.entry.is_v03());
        assert!(sub.streaming);
        assert_eq!(sub.output, "a2a.v1.StreamResponse");
        let get = rpcs.iter().find(|r| r.method == Method::GetTask).unwrap();
        assert_eq!(get.path, "/lf.a2a.v1.A2AService/GetTask");
        assert_eq!(get.input.full_name(), "lf.a2a.v1.GetTaskRequest");
        assert_eq!(get.output, "lf.a2a.v1.Task");
        assert!(!get.streaming);
        let subscribe = rpcs
            .iter()
            .find(|r| r.method == Method::SubscribeToTask)
            .unwrap();
        assert!(subscribe.streaming);
        let delete = rpcs
            .iter()
            .find(|r| r.method == Method::DeleteTaskPushNotificationConfig)
            .unwrap();
        assert_eq!(delete.output, "google.protobuf.Empty");
    }
}
