//! `lf.a2a.v1.A2AService` on the command service: each RPC authenticates the caller, checks
//! the protocol version, transcodes its request into the wire type JSON-RPC decodes, and calls
//! the same `Service` method as the JSON-RPC dispatch; the result is transcoded back.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use taskledger_domain::error::ErrorKind;
use taskledger_domain::ids::{IdempotencyKey, Principal};
use taskledger_domain::intake::json_fingerprint;
use taskledger_domain::wire;
use tonic::codegen::tokio_stream::Stream;
use tonic::metadata::MetadataMap;
use tonic::{Request, Response, Status};
use tracing::{info_span, Instrument};

use super::convert;
use super::errors::status;
use super::proto::{self, a2a_service_server::A2aService};
use crate::error::AppError;
use crate::identity::Authenticator;
use crate::request::{self, EXTENSIONS_HEADER, VERSION_HEADER};
use crate::service::Service;

/// gRPC metadata key making task creation safe to retry (the `Idempotency-Key` header).
pub const IDEMPOTENCY_METADATA: &str = "idempotency-key";

/// The gRPC binding: the service it translates onto and who may call it.
#[derive(Clone)]
pub struct A2aGrpc {
    service: Arc<Service>,
    auth: Arc<dyn Authenticator>,
}

/// What a call carries besides its message, read before the method runs.
struct Call {
    who: Principal,
    idempotency: Option<IdempotencyKey>,
}

fn metadata_text<'a>(metadata: &'a MetadataMap, key: &str) -> Option<&'a str> {
    metadata.get(key).and_then(|v| v.to_str().ok())
}

impl A2aGrpc {
    pub fn new(service: Arc<Service>, auth: Arc<dyn Authenticator>) -> Self {
        Self { service, auth }
    }

    /// The caller (through the `Authenticator` the HTTP bindings use, reading `authorization`
    /// metadata as the header), then `a2a-version`, `a2a-extensions` and `idempotency-key`.
    fn begin(&self, metadata: &MetadataMap) -> Result<Call, AppError> {
        let (mut parts, ()) = axum::http::Request::new(()).into_parts();
        parts.headers = metadata.clone().into_headers();
        let who = self
            .auth
            .authenticate(&parts)
            .map_err(|e| AppError::protocol(ErrorKind::Unauthenticated, e.to_string()))?;
        let version = metadata_text(metadata, &VERSION_HEADER.to_ascii_lowercase())
            .map(|v| v.trim().to_string());
        request::check_version(version)?;
        let listed: Vec<&str> = metadata
            .get_all(EXTENSIONS_HEADER.to_ascii_lowercase().as_str())
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        let extensions = request::requested_extensions(&listed);
        if !extensions.is_empty() {
            tracing::debug!(?extensions, "extensions requested");
        }
        let idempotency = metadata_text(metadata, IDEMPOTENCY_METADATA)
            .map(|raw| {
                IdempotencyKey::parse(raw)
                    .map_err(|e| AppError::invalid_params(IDEMPOTENCY_METADATA, e))
            })
            .transpose()?;
        Ok(Call { who, idempotency })
    }

    /// One RPC up to the domain result: the call's checks, the request as the wire type `T`,
    /// the service method.
    async fn call<P, T, R, F, Fut>(
        &self,
        method: &'static str,
        request: Request<P>,
        run: F,
    ) -> Result<R, Status>
    where
        P: prost::Message + prost::Name,
        T: DeserializeOwned,
        F: FnOnce(Arc<Service>, Principal, T, Option<(IdempotencyKey, String)>) -> Fut,
        Fut: Future<Output = Result<R, AppError>>,
    {
        let call = self.begin(request.metadata())?;
        let span = info_span!(
            "grpc",
            method,
            principal = %call.who,
            task_id = tracing::field::Empty
        );
        async {
            let (typed, value): (T, Value) = convert::request(request.get_ref())?;
            let idempotency = call.idempotency.map(|k| (k, json_fingerprint(&value)));
            run(self.service.clone(), call.who, typed, idempotency).await
        }
        .instrument(span)
        .await
        .map_err(|e| status(&e))
    }

    /// One unary RPC whose result is transcoded into the response message `O`.
    async fn unary<P, T, R, O, F, Fut>(
        &self,
        method: &'static str,
        request: Request<P>,
        run: F,
    ) -> Result<Response<O>, Status>
    where
        P: prost::Message + prost::Name,
        T: DeserializeOwned,
        R: Serialize,
        O: prost::Message + prost::Name + Default,
        F: FnOnce(Arc<Service>, Principal, T, Option<(IdempotencyKey, String)>) -> Fut,
        Fut: Future<Output = Result<R, AppError>>,
    {
        let result = self.call(method, request, run).await?;
        Ok(Response::new(convert::response(&result)?))
    }
}

type StreamOf<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl A2aService for A2aGrpc {
    async fn send_message(
        &self,
        request: Request<proto::SendMessageRequest>,
    ) -> Result<Response<proto::SendMessageResponse>, Status> {
        self.unary(
            "SendMessage",
            request,
            |svc, who, req: wire::SendMessageRequest, idem| async move {
                svc.send_message(&who, req, idem).await
            },
        )
        .await
    }

    type SendStreamingMessageStream = StreamOf<proto::StreamResponse>;

    async fn send_streaming_message(
        &self,
        request: Request<proto::SendMessageRequest>,
    ) -> Result<Response<Self::SendStreamingMessageStream>, Status> {
        self.begin(request.metadata())?;
        Err(status(&request::streaming_unsupported(
            "SendStreamingMessage",
        )))
    }

    async fn get_task(
        &self,
        request: Request<proto::GetTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        self.unary(
            "GetTask",
            request,
            |svc, who, req: wire::GetTaskRequest, _| async move { svc.get_task(&who, req).await },
        )
        .await
    }

    async fn list_tasks(
        &self,
        request: Request<proto::ListTasksRequest>,
    ) -> Result<Response<proto::ListTasksResponse>, Status> {
        self.unary(
            "ListTasks",
            request,
            |svc, who, req: wire::ListTasksRequest, _| async move {
                svc.list_tasks(&who, req).await
            },
        )
        .await
    }

    async fn cancel_task(
        &self,
        request: Request<proto::CancelTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        self.unary(
            "CancelTask",
            request,
            |svc, who, req: wire::CancelTaskRequest, _| async move {
                svc.cancel_task(&who, req).await
            },
        )
        .await
    }

    type SubscribeToTaskStream = StreamOf<proto::StreamResponse>;

    async fn subscribe_to_task(
        &self,
        request: Request<proto::SubscribeToTaskRequest>,
    ) -> Result<Response<Self::SubscribeToTaskStream>, Status> {
        self.begin(request.metadata())?;
        Err(status(&request::streaming_unsupported("SubscribeToTask")))
    }

    async fn create_task_push_notification_config(
        &self,
        request: Request<proto::TaskPushNotificationConfig>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        self.unary(
            "CreateTaskPushNotificationConfig",
            request,
            |svc, who, req: wire::TaskPushNotificationConfig, _| async move {
                svc.create_push_config(&who, req).await
            },
        )
        .await
    }

    async fn get_task_push_notification_config(
        &self,
        request: Request<proto::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        self.unary(
            "GetTaskPushNotificationConfig",
            request,
            |svc, who, req: wire::TaskPushNotificationConfigRef, _| async move {
                svc.get_push_config(&who, req).await
            },
        )
        .await
    }

    async fn list_task_push_notification_configs(
        &self,
        request: Request<proto::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<proto::ListTaskPushNotificationConfigsResponse>, Status> {
        self.unary(
            "ListTaskPushNotificationConfigs",
            request,
            |svc, who, req: wire::ListTaskPushNotificationConfigsRequest, _| async move {
                svc.list_push_configs(&who, req).await
            },
        )
        .await
    }

    async fn get_extended_agent_card(
        &self,
        request: Request<proto::GetExtendedAgentCardRequest>,
    ) -> Result<Response<proto::AgentCard>, Status> {
        self.begin(request.metadata())?;
        Err(status(&request::extended_card_unsupported()))
    }

    async fn delete_task_push_notification_config(
        &self,
        request: Request<proto::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<()>, Status> {
        self.call(
            "DeleteTaskPushNotificationConfig",
            request,
            |svc, who, req: wire::TaskPushNotificationConfigRef, _| async move {
                svc.delete_push_config(&who, req).await
            },
        )
        .await?;
        Ok(Response::new(()))
    }
}
