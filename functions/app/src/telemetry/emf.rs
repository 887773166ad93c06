//! The metrics as CloudWatch embedded metric format (EMF) lines: a Lambda function writes them
//! to its log at the end of each invocation, and CloudWatch makes metrics of them — no API
//! call on the request path. Each line is one JSON object with its `_aws` metadata (the
//! namespace, the dimension set, each metric's name and unit) beside the dimension values and
//! the metric values: what changed since the last report, counters as counts, latencies as the
//! samples themselves (in milliseconds, at most 100 a metric).

use serde_json::{json, Map, Value};

use super::metrics::Snapshot;

/// The namespace when none is configured (`TASKLEDGER_METRICS_NAMESPACE`).
pub const DEFAULT_NAMESPACE: &str = "taskledger";

/// Reports the changes between two readings as EMF lines.
pub struct Reporter {
    namespace: String,
    last: Option<Snapshot>,
}

fn line(
    namespace: &str,
    at_ms: i64,
    dimensions: &[(&str, &str)],
    metrics: &[(&str, &str, Value)],
) -> String {
    let mut o = Map::new();
    o.insert(
        "_aws".into(),
        json!({
            "Timestamp": at_ms,
            "CloudWatchMetrics": [{
                "Namespace": namespace,
                "Dimensions": [dimensions.iter().map(|(k, _)| *k).collect::<Vec<_>>()],
                "Metrics": metrics.iter().map(|(name, unit, _)| json!({"Name": name, "Unit": unit})).collect::<Vec<_>>(),
            }],
        }),
    );
    for (k, v) in dimensions {
        o.insert((*k).into(), json!(v));
    }
    for (name, _, v) in metrics {
        o.insert((*name).into(), v.clone());
    }
    Value::Object(o).to_string()
}

fn millis(samples: &[f64]) -> Value {
    json!(samples
        .iter()
        .map(|s| (s * 1e6).round() / 1e3)
        .collect::<Vec<_>>())
}

impl Reporter {
    pub fn new(namespace: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            last: None,
        }
    }

    /// The lines for what changed since the last call (none when nothing did).
    pub fn report(&mut self, now: Snapshot, at_ms: i64) -> Vec<String> {
        let ns = self.namespace.as_str();
        let last = self.last.as_ref();
        let mut out = Vec::new();
        for (m, b, outcome, n) in &now.requests {
            let before = last
                .and_then(|l| {
                    l.requests
                        .iter()
                        .find(|(lm, lb, lo, _)| lm == m && lb == b && lo == outcome)
                })
                .map_or(0, |r| r.3);
            if *n > before {
                out.push(line(
                    ns,
                    at_ms,
                    &[
                        ("Method", m.name()),
                        ("Binding", b.label()),
                        ("Outcome", outcome),
                    ],
                    &[("Requests", "Count", json!(n - before))],
                ));
            }
        }
        for l in now.latency.iter().filter(|l| !l.samples.is_empty()) {
            out.push(line(
                ns,
                at_ms,
                &[("Method", l.method.name()), ("Binding", l.binding.label())],
                &[("RequestLatency", "Milliseconds", millis(&l.samples))],
            ));
        }
        let delta = |now: u64, before: Option<u64>| now.saturating_sub(before.unwrap_or(0));
        let mut plain = Vec::new();
        for (name, now_v, before) in [
            ("Commits", now.commits, last.map(|l| l.commits)),
            ("CommitConflicts", now.conflicts, last.map(|l| l.conflicts)),
            (
                "TraceSpansDropped",
                now.spans_dropped,
                last.map(|l| l.spans_dropped),
            ),
        ] {
            let d = delta(now_v, before);
            if d > 0 {
                plain.push((name, "Count", json!(d)));
            }
        }
        if !now.turn_samples.is_empty() {
            plain.push((
                "AgentTurnDuration",
                "Milliseconds",
                millis(&now.turn_samples),
            ));
        }
        if !now.push_samples.is_empty() {
            plain.push((
                "PushDeliveryLatency",
                "Milliseconds",
                millis(&now.push_samples),
            ));
        }
        for (name, calls) in [
            ("UpstreamCallLatency", &now.upstream),
            ("McpCallLatency", &now.mcp),
        ] {
            if !calls.samples.is_empty() {
                plain.push((name, "Milliseconds", millis(&calls.samples)));
            }
        }
        if !plain.is_empty() {
            out.push(line(ns, at_ms, &[], &plain));
        }
        for (i, (o, n)) in now.turns.iter().enumerate() {
            let d = delta(*n, last.map(|l| l.turns[i].1));
            if d > 0 {
                out.push(line(
                    ns,
                    at_ms,
                    &[("Outcome", o.label())],
                    &[("AgentTurns", "Count", json!(d))],
                ));
            }
        }
        for (i, (k, n)) in now.tokens.iter().enumerate() {
            let d = delta(*n, last.map(|l| l.tokens[i].1));
            if d > 0 {
                out.push(line(
                    ns,
                    at_ms,
                    &[("Kind", k.label())],
                    &[("ModelTokens", "Count", json!(d))],
                ));
            }
        }
        for (i, (o, n)) in now.pushes.iter().enumerate() {
            let d = delta(*n, last.map(|l| l.pushes[i].1));
            if d > 0 {
                out.push(line(
                    ns,
                    at_ms,
                    &[("Outcome", o.label())],
                    &[("PushDeliveries", "Count", json!(d))],
                ));
            }
        }
        for (name, calls, before) in [
            ("UpstreamCalls", &now.upstream, last.map(|l| &l.upstream)),
            ("McpCalls", &now.mcp, last.map(|l| &l.mcp)),
        ] {
            for (i, (o, n)) in calls.counts.iter().enumerate() {
                let d = delta(*n, before.map(|b| b.counts[i].1));
                if d > 0 {
                    out.push(line(
                        ns,
                        at_ms,
                        &[("Outcome", o.label())],
                        &[(name, "Count", json!(d))],
                    ));
                }
            }
        }
        self.last = Some(now);
        out
    }
}
