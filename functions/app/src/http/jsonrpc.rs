//! The JSON-RPC 2.0 binding: envelope checks, the protocol version, the idempotency key, then
//! each method's params decoded into its typed request and handed to the service. HTTP status
//! and error codes come from the one error table (`ErrorKind::wire`).

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use taskledger_domain::error::{ErrorKind, ERROR_DOMAIN};
use taskledger_domain::ids::{IdempotencyKey, Principal};
use taskledger_domain::intake::json_fingerprint;
use taskledger_domain::wire::{
    CancelTaskRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest, ListTasksRequest,
    SendMessageRequest, TaskPushNotificationConfig, TaskPushNotificationConfigRef,
};
use tracing::{debug, error, info_span, Instrument};

use super::{AppState, IDEMPOTENCY_HEADER, MAX_BODY_BYTES, VERSION_HEADER};
use crate::error::AppError;
use crate::request;

/// A JSON-RPC error reply. Errors of a method travel with HTTP 200, as JSON-RPC responses do;
/// a request refused before it is read as JSON-RPC (too large, not authenticated) travels with
/// its kind's HTTP status from the error table.
struct RpcFailure {
    id: Value,
    before_rpc: bool,
    error: AppError,
}

impl RpcFailure {
    fn status(&self) -> StatusCode {
        if !self.before_rpc {
            return StatusCode::OK;
        }
        StatusCode::from_u16(self.error.kind().wire().http).unwrap_or(StatusCode::BAD_REQUEST)
    }
}

fn error_body(id: &Value, e: &AppError) -> Value {
    let kind = e.kind();
    let wire = kind.wire();
    let mut info = json!({
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": wire.reason,
        "domain": ERROR_DOMAIN,
    });
    let meta = e.metadata();
    if !meta.is_empty() {
        info["metadata"] = json!(meta);
    }
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": wire.json_rpc, "message": e.client_message(), "data": [info]},
    })
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    (
        status,
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        bytes,
    )
        .into_response()
}

impl IntoResponse for RpcFailure {
    fn into_response(self) -> Response {
        let kind = self.error.kind();
        if self.error.is_server_side() {
            error!(error = %self.error, reason = kind.wire().reason, "request failed");
        } else {
            debug!(error = %self.error, reason = kind.wire().reason, "request refused");
        }
        json_response(self.status(), &error_body(&self.id, &self.error))
    }
}

fn fail(id: Value, kind: ErrorKind, message: impl Into<String>) -> RpcFailure {
    RpcFailure {
        id,
        before_rpc: false,
        error: AppError::protocol(kind, message),
    }
}

async fn read_body(body: Body, headers: &HeaderMap) -> Result<Bytes, RpcFailure> {
    let too_large = || RpcFailure {
        id: Value::Null,
        before_rpc: true,
        error: AppError::protocol(
            ErrorKind::PayloadTooLarge,
            format!("request body exceeds {MAX_BODY_BYTES} bytes"),
        ),
    };
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| too_large())
}

fn check_content_type(headers: &HeaderMap) -> Result<(), RpcFailure> {
    let Some(ct) = headers.get(CONTENT_TYPE) else {
        return Ok(());
    };
    let ct = ct.to_str().unwrap_or("").to_ascii_lowercase();
    let essence = ct.split(';').next().unwrap_or("").trim();
    if essence == "application/json" || essence.ends_with("+json") {
        Ok(())
    } else {
        Err(fail(
            Value::Null,
            ErrorKind::ContentTypeNotSupported,
            format!("Content-Type {essence:?} is not supported; send application/json"),
        ))
    }
}

/// `A2A-Version` from the header or the query; the rule is `request::check_version`.
fn check_version(headers: &HeaderMap, query: Option<&str>, id: &Value) -> Result<(), RpcFailure> {
    let from_query = query.and_then(|q| {
        q.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            k.eq_ignore_ascii_case(VERSION_HEADER)
                .then(|| v.to_string())
        })
    });
    let requested = headers
        .get(VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_string())
        .or(from_query);
    request::check_version(requested).map_err(|error| RpcFailure {
        id: id.clone(),
        before_rpc: false,
        error,
    })
}

fn params<T: DeserializeOwned>(params: Option<&Value>) -> Result<T, AppError> {
    let value = match params {
        None | Some(Value::Null) => json!({}),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => return Err(AppError::invalid_params("params", "must be an object")),
    };
    request::decode(value, "params")
}

fn to_value<T: Serialize>(v: &T) -> Result<Value, AppError> {
    serde_json::to_value(v).map_err(|e| {
        AppError::protocol(
            ErrorKind::Internal,
            format!("cannot serialise the result: {e}"),
        )
    })
}

pub(super) async fn jsonrpc(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    match handle_jsonrpc(&state, parts, body).await {
        Ok(Some(v)) => json_response(StatusCode::OK, &v),
        Ok(None) => StatusCode::NO_CONTENT.into_response(),
        Err(f) => f.into_response(),
    }
}

async fn handle_jsonrpc(
    state: &AppState,
    parts: axum::http::request::Parts,
    body: Body,
) -> Result<Option<Value>, RpcFailure> {
    check_content_type(&parts.headers)?;
    let bytes = read_body(body, &parts.headers).await?;
    let principal = state.auth.authenticate(&parts).map_err(|e| RpcFailure {
        id: Value::Null,
        before_rpc: true,
        error: AppError::protocol(ErrorKind::Unauthenticated, e.to_string()),
    })?;
    let envelope: Value = serde_json::from_slice(&bytes).map_err(|e| {
        fail(
            Value::Null,
            ErrorKind::JsonParse,
            format!("invalid JSON: {e}"),
        )
    })?;
    let Value::Object(envelope) = envelope else {
        return Err(fail(
            Value::Null,
            ErrorKind::InvalidRequest,
            "the request must be a JSON-RPC 2.0 object (batches are not supported)",
        ));
    };
    let id = envelope.get("id").cloned();
    let reply_id = match &id {
        None | Some(Value::Null) => Value::Null,
        Some(v @ (Value::String(_) | Value::Number(_))) => v.clone(),
        Some(_) => {
            return Err(fail(
                Value::Null,
                ErrorKind::InvalidRequest,
                "id must be a string, a number or null",
            ))
        }
    };
    if envelope.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(fail(
            reply_id,
            ErrorKind::InvalidRequest,
            "jsonrpc must be \"2.0\"",
        ));
    }
    let Some(method) = envelope.get("method").and_then(Value::as_str) else {
        return Err(fail(
            reply_id,
            ErrorKind::InvalidRequest,
            "method must be a string",
        ));
    };
    check_version(&parts.headers, parts.uri.query(), &reply_id)?;
    let idempotency = parts
        .headers
        .get(IDEMPOTENCY_HEADER)
        .map(|v| {
            let raw = v.to_str().unwrap_or_default();
            IdempotencyKey::parse(raw).map_err(|e| AppError::invalid_params(IDEMPOTENCY_HEADER, e))
        })
        .transpose()
        .map_err(|error| RpcFailure {
            id: reply_id.clone(),
            before_rpc: false,
            error,
        })?;

    let span = info_span!(
        "rpc",
        method,
        principal = %principal,
        task_id = tracing::field::Empty
    );
    let result = dispatch(
        state,
        &principal,
        method,
        envelope.get("params"),
        idempotency,
    )
    .instrument(span)
    .await;
    match (id, result) {
        (None, Ok(_)) => Ok(None),
        (_, Ok(v)) => Ok(Some(json!({"jsonrpc": "2.0", "id": reply_id, "result": v}))),
        (_, Err(error)) => Err(RpcFailure {
            id: reply_id,
            before_rpc: false,
            error,
        }),
    }
}

async fn dispatch(
    state: &AppState,
    who: &Principal,
    method: &str,
    raw: Option<&Value>,
    idempotency: Option<IdempotencyKey>,
) -> Result<Value, AppError> {
    let svc = &state.service;
    match method {
        "SendMessage" => {
            let req: SendMessageRequest = params(raw)?;
            let idem = idempotency.map(|k| (k, json_fingerprint(raw.unwrap_or(&Value::Null))));
            to_value(&svc.send_message(who, req, idem).await?)
        }
        "GetTask" => to_value(&svc.get_task(who, params::<GetTaskRequest>(raw)?).await?),
        "ListTasks" => to_value(
            &svc.list_tasks(who, params::<ListTasksRequest>(raw)?)
                .await?,
        ),
        "CancelTask" => to_value(
            &svc.cancel_task(who, params::<CancelTaskRequest>(raw)?)
                .await?,
        ),
        "GetExtendedAgentCard" => Err(request::extended_card_unsupported()),
        "SendStreamingMessage" | "SubscribeToTask" => Err(request::streaming_unsupported(method)),
        "CreateTaskPushNotificationConfig" => to_value(
            &svc.create_push_config(who, params::<TaskPushNotificationConfig>(raw)?)
                .await?,
        ),
        "GetTaskPushNotificationConfig" => to_value(
            &svc.get_push_config(who, params::<TaskPushNotificationConfigRef>(raw)?)
                .await?,
        ),
        "ListTaskPushNotificationConfigs" => to_value(
            &svc.list_push_configs(who, params::<ListTaskPushNotificationConfigsRequest>(raw)?)
                .await?,
        ),
        "DeleteTaskPushNotificationConfig" => {
            svc.delete_push_config(who, params::<TaskPushNotificationConfigRef>(raw)?)
                .await?;
            Ok(json!({}))
        }
        other => {
            debug!(method = other, "unknown JSON-RPC method");
            Err(AppError::protocol(
                ErrorKind::MethodNotFound,
                format!("method {other:?} does not exist"),
            )
            .with("method", other))
        }
    }
}
