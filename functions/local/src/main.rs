//! `taskledger`: the local all-in-one server. One command, an embedded durable store.

use std::path::PathBuf;
use std::time::Duration;
use taskledger_infra::logging::LogFormat;
use taskledger_infra::otlp::OtlpSettings;

use clap::Parser;

mod args;
use args::{Args, Command, StoreKind};
use taskledger_app::agent::ScenarioTimings;
use taskledger_app::compose;
use taskledger_app::grpc::TlsPem;
use taskledger_app::identity::jwt::{self, JwksSource, JwtSettings};
use taskledger_app::identity::TokenAuthenticator;
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

fn main() {
    lean_allocator();
    let args = Args::parse();
    // Colour codes only for a person at a terminal, never into a file or a pipe.
    let format = if args.log_format == "json" {
        LogFormat::Json { timestamps: true }
    } else {
        LogFormat::Pretty {
            ansi: std::io::IsTerminal::is_terminal(&std::io::stdout()),
        }
    };
    // Spans to a collector: `--otlp-endpoint`, else the standard OTEL_EXPORTER_OTLP_* variables.
    let otlp = match args.otlp_endpoint.as_deref().filter(|e| !e.is_empty()) {
        Some(e) => OtlpSettings::new(
            Some(e),
            None,
            std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL").ok().as_deref(),
            "taskledger",
        ),
        None => OtlpSettings::from_env("taskledger"),
    };
    let otlp = match otlp {
        Ok(o) => o,
        Err(e) => {
            eprintln!("taskledger: --otlp-endpoint: {e}");
            std::process::exit(2);
        }
    };
    private_files();
    let workers = args.workers.unwrap_or_else(runtime::workers_here);
    let rt = match runtime::build(workers) {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, workers, "cannot start the worker threads");
            eprintln!("taskledger: cannot start {workers} worker threads: {e}");
            std::process::exit(1);
        }
    };
    // The span exporter runs on the runtime.
    if let Err(e) =
        rt.block_on(async { taskledger_app::compose::init_telemetry(format, otlp.as_ref()) })
    {
        eprintln!("taskledger: {e}");
        std::process::exit(1);
    }
    // As `#[tokio::main]` did: a failed run exits before the runtime is shut down.
    if let Err(e) = rt.block_on(run(args)) {
        tracing::error!(error = %e, "taskledger stopped");
        eprintln!("taskledger: {e}");
        std::process::exit(1);
    }
}

/// Every file this process creates is its owner's alone (the store, its WAL and shared memory,
/// the keys; ADR 020): the data directory's own rules (`taskledger_infra::files`) hold even for
/// a file some library creates by itself.
fn private_files() {
    // SAFETY: umask(2) only sets the process's file mode creation mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
}

fn uses_dynamo(args: &Args) -> bool {
    match args.store {
        StoreKind::Dynamodb => true,
        StoreKind::Sqlite => false,
        // `--in-memory` asks for the embedded store, whatever endpoint the environment names.
        StoreKind::Auto if args.in_memory => false,
        StoreKind::Auto => {
            std::env::var_os("AWS_ENDPOINT_URL").is_some()
                || std::env::var_os("AWS_ENDPOINT_URL_DYNAMODB").is_some()
        }
    }
}

/// `--retention` and `--retention-tenants`, checked.
/// The keys and webhook policy `export` and `import` work with: the server's own.
fn archive_keys_of(
    args: &Args,
) -> Result<taskledger_local::archive::ArchiveKeys, Box<dyn std::error::Error>> {
    let pem = match &args.push_signing_key_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| format!("--push-signing-key-file {}: {e}", path.display()))?,
        ),
        None => None,
    };
    let policy = taskledger_domain::push::AddressPolicy::parse_allowlist(&args.push_allowlist)
        .map_err(|e| format!("--push-allowlist: {e}"))?;
    Ok(taskledger_local::archive_keys(
        &storage_of(args),
        args.secrets_key_file.as_deref(),
        pem.as_deref(),
        policy,
    )?)
}

fn retention_of(args: &Args) -> Result<taskledger_domain::retention::Retention, String> {
    taskledger_domain::retention::Retention::parse(&args.retention, &args.retention_tenants)
        .map_err(|e| format!("--retention / --retention-tenants: {e}"))
}

async fn rebuild(
    args: &Args,
    task: Option<String>,
    all: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    if !uses_dynamo(args) {
        return Err("rebuild works on the DynamoDB store (set --store dynamodb); the SQLite read model is written in the same transaction as its events".into());
    }
    // Rebuilt heads keep a finished task's expiry.
    let store = DynamoStore::new(dynamo::client_from_env().await, &args.table_prefix)
        .with_retention(retention_of(args)?);
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
            let retention = retention_of(&args)?;
            let t = taskledger_local::operator::advance_work(
                &storage, &retention, task, status, artifacts,
            )
            .await?;
            println!("{}", serde_json::to_string_pretty(&t)?);
            return Ok(());
        }
        Some(Command::Export {
            task,
            tenant,
            all,
            out,
        }) => {
            use taskledger_app::archive::Selection;
            let selection = match (task, tenant, all) {
                (Some(t), _, _) => Selection::Task(TaskId::parse(t.clone())?),
                (None, Some(t), _) => Selection::Tenant(t.clone()),
                (None, None, true) => Selection::All,
                _ => return Err("name a task with --task, a tenant with --tenant, or --all".into()),
            };
            let r = taskledger_local::archive::export(
                &storage_of(&args),
                &retention_of(&args)?,
                &selection,
                &archive_keys_of(&args)?,
                out.as_deref(),
            )
            .await?;
            eprintln!("exported {} tasks ({} events)", r.tasks, r.events);
            return Ok(());
        }
        Some(Command::Import {
            file,
            tenant,
            require_signed,
        }) => {
            let flags = taskledger_local::archive::ImportFlags {
                tenant: tenant.clone(),
                require_signed: *require_signed,
            };
            let r = taskledger_local::archive::import(
                &storage_of(&args),
                &retention_of(&args)?,
                &archive_keys_of(&args)?,
                &flags,
                file,
            )
            .await?;
            eprintln!(
                "imported {} tasks ({} events written; {} already there whole)",
                r.tasks, r.events, r.unchanged
            );
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
        metrics_token: args.metrics_token.clone().filter(|t| !t.is_empty()),
        allowed_hosts: taskledger_app::http::guard::parse_allowed_hosts(&args.allowed_hosts)
            .map_err(|e| format!("--allowed-hosts: {e}"))?,
        proxies: taskledger_app::http::Proxies::parse(&args.trusted_proxies)
            .map_err(|e| format!("--trusted-proxies: {e}"))?,
        board_image_origins: taskledger_app::board::ImageOrigins::parse(&args.board_image_origins)
            .map_err(|e| format!("--board-image-origins: {e}"))?
            .origins()
            .to_vec(),
        board_session_ttl: session_ttl(args.board_session_ttl_secs)?,
        stall_deadline_secs: taskledger_app::runners::stall_deadline(args.stall_deadline_secs)
            .map_err(|e| format!("--stall-deadline-secs: {e}"))?,
        turn_lease_secs: taskledger_local::pollers::turn_lease(args.turn_lease_secs)
            .map_err(|e| format!("--turn-lease-secs: {e}"))?,
        retention: retention_of(&args)?,
        archive_bucket: match args.archive_bucket.as_str() {
            "" => None,
            b if uses_dynamo(&args) && !args.in_process_agent => Some(
                taskledger_infra::s3::BucketName::parse(b)
                    .map_err(|e| format!("--archive-bucket: {e}"))?,
            ),
            _ => return Err("--archive-bucket archives from the DynamoDB table's stream: it needs --store dynamodb without --in-process-agent (on the embedded store, `taskledger export` writes the same files)".into()),
        },
        mcp: compose::McpServerSpec::parse_list(
            &args.mcp_servers.join(","),
            &taskledger_domain::push::AddressPolicy::parse_allowlist(&args.push_allowlist)
                .map_err(|e| format!("--push-allowlist: {e}"))?,
        )
        .map_err(|e| format!("--mcp-server: {e}"))?
        .into_iter()
        .chain(
            compose::McpServerSpec::parse_commands(&args.mcp_commands)
                .map_err(|e| format!("--mcp-command: {e}"))?,
        )
        .collect(),
        mcp_trust: compose::tool_list(&args.mcp_trust),
        agent: match (upstream_of(&args)?, args.custom_agent.as_deref()) {
            (Some(upstream), _) => AgentChoice::Upstream(upstream),
            (None, Some(name)) => AgentChoice::Custom(compose::CustomAgent(
                taskledger_example_agent::by_name(name)
                    .ok_or_else(|| format!("--custom-agent: no agent {name:?} is built in"))?,
                name.to_string(),
            )),
            (None, None) => model_agent(&args),
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

/// `--board-session-ttl-secs`: 1 s to `MAX_SESSION_TTL`.
fn session_ttl(secs: u64) -> Result<Duration, String> {
    let max = taskledger_app::board::MAX_SESSION_TTL;
    if secs == 0 || secs > max.as_secs() {
        return Err(format!(
            "--board-session-ttl-secs: {secs} is not between 1 and {} (30 days)",
            max.as_secs()
        ));
    }
    Ok(Duration::from_secs(secs))
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
        max_lifetime: jwt::max_lifetime(args.jwt_max_lifetime_secs)
            .map_err(|e| format!("--jwt-max-lifetime-secs: {e}"))?,
    }))
}

/// The model agent (or the built-in one) of the flags.
fn model_agent(args: &Args) -> AgentChoice {
    match (
        &args.llm_base_url.clone().filter(|u| !u.is_empty()),
        &args.bedrock_model.clone().filter(|m| !m.is_empty()),
    ) {
        (None, Some(model)) => AgentChoice::Bedrock {
            model: model.clone(),
            max_turns: args.max_turns,
            skills_dir: args.skills_dir.clone(),
            approve_tools: compose::tool_list(&args.approve_tools),
        },
        (None, None) => AgentChoice::Scenario {
            conformance: args.conformance_scenarios,
        },
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
    }
}

/// `--agent-url` and its credential: the upstream A2A agent as the worker (ADR 034).
fn upstream_of(args: &Args) -> Result<Option<compose::UpstreamChoice>, Box<dyn std::error::Error>> {
    let Some(url) = args.agent_url.as_deref().filter(|u| !u.is_empty()) else {
        return Ok(None);
    };
    let policy = taskledger_domain::push::AddressPolicy::parse_allowlist(&args.push_allowlist)
        .map_err(|e| format!("--push-allowlist: {e}"))?;
    let mut c =
        compose::UpstreamChoice::new(url, policy).map_err(|e| format!("--agent-url: {e}"))?;
    c.token = match (
        &args.agent_token_file,
        std::env::var("TASKLEDGER_AGENT_TOKEN").ok(),
    ) {
        (Some(f), _) => compose::UpstreamToken::new(
            &std::fs::read_to_string(f).map_err(|e| format!("--agent-token-file: {e}"))?,
        ),
        (None, Some(t)) => compose::UpstreamToken::new(&t),
        (None, None) => None,
    };
    c.auth_header = args.agent_auth_header.clone();
    c.follow.window = compose::follow_window(args.agent_follow_secs);
    Ok(Some(c))
}
