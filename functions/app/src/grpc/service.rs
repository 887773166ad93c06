//! `lf.a2a.v1.A2AService` on the operations layer: each RPC (routed by `routes`) reads its
//! request's bytes as ProtoJSON, authenticates the caller, checks the protocol version, and
//! hands the request to the same `Operation::decode` and `operations::execute` as JSON-RPC; the
//! outcome is written back as the reply's bytes.

use std::pin::Pin;
use std::sync::Arc;

use prost::bytes::Bytes;

use futures_util::StreamExt;
use taskledger_domain::error::{ErrorKind, ErrorTable};
use taskledger_domain::ids::IdempotencyKey;
use tonic::codegen::tokio_stream::Stream;
use tonic::metadata::MetadataMap;
use tonic::{Request, Response, Status};
use tracing::{info_span, Instrument};

use super::convert;
use super::errors::status;
use super::routes::Rpc;
use crate::error::AppError;
use crate::identity::Authenticator;
use crate::operations::{self, Context, Method, Operation, Outcome, Reply, TaskEncoding};
use crate::request;
use crate::service::Service;
use crate::v03;
use taskledger_domain::wire::PushProtocol;

/// gRPC metadata key echoing the extensions active for a call (`A2A-Extensions`).
pub const EXTENSIONS_METADATA: &str = "a2a-extensions";
/// A2A 0.3's key for it (`X-A2A-Extensions`), read and echoed beside it.
pub const V03_EXTENSIONS_METADATA: &str = "x-a2a-extensions";
/// gRPC metadata key of the protocol version a client speaks (`A2A-Version`).
pub const VERSION_METADATA: &str = "a2a-version";

/// gRPC metadata key a SubscribeToTask call resumes after (the `Last-Event-ID` header).
pub const LAST_EVENT_ID_METADATA: &str = "last-event-id";

/// gRPC metadata key carrying ListTasks' sharing filter (`owned`, `shared`; ADR 021): the
/// proto's request has no field for it.
pub const SCOPE_METADATA: &str = "taskledger-scope";
/// gRPC metadata key making task creation safe to retry (the `Idempotency-Key` header).
pub const IDEMPOTENCY_METADATA: &str = "idempotency-key";

/// How gRPC writes a Task result: the `lf.a2a.v1.Task` message's bytes.
const PROTOBUF_TASKS: TaskEncoding = TaskEncoding {
    id: 1,
    encode: |outcome| convert::reply_to_bytes(convert::TASK_MESSAGE, outcome),
};

/// How the 0.3 service writes a Task result: the `a2a.v1.Task` message's bytes.
const V03_TASKS: TaskEncoding = TaskEncoding {
    id: 3,
    encode: |outcome| {
        let rpc = v03::objects::task_out(&outcome.to_value()?);
        convert::protojson_to_bytes(V03_TASK_MESSAGE, &v03::proto_json::task_out(&rpc))
    },
};
/// The 0.3 proto's Task.
const V03_TASK_MESSAGE: &str = "a2a.v1.Task";

/// The gRPC binding: the service it translates onto and who may call it.
#[derive(Clone)]
pub struct A2aGrpc {
    service: Arc<Service>,
    auth: Arc<dyn Authenticator>,
    table: ErrorTable,
    /// The public card (GetExtendedAgentCard extends it for the caller).
    card: Option<Arc<crate::card::PublicCard>>,
}

fn metadata_text<'a>(metadata: &'a MetadataMap, key: &str) -> Option<&'a str> {
    metadata.get(key).and_then(|v| v.to_str().ok())
}

impl A2aGrpc {
    pub fn new(service: Arc<Service>, auth: Arc<dyn Authenticator>) -> Self {
        // The descriptor tables are built from the compiled-in proto here, at start-up, so
        // their invariant checks never run first inside a request.
        super::routes::rpcs();
        Self {
            service,
            auth,
            table: ErrorTable::default(),
            card: None,
        }
    }

    /// The public card this server publishes (none: GetExtendedAgentCard is unsupported).
    pub fn with_card(mut self, card: crate::card::PublicCard) -> Self {
        self.card = Some(Arc::new(card));
        self
    }

    /// Answers with the codes of table revision `table` (1.0.1 unless set).
    pub fn with_error_table(mut self, table: ErrorTable) -> Self {
        self.table = table;
        self
    }

    fn fail(&self, e: &AppError) -> Status {
        status(e, self.table)
    }

    /// The caller (through the `Authenticator` the HTTP bindings use, reading `authorization`
    /// metadata as the header), `a2a-version`, and the context: `a2a-extensions`,
    /// `idempotency-key`.
    async fn begin(
        &self,
        metadata: MetadataMap,
        v03: bool,
    ) -> Result<(Context, MetadataMap), AppError> {
        let (mut parts, ()) = axum::http::Request::new(()).into_parts();
        parts.headers = metadata.into_headers();
        let who = crate::identity::caller(self.auth.as_ref(), &self.service, &parts).await?;
        let owned = MetadataMap::from_headers(parts.headers);
        let metadata = &owned;
        let version = metadata_text(metadata, VERSION_METADATA).map(|v| v.trim().to_string());
        // The 0.3 service is 0.3 whatever it is called with: none or 0.x (ADR 031).
        let version = if v03 {
            request::check_v03_version(version.as_deref())?;
            Default::default()
        } else {
            request::check_version(version)?
        };
        let listed: Vec<&str> = [EXTENSIONS_METADATA, V03_EXTENSIONS_METADATA]
            .into_iter()
            .flat_map(|key| metadata.get_all(key).iter())
            .filter_map(|v| v.to_str().ok())
            .collect();
        let mut ctx = Context::new(who, crate::telemetry::Binding::Grpc);
        ctx.trace = trace_context(metadata);
        ctx.requested_extensions = request::requested_extensions(&listed);
        ctx.last_event_id = metadata_text(metadata, LAST_EVENT_ID_METADATA).map(str::to_string);
        ctx.version = version;
        ctx.card = self.card.clone();
        ctx.task_encoding = Some(if v03 { V03_TASKS } else { PROTOBUF_TASKS });
        Ok((ctx, owned))
    }

    fn idempotency_key(metadata: &MetadataMap) -> Result<Option<IdempotencyKey>, AppError> {
        metadata_text(metadata, IDEMPOTENCY_METADATA)
            .map(|raw| {
                IdempotencyKey::parse(raw)
                    .map_err(|e| AppError::invalid_params(IDEMPOTENCY_METADATA, e))
            })
            .transpose()
    }

    /// One RPC through the operations layer: the request's bytes read as ProtoJSON (a
    /// malformed message is INTERNAL, before any other check, as tonic's prost codec answers
    /// it), the call's checks, the ProtoJSON decoded into the method's typed request, the
    /// operation, the reply.
    async fn run(&self, rpc: &Rpc, request: Request<Bytes>) -> Result<Reply, Status> {
        let (metadata, _, body) = request.into_parts();
        let value = convert::bytes_to_protojson(&rpc.input, body)
            .map_err(|e| Status::internal(e.to_string()))?;
        let (ctx, metadata) = self
            .begin(metadata, rpc.v03.is_some())
            .await
            .map_err(|e| self.fail(&e))?;
        let method = rpc.method;
        let span = info_span!(
            "grpc",
            method = method.name(),
            principal = %ctx.principal,
            task_id = tracing::field::Empty
        );
        async {
            let mut value = value?;
            if method == Method::ListTasks {
                if let (Some(scope), Some(obj)) = (
                    metadata_text(&metadata, SCOPE_METADATA),
                    value.as_object_mut(),
                ) {
                    obj.insert("scope".into(), scope.into());
                }
            }
            if let Some(m03) = rpc.v03 {
                value = v03::jsonrpc::request(m03, &v03::grpc::params(m03, &value)?)?;
            }
            let key = Self::idempotency_key(&metadata)?;
            let ctx = ctx.with_idempotency(key, &value);
            let mut op = Operation::decode(method, value, convert::REQUEST_ROOT)?;
            if rpc.v03.is_some() {
                op.deliver_as(PushProtocol::V03);
                // 0.3's GetAgentCard answers with the public card where there is no extended one.
                if let (Operation::GetExtendedAgentCard, Some(card)) = (&op, &ctx.card) {
                    if card.card.capabilities.extended_agent_card != Some(true) {
                        return Ok(Reply {
                            outcome: Outcome::Card(Box::new(card.card.clone())),
                            extensions: Default::default(),
                        });
                    }
                }
            }
            operations::execute(&self.service, ctx, op).await
        }
        .instrument(span)
        .await
        .map_err(|e| self.fail(&e))
    }

    /// One unary RPC: the outcome written as the output type's bytes, the active extensions
    /// echoed in `a2a-extensions` (not on a delete, whose reply is `Empty`).
    pub(super) async fn unary(
        &self,
        rpc: &Rpc,
        request: Request<Bytes>,
    ) -> Result<Response<Vec<u8>>, Status> {
        let reply = self.run(rpc, request).await?;
        if rpc.method == Method::DeleteTaskPushNotificationConfig {
            return Ok(Response::new(Vec::new()));
        }
        let message = match (&reply.outcome, rpc.v03) {
            (Outcome::Encoded(bytes), _) => bytes.to_vec(),
            (outcome, Some(m03)) => {
                v03_reply(m03, &rpc.output, outcome).map_err(|e| self.fail(&e))?
            }
            (outcome, None) => {
                convert::reply_to_bytes(&rpc.output, outcome).map_err(|e| self.fail(&e))?
            }
        };
        let mut response = Response::new(message);
        echo_extensions(response.metadata_mut(), &reply.extensions);
        Ok(response)
    }

    /// One server-streaming RPC: each event's `StreamResponse` JSON written as the message's
    /// bytes, the active extensions echoed in `a2a-extensions`.
    pub(super) async fn stream(
        &self,
        rpc: &'static Rpc,
        request: Request<Bytes>,
    ) -> Result<Response<StreamOf<Vec<u8>>>, Status> {
        let reply = self.run(rpc, request).await?;
        let Outcome::Stream(events) = reply.outcome else {
            let e = AppError::protocol(ErrorKind::Internal, "a streaming call got no stream");
            return Err(self.fail(&e));
        };
        let table = self.table;
        let messages = events.map(move |event| {
            let body = match rpc.v03 {
                Some(m03) => {
                    let rpc03 = v03::jsonrpc::stream_event(m03, &event.body);
                    serde_json::from_str::<serde_json::Value>(&rpc03)
                        .map(|v| v03::proto_json::response_out(&v).to_string())
                        .unwrap_or(rpc03)
                }
                None => event.body.to_string(),
            };
            serde_json::from_str::<serde_json::Value>(&body)
                .map_err(|e| {
                    AppError::protocol(ErrorKind::Internal, format!("a stored update: {e}"))
                })
                .and_then(|v| convert::protojson_to_bytes(&rpc.output, &v))
                .map_err(|e| status(&e, table))
        });
        let mut response = Response::new(Box::pin(messages) as StreamOf<Vec<u8>>);
        echo_extensions(response.metadata_mut(), &reply.extensions);
        Ok(response)
    }
}

/// A 0.3 RPC's reply: the JSON-RPC translation's result as the 0.3 proto's `output`.
fn v03_reply(
    method: v03::jsonrpc::Method03,
    output: &str,
    outcome: &Outcome,
) -> Result<Vec<u8>, AppError> {
    let value = match outcome {
        Outcome::Card(card) => v03::grpc::card(&serde_json::to_value(card).map_err(|e| {
            AppError::protocol(
                ErrorKind::Internal,
                format!("cannot serialise the card: {e}"),
            )
        })?),
        outcome => v03::proto_json::answer(method, &v03::jsonrpc::result(method, outcome)?),
    };
    convert::protojson_to_bytes(output, &value)
}

/// The extensions active for a call, in `a2a-extensions` and 0.3's `x-a2a-extensions`.
fn echo_extensions(
    metadata: &mut tonic::metadata::MetadataMap,
    active: &crate::operations::Extensions,
) {
    if let Some(v) = active
        .header()
        .and_then(|h| h.parse::<tonic::metadata::MetadataValue<_>>().ok())
    {
        metadata.insert(V03_EXTENSIONS_METADATA, v.clone());
        metadata.insert(EXTENSIONS_METADATA, v);
    }
}

type StreamOf<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// The caller's W3C trace context from gRPC metadata (`request::trace_context`).
fn trace_context(metadata: &MetadataMap) -> Option<taskledger_domain::trace::TraceContext> {
    let values = |key| {
        metadata
            .get_all(key)
            .iter()
            .map(|v| v.to_str().unwrap_or("\u{0}"))
            .collect::<Vec<_>>()
    };
    request::trace_context(values("traceparent"), values("tracestate"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_keys_are_the_headers_lower_cased() {
        use crate::request::{EXTENSIONS_HEADER, VERSION_HEADER};
        assert_eq!(VERSION_METADATA, VERSION_HEADER.to_ascii_lowercase());
        assert_eq!(EXTENSIONS_METADATA, EXTENSIONS_HEADER.to_ascii_lowercase());
    }
}
