//! `lf.a2a.v1.A2AService` on the operations layer: each RPC (routed by `routes`) reads its
//! request's bytes as ProtoJSON, authenticates the caller, checks the protocol version, and
//! hands the request to the same `Operation::decode` and `operations::execute` as JSON-RPC; the
//! outcome is written back as the reply's bytes.

use std::pin::Pin;
use std::sync::Arc;

use prost::bytes::Bytes;

use futures_util::StreamExt;
use taskledger_domain::error::{ErrorKind, ErrorTable};
use tonic::codegen::tokio_stream::Stream;
use tonic::metadata::MetadataMap;
use tonic::{Request, Response, Status};

use super::convert;
use super::errors::status;
use super::routes::Rpc;
use crate::call::{Call, Entry, Line, GRPC_TASK_03};
use crate::error::AppError;
use crate::identity::Authenticator;
use crate::operations::{self, Method, Operation, Outcome, Reply, TaskEncoding};
use crate::service::Service;

/// gRPC metadata key echoing the extensions active for a call (`A2A-Extensions`).
pub const EXTENSIONS_METADATA: &str = "a2a-extensions";
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
    encode: |outcome| convert::protojson_to_bytes(GRPC_TASK_03, &Line::grpc_task_03(outcome)?),
};

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

    /// The call (the front door, `Call`: gRPC metadata read as the headers it stands for —
    /// `authorization`, `a2a-version`, `a2a-extensions`, `idempotency-key`, `last-event-id`,
    /// `traceparent`), and the metadata back.
    async fn begin(
        &self,
        metadata: MetadataMap,
        entry: Entry,
    ) -> Result<(Call, MetadataMap), AppError> {
        let (mut parts, ()) = axum::http::Request::new(()).into_parts();
        parts.headers = metadata.into_headers();
        let call = Call::read(
            self.auth.as_ref(),
            &self.service,
            &parts,
            crate::telemetry::Binding::Grpc,
            entry,
        )
        .await?;
        Ok((call, MetadataMap::from_headers(parts.headers)))
    }

    /// One RPC through the operations layer: the request's bytes read as ProtoJSON (a
    /// malformed message is INTERNAL, before any other check, as tonic's prost codec answers
    /// it), the call's checks, the ProtoJSON decoded into the method's typed request, the
    /// operation, the reply.
    async fn run(&self, rpc: &Rpc, request: Request<Bytes>) -> Result<Reply, Status> {
        let (metadata, _, body) = request.into_parts();
        let value = convert::bytes_to_protojson(&rpc.input, body)
            .map_err(|e| Status::internal(e.to_string()))?;
        let (call, metadata) = self
            .begin(metadata, rpc.entry)
            .await
            .map_err(|e| self.fail(&e))?;
        let method = rpc.method;
        let line = call.line;
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
            let value = line.grpc_request_in(value)?;
            let tasks = if line.is_v03() {
                V03_TASKS
            } else {
                PROTOBUF_TASKS
            };
            let ctx = call.context(&value, tasks, self.card.clone());
            let op = line.operation(method, value, convert::REQUEST_ROOT)?;
            // 0.3's GetAgentCard answers with the public card where there is no extended one.
            if let (true, Operation::GetExtendedAgentCard, Some(card)) =
                (line.is_v03(), &op, &ctx.card)
            {
                if card.card().capabilities.extended_agent_card != Some(true) {
                    return Ok(Reply {
                        outcome: Outcome::Card(Box::new(card.card().clone())),
                        extensions: Default::default(),
                    });
                }
            }
            operations::execute(&self.service, ctx, op).await
        }
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
        let line = rpc.entry;
        let message = match &reply.outcome {
            Outcome::Encoded(bytes) => bytes.to_vec(),
            outcome => match Line::of(line).grpc_result_out(outcome) {
                Ok(Some(value)) => convert::protojson_to_bytes(&rpc.output, &value),
                Ok(None) => convert::reply_to_bytes(&rpc.output, outcome),
                Err(e) => Err(e),
            }
            .map_err(|e| self.fail(&e))?,
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
        let line = Line::of(rpc.entry);
        let messages = events.map(move |event| {
            let body = line.grpc_event_out(&event.body);
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

/// The extensions active for a call, in every extension key a line reads
/// (`Line::EXTENSION_HEADERS`, lower-cased as metadata keys are).
fn echo_extensions(
    metadata: &mut tonic::metadata::MetadataMap,
    active: &crate::operations::Extensions,
) {
    if let Some(v) = active
        .header()
        .and_then(|h| h.parse::<tonic::metadata::MetadataValue<_>>().ok())
    {
        for name in Line::EXTENSION_HEADERS {
            if let Ok(key) =
                tonic::metadata::MetadataKey::from_bytes(name.to_ascii_lowercase().as_bytes())
            {
                metadata.insert(key, v.clone());
            }
        }
    }
}

type StreamOf<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_keys_are_the_headers_lower_cased() {
        use crate::request::{EXTENSIONS_HEADER, IDEMPOTENCY_HEADER, VERSION_HEADER};
        use crate::service::streams::LAST_EVENT_ID;
        assert_eq!(VERSION_METADATA, VERSION_HEADER.to_ascii_lowercase());
        assert_eq!(EXTENSIONS_METADATA, EXTENSIONS_HEADER.to_ascii_lowercase());
        assert_eq!(
            IDEMPOTENCY_METADATA,
            IDEMPOTENCY_HEADER.to_ascii_lowercase()
        );
        assert_eq!(LAST_EVENT_ID_METADATA, LAST_EVENT_ID.to_ascii_lowercase());
    }
}
