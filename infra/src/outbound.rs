//! HTTP to an upstream A2A agent (ADR 034), behind `ports::Outbound`: every address checked by
//! the SSRF policy (the webhook sender's guarded client: in the resolver, and literal addresses
//! before sending), no redirects, no proxy, a bound on time and on bytes, and the deployment's
//! credential for that agent added here — held as a sensitive header value that prints as
//! `Sensitive` and is never logged, stored or echoed. Errors name what failed, never the URL.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use taskledger_domain::ports::{
    Outbound, OutboundError, OutboundEvents, OutboundReply, OutboundRequest,
};
use taskledger_domain::push::AddressPolicy;

use crate::webhook::{guarded_client, literal_permitted};

/// How long a whole call (not a stream) may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a stream may stay silent before it is given up (the follower's own window is
/// shorter; this only bounds a connection nobody reads any more).
pub const STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// The largest whole answer read.
pub const MAX_REPLY_BYTES: usize = 8 * 1024 * 1024;
/// The largest single event of a stream read.
pub const MAX_EVENT_BYTES: usize = 2 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum OutboundSetupError {
    #[error("cannot build the upstream HTTP client: {0}")]
    Client(String),
    #[error("the upstream credential is not a valid header: {0}")]
    Credential(String),
}

/// The deployment's credential for the upstream: one header, its value sensitive.
#[derive(Clone)]
pub struct Credential {
    name: HeaderName,
    value: HeaderValue,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credential {{ {}: <redacted> }}", self.name)
    }
}

impl Credential {
    /// `Authorization: Bearer <token>` by default, or `<header>: <token>` (an API key header).
    pub fn new(header: Option<&str>, token: &str) -> Result<Self, OutboundSetupError> {
        let token = token.trim();
        let (name, value) = match header.map(str::trim).filter(|h| !h.is_empty()) {
            None => (
                reqwest::header::AUTHORIZATION,
                HeaderValue::from_str(&format!("Bearer {token}")),
            ),
            Some(h) => (
                HeaderName::from_bytes(h.as_bytes())
                    .map_err(|e| OutboundSetupError::Credential(e.to_string()))?,
                HeaderValue::from_str(token),
            ),
        };
        let mut value = value.map_err(|_| {
            OutboundSetupError::Credential("the token has characters a header cannot carry".into())
        })?;
        value.set_sensitive(true);
        Ok(Self { name, value })
    }
}

/// The upstream's HTTP client. Cheap to clone.
#[derive(Clone, Debug)]
pub struct OutboundHttp {
    client: reqwest::Client,
    policy: Arc<AddressPolicy>,
    credential: Option<Credential>,
}

impl OutboundHttp {
    pub fn new(
        policy: AddressPolicy,
        credential: Option<Credential>,
    ) -> Result<Self, OutboundSetupError> {
        let policy = Arc::new(policy);
        let client = guarded_client(policy.clone())
            .read_timeout(STREAM_IDLE_TIMEOUT)
            .build()
            .map_err(|e| OutboundSetupError::Client(e.to_string()))?;
        Ok(Self {
            client,
            policy,
            credential,
        })
    }

    fn request(&self, r: &OutboundRequest) -> Result<reqwest::RequestBuilder, OutboundError> {
        let url = reqwest::Url::parse(&r.url)
            .map_err(|e| OutboundError::Refused(format!("the URL does not parse: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(OutboundError::Refused(format!(
                "scheme {} is not http or https",
                url.scheme()
            )));
        }
        literal_permitted(&self.policy, &url).map_err(OutboundError::Refused)?;
        let mut req = match &r.body {
            Some(body) => self
                .client
                .post(url)
                .header(CONTENT_TYPE, "application/json")
                .body(body.clone()),
            None => self.client.get(url),
        };
        for (k, v) in &r.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        if let Some(tag) = &r.etag {
            req = req.header(IF_NONE_MATCH, tag.as_str());
        }
        if let Some(t) = &r.trace {
            req = req.header("traceparent", t.traceparent());
        }
        if let Some(c) = &self.credential {
            req = req.header(c.name.clone(), c.value.clone());
        }
        Ok(req)
    }
}

/// A reqwest error as the port says it: refused by the guard, timed out, or unreachable —
/// without the URL reqwest would name.
fn failed(e: reqwest::Error) -> OutboundError {
    let timeout = e.is_timeout();
    let e = e.without_url();
    let mut chain = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        chain.push_str(": ");
        chain.push_str(&s.to_string());
        source = s.source();
    }
    if let Some(why) = chain.split("refused: ").nth(1) {
        return OutboundError::Refused(why.to_string());
    }
    if timeout {
        return OutboundError::Timeout;
    }
    OutboundError::Unreachable(chain)
}

async fn body_within(mut resp: reqwest::Response, max: usize) -> Result<Vec<u8>, OutboundError> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(failed)? {
        if body.len() + chunk.len() > max {
            return Err(OutboundError::TooLarge(max));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[async_trait]
impl Outbound for OutboundHttp {
    async fn call(&self, request: OutboundRequest) -> Result<OutboundReply, OutboundError> {
        let req = self
            .request(&request)?
            .header(ACCEPT, "application/json")
            .timeout(CALL_TIMEOUT);
        let resp = req.send().await.map_err(failed)?;
        let status = resp.status().as_u16();
        let etag = resp
            .headers()
            .get(ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = tokio::time::timeout(CALL_TIMEOUT, body_within(resp, MAX_REPLY_BYTES))
            .await
            .map_err(|_| OutboundError::Timeout)??;
        Ok(OutboundReply { status, etag, body })
    }

    async fn stream(
        &self,
        request: OutboundRequest,
    ) -> Result<Box<dyn OutboundEvents>, OutboundError> {
        let req = self
            .request(&request)?
            .header(ACCEPT, "text/event-stream, application/json");
        let resp = tokio::time::timeout(CALL_TIMEOUT, req.send())
            .await
            .map_err(|_| OutboundError::Timeout)?
            .map_err(failed)?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(OutboundError::Status(status));
        }
        let sse = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        Ok(Box::new(Events {
            resp: Some(resp),
            sse,
            buf: Vec::new(),
        }))
    }
}

/// Server-Sent Events read from a response, one `data` payload at a time.
struct Events {
    resp: Option<reqwest::Response>,
    sse: bool,
    buf: Vec<u8>,
}

impl Events {
    /// The data of the first whole event in the buffer, taken out of it.
    fn take_event(&mut self) -> Option<String> {
        loop {
            let end = self
                .buf
                .windows(2)
                .position(|w| w == b"\n\n")
                .map(|i| (i, 2))
                .or_else(|| {
                    self.buf
                        .windows(4)
                        .position(|w| w == b"\r\n\r\n")
                        .map(|i| (i, 4))
                })?;
            let block: Vec<u8> = self.buf.drain(..end.0 + end.1).collect();
            let text = String::from_utf8_lossy(&block[..end.0]);
            let data: Vec<&str> = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            if !data.is_empty() {
                return Some(data.join("\n"));
            }
        }
    }
}

#[async_trait]
impl OutboundEvents for Events {
    async fn next(&mut self) -> Option<Result<String, OutboundError>> {
        if !self.sse {
            let resp = self.resp.take()?;
            return Some(
                body_within(resp, MAX_REPLY_BYTES)
                    .await
                    .map(|b| String::from_utf8_lossy(&b).into_owned()),
            );
        }
        loop {
            if let Some(event) = self.take_event() {
                return Some(Ok(event));
            }
            let resp = self.resp.as_mut()?;
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    if self.buf.len() + chunk.len() > MAX_EVENT_BYTES {
                        self.resp = None;
                        return Some(Err(OutboundError::TooLarge(MAX_EVENT_BYTES)));
                    }
                    self.buf.extend_from_slice(&chunk);
                }
                Ok(None) => {
                    self.resp = None;
                    // A last event without its blank line still counts.
                    self.buf.extend_from_slice(b"\n\n");
                    return self.take_event().map(Ok);
                }
                Err(e) => {
                    self.resp = None;
                    return Some(Err(failed(e)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credential_prints_redacted() {
        let c = Credential::new(None, "s3cret").unwrap();
        assert!(!format!("{c:?}").contains("s3cret"));
        let c = Credential::new(Some("X-API-Key"), "k3y").unwrap();
        assert!(!format!("{c:?}").contains("k3y"));
        assert!(Credential::new(None, "bad\nvalue").is_err());
    }

    #[test]
    fn events_split_on_blank_lines_and_join_data_lines() {
        let mut e = Events {
            resp: None,
            sse: true,
            buf: b"data: {\"a\":1}\n\n: comment\n\ndata: x\ndata: y\r\n\r\n".to_vec(),
        };
        assert_eq!(e.take_event().unwrap(), "{\"a\":1}");
        assert_eq!(e.take_event().unwrap(), "x\ny");
        assert!(e.take_event().is_none());
    }
}
