//! `taskledger`: the local all-in-one server. One command, an embedded durable store.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use taskledger_app::agent::ScenarioTimings;
use taskledger_app::identity::TokenAuthenticator;
use taskledger_local::{serve, Config, Storage};
use tokio::net::TcpListener;

#[derive(Debug, Parser)]
#[command(
    name = "taskledger",
    version,
    about = "A2A 1.0 task server on an embedded event store"
)]
struct Args {
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
    #[arg(long, env = "TASKLEDGER_BLOCKING_TIMEOUT_SECS", default_value_t = 60)]
    blocking_timeout_secs: u64,
    /// Log format: `pretty` (human) or `json`.
    #[arg(long, env = "TASKLEDGER_LOG_FORMAT", default_value = "pretty")]
    log_format: String,
}

#[tokio::main]
async fn main() {
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
    if let Err(e) = run(args).await {
        tracing::error!(error = %e, "taskledger stopped");
        eprintln!("taskledger: {e}");
        std::process::exit(1);
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let tokens = TokenAuthenticator::parse_table(&args.tokens)
        .map_err(|e| format!("--tokens / TASKLEDGER_TOKENS: {e}"))?;
    let storage = if args.in_memory {
        Storage::Memory
    } else {
        Storage::Dir(args.data_dir.clone())
    };
    let config = Config {
        storage,
        public_url: args.public_url.clone(),
        tokens,
        blocking_timeout: Duration::from_secs(args.blocking_timeout_secs),
        timings: ScenarioTimings::default(),
    };
    let listener = TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let addr = listener.local_addr()?;
    let base = args
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{addr}"));
    let where_ = if args.in_memory {
        "in memory".to_string()
    } else {
        args.data_dir.display().to_string()
    };
    println!("taskledger listening on http://{addr} (data: {where_})");
    println!(
        "agent card: {}/.well-known/agent-card.json",
        base.trim_end_matches('/')
    );
    if config.tokens.is_empty() {
        println!("auth: none configured, every caller is the dev principal default/anonymous");
    }
    serve(&config, listener, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    Ok(())
}
