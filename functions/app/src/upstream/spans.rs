//! The spans of the calls taskledger makes to an upstream agent: each a client span whose
//! context is a root of its own, linked to the turn's (the upstream is another party: it sees
//! no trace of our callers), named and described as OpenTelemetry's draft A2A conventions say
//! for a client (ADR 033).

use taskledger_domain::agent::upstream::UpstreamInterface;
use taskledger_domain::trace::TraceContext;
use taskledger_domain::wire::StreamResponse;

use crate::telemetry;

/// A card read's own span and the context the upstream is told of.
pub(super) fn card() -> (tracing::Span, Option<TraceContext>) {
    let span = crate::exported_span!(
        "a2a.card",
        otel.name = "GET agent card",
        otel.kind = "client"
    );
    let ctx = telemetry::trace::leaving_current(&span);
    (span, ctx)
}

/// What an outgoing A2A call is about, for its span: the upstream's task and context (a
/// continuation), the message sent.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct About<'a> {
    pub task: Option<&'a str>,
    pub context: Option<&'a str>,
    pub message: Option<&'a str>,
}

/// An A2A call's own client span, named and described as OpenTelemetry's draft A2A conventions
/// say for a client (ADR 033: named after the method, `a2a.*` attributes, `error.type`), and
/// the context the upstream is told of: a root of its own, linked to the turn's.
pub(super) fn call(
    name: &'static str,
    wire: &'static str,
    i: &UpstreamInterface,
    about: About<'_>,
) -> (tracing::Span, Option<TraceContext>) {
    if !telemetry::trace::is_exporting() {
        return (tracing::Span::none(), None);
    }
    use tracing::field::Empty;
    let span = tracing::info_span!(
        "a2a.client",
        otel.name = name,
        otel.kind = "client",
        rpc.method = wire,
        a2a.method.name = name,
        a2a.protocol.version = i.protocol.label(),
        server.address = Empty,
        a2a.task.id = Empty,
        a2a.task.state = Empty,
        a2a.message.id = Empty,
        gen_ai.conversation.id = Empty,
        otel.status_code = Empty,
        error.type = Empty,
    );
    if let Ok(uri) = i.url.parse::<axum::http::Uri>() {
        if let Some(host) = uri.host() {
            span.record("server.address", host);
        }
    }
    for (field, value) in [
        ("a2a.task.id", about.task),
        (
            "gen_ai.conversation.id",
            about.context.filter(|c| !c.is_empty()),
        ),
        ("a2a.message.id", about.message),
    ] {
        if let Some(v) = value {
            span.record(field, v);
        }
    }
    let ctx = telemetry::trace::leaving_current(&span);
    (span, ctx)
}

/// The answer's facts on its call's span: the task it names and its state, or the error's
/// type (`Trouble::kind`).
pub(super) fn close(span: &tracing::Span, answer: Result<Option<(&str, &str)>, String>) {
    match answer {
        Ok(Some((id, state))) => {
            span.record("a2a.task.id", id);
            span.record("a2a.task.state", state);
        }
        Ok(None) => {}
        Err(kind) => {
            span.record("otel.status_code", "ERROR");
            span.record("error.type", kind.as_str());
        }
    }
}

/// The task a `StreamResponse` answer names, and its state.
pub(super) fn task_of(r: &StreamResponse) -> Option<(&str, &str)> {
    match r {
        StreamResponse::Task(t) => Some((t.id.as_str(), t.status.state.as_str())),
        _ => None,
    }
}
