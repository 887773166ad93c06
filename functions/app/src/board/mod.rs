//! The task board (ADR 023): server-rendered pages for the people on a task, served beside the
//! API on the same origin and with the same authentication. Pages read through the service as
//! the signed-in principal; every action a page offers goes through the public JSON-RPC API from
//! its script, like any client. Readable without script; live with it.

mod a2ui;
mod as_of;
mod auth;
mod board_page;
mod layout;
mod plan_svg;
mod security;
mod session;
mod subtask_tree;
mod task_page;
pub mod urls;
mod work;

pub use session::{DEFAULT_SESSION_TTL, MAX_SESSION_TTL, REVALIDATE_EVERY};
pub use urls::ImageOrigins;

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{Extensions, HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::http::AppState;

/// Where the board's pages live (the board itself is `/`).
pub const BOARD_PATH: &str = "/board";

const SCRIPT: &str = include_str!("assets/board.js");
pub(super) const STYLE: &str = include_str!("assets/board.css");

/// The board's routes, merged into the HTTP router of servers that serve it, each response
/// with the board's security headers (`security`).
pub fn routes(state: &AppState) -> Router<Arc<AppState>> {
    let origins = state
        .settings
        .board
        .as_ref()
        .map(|b| b.image_origins.clone())
        .unwrap_or_default();
    let policy = HeaderValue::from_str(&security::content_security_policy(&origins))
        .unwrap_or_else(|_| HeaderValue::from_static("default-src 'none'"));
    Router::new()
        .route("/", get(board))
        .route("/board/tasks/{id}", get(task))
        .route("/board/login", get(auth::login_form).post(auth::login))
        .route("/board/logout", axum::routing::post(auth::logout))
        .route(
            "/board/assets/board.js",
            get(|| asset("text/javascript", SCRIPT)),
        )
        .route("/board/assets/board.css", get(|| asset("text/css", STYLE)))
        .layer(axum::middleware::from_fn_with_state(
            policy,
            security::headers,
        ))
}

async fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (CONTENT_TYPE, content_type),
            (CACHE_CONTROL, "public, max-age=300"),
        ],
        body,
    )
        .into_response()
}

async fn board(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    extensions: Extensions,
    Query(filters): Query<board_page::Filters>,
) -> Response {
    match auth::principal(&state, &headers, &extensions).await {
        Ok(who) => board_page::render(&state, &who, filters).await,
        Err(r) => r,
    }
}

/// A task page's query: how many messages of history to show (`task_page::HISTORY_PAGE` at
/// first; each "older" link shows more).
#[derive(Debug, Default, serde::Deserialize)]
struct TaskQuery {
    history: Option<usize>,
    /// The event the page shows the task after (the timeline slider); none: now.
    at: Option<u64>,
}

async fn task(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    extensions: Extensions,
    Path(id): Path<String>,
    Query(q): Query<TaskQuery>,
) -> Response {
    match auth::principal(&state, &headers, &extensions).await {
        Ok(who) => {
            let history = q.history.unwrap_or(task_page::HISTORY_PAGE);
            task_page::render(&state, &who, &id, history, q.at).await
        }
        Err(r) => r,
    }
}
