//! The process's log and trace output, one place for the local server and every Lambda: JSON
//! lines (Lambda, `--log-format json`) or human-readable lines (colour only at a terminal), and
//! — when an OTLP endpoint is configured — every `tracing` span exported to it as an
//! OpenTelemetry span (`otlp`).

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

use crate::otlp::{self, DroppedSpans, OtlpSettings, Tracing};

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// One JSON object a line; without timestamps where the log's host adds its own (Lambda).
    Json { timestamps: bool },
    /// Human-readable; colour codes only when `ansi`.
    Pretty { ansi: bool },
}

/// Installs the subscriber (once per process); with `otlp`, starts its exporter on the current
/// Tokio runtime and returns it (to flush at a Lambda invocation's end).
pub fn init(
    format: LogFormat,
    otlp: Option<&OtlpSettings>,
    dropped: DroppedSpans,
) -> Result<Option<Tracing>, String> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let tracing = match otlp {
        Some(settings) => Some(otlp::start(settings, reqwest::Client::new(), dropped)?),
        None => None,
    };
    let spans = tracing.as_ref().map(|t| {
        use opentelemetry::trace::TracerProvider;
        tracing_opentelemetry::layer().with_tracer(t.provider.tracer("taskledger"))
    });
    let registry = tracing_subscriber::registry().with(filter).with(spans);
    let done = match format {
        LogFormat::Json { timestamps: true } => registry
            .with(tracing_subscriber::fmt::layer().json().with_ansi(false))
            .try_init(),
        LogFormat::Json { timestamps: false } => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .without_time()
                    .with_ansi(false),
            )
            .try_init(),
        LogFormat::Pretty { ansi } => registry
            .with(tracing_subscriber::fmt::layer().with_ansi(ansi))
            .try_init(),
    };
    done.map_err(|e| format!("cannot install the log subscriber: {e}"))?;
    Ok(tracing)
}
