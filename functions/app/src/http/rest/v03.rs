//! The HTTP+JSON binding's framing of A2A 0.3's `/v1/…` paths (the paths, their request
//! objects, answers and events are the line's: `call::Route03`): the body read as the route
//! says, the call through the front door (`Call`), the answer or stream back, and errors with
//! 0.3's statuses and `{code, message, data}` (`failure`).

use std::sync::Arc;

use axum::body::Body;
use axum::http::request::Parts;
use axum::response::Response;
use serde_json::{json, Map, Value};
use taskledger_domain::error::ErrorKind;

use super::super::common;
use super::super::sse;
use super::super::AppState;
use crate::call::{Call, Line, Route03};
use crate::error::AppError;
use crate::operations::{self, Outcome};
use crate::telemetry::Binding;

/// A refusal as 0.3 REST clients read it: the 0.3 SDK's status for the kind
/// (`ErrorKind::http_v03`, a column of the one error table) and `{code, message, data}` with
/// the JSON-RPC code (the official JS client maps errors by it).
pub(super) fn failure(e: &AppError) -> Response {
    common::log_refusal(e);
    let status = axum::http::StatusCode::from_u16(e.kind().http_v03())
        .unwrap_or(axum::http::StatusCode::BAD_REQUEST);
    let body = json!({
        "code": e.kind().wire().json_rpc,
        "message": e.client_message(),
        "data": [common::error_info(e)],
    });
    common::json_response(status, &body)
}

/// Runs a 0.3 route: the response, or the error (`failure`).
pub(super) async fn handle(
    state: &Arc<AppState>,
    parts: Parts,
    body: Body,
    route: Route03,
) -> Result<Response, AppError> {
    let entry = route.entry();
    // The version first, as before the body: a 1.x client on a 0.3 path is told at once.
    Line::read(
        entry,
        crate::request::requested_version(&parts.headers, parts.uri.query()).as_deref(),
    )?;
    let body = if route.reads_body() {
        let declared = common::body_type(&parts.headers);
        if let Some(why) = declared.refusal() {
            return Err(AppError::protocol(ErrorKind::UnsupportedMediaType, why));
        }
        let bytes =
            common::read_body(body, &parts.headers, state.settings.body_read_timeout).await?;
        serde_json::from_slice::<Value>(&bytes)
            .map_err(|e| AppError::protocol(ErrorKind::JsonParse, format!("invalid JSON: {e}")))?
    } else {
        common::discard_body(body, &parts.headers, state.settings.body_read_timeout).await?;
        Value::Object(Map::new())
    };
    let call = Call::read(
        state.auth.as_ref(),
        &state.service,
        &parts,
        Binding::HttpJson,
        entry,
    )
    .await?;
    let request = route.request(&body, parts.uri.query())?;
    let card = (entry.method() == crate::operations::Method::GetExtendedAgentCard).then(|| {
        Arc::new(super::super::card::public_card(state, &parts.headers, &parts.extensions).0)
    });
    let line = call.line;
    let ctx = call.context(&request, line.json_tasks(), card);
    let op = line.operation(entry.method(), request, "request")?;
    let reply = operations::execute(&state.service, ctx, op).await?;
    let response = match reply.outcome {
        Outcome::Stream(stream) => {
            sse::respond(stream, state.settings.stream_keep_alive, move |e| {
                route.event(&e.body)
            })
        }
        outcome => common::json_response(axum::http::StatusCode::OK, &route.answer(&outcome)?),
    };
    Ok(common::with_extensions(response, &reply.extensions))
}
