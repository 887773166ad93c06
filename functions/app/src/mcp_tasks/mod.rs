//! Every task an MCP task too (issue 56, ADR 039): an MCP endpoint (`/mcp`, Streamable HTTP,
//! rmcp's server) whose one tool, `send_message`, sends a message to the agent as A2A's
//! SendMessage does — answered, for a client that declares MCP's Tasks extension
//! (`io.modelcontextprotocol/tasks`), with an MCP task whose id is the A2A task's; for one
//! that does not, once the task finishes or waits. `tasks/get`, `tasks/update` (the answer to
//! the question a waiting task asks) and `tasks/cancel` read and change the same task through
//! the same service, so a task made over MCP is read over A2A and the reverse. The caller is
//! who the same credentials say (the `Authorization` header, checked before rmcp sees the
//! request); every call reads the task as that caller may.

pub mod shapes;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
    ContentBlock as Content, CreateTaskResult, ErrorData as McpError, GetTaskParams, GetTaskResult,
    Implementation, JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{json, Value};
use taskledger_domain::error::ErrorKind;
use taskledger_domain::ids::Principal;
use taskledger_domain::wire::{SendMessageResponse, Task, TaskState};

use crate::error::AppError;
use crate::http::AppState;
use crate::operations::{self, Context, Operation, Outcome};
use crate::request;
use crate::telemetry::Binding;

/// Where the endpoint is served.
pub const MCP_PATH: &str = "/mcp";
/// The one tool.
pub const TOOL: &str = "send_message";
/// The longest message text the tool takes, in bytes (A2A's own limits apply after).
pub const MAX_TEXT_BYTES: usize = 64 * 1024;

/// The caller, as the credentials of the HTTP request said.
#[derive(Debug, Clone)]
struct Caller(Principal);

/// The MCP endpoint's routes, with the authentication every request passes first.
pub fn routes(state: Arc<AppState>) -> Router<Arc<AppState>> {
    let handler = TaskTools {
        state: state.clone(),
    };
    // The router's own guard checks hosts and origins (a server without credentials).
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_json_response(true);
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new()
        .nest_service(MCP_PATH, service)
        .layer(axum::middleware::from_fn_with_state(state, authenticate))
}

/// Who calls, from the request's credentials: refused with 401 (the router adds how to
/// authenticate) before rmcp reads anything.
async fn authenticate(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    match state.auth.authenticate(&parts).await {
        Ok(who) => {
            parts.extensions.insert(Caller(who));
            next.run(Request::from_parts(parts, body)).await
        }
        Err(e) => (StatusCode::UNAUTHORIZED, e.to_string()).into_response(),
    }
}

#[derive(Clone)]
struct TaskTools {
    state: Arc<AppState>,
}

impl TaskTools {
    fn caller(ctx: &RequestContext<RoleServer>) -> Result<Principal, McpError> {
        ctx.extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<Caller>())
            .map(|c| c.0.clone())
            .ok_or_else(|| McpError::invalid_request("the request carries no caller", None))
    }

    /// How long a finished task of `who`'s tenant is kept, in ms (`None`: forever).
    fn ttl_ms(&self, who: &Principal) -> Option<u64> {
        self.state
            .service
            .retention()
            .period(who.tenant.as_str())
            .secs()
            .map(|s| s.saturating_mul(1000))
    }

    /// One A2A operation for an MCP request, run as every binding's are (`operations`): the
    /// request's span, continuing the trace its `traceparent` names, its metrics (binding
    /// `mcp`), the same rules.
    async fn run(
        &self,
        rc: &RequestContext<RoleServer>,
        who: &Principal,
        op: Operation,
    ) -> Result<Outcome, AppError> {
        let mut ctx = Context::new(who.clone(), Binding::Mcp);
        if let Some(parts) = rc.extensions.get::<axum::http::request::Parts>() {
            let values = |name: &'static str| {
                parts
                    .headers
                    .get_all(name)
                    .iter()
                    .filter_map(|v| v.to_str().ok())
            };
            ctx.trace = request::trace_context(values("traceparent"), values("tracestate"));
        }
        operations::execute(&self.state.service, ctx, op)
            .await
            .map(|r| r.outcome)
    }

    async fn task(
        &self,
        rc: &RequestContext<RoleServer>,
        who: &Principal,
        id: &str,
    ) -> Result<Task, McpError> {
        let req = serde_json::from_value(json!({"id": id, "historyLength": 0}))
            .map_err(|e| McpError::invalid_params(format!("taskId: {e}"), None))?;
        match self.run(rc, who, Operation::GetTask(req)).await {
            Ok(Outcome::Task(t)) => Ok(*t),
            Ok(_) => Err(McpError::internal_error("GetTask answered no task", None)),
            Err(e) => Err(mcp_error(e)),
        }
    }

    /// Sends `text` as `who` (to `task_id`, in `context_id`), returning at once or once the
    /// task finishes or waits.
    async fn send(
        &self,
        rc: &RequestContext<RoleServer>,
        who: &Principal,
        text: &str,
        task_id: Option<&str>,
        context_id: Option<&str>,
        at_once: bool,
    ) -> Result<SendMessageResponse, McpError> {
        let mut message = json!({"messageId": uuid::Uuid::new_v4().to_string(),
            "role": "ROLE_USER", "parts": [{"text": text}]});
        if let Some(t) = task_id {
            message["taskId"] = json!(t);
        }
        if let Some(c) = context_id {
            message["contextId"] = json!(c);
        }
        let req = serde_json::from_value(
            json!({"message": message, "configuration": {"returnImmediately": at_once}}),
        )
        .map_err(|e| McpError::invalid_params(e.to_string(), None))?;
        match self.run(rc, who, Operation::SendMessage(req)).await {
            Ok(Outcome::Sent(r)) => Ok(r),
            Ok(_) => Err(McpError::internal_error(
                "SendMessage answered nothing",
                None,
            )),
            Err(e) => Err(mcp_error(e)),
        }
    }
}

/// An A2A error as MCP says it: a task not found (or not the caller's) and bad input are
/// invalid params (-32602), as MCP's Tasks ask; the rest internal.
fn mcp_error(e: AppError) -> McpError {
    match e.kind() {
        ErrorKind::TaskNotFound => {
            McpError::invalid_params(format!("Failed to retrieve task: {e}"), None)
        }
        ErrorKind::InvalidParams
        | ErrorKind::TaskNotCancelable
        | ErrorKind::UnsupportedOperation
        | ErrorKind::ContentTypeNotSupported
        | ErrorKind::PayloadTooLarge => McpError::invalid_params(e.to_string(), None),
        ErrorKind::RateLimited => McpError::invalid_request(e.to_string(), None),
        _ => McpError::internal_error(e.to_string(), None),
    }
}

fn tool() -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "What to tell the agent"},
            "taskId": {"type": "string", "description": "A task to continue (its answer, more input)"},
            "contextId": {"type": "string", "description": "A conversation to start the task in"},
        },
        "required": ["text"],
    });
    let Value::Object(schema) = schema else {
        unreachable!("a JSON object literal")
    };
    Tool::new(
        TOOL,
        "Send a message to the agent: a new task, or more input to the task named by taskId. \
         A client of MCP's Tasks extension gets the task at once and polls it; any other \
         client gets the answer once the task finishes or asks something.",
        Arc::new(schema),
    )
}

/// A finished or waiting task as a plain tool result (a client without the Tasks extension).
fn result_of(task: &Task) -> CallToolResult {
    let detailed = shapes::detailed(task, None);
    let message = detailed.task.status_message.clone().unwrap_or_default();
    let structured = json!({"taskId": task.id, "contextId": task.context_id,
        "state": task.status.state.as_str()});
    match task.status.state {
        TaskState::Completed => {
            let v = serde_json::to_value(&detailed).unwrap_or_default();
            let texts: Vec<Content> = v["result"]["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["text"].as_str())
                .map(Content::text)
                .collect();
            let mut r = CallToolResult::success(texts);
            r.structured_content = Some(structured);
            r
        }
        TaskState::InputRequired | TaskState::AuthRequired => {
            let mut r = CallToolResult::success(vec![Content::text(format!(
                "Task {} asks: {message} (answer with send_message and taskId {})",
                task.id, task.id
            ))]);
            r.structured_content = Some(structured);
            r
        }
        _ => {
            let mut r = CallToolResult::error(vec![Content::text(format!(
                "Task {} is {}: {message}",
                task.id,
                task.status.state.as_str()
            ))]);
            r.structured_content = Some(structured);
            r
        }
    }
}

fn arg<'a>(args: &'a JsonObject, name: &str) -> Result<Option<&'a str>, McpError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(other) => Err(McpError::invalid_params(
            format!("{name}: a string is expected, not {other}"),
            None,
        )),
    }
}

impl ServerHandler for TaskTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("taskledger", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Each call of send_message is an A2A task of this server; with MCP's Tasks \
             extension it is returned as an MCP task with the same id.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(vec![tool()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == TOOL).then(tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let who = Self::caller(&ctx)?;
        if request.name != TOOL {
            return Err(McpError::invalid_params(
                format!("no tool named {:?} (this server has {TOOL})", request.name),
                None,
            ));
        }
        let args = request.arguments.unwrap_or_default();
        let text = arg(&args, "text")?
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| {
                McpError::invalid_params("text: a non-empty string is required", None)
            })?;
        if text.len() > MAX_TEXT_BYTES {
            return Err(McpError::invalid_params(
                format!("text: {} bytes, at most {MAX_TEXT_BYTES}", text.len()),
                None,
            ));
        }
        let (task_id, context_id) = (arg(&args, "taskId")?, arg(&args, "contextId")?);
        // The Tasks extension is defined from 2026-07-28 on: a session of an older version
        // gets the result, whatever it declares.
        let modern = ctx.protocol_version().is_some_and(|v| !v.has_initialize());
        let as_task = modern
            && ctx
                .client_capabilities()
                .is_some_and(|c| c.supports_tasks());
        let task = match self
            .send(&ctx, &who, text, task_id, context_id, as_task)
            .await?
        {
            SendMessageResponse::Task(t) => t,
            SendMessageResponse::Message(m) => {
                return Ok(CallToolResult::success(vec![Content::text(shapes::text_of(&m))]).into())
            }
        };
        Ok(if as_task {
            let message = task
                .status
                .message
                .as_ref()
                .map(shapes::text_of)
                .filter(|t| !t.is_empty());
            CallToolResponse::Task(CreateTaskResult::new(shapes::seed(
                &task,
                self.ttl_ms(&who),
                message,
            )))
        } else {
            CallToolResponse::Complete(result_of(&task))
        })
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let who = Self::caller(&ctx)?;
        let task = self.task(&ctx, &who, &request.task_id).await?;
        Ok(GetTaskResult::new(shapes::detailed(
            &task,
            self.ttl_ms(&who),
        )))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let who = Self::caller(&ctx)?;
        let task = self.task(&ctx, &who, &request.task_id).await?;
        if shapes::status_of(task.status.state) != rmcp::model::TaskStatus::InputRequired {
            return Ok(());
        }
        // Only the question asked now; answers to others are ignored, as MCP asks.
        let key = shapes::question_key(&task);
        let Some(response) = request.input_responses.get(&key) else {
            return Ok(());
        };
        if let Some(text) = shapes::answer_text(response) {
            self.send(&ctx, &who, &text, Some(&task.id), None, true)
                .await?;
        } else if response.get("action").and_then(Value::as_str) == Some("cancel") {
            self.cancel(&ctx, &who, &task.id).await?;
        }
        Ok(())
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let who = Self::caller(&ctx)?;
        self.cancel(&ctx, &who, &request.task_id).await
    }
}

impl TaskTools {
    /// Cancels the task; one that has ended already is acknowledged (MCP's cancel is
    /// cooperative).
    async fn cancel(
        &self,
        rc: &RequestContext<RoleServer>,
        who: &Principal,
        id: &str,
    ) -> Result<(), McpError> {
        let req = serde_json::from_value(json!({"id": id}))
            .map_err(|e| McpError::invalid_params(format!("taskId: {e}"), None))?;
        match self.run(rc, who, Operation::CancelTask(req)).await {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == ErrorKind::TaskNotCancelable => Ok(()),
            Err(e) => Err(mcp_error(e)),
        }
    }
}
