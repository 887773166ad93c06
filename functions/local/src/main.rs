//! `taskledger`: the local all-in-one server. One command, an embedded durable store.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use taskledger_app::agent::ScenarioTimings;
use taskledger_app::compose;
use taskledger_app::grpc::TlsPem;
use taskledger_app::identity::jwt::{self, JwksSource, JwtSettings};
use taskledger_app::identity::TokenAuthenticator;
use taskledger_domain::error::ErrorTable;
use taskledger_domain::ids::TaskId;
use taskledger_infra::dynamo::{self, DynamoStore};
use taskledger_local::{
    runtime, serve_listeners, AgentChoice, Config, GrpcSettings, Listeners, Storage,
};

/// mimalloc instead of glibc's malloc (ADR 025): a quarter of the CPU under load went to
/// malloc, free and their arena locks.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_arena_eager_commit` and `mi_option_purge_delay` (their places in
/// `mi_option_e`, mimalloc.h, v2 and v3 alike).
const MI_ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
const MI_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long mimalloc keeps freed memory before handing it back to the OS, in ms (its default
/// is 10). Handed back at once (0), a send's freed pages were faulted in again by the next:
/// ~8 % of a send's CPU in page faults and page set-up.
const PURGE_DELAY_MS: std::ffi::c_long = 100;

/// Memory committed as it is used (ADR 025), freed memory handed back after `PURGE_DELAY_MS`.
/// Set at the start of `main`: what mimalloc reserved before (its first arena) keeps the
/// defaults, so it is built without transparent huge pages (`no_thp`): its eagerly committed
/// first arena was otherwise backed by 2 MiB pages as it was touched (17 MiB resident at idle,
/// 3.9 without). Peak RSS under the 16-client SendMessage benchmark: 50–53 MiB (46–48 with
/// freed memory handed back at once, 58–63 with huge pages); the v3 line held 67–75 MiB.
fn lean_allocator() {
    // SAFETY: setting an option is a plain store into mimalloc's option table; any value is valid.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_ARENA_EAGER_COMMIT, 0);
        libmimalloc_sys::mi_option_set(MI_PURGE_DELAY, PURGE_DELAY_MS);
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "taskledger",
    version,
    about = "A2A 1.0 task server on an embedded event store"
)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// Where tasks are stored; `auto` is DynamoDB when AWS_ENDPOINT_URL(_DYNAMODB) is set.
    #[arg(long, env = "TASKLEDGER_STORE", value_enum, default_value_t = StoreKind::Auto)]
    store: StoreKind,
    /// DynamoDB table name prefix (tables are `<prefix>tasks`).
    #[arg(long, env = "TASKLEDGER_TABLE_PREFIX", default_value = compose::DEFAULT_TABLE_PREFIX)]
    table_prefix: String,
    /// Create the DynamoDB tables and the SQS queues (turns, push, their DLQs) at start if they
    /// do not exist.
    #[arg(long, env = "TASKLEDGER_CREATE_TABLES", default_value_t = false)]
    create_tables: bool,
    /// On DynamoDB: run agent work in-process right after each commit instead of through the
    /// table's stream and the SQS queues (no push notifications then).
    #[arg(long, env = "TASKLEDGER_IN_PROCESS_AGENT", default_value_t = false)]
    in_process_agent: bool,
    /// Address to listen on.
    #[arg(long, env = "TASKLEDGER_LISTEN", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Directory holding the SQLite store and the cursor key.
    #[arg(long, env = "TASKLEDGER_DATA_DIR", default_value = "./data")]
    data_dir: PathBuf,
    /// Keep everything in memory (nothing survives a restart).
    #[arg(long, env = "TASKLEDGER_IN_MEMORY", default_value_t = false)]
    in_memory: bool,
    /// Base URL published in the agent card (default: from the request's Host header).
    #[arg(long, env = "TASKLEDGER_PUBLIC_URL")]
    public_url: Option<String>,
    /// Bearer tokens as `token=tenant/subject,…`; none means everyone is default/anonymous.
    #[arg(
        long,
        env = "TASKLEDGER_TOKENS",
        default_value = "",
        hide_env_values = true
    )]
    tokens: String,
    /// Seconds a blocking SendMessage waits for the task to settle.
    #[arg(long, env = "TASKLEDGER_BLOCKING_TIMEOUT_SECS", default_value_t = compose::LOCAL_BLOCKING_TIMEOUT_SECS)]
    blocking_timeout_secs: u64,
    /// Requests a second each principal may make (bursts of twice that); 0: no limit.
    #[arg(long, env = "TASKLEDGER_RATE_LIMIT", default_value_t = 0)]
    rate_limit: u32,
    /// Tasks a minute each principal may create; 0: no limit.
    #[arg(long, env = "TASKLEDGER_TASKS_PER_MINUTE", default_value_t = 0)]
    tasks_per_minute: u32,
    /// Streams each principal may hold open at once; 0: no limit.
    #[arg(long, env = "TASKLEDGER_MAX_STREAMS", default_value_t = 0)]
    max_streams: usize,
    /// Seconds a request body may take to arrive before the request is answered 408.
    #[arg(long, env = "TASKLEDGER_BODY_READ_TIMEOUT_SECS", default_value_t = 30)]
    body_read_timeout_secs: u64,
    /// Seconds a request's headers may take to arrive before the connection is closed.
    #[arg(long, env = "TASKLEDGER_HEADER_READ_TIMEOUT_SECS", default_value_t = taskledger_local::HEADER_READ_TIMEOUT.as_secs())]
    header_read_timeout_secs: u64,
    /// Keys sealing push-config tokens and credentials at rest: one `<kid>:<base64 32 bytes>`
    /// per line, the first seals, all open (rotation). Default: `secrets.keys` in --data-dir,
    /// created at first start (ADR 022).
    #[arg(long, env = "TASKLEDGER_SECRETS_KEY_FILE")]
    secrets_key_file: Option<PathBuf>,
    /// Verify JWT bearer tokens from this issuer (`iss`); needs --jwt-audience and --jwt-jwks.
    #[arg(long, env = "TASKLEDGER_JWT_ISSUER")]
    jwt_issuer: Option<String>,
    /// Accepted audiences (`aud`), comma-separated.
    #[arg(long, env = "TASKLEDGER_JWT_AUDIENCE", default_value = "")]
    jwt_audience: String,
    /// The issuer's keys: a JWKS URL (fetched again for an unknown `kid`) or file.
    #[arg(long, env = "TASKLEDGER_JWT_JWKS")]
    jwt_jwks: Option<String>,
    /// Accepted signature algorithms (asymmetric only), comma-separated.
    #[arg(long, env = "TASKLEDGER_JWT_ALGORITHMS", default_value = "RS256,ES256")]
    jwt_algorithms: String,
    /// Claim naming the caller's tenant (`sub` is the subject).
    #[arg(long, env = "TASKLEDGER_TENANT_CLAIM", default_value = "tenant")]
    jwt_tenant_claim: String,
    /// Base URL of an OpenAI-compatible Chat Completions endpoint; without it the model loop
    /// runs on the built-in scripted model.
    #[arg(long, env = "TASKLEDGER_LLM_BASE_URL")]
    llm_base_url: Option<String>,
    /// API key for that endpoint.
    #[arg(long, env = "TASKLEDGER_LLM_API_KEY", hide_env_values = true)]
    llm_api_key: Option<String>,
    /// Model used when a task names none (`/model` changes it per task).
    #[arg(long, env = "TASKLEDGER_LLM_MODEL", default_value = compose::DEFAULT_LLM_MODEL)]
    llm_model: String,
    /// A Bedrock model id (Converse API) to use as the agent instead of an OpenAI-compatible
    /// endpoint; AWS credentials and region come from the environment.
    #[arg(long, env = "TASKLEDGER_BEDROCK_MODEL")]
    bedrock_model: Option<String>,
    /// Folder of skills the model may load (one sub-folder with a SKILL.md per skill).
    #[arg(long, env = "TASKLEDGER_SKILLS_DIR")]
    skills_dir: Option<PathBuf>,
    /// Model turns per execution before the task fails with "turn limit reached".
    #[arg(long, env = "TASKLEDGER_MAX_TURNS", default_value_t = compose::DEFAULT_MAX_TURNS)]
    max_turns: u32,
    /// Tools the model agent runs only after a person approves the call (comma-separated
    /// names; kagent hitl/v1). A task's extension data can name more (`approve_tools`).
    #[arg(long, env = "TASKLEDGER_APPROVE_TOOLS", default_value = "")]
    approve_tools: String,
    /// Networks webhooks may reach despite the SSRF guard (comma-separated CIDRs). The local
    /// default allows loopback (development); pass an empty value to refuse it too.
    #[arg(
        long,
        env = "TASKLEDGER_PUSH_ALLOWLIST",
        default_value = "127.0.0.0/8,::1/128"
    )]
    push_allowlist: String,
    /// File with a P-256 private key (PEM) that signs push deliveries (JWS ES256); its public
    /// key is served at /.well-known/jwks.json.
    #[arg(long, env = "TASKLEDGER_PUSH_SIGNING_KEY_FILE")]
    push_signing_key_file: Option<PathBuf>,
    /// How long a failing delivery is retried before it is dead-lettered.
    #[arg(
        long,
        env = "TASKLEDGER_PUSH_RETRY_HORIZON_SECS",
        default_value_t = taskledger_domain::push::DEFAULT_RETRY_HORIZON.as_secs()
    )]
    push_retry_horizon_secs: u64,
    /// Serve the gRPC binding (lf.a2a.v1.A2AService) on this address too; off by default.
    /// Plaintext HTTP/2 (h2c) unless a TLS certificate and key are given.
    #[arg(long, env = "TASKLEDGER_GRPC_LISTEN")]
    grpc_listen: Option<SocketAddr>,
    /// PEM certificate chain for gRPC over TLS (with --grpc-tls-key).
    #[arg(long, env = "TASKLEDGER_GRPC_TLS_CERT", requires = "grpc_tls_key")]
    grpc_tls_cert: Option<PathBuf>,
    /// PEM private key for gRPC over TLS (with --grpc-tls-cert).
    #[arg(long, env = "TASKLEDGER_GRPC_TLS_KEY", requires = "grpc_tls_cert")]
    grpc_tls_key: Option<PathBuf>,
    /// `host:port` the agent card gives for gRPC (default: the card's host with the gRPC port).
    #[arg(long, env = "TASKLEDGER_GRPC_PUBLIC_ADDR")]
    grpc_public_addr: Option<String>,
    /// Which revision of the A2A error table HTTP statuses and gRPC codes follow: `1.0.1`
    /// (the current spec) or `1.0.0` (for clients, and the 1.0 conformance kit, pinned to it).
    #[arg(long, env = "TASKLEDGER_ERROR_TABLE", default_value = "1.0.1", value_parser = ErrorTable::parse)]
    error_table: ErrorTable,
    /// Milliseconds between the keep-alive comments of an idle stream.
    #[arg(
        long,
        env = "TASKLEDGER_STREAM_KEEP_ALIVE_MS",
        default_value_t = 15_000
    )]
    stream_keep_alive_ms: u64,
    /// Milliseconds between an open stream's reads of its task's events when no commit was
    /// announced in this process (commits of other processes sharing the store).
    #[arg(long, env = "TASKLEDGER_STREAM_POLL_MS", default_value_t = 500)]
    stream_poll_ms: u64,
    /// Async worker threads serving connections (default: one per core but one, at least one;
    /// the store works on threads of its own).
    #[arg(long, env = "TASKLEDGER_WORKERS", value_parser = runtime::parse_workers)]
    workers: Option<usize>,
    /// Log format: `pretty` (human) or `json`.
    #[arg(long, env = "TASKLEDGER_LOG_FORMAT", default_value = "pretty")]
    log_format: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum StoreKind {
    Auto,
    Sqlite,
    Dynamodb,
}

#[derive(Debug, Subcommand)]
enum Command {
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

fn main() {
    lean_allocator();
    let args = Args::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    if args.log_format == "json" {
        tracing_subscriber::fmt()
            .json()
            .with_env_filter(filter)
            .init();
    } else {
        tracing_subscriber::fmt().with_env_filter(filter).init();
    }
    let workers = args.workers.unwrap_or_else(runtime::workers_here);
    let rt = match runtime::build(workers) {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, workers, "cannot start the worker threads");
            eprintln!("taskledger: cannot start {workers} worker threads: {e}");
            std::process::exit(1);
        }
    };
    // As `#[tokio::main]` did: a failed run exits before the runtime is shut down.
    if let Err(e) = rt.block_on(run(args)) {
        tracing::error!(error = %e, "taskledger stopped");
        eprintln!("taskledger: {e}");
        std::process::exit(1);
    }
}

fn uses_dynamo(args: &Args) -> bool {
    match args.store {
        StoreKind::Dynamodb => true,
        StoreKind::Sqlite => false,
        StoreKind::Auto => {
            std::env::var_os("AWS_ENDPOINT_URL").is_some()
                || std::env::var_os("AWS_ENDPOINT_URL_DYNAMODB").is_some()
        }
    }
}

async fn rebuild(
    args: &Args,
    task: Option<String>,
    all: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    if !uses_dynamo(args) {
        return Err("rebuild works on the DynamoDB store (set --store dynamodb); the SQLite read model is written in the same transaction as its events".into());
    }
    let store = DynamoStore::new(dynamo::client_from_env().await, &args.table_prefix);
    store.check().await?;
    if let Some(id) = task {
        let id = TaskId::parse(id)?;
        let n = store.rebuild(&id).await?;
        println!("rebuilt {id} from {n} events");
        return Ok(());
    }
    if !all {
        return Err("name a task with --task <id>, or rebuild every task with --all".into());
    }
    let mut tasks = 0;
    for shard in 0..dynamo::store::SHARDS {
        let mut start = None;
        loop {
            let (ids, next) = store.task_ids(shard, start).await?;
            for id in ids {
                store.rebuild(&id).await?;
                tasks += 1;
            }
            match next {
                Some(n) => start = Some(n),
                None => break,
            }
        }
    }
    println!("rebuilt {tasks} tasks");
    Ok(())
}

/// Dead letters of the embedded store's push outbox (on AWS they are in the push DLQ, and the
/// `taskledger-push` redrive runs there).
async fn dead_letters(args: &Args, redrive: bool) -> Result<(), Box<dyn std::error::Error>> {
    use taskledger_domain::ports::PushOutbox;
    if uses_dynamo(args) {
        return Err("on DynamoDB, dead letters are in the push DLQ: redrive them with `aws sqs start-message-move-task` or the push worker's TASKLEDGER_REDRIVE mode (see README)".into());
    }
    let store = taskledger_infra::SqliteStore::open(&args.data_dir)?;
    if redrive {
        let n = store.redrive().await?;
        println!("{n} deliveries back in the outbox; a running server sends them now");
        return Ok(());
    }
    let letters = store.dead_letters(1000).await?;
    for d in &letters {
        println!(
            "{}\t{}\tattempts={}\t{}",
            d.delivery.delivery_id(),
            d.delivery.config.url,
            d.attempts,
            d.reason
        );
    }
    println!("{} dead letters", letters.len());
    Ok(())
}

/// `--grpc-listen` and its TLS files, read now so a missing file stops the start.
fn grpc_settings(args: &Args) -> Result<Option<GrpcSettings>, String> {
    let Some(listen) = args.grpc_listen else {
        if args.grpc_tls_cert.is_some() {
            return Err("--grpc-tls-cert/--grpc-tls-key need --grpc-listen".into());
        }
        return Ok(None);
    };
    let read = |flag: &str, path: &PathBuf| {
        std::fs::read_to_string(path).map_err(|e| format!("{flag} {}: {e}", path.display()))
    };
    let tls = match (&args.grpc_tls_cert, &args.grpc_tls_key) {
        (Some(cert), Some(key)) => Some(TlsPem {
            cert: read("--grpc-tls-cert", cert)?,
            key: read("--grpc-tls-key", key)?,
        }),
        _ => None,
    };
    Ok(Some(GrpcSettings {
        listen,
        tls,
        public_addr: args.grpc_public_addr.clone().filter(|a| !a.is_empty()),
    }))
}

/// The store the flags name.
fn storage_of(args: &Args) -> Storage {
    if uses_dynamo(args) {
        Storage::Dynamo {
            prefix: args.table_prefix.clone(),
            create_tables: args.create_tables,
            counter: None,
            pollers: !args.in_process_agent,
        }
    } else if args.in_memory {
        Storage::Memory
    } else {
        Storage::Dir(args.data_dir.clone())
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    match &args.command {
        Some(Command::Rebuild { task, all }) => return rebuild(&args, task.clone(), *all).await,
        Some(Command::DeadLetters) => return dead_letters(&args, false).await,
        Some(Command::Redrive) => return dead_letters(&args, true).await,
        Some(Command::Work {
            task,
            status,
            artifacts,
        }) => {
            let artifacts = serde_json::from_str(artifacts)
                .map_err(|e| format!("--artifacts: not a list of work artifacts: {e}"))?;
            let storage = storage_of(&args);
            let t =
                taskledger_local::operator::advance_work(&storage, task, status, artifacts).await?;
            println!("{}", serde_json::to_string_pretty(&t)?);
            return Ok(());
        }
        Some(Command::Serve) | None => {}
    }
    let push = taskledger_local::PushSettings {
        policy: taskledger_domain::push::AddressPolicy::parse_allowlist(&args.push_allowlist)
            .map_err(|e| format!("--push-allowlist: {e}"))?,
        signing_key_pem: match &args.push_signing_key_file {
            Some(path) => Some(
                std::fs::read_to_string(path)
                    .map_err(|e| format!("--push-signing-key-file {}: {e}", path.display()))?,
            ),
            None => None,
        },
        retry: taskledger_domain::push::RetryPolicy {
            horizon: Duration::from_secs(args.push_retry_horizon_secs),
            ..Default::default()
        },
    };
    let grpc = grpc_settings(&args)?;
    let tokens = TokenAuthenticator::parse_table(&args.tokens)
        .map_err(|e| format!("--tokens / TASKLEDGER_TOKENS: {e}"))?;
    let storage = storage_of(&args);
    let jwt = jwt_settings(&args)?;
    let config = Config {
        storage,
        public_url: args.public_url.clone(),
        tokens,
        jwt,
        rate_limit: taskledger_app::limits::RateLimit::per_second(args.rate_limit),
        task_limit: taskledger_app::limits::RateLimit::tasks_per_minute(args.tasks_per_minute),
        max_streams: (args.max_streams > 0).then_some(args.max_streams),
        body_read_timeout: Duration::from_secs(args.body_read_timeout_secs.max(1)),
        header_read_timeout: Duration::from_secs(args.header_read_timeout_secs.max(1)),
        secrets_key_file: args.secrets_key_file.clone(),
        blocking_timeout: Duration::from_secs(args.blocking_timeout_secs),
        timings: ScenarioTimings::default(),
        cursor_key: None,
        push,
        grpc,
        error_table: args.error_table,
        stream_keep_alive: Duration::from_millis(args.stream_keep_alive_ms.max(1)),
        stream_poll: Duration::from_millis(args.stream_poll_ms.max(1)),
        agent: match (
            &args.llm_base_url.clone().filter(|u| !u.is_empty()),
            &args.bedrock_model.clone().filter(|m| !m.is_empty()),
        ) {
            (None, Some(model)) => AgentChoice::Bedrock {
                model: model.clone(),
                max_turns: args.max_turns,
                skills_dir: args.skills_dir.clone(),
                approve_tools: compose::tool_list(&args.approve_tools),
            },
            (None, None) => AgentChoice::Scenario,
            (Some(url), _) => {
                let mut s =
                    taskledger_infra::llm::OpenAiSettings::new(url.clone(), args.llm_model.clone());
                s.api_key = args.llm_api_key.clone();
                AgentChoice::OpenAi {
                    settings: s,
                    max_turns: args.max_turns,
                    skills_dir: args.skills_dir.clone(),
                    approve_tools: compose::tool_list(&args.approve_tools),
                }
            }
        },
    };
    let listeners = Listeners::bind(&config, args.listen).await.map_err(|e| {
        format!(
            "cannot listen on {} (or the gRPC address): {e}",
            args.listen
        )
    })?;
    let addr = listeners.http.local_addr()?;
    let base = args
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{addr}"));
    let where_ = match &config.storage {
        Storage::Dynamo { prefix, .. } => format!("DynamoDB table {prefix}tasks"),
        Storage::Memory => "in memory".to_string(),
        Storage::Dir(dir) => dir.display().to_string(),
    };
    println!("taskledger listening on http://{addr} (data: {where_})");
    println!(
        "agent card: {}/.well-known/agent-card.json",
        base.trim_end_matches('/')
    );
    if let Some(grpc) = &listeners.grpc {
        let tls = if args.grpc_tls_cert.is_some() {
            "TLS"
        } else {
            "plaintext h2c"
        };
        println!(
            "gRPC (lf.a2a.v1.A2AService, {tls}) on {}",
            grpc.local_addr()?
        );
    }
    if config.tokens.is_empty() {
        println!("auth: none configured, every caller is the dev principal default/anonymous");
    }
    serve_listeners(&config, listeners, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    Ok(())
}

/// The JWT settings the flags name (none without `--jwt-issuer`).
fn jwt_settings(args: &Args) -> Result<Option<JwtSettings>, String> {
    let Some(issuer) = args.jwt_issuer.clone().filter(|i| !i.is_empty()) else {
        return Ok(None);
    };
    let audiences: Vec<String> = args
        .jwt_audience
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_string)
        .collect();
    if audiences.is_empty() {
        return Err("--jwt-issuer needs --jwt-audience".into());
    }
    let jwks = args
        .jwt_jwks
        .as_deref()
        .filter(|j| !j.is_empty())
        .ok_or("--jwt-issuer needs --jwt-jwks (a JWKS URL or file)")?;
    Ok(Some(JwtSettings {
        issuer,
        audiences,
        algorithms: jwt::parse_algorithms(&args.jwt_algorithms)
            .map_err(|e| format!("--jwt-algorithms: {e}"))?,
        jwks: JwksSource::parse(jwks),
        tenant_claim: args.jwt_tenant_claim.clone(),
        refetch_min: jwt::JWKS_REFETCH_MIN,
    }))
}
