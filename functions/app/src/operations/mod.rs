//! The transport-neutral request layer: each A2A operation is one function from a typed request
//! (with the caller, the extensions they activated and an idempotency key) to a typed result or
//! an A2A error. JSON-RPC, HTTP+JSON and gRPC only turn their request into a `Method` and its
//! request object (ProtoJSON), let `Operation::decode` type it, `execute` it, and encode the
//! `Outcome`; the one error table gives each binding its codes.

#[cfg(test)]
mod decode_props;
mod extensions;
mod generations;
mod spans;

use std::sync::Arc;
use tracing::Instrument;

use serde_json::Value;
use taskledger_domain::card::extended::extended_card;
use taskledger_domain::error::ErrorKind;
use taskledger_domain::ids::{IdempotencyKey, Principal};
use taskledger_domain::projection::log::EVENTS_URI;
use taskledger_domain::task::intake::json_fingerprint;
use taskledger_domain::wire::{
    AgentCard, CancelTaskRequest, GetTaskRequest, ListTaskEventsRequest, ListTaskEventsResponse,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, PushProtocol, SendMessageRequest, SendMessageResponse,
    Task, TaskPushNotificationConfig, TaskPushNotificationConfigRef,
};

pub use crate::request::Method;
pub use extensions::{negotiate, Extensions};

use crate::error::AppError;
use crate::request::{self, ProtocolVersion};
use crate::service::streams::TaskStream;
use crate::service::Service;

/// One typed request.
#[derive(Debug, Clone)]
pub enum Operation {
    SendMessage(SendMessageRequest),
    SendStreamingMessage(SendMessageRequest),
    GetTask(GetTaskRequest),
    ListTasks(ListTasksRequest),
    CancelTask(CancelTaskRequest),
    SubscribeToTask(GetTaskRequest),
    CreatePushConfig(TaskPushNotificationConfig),
    GetPushConfig(TaskPushNotificationConfigRef),
    ListPushConfigs(ListTaskPushNotificationConfigsRequest),
    DeletePushConfig(TaskPushNotificationConfigRef),
    GetExtendedAgentCard,
    ListTaskEvents(ListTaskEventsRequest),
}

impl Operation {
    /// Types the request object of `method`; a field that does not fit is InvalidParams
    /// naming it under `root` (`params` on JSON-RPC, `request` on HTTP+JSON and gRPC, whose body, path and query are one request object).
    pub fn decode(method: Method, value: Value, root: &str) -> Result<Self, AppError> {
        Ok(match method {
            Method::SendMessage => Self::SendMessage(request::decode(value, root)?),
            Method::SendStreamingMessage => {
                Self::SendStreamingMessage(request::decode(value, root)?)
            }
            Method::GetTask => Self::GetTask(request::decode(value, root)?),
            Method::ListTasks => Self::ListTasks(request::decode(value, root)?),
            Method::CancelTask => Self::CancelTask(request::decode(value, root)?),
            Method::SubscribeToTask => Self::SubscribeToTask(request::decode(value, root)?),
            Method::CreateTaskPushNotificationConfig => {
                Self::CreatePushConfig(request::decode(value, root)?)
            }
            Method::GetTaskPushNotificationConfig => {
                Self::GetPushConfig(request::decode(value, root)?)
            }
            Method::ListTaskPushNotificationConfigs => {
                Self::ListPushConfigs(request::decode(value, root)?)
            }
            Method::DeleteTaskPushNotificationConfig => {
                Self::DeletePushConfig(request::decode(value, root)?)
            }
            Method::GetExtendedAgentCard => Self::GetExtendedAgentCard,
            Method::ListTaskEvents => Self::ListTaskEvents(request::decode(value, root)?),
        })
    }

    pub fn method(&self) -> Method {
        match self {
            Self::SendMessage(_) => Method::SendMessage,
            Self::SendStreamingMessage(_) => Method::SendStreamingMessage,
            Self::GetTask(_) => Method::GetTask,
            Self::ListTasks(_) => Method::ListTasks,
            Self::CancelTask(_) => Method::CancelTask,
            Self::SubscribeToTask(_) => Method::SubscribeToTask,
            Self::CreatePushConfig(_) => Method::CreateTaskPushNotificationConfig,
            Self::GetPushConfig(_) => Method::GetTaskPushNotificationConfig,
            Self::ListPushConfigs(_) => Method::ListTaskPushNotificationConfigs,
            Self::DeletePushConfig(_) => Method::DeleteTaskPushNotificationConfig,
            Self::GetExtendedAgentCard => Method::GetExtendedAgentCard,
            Self::ListTaskEvents(_) => Method::ListTaskEvents,
        }
    }

    /// A message's metadata of an extension the client must opt into (DMP's work/v1 and
    /// envelope/v1) is read only when that extension is active: otherwise it is dropped.
    fn hide_inactive(&mut self, active: &Extensions) {
        let message = match self {
            Self::SendMessage(r) | Self::SendStreamingMessage(r) => &mut r.message,
            _ => return,
        };
        if let Some(m) = message.metadata.as_mut() {
            for uri in OPT_IN {
                if !active.is_active(uri) {
                    m.remove(uri);
                }
            }
        }
        // hitl/v1 is active for the message exactly when the client activated it: the task
        // then pauses the hitl way (`TaskHead::hitl`).
        let hitl = taskledger_domain::extensions::hitl::HITL_URI;
        if active.is_active(hitl) {
            if !message.extensions.iter().any(|e| e == hitl) {
                message.extensions.push(hitl.into());
            }
        } else {
            message.extensions.retain(|e| e != hitl);
        }
    }

    /// The events extension's request fields (`asOfGeneration`, a stream's `after`) are
    /// unknown fields, ignored, to a 1.0 client that did not activate it.
    fn hide_log_reads(&mut self) {
        if let Self::GetTask(r) | Self::SubscribeToTask(r) = self {
            r.as_of_generation = None;
            r.after = None;
        }
    }

    /// Marks the push configs the request registers (one of its own, or one inline in a send)
    /// as registered over `protocol`: their deliveries are written in its shapes.
    pub fn deliver_as(&mut self, protocol: PushProtocol) {
        match self {
            Self::CreatePushConfig(c) => c.protocol = protocol,
            Self::SendMessage(r) | Self::SendStreamingMessage(r) => {
                if let Some(c) = r
                    .configuration
                    .as_mut()
                    .and_then(|c| c.task_push_notification_config.as_mut())
                {
                    c.protocol = protocol;
                }
            }
            _ => {}
        }
    }

    /// The extensions the request's message lists (`message.extensions`).
    fn message_extensions(&self) -> &[String] {
        match self {
            Self::SendMessage(r) | Self::SendStreamingMessage(r) => &r.message.extensions,
            _ => &[],
        }
    }
}

/// Extensions whose message metadata is read only when the client activated them.
const OPT_IN: [&str; 3] = [
    taskledger_domain::extensions::dmp::WORK_URI,
    taskledger_domain::task::ENVELOPE_URI,
    taskledger_domain::extensions::hitl::HITL_URI,
];

/// The public card a binding serves, and how a card derived from it (the extended card) is
/// signed — `crate::card::PublicCard`, named here by what operations ask of it.
pub trait ServedCard: Send + Sync + std::fmt::Debug {
    fn card(&self) -> &taskledger_domain::wire::AgentCard;
    fn signed(
        &self,
        card: taskledger_domain::wire::AgentCard,
    ) -> taskledger_domain::wire::AgentCard;
}

/// What a request carries besides its operation.
#[derive(Debug, Clone)]
pub struct Context {
    pub principal: Principal,
    /// The extension URIs the client listed (`A2A-Extensions`, any number of values).
    pub requested_extensions: Vec<String>,
    /// `Idempotency-Key`, with the fingerprint of the request object it came with.
    pub idempotency: Option<(IdempotencyKey, String)>,
    /// `Last-Event-ID`, as sent: where a SubscribeToTask stream resumes.
    pub last_event_id: Option<String>,
    /// The `1.x` the client speaks (`A2A-Version`).
    pub version: ProtocolVersion,
    /// The public agent card as this binding serves it (set for GetExtendedAgentCard).
    pub card: Option<Arc<dyn ServedCard>>,
    /// How the binding writes a Task result: given, GetTask's result may come already
    /// written that way (`Outcome::Encoded`, ADR 026).
    pub task_encoding: Option<TaskEncoding>,
    /// The binding the request came over (the metrics' label).
    pub binding: crate::telemetry::Binding,
    /// The caller's W3C trace context (`traceparent`/`tracestate`), if it sent one that reads.
    pub trace: Option<taskledger_domain::trace::TraceContext>,
}

/// How the JSON bindings write a 1.x Task result: ProtoJSON.
pub const JSON_TASKS: TaskEncoding = TaskEncoding {
    id: 0,
    encode: |outcome| {
        serde_json::to_vec(outcome).map_err(|e| {
            AppError::protocol(
                taskledger_domain::error::ErrorKind::Internal,
                format!("cannot serialise the result: {e}"),
            )
        })
    },
};

/// How a binding writes a Task result (ProtoJSON on the HTTP bindings, protobuf on gRPC).
#[derive(Debug, Clone, Copy)]
pub struct TaskEncoding {
    /// Tells encodings apart: an answer written in one is never sent in another.
    pub id: u8,
    pub encode: fn(&Outcome) -> Result<Vec<u8>, AppError>,
}

impl Context {
    pub fn new(principal: Principal, binding: crate::telemetry::Binding) -> Self {
        Self {
            binding,
            trace: None,
            principal,
            requested_extensions: Vec::new(),
            idempotency: None,
            last_event_id: None,
            version: ProtocolVersion::default(),
            card: None,
            task_encoding: None,
        }
    }

    /// The key a creation may be retried with, bound to the request object it came with.
    pub fn with_idempotency(mut self, key: Option<IdempotencyKey>, request: &Value) -> Self {
        self.idempotency = key.map(|k| (k, json_fingerprint(request)));
        self
    }
}

/// A typed result.
pub enum Outcome {
    Sent(SendMessageResponse),
    /// Boxed: a task is more than twice the size of any other result.
    Task(Box<Task>),
    Tasks(ListTasksResponse),
    PushConfig(TaskPushNotificationConfig),
    PushConfigs(ListTaskPushNotificationConfigsResponse),
    /// `google.protobuf.Empty` (`{}`).
    Empty,
    /// SendStreamingMessage, SubscribeToTask: `StreamResponse` events.
    Stream(TaskStream),
    /// GetExtendedAgentCard.
    Card(Box<AgentCard>),
    /// ListTaskEvents (taskledger's events extension).
    Events(ListTaskEventsResponse),
    /// A result already written in the binding's encoding (`Context::task_encoding`): sent
    /// as it is.
    Encoded(Arc<[u8]>),
}

impl std::fmt::Debug for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stream(_) => f.write_str("Stream"),
            other => match other.to_value() {
                Ok(v) => write!(f, "{v}"),
                Err(e) => write!(f, "{e}"),
            },
        }
    }
}

impl Outcome {
    /// The result as ProtoJSON.
    pub fn to_value(&self) -> Result<Value, AppError> {
        serde_json::to_value(self).map_err(|e| {
            AppError::protocol(
                ErrorKind::Internal,
                format!("cannot serialise the result: {e}"),
            )
        })
    }
}

/// The result as its wire type serialises (a stream has no single result: an error).
impl serde::Serialize for Outcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap};
        match self {
            Self::Sent(r) => r.serialize(s),
            Self::Task(t) => t.serialize(s),
            Self::Tasks(r) => r.serialize(s),
            Self::PushConfig(c) => c.serialize(s),
            Self::PushConfigs(r) => r.serialize(s),
            Self::Empty => s.serialize_map(Some(0))?.end(),
            Self::Card(c) => c.serialize(s),
            Self::Events(r) => r.serialize(s),
            Self::Encoded(_) => Err(S::Error::custom("an encoded result is sent as it is")),
            Self::Stream(_) => Err(S::Error::custom("a stream has no single result")),
        }
    }
}

/// The result and the extensions that were active for it (echoed in `A2A-Extensions`).
#[derive(Debug)]
pub struct Reply {
    pub outcome: Outcome,
    pub extensions: Extensions,
}

/// Runs one operation for the caller, counted and timed by method, binding and outcome, in a
/// span that joins the caller's trace.
pub async fn execute(svc: &Arc<Service>, ctx: Context, op: Operation) -> Result<Reply, AppError> {
    use crate::telemetry::{metrics, trace};
    let (method, binding, started) = (op.method(), ctx.binding, std::time::Instant::now());
    let span = spans::open(method, &ctx, &op);
    trace::set_parent(&span, ctx.trace.as_ref());
    let (caller, who) = (ctx.trace.clone(), ctx.principal.clone());
    let reply =
        trace::within_request(caller, who, run(svc, ctx, op).instrument(span.clone())).await;
    let reason = reply.as_ref().err().map(|e| e.kind().wire().reason);
    if trace::is_exporting() {
        spans::close(&span, &reply);
    }
    metrics().request(method, binding, reason, started.elapsed());
    reply
}

async fn run(svc: &Arc<Service>, ctx: Context, op: Operation) -> Result<Reply, AppError> {
    let extensions = negotiate(&ctx.requested_extensions, op.message_extensions())?;
    let mut op = generations::request_for(ctx.version, op);
    op.hide_inactive(&extensions);
    if !ctx.version.generations() && !extensions.is_active(EVENTS_URI) {
        op.hide_log_reads();
    }
    let who = &ctx.principal;
    let timeline = ctx.version.generations();
    let outcome = match op {
        Operation::SendMessage(req) => {
            let length = generations::timeline_length(
                req.configuration.as_ref().and_then(|c| c.timeline_length),
            )?;
            let sent = Outcome::Sent(svc.send_message(who, req, ctx.idempotency).await?);
            generations::with_timelines(svc, sent, length, false).await?
        }
        // The task as of a past generation, folded from its log (the events extension); the
        // 1.1 timeline is the log's now, so a past state carries none.
        Operation::GetTask(req) if req.as_of_generation.is_some() => {
            Outcome::Task(Box::new(svc.get_task_as_of(who, req).await?))
        }
        // 1.1: with its timeline, read afresh (answers kept by ADR 026 carry none).
        Operation::GetTask(req) if timeline => {
            let length = generations::timeline_length(req.timeline_length)?;
            let task = Outcome::Task(Box::new(svc.get_task(who, req).await?));
            generations::with_timelines(svc, task, length, true).await?
        }
        // As sent before, while the task has not changed (ADR 026).
        Operation::GetTask(req) => match ctx.task_encoding {
            Some(encoding) => {
                let version = ctx.version;
                let render = |task| {
                    let outcome = generations::outcome_for(version, Outcome::Task(Box::new(task)));
                    (encoding.encode)(&outcome).map(Arc::from)
                };
                let variant = encoding.id * 2 + u8::from(version.generations());
                Outcome::Encoded(svc.get_task_rendered(who, req, variant, render).await?)
            }
            None => Outcome::Task(Box::new(svc.get_task(who, req).await?)),
        },
        Operation::ListTasks(req) => {
            let length = generations::timeline_length(req.timeline_length)?;
            let page = Outcome::Tasks(svc.list_tasks(who, req).await?);
            generations::with_timelines(svc, page, length, false).await?
        }
        Operation::CancelTask(req) => Outcome::Task(Box::new(svc.cancel_task(who, req).await?)),
        Operation::CreatePushConfig(req) => {
            Outcome::PushConfig(svc.create_push_config(who, req).await?)
        }
        Operation::GetPushConfig(req) => Outcome::PushConfig(svc.get_push_config(who, req).await?),
        Operation::ListPushConfigs(req) => {
            Outcome::PushConfigs(svc.list_push_configs(who, req).await?)
        }
        Operation::DeletePushConfig(req) => {
            svc.delete_push_config(who, req).await?;
            Outcome::Empty
        }
        Operation::SendStreamingMessage(req) => {
            Outcome::Stream(svc.stream_message(who, req, ctx.idempotency).await?)
        }
        // The events extension's `after` starts it as `Last-Event-ID` would (not both).
        Operation::SubscribeToTask(mut req) => {
            let after = req.after.take().map(|n| n.to_string());
            if after.is_some() && ctx.last_event_id.is_some() {
                return Err(crate::error::AppError::invalid_params(
                    "after",
                    "names where the stream starts, as Last-Event-ID does: send one of them",
                ));
            }
            let from = after.as_deref().or(ctx.last_event_id.as_deref());
            Outcome::Stream(svc.subscribe(who, req, from).await?)
        }
        Operation::ListTaskEvents(req) => Outcome::Events(svc.list_task_events(who, req).await?),
        // Only where the card declares it (callers authenticate), for the caller asking.
        Operation::GetExtendedAgentCard => match ctx
            .card
            .as_deref()
            .filter(|c| c.card().capabilities.extended_agent_card == Some(true))
        {
            Some(public) => Outcome::Card(Box::new(public.signed(extended_card(
                public.card().clone(),
                who,
                &svc.caller_limits(),
            )))),
            None => return Err(request::extended_card_unsupported()),
        },
    };
    Ok(Reply {
        outcome: generations::outcome_for(ctx.version, outcome),
        extensions,
    })
}
