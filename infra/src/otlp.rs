//! Spans to an OpenTelemetry collector over OTLP/HTTP (ADR 033), when one is configured
//! (`--otlp-endpoint`, or the standard `OTEL_EXPORTER_OTLP_ENDPOINT` /
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` and `OTEL_EXPORTER_OTLP_PROTOCOL`): the exporter of
//! `opentelemetry-otlp` over the process's own HTTP client (reqwest with rustls), behind a
//! processor of our own whose queue is bounded — a span that finds it full is dropped and
//! counted, never waited for — and whose exports are bounded in time: a collector that is down
//! or slow costs a request nothing.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use opentelemetry::Context;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, Span, SpanData, SpanExporter, SpanProcessor};
use opentelemetry_sdk::Resource;
use tokio::sync::{mpsc, oneshot};

/// Spans waiting for export at most; one more is dropped (and counted).
pub const MAX_QUEUED_SPANS: usize = 4096;
/// Spans sent in one export at most.
pub const MAX_EXPORT_BATCH: usize = 512;
/// How long a span waits for companions before its batch is sent.
pub const EXPORT_DELAY: Duration = Duration::from_millis(500);
/// How long one export may take before it is given up (its spans counted as dropped).
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where spans go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpSettings {
    /// The traces URL (`…/v1/traces`).
    pub traces_url: String,
    /// `http/protobuf` (the default) or `http/json`.
    pub json: bool,
    pub service_name: String,
}

impl OtlpSettings {
    /// From a base endpoint (`http://collector:4318`; `/v1/traces` is added) or, with
    /// `traces_url`, the traces URL itself; the protocol by its OTLP name.
    pub fn new(
        endpoint: Option<&str>,
        traces_url: Option<&str>,
        protocol: Option<&str>,
        service_name: &str,
    ) -> Result<Option<Self>, String> {
        let url = match (
            traces_url.filter(|u| !u.is_empty()),
            endpoint.filter(|e| !e.is_empty()),
        ) {
            (Some(u), _) => u.to_string(),
            (None, Some(e)) => format!("{}/v1/traces", e.trim_end_matches('/')),
            (None, None) => return Ok(None),
        };
        let parsed = url::Url::parse(&url).map_err(|e| format!("OTLP endpoint {url:?}: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!("OTLP endpoint {url:?}: only http and https"));
        }
        let json = match protocol.map(str::trim).filter(|p| !p.is_empty()) {
            None | Some("http/protobuf") => false,
            Some("http/json") => true,
            Some(other) => {
                return Err(format!(
                    "OTLP protocol {other:?}: http/protobuf or http/json (gRPC is not offered)"
                ))
            }
        };
        Ok(Some(Self {
            traces_url: url,
            json,
            service_name: service_name.to_string(),
        }))
    }
}

/// The exporter's HTTP client: the process's reqwest (rustls), bounded in time.
#[derive(Debug, Clone)]
struct Client(reqwest::Client);

#[async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let mut req = self.0.request(parts.method, parts.uri.to_string());
        for (k, v) in &parts.headers {
            req = req.header(k, v);
        }
        let resp = req.body(body).timeout(EXPORT_TIMEOUT).send().await?;
        let mut out = Response::builder().status(resp.status().as_u16());
        for (k, v) in resp.headers() {
            out = out.header(k.as_str(), v.as_bytes());
        }
        let bytes = resp.bytes().await?;
        Ok(out.body(bytes)?)
    }
}

enum Item {
    Span(Box<SpanData>),
    /// Export what is queued now, then answer.
    Flush(oneshot::Sender<()>),
}

/// Counts spans that never left (a metric of the application's).
#[derive(Clone)]
pub struct DroppedSpans(pub Arc<dyn Fn(u64) + Send + Sync>);

impl std::fmt::Debug for DroppedSpans {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DroppedSpans")
    }
}

/// The bounded processor: `on_end` never waits.
#[derive(Debug)]
struct Bounded {
    queue: mpsc::Sender<Item>,
    dropped: DroppedSpans,
}

impl SpanProcessor for Bounded {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        if self.queue.try_send(Item::Span(Box::new(span))).is_err() {
            (self.dropped.0)(1);
        }
    }

    /// Exports are flushed by `Tracing::flush` (async): here nothing blocks.
    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}

/// The installed exporter: its provider (for the tracing layer) and a handle to flush it.
#[derive(Clone)]
pub struct Tracing {
    pub provider: SdkTracerProvider,
    queue: mpsc::Sender<Item>,
}

impl Tracing {
    /// Sends what is queued now and waits for it (a Lambda invocation's end), at most
    /// `EXPORT_TIMEOUT`.
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.queue.send(Item::Flush(tx)).await.is_ok() {
            let _ = tokio::time::timeout(EXPORT_TIMEOUT, rx).await;
        }
    }
}

/// Starts the exporter on the current runtime; `dropped` counts spans that never left.
pub fn start(
    settings: &OtlpSettings,
    http: reqwest::Client,
    dropped: DroppedSpans,
) -> Result<Tracing, String> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(Client(http))
        .with_endpoint(settings.traces_url.clone())
        .with_protocol(if settings.json {
            Protocol::HttpJson
        } else {
            Protocol::HttpBinary
        })
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|e| format!("OTLP exporter: {e}"))?;
    let (tx, rx) = mpsc::channel(MAX_QUEUED_SPANS);
    let resource = Resource::builder()
        .with_service_name(settings.service_name.clone())
        .build();
    let mut exporter = exporter;
    exporter.set_resource(&resource);
    tokio::spawn(export_loop(rx, exporter, dropped.clone()));
    let provider = SdkTracerProvider::builder()
        .with_resource(resource)
        .with_span_processor(Bounded {
            queue: tx.clone(),
            dropped,
        })
        .build();
    Ok(Tracing {
        provider,
        queue: tx,
    })
}

async fn export_loop(
    mut rx: mpsc::Receiver<Item>,
    exporter: impl SpanExporter,
    dropped: DroppedSpans,
) {
    let mut batch: Vec<SpanData> = Vec::new();
    loop {
        // A batch waits `EXPORT_DELAY` for more, or until it is full or a flush asks.
        let next = if batch.is_empty() {
            match rx.recv().await {
                Some(item) => Some(item),
                None => return,
            }
        } else {
            tokio::time::timeout(EXPORT_DELAY, rx.recv())
                .await
                .unwrap_or(None)
        };
        let mut flushed = None;
        match next {
            Some(Item::Span(s)) => {
                batch.push(*s);
                if batch.len() < MAX_EXPORT_BATCH {
                    continue;
                }
            }
            Some(Item::Flush(done)) => flushed = Some(done),
            None => {}
        }
        if !batch.is_empty() {
            let spans = std::mem::take(&mut batch);
            let n = spans.len() as u64;
            match tokio::time::timeout(EXPORT_TIMEOUT, exporter.export(spans)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    (dropped.0)(n);
                    tracing::debug!(error = %e, spans = n, "span export failed");
                }
                Err(_) => {
                    (dropped.0)(n);
                    tracing::debug!(spans = n, "span export timed out");
                }
            }
        }
        if let Some(done) = flushed {
            let _ = done.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_come_from_an_endpoint_or_a_traces_url_and_refuse_the_rest() {
        let s = OtlpSettings::new(Some("http://127.0.0.1:4318/"), None, None, "t")
            .unwrap()
            .unwrap();
        assert_eq!(s.traces_url, "http://127.0.0.1:4318/v1/traces");
        assert!(!s.json);
        let s = OtlpSettings::new(
            Some("http://x:4318"),
            Some("http://y/t"),
            Some("http/json"),
            "t",
        )
        .unwrap()
        .unwrap();
        assert_eq!((s.traces_url.as_str(), s.json), ("http://y/t", true));
        assert_eq!(OtlpSettings::new(None, None, None, "t"), Ok(None));
        assert_eq!(OtlpSettings::new(Some(""), Some(""), None, "t"), Ok(None));
        assert!(OtlpSettings::new(Some("file:///tmp/x"), None, None, "t").is_err());
        assert!(OtlpSettings::new(Some("not a url"), None, None, "t").is_err());
        assert!(OtlpSettings::new(Some("http://x"), None, Some("grpc"), "t").is_err());
    }
}
