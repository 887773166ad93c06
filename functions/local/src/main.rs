//! `taskledger`: the local all-in-one server. One command, an embedded durable store.

use taskledger_infra::logging::LogFormat;

use clap::Parser;

mod args;
use args::{Args, Command};
use taskledger_domain::ids::TaskId;
use taskledger_infra::dynamo::{self, DynamoStore};
use taskledger_local::{runtime, serve_listeners, Config, Listeners, Storage};

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
    let format = if args.local.log_format == "json" {
        LogFormat::Json { timestamps: true }
    } else {
        LogFormat::Pretty {
            ansi: std::io::IsTerminal::is_terminal(&std::io::stdout()),
        }
    };
    // Spans to a collector: `--otlp-endpoint`, else the standard OTEL_EXPORTER_OTLP_* variables.
    let otlp = args.settings.otlp();
    let otlp = match otlp {
        Ok(o) => o,
        Err(e) => {
            eprintln!("taskledger: {e}");
            std::process::exit(2);
        }
    };
    private_files();
    let workers = args.local.workers.unwrap_or_else(runtime::workers_here);
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

/// The keys and webhook policy `export` and `import` work with: the server's own.
fn archive_keys_of(
    args: &Args,
) -> Result<taskledger_local::archive::ArchiveKeys, Box<dyn std::error::Error>> {
    let s = &args.settings;
    Ok(taskledger_local::archive_keys(
        &args.local.storage(s),
        s.secrets_key_file.as_deref(),
        s.signing_key_pem()?.as_deref(),
        s.address_policy(taskledger_app::settings::Deployment::Local)?,
    )?)
}

async fn rebuild(
    args: &Args,
    task: Option<String>,
    all: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    if !args.local.uses_dynamo() {
        return Err("rebuild works on the DynamoDB store (set --store dynamodb); the SQLite read model is written in the same transaction as its events".into());
    }
    // Rebuilt heads keep a finished task's expiry.
    let s = &args.settings;
    let store = DynamoStore::new(dynamo::client_from_env().await, &s.table_prefix)
        .with_retention(s.retention()?)
        .with_index_shards(s.index_shards);
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
    if args.local.uses_dynamo() {
        return Err("on DynamoDB, dead letters are in the push DLQ: redrive them with `aws sqs start-message-move-task` or the push worker's TASKLEDGER_REDRIVE mode (see README)".into());
    }
    let store = taskledger_infra::SqliteStore::open(&args.local.data_dir)?;
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
            let storage = args.local.storage(&args.settings);
            let retention = args.settings.retention()?;
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
                &args.local.storage(&args.settings),
                &args.settings.retention()?,
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
                &args.local.storage(&args.settings),
                &args.settings.retention()?,
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
    let config = Config::from_flags(
        &args.settings,
        &args.local,
        taskledger_example_agent::by_name,
    )?;
    let listeners = Listeners::bind(&config, args.local.listen)
        .await
        .map_err(|e| {
            format!(
                "cannot listen on {} (or the gRPC address): {e}",
                args.local.listen
            )
        })?;
    let addr = listeners.http.local_addr()?;
    let base = config
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
        let tls = if args.local.grpc_tls_cert.is_some() {
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
