//! The process's log and span output, composed (ADR 033): the logs and, when configured, the
//! OTLP span exporter (infra's `logging` and `otlp`), with the exporter's dropped spans counted
//! in the metrics; on Lambda, each invocation's spans flushed and its metrics written as EMF.

use std::sync::{Arc, OnceLock};

use taskledger_infra::logging::{self, LogFormat};
use taskledger_infra::otlp::{DroppedSpans, OtlpSettings, Tracing};

use crate::settings::{LambdaSettings, Settings, SettingsError};

use crate::telemetry::{self, metrics, trace};

/// The span exporter, when one runs (flushed at a Lambda invocation's end).
static EXPORTER: OnceLock<Tracing> = OnceLock::new();

/// Counts spans the exporter dropped into `taskledger_trace_spans_dropped_total`.
fn dropped_spans() -> DroppedSpans {
    DroppedSpans(Arc::new(|n| metrics().spans_dropped(n)))
}

/// Installs the logs (`format`) and, with `otlp`, the span exporter — from then on the trace
/// contexts recorded are the spans' (`telemetry::trace`). On a Tokio runtime.
pub fn init_telemetry(format: LogFormat, otlp: Option<&OtlpSettings>) -> Result<(), String> {
    if let Some(t) = logging::init(format, otlp, dropped_spans())? {
        let _ = EXPORTER.set(t);
        trace::exporting();
    }
    Ok(())
}

/// A Lambda function's start (on its runtime): its settings read (`Settings::from_env`,
/// `LambdaSettings::from_env`), JSON logs, spans to the collector the settings name (else the
/// standard `OTEL_EXPORTER_OTLP_*` variables: the ADOT layer's), and metrics kept for EMF
/// reports under the settings' namespace.
pub fn init_lambda() -> Result<(Settings, LambdaSettings), SettingsError> {
    let settings = Settings::from_env()?;
    let lambda = LambdaSettings::from_env()?;
    let otlp = settings.otlp().unwrap_or_else(|e| {
        eprintln!("tracing off: {e}");
        None
    });
    if let Err(e) = init_telemetry(LogFormat::Json { timestamps: false }, otlp.as_ref()) {
        eprintln!("{e}");
    }
    telemetry::keep_for_emf(&lambda.metrics_namespace);
    Ok((settings, lambda))
}

/// After each Lambda invocation: the spans it made go to the collector (before the sandbox
/// is frozen), and what changed in the metrics goes to the log as EMF lines.
pub async fn report() {
    if let Some(t) = EXPORTER.get() {
        t.flush().await;
    }
    telemetry::write_emf();
}
