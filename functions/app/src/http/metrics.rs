//! `GET /metrics`: the process's metrics as Prometheus text (the local server), with the tasks
//! by state when the store counts them. With credentials configured it is as protected as the
//! API: an unauthenticated scrape gets 401 (the router's `WWW-Authenticate` says how).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use super::AppState;
use crate::telemetry::{metrics as process_metrics, prometheus};

pub const METRICS_PATH: &str = "/metrics";

pub(super) async fn metrics(State(state): State<Arc<AppState>>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    if let Err(e) = crate::identity::caller(state.auth.as_ref(), &state.service, &parts).await {
        return (StatusCode::UNAUTHORIZED, e.to_string()).into_response();
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
