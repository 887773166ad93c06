//! `GET /metrics`: the process's metrics as Prometheus text (the local server), with the tasks
//! by state when the store counts them — process-wide counts, every tenant's, so an operator's
//! endpoint: on a server with credentials it answers only to the metrics token
//! (`--metrics-token`), never to a tenant's principal (401 without it, 403 when the server has
//! none configured); on a server without credentials (loopback development), to anyone.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use super::AppState;
use crate::telemetry::{metrics as process_metrics, prometheus};

pub const METRICS_PATH: &str = "/metrics";

/// The refusal of a scrape that is not the operator's (the metrics token, when the server has
/// credentials); `None`: it is.
fn refused(state: &AppState, parts: &axum::http::request::Parts) -> Option<Response> {
    if state.auth.card_auth() == taskledger_domain::card::CardAuth::None {
        return None;
    }
    let Some(expected) = state
        .settings
        .metrics
        .as_ref()
        .and_then(|m| m.token.as_deref())
    else {
        return Some(
            (
                StatusCode::FORBIDDEN,
                "/metrics is the operator's: this server has no metrics token (--metrics-token)",
            )
                .into_response(),
        );
    };
    let given = crate::identity::bearer(parts).unwrap_or_default();
    let same = given.len() == expected.len()
        && given
            .bytes()
            .zip(expected.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    if same {
        None
    } else {
        Some(
            (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer realm=\"metrics\"")],
                "/metrics answers to the metrics token only",
            )
                .into_response(),
        )
    }
}

pub(super) async fn metrics(State(state): State<Arc<AppState>>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    if let Some(refused) = refused(&state, &parts) {
        return refused;
    }
    let counter = state
        .settings
        .metrics
        .as_ref()
        .and_then(|m| m.tasks.clone());
    let tasks = match counter {
        Some(c) => match c.tasks_by_state().await {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(error = %e, "cannot count tasks by state for /metrics");
                None
            }
        },
        None => None,
    };
    let body = prometheus::render(&process_metrics().snapshot(), tasks.as_deref());
    (
        [
            (header::CONTENT_TYPE, prometheus::CONTENT_TYPE),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}
