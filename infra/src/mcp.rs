//! MCP servers' tools for the model agent (ADR 034), behind `agent::mcp::ToolServer`: the
//! official Rust MCP SDK (`rmcp`) over Streamable HTTP, its HTTP client the SSRF-guarded one
//! webhooks use (every address checked in the resolver, no redirects, no proxy), a header or
//! bearer per server from the deployment's secrets (sensitive: never logged or echoed); or, for
//! the local server only, a child process spoken to over stdio (`McpServer::stdio`). The
//! session is opened at the first use and again after it broke; the tool list is read again
//! after the server says it changed (`notifications/tools/list_changed`). Each call has a
//! timeout; the SDK bounds what one answer may be.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::RequestParamsMeta;
use rmcp::model::{CallToolRequestParams, ContentBlock};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use taskledger_domain::agent::mcp::{CallResult, ListedTool, ToolServer, MAX_TOOL_RESULT_BYTES};
use taskledger_domain::push::AddressPolicy;
use taskledger_domain::trace::TraceContext;
use tokio::sync::Mutex;

use crate::webhook::{guarded_client, literal_permitted};

/// How long one tool call may take.
pub const MCP_CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long opening a session may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest JSON answer read from a server (a tool result past `MAX_TOOL_RESULT_BYTES` is
/// an error the model reads; this bounds what is read before that is known).
const MAX_ANSWER_BYTES: usize = 4 * MAX_TOOL_RESULT_BYTES;

#[derive(Debug, thiserror::Error)]
pub enum McpSetupError {
    #[error("cannot build the MCP HTTP client: {0}")]
    Client(String),
    #[error("MCP server {0}: {1}")]
    Server(String, String),
}

/// Notes the server's `notifications/tools/list_changed`.
#[derive(Clone, Default)]
struct Listener {
    changed: Arc<AtomicBool>,
}

impl ClientHandler for Listener {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.changed.store(true, Ordering::Relaxed);
        std::future::ready(())
    }
}

/// A header a server is sent on every request (a bearer token or an API key): sensitive.
#[derive(Clone)]
pub struct McpHeader {
    name: reqwest::header::HeaderName,
    value: reqwest::header::HeaderValue,
}

impl std::fmt::Debug for McpHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "McpHeader {{ {}: <redacted> }}", self.name)
    }
}

impl McpHeader {
    /// `name: value`, e.g. `Authorization: Bearer …`.
    pub fn new(name: &str, value: &str) -> Result<Self, McpSetupError> {
        let bad = |e: String| McpSetupError::Client(format!("header {name}: {e}"));
        let name = reqwest::header::HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|e| bad(e.to_string()))?;
        let mut value = reqwest::header::HeaderValue::from_str(value.trim())
            .map_err(|_| bad("the value has characters a header cannot carry".into()))?;
        value.set_sensitive(true);
        Ok(Self { name, value })
    }
}

type Session = RunningService<RoleClient, Listener>;

/// How a server is reached.
enum Endpoint {
    Http {
        url: String,
        client: reqwest::Client,
        headers: Vec<McpHeader>,
    },
    /// A program started (again, after it exited) and spoken to over its stdin and stdout.
    Stdio { program: String, args: Vec<String> },
}

/// One MCP server.
pub struct McpServer {
    name: String,
    endpoint: Endpoint,
    listener: Listener,
    session: Mutex<Option<Arc<Session>>>,
    tools: Mutex<Option<Vec<ListedTool>>>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "McpHttpServer {{ name: {:?} }}", self.name)
    }
}

impl McpServer {
    /// Server `name` run as `command` (a program and its arguments, split on blanks; no shell),
    /// over stdio: for the local server, whose operator names the program.
    pub fn stdio(name: &str, command: &str) -> Result<Self, McpSetupError> {
        let mut words = command.split_whitespace().map(str::to_string);
        let program = words
            .next()
            .ok_or_else(|| McpSetupError::Server(name.into(), "the command is empty".into()))?;
        Ok(Self {
            name: name.to_string(),
            endpoint: Endpoint::Stdio {
                program,
                args: words.collect(),
            },
            listener: Listener::default(),
            session: Mutex::new(None),
            tools: Mutex::new(None),
        })
    }

    /// Server `name` at `url` (its Streamable HTTP endpoint, often `/mcp`), under `policy`.
    pub fn http(
        name: &str,
        url: &str,
        policy: AddressPolicy,
        headers: Vec<McpHeader>,
    ) -> Result<Self, McpSetupError> {
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| McpSetupError::Server(name.into(), format!("the URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(McpSetupError::Server(
                name.into(),
                "the URL must be http or https".into(),
            ));
        }
        literal_permitted(&policy, &parsed)
            .map_err(|e| McpSetupError::Server(name.into(), format!("refused: {e}")))?;
        let client = guarded_client(Arc::new(policy))
            .build()
            .map_err(|e| McpSetupError::Client(e.to_string()))?;
        Ok(Self {
            name: name.to_string(),
            endpoint: Endpoint::Http {
                url: url.to_string(),
                client,
                headers,
            },
            listener: Listener::default(),
            session: Mutex::new(None),
            tools: Mutex::new(None),
        })
    }

    async fn session(&self) -> Result<Arc<Session>, String> {
        let mut held = self.session.lock().await;
        if let Some(s) = held.as_ref().filter(|s| !s.is_closed()) {
            return Ok(s.clone());
        }
        let late = || "the server did not answer initialize in time".to_string();
        let opened = match &self.endpoint {
            Endpoint::Http {
                url,
                client,
                headers,
            } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.clone());
                config.max_json_response_size = MAX_ANSWER_BYTES;
                config.max_sse_event_size = MAX_ANSWER_BYTES;
                config.custom_headers = headers
                    .iter()
                    .map(|h| (h.name.clone(), h.value.clone()))
                    .collect::<HashMap<_, _>>();
                let transport = StreamableHttpClientTransport::with_client(client.clone(), config);
                tokio::time::timeout(CONNECT_TIMEOUT, self.listener.clone().serve(transport))
                    .await
                    .map_err(|_| late())?
                    .map_err(|e| format!("initialize failed: {e}"))?
            }
            Endpoint::Stdio { program, args } => {
                let mut command = tokio::process::Command::new(program);
                command.args(args);
                let (transport, _) = TokioChildProcess::builder(command)
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .map_err(|e| format!("the server's program does not start: {e}"))?;
                tokio::time::timeout(CONNECT_TIMEOUT, self.listener.clone().serve(transport))
                    .await
                    .map_err(|_| late())?
                    .map_err(|e| format!("initialize failed: {e}"))?
            }
        };
        let s = Arc::new(opened);
        *held = Some(s.clone());
        // A new session lists its tools anew.
        self.listener.changed.store(true, Ordering::Relaxed);
        Ok(s)
    }
}

fn listed(t: rmcp::model::Tool) -> ListedTool {
    ListedTool {
        name: t.name.to_string(),
        description: t.description.map(|d| d.to_string()).unwrap_or_default(),
        input_schema: Value::Object((*t.input_schema).clone()),
        destructive: t
            .annotations
            .and_then(|a| a.destructive_hint)
            .unwrap_or(false),
    }
}

fn text_of(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .map(|b| match b.as_text() {
            Some(t) => t.text.clone(),
            None => serde_json::to_string(b).unwrap_or_default(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[async_trait]
impl ToolServer for McpServer {
    fn name(&self) -> &str {
        &self.name
    }

    async fn tools(&self) -> Result<Vec<ListedTool>, String> {
        let session = self.session().await?;
        let mut tools = self.tools.lock().await;
        if let (Some(t), false) = (
            tools.as_ref(),
            self.listener.changed.swap(false, Ordering::Relaxed),
        ) {
            return Ok(t.clone());
        }
        let listed: Vec<ListedTool> =
            tokio::time::timeout(MCP_CALL_TIMEOUT, session.list_all_tools())
                .await
                .map_err(|_| "tools/list did not answer in time".to_string())?
                .map_err(|e| format!("tools/list failed: {e}"))?
                .into_iter()
                .map(listed)
                .collect();
        *tools = Some(listed.clone());
        Ok(listed)
    }

    async fn call(
        &self,
        tool: &str,
        arguments: Value,
        trace: Option<&TraceContext>,
    ) -> Result<CallResult, String> {
        let session = self.session().await?;
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Value::Object(args) = arguments {
            params = params.with_arguments(args);
        }
        // The calling span's own context (never a caller's `tracestate`): SEP-414's `_meta`.
        if let Some(t) = trace {
            params.set_traceparent(&t.traceparent());
        }
        let result = tokio::time::timeout(MCP_CALL_TIMEOUT, session.call_tool(params))
            .await
            .map_err(|_| {
                format!(
                    "the call did not answer within {} s",
                    MCP_CALL_TIMEOUT.as_secs()
                )
            })?
            .map_err(|e| format!("the call failed: {e}"))?;
        let mut text = text_of(&result.content);
        if text.is_empty() {
            if let Some(s) = &result.structured_content {
                text = s.to_string();
            }
        }
        Ok(CallResult {
            text,
            is_error: result.is_error.unwrap_or(false),
        })
    }
}
