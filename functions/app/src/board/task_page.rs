//! A task's page: what the caller may do now (only what its role allows is offered), the status
//! timeline from the event log, history with parts by kind, artifacts, the plan as a drawn DAG,
//! sub-tasks, participants and roles, token usage per model, and the viewer's own webhooks.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{html, Markup};
use serde_json::Value;
use taskledger_domain::extensions::harness::{Role, METADATA_KEY};
use taskledger_domain::ids::MAX_HISTORY_LENGTH;
use taskledger_domain::ids::{HistoryLength, Principal, TaskId};
use taskledger_domain::task::{GateKind, TaskHead};
use taskledger_domain::wire::{
    GetTaskRequest, ListTaskPushNotificationConfigsRequest, Message, Part, PartContent, Task,
};

use super::as_of::{self, AsOf};
use super::layout::{self, state_label};
use super::plan_svg;
use super::urls::{self, ImageOrigins};
use crate::http::AppState;

/// The usage extension's key in task metadata (kagent).
const USAGE_KEY: &str = "https://kagent.dev/extensions/usage/v1";
/// Events the timeline shows, newest last (only these are read).
pub const MAX_TIMELINE_EVENTS: usize = 500;
/// Messages of history a page shows at first, and how many more each "older" link adds.
pub const HISTORY_PAGE: usize = 50;

/// What a task page is drawn from, read as the caller before drawing starts.
struct Page {
    who: Principal,
    task: Task,
    head: TaskHead,
    version: u64,
    events: Vec<taskledger_domain::task::stored::StoredEvent>,
    pushes: Option<Vec<taskledger_domain::wire::TaskPushNotificationConfig>>,
    /// The deliveries of the viewer's own configs still in the outbox (on the embedded store).
    deliveries: Option<Vec<taskledger_domain::ports::OutboxRecord>>,
    related: Markup,
    history: usize,
    origins: ImageOrigins,
    /// A past state the page shows (the timeline slider), read-only.
    as_of: Option<AsOf>,
}

/// The page of task `raw_id` for `who`, with its last `history` messages (at most the largest
/// history a read returns) — as it is now, or as it was after event `at` of its log. The page is drawn on a blocking thread: however large the task,
/// drawing it never holds up the async workers serving other requests.
pub(super) async fn render(
    app: &AppState,
    who: &Principal,
    raw_id: &str,
    history: usize,
    at: Option<u64>,
) -> Response {
    let not_found = || {
        let body = html! { h1 { "No such task" } p { "There is no task " code { (raw_id) } " you can see." } p { a href="/" { "All tasks" } } };
        (
            StatusCode::NOT_FOUND,
            layout::page("No such task", Some(who), body),
        )
            .into_response()
    };
    let history = history.clamp(1, MAX_HISTORY_LENGTH as usize);
    // GetTask as the caller decides what it may see; only then is the rest read.
    let task = match app
        .service
        .get_task(
            who,
            GetTaskRequest {
                tenant: None,
                id: raw_id.to_string(),
                history_length: Some(history as i32),
                current_generation: None,
                timeline_length: Default::default(),
                as_of_generation: None,
                after: None,
            },
        )
        .await
    {
        Ok(t) => t,
        Err(_) => return not_found(),
    };
    let Ok(id) = TaskId::parse(task.id.clone()) else {
        return not_found();
    };
    let (head, version) = match app.service.ledger().current(&id).await {
        Ok(Some(state)) => match &state.head {
            Some(h) => (h.clone(), state.version),
            None => return not_found(),
        },
        _ => return not_found(),
    };
    let (task, as_of) = match at {
        None => (task, None),
        Some(at) => {
            let read = HistoryLength::Last(history as u32);
            match app.service.task_at_event(who, &id, at, read).await {
                Ok((past, last)) => (past, Some(AsOf { at, last })),
                Err(e) => {
                    let body = html! { h1 { "No such event" } p { (e.to_string()) } p { a href={ "/board/tasks/" (raw_id) } { "The task now" } } };
                    return (
                        StatusCode::BAD_REQUEST,
                        layout::page("No such event", Some(who), body),
                    )
                        .into_response();
                }
            }
        }
    };
    let upto = as_of.map_or(version, |a| a.at);
    let from = upto.saturating_sub(MAX_TIMELINE_EVENTS as u64);
    let mut events = app.service.events(&id, from).await.unwrap_or_default();
    // What the API's log shows this viewer: another principal's webhooks are theirs (ADR 021).
    let reader = taskledger_domain::projection::log::LogReader::Client(who);
    events.retain(|e| e.seq <= upto && taskledger_domain::projection::log::shown(&head, e, reader));
    // Each viewer's own webhooks, as the API lists them to that viewer (ADR 021).
    let pushes = app
        .service
        .list_push_configs(
            who,
            ListTaskPushNotificationConfigsRequest {
                tenant: None,
                task_id: task.id.clone(),
                page_size: None,
                page_token: None,
            },
        )
        .await
        .map(|r| r.configs)
        .ok();
    let outbox = app.settings.board.as_ref().and_then(|b| b.outbox.clone());
    let deliveries = match (&pushes, outbox) {
        (Some(_), Some(o)) => app
            .service
            .own_deliveries(who, id.as_str(), o.0.as_ref())
            .await
            .ok(),
        _ => None,
    };
    let related = super::subtask_tree::render(&app.service, who, &head).await;
    let origins = ImageOrigins::from_settings(
        app.settings
            .board
            .as_ref()
            .map(|b| b.image_origins.as_slice())
            .unwrap_or_default(),
    );
    let page = Page {
        who: who.clone(),
        task,
        head,
        version,
        events,
        pushes,
        deliveries,
        related,
        history,
        origins,
        as_of,
    };
    match tokio::task::spawn_blocking(move || draw(page)).await {
        Ok(markup) => markup.into_response(),
        Err(e) => {
            tracing::error!(error = %e, "drawing a task page failed");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the page could not be drawn",
            )
                .into_response()
        }
    }
}

fn draw(p: Page) -> Markup {
    let Page {
        who,
        task,
        head,
        version,
        events,
        pushes,
        deliveries,
        related,
        history,
        origins,
        as_of,
    } = p;
    let who = &who;
    let ext = task
        .metadata
        .as_ref()
        .and_then(|m| m.get(METADATA_KEY))
        .cloned();
    let title = ext
        .as_ref()
        .and_then(|e| e.get("name"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or(task.id.as_str())
        .to_string();
    let state = task.status.state.as_str();
    let older = head.history_len > history as u64 && history < MAX_HISTORY_LENGTH as usize;
    let body = html! {
        article #task data-task-id=(task.id) data-state=(state) data-generation=(version) data-as-of=[as_of.map(|a| a.at)] {
            h1 { (title) }
            @if let Some(g) = ext.as_ref().and_then(|e| e.get("goal")).and_then(Value::as_str) {
                p.goal { (g) }
            }
            p.meta {
                span class={ "badge " (state_label(state)) } #state { (state_label(state)) }
                " task " code { (task.id) } " · context " code { (task.context_id) }
            }
            @if let Some(m) = &task.status.message { div.status-message { (message_body(m)) } }
            @if version > 1 { (as_of::slider(&task.id, as_of.map(|a| a.at), as_of.map_or(version, |a| a.last), generation_after(&events))) }
            @if as_of.is_none() { (actions(&head, who, &task)) }
            section { h2 { "Plan" } (plan_svg::render(ext.as_ref())) }
            (participants(ext.as_ref(), head.administered_by(who) && !task.status.state.is_terminal()))
            (related)
            (history_section(&task, head.history_len, older.then(|| older_link(&task.id, history))))
            (super::a2ui::render(task.artifacts.as_deref().unwrap_or_default(), as_of.is_none() && may_send(&head, who, &task), &origins))
            (artifacts(&task))
            (usage(&task))
            (timeline(&events))
            (super::work::section(&events, deliveries.as_deref()))
            @if let Some(configs) = pushes {
                section {
                    h2 { "Push subscriptions" }
                    @if configs.is_empty() { p { "None." } }
                    ul { @for c in &configs { li { code { (c.id.clone().unwrap_or_default()) } " → " (c.url) } } }
                }
            }
        }
    };
    layout::page(&title, Some(who), body)
}

/// The link showing `HISTORY_PAGE` more of the history than `shown`.
fn older_link(task_id: &str, shown: usize) -> String {
    let more = (shown + HISTORY_PAGE).min(MAX_HISTORY_LENGTH as usize);
    format!(
        "/board/tasks/{}?history={more}",
        percent_encoding::utf8_percent_encode(task_id, percent_encoding::NON_ALPHANUMERIC)
    )
}

/// Whether the caller may send a message now: not on a finished task, not while a gate waits
/// for its decision (a message is refused then), not as a watcher, and on a task with
/// participants only as one of them.
fn may_send(head: &TaskHead, who: &Principal, task: &Task) -> bool {
    let mine = head.participant_of(who);
    let watcher = mine.is_some_and(|p| p.role == Role::Watcher);
    let has_participants = head
        .ext
        .as_ref()
        .is_some_and(|d| !d.participants.is_empty());
    let gated = head.open_gates().next().is_some();
    !task.status.state.is_terminal() && !gated && !watcher && (!has_participants || mine.is_some())
}

/// The actions the caller may take now, and only those: answering a help request it was asked,
/// deciding gates and tool calls (owner and admins), sending (not watchers), cancelling (owner and
/// admins). Each form is sent by the script through the public API.
fn actions(head: &TaskHead, who: &Principal, task: &Task) -> Markup {
    let terminal = task.status.state.is_terminal();
    let admin = head.administered_by(who);
    let mine = head.participant_of(who);
    let asked = head
        .pending_help
        .as_ref()
        .filter(|h| mine.is_some_and(|p| p.id == h.participant_id.as_str()));
    let may_send = may_send(head, who, task);
    html! {
        section.actions aria-label="Actions" {
            @if let Some(h) = asked {
                form.help data-rpc="answer-help" {
                    p { strong { "You were asked: " } (h.question) }
                    @for o in &h.options {
                        button type="submit" name="answer" value=(o) data-action="answer" { (o) }
                    }
                    @if h.options.is_empty() {
                        input name="answer" aria-label="Your answer" required;
                        button type="submit" data-action="answer" { "Answer" }
                    }
                }
            }
            @if admin {
                @for g in head.open_gates() {
                    @if g.kind == GateKind::ToolApproval {
                        form.gate data-rpc="approve-tools" data-gate=(g.id) {
                            p { strong { "Tool calls wait for approval" } }
                            @for t in g.asked() {
                                fieldset {
                                    legend { code { (t.name) } }
                                    details { summary { "arguments" } pre { (pretty(&t.args)) } }
                                    label { input type="radio" name=(t.id) value="approve" checked; " approve" }
                                    label { input type="radio" name=(t.id) value="reject"; " reject" }
                                }
                            }
                            button type="submit" data-action="decide-tools" { "Send decision" }
                        }
                    } @else {
                        form.gate data-rpc="answer-gate" data-gate=(g.id) {
                            p { strong { (gate_title(g.kind)) } }
                            @for choice in g.kind.choices() {
                                button type="submit" name="choice" value=(choice) data-action={ "gate-" (choice) } { (choice) }
                            }
                        }
                    }
                }
            }
            @if may_send {
                form.send data-rpc="send" {
                    label for="text" { "Message" }
                    textarea #text name="text" rows="2" required {}
                    button type="submit" data-action="send" { "Send" }
                }
            }
            @if admin && !terminal {
                form.cancel data-rpc="cancel" {
                    button type="submit" data-action="cancel" { "Cancel task" }
                }
            }
            p.result role="status" aria-live="polite" {}
        }
    }
}

fn gate_title(kind: GateKind) -> &'static str {
    match kind {
        GateKind::ToolApproval => "Tool calls wait for approval",
        _ => "A handoff waits for your decision",
    }
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// The participants and their roles; an admin may change a role (sent as an envelope, the
/// extension's way to update participants, through the public API).
fn participants(ext: Option<&Value>, admin: bool) -> Markup {
    let ps = ext
        .and_then(|e| e.get("participants"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let envelope = ext
        .map(|e| {
            serde_json::json!({
                "name": e.get("name").cloned().unwrap_or_default(),
                "goal": e.get("goal").cloned().unwrap_or_default(),
                "participants": e.get("participants").cloned().unwrap_or_default(),
            })
            .to_string()
        })
        .unwrap_or_default();
    const ROLES: [&str; 4] = ["admin", "assignee", "reporter", "watcher"];
    html! {
        @if !ps.is_empty() {
            section {
                h2 { "Participants" }
                table.participants {
                    thead { tr { th { "Participant" } th { "Role" } th { "Kind" } } }
                    tbody {
                        @for p in &ps {
                            @let id = p.get("id").and_then(Value::as_str).unwrap_or("");
                            @let role = p.get("role").and_then(Value::as_str).unwrap_or("");
                            tr data-participant=(id) {
                                td { (id) }
                                td {
                                    @if admin {
                                        form.role data-rpc="set-role" data-participant=(id) data-envelope=(envelope) {
                                            select name="role" aria-label={ "Role of " (id) } {
                                                @for r in ROLES { option value=(r) selected[r == role] { (r) } }
                                            }
                                            button type="submit" data-action="set-role" { "Change" }
                                        }
                                    } @else { (role) }
                                }
                                td { (p.get("kind").and_then(Value::as_str).unwrap_or("")) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The history shown (the last messages), with the way to older ones when there are more.
fn history_section(task: &Task, total: u64, older: Option<String>) -> Markup {
    let messages = task.history.clone().unwrap_or_default();
    html! {
        section {
            h2 { "History" }
            @if let Some(href) = older {
                p.older { a href=(href) { "Show older messages" } " (" (messages.len()) " of " (total) " shown)" }
            }
            ol.history {
                @for m in &messages {
                    li class={ "msg " (if m.role == taskledger_domain::wire::Role::User { "user" } else { "agent" }) } {
                        span.sender {
                            @if let Some(p) = m.metadata.as_ref().and_then(|md| md.get("participant_id")).and_then(Value::as_str) { (p) }
                            @else if m.role == taskledger_domain::wire::Role::User { "user" } @else { "agent" }
                        }
                        (message_body(m))
                    }
                }
            }
        }
    }
}

fn message_body(m: &Message) -> Markup {
    html! { @for p in &m.parts { (part(p)) } }
}

/// A part by kind: text as text, files as downloads, data folded as JSON (function calls and
/// results too, labelled).
fn part(p: &Part) -> Markup {
    let kind = p
        .metadata
        .as_ref()
        .and_then(|m| m.get("kagent.dev/a2a/part-type"))
        .and_then(Value::as_str);
    html! {
        @match &p.content {
            PartContent::Text(t) => { p.text { (t) } }
            PartContent::Url(u) => {
                @match urls::link(u) {
                    Some(href) => {
                        p.file { a href=(href) download=[p.filename.as_deref()] rel="noopener noreferrer" { "⬇ " (p.filename.as_deref().unwrap_or(u)) } }
                    }
                    // Not http(s): shown, never followed.
                    None => { p.file { "⬇ " (p.filename.as_deref().unwrap_or("file")) " " code.url { (u) } } }
                }
            }
            PartContent::Raw(bytes) => {
                p.file {
                    // Always a download of opaque bytes, whatever media type the part claims.
                    a href={ "data:application/octet-stream;base64," (base64_of(bytes)) }
                        download=(p.filename.as_deref().unwrap_or("file")) {
                        "⬇ " (p.filename.as_deref().unwrap_or("file")) " (" (bytes.len()) " bytes)"
                    }
                }
            }
            PartContent::Data(v) => {
                details.data {
                    summary { (match kind { Some("function_call") => "function call", Some("function_response") => "function result", _ => "data" }) (p.media_type.as_deref().map(|m| format!(" · {m}")).unwrap_or_default()) }
                    pre { (pretty(v)) }
                }
            }
        }
    }
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn artifacts(task: &Task) -> Markup {
    let arts = task.artifacts.clone().unwrap_or_default();
    html! {
        @if !arts.is_empty() {
            section {
                h2 { "Artifacts" }
                @for a in &arts {
                    article.artifact {
                        h3 { (a.name.clone().unwrap_or_else(|| a.artifact_id.clone())) }
                        @for p in &a.parts { (part(p)) }
                    }
                }
            }
        }
    }
}

/// Token usage per model, as bars (kagent's usage extension in task metadata).
fn usage(task: &Task) -> Markup {
    let models: Vec<(String, u64)> = task
        .metadata
        .as_ref()
        .and_then(|m| m.get(USAGE_KEY))
        .and_then(|u| u.get("models"))
        .and_then(Value::as_array)
        .map(|ms| {
            ms.iter()
                .map(|m| {
                    (
                        m.get("model")
                            .and_then(Value::as_str)
                            .unwrap_or("?")
                            .to_string(),
                        m.get("totalTokens").and_then(Value::as_u64).unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let max = models.iter().map(|(_, n)| *n).max().unwrap_or(1).max(1);
    html! {
        @if !models.is_empty() {
            section {
                h2 { "Token usage" }
                svg.usage role="img" aria-label="Tokens per model" width="420" height=(models.len() * 26 + 6) {
                    @for (i, (model, n)) in models.iter().enumerate() {
                        text x="0" y=(i * 26 + 18) { (model) }
                        rect x="140" y=(i * 26 + 4) height="18" width=(n * 220 / max + 1) {}
                        text x=(n * 220 / max + 148) y=(i * 26 + 18) { (n) }
                    }
                }
            }
        }
    }
}

/// Who did what, when: every event with its sequence, the generation a client saw after it,
/// and the participant it names.
fn timeline(events: &[taskledger_domain::task::stored::StoredEvent]) -> Markup {
    let shown = &events[events.len().saturating_sub(MAX_TIMELINE_EVENTS)..];
    html! {
        section {
            h2 { "Timeline" }
            ol.timeline {
                @for e in shown {
                    @let payload = e.payload.to_value();
                    @let body = payload.get(&e.event_type);
                    @let by = body.and_then(|b| b.get("acted_by").or_else(|| b.get("by")).or_else(|| b.get("participant_id")));
                    li data-seq=(e.seq) {
                        time datetime=(e.recorded_at.to_rfc3339_millis()) { (e.recorded_at.to_rfc3339_millis()) }
                        " #" (e.seq)
                        @if let Some(u) = &e.update { " · generation " (u.generation) }
                        " · " strong { (e.event_type) }
                        @if let Some(b) = by.filter(|b| !b.is_null()) {
                            " by " (b.as_str().map(str::to_string).unwrap_or_else(|| principal_text(b)))
                        }
                    }
                }
            }
        }
    }
}

/// The generation the last of `events` left the task at (as recorded with its updates).
fn generation_after(events: &[taskledger_domain::task::stored::StoredEvent]) -> Option<u64> {
    events
        .iter()
        .rev()
        .find_map(|e| e.update.as_ref().map(|u| u.generation))
}

fn principal_text(v: &Value) -> String {
    match (
        v.get("tenant").and_then(Value::as_str),
        v.get("subject").and_then(Value::as_str),
    ) {
        (Some(t), Some(s)) => format!("{t}/{s}"),
        _ => v.to_string(),
    }
}
