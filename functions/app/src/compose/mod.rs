//! Composition shared by the Lambda functions and the local server, from their one settings
//! model (`crate::settings`): which agent works on tasks (the built-in scenario agent, a model
//! behind an OpenAI-compatible endpoint or Bedrock, an upstream A2A agent, a custom one), the
//! parts every deployment assembles alike (`assembly`), and the Lambda functions' wiring
//! (`lambda`). The only module of the crate that names infra's adapters.

mod assembly;
mod functions;
mod lambda;
mod mcp;
pub mod settings;
mod telemetry;
mod upstream;
pub use assembly::{Assembly, PushParts, Reaper, StorePorts};
pub use functions::*;
pub use lambda::*;
pub use mcp::{mcp_tools, McpServerSpec};
pub use telemetry::{init_lambda, init_telemetry, report};
pub use upstream::{follow_window, UpstreamChoice, UpstreamToken};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use taskledger_domain::agent::skills::SkillCatalog;
#[cfg(feature = "bedrock")]
use taskledger_infra::llm::Bedrock;
use taskledger_infra::llm::{OpenAiCompatible, OpenAiSettings};

use crate::agent::{Agent, LlmAgent, ScenarioAgent, ScenarioTimings};

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The agent that works on tasks.
#[derive(Debug, Clone)]
pub enum AgentChoice {
    /// The built-in one: the scripted model, behind the conformance and fault rules when
    /// `conformance` (off by default: `--conformance-scenarios`, `TASKLEDGER_CONFORMANCE_SCENARIOS`).
    Scenario { conformance: bool },
    /// A model behind an OpenAI-compatible Chat Completions endpoint.
    OpenAi {
        settings: OpenAiSettings,
        max_turns: u32,
        /// Folder of skills (one sub-folder with a SKILL.md per skill).
        skills_dir: Option<PathBuf>,
        /// Tools every task asks a person to approve before they run (kagent hitl/v1).
        approve_tools: Vec<String>,
    },
    /// An A2A agent the team serves does every turn (ADR 034).
    Upstream(UpstreamChoice),
    /// An agent of the team's own, in Rust, built into the binary (the agent port:
    /// `agent::Agent`; `functions/example-agent`).
    Custom(CustomAgent),
    /// A Bedrock model through the Converse API (credentials and region from the environment).
    Bedrock {
        model: String,
        max_turns: u32,
        skills_dir: Option<PathBuf>,
        approve_tools: Vec<String>,
    },
}

impl AgentChoice {
    /// The agent itself.
    pub async fn build(&self, timings: ScenarioTimings) -> Result<Arc<dyn Agent>, String> {
        self.build_with(timings, None).await
    }

    /// The agent, a model agent with `mcp`'s tools besides its own.
    pub async fn build_with(
        &self,
        timings: ScenarioTimings,
        mcp: Option<Arc<crate::agent::llm::McpTools>>,
    ) -> Result<Arc<dyn Agent>, String> {
        Ok(match self {
            Self::Scenario { conformance } => ScenarioAgent::with_client(
                timings,
                *conformance,
                conformance
                    .then(upstream::client_parser)
                    .transpose()?,
            ),
            Self::Upstream(choice) => choice.build().await?,
            Self::Custom(agent) => agent.0.clone(),
            Self::OpenAi {
                settings,
                max_turns,
                skills_dir,
                approve_tools,
            } => {
                let model = OpenAiCompatible::new(settings.clone()).map_err(|e| e.to_string())?;
                LlmAgent::with_mcp(
                    Arc::new(model),
                    *max_turns,
                    skills(skills_dir.as_deref()),
                    approve_tools.clone(),
                    mcp,
                )
            }
            #[cfg(feature = "bedrock")]
            Self::Bedrock {
                model,
                max_turns,
                skills_dir,
                approve_tools,
            } => {
                let model = Bedrock::new(Bedrock::client(None).await, model.clone());
                LlmAgent::with_mcp(
                    Arc::new(model),
                    *max_turns,
                    skills(skills_dir.as_deref()),
                    approve_tools.clone(),
                    mcp,
                )
            }
            #[cfg(not(feature = "bedrock"))]
            Self::Bedrock { .. } => {
                return Err(
                    "this function is built without Bedrock (the `bedrock` feature): run the agent in the worker"
                        .into(),
                )
            }
        })
    }
}

/// The agent `settings` name, with the tools of their MCP servers (and `more`: the local
/// server's stdio ones); `custom` finds an agent built into the binary by name.
pub async fn agent(
    settings: &crate::settings::Settings,
    d: crate::settings::Deployment,
    custom: impl Fn(&str) -> Option<Arc<dyn Agent>>,
    timings: ScenarioTimings,
) -> Result<Arc<dyn Agent>, BoxError> {
    let mcp = mcp_tools(&settings.mcp_servers(d)?, settings.mcp_trust())?;
    Ok(settings.agent(d, custom)?.build_with(timings, mcp).await?)
}

/// A custom agent (`AgentChoice::Custom`), by the name it was picked with.
#[derive(Clone)]
pub struct CustomAgent(pub Arc<dyn Agent>, pub String);

impl std::fmt::Debug for CustomAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CustomAgent({})", self.1)
    }
}

/// Tool names from a comma-separated list (`--approve-tools`), blanks dropped.
pub fn tool_list(names: &str) -> Vec<String> {
    names
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

/// The skill catalog of a folder; skills that cannot be read are skipped and reported.
fn skills(dir: Option<&Path>) -> SkillCatalog {
    let skills = dir
        .map(taskledger_infra::skills::load_catalog)
        .unwrap_or_default();
    for p in &skills.problems {
        tracing::warn!(problem = %p, "skill skipped");
    }
    skills
}
