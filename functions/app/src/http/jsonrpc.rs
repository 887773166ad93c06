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

use super::common::{self, json_response};
use super::sse;
use super::AppState;
use crate::call::{Call, Entry, Line};
use crate::error::AppError;
use crate::operations::{self, Method, Outcome};
use crate::service::streams::TaskStream;
use crate::telemetry::Binding;

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
    /// The stream, and the line its events are written in.
    Stream(Value, TaskStream, Line),
    Nothing,
}

pub(super) async fn jsonrpc(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let response = match handle(&state, parts, body).await {
        Ok((Answer::One(body), extensions)) => (common::json_bytes_response(body), extensions),
        Ok((Answer::Stream(id, stream, line), extensions)) => {
            // Each event is one JSON-RPC response to the request, with its id.
            let id = id.to_string();
            let sse = sse::respond(stream, state.settings.stream_keep_alive, move |e| {
                let event = line.event_out(&e.body);
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
    // A method of either line, known by its name (ADR 031); a name of neither does not exist,
    // whatever version the call says.
    let entry = Entry::jsonrpc(method).map_err(|e| RpcFailure::new(&reply_id, e))?;
    // A 0.3 stream carries its errors as an event (its clients read them there).
    let streams03 = entry.is_v03() && entry.streams();
    let failed = |e| RpcFailure::new(&reply_id, e).in_stream(streams03);
    let call = Call::of(principal, &parts, Binding::JsonRpc, entry).map_err(failed)?;
    let line = call.line;
    let result = async {
        let request = line.request_in(params(params_given)?)?;
        let method = entry.method();
        let card = (method == Method::GetExtendedAgentCard).then(|| {
            Arc::new(super::card::public_card(state, &parts.headers, &parts.extensions).0)
        });
        let ctx = call.context(&request, line.json_tasks(), card);
        let op = line.operation(method, request, "params")?;
        let reply = operations::execute(&state.service, ctx, op).await?;
        let answer = match reply.outcome {
            Outcome::Stream(stream) => Answer::Stream(reply_id.clone(), stream, line),
            outcome if id.is_none() => {
                drop(outcome);
                Answer::Nothing
            }
            // Kept answers are written in the line's shape already (`Line::json_tasks`).
            outcome @ Outcome::Encoded(_) => {
                Answer::One(common::result_body(&outcome, Some(&reply_id))?)
            }
            outcome => match line.result_out(&outcome)? {
                Some(v) => Answer::One(common::value_body(&v, &reply_id)?),
                None => Answer::One(common::result_body(&outcome, Some(&reply_id))?),
            },
        };
        Ok::<_, AppError>((answer, reply.extensions))
    }
    .await;
    result.map_err(|error| RpcFailure::new(&reply_id, error).in_stream(streams03))
}
