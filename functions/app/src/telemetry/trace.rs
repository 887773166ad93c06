//! The trace a piece of work belongs to (ADR 033). A request's W3C context (or, with an
//! exporter, a new trace) is held for the work it does — a task-local for the commit path to
//! record with the events it appends — and each hop after the commit (relay, agent turn, model
//! call, webhook delivery) opens its span as a child of the context its work carries. With an
//! OpenTelemetry layer installed the context is the current span's, so what a commit records
//! names the commit's span; without one the request's own context is passed on unchanged and no
//! new trace is started. A trace crosses to nobody but whose request brought it: a webhook of
//! another principal, or a model provider, gets a trace of its own (a root span linked to the
//! work's) and no `tracestate` — or, unexported, no context at all.

use std::future::Future;

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use taskledger_domain::ids::Principal;
use taskledger_domain::trace::TraceContext;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

tokio::task_local! {
    static CURRENT: Option<TraceContext>;
    /// Whose request the work is (kept with what it records: only that principal's webhooks
    /// get the trace back, `TraceContext::to_receiver`).
    static ORIGIN: Option<Principal>;
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

/// A span that exists only while spans are exported — `tracing::info_span!`'s arguments — and
/// costs nothing otherwise (`Span::none()`: unexported, a span with fields would cost its
/// formatting on every request for nothing).
#[macro_export]
macro_rules! exported_span {
    ($($arg:tt)*) => {
        if $crate::telemetry::trace::is_exporting() {
            tracing::info_span!($($arg)*)
        } else {
            tracing::Span::none()
        }
    };
}

/// Runs `f` with `ctx` as the work's trace (its origin the one the context carries).
pub async fn within<F: Future>(ctx: Option<TraceContext>, f: F) -> F::Output {
    CURRENT.scope(ctx, f).await
}

/// Runs a request of `who`'s with `ctx` (the caller's context, if it sent one) as its trace.
pub async fn within_request<F: Future>(
    ctx: Option<TraceContext>,
    who: Principal,
    f: F,
) -> F::Output {
    ORIGIN.scope(Some(who), CURRENT.scope(ctx, f)).await
}

/// The trace to record with what happens now: the current span's (when exporting), else the
/// work's own; with whose request it is.
pub fn current() -> Option<TraceContext> {
    let own = CURRENT.try_with(Clone::clone).ok().flatten();
    let origin = ORIGIN
        .try_with(Clone::clone)
        .ok()
        .flatten()
        .or_else(|| own.as_ref().and_then(|o| o.origin().cloned()));
    if is_exporting() {
        if let Some(c) = of_span(&Span::current()) {
            let state = own.and_then(|o| o.tracestate().map(str::to_string));
            return Some(c.with_state(state).with_origin(origin));
        }
    }
    own.map(|o| o.with_origin(origin))
}

/// The trace a commit records: its own span's when spans are exported (the work after it joins
/// the commit), else the work's as handed in — with the work's `tracestate` and origin.
pub fn recorded(span: &Span, work: Option<&TraceContext>) -> Option<TraceContext> {
    let origin = work.and_then(|w| w.origin().cloned());
    if is_exporting() {
        if let Some(c) = of_span(span) {
            let state = work.and_then(|w| w.tracestate().map(str::to_string));
            return Some(c.with_state(state).with_origin(origin));
        }
    }
    work.cloned()
}

/// Makes `span` the root of a trace of its own, linked to `from` (the work it follows without
/// being its child): what leaves for another principal or a provider names this trace, not
/// the caller's (exporting only).
pub fn own_trace(span: &Span, from: Option<&TraceContext>) {
    if !is_exporting() {
        return;
    }
    let _ = span.set_parent(opentelemetry::Context::new());
    if let Some(f) = from {
        span.add_link(span_context(f));
    }
}

/// `span` made the root of a trace of its own linked to the current span (`own_trace`), and the
/// context to tell the other party of: what an outgoing call leaves with (none unexporting).
pub fn leaving_current(span: &Span) -> Option<TraceContext> {
    own_trace(span, of_span(&Span::current()).as_ref());
    of_span(span)
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
    let _ =
        span.set_parent(opentelemetry::Context::new().with_remote_span_context(span_context(p)));
}

fn span_context(p: &TraceContext) -> SpanContext {
    let state = p
        .tracestate()
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    SpanContext::new(
        TraceId::from_bytes(p.trace_id()),
        SpanId::from_bytes(p.span_id()),
        if p.sampled() {
            TraceFlags::SAMPLED
        } else {
            TraceFlags::default()
        },
        true,
        state,
    )
}

/// A stored context (an event's, a message's), if it reads.
pub fn stored(s: Option<&str>) -> Option<TraceContext> {
    s.and_then(TraceContext::from_stored)
}
