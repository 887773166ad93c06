//! The HTTP+JSON binding (A2A §11) at `REST_PATH`: the route (path, HTTP method, query) and the
//! body become the operation's request object, the same operations layer runs it, and the
//! outcome is its bare ProtoJSON. Errors are `google.rpc.Status` in JSON (AIP-193):
//! `{"error": {"code": <HTTP status>, "status": <gRPC code name>, "message", "details":
//! [ErrorInfo]}}`, the status from the error table. Requests may say `application/json` or
//! `application/a2a+json` (any `+json` type); answers are `application/a2a+json` to a request
//! that asks for it (`common::answers_in_a2a_json`), else `application/json`.

pub(crate) mod routes;
mod v03;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::ALLOW;
use axum::http::HeaderValue;
use axum::response::Response;
use serde_json::{Map, Value};
use taskledger_domain::error::ErrorKind;

use super::common;
use super::sse;
use super::AppState;
use crate::call::{Call, Entry, RestRoute, Route03};
use crate::error::AppError;
use crate::operations::{self, Outcome};
use crate::telemetry::Binding;

pub use taskledger_domain::card::REST_PATH;

/// An HTTP+JSON error: the table's HTTP status, the error body, `Allow` on a 405.
fn failure(state: &AppState, e: &AppError) -> Response {
    common::log_refusal(e);
    let mut response = common::status_error(e, state.settings.error_table);
    if e.kind() == ErrorKind::MethodNotAllowed {
        if let Some(allow) = e
            .metadata()
            .get("allow")
            .and_then(|a| HeaderValue::from_str(a).ok())
        {
            response.headers_mut().insert(ALLOW, allow);
        }
    }
    response
}

pub(in crate::http) async fn rest(
    State(state): State<Arc<AppState>>,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    // One route table for both lines: a `/v1/…` path is A2A 0.3's (ADR 031).
    let below = parts
        .uri
        .path()
        .strip_prefix(REST_PATH)
        .unwrap_or(parts.uri.path())
        .to_string();
    let route = crate::call::rest_route(parts.method.as_str(), &below);
    // A 0.3 row, or a refused path below `/v1/`, is answered in 0.3's shapes.
    match (&route, route.as_ref().ok().and_then(Route03::of)) {
        (_, Some(route03)) => {
            return v03::handle(&state, parts, body, route03)
                .await
                .unwrap_or_else(|e| v03::failure(&e));
        }
        (Err(e), None) if crate::call::is_v03_path(&below) => return v03::failure(e),
        _ => {}
    }
    let a2a_json = common::answers_in_a2a_json(&parts.headers);
    let response = match handle(&state, parts, body, route).await {
        Ok(reply) => {
            let response = match reply.outcome {
                // Each event is the bare StreamResponse.
                Outcome::Stream(stream) => {
                    sse::respond(stream, state.settings.stream_keep_alive, |e| {
                        e.body.to_string()
                    })
                }
                outcome => match common::result_body(&outcome, None) {
                    Ok(body) => common::json_bytes_response(body),
                    Err(e) => failure(&state, &e),
                },
            };
            common::with_extensions(response, &reply.extensions)
        }
        Err(e) => failure(&state, &e),
    };
    if a2a_json {
        common::as_a2a_json(response)
    } else {
        response
    }
}

/// The request object of a body: empty is `{}`, anything but a JSON object is refused.
fn body_object(bytes: &[u8]) -> Result<Map<String, Value>, AppError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice(bytes) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(AppError::protocol(
            ErrorKind::InvalidRequest,
            "the body must be a JSON object",
        )),
        Err(e) => Err(AppError::protocol(
            ErrorKind::JsonParse,
            format!("invalid JSON: {e}"),
        )),
    }
}

async fn handle(
    state: &AppState,
    parts: axum::http::request::Parts,
    body: Body,
    route: Result<RestRoute, AppError>,
) -> Result<operations::Reply, AppError> {
    let route = routes::Route::of(route?)?;
    let mut request = if route.from_query {
        common::discard_body(body, &parts.headers, state.settings.body_read_timeout).await?;
        routes::query_fields(route.method, parts.uri.query())?
    } else {
        let declared = common::body_type(&parts.headers);
        if let common::BodyType::Other(_) | common::BodyType::BadParameter(_) = declared {
            let why = declared.refusal().unwrap_or_default();
            return Err(AppError::protocol(ErrorKind::UnsupportedMediaType, why));
        }
        let bytes =
            common::read_body(body, &parts.headers, state.settings.body_read_timeout).await?;
        // An empty body (`POST …:cancel`) needs no type; one with content must say it is JSON.
        if declared == common::BodyType::Missing && !bytes.iter().all(u8::is_ascii_whitespace) {
            let why = declared.refusal().unwrap_or_default();
            return Err(AppError::protocol(ErrorKind::UnsupportedMediaType, why));
        }
        body_object(&bytes)?
    };
    let entry = Entry::V1(route.method);
    let call = Call::read(
        state.auth.as_ref(),
        &state.service,
        &parts,
        Binding::HttpJson,
        entry,
    )
    .await?;
    // What the path names wins over the body.
    request.extend(route.fields);
    let request = Value::Object(request);
    let card = (route.method == crate::operations::Method::GetExtendedAgentCard)
        .then(|| Arc::new(super::card::public_card(state, &parts.headers, &parts.extensions).0));
    let line = call.line;
    let ctx = call.context(&request, line.json_tasks(), card);
    let op = line.operation(route.method, request, "request")?;
    operations::execute(&state.service, ctx, op).await
}
