//! What a local server is started with (`Config`: the store, identity, limits, the agent, push,
//! gRPC, the board), and how starting one fails (`LocalError`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use taskledger_app::agent::ScenarioTimings;
pub use taskledger_app::compose::AgentChoice;
use taskledger_app::grpc::{GrpcServeError, TlsPem};
use taskledger_domain::ids::Principal;
use taskledger_domain::push::{AddressPolicy, RetryPolicy};
use taskledger_infra::dynamo;

/// Where the data lives.
#[derive(Debug, Clone)]
pub enum Storage {
    /// `taskledger.sqlite` (and the cursor key) under this directory.
    Dir(PathBuf),
    /// Nothing survives the process (tests).
    Memory,
    /// DynamoDB tables named `<prefix>tasks`; created at start when `create_tables`.
    Dynamo {
        prefix: String,
        /// Write shards of the list indexes (`--index-shards`, 1 to 64).
        index_shards: u32,
        create_tables: bool,
        /// Counts calls (round-trip budget tests and benches).
        counter: Option<dynamo::counting::CallCounter>,
        /// Run the serverless path in-process: a stream poller feeds the relay, queue pollers
        /// run the agent worker and the push worker (queues created with the tables, or looked
        /// up by name). Without it, agent work runs in-process right after the commit and push
        /// notifications are off.
        pollers: bool,
    },
}

#[derive(Debug, Clone)]
pub struct Config {
    pub storage: Storage,
    /// Base URL for the agent card; derived from the Host header when unset.
    pub public_url: Option<String>,
    /// Bearer token → principal; empty means the anonymous dev principal for everyone.
    pub tokens: HashMap<String, Principal>,
    /// Verified JWT bearer tokens (beside the static `tokens`, which stay for development).
    pub jwt: Option<taskledger_app::identity::jwt::JwtSettings>,
    /// Each principal's request rate (none: unlimited).
    pub rate_limit: Option<taskledger_app::limits::RateLimit>,
    /// Tasks each principal may create a minute (none: unlimited).
    pub task_limit: Option<taskledger_app::limits::RateLimit>,
    /// Streams each principal may hold open (none: unlimited).
    pub max_streams: Option<usize>,
    /// How long a request body may take to arrive.
    pub body_read_timeout: Duration,
    /// How long a request's headers may take to arrive (`HEADER_READ_TIMEOUT`).
    pub header_read_timeout: Duration,
    /// Keys sealing push-config secrets (ADR 022); default: `secrets.keys` in the data
    /// directory (created at first start), a fresh key in memory, none on DynamoDB.
    pub secrets_key_file: Option<PathBuf>,
    pub blocking_timeout: Duration,
    pub timings: ScenarioTimings,
    /// Key signing ListTasks page tokens; default: `TASKLEDGER_CURSOR_KEY`, else a key kept in
    /// the data directory, else a fresh one per process.
    pub cursor_key: Option<Vec<u8>>,
    /// The agent: the built-in one (the scripted model behind the conformance rules), or a
    /// model behind an OpenAI-compatible endpoint or Bedrock.
    pub agent: AgentChoice,
    /// MCP servers whose tools the model agent is offered (ADR 034).
    pub mcp: Vec<taskledger_app::compose::McpServerSpec>,
    /// Destructive MCP tools that run without an approval (`NAME__tool`, `NAME__*`).
    pub mcp_trust: Vec<String>,
    pub push: PushSettings,
    /// Which revision of the A2A error table HTTP statuses and gRPC codes follow.
    pub error_table: taskledger_domain::error::ErrorTable,
    /// The gRPC binding on a port of its own; none: not served (and not in the card).
    pub grpc: Option<GrpcSettings>,
    /// How often an idle SSE stream sends a keep-alive comment.
    pub stream_keep_alive: Duration,
    /// How often an open stream reads its task's events for commits of other processes.
    pub stream_poll: Duration,
    /// Which capability-gated operations are served (`--streaming-enabled`,
    /// `--push-enabled`): push notifications only on a store with an outbox or queues.
    pub served: taskledger_domain::card::Served,
    /// Host names answered besides loopback names and the public URL's host (a server without
    /// credentials refuses others; the card is signed only for these and the public URL).
    pub allowed_hosts: Vec<String>,
    /// The operator's bearer token for `/metrics` (none: refused on a server with credentials).
    pub metrics_token: Option<String>,
    /// Proxies whose `X-Forwarded-Proto`/`X-Forwarded-Host` are believed.
    pub proxies: taskledger_app::http::Proxies,
    /// Origins board pages may show images from besides their own and `data:`.
    pub board_image_origins: Vec<String>,
    /// How long a board session lasts at most.
    pub board_session_ttl: Duration,
    /// A task at work with no event for this many seconds fails (the deadline reaper);
    /// `None`: never.
    pub stall_deadline_secs: Option<u64>,
    /// How long a turn received from the SQS turn queue stays hidden from other receivers,
    /// renewed while it runs (`pollers::turn_lease`): the crash-recovery bound.
    pub turn_lease_secs: u32,
    /// How long finished tasks are kept (`--retention`, `--retention-tenants`).
    pub retention: taskledger_domain::retention::Retention,
    /// The S3 bucket expiring tasks are archived to (`--archive-bucket`; DynamoDB with its
    /// pollers only).
    pub archive_bucket: Option<taskledger_infra::s3::BucketName>,
    /// Where each task's lifecycle is published (`--event-bus`, `--events-webhook`).
    pub lifecycle: LifecycleSettings,
}

/// Where a task's lifecycle events go (ADR 038): an EventBridge bus, a webhook, or both.
#[derive(Debug, Clone, Default)]
pub struct LifecycleSettings {
    pub bus: Option<String>,
    pub webhook: Option<String>,
    pub level: taskledger_domain::projection::lifecycle::DetailLevel,
}

impl LifecycleSettings {
    pub fn is_on(&self) -> bool {
        self.bus.is_some() || self.webhook.is_some()
    }
}

/// Where and how the gRPC binding is served.
#[derive(Debug, Clone)]
pub struct GrpcSettings {
    /// Address to listen on (port 0: a free port).
    pub listen: SocketAddr,
    /// Certificate chain and key (PEM): TLS; none: plaintext HTTP/2 (h2c), for development.
    pub tls: Option<TlsPem>,
    /// `host:port` published in the agent card; default: the card's host with the port
    /// listened on.
    pub public_addr: Option<String>,
}

impl GrpcSettings {
    /// Plaintext on 127.0.0.1, on a free port (tests).
    pub fn loopback() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            tls: None,
            public_addr: None,
        }
    }
}

/// Webhook deliveries (push notifications).
#[derive(Debug, Clone)]
pub struct PushSettings {
    /// Which addresses webhooks may resolve to; the local default allows loopback (dev mode).
    pub policy: AddressPolicy,
    /// A P-256 private key (PEM) signing each delivery; its public key is served at
    /// `/.well-known/jwks.json`.
    pub signing_key_pem: Option<String>,
    pub retry: RetryPolicy,
}

impl Default for PushSettings {
    fn default() -> Self {
        Self {
            policy: AddressPolicy::parse_allowlist(taskledger_app::settings::LOCAL_PUSH_ALLOWLIST)
                .unwrap_or_else(|e| unreachable!("the local allowlist parses: {e}")),
            signing_key_pem: None,
            retry: RetryPolicy::default(),
        }
    }
}

impl Config {
    /// This configuration with the scenario agent's conformance and fault rules on (the kits'
    /// runs, tests).
    pub fn with_conformance_scenarios(mut self) -> Self {
        if let AgentChoice::Scenario { conformance } = &mut self.agent {
            *conformance = true;
        }
        self
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error(transparent)]
    Store(#[from] taskledger_infra::sqlite::SqliteError),
    #[error("cannot use the cursor key file {path}: {source}")]
    CursorKey {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot use the board session key file {path}: {source}")]
    SessionKey {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Dynamo(#[from] taskledger_infra::dynamo::DynamoError),
    #[error(transparent)]
    Schema(#[from] taskledger_infra::dynamo::schema::SchemaError),
    #[error("cannot set up the agent: {0}")]
    Agent(String),
    #[error("cannot verify JWTs: {0}")]
    Jwt(String),
    #[error(transparent)]
    Secrets(#[from] taskledger_infra::secrets::SecretsError),
    #[error(transparent)]
    Push(#[from] taskledger_infra::webhook::WebhookError),
    #[error("SQS or the table's stream: {0}")]
    Queues(String),
    #[error("--archive-bucket: {0}")]
    Archive(String),
    #[error("--events-webhook: {0}")]
    Lifecycle(String),
    #[error(transparent)]
    Settings(#[from] taskledger_app::settings::SettingsError),
    #[error("server failed: {0}")]
    Serve(#[from] std::io::Error),
    #[error(transparent)]
    Grpc(#[from] GrpcServeError),
    /// An operator command the service refused.
    #[error(transparent)]
    Refused(#[from] taskledger_app::AppError),
}
