//! MCP servers' tools in the model loop (ADR 034): the catalog offered to the model beside the
//! intrinsic tools (each `NAME__tool` with its JSON schema; read again when a server says its
//! list changed; names that are not valid function names or that collide refused with a log
//! line), and a call run against its server — a client span of a trace of its own linked to the
//! turn and named to the server in the call's `_meta.traceparent` (SEP-414), counted in
//! `taskledger_mcp_calls_total`, its result bounded, an error given back to the
//! model as the call's result. Which calls wait for a person is the approval list's
//! (`NAME__tool`, `NAME__*`) and the tool's `destructiveHint` unless the deployment trusts it.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use taskledger_domain::agent::llm::{ToolCall, ToolSpec};
use taskledger_domain::agent::mcp::{self, OfferedTool, ToolServer};
use tracing::{warn, Instrument};

use crate::telemetry::{self, CallOutcome};

/// The MCP servers of a deployment and what they offer now.
pub struct McpTools {
    servers: Vec<Arc<dyn ToolServer>>,
    /// Destructive tools that run without an approval (`NAME__tool` or `NAME__*`).
    trusted: Vec<String>,
    offered: Mutex<Vec<OfferedTool>>,
    /// The refusals last logged (each logged once, not at every step).
    refused: Mutex<Vec<String>>,
}

impl McpTools {
    pub fn new(servers: Vec<Arc<dyn ToolServer>>, trusted: Vec<String>) -> Arc<Self> {
        Arc::new(Self {
            servers,
            trusted,
            offered: Mutex::new(Vec::new()),
            refused: Mutex::new(Vec::new()),
        })
    }

    /// The tools offered now, read again from each server (a server answers from its list
    /// unless it said the list changed); a server that cannot list keeps offering nothing and
    /// is logged.
    pub async fn specs(&self) -> Vec<ToolSpec> {
        let mut lists = Vec::new();
        for s in &self.servers {
            match s.tools().await {
                Ok(tools) => lists.push((s.name().to_string(), tools)),
                Err(e) => warn!(server = s.name(), error = %e, "MCP server's tools not listed"),
            }
        }
        let reserved: Vec<String> = taskledger_domain::agent::tools::specs()
            .into_iter()
            .map(|t| t.name)
            .collect();
        let (offered, refused) = mcp::catalog(&lists, &reserved);
        if let Ok(mut logged) = self.refused.lock() {
            for r in refused.iter().filter(|r| !logged.contains(r)) {
                warn!(refusal = %r, "MCP tool not offered to the model");
            }
            *logged = refused;
        }
        let specs = offered.iter().map(OfferedTool::spec).collect();
        if let Ok(mut o) = self.offered.lock() {
            *o = offered;
        }
        specs
    }

    fn find(&self, name: &str) -> Option<OfferedTool> {
        self.offered
            .lock()
            .ok()?
            .iter()
            .find(|t| t.qualified() == name)
            .cloned()
    }

    /// Whether `name` is one of the MCP tools offered.
    pub fn offers(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// Whether a call of `name` waits for a person because of its tool's own annotation.
    pub fn destructive(&self, name: &str) -> bool {
        self.find(name).is_some_and(|t| {
            t.tool.destructive && !self.trusted.iter().any(|e| mcp::approval_covers(e, name))
        })
    }

    /// Runs `call` on its server: the model reads the text, or the error.
    pub async fn call(&self, call: &ToolCall) -> Result<String, String> {
        let Some(tool) = self.find(&call.name) else {
            return Err(format!("no MCP tool {} is offered", call.name));
        };
        let Some(server) = self.servers.iter().find(|s| s.name() == tool.server) else {
            return Err(format!("MCP server {} is not configured", tool.server));
        };
        let span = crate::exported_span!(
            "mcp.call",
            otel.kind = "client",
            mcp.server = %tool.server,
            mcp.tool = %tool.tool.name
        );
        let trace = telemetry::trace::leaving_current(&span);
        let started = Instant::now();
        let result = server
            .call(&tool.tool.name, call.arguments.clone(), trace.as_ref())
            .instrument(span)
            .await;
        let outcome = match &result {
            Ok(r) if !r.is_error => CallOutcome::Ok,
            Err(e) if e.contains("in time") || e.contains("within") => CallOutcome::Timeout,
            _ => CallOutcome::Error,
        };
        telemetry::metrics().mcp(outcome, started.elapsed());
        mcp::bounded(result?)
    }
}
