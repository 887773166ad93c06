//! One settings model (issue 54, ADR 035): every setting a deployment of taskledger reads, each
//! a flag of the local server and an environment variable of every Lambda function, with its
//! default written once, here. The local server flattens `Settings` into its command line
//! (beside its local-only flags); each Lambda reads `Settings::from_env()` and, for what only
//! a function needs (its queues, how the API answers), `LambdaSettings::from_env()`.
//!
//! The only module of the product that reads the process's environment (a layout test checks
//! it): everything else is handed the values.

mod agent;
mod lambda;

pub use lambda::{ApiAuth, LambdaSettings};

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use taskledger_domain::error::ErrorTable;
use taskledger_domain::push::{AddressPolicy, RetryPolicy};
use taskledger_domain::retention::Retention;
use taskledger_infra::dynamo::store::MAX_INDEX_SHARDS;
use taskledger_infra::otlp::OtlpSettings;

/// Model used when a task names none (`/model` overrides per task).
pub const DEFAULT_LLM_MODEL: &str = "gpt-4o-mini";
/// Prefix of the DynamoDB table names (`<prefix>tasks`).
pub const DEFAULT_TABLE_PREFIX: &str = "taskledger-";
/// How long a blocking SendMessage waits locally, and behind API Gateway (below its 30 s).
pub const LOCAL_BLOCKING_TIMEOUT_SECS: u64 = 60;
pub const LAMBDA_BLOCKING_TIMEOUT_SECS: u64 = 25;
/// Networks a local server's webhooks, upstream agent and MCP servers may reach despite the
/// SSRF guard: loopback, for development. On AWS none.
pub const LOCAL_PUSH_ALLOWLIST: &str = "127.0.0.0/8,::1/128";
/// Seconds one turn follows an upstream agent's work before it continues in a new turn.
pub const DEFAULT_AGENT_FOLLOW_SECS: u64 = 60;
/// Milliseconds between the keep-alive comments of an idle stream.
pub const DEFAULT_STREAM_KEEP_ALIVE_MS: u64 = 15_000;

/// Where the process runs: the few settings whose default differs say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deployment {
    /// The local server (`taskledger`): one machine, loopback allowed for development.
    Local,
    /// A Lambda function behind API Gateway (its 30 s integration timeout).
    Lambda,
}

/// A setting that cannot be used, by the name the operator gave it.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{name}: {why}")]
    Invalid { name: &'static str, why: String },
    #[error("{0}")]
    Parse(#[from] clap::Error),
}

impl SettingsError {
    pub fn invalid(name: &'static str, why: impl std::fmt::Display) -> Self {
        Self::Invalid {
            name,
            why: why.to_string(),
        }
    }
}

/// Every setting both the local server and the Lambda functions read.
#[derive(Debug, Clone, clap::Args)]
pub struct Settings {
    // ── the store ────────────────────────────────────────────────────────────────────────
    /// DynamoDB table name prefix (tables are `<prefix>tasks`).
    #[arg(long, env = "TASKLEDGER_TABLE_PREFIX", default_value = DEFAULT_TABLE_PREFIX)]
    pub table_prefix: String,
    /// Key signing ListTasks page tokens (required on Lambda: every function signs with the
    /// same; locally a key kept in the data directory when unset).
    #[arg(long, env = "TASKLEDGER_CURSOR_KEY", hide_env_values = true)]
    pub cursor_key: Option<String>,
    /// How long a finished task is kept, counted from the event that finished it: `90d`,
    /// `12h`, `30m`, `45s` or seconds; 0 keeps tasks forever (at most 3650d).
    #[arg(long, env = "TASKLEDGER_RETENTION", default_value = "90d")]
    pub retention: String,
    /// Tenants' own retention, `tenant=period,…` (e.g. `acme=7d,audit=0`).
    #[arg(long, env = "TASKLEDGER_RETENTION_TENANTS", default_value = "")]
    pub retention_tenants: String,
    /// The S3 bucket each finished task is archived to before it expires (on DynamoDB, from
    /// the table's stream; the bucket must exist); empty: no archive.
    #[arg(long, env = "TASKLEDGER_ARCHIVE_BUCKET", default_value = "")]
    pub archive_bucket: String,
    /// The EventBridge bus each task's lifecycle (status changes, artifacts, gates, handoffs)
    /// is published to, from the relay (ADR 038); empty: none.
    #[arg(long, env = "TASKLEDGER_EVENT_BUS", default_value = "")]
    pub event_bus: String,
    /// How much of a task a lifecycle event tells: `summary` (ids, tenant, state,
    /// generation) or `full` (also status messages, artifact parts, gates, handoff work).
    #[arg(long, env = "TASKLEDGER_EVENT_DETAIL_LEVEL", default_value = "summary")]
    pub event_detail_level: String,
    /// Write shards of the DynamoDB list indexes (1 to 64; ADR 019).
    #[arg(long, env = "TASKLEDGER_INDEX_SHARDS", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_INDEX_SHARDS)))]
    pub index_shards: u32,
    /// Seconds a task at work (submitted or working) may go without any event before it
    /// fails, saying so (the deadline reaper); 0: never.
    #[arg(long, env = "TASKLEDGER_STALL_DEADLINE_SECS", default_value_t = crate::runners::DEFAULT_STALL_DEADLINE_SECS)]
    pub stall_deadline_secs: u64,

    // ── the agent ────────────────────────────────────────────────────────────────────────
    /// The built-in agent's conformance and fault scenarios (`tck-…`, `fault-…` message ids
    /// steer it: REJECTED tasks, failing and stalling turns, timed pauses): for the A2A
    /// conformance kits and tests only, never in production.
    #[arg(long, env = "TASKLEDGER_CONFORMANCE_SCENARIOS", default_value_t = false, value_parser = clap::builder::BoolishValueParser::new())]
    pub conformance_scenarios: bool,
    /// Base URL of an OpenAI-compatible Chat Completions endpoint; without it the model loop
    /// runs on the built-in scripted model.
    #[arg(long, env = "TASKLEDGER_LLM_BASE_URL")]
    pub llm_base_url: Option<String>,
    /// API key for that endpoint.
    #[arg(long, env = "TASKLEDGER_LLM_API_KEY", hide_env_values = true)]
    pub llm_api_key: Option<String>,
    /// Model used when a task names none (`/model` changes it per task).
    #[arg(long, env = "TASKLEDGER_LLM_MODEL", default_value = DEFAULT_LLM_MODEL)]
    pub llm_model: String,
    /// A Bedrock model id (Converse API) to use as the agent instead of an OpenAI-compatible
    /// endpoint; AWS credentials and region come from the environment.
    #[arg(long, env = "TASKLEDGER_BEDROCK_MODEL")]
    pub bedrock_model: Option<String>,
    /// Folder of skills the model may load (one sub-folder with a SKILL.md per skill).
    #[arg(long, env = "TASKLEDGER_SKILLS_DIR")]
    pub skills_dir: Option<PathBuf>,
    /// Model turns per execution before the task fails with "turn limit reached".
    #[arg(long, env = "TASKLEDGER_MAX_TURNS", default_value_t = crate::agent::DEFAULT_MAX_TURNS)]
    pub max_turns: u32,
    /// Tools the model agent runs only after a person approves the call (comma-separated
    /// names, `NAME__tool` and `NAME__*` for MCP tools; kagent hitl/v1). A task's extension
    /// data can name more (`approve_tools`).
    #[arg(long, env = "TASKLEDGER_APPROVE_TOOLS", default_value = "")]
    pub approve_tools: String,
    /// An A2A agent (1.x or 0.3, its card under this URL) that does every turn instead of the
    /// built-in agent; taskledger keeps the task (ADR 034). Its URLs follow --push-allowlist.
    #[arg(long, env = "TASKLEDGER_AGENT_URL")]
    pub agent_url: Option<String>,
    /// The credential for --agent-url (a bearer token, or the value of --agent-auth-header),
    /// from the environment only (on AWS, the AgentTokenSecret secret). Never logged.
    #[arg(
        long,
        env = "TASKLEDGER_AGENT_TOKEN",
        hide = true,
        hide_env_values = true
    )]
    pub agent_token: Option<String>,
    /// A file holding the credential for --agent-url (instead of TASKLEDGER_AGENT_TOKEN).
    #[arg(long, env = "TASKLEDGER_AGENT_TOKEN_FILE")]
    pub agent_token_file: Option<PathBuf>,
    /// The header the agent's credential goes in (default: Authorization: Bearer).
    #[arg(long, env = "TASKLEDGER_AGENT_AUTH_HEADER")]
    pub agent_auth_header: Option<String>,
    /// Seconds one turn follows the upstream's work before it continues in a new turn.
    #[arg(long, env = "TASKLEDGER_AGENT_FOLLOW_SECS", default_value_t = DEFAULT_AGENT_FOLLOW_SECS)]
    pub agent_follow_secs: u64,
    /// A custom agent built into this binary that does every turn (`greeter`: the example of
    /// functions/example-agent, written against the agent port).
    #[arg(long, env = "TASKLEDGER_CUSTOM_AGENT")]
    pub custom_agent: Option<String>,
    /// MCP servers whose tools the model agent is offered, `NAME=URL` (Streamable HTTP; the
    /// tools as `NAME__tool`), repeatable or comma-separated; each server's bearer token from
    /// TASKLEDGER_MCP_TOKEN_<NAME>. Their URLs follow --push-allowlist.
    #[arg(
        long = "mcp-server",
        env = "TASKLEDGER_MCP_SERVERS",
        value_delimiter = ','
    )]
    pub mcp_servers: Vec<String>,
    /// Bearer tokens of the MCP servers, a JSON object by server name (`{"NAME": "token"}`),
    /// from the environment only (on AWS, the McpTokensSecret secret). Never logged. A
    /// server's TASKLEDGER_MCP_TOKEN_<NAME> goes first.
    #[arg(
        long,
        env = "TASKLEDGER_MCP_TOKENS",
        hide = true,
        hide_env_values = true
    )]
    pub mcp_tokens: Option<String>,
    /// A file holding that JSON object (instead of TASKLEDGER_MCP_TOKENS).
    #[arg(long, env = "TASKLEDGER_MCP_TOKENS_FILE")]
    pub mcp_tokens_file: Option<PathBuf>,
    /// Destructive MCP tools (annotated destructiveHint) that run without a person's approval:
    /// `NAME__tool` or `NAME__*`, comma-separated.
    #[arg(long, env = "TASKLEDGER_MCP_TRUST", default_value = "")]
    pub mcp_trust: String,

    // ── push notifications and secrets ──────────────────────────────────────────────────
    /// Push notifications: config operations and deliveries (`false` turns both off).
    #[arg(long, env = "TASKLEDGER_PUSH_ENABLED", default_value_t = true, action = clap::ArgAction::Set,
          value_parser = clap::builder::BoolishValueParser::new())]
    pub push_enabled: bool,
    /// Networks webhooks (and the upstream agent and MCP servers) may reach despite the SSRF
    /// guard, comma-separated CIDRs. Default: loopback locally (development), none on AWS;
    /// pass an empty value to refuse loopback too.
    #[arg(long, env = "TASKLEDGER_PUSH_ALLOWLIST")]
    pub push_allowlist: Option<String>,
    /// A P-256 private key (PEM text) that signs push deliveries, archives and the agent card
    /// (JWS ES256); from the environment only (on AWS, the PushSigningKey secret).
    #[arg(
        long,
        env = "TASKLEDGER_PUSH_SIGNING_KEY",
        hide = true,
        hide_env_values = true
    )]
    pub push_signing_key: Option<String>,
    /// File with that key (PEM), instead of TASKLEDGER_PUSH_SIGNING_KEY; its public key is
    /// served at /.well-known/jwks.json.
    #[arg(long, env = "TASKLEDGER_PUSH_SIGNING_KEY_FILE")]
    pub push_signing_key_file: Option<PathBuf>,
    /// How long a failing delivery is retried before it is dead-lettered, in seconds.
    #[arg(long, env = "TASKLEDGER_PUSH_RETRY_HORIZON_SECS", default_value_t = taskledger_domain::push::DEFAULT_RETRY_HORIZON.as_secs())]
    pub push_retry_horizon_secs: u64,
    /// Keys sealing push-config tokens and credentials at rest, as text (one
    /// `<kid>:<base64 32 bytes>` per line, the first seals, all open); from the environment
    /// only (on AWS, the SecretsKeysSecret secret; ADR 022).
    #[arg(
        long,
        env = "TASKLEDGER_SECRETS_KEYS",
        hide = true,
        hide_env_values = true
    )]
    pub secrets_keys: Option<String>,
    /// A file with those keys. Default locally: `secrets.keys` in --data-dir, created at first
    /// start.
    #[arg(long, env = "TASKLEDGER_SECRETS_KEY_FILE")]
    pub secrets_key_file: Option<PathBuf>,

    // ── the API ─────────────────────────────────────────────────────────────────────────
    /// Base URL published in the agent card (default: from the request's Host header).
    #[arg(long, env = "TASKLEDGER_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Host names (or `host:port`) this server answers to besides loopback names and the public
    /// URL's host, comma-separated. Without credentials, requests naming any other `Host` are
    /// refused (DNS rebinding); the agent card is signed only for these and --public-url.
    #[arg(long, env = "TASKLEDGER_ALLOWED_HOSTS", default_value = "")]
    pub allowed_hosts: String,
    /// Which revision of the A2A error table HTTP statuses and gRPC codes follow: `1.0.1`
    /// (the current spec) or `1.0.0` (for clients, and the 1.0 conformance kit, pinned to it).
    #[arg(long, env = "TASKLEDGER_ERROR_TABLE", default_value = "1.0.1", value_parser = ErrorTable::parse)]
    pub error_table: ErrorTable,
    /// The claim naming the caller's tenant, in a verified JWT or API Gateway's authorizer
    /// context (`sub` is the subject).
    #[arg(long, alias = "jwt-tenant-claim", env = "TASKLEDGER_TENANT_CLAIM", default_value = crate::identity::DEFAULT_TENANT_CLAIM)]
    pub tenant_claim: String,
    /// Seconds a blocking SendMessage waits for the task to settle (default: 60 locally, 25
    /// on AWS, below API Gateway's 30 s).
    #[arg(long, env = "TASKLEDGER_BLOCKING_TIMEOUT_SECS")]
    pub blocking_timeout_secs: Option<u64>,
    /// Milliseconds between the keep-alive comments of an idle stream.
    #[arg(long, env = "TASKLEDGER_STREAM_KEEP_ALIVE_MS", default_value_t = DEFAULT_STREAM_KEEP_ALIVE_MS)]
    pub stream_keep_alive_ms: u64,
    /// Streams (SendStreamingMessage, SubscribeToTask, and their 0.3 names): `false` declares
    /// `capabilities.streaming` false and answers them UnsupportedOperation (A2A §3.3.4).
    #[arg(long, env = "TASKLEDGER_STREAMING_ENABLED", default_value_t = true, action = clap::ArgAction::Set,
          value_parser = clap::builder::BoolishValueParser::new())]
    pub streaming_enabled: bool,
    /// Milliseconds between an open stream's reads of its task's events when no commit was
    /// announced in this process (commits of other processes sharing the store).
    #[arg(long, env = "TASKLEDGER_STREAM_POLL_MS", default_value_t = crate::service::DEFAULT_STREAM_POLL.as_millis() as u64)]
    pub stream_poll_ms: u64,
    /// An OpenTelemetry collector's OTLP/HTTP endpoint (`http://127.0.0.1:4318`): every span
    /// goes there, one trace a task's life (`/v1/traces` is added). Unset: the standard
    /// `OTEL_EXPORTER_OTLP_*` variables (on AWS, the collector layer's), else no export.
    #[arg(long, env = "TASKLEDGER_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,
}

/// `Settings` alone, from the environment (a Lambda function has no command line).
#[derive(Debug, Parser)]
#[command(no_binary_name = true)]
struct FromEnv<T: clap::Args> {
    #[command(flatten)]
    inner: T,
}

/// `T` from the environment alone, each default as the flags have it.
pub(crate) fn parse_env<T: clap::Args>() -> Result<T, SettingsError> {
    Ok(FromEnv::<T>::try_parse_from(std::iter::empty::<String>())?.inner)
}

/// `T` with every argument at its default, the environment not read.
pub fn defaults_of<T: clap::Args + clap::FromArgMatches>() -> T {
    let command = T::augment_args(clap::Command::new("defaults").no_binary_name(true))
        .mut_args(|a| a.env(None::<&'static str>));
    command
        .try_get_matches_from(std::iter::empty::<String>())
        .and_then(|m| T::from_arg_matches(&m))
        .unwrap_or_else(|e| unreachable!("every default parses: {e}"))
}

impl Settings {
    /// A Lambda function's settings: every `TASKLEDGER_*` variable of `Settings`, defaults
    /// as the local server's flags have them.
    pub fn from_env() -> Result<Self, SettingsError> {
        parse_env()
    }

    /// Every setting at its default, whatever the environment says (tests' configurations
    /// start here).
    pub fn defaults() -> Self {
        defaults_of()
    }

    /// How long a blocking SendMessage waits.
    pub fn blocking_timeout(&self, d: Deployment) -> Duration {
        Duration::from_secs(self.blocking_timeout_secs.unwrap_or(match d {
            Deployment::Local => LOCAL_BLOCKING_TIMEOUT_SECS,
            Deployment::Lambda => LAMBDA_BLOCKING_TIMEOUT_SECS,
        }))
    }

    /// Which addresses webhooks, the upstream agent and MCP servers may resolve to.
    pub fn address_policy(&self, d: Deployment) -> Result<AddressPolicy, SettingsError> {
        let list = match (&self.push_allowlist, d) {
            (Some(list), _) => list.as_str(),
            (None, Deployment::Local) => LOCAL_PUSH_ALLOWLIST,
            (None, Deployment::Lambda) => "",
        };
        AddressPolicy::parse_allowlist(list)
            .map_err(|e| SettingsError::invalid("--push-allowlist / TASKLEDGER_PUSH_ALLOWLIST", e))
    }

    /// How long finished tasks are kept.
    pub fn retention(&self) -> Result<Retention, SettingsError> {
        Retention::parse(&self.retention, &self.retention_tenants).map_err(|e| {
            SettingsError::invalid(
                "--retention / --retention-tenants (TASKLEDGER_RETENTION*)",
                e,
            )
        })
    }

    /// The push retry policy.
    pub fn retry(&self) -> RetryPolicy {
        RetryPolicy {
            horizon: Duration::from_secs(self.push_retry_horizon_secs),
            ..Default::default()
        }
    }

    /// The signing key's PEM: the text, else the file's.
    pub fn signing_key_pem(&self) -> Result<Option<String>, SettingsError> {
        read_or_text(
            "--push-signing-key-file / TASKLEDGER_PUSH_SIGNING_KEY",
            self.push_signing_key.as_deref(),
            self.push_signing_key_file.as_deref(),
        )
    }

    /// The deadline reaper's deadline (`None`: off).
    pub fn stall_deadline(&self) -> Result<Option<u64>, SettingsError> {
        crate::runners::stall_deadline(self.stall_deadline_secs)
            .map_err(|e| SettingsError::invalid("--stall-deadline-secs", e))
    }

    /// How often an open stream reads its task's events for other processes' commits.
    pub fn stream_poll(&self) -> Duration {
        Duration::from_millis(self.stream_poll_ms.max(1))
    }

    /// How often an idle stream sends a keep-alive comment.
    pub fn stream_keep_alive(&self) -> Duration {
        Duration::from_millis(self.stream_keep_alive_ms.max(1))
    }
}

impl Settings {
    /// Where spans go: `--otlp-endpoint` (the protocol from `OTEL_EXPORTER_OTLP_PROTOCOL`),
    /// else the standard `OTEL_EXPORTER_OTLP_*` variables and `OTEL_SERVICE_NAME` (the ADOT
    /// layer's on AWS); none: no export.
    pub fn otlp(&self) -> Result<Option<OtlpSettings>, SettingsError> {
        let var = |k: &str| std::env::var(k).ok();
        let protocol = var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"));
        let service = var("OTEL_SERVICE_NAME").unwrap_or_else(|| "taskledger".to_string());
        let configured = match self
            .otlp_endpoint
            .as_deref()
            .filter(|e| !e.trim().is_empty())
        {
            Some(e) => OtlpSettings::new(Some(e), None, protocol.as_deref(), &service),
            None => OtlpSettings::new(
                var("OTEL_EXPORTER_OTLP_ENDPOINT").as_deref(),
                var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").as_deref(),
                protocol.as_deref(),
                &service,
            ),
        };
        configured.map_err(|e| SettingsError::invalid("--otlp-endpoint / OTEL_EXPORTER_OTLP_*", e))
    }
}

/// A secret given as text, else read from a file (text wins); blanks are nothing.
fn read_or_text(
    name: &'static str,
    text: Option<&str>,
    file: Option<&std::path::Path>,
) -> Result<Option<String>, SettingsError> {
    if let Some(t) = text.filter(|t| !t.trim().is_empty()) {
        return Ok(Some(t.to_string()));
    }
    match file {
        Some(path) => std::fs::read_to_string(path)
            .map(Some)
            .map_err(|e| SettingsError::invalid(name, format!("{}: {e}", path.display()))),
        None => Ok(None),
    }
}

/// A variable of the process's environment by a name made at run time (an MCP server's
/// token, `TASKLEDGER_MCP_TOKEN_<NAME>`), blank as unset.
pub(crate) fn named_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Whether the AWS SDK is pointed at an endpoint of its own (`AWS_ENDPOINT_URL`, or DynamoDB's):
/// an emulator such as LocalStack or moto.
pub fn aws_endpoint_configured() -> bool {
    ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"]
        .iter()
        .any(|k| std::env::var_os(k).is_some_and(|v| !v.is_empty()))
}

#[cfg(test)]
mod tests;
