//! The JSON-RPC 2.0 binding: the envelope, the protocol version and the caller, then the
//! method's `params` handed to the operations layer as its request object. Errors of a method
//! travel with HTTP 200, as JSON-RPC responses do; a request refused before it is read as
//! JSON-RPC (too large, not authenticated) travels with its kind's HTTP status from the table.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use taskledger_domain::error::ErrorKind;
use tracing::{info_span, Instrument};

use super::common::{self, json_response};
use super::sse;
use super::AppState;
use crate::error::AppError;
use crate::operations::{self, Context, Method, Operation, Outcome};
use crate::service::streams::TaskStream;
use crate::v03::{self, jsonrpc::Method03};
use taskledger_domain::wire::PushProtocol;

/// A JSON-RPC error reply.
struct RpcFailure {
    id: Value,
    before_rpc: bool,
    error: AppError,
    /// Sent as a stream of one event (a 0.3 streaming method: its clients read errors there).
    as_event: bool,
}

impl RpcFailure {
    fn new(id: &Value, error: AppError) -> Self {
        Self {
            id: id.clone(),
            before_rpc: false,
            error,
            as_event: false,
        }
    }

    fn in_stream(mut self, yes: bool) -> Self {
        self.as_event = yes;
        self
    }

    /// Refused before the request was read as JSON-RPC: the table's HTTP status.
    fn transport(error: AppError) -> Self {
        Self {
            id: Value::Null,
            before_rpc: true,
            error,
            as_event: false,
        }
    }

    fn status(&self, state: &AppState) -> StatusCode {
        if !self.before_rpc {
            return StatusCode::OK;
        }
        let http = self.error.kind().wire_for(state.settings.error_table).http;
        StatusCode::from_u16(http).unwrap_or(StatusCode::BAD_REQUEST)
    }

    fn into_response(self, state: &AppState) -> Response {
        common::log_refusal(&self.error);
        let wire = self.error.kind().wire();
        let body = json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": {
                "code": wire.json_rpc,
                "message": self.error.client_message(),
                "data": [common::error_info(&self.error)],
            },
        });
        if self.as_event {
            return sse::one_event(body.to_string());
        }
        json_response(self.status(state), &body)
    }
}

fn fail(id: &Value, kind: ErrorKind, message: impl Into<String>) -> RpcFailure {
    RpcFailure::new(id, AppError::protocol(kind, message))
}

/// `params` as the method's request object: absent is `{}`, anything but an object is refused.
fn params(params: Option<Value>) -> Result<Value, AppError> {
    match params {
        None | Some(Value::Null) => Ok(json!({})),
        Some(v @ Value::Object(_)) => Ok(v),
        Some(_) => Err(AppError::invalid_params("params", "must be an object")),
    }
}

/// What a call answers with: one response (serialised), a stream of them, or nothing (a
/// notification).
enum Answer {
    One(Vec<u8>),
    /// The stream, and the 0.3 method it answers (its events in 0.3 shapes).
    Stream(Value, TaskStream, Option<Method03>),
    Nothing,
}

pub(super) async fn jsonrpc(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let response = match handle(&state, parts, body).await {
        Ok((Answer::One(body), extensions)) => (common::json_bytes_response(body), extensions),
        Ok((Answer::Stream(id, stream, v03), extensions)) => {
            // Each event is one JSON-RPC response to the request, with its id.
            let id = id.to_string();
            let sse = sse::respond(stream, state.settings.stream_keep_alive, move |e| {
                let event = match v03 {
                    Some(m) => std::borrow::Cow::Owned(v03::jsonrpc::stream_event(m, &e.body)),
                    None => std::borrow::Cow::Borrowed(&*e.body),
                };
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{event}}}"#)
            });
            (sse, extensions)
        }
        Ok((Answer::Nothing, _)) => return StatusCode::NO_CONTENT.into_response(),
        Err(f) => return f.into_response(&state),
    };
    common::with_extensions(response.0, &response.1)
}

async fn handle(
    state: &AppState,
    parts: axum::http::request::Parts,
    body: Body,
) -> Result<(Answer, operations::Extensions), RpcFailure> {
    if let Some(why) = common::body_type(&parts.headers).refusal() {
        return Err(fail(&Value::Null, ErrorKind::ContentTypeNotSupported, why));
    }
    let bytes = common::read_body(body, &parts.headers, state.settings.body_read_timeout)
        .await
        .map_err(RpcFailure::transport)?;
    let principal = crate::identity::caller(state.auth.as_ref(), &state.service, &parts)
        .await
        .map_err(RpcFailure::transport)?;
    let envelope: Value = serde_json::from_slice(&bytes).map_err(|e| {
        fail(
            &Value::Null,
            ErrorKind::JsonParse,
            format!("invalid JSON: {e}"),
        )
    })?;
    let Value::Object(mut envelope) = envelope else {
        return Err(fail(
            &Value::Null,
            ErrorKind::InvalidRequest,
            "the request must be a JSON-RPC 2.0 object (batches are not supported)",
        ));
    };
    // Taken out, not copied: decoding the request consumes it.
    let params_given = envelope.remove("params");
    let id = envelope.get("id").cloned();
    let reply_id = match &id {
        None | Some(Value::Null) => Value::Null,
        Some(v @ (Value::String(_) | Value::Number(_))) => v.clone(),
        Some(_) => {
            return Err(fail(
                &Value::Null,
                ErrorKind::InvalidRequest,
                "id must be a string, a number or null",
            ))
        }
    };
    if envelope.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(fail(
            &reply_id,
            ErrorKind::InvalidRequest,
            "jsonrpc must be \"2.0\"",
        ));
    }
    let Some(method) = envelope.get("method").and_then(Value::as_str) else {
        return Err(fail(
            &reply_id,
            ErrorKind::InvalidRequest,
            "method must be a string",
        ));
    };
    // A 0.3 method is known by its name; its version is then none or 0.x (ADR 031).
    let v03 = Method03::named(method);
    let streams03 = v03.is_some_and(Method03::streams);
    // A name of neither line does not exist, whatever version the call says.
    if v03.is_none() {
        Method::named(method).map_err(|e| RpcFailure::new(&reply_id, e))?;
    }
    let failed = |e| RpcFailure::new(&reply_id, e).in_stream(streams03);
    let version = match v03 {
        Some(_) => common::check_v03_version(&parts.headers, parts.uri.query())
            .map(|()| Default::default()),
        None => common::check_version(&parts.headers, parts.uri.query()),
    }
    .map_err(failed)?;
    let key = common::idempotency_key(&parts.headers).map_err(failed)?;
    let span = info_span!(
        "rpc",
        method,
        principal = %principal,
        task_id = tracing::field::Empty
    );
    let result = async {
        let given = params(params_given)?;
        let (op_method, request) = match v03 {
            Some(m) => (m.operation(), v03::jsonrpc::request(m, &given)?),
            None => (Method::named(method)?, given),
        };
        let mut ctx = Context::new(principal, crate::telemetry::Binding::JsonRpc)
            .with_idempotency(key, &request);
        ctx.trace = common::trace_context(&parts.headers);
        ctx.requested_extensions = common::requested_extensions(&parts.headers);
        ctx.last_event_id = sse::last_event_id(&parts.headers);
        ctx.version = version;
        ctx.task_encoding = Some(match v03 {
            Some(_) => v03::jsonrpc::TASK_ENCODING,
            None => common::JSON_TASKS,
        });
        if op_method == Method::GetExtendedAgentCard {
            ctx.card = Some(Arc::new(
                super::card::public_card(state, &parts.headers, &parts.extensions).0,
            ));
        }
        let mut op = Operation::decode(op_method, request, "params")?;
        if v03.is_some() {
            op.deliver_as(PushProtocol::V03);
        }
        let reply = operations::execute(&state.service, ctx, op).await?;
        let answer = match (reply.outcome, v03) {
            (Outcome::Stream(stream), v03) => Answer::Stream(reply_id.clone(), stream, v03),
            (outcome, _) if id.is_none() => {
                drop(outcome);
                Answer::Nothing
            }
            // Kept answers are written in 0.3 already (`v03::jsonrpc::TASK_ENCODING`).
            (outcome @ Outcome::Encoded(_), Some(_)) => {
                Answer::One(common::result_body(&outcome, Some(&reply_id))?)
            }
            (outcome, Some(m)) => Answer::One(common::value_body(
                &v03::jsonrpc::result(m, &outcome)?,
                &reply_id,
            )?),
            (outcome, None) => Answer::One(common::result_body(&outcome, Some(&reply_id))?),
        };
        Ok::<_, AppError>((answer, reply.extensions))
    }
    .instrument(span)
    .await;
    result.map_err(|error| RpcFailure::new(&reply_id, error).in_stream(streams03))
}
