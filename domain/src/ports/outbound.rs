//! Calls to another party on a task's behalf — an upstream A2A agent (ADR 034): the adapter
//! moves bytes over HTTP under the SSRF address policy (`push::AddressPolicy`, checked on every
//! address a name resolves to), within a time and a size bound, adding the deployment's
//! credentials for that party itself (the application never holds them, so they cannot be
//! logged or echoed) and never a caller's. What the bytes mean is the application's.

use async_trait::async_trait;

use crate::trace::TraceContext;

/// One request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutboundRequest {
    pub url: String,
    /// The JSON body of a POST (none: a GET).
    pub body: Option<Vec<u8>>,
    /// Headers of the protocol (`A2A-Version`); never credentials.
    pub headers: Vec<(String, String)>,
    /// A GET revalidating what it read before (`If-None-Match`).
    pub etag: Option<String>,
    /// The call's own trace (`traceparent`): a root linked to the work, never the caller's.
    pub trace: Option<TraceContext>,
}

/// A whole answer.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboundReply {
    pub status: u16,
    pub etag: Option<String>,
    pub body: Vec<u8>,
}

/// Why a call came to nothing. Says what failed, never a URL or the other party's body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutboundError {
    #[error("the address is refused by the SSRF rules: {0}")]
    Refused(String),
    #[error("the agent could not be reached: {0}")]
    Unreachable(String),
    #[error("the agent did not answer in time")]
    Timeout,
    #[error("the agent's answer is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the agent answered HTTP {0}")]
    Status(u16),
}

impl OutboundError {
    /// Whether trying again later may help (the other party is down or slow), as opposed to a
    /// refusal or an answer that will stay wrong.
    pub fn transient(&self) -> bool {
        match self {
            Self::Unreachable(_) | Self::Timeout => true,
            Self::Status(s) => *s >= 500 || *s == 429 || *s == 408,
            Self::Refused(_) | Self::TooLarge(_) => false,
        }
    }
}

/// The events of a streamed answer: each Server-Sent Event's data, or a whole JSON answer once
/// when the party answered without a stream.
#[async_trait]
pub trait OutboundEvents: Send {
    /// The next event; `None` once the stream ended.
    async fn next(&mut self) -> Option<Result<String, OutboundError>>;
}

/// HTTP to another party.
#[async_trait]
pub trait Outbound: Send + Sync {
    /// A GET or a POST, its whole answer (bounded).
    async fn call(&self, request: OutboundRequest) -> Result<OutboundReply, OutboundError>;
    /// A POST answered with a stream (`Accept: text/event-stream`).
    async fn stream(
        &self,
        request: OutboundRequest,
    ) -> Result<Box<dyn OutboundEvents>, OutboundError>;
}
