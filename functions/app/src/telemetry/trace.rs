//! The trace a piece of work belongs to (ADR 033). A request's W3C context (or, with an
//! exporter, a new trace) is held for the work it does — a task-local for the commit path to
//! record with the events it appends — and each hop after the commit (relay, agent turn, model
//! call, webhook delivery) opens its span as a child of the context its work carries. With an
//! OpenTelemetry layer installed the context is the current span's, so what a commit records
//! names the commit's span; without one the request's own context is passed on unchanged (a
//! webhook receiver still sees the caller's trace) and no new trace is started.

use std::future::Future;

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use taskledger_domain::trace::TraceContext;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

tokio::task_local! {
    static CURRENT: Option<TraceContext>;
}

/// Whether spans are exported (an OpenTelemetry layer is installed); set once at start.
static EXPORTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Spans are exported from now on: contexts come from them.
pub fn exporting() {
    EXPORTING.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether spans are exported. The spans of the hops (request, commit, relay, model call,
/// delivery) are made only then: unexported, a span with fields costs its formatting on every
/// request for nothing (`Span::none()` costs nothing).
pub fn is_exporting() -> bool {
    EXPORTING.load(std::sync::atomic::Ordering::Relaxed)
}

/// Runs `f` with `ctx` as the work's trace.
pub async fn within<F: Future>(ctx: Option<TraceContext>, f: F) -> F::Output {
    CURRENT.scope(ctx, f).await
}

/// The trace to record with what happens now: the current span's (when exporting), else the
/// work's own.
pub fn current() -> Option<TraceContext> {
    let own = CURRENT.try_with(Clone::clone).ok().flatten();
    if is_exporting() {
        if let Some(c) = of_span(&Span::current()) {
            return Some(c.with_state(own.and_then(|o| o.tracestate().map(str::to_string))));
        }
    }
    own
}

/// The context of `span` (exporting only: otherwise spans have none).
pub fn of_span(span: &Span) -> Option<TraceContext> {
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    if !sc.is_valid() {
        return None;
    }
    TraceContext::from_ids(
        sc.trace_id().to_bytes(),
        sc.span_id().to_bytes(),
        sc.is_sampled(),
    )
}

/// Makes `span` a child of `parent` (a context from a request, an event, a queue message).
pub fn set_parent(span: &Span, parent: Option<&TraceContext>) {
    let Some(p) = parent.filter(|_| is_exporting()) else {
        return;
    };
    let state = p
        .tracestate()
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    let remote = SpanContext::new(
        TraceId::from_bytes(p.trace_id()),
        SpanId::from_bytes(p.span_id()),
        if p.sampled() {
            TraceFlags::SAMPLED
        } else {
            TraceFlags::default()
        },
        true,
        state,
    );
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
}

/// A stored context (an event's, a message's), if it reads.
pub fn stored(s: Option<&str>) -> Option<TraceContext> {
    s.and_then(TraceContext::from_stored)
}
