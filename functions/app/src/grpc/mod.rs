//! The gRPC binding (`lf.a2a.v1.A2AService`, A2A §10), next to the JSON-RPC one in `http`:
//! the stubs generated from `proto/lf/a2a/v1/a2a.proto` (`proto`), the ProtoJSON transcoding
//! onto the domain's wire types (`convert`, replies encoded by descriptor in `encode`), the error table's gRPC column with ErrorInfo
//! details (`errors`), the service that calls the same `Service` methods as JSON-RPC
//! (`service`), and a server with optional TLS (`server`). Built with the `grpc` feature only.

pub mod convert;
mod encode;
pub mod errors;
pub mod server;
pub mod service;

/// The generated messages, server and client of `proto/lf/a2a/v1/a2a.proto`.
#[allow(clippy::all, missing_docs)]
pub mod proto {
    tonic::include_proto!("lf.a2a.v1");
}

pub use convert::FILE_DESCRIPTOR_SET;
pub use server::{serve, GrpcServeError, GrpcServer, TlsPem};
pub use service::A2aGrpc;
