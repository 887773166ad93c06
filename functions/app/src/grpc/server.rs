//! A gRPC server for the binding: HTTP/2 in plaintext (h2c, development) or TLS (rustls, PEM
//! certificate chain and key), with the server reflection service so tools such as grpcurl
//! find the methods without the proto file. Configuration errors (a bad certificate or key)
//! surface when the server is built, before anything listens.

use std::future::Future;

use futures_util::StreamExt;
use tokio::net::TcpListener;
use tonic::transport::server::{Router, TcpIncoming};
use tonic::transport::{Identity, Server, ServerTlsConfig};

use super::coalesce::Coalescing;
use super::routes::{A2aServiceServer, A2aV03ServiceServer, EventsServiceServer};
use super::{A2aGrpc, FILE_DESCRIPTOR_SET};

/// A PEM certificate chain and its private key.
#[derive(Debug, Clone)]
pub struct TlsPem {
    pub cert: String,
    pub key: String,
}

#[derive(Debug, thiserror::Error)]
pub enum GrpcServeError {
    /// The certificate or key does not load (the message carries the cause's chain: tonic's
    /// own says only "transport error").
    #[error("gRPC TLS configuration: {0}")]
    Tls(String),
    #[error("gRPC reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("gRPC server: {0}")]
    Transport(String),
}

/// An error and its causes, `outer: inner: …`.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

/// The A2A service (and reflection), ready to serve on a listener.
pub struct GrpcServer {
    router: Router,
}

impl GrpcServer {
    pub fn new(binding: A2aGrpc, tls: Option<&TlsPem>) -> Result<Self, GrpcServeError> {
        let mut builder = Server::builder();
        if let Some(pem) = tls {
            let identity = Identity::from_pem(&pem.cert, &pem.key);
            builder = builder
                .tls_config(ServerTlsConfig::new().identity(identity))
                .map_err(|e| GrpcServeError::Tls(with_causes(&e)))?;
        }
        // Requests bounded at the HTTP body limit (`routes`).
        let a2a = A2aServiceServer::new(binding);
        let a2a_v03 = A2aV03ServiceServer(a2a.clone());
        let events = EventsServiceServer(a2a.clone());
        let reflection = tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
            .build_v1()?;
        let reflection_alpha = tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
            .build_v1alpha()?;
        let router = builder
            .add_service(a2a)
            .add_service(a2a_v03)
            .add_service(events)
            .add_service(reflection)
            .add_service(reflection_alpha);
        Ok(Self { router })
    }

    /// Serves on `listener` until `shutdown` resolves.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), GrpcServeError> {
        // Each reply in one write (`coalesce`): h2 flushes after a reply's DATA frame.
        let incoming = TcpIncoming::from(listener)
            .with_nodelay(Some(true))
            .map(|conn| conn.map(Coalescing::new));
        self.router
            .serve_with_incoming_shutdown(incoming, shutdown)
            .await
            .map_err(|e| GrpcServeError::Transport(with_causes(&e)))
    }
}

/// Builds and serves in one step (see `GrpcServer`).
pub async fn serve(
    binding: A2aGrpc,
    tls: Option<&TlsPem>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), GrpcServeError> {
    GrpcServer::new(binding, tls)?
        .serve(listener, shutdown)
        .await
}
