//! The board: the caller's tasks and those shared with it, newest first, a page at a time (the
//! ListTasks cursor), filtered by state and context, with a count per state. Each row links
//! to its task page; the script keeps the rows current (ADR 023).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{html, Markup};
use serde::Deserialize;
use serde_json::Value;
use taskledger_domain::extensions::harness::METADATA_KEY;
use taskledger_domain::ids::Principal;
use taskledger_domain::wire::{ListTasksRequest, Task, TaskState};

use super::layout::{self, state_label};
use crate::http::AppState;

/// Tasks a board page shows.
pub const BOARD_PAGE_SIZE: i32 = 50;

/// The states a board counts and filters by, in the order it shows them (waiting ones first).
const STATES: [TaskState; 8] = [
    TaskState::Submitted,
    TaskState::Working,
    TaskState::InputRequired,
    TaskState::AuthRequired,
    TaskState::Completed,
    TaskState::Failed,
    TaskState::Canceled,
    TaskState::Rejected,
];

/// The board's query: `?state=TASK_STATE_WORKING&context=c-1&page=<token>`.
#[derive(Debug, Default, Deserialize)]
pub struct Filters {
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    context: Option<String>,
    #[serde(default)]
    page: Option<String>,
}

fn request(state: Option<TaskState>, context: Option<&str>, page_size: i32) -> ListTasksRequest {
    ListTasksRequest {
        context_id: context.map(str::to_string),
        status: state,
        page_size: Some(page_size),
        history_length: Some(0),
        ..ListTasksRequest::default()
    }
}

pub(super) async fn render(app: &AppState, who: &Principal, f: Filters) -> Response {
    let state = match f.state.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => match TaskState::from_name(s) {
            Some(s) => Some(s),
            None => return bad(who, &format!("{s:?} is not a task state")),
        },
    };
    let context = f.context.as_deref().filter(|c| !c.is_empty());
    let mut req = request(state, context, BOARD_PAGE_SIZE);
    req.page_token = f.page.clone().filter(|p| !p.is_empty());
    let page = match app.service.list_tasks(who, req).await {
        Ok(p) => p,
        Err(e) => return bad(who, &e.to_string()),
    };
    // One count of every state (not a list per state).
    let by_state = match app.service.count_tasks_by_state(who, context).await {
        Ok(c) => c,
        Err(e) => return bad(who, &e.to_string()),
    };
    let counts: Vec<(TaskState, u64)> = STATES
        .iter()
        .map(|s| {
            let n = by_state
                .iter()
                .find(|(st, _)| st == s)
                .map_or(0, |(_, n)| *n);
            (*s, n)
        })
        .collect();
    let filter_query = |s: Option<TaskState>| {
        let mut q = Vec::new();
        if let Some(s) = s {
            q.push(format!("state={}", s.as_str()));
        }
        if let Some(c) = context {
            q.push(format!("context={}", urlencode(c)));
        }
        if q.is_empty() {
            "/".to_string()
        } else {
            format!("/?{}", q.join("&"))
        }
    };
    let body = html! {
        h1 { "Tasks" }
        nav.counts aria-label="Tasks by state" {
            a href=(filter_query(None)) aria-current=[state.is_none().then_some("page")] {
                "All " span.n data-count="all" { (page.total_size) }
            }
            @for (s, n) in &counts {
                a.state-link href=(filter_query(Some(*s)))
                    aria-current=[(state == Some(*s)).then_some("page")] {
                    span class={ "badge " (state_label(s.as_str())) } { (state_label(s.as_str())) }
                    " " span.n data-count=(s.as_str()) { (n) }
                }
            }
        }
        form.filters method="get" action="/" {
            label for="context" { "Context" }
            input #context name="context" value=[context] placeholder="any context";
            @if let Some(s) = state { input type="hidden" name="state" value=(s.as_str()); }
            button type="submit" { "Filter" }
        }
        table #tasks data-state=[state.map(TaskState::as_str)] data-context=[context]
            data-page=[f.page.as_deref()] {
            thead { tr { th { "Task" } th { "State" } th { "Participants" } th { "Updated" } } }
            tbody {
                @for t in &page.tasks { (row(t)) }
            }
        }
        // Both are always there (hidden when empty) so a live refresh can replace them.
        p.empty hidden[!page.tasks.is_empty()] { "No tasks here yet." }
        p.more {
            @if !page.next_page_token.is_empty() {
                a rel="next" href={ (filter_query(state)) (if state.is_some() || context.is_some() { "&" } else { "?" }) "page=" (urlencode(&page.next_page_token)) } { "Older tasks →" }
            }
        }
    };
    layout::page("Tasks", Some(who), body).into_response()
}

fn bad(who: &Principal, why: &str) -> Response {
    let body =
        html! { h1 { "Tasks" } p.error role="alert" { (why) } p { a href="/" { "All tasks" } } };
    (
        StatusCode::BAD_REQUEST,
        layout::page("Tasks", Some(who), body),
    )
        .into_response()
}

/// One task's row: name or goal (the task extension's), state, participants, last update.
pub(super) fn row(t: &Task) -> Markup {
    let ext = t.metadata.as_ref().and_then(|m| m.get(METADATA_KEY));
    let name = ext
        .and_then(|e| e.get("name"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let goal = ext
        .and_then(|e| e.get("goal"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let participants: Vec<String> = ext
        .and_then(|e| e.get("participants"))
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .filter_map(|p| {
                    Some(format!(
                        "{} ({})",
                        p.get("id")?.as_str()?,
                        p.get("role")?.as_str()?
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let state = t.status.state.as_str();
    let updated = t
        .status
        .timestamp
        .map(|ts| ts.to_rfc3339_millis())
        .unwrap_or_default();
    html! {
        tr data-task-id=(t.id) data-state=(state) {
            td {
                a href={ "/board/tasks/" (urlencode(&t.id)) } { (name.or(goal).unwrap_or(t.id.as_str())) }
                @if let (Some(_), Some(g)) = (name, goal) { div.goal { (g) } }
            }
            td { span class={ "badge " (state_label(state)) } { (state_label(state)) } }
            td { (participants.join(", ")) }
            td { time datetime=(updated) { (updated) } }
        }
    }
}

/// Percent-encodes everything but unreserved characters (a query value or a path segment).
pub(super) fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
