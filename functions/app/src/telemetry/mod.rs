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

use std::sync::{Mutex, OnceLock};

pub use calls::CallOutcome;
pub use incident::incident;
pub use metrics::{
    metrics, Binding, LatencySeries, Metrics, OpenStream, PushOutcome, Snapshot, TokenKind,
    TurnOutcome,
};

/// The EMF reporter, from a Lambda function's start (`keep_for_emf`).
static REPORTER: OnceLock<Mutex<emf::Reporter>> = OnceLock::new();

/// Keep latency samples for EMF reports under `namespace` from now on (a Lambda function's
/// start; a blank namespace is `emf::DEFAULT_NAMESPACE`).
pub fn keep_for_emf(namespace: &str) {
    metrics().keep_samples();
    let namespace = match namespace.trim() {
        "" => emf::DEFAULT_NAMESPACE,
        n => n,
    };
    let _ = REPORTER.set(Mutex::new(emf::Reporter::new(namespace.to_string())));
}

/// Writes what changed in the metrics since the last report as EMF lines on standard output
/// (a Lambda function's log).
pub fn write_emf() {
    let now = metrics().snapshot();
    let at = taskledger_domain::time::Timestamp::now().unix_nanos() / 1_000_000;
    let Some(reporter) = REPORTER.get() else {
        return;
    };
    let lines = match reporter.lock() {
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
