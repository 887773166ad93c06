//! The command line of `taskledger`: the server's flags (each also an environment variable)
//! and the operator's subcommands.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use taskledger_app::compose;
use taskledger_domain::error::ErrorTable;
use taskledger_local::runtime;

#[derive(Debug, Parser)]
#[command(
    name = "taskledger",
    version,
    about = "A2A 1.0 task server on an embedded event store"
)]
pub(crate) struct Args {
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    /// Where tasks are stored; `auto` is DynamoDB when AWS_ENDPOINT_URL(_DYNAMODB) is set
    /// (and --in-memory is not).
    #[arg(long, env = "TASKLEDGER_STORE", value_enum, default_value_t = StoreKind::Auto)]
    pub(crate) store: StoreKind,
    /// DynamoDB table name prefix (tables are `<prefix>tasks`).
    #[arg(long, env = "TASKLEDGER_TABLE_PREFIX", default_value = compose::DEFAULT_TABLE_PREFIX)]
    pub(crate) table_prefix: String,
    /// Create the DynamoDB tables and the SQS queues (turns, push, their DLQs) at start if they
    /// do not exist.
    #[arg(long, env = "TASKLEDGER_CREATE_TABLES", default_value_t = false)]
    pub(crate) create_tables: bool,
    /// On DynamoDB: run agent work in-process right after each commit instead of through the
    /// table's stream and the SQS queues (no push notifications then).
    #[arg(long, env = "TASKLEDGER_IN_PROCESS_AGENT", default_value_t = false)]
    pub(crate) in_process_agent: bool,
    /// The built-in agent's conformance and fault scenarios (`tck-…`, `fault-…` message ids
    /// steer it: REJECTED tasks, failing and stalling turns, timed pauses): for the A2A
    /// conformance kits and tests only, never in production.
    #[arg(
        long,
        env = "TASKLEDGER_CONFORMANCE_SCENARIOS",
        default_value_t = false
    )]
    pub(crate) conformance_scenarios: bool,
    /// The operator's bearer token for /metrics (process-wide counts, every tenant's): on a
    /// server with --tokens or JWTs, /metrics answers only to it.
    #[arg(long, env = "TASKLEDGER_METRICS_TOKEN", hide_env_values = true)]
    pub(crate) metrics_token: Option<String>,
    /// Address to listen on.
    #[arg(long, env = "TASKLEDGER_LISTEN", default_value = "127.0.0.1:8080")]
    pub(crate) listen: SocketAddr,
    /// Directory holding the SQLite store and the cursor key.
    #[arg(long, env = "TASKLEDGER_DATA_DIR", default_value = "./data")]
    pub(crate) data_dir: PathBuf,
    /// Keep everything in memory (nothing survives a restart).
    #[arg(long, env = "TASKLEDGER_IN_MEMORY", default_value_t = false)]
    pub(crate) in_memory: bool,
    /// Base URL published in the agent card (default: from the request's Host header).
    #[arg(long, env = "TASKLEDGER_PUBLIC_URL")]
    pub(crate) public_url: Option<String>,
    /// Bearer tokens as `token=tenant/subject,…`; none means everyone is default/anonymous.
    #[arg(
        long,
        env = "TASKLEDGER_TOKENS",
        default_value = "",
        hide_env_values = true
    )]
    pub(crate) tokens: String,
    /// Seconds a blocking SendMessage waits for the task to settle.
    #[arg(long, env = "TASKLEDGER_BLOCKING_TIMEOUT_SECS", default_value_t = compose::LOCAL_BLOCKING_TIMEOUT_SECS)]
    pub(crate) blocking_timeout_secs: u64,
    /// Requests a second each principal may make (bursts of twice that); 0: no limit.
    #[arg(long, env = "TASKLEDGER_RATE_LIMIT", default_value_t = 0)]
    pub(crate) rate_limit: u32,
    /// Tasks a minute each principal may create; 0: no limit.
    #[arg(long, env = "TASKLEDGER_TASKS_PER_MINUTE", default_value_t = 0)]
    pub(crate) tasks_per_minute: u32,
    /// Streams each principal may hold open at once; 0: no limit.
    #[arg(long, env = "TASKLEDGER_MAX_STREAMS", default_value_t = 0)]
    pub(crate) max_streams: usize,
    /// Seconds a request body may take to arrive before the request is answered 408.
    #[arg(long, env = "TASKLEDGER_BODY_READ_TIMEOUT_SECS", default_value_t = 30)]
    pub(crate) body_read_timeout_secs: u64,
    /// Seconds a request's headers may take to arrive before the connection is closed.
    #[arg(long, env = "TASKLEDGER_HEADER_READ_TIMEOUT_SECS", default_value_t = taskledger_local::HEADER_READ_TIMEOUT.as_secs())]
    pub(crate) header_read_timeout_secs: u64,
    /// Keys sealing push-config tokens and credentials at rest: one `<kid>:<base64 32 bytes>`
    /// per line, the first seals, all open (rotation). Default: `secrets.keys` in --data-dir,
    /// created at first start (ADR 022).
    #[arg(long, env = "TASKLEDGER_SECRETS_KEY_FILE")]
    pub(crate) secrets_key_file: Option<PathBuf>,
    /// Verify JWT bearer tokens from this issuer (`iss`); needs --jwt-audience and --jwt-jwks.
    #[arg(long, env = "TASKLEDGER_JWT_ISSUER")]
    pub(crate) jwt_issuer: Option<String>,
    /// Accepted audiences (`aud`), comma-separated.
    #[arg(long, env = "TASKLEDGER_JWT_AUDIENCE", default_value = "")]
    pub(crate) jwt_audience: String,
    /// The issuer's keys: a JWKS URL (fetched again for an unknown `kid`) or file.
    #[arg(long, env = "TASKLEDGER_JWT_JWKS")]
    pub(crate) jwt_jwks: Option<String>,
    /// Accepted signature algorithms (asymmetric only), comma-separated.
    #[arg(long, env = "TASKLEDGER_JWT_ALGORITHMS", default_value = "RS256,ES256")]
    pub(crate) jwt_algorithms: String,
    /// Claim naming the caller's tenant (`sub` is the subject).
    #[arg(long, env = "TASKLEDGER_TENANT_CLAIM", default_value = "tenant")]
    pub(crate) jwt_tenant_claim: String,
    /// Base URL of an OpenAI-compatible Chat Completions endpoint; without it the model loop
    /// runs on the built-in scripted model.
    #[arg(long, env = "TASKLEDGER_LLM_BASE_URL")]
    pub(crate) llm_base_url: Option<String>,
    /// API key for that endpoint.
    #[arg(long, env = "TASKLEDGER_LLM_API_KEY", hide_env_values = true)]
    pub(crate) llm_api_key: Option<String>,
    /// Model used when a task names none (`/model` changes it per task).
    #[arg(long, env = "TASKLEDGER_LLM_MODEL", default_value = compose::DEFAULT_LLM_MODEL)]
    pub(crate) llm_model: String,
    /// A Bedrock model id (Converse API) to use as the agent instead of an OpenAI-compatible
    /// endpoint; AWS credentials and region come from the environment.
    #[arg(long, env = "TASKLEDGER_BEDROCK_MODEL")]
    pub(crate) bedrock_model: Option<String>,
    /// Folder of skills the model may load (one sub-folder with a SKILL.md per skill).
    #[arg(long, env = "TASKLEDGER_SKILLS_DIR")]
    pub(crate) skills_dir: Option<PathBuf>,
    /// Model turns per execution before the task fails with "turn limit reached".
    #[arg(long, env = "TASKLEDGER_MAX_TURNS", default_value_t = compose::DEFAULT_MAX_TURNS)]
    pub(crate) max_turns: u32,
    /// Tools the model agent runs only after a person approves the call (comma-separated
    /// names; kagent hitl/v1). A task's extension data can name more (`approve_tools`).
    #[arg(long, env = "TASKLEDGER_APPROVE_TOOLS", default_value = "")]
    pub(crate) approve_tools: String,
    /// An A2A agent (1.x or 0.3, its card under this URL) that does every turn instead of the
    /// built-in agent; taskledger keeps the task (ADR 034). Its URLs follow --push-allowlist.
    #[arg(long, env = "TASKLEDGER_AGENT_URL")]
    pub(crate) agent_url: Option<String>,
    /// A file holding the credential for --agent-url (a bearer token, or the value of
    /// --agent-auth-header); TASKLEDGER_AGENT_TOKEN gives it directly. Never logged.
    #[arg(long, env = "TASKLEDGER_AGENT_TOKEN_FILE")]
    pub(crate) agent_token_file: Option<PathBuf>,
    /// The header the agent's credential goes in (default: Authorization: Bearer).
    #[arg(long, env = "TASKLEDGER_AGENT_AUTH_HEADER")]
    pub(crate) agent_auth_header: Option<String>,
    /// Seconds one turn follows the upstream's work before it continues in a new turn.
    #[arg(long, env = "TASKLEDGER_AGENT_FOLLOW_SECS", default_value_t = 60)]
    pub(crate) agent_follow_secs: u64,
    /// A custom agent built into this binary that does every turn (`greeter`: the example of
    /// functions/example-agent, written against the agent port).
    #[arg(long, env = "TASKLEDGER_CUSTOM_AGENT")]
    pub(crate) custom_agent: Option<String>,
    /// MCP servers whose tools the model agent is offered, `NAME=URL` (Streamable HTTP; the
    /// tools as `NAME__tool`), repeatable or comma-separated; each server's bearer token from
    /// TASKLEDGER_MCP_TOKEN_<NAME>. Their URLs follow --push-allowlist.
    #[arg(
        long = "mcp-server",
        env = "TASKLEDGER_MCP_SERVERS",
        value_delimiter = ','
    )]
    pub(crate) mcp_servers: Vec<String>,
    /// MCP servers run as child processes spoken to over stdio, `NAME=CMD` (the program and its
    /// arguments, split on blanks, no shell), repeatable: for the local server only.
    #[arg(long = "mcp-command")]
    pub(crate) mcp_commands: Vec<String>,
    /// Destructive MCP tools (annotated destructiveHint) that run without a person's approval:
    /// `NAME__tool` or `NAME__*`, comma-separated.
    #[arg(long, env = "TASKLEDGER_MCP_TRUST", default_value = "")]
    pub(crate) mcp_trust: String,
    /// Networks webhooks may reach despite the SSRF guard (comma-separated CIDRs). The local
    /// default allows loopback (development); pass an empty value to refuse it too.
    #[arg(
        long,
        env = "TASKLEDGER_PUSH_ALLOWLIST",
        default_value = "127.0.0.0/8,::1/128"
    )]
    pub(crate) push_allowlist: String,
    /// File with a P-256 private key (PEM) that signs push deliveries (JWS ES256); its public
    /// key is served at /.well-known/jwks.json.
    #[arg(long, env = "TASKLEDGER_PUSH_SIGNING_KEY_FILE")]
    pub(crate) push_signing_key_file: Option<PathBuf>,
    /// How long a failing delivery is retried before it is dead-lettered.
    #[arg(
        long,
        env = "TASKLEDGER_PUSH_RETRY_HORIZON_SECS",
        default_value_t = taskledger_domain::push::DEFAULT_RETRY_HORIZON.as_secs()
    )]
    pub(crate) push_retry_horizon_secs: u64,
    /// Serve the gRPC binding (lf.a2a.v1.A2AService) on this address too; off by default.
    /// Plaintext HTTP/2 (h2c) unless a TLS certificate and key are given.
    #[arg(long, env = "TASKLEDGER_GRPC_LISTEN")]
    pub(crate) grpc_listen: Option<SocketAddr>,
    /// PEM certificate chain for gRPC over TLS (with --grpc-tls-key).
    #[arg(long, env = "TASKLEDGER_GRPC_TLS_CERT", requires = "grpc_tls_key")]
    pub(crate) grpc_tls_cert: Option<PathBuf>,
    /// PEM private key for gRPC over TLS (with --grpc-tls-cert).
    #[arg(long, env = "TASKLEDGER_GRPC_TLS_KEY", requires = "grpc_tls_cert")]
    pub(crate) grpc_tls_key: Option<PathBuf>,
    /// `host:port` the agent card gives for gRPC (default: the card's host with the gRPC port).
    #[arg(long, env = "TASKLEDGER_GRPC_PUBLIC_ADDR")]
    pub(crate) grpc_public_addr: Option<String>,
    /// Which revision of the A2A error table HTTP statuses and gRPC codes follow: `1.0.1`
    /// (the current spec) or `1.0.0` (for clients, and the 1.0 conformance kit, pinned to it).
    #[arg(long, env = "TASKLEDGER_ERROR_TABLE", default_value = "1.0.1", value_parser = ErrorTable::parse)]
    pub(crate) error_table: ErrorTable,
    /// Milliseconds between the keep-alive comments of an idle stream.
    #[arg(
        long,
        env = "TASKLEDGER_STREAM_KEEP_ALIVE_MS",
        default_value_t = 15_000
    )]
    pub(crate) stream_keep_alive_ms: u64,
    /// Milliseconds between an open stream's reads of its task's events when no commit was
    /// announced in this process (commits of other processes sharing the store).
    #[arg(long, env = "TASKLEDGER_STREAM_POLL_MS", default_value_t = 500)]
    pub(crate) stream_poll_ms: u64,
    /// Async worker threads serving connections (default: one per core but one, at least one;
    /// the store works on threads of its own).
    #[arg(long, env = "TASKLEDGER_WORKERS", value_parser = runtime::parse_workers)]
    pub(crate) workers: Option<usize>,
    /// Host names (or `host:port`) this server answers to besides loopback names and the public
    /// URL's host, comma-separated. Without tokens, requests naming any other `Host` are refused
    /// (DNS rebinding); the agent card is signed only for these and --public-url.
    #[arg(long, env = "TASKLEDGER_ALLOWED_HOSTS", default_value = "")]
    pub(crate) allowed_hosts: String,
    /// Proxies (addresses or CIDRs, comma-separated) whose X-Forwarded-Proto and
    /// X-Forwarded-Host are believed; from anyone else they are ignored.
    #[arg(long, env = "TASKLEDGER_TRUSTED_PROXIES", default_value = "")]
    pub(crate) trusted_proxies: String,
    /// Origins (`https://cdn.example.com`, comma-separated) images on board pages may come from
    /// besides the board's own and `data:`; any other image is offered as a link.
    #[arg(long, env = "TASKLEDGER_BOARD_IMAGE_ORIGINS", default_value = "")]
    pub(crate) board_image_origins: String,
    /// Seconds a board session lasts at most (a JWT's own expiry ends it sooner).
    #[arg(long, env = "TASKLEDGER_BOARD_SESSION_TTL_SECS", default_value_t = taskledger_app::board::DEFAULT_SESSION_TTL.as_secs())]
    pub(crate) board_session_ttl_secs: u64,
    /// The longest lifetime a JWT may have (`exp` after `iat`, and after now), in seconds;
    /// 0: any lifetime.
    #[arg(long, env = "TASKLEDGER_JWT_MAX_LIFETIME_SECS", default_value_t = 0)]
    pub(crate) jwt_max_lifetime_secs: u64,
    /// Seconds a task at work (submitted or working) may go without any event before it
    /// fails, saying so (the deadline reaper); 0: never.
    #[arg(long, env = "TASKLEDGER_STALL_DEADLINE_SECS", default_value_t = taskledger_app::runners::DEFAULT_STALL_DEADLINE_SECS)]
    pub(crate) stall_deadline_secs: u64,
    /// Seconds a turn taken from the SQS turn queue (`--store dynamodb`) stays hidden from
    /// other receivers, renewed every third of it while it runs: a crashed server's turns run
    /// again within this bound.
    #[arg(long, env = "TASKLEDGER_TURN_LEASE_SECS", default_value_t = taskledger_local::pollers::DEFAULT_TURN_LEASE_SECS)]
    pub(crate) turn_lease_secs: u32,
    /// How long a finished task is kept, counted from the event that finished it: `90d`,
    /// `12h`, `30m`, `45s` or seconds; 0 keeps tasks forever (at most 3650d).
    #[arg(long, env = "TASKLEDGER_RETENTION", default_value = "90d")]
    pub(crate) retention: String,
    /// Tenants' own retention, `tenant=period,…` (e.g. `acme=7d,audit=0`).
    #[arg(long, env = "TASKLEDGER_RETENTION_TENANTS", default_value = "")]
    pub(crate) retention_tenants: String,
    /// The S3 bucket each finished task is archived to before it expires (`--store dynamodb`
    /// with its pollers; the bucket must exist); empty: no archive.
    #[arg(long, env = "TASKLEDGER_ARCHIVE_BUCKET", default_value = "")]
    pub(crate) archive_bucket: String,
    /// An OpenTelemetry collector's OTLP/HTTP endpoint (`http://127.0.0.1:4318`): every span
    /// goes there, one trace a task's life (`/v1/traces` is added; `OTEL_EXPORTER_OTLP_PROTOCOL`
    /// picks `http/protobuf` or `http/json`). Unset: the standard `OTEL_EXPORTER_OTLP_*`
    /// variables, else no export.
    #[arg(long, env = "TASKLEDGER_OTLP_ENDPOINT")]
    pub(crate) otlp_endpoint: Option<String>,
    /// Log format: `pretty` (human) or `json`.
    #[arg(long, env = "TASKLEDGER_LOG_FORMAT", default_value = "pretty")]
    pub(crate) log_format: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StoreKind {
    Auto,
    Sqlite,
    Dynamodb,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Serve the A2A API (the default).
    Serve,
    /// List push deliveries that were given up on (dead letters), with the reason.
    DeadLetters,
    /// Put every dead-lettered push delivery back in the outbox (sent again by the server).
    Redrive,
    /// Move a handoff's approved work item on (DMP work/v1): working, review, landing,
    /// landed (the task completes) or dropped (it is rejected).
    Work {
        /// The handoff task.
        #[arg(long)]
        task: String,
        /// The work item's new status.
        #[arg(long)]
        status: String,
        /// Work artifacts as JSON, e.g. `[{"kind":"pr","url":"…","number":7}]`.
        #[arg(long, default_value = "[]")]
        artifacts: String,
    },
    /// Write tasks as NDJSON of their events (the archive format, versioned): one task, a
    /// tenant's, or all; to a file created private to you, or to standard output.
    Export {
        /// The task to export.
        #[arg(long, conflicts_with_all = ["tenant", "all"])]
        task: Option<String>,
        /// Every task of this tenant.
        #[arg(long, conflicts_with = "all")]
        tenant: Option<String>,
        /// Every task.
        #[arg(long)]
        all: bool,
        /// The file to write (standard output when not given).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Replay an export into the store, every event held to the task's rules (idempotent:
    /// tasks already there whole are left as they are); stops at the first bad line, with its
    /// number.
    Import {
        /// The export to read.
        #[arg(long)]
        file: PathBuf,
        /// Place the archive in this tenant: a task of any other tenant is refused.
        #[arg(long)]
        tenant: Option<String>,
        /// Refuse an archive not signed with this server's signing key
        /// (--push-signing-key-file), or changed since.
        #[arg(long)]
        require_signed: bool,
    },
    /// Replay events into the DynamoDB read model: one task, or every task page by page.
    Rebuild {
        /// The task to rebuild.
        #[arg(long, conflicts_with = "all")]
        task: Option<String>,
        /// Rebuild every task.
        #[arg(long)]
        all: bool,
    },
}
