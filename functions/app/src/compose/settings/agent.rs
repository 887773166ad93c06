//! Which agent works on tasks, as the settings name it: an upstream A2A agent, a custom agent
//! built in, a model (OpenAI-compatible or Bedrock), else the built-in scenario agent.

use taskledger_infra::llm::OpenAiSettings;

use super::{Deployment, Settings, SettingsError};
use crate::compose::{follow_window, UpstreamToken};
use crate::compose::{tool_list, AgentChoice, CustomAgent, McpServerSpec, UpstreamChoice};

impl Settings {
    /// The agent the settings name; `custom` finds an agent built into the binary by name
    /// (`--custom-agent`; the binaries pass `taskledger_example_agent::by_name`).
    pub fn agent(
        &self,
        d: Deployment,
        custom: impl Fn(&str) -> Option<std::sync::Arc<dyn crate::agent::Agent>>,
    ) -> Result<AgentChoice, SettingsError> {
        if let Some(upstream) = self.upstream(d)? {
            return Ok(AgentChoice::Upstream(upstream));
        }
        if let Some(name) = nonblank(&self.custom_agent) {
            let agent = custom(name).ok_or_else(|| {
                SettingsError::invalid("--custom-agent", format!("no agent {name:?} is built in"))
            })?;
            return Ok(AgentChoice::Custom(CustomAgent(agent, name.to_string())));
        }
        let approve_tools = tool_list(&self.approve_tools);
        if let (None, Some(model)) = (nonblank(&self.llm_base_url), nonblank(&self.bedrock_model)) {
            return Ok(AgentChoice::Bedrock {
                model: model.to_string(),
                max_turns: self.max_turns,
                skills_dir: self.skills_dir.clone(),
                approve_tools,
            });
        }
        Ok(match nonblank(&self.llm_base_url) {
            Some(url) => {
                let mut settings = OpenAiSettings::new(url.to_string(), self.llm_model.clone());
                settings.api_key = nonblank(&self.llm_api_key).map(str::to_string);
                AgentChoice::OpenAi {
                    settings,
                    max_turns: self.max_turns,
                    skills_dir: self.skills_dir.clone(),
                    approve_tools,
                }
            }
            None => AgentChoice::Scenario {
                conformance: self.conformance_scenarios,
            },
        })
    }

    /// `--agent-url` and its credential: the upstream A2A agent as the worker (ADR 034).
    pub fn upstream(&self, d: Deployment) -> Result<Option<UpstreamChoice>, SettingsError> {
        let Some(url) = nonblank(&self.agent_url) else {
            return Ok(None);
        };
        let mut c = UpstreamChoice::new(url, self.address_policy(d)?)
            .map_err(|e| SettingsError::invalid("--agent-url", e))?;
        c.token = super::read_or_text(
            "--agent-token-file / TASKLEDGER_AGENT_TOKEN",
            self.agent_token.as_deref(),
            self.agent_token_file.as_deref(),
        )?
        .and_then(|t| UpstreamToken::new(&t));
        c.auth_header = nonblank(&self.agent_auth_header).map(str::to_string);
        c.follow.window = follow_window(self.agent_follow_secs);
        Ok(Some(c))
    }

    /// The MCP servers over Streamable HTTP (`--mcp-server`), each with its token from
    /// `TASKLEDGER_MCP_TOKEN_<NAME>`, else from the tokens object (`TASKLEDGER_MCP_TOKENS` or
    /// its file), which names only servers configured.
    pub fn mcp_servers(&self, d: Deployment) -> Result<Vec<McpServerSpec>, SettingsError> {
        let mut specs =
            McpServerSpec::parse_list(&self.mcp_servers.join(","), &self.address_policy(d)?)
                .map_err(|e| SettingsError::invalid("--mcp-server / TASKLEDGER_MCP_SERVERS", e))?;
        let name = "--mcp-tokens-file / TASKLEDGER_MCP_TOKENS";
        let tokens = super::read_or_text(
            name,
            self.mcp_tokens.as_deref(),
            self.mcp_tokens_file.as_deref(),
        )?
        .map(|text| mcp_tokens(&text).map_err(|e| SettingsError::invalid(name, e)))
        .transpose()?
        .unwrap_or_default();
        if let Some(unknown) = tokens.keys().find(|k| !specs.iter().any(|s| &s.name == *k)) {
            return Err(SettingsError::invalid(
                name,
                format!("a token for {unknown:?}, which no --mcp-server names"),
            ));
        }
        for spec in &mut specs {
            let var = format!(
                "TASKLEDGER_MCP_TOKEN_{}",
                spec.name.to_ascii_uppercase().replace('-', "_")
            );
            spec.token = super::named_var(&var)
                .or_else(|| tokens.get(&spec.name).cloned())
                .and_then(|t| UpstreamToken::new(&t));
        }
        Ok(specs)
    }

    /// Destructive MCP tools that run without an approval.
    pub fn mcp_trust(&self) -> Vec<String> {
        tool_list(&self.mcp_trust)
    }
}

/// The MCP servers' tokens object: `{"NAME": "token", …}`, each token a non-blank string.
/// What it held is never part of the error.
fn mcp_tokens(text: &str) -> Result<std::collections::BTreeMap<String, String>, String> {
    let map: std::collections::BTreeMap<String, serde_json::Value> = serde_json::from_str(text)
        .map_err(|_| "not a JSON object of tokens by server name".to_string())?;
    map.into_iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(t) if !t.trim().is_empty() => Ok((k, t)),
            _ => Err(format!("the token of {k:?} is not a non-blank string")),
        })
        .collect()
}

fn nonblank(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|v| !v.is_empty())
}
