//! The gRPC binding (`lf.a2a.v1.A2AService`, A2A §10), next to the JSON-RPC one in `http`:
//! the messages and client generated from `proto/lf/a2a/v1/a2a.proto` (`proto`), the ProtoJSON
//! transcoding onto the domain's wire types (`convert`, replies encoded by descriptor in
//! `encode` after the plans of `plan`), the error table's gRPC column with ErrorInfo details
//! (`errors`), the RPCs routed by path with messages as bytes (`routes`), the service that
//! calls the same `Service` methods as JSON-RPC (`service`), and a server with optional TLS
//! (`server`) whose sockets send a reply in one write (`coalesce`). A2A 0.3's
//! `a2a.v1.A2AService` is served beside it on the same port, its RPCs routed to the same
//! operations through the line's translation (`call::Line`). Built with the `grpc` feature only.

mod coalesce;
pub mod convert;
mod encode;
pub mod errors;
mod plan;
pub mod routes;
mod serialize;
pub mod server;
pub mod service;

/// The generated messages and client of `proto/lf/a2a/v1/a2a.proto` (the server is `routes`).
#[allow(clippy::all, missing_docs)]
pub mod proto {
    tonic::include_proto!("lf.a2a.v1");
}

/// The generated messages and client of A2A 0.3's `proto/a2a/v1/a2a.proto` (served by
/// `routes` beside `proto`'s service; the client is for tests and tools).
#[allow(clippy::all, missing_docs)]
pub mod proto03 {
    tonic::include_proto!("a2a.v1");
}

/// The generated messages and client of taskledger's events extension
/// (`proto/taskledger/events/v1/events.proto`, served by `routes` beside the A2A services).
#[allow(clippy::all, missing_docs)]
pub mod events_proto {
    tonic::include_proto!("taskledger.events.v1");
}

pub use convert::FILE_DESCRIPTOR_SET;
pub use server::{serve, GrpcServeError, GrpcServer, TlsPem};
pub use service::A2aGrpc;
