//! The metrics as Prometheus text (exposition format 0.0.4): what the local server's
//! `/metrics` answers. Every family has its `# HELP` and `# TYPE`; a labelled family lists the
//! series it has seen (requests by method, binding and outcome; latency by method and binding).

use std::fmt::Write;

use taskledger_domain::wire::TaskState;

use super::histogram::{HistogramSnapshot, BUCKETS};
use super::metrics::Snapshot;

/// The content type of the answer.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn histogram(out: &mut String, name: &str, labels: &str, h: &HistogramSnapshot) {
    let sep = if labels.is_empty() { "" } else { "," };
    let mut cumulative = 0;
    for (i, n) in h.buckets.iter().enumerate() {
        cumulative += n;
        let le = BUCKETS
            .get(i)
            .map_or_else(|| "+Inf".to_string(), |b| b.to_string());
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels}{sep}le=\"{le}\"}} {cumulative}"
        );
    }
    let braces = |l: &str| {
        if l.is_empty() {
            String::new()
        } else {
            format!("{{{l}}}")
        }
    };
    let _ = writeln!(out, "{name}_sum{} {}", braces(labels), h.sum_seconds);
    let _ = writeln!(out, "{name}_count{} {}", braces(labels), h.count);
}

/// The text of `snapshot`, with the tasks by state when the store counts them.
pub fn render(s: &Snapshot, tasks: Option<&[(TaskState, u64)]>) -> String {
    let mut out = String::with_capacity(4096);
    family(
        &mut out,
        "a2a_requests_total",
        "counter",
        "A2A requests answered, by method, binding and outcome (ok, or the error's reason).",
    );
    for (m, b, outcome, n) in &s.requests {
        let _ = writeln!(
            out,
            "a2a_requests_total{{method=\"{}\",binding=\"{}\",outcome=\"{outcome}\"}} {n}",
            m.name(),
            b.label()
        );
    }
    family(
        &mut out,
        "a2a_request_duration_seconds",
        "histogram",
        "Time to answer an A2A request (a stream: until it starts), in seconds.",
    );
    for l in &s.latency {
        let labels = format!(
            "method=\"{}\",binding=\"{}\"",
            l.method.name(),
            l.binding.label()
        );
        histogram(
            &mut out,
            "a2a_request_duration_seconds",
            &labels,
            &l.histogram,
        );
    }
    family(
        &mut out,
        "taskledger_commits_total",
        "counter",
        "Commits appended to the event store.",
    );
    let _ = writeln!(out, "taskledger_commits_total {}", s.commits);
    family(
        &mut out,
        "taskledger_commit_conflicts_total",
        "counter",
        "Commits that lost an optimistic-concurrency race and were decided again.",
    );
    let _ = writeln!(out, "taskledger_commit_conflicts_total {}", s.conflicts);
    if let Some(tasks) = tasks {
        family(
            &mut out,
            "taskledger_tasks",
            "gauge",
            "Stored tasks by state (finished tasks until they expire).",
        );
        for (state, n) in tasks {
            let _ = writeln!(out, "taskledger_tasks{{state=\"{}\"}} {n}", state.as_str());
        }
    }
    family(
        &mut out,
        "taskledger_agent_turns_total",
        "counter",
        "Agent turns by how they ended (ran, continued, failed, given_up).",
    );
    for (o, n) in &s.turns {
        let _ = writeln!(
            out,
            "taskledger_agent_turns_total{{outcome=\"{}\"}} {n}",
            o.label()
        );
    }
    family(
        &mut out,
        "taskledger_agent_turn_duration_seconds",
        "histogram",
        "Time an agent turn ran, in seconds.",
    );
    histogram(
        &mut out,
        "taskledger_agent_turn_duration_seconds",
        "",
        &s.turn_duration,
    );
    family(
        &mut out,
        "taskledger_model_tokens_total",
        "counter",
        "Tokens the model provider reported, by kind (input, output).",
    );
    for (k, n) in &s.tokens {
        let _ = writeln!(
            out,
            "taskledger_model_tokens_total{{kind=\"{}\"}} {n}",
            k.label()
        );
    }
    family(
        &mut out,
        "taskledger_push_deliveries_total",
        "counter",
        "Webhook delivery attempts by outcome (delivered, retried, dead_lettered).",
    );
    for (o, n) in &s.pushes {
        let _ = writeln!(
            out,
            "taskledger_push_deliveries_total{{outcome=\"{}\"}} {n}",
            o.label()
        );
    }
    family(
        &mut out,
        "taskledger_push_delivery_duration_seconds",
        "histogram",
        "Time a webhook delivery attempt took, in seconds.",
    );
    histogram(
        &mut out,
        "taskledger_push_delivery_duration_seconds",
        "",
        &s.push_latency,
    );
    family(
        &mut out,
        "taskledger_open_streams",
        "gauge",
        "Streams (SSE or gRPC) open now.",
    );
    let _ = writeln!(out, "taskledger_open_streams {}", s.open_streams);
    family(
        &mut out,
        "taskledger_trace_spans_dropped_total",
        "counter",
        "Spans the trace exporter dropped (its queue full, or the collector unreachable).",
    );
    let _ = writeln!(
        out,
        "taskledger_trace_spans_dropped_total {}",
        s.spans_dropped
    );
    calls(&mut out, "upstream", "the upstream A2A agent", &s.upstream);
    calls(&mut out, "mcp", "MCP servers' tools", &s.mcp);
    out
}

/// `calls` as Prometheus text: `<name>_calls_total{outcome}` and `<name>_call_duration_seconds`.
fn calls(out: &mut String, name: &str, what: &str, calls: &super::calls::CallsSnapshot) {
    let total = format!("taskledger_{name}_calls_total");
    let _ = writeln!(
        out,
        "# HELP {total} Calls to {what} by outcome (ok, error, timeout)."
    );
    let _ = writeln!(out, "# TYPE {total} counter");
    for (o, n) in &calls.counts {
        let _ = writeln!(out, "{total}{{outcome=\"{}\"}} {n}", o.label());
    }
    let duration = format!("taskledger_{name}_call_duration_seconds");
    let _ = writeln!(
        out,
        "# HELP {duration} Time a call to {what} took, in seconds."
    );
    let _ = writeln!(out, "# TYPE {duration} histogram");
    histogram(out, &duration, "", &calls.latency);
}
