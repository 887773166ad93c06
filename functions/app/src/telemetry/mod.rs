//! Seeing inside (ADR 033): the process's metrics — recorded where things happen (the request
//! layer, the commit path, agent turns, the push attempt loop, streams) — read out as
//! Prometheus text by the local server's `/metrics` and as embedded-metric-format log lines by
//! the Lambda functions after each invocation.

pub mod emf;
pub mod histogram;
mod metrics;
pub mod prometheus;
pub mod trace;

use std::sync::{Arc, LazyLock, Mutex, OnceLock};

use taskledger_infra::logging::{self, LogFormat};
use taskledger_infra::otlp::{DroppedSpans, OtlpSettings, Tracing};

pub use metrics::{
    metrics, Binding, LatencySeries, Metrics, OpenStream, PushOutcome, Snapshot, TokenKind,
    TurnOutcome,
};

static REPORTER: LazyLock<Mutex<emf::Reporter>> = LazyLock::new(|| {
    let namespace = std::env::var("TASKLEDGER_METRICS_NAMESPACE")
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| emf::DEFAULT_NAMESPACE.to_string());
    Mutex::new(emf::Reporter::new(namespace))
});

/// The span exporter, when one runs (flushed at a Lambda invocation's end).
static EXPORTER: OnceLock<Tracing> = OnceLock::new();

/// Counts spans the exporter dropped into `taskledger_trace_spans_dropped_total`.
fn dropped_spans() -> DroppedSpans {
    DroppedSpans(Arc::new(|n| metrics().spans_dropped(n)))
}

/// Installs the logs (`format`) and, with `otlp`, the span exporter — from then on the trace
/// contexts recorded are the spans' (`trace`).
pub fn init(format: LogFormat, otlp: Option<&OtlpSettings>) -> Result<(), String> {
    if let Some(t) = logging::init(format, otlp, dropped_spans())? {
        let _ = EXPORTER.set(t);
        trace::exporting();
    }
    Ok(())
}

/// A Lambda function's start (on its runtime): JSON logs, spans to the collector the standard
/// `OTEL_EXPORTER_OTLP_*` variables name (the ADOT layer's, ADR 033), and metrics kept for
/// EMF reports.
pub fn init_lambda() {
    let otlp = OtlpSettings::from_env("taskledger").unwrap_or_else(|e| {
        eprintln!("tracing off: {e}");
        None
    });
    if let Err(e) = init(LogFormat::Json { timestamps: false }, otlp.as_ref()) {
        eprintln!("{e}");
    }
    metrics().keep_samples();
    LazyLock::force(&REPORTER);
}

/// After each Lambda invocation: the spans it made go to the collector (before the sandbox
/// is frozen), and what changed in the metrics goes to the log as EMF lines.
pub async fn report() {
    if let Some(t) = EXPORTER.get() {
        t.flush().await;
    }
    let now = metrics().snapshot();
    let at = taskledger_domain::time::Timestamp::now().unix_nanos() / 1_000_000;
    let lines = match REPORTER.lock() {
        Ok(mut r) => r.report(now, at),
        Err(_) => return,
    };
    if !lines.is_empty() {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        for l in lines {
            let _ = writeln!(out, "{l}");
        }
    }
}

#[cfg(test)]
mod tests;
