//! Seeing inside (ADR 033): the process's metrics — recorded where things happen (the request
//! layer, the commit path, agent turns, the push attempt loop, streams) — read out as
//! Prometheus text by the local server's `/metrics` and as embedded-metric-format log lines by
//! the Lambda functions after each invocation. The log and span exporters are adapters, set up
//! by the composition (`compose::telemetry`).

pub mod calls;
pub mod emf;
pub mod histogram;
mod incident;
mod metrics;
pub mod prometheus;
pub mod trace;

use std::sync::{LazyLock, Mutex};

pub use calls::CallOutcome;
pub use incident::incident;
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

/// Keep latency samples for EMF reports from now on (a Lambda function's start).
pub fn keep_for_emf() {
    metrics().keep_samples();
    LazyLock::force(&REPORTER);
}

/// Writes what changed in the metrics since the last report as EMF lines on standard output
/// (a Lambda function's log).
pub fn write_emf() {
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
