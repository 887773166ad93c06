//! The server span of an A2A request, named and described as OpenTelemetry's draft A2A
//! conventions say (open-telemetry/semantic-conventions PR #195, a draft: the names may change,
//! ADR 033): named after the method, with what the request names before it runs and what the
//! answer says after — the one span of a request, whatever its binding (the bindings open
//! none). Unexported, a light span of the method and the caller, which the logs carry.

use tracing::field::Empty;
use tracing::Span;

use super::{Context, Operation, Outcome, Reply};
use crate::error::AppError;
use crate::request::Method;
use taskledger_domain::wire::{SendMessageResponse, Task};

/// The request's span, its request's facts recorded.
pub(super) fn open(method: Method, ctx: &Context, op: &Operation) -> Span {
    let span = crate::exported_span!(
        "a2a.request",
        otel.name = method.name(),
        otel.kind = "server",
        rpc.method = method.name(),
        a2a.method.name = method.name(),
        a2a.binding = ctx.binding.label(),
        a2a.protocol.version = format!("1.{}", ctx.version.minor),
        a2a.tenant = %ctx.principal.tenant,
        a2a.task.id = Empty,
        a2a.task.state = Empty,
        a2a.message.id = Empty,
        gen_ai.conversation.id = Empty,
        otel.status_code = Empty,
        error.type = Empty,
    );
    if span.is_disabled() {
        // By Display, as the HTTP span's: a `&str` recorded as it is is escaped (Debug).
        return tracing::info_span!(
            "request",
            method = %method.name(),
            binding = %ctx.binding.label(),
            principal = %ctx.principal
        );
    }
    let task_id = match op {
        Operation::SendMessage(r) | Operation::SendStreamingMessage(r) => {
            span.record("a2a.message.id", r.message.message_id.as_str());
            if let Some(c) = &r.message.context_id {
                span.record("gen_ai.conversation.id", c.as_str());
            }
            r.message.task_id.as_deref()
        }
        Operation::GetTask(r) | Operation::SubscribeToTask(r) => Some(r.id.as_str()),
        Operation::CancelTask(r) => Some(r.id.as_str()),
        Operation::ListTaskEvents(r) => Some(r.id.as_str()),
        Operation::CreatePushConfig(c) => c.task_id.as_deref(),
        Operation::GetPushConfig(r) | Operation::DeletePushConfig(r) => Some(r.task_id.as_str()),
        Operation::ListPushConfigs(r) => Some(r.task_id.as_str()),
        Operation::ListTasks(_) | Operation::GetExtendedAgentCard => None,
    };
    if let Some(id) = task_id {
        span.record("a2a.task.id", id);
    }
    span
}

/// The answer's facts: the task it names and its state and context, or the error's type.
pub(super) fn close(span: &Span, reply: &Result<Reply, AppError>) {
    match reply {
        Ok(r) => {
            let task: Option<&Task> = match &r.outcome {
                Outcome::Task(t) => Some(t),
                Outcome::Sent(SendMessageResponse::Task(t)) => Some(t),
                _ => None,
            };
            if let Some(t) = task {
                span.record("a2a.task.id", t.id.as_str());
                span.record("a2a.task.state", t.status.state.as_str());
                span.record("gen_ai.conversation.id", t.context_id.as_str());
            }
        }
        Err(e) => {
            span.record("otel.status_code", "ERROR");
            span.record("error.type", e.kind().wire().reason);
        }
    }
}
