//! MCP servers for the model agent, composed (ADR 034): `NAME=URL` each (`--mcp-server`,
//! `TASKLEDGER_MCP_SERVERS`, template parameter `McpServers`), a bearer token per server from
//! a file or the environment (`TASKLEDGER_MCP_TOKEN_<NAME>`; on AWS a Secrets Manager secret),
//! every URL under the webhooks' SSRF rules; destructive tools a deployment trusts run without
//! an approval (`--mcp-trust NAME__tool,NAME__*`).

use std::sync::Arc;

use taskledger_domain::agent::mcp::{valid_function_name, ToolServer, SEPARATOR};
use taskledger_domain::push::AddressPolicy;
use taskledger_infra::mcp::{McpHeader, McpServer};

use super::UpstreamToken;
use crate::agent::llm::McpTools;

/// One MCP server, reached over Streamable HTTP (`url`), or run as a child process spoken to
/// over stdio (`command`; the local server only: `--mcp-command`).
#[derive(Debug, Clone)]
pub struct McpServerSpec {
    pub name: String,
    pub url: String,
    pub command: Option<String>,
    pub token: Option<UpstreamToken>,
    pub policy: AddressPolicy,
}

impl McpServerSpec {
    pub fn new(name: &str, url: &str, policy: AddressPolicy) -> Self {
        Self {
            name: name.to_string(),
            url: url.to_string(),
            command: None,
            token: None,
            policy,
        }
    }

    /// Server `name` run as `command` over stdio.
    pub fn stdio(name: &str, command: &str) -> Self {
        let mut spec = Self::new(name, "", AddressPolicy::strict());
        spec.command = Some(command.to_string());
        spec
    }

    /// `NAME=CMD` entries (`--mcp-command`, repeatable): servers run over stdio.
    pub fn parse_commands(entries: &[String]) -> Result<Vec<Self>, String> {
        entries
            .iter()
            .map(|e| {
                let (name, command) = e
                    .split_once('=')
                    .ok_or_else(|| format!("MCP command {e:?}: expected NAME=CMD"))?;
                check_name(name.trim())?;
                Ok(Self::stdio(name.trim(), command.trim()))
            })
            .collect()
    }

    /// `NAME=URL,NAME=URL`: names that are function-name material without `__`, each once;
    /// each server's token is the settings' (`TASKLEDGER_MCP_TOKEN_<NAME>`).
    pub fn parse_list(list: &str, policy: &AddressPolicy) -> Result<Vec<Self>, String> {
        let mut out: Vec<Self> = Vec::new();
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (name, url) = entry
                .split_once('=')
                .ok_or_else(|| format!("MCP server {entry:?}: expected NAME=URL"))?;
            let name = name.trim();
            check_name(name)?;
            if out.iter().any(|s| s.name == name) {
                return Err(format!("MCP server {name} is named twice"));
            }
            out.push(Self::new(name, url.trim(), policy.clone()));
        }
        Ok(out)
    }

    fn build(&self) -> Result<Arc<dyn ToolServer>, String> {
        if let Some(command) = &self.command {
            return McpServer::stdio(&self.name, command)
                .map(|s| Arc::new(s) as Arc<dyn ToolServer>)
                .map_err(|e| e.to_string());
        }
        let headers = self
            .token
            .as_ref()
            .map(|t| McpHeader::new("Authorization", &format!("Bearer {}", t.secret())))
            .transpose()
            .map_err(|e| e.to_string())?
            .into_iter()
            .collect();
        McpServer::http(&self.name, &self.url, self.policy.clone(), headers)
            .map(|s| Arc::new(s) as Arc<dyn ToolServer>)
            .map_err(|e| e.to_string())
    }
}

fn check_name(name: &str) -> Result<(), String> {
    if !valid_function_name(name) || name.contains(SEPARATOR) {
        return Err(format!(
            "MCP server name {name:?}: ASCII letters, digits, _ and -, without {SEPARATOR}"
        ));
    }
    Ok(())
}

/// The model agent's MCP tools (none without servers).
pub fn mcp_tools(
    specs: &[McpServerSpec],
    trusted: Vec<String>,
) -> Result<Option<Arc<McpTools>>, String> {
    if specs.is_empty() {
        return Ok(None);
    }
    let servers = specs
        .iter()
        .map(McpServerSpec::build)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(McpTools::new(servers, trusted)))
}
