//! The one front door (issue 54): a request becomes a `Call` once, whatever its binding — who
//! calls (the authenticator), in which protocol line (`Line`), with which extensions,
//! idempotency key, trace and `Last-Event-ID` — read from the HTTP headers, or from gRPC
//! metadata read as headers (the same names, lower-cased). The line owns what varies by line:
//! its version rule, the extension header names read and echoed, the translation of a request
//! in and of a result out (0.3's shapes, `v03`), how its Task results are written (which keys
//! the answer cache, ADR 026), and the format its webhooks receive. Bindings keep only their
//! framing: where the request object comes from and how the answer goes back.

use std::borrow::Cow;
use std::sync::Arc;

use axum::http::request::Parts;
use serde_json::Value;
use taskledger_domain::ids::{IdempotencyKey, Principal};
use taskledger_domain::trace::TraceContext;
use taskledger_domain::wire::PushProtocol;

use crate::error::AppError;
use crate::identity::Authenticator;
use crate::operations::{Context, Method, Operation, Outcome, TaskEncoding};
use crate::request::{self, ProtocolVersion, EXTENSIONS_HEADER, IDEMPOTENCY_HEADER};
use crate::service::streams::LAST_EVENT_ID;
use crate::service::Service;
use crate::telemetry::Binding;
use crate::v03;

mod routes;
pub use routes::{is_v03_path, rest_route, RestRoute, Source};

/// The protocol line a request speaks: 1.x at a minor version, or A2A 0.3 — with the method
/// as 0.3 names it, since its translation depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    V1(ProtocolVersion),
    V03(v03::jsonrpc::Method03),
}

/// How a binding names a request before any header is read: what tells the lines apart (a
/// JSON-RPC method name of either line, a 1.x route or RPC, a 0.3 one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    V1(Method),
    V03(v03::jsonrpc::Method03),
}

impl Entry {
    /// The entry a JSON-RPC method name is, of either line; a name of neither is
    /// MethodNotFound, whatever version the call says.
    pub fn jsonrpc(name: &str) -> Result<Self, AppError> {
        match v03::jsonrpc::Method03::named(name) {
            Some(m) => Ok(Self::V03(m)),
            None => Method::named(name).map(Self::V1),
        }
    }

    /// The operation it runs.
    pub fn method(self) -> Method {
        match self {
            Self::V1(m) => m,
            Self::V03(m) => m.operation(),
        }
    }

    /// Whether its answer streams (a 0.3 stream carries its errors as an event).
    pub fn streams(self) -> bool {
        match self {
            Self::V1(m) => m.streams(),
            Self::V03(m) => m.streams(),
        }
    }

    /// Whether it is 0.3's.
    pub fn is_v03(self) -> bool {
        matches!(self, Self::V03(_))
    }

    /// The entry of an RPC of the gRPC service `service` (1.x's `lf.a2a.v1.A2AService`, or
    /// 0.3's `a2a.v1.A2AService` beside it on the same port, ADR 031); `None`: no such RPC.
    pub fn grpc(service: &str, rpc: &str) -> Option<Self> {
        match service {
            GRPC_SERVICE_03 => v03::grpc::method_of(rpc).map(Self::V03),
            GRPC_EVENTS_SERVICE => {
                (rpc == "ListTaskEvents").then_some(Self::V1(Method::ListTaskEvents))
            }
            _ => Method::named(rpc).ok().map(Self::V1),
        }
    }
}

/// The gRPC services served: 1.x's, and 0.3's beside it.
pub const GRPC_SERVICE: &str = "lf.a2a.v1.A2AService";
/// A2A 0.3's gRPC service (ADR 031).
pub const GRPC_SERVICE_03: &str = "a2a.v1.A2AService";
/// taskledger's events extension's gRPC service, on the same port (a 1.x entry).
pub const GRPC_EVENTS_SERVICE: &str = "taskledger.events.v1.TaskEvents";
/// A Task result of the 0.3 gRPC service: its `a2a.v1.Task` message.
pub const GRPC_TASK_03: &str = "a2a.v1.Task";

impl Line {
    /// The line an entry speaks once its version was checked (`read`): gRPC reads an RPC's
    /// line for its replies from its route.
    pub fn of(entry: Entry) -> Self {
        match entry {
            Entry::V1(_) => Self::V1(ProtocolVersion::default()),
            Entry::V03(m) => Self::V03(m),
        }
    }

    /// The extension headers read and echoed: 1.x's `A2A-Extensions`, and 0.3's
    /// `X-A2A-Extensions` beside it (clients of either line send either).
    pub const EXTENSION_HEADERS: [&'static str; 2] =
        [EXTENSIONS_HEADER, request::V03_EXTENSIONS_HEADER];

    /// The line of a request entering by `entry` with `A2A-Version` `version`: a 0.3 entry
    /// takes none or `0.x` (0.3 has no header), a 1.x one a served `1.x` (ADR 031).
    pub fn read(entry: Entry, version: Option<&str>) -> Result<Self, AppError> {
        match entry {
            Entry::V03(m) => request::check_v03_version(version).map(|()| Self::V03(m)),
            Entry::V1(_) => request::check_version(version.map(str::to_string)).map(Self::V1),
        }
    }

    /// The 1.x minor the operations layer shapes results for (0.3 is translated from 1.0's).
    pub fn version(self) -> ProtocolVersion {
        match self {
            Self::V1(v) => v,
            Self::V03(_) => ProtocolVersion::default(),
        }
    }

    pub fn is_v03(self) -> bool {
        matches!(self, Self::V03(_))
    }

    /// The 1.x request object of `params` (0.3's JSON-RPC params translated; 1.x's as given).
    pub fn request_in(self, params: Value) -> Result<Value, AppError> {
        match self {
            Self::V1(_) => Ok(params),
            Self::V03(m) => v03::jsonrpc::request(m, &params),
        }
    }

    /// The operation decoded from the 1.x request object, its webhooks registered as the line
    /// writes them.
    pub fn operation(
        self,
        method: Method,
        request: Value,
        root: &str,
    ) -> Result<Operation, AppError> {
        let mut op = Operation::decode(method, request, root)?;
        if self.is_v03() {
            op.deliver_as(PushProtocol::V03);
        }
        Ok(op)
    }

    /// A result as the line's JSON-RPC `result` (a 1.x result is the binding's own writing).
    pub fn result_out(self, outcome: &Outcome) -> Result<Option<Value>, AppError> {
        match self {
            Self::V1(_) => Ok(None),
            Self::V03(m) => v03::jsonrpc::result(m, outcome).map(Some),
        }
    }

    /// A stream event's `StreamResponse` JSON as the line's JSON-RPC `result`.
    pub fn event_out(self, body: &str) -> Cow<'_, str> {
        match self {
            Self::V1(_) => Cow::Borrowed(body),
            Self::V03(m) => Cow::Owned(v03::jsonrpc::stream_event(m, body)),
        }
    }

    /// A gRPC request's ProtoJSON as the 1.x request object (0.3's proto translated).
    pub fn grpc_request_in(self, value: Value) -> Result<Value, AppError> {
        match self {
            Self::V1(_) => Ok(value),
            Self::V03(m) => v03::jsonrpc::request(m, &v03::grpc::params(m, &value)?),
        }
    }

    /// A result as the 0.3 proto's ProtoJSON (`None` on 1.x: the binding writes its own).
    pub fn grpc_result_out(self, outcome: &Outcome) -> Result<Option<Value>, AppError> {
        let Self::V03(m) = self else {
            return Ok(None);
        };
        Ok(Some(match outcome {
            Outcome::Card(card) => v03::grpc::card(&serde_json::to_value(card).map_err(|e| {
                AppError::protocol(
                    taskledger_domain::error::ErrorKind::Internal,
                    format!("cannot serialise the card: {e}"),
                )
            })?),
            outcome => v03::proto_json::answer(m, &v03::jsonrpc::result(m, outcome)?),
        }))
    }

    /// A stream event's `StreamResponse` JSON as the line's gRPC `StreamResponse` ProtoJSON.
    pub fn grpc_event_out(self, body: &str) -> Cow<'_, str> {
        match self {
            Self::V1(_) => Cow::Borrowed(body),
            Self::V03(m) => {
                let rpc03 = v03::jsonrpc::stream_event(m, body);
                Cow::Owned(
                    serde_json::from_str::<Value>(&rpc03)
                        .map(|v| v03::proto_json::response_out(&v).to_string())
                        .unwrap_or(rpc03),
                )
            }
        }
    }

    /// A Task result as the 0.3 gRPC service's `a2a.v1.Task` ProtoJSON (its answers kept while
    /// nothing changes are written so, ADR 026).
    pub fn grpc_task_03(outcome: &Outcome) -> Result<Value, AppError> {
        let rpc = v03::objects::task_out(&outcome.to_value()?);
        Ok(v03::proto_json::task_out(&rpc))
    }

    /// How JSON bindings write a Task result on this line (ADR 026: answers kept in one
    /// writing are never sent in another).
    pub fn json_tasks(self) -> TaskEncoding {
        match self {
            Self::V1(_) => crate::operations::JSON_TASKS,
            Self::V03(_) => v03::jsonrpc::TASK_ENCODING,
        }
    }
}

/// A request as every binding reads it.
#[derive(Debug, Clone)]
pub struct Call {
    pub principal: Principal,
    pub line: Line,
    pub binding: Binding,
    extensions: Vec<String>,
    idempotency: Option<IdempotencyKey>,
    trace: Option<TraceContext>,
    last_event_id: Option<String>,
}

impl Call {
    /// Reads a request entering by `entry` over `binding`: the caller first (an
    /// unauthenticated request learns nothing more), then its line and the rest.
    pub async fn read(
        auth: &dyn Authenticator,
        service: &Service,
        parts: &Parts,
        binding: Binding,
        entry: Entry,
    ) -> Result<Self, AppError> {
        let principal = crate::identity::caller(auth, service, parts).await?;
        Self::of(principal, parts, binding, entry)
    }

    /// The call of an authenticated `principal` (a binding that authenticates before it can
    /// tell the entry, as JSON-RPC before reading its envelope).
    pub fn of(
        principal: Principal,
        parts: &Parts,
        binding: Binding,
        entry: Entry,
    ) -> Result<Self, AppError> {
        let version = request::requested_version(&parts.headers, parts.uri.query());
        let line = Line::read(entry, version.as_deref())?;
        let headers = &parts.headers;
        let values = |name| {
            headers
                .get_all(name)
                .iter()
                .map(|v| v.to_str().unwrap_or("\u{0}"))
                .collect::<Vec<_>>()
        };
        let listed: Vec<&str> = Line::EXTENSION_HEADERS
            .into_iter()
            .flat_map(|name| headers.get_all(name).iter())
            .filter_map(|v| v.to_str().ok())
            .collect();
        let idempotency = headers
            .get(IDEMPOTENCY_HEADER)
            .map(|v| {
                IdempotencyKey::parse(v.to_str().unwrap_or_default())
                    .map_err(|e| AppError::invalid_params(IDEMPOTENCY_HEADER, e))
            })
            .transpose()?;
        Ok(Self {
            principal,
            line,
            binding,
            extensions: request::requested_extensions(&listed),
            idempotency,
            trace: request::trace_context(values("traceparent"), values("tracestate")),
            last_event_id: headers
                .get(LAST_EVENT_ID)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
        })
    }

    /// The operations layer's context for `request` (the object an idempotency key binds to),
    /// its Task results written as `tasks`, the public `card` where the operation reads it.
    pub fn context(
        self,
        request: &Value,
        tasks: TaskEncoding,
        card: Option<Arc<crate::card::PublicCard>>,
    ) -> Context {
        let mut ctx =
            Context::new(self.principal, self.binding).with_idempotency(self.idempotency, request);
        ctx.version = self.line.version();
        ctx.requested_extensions = self.extensions;
        ctx.trace = self.trace;
        ctx.last_event_id = self.last_event_id;
        ctx.task_encoding = Some(tasks);
        ctx.card = card.map(|c| c as Arc<dyn crate::operations::ServedCard>);
        ctx
    }
}

/// A 0.3 HTTP+JSON route (`/v1/…`): its method and the ids its path names.
pub use crate::v03::rest::Route03;

impl Route03 {
    /// The entry a 0.3 route is.
    pub fn entry(&self) -> Entry {
        Entry::V03(self.method)
    }

    /// The 0.3 route a route of the table is, if it is one of 0.3's rows.
    pub fn of(route: &RestRoute) -> Option<Self> {
        let Entry::V03(method) = route.entry else {
            return None;
        };
        Some(Self {
            method,
            tenant: route.tenant.clone(),
            task: route
                .id("id")
                .or_else(|| route.id("taskId"))
                .map(str::to_string),
            config: route.id("configId").map(str::to_string),
        })
    }
}

/// The bodies a webhook receives for an update (the `StreamResponse` JSON `body`), by how its
/// config was registered: 1.x's the update as it is, 0.3's the Task (0.3 JSON) the update
/// leaves (`status`: the task's status after it); `None` where 0.3's cannot be written.
pub fn push_body<'a>(
    protocol: PushProtocol,
    body: &'a str,
    status: &Value,
) -> Option<Cow<'a, str>> {
    match protocol {
        PushProtocol::V1 => Some(Cow::Borrowed(body)),
        PushProtocol::V03 => v03::push::task_body(body, status).map(Cow::Owned),
    }
}

/// The card as a fetcher of each line reads it: the 1.0 card with 0.3's fields merged in (a
/// fetch with no version or a `0.x` one), or as it is (`1.x`; ADR 031).
pub fn card_body(shape: request::CardShape, card: &taskledger_domain::wire::AgentCard) -> Value {
    match shape {
        request::CardShape::Merged => v03::card::merged(card),
        request::CardShape::Pure => serde_json::to_value(card).unwrap_or_default(),
    }
}
