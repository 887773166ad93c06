//! `lf.a2a.v1.A2AService` on the operations layer: each RPC authenticates the caller, checks
//! the protocol version, transcodes its request into ProtoJSON, and hands it to the same
//! `Operation::decode` and `operations::execute` as JSON-RPC; the outcome is transcoded back.

use std::pin::Pin;
use std::sync::Arc;

use futures_util::StreamExt;
use taskledger_domain::error::{ErrorKind, ErrorTable};
use taskledger_domain::ids::IdempotencyKey;
use tonic::codegen::tokio_stream::Stream;
use tonic::metadata::MetadataMap;
use tonic::{Request, Response, Status};
use tracing::{info_span, Instrument};

use super::convert;
use super::errors::status;
use super::proto::{self, a2a_service_server::A2aService};
use crate::error::AppError;
use crate::identity::Authenticator;
use crate::operations::{self, Context, Method, Operation, Outcome, Reply};
use crate::request::{self, EXTENSIONS_HEADER, VERSION_HEADER};
use crate::service::Service;

/// gRPC metadata key echoing the extensions active for a call (`A2A-Extensions`).
pub const EXTENSIONS_METADATA: &str = "a2a-extensions";

/// gRPC metadata key a SubscribeToTask call resumes after (the `Last-Event-ID` header).
pub const LAST_EVENT_ID_METADATA: &str = "last-event-id";

/// gRPC metadata key making task creation safe to retry (the `Idempotency-Key` header).
pub const IDEMPOTENCY_METADATA: &str = "idempotency-key";

/// The gRPC binding: the service it translates onto and who may call it.
#[derive(Clone)]
pub struct A2aGrpc {
    service: Arc<Service>,
    auth: Arc<dyn Authenticator>,
    table: ErrorTable,
}

fn metadata_text<'a>(metadata: &'a MetadataMap, key: &str) -> Option<&'a str> {
    metadata.get(key).and_then(|v| v.to_str().ok())
}

impl A2aGrpc {
    pub fn new(service: Arc<Service>, auth: Arc<dyn Authenticator>) -> Self {
        Self {
            service,
            auth,
            table: ErrorTable::default(),
        }
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
    fn begin(&self, metadata: &MetadataMap) -> Result<Context, AppError> {
        let (mut parts, ()) = axum::http::Request::new(()).into_parts();
        parts.headers = metadata.clone().into_headers();
        let who = self
            .auth
            .authenticate(&parts)
            .map_err(|e| AppError::protocol(ErrorKind::Unauthenticated, e.to_string()))?;
        let version = metadata_text(metadata, &VERSION_HEADER.to_ascii_lowercase())
            .map(|v| v.trim().to_string());
        let version = request::check_version(version)?;
        let listed: Vec<&str> = metadata
            .get_all(EXTENSIONS_HEADER.to_ascii_lowercase().as_str())
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        let mut ctx = Context::new(who);
        ctx.requested_extensions = request::requested_extensions(&listed);
        ctx.last_event_id = metadata_text(metadata, LAST_EVENT_ID_METADATA).map(str::to_string);
        ctx.version = version;
        Ok(ctx)
    }

    fn idempotency_key(metadata: &MetadataMap) -> Result<Option<IdempotencyKey>, AppError> {
        metadata_text(metadata, IDEMPOTENCY_METADATA)
            .map(|raw| {
                IdempotencyKey::parse(raw)
                    .map_err(|e| AppError::invalid_params(IDEMPOTENCY_METADATA, e))
            })
            .transpose()
    }

    /// One RPC through the operations layer: the call's checks, the request as ProtoJSON
    /// decoded into the method's typed request, the operation, the reply.
    async fn run<P>(&self, method: Method, request: Request<P>) -> Result<Reply, Status>
    where
        P: prost::Message + prost::Name,
    {
        let ctx = self.begin(request.metadata()).map_err(|e| self.fail(&e))?;
        let span = info_span!(
            "grpc",
            method = method.name(),
            principal = %ctx.principal,
            task_id = tracing::field::Empty
        );
        async {
            let value = convert::to_protojson(request.get_ref())?;
            let key = Self::idempotency_key(request.metadata())?;
            let ctx = ctx.with_idempotency(key, &value);
            let op = Operation::decode(method, value, convert::REQUEST_ROOT)?;
            operations::execute(&self.service, ctx, op).await
        }
        .instrument(span)
        .await
        .map_err(|e| self.fail(&e))
    }

    /// One unary RPC whose outcome is transcoded into the response message `O`, the active
    /// extensions echoed in `a2a-extensions`.
    async fn unary<P, O>(&self, method: Method, request: Request<P>) -> Result<Response<O>, Status>
    where
        P: prost::Message + prost::Name,
        O: prost::Message + prost::Name + Default,
    {
        let reply = self.run(method, request).await?;
        let message = reply
            .outcome
            .to_value()
            .and_then(convert::from_protojson)
            .map_err(|e| self.fail(&e))?;
        let mut response = Response::new(message);
        if let Some(v) = reply.extensions.header().and_then(|h| h.parse().ok()) {
            response.metadata_mut().insert(EXTENSIONS_METADATA, v);
        }
        Ok(response)
    }

    /// One server-streaming RPC: each event's `StreamResponse` JSON transcoded into the
    /// message, the active extensions echoed in `a2a-extensions`.
    async fn stream<P>(
        &self,
        method: Method,
        request: Request<P>,
    ) -> Result<Response<StreamOf<proto::StreamResponse>>, Status>
    where
        P: prost::Message + prost::Name,
    {
        let reply = self.run(method, request).await?;
        let Outcome::Stream(events) = reply.outcome else {
            let e = AppError::protocol(ErrorKind::Internal, "a streaming call got no stream");
            return Err(self.fail(&e));
        };
        let table = self.table;
        let messages = events.map(move |event| {
            serde_json::from_str::<serde_json::Value>(&event.body)
                .map_err(|e| {
                    AppError::protocol(ErrorKind::Internal, format!("a stored update: {e}"))
                })
                .and_then(convert::from_protojson)
                .map_err(|e| status(&e, table))
        });
        let mut response = Response::new(Box::pin(messages) as StreamOf<proto::StreamResponse>);
        if let Some(v) = reply.extensions.header().and_then(|h| h.parse().ok()) {
            response.metadata_mut().insert(EXTENSIONS_METADATA, v);
        }
        Ok(response)
    }
}

type StreamOf<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl A2aService for A2aGrpc {
    async fn send_message(
        &self,
        request: Request<proto::SendMessageRequest>,
    ) -> Result<Response<proto::SendMessageResponse>, Status> {
        self.unary(Method::SendMessage, request).await
    }

    type SendStreamingMessageStream = StreamOf<proto::StreamResponse>;

    async fn send_streaming_message(
        &self,
        request: Request<proto::SendMessageRequest>,
    ) -> Result<Response<Self::SendStreamingMessageStream>, Status> {
        self.stream(Method::SendStreamingMessage, request).await
    }

    async fn get_task(
        &self,
        request: Request<proto::GetTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        self.unary(Method::GetTask, request).await
    }

    async fn list_tasks(
        &self,
        request: Request<proto::ListTasksRequest>,
    ) -> Result<Response<proto::ListTasksResponse>, Status> {
        self.unary(Method::ListTasks, request).await
    }

    async fn cancel_task(
        &self,
        request: Request<proto::CancelTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        self.unary(Method::CancelTask, request).await
    }

    type SubscribeToTaskStream = StreamOf<proto::StreamResponse>;

    async fn subscribe_to_task(
        &self,
        request: Request<proto::SubscribeToTaskRequest>,
    ) -> Result<Response<Self::SubscribeToTaskStream>, Status> {
        self.stream(Method::SubscribeToTask, request).await
    }

    async fn create_task_push_notification_config(
        &self,
        request: Request<proto::TaskPushNotificationConfig>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        self.unary(Method::CreateTaskPushNotificationConfig, request)
            .await
    }

    async fn get_task_push_notification_config(
        &self,
        request: Request<proto::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        self.unary(Method::GetTaskPushNotificationConfig, request)
            .await
    }

    async fn list_task_push_notification_configs(
        &self,
        request: Request<proto::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<proto::ListTaskPushNotificationConfigsResponse>, Status> {
        self.unary(Method::ListTaskPushNotificationConfigs, request)
            .await
    }

    async fn get_extended_agent_card(
        &self,
        request: Request<proto::GetExtendedAgentCardRequest>,
    ) -> Result<Response<proto::AgentCard>, Status> {
        self.unary(Method::GetExtendedAgentCard, request).await
    }

    async fn delete_task_push_notification_config(
        &self,
        request: Request<proto::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<()>, Status> {
        self.run(Method::DeleteTaskPushNotificationConfig, request)
            .await?;
        Ok(Response::new(()))
    }
}
