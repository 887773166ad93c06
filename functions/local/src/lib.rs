//! The all-in-one local server: the A2A API and the agent in one process, on the embedded
//! SQLite store under a data directory, or on DynamoDB (an emulator such as LocalStack or moto
//! via `AWS_ENDPOINT_URL`, or AWS itself). Tests start it in-process on a free port. The gRPC
//! binding is served on a port of its own when configured (`Config::grpc`).

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use taskledger_app::agent::ScenarioTimings;
use taskledger_app::compose;
pub use taskledger_app::compose::AgentChoice;
use taskledger_app::grpc::{A2aGrpc, GrpcServeError, GrpcServer, TlsPem};
use taskledger_app::identity::jwt::JwtAuthenticator;
use taskledger_app::identity::{Authenticator, TokenAuthenticator};
use taskledger_app::runners::push::run_outbox_worker;
use taskledger_app::runners::{run_feed, InProcessTurns, Relay};
use taskledger_app::{
    router, AppState, Dispatch, GrpcAddress, HttpSettings, Service, ServiceSettings,
};
use taskledger_domain::cursor::CursorCodec;
use taskledger_domain::ids::Principal;
use taskledger_domain::ports::{EventStore, TaskReadModel};
use taskledger_domain::push::{AddressPolicy, RetryPolicy};
use taskledger_infra::dynamo::{self, DynamoStore};
use taskledger_infra::sqs::{self, SqsPushQueue, SqsTurnQueue};
use taskledger_infra::webhook::{PushSigner, WebhookSender};

mod http_server;
mod keys;
pub mod operator;
pub mod pollers;
pub mod runtime;

use http_server::serve_http;
pub use http_server::{HEADER_READ_TIMEOUT, MAX_HEADER_BYTES};
use keys::{cursor_key, secrets};
pub use keys::{CURSOR_KEY_FILE, SECRETS_KEY_FILE};
use taskledger_infra::SqliteStore;
use tokio::net::TcpListener;

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
    pub push: PushSettings,
    /// Which revision of the A2A error table HTTP statuses and gRPC codes follow.
    pub error_table: taskledger_domain::error::ErrorTable,
    /// The gRPC binding on a port of its own; none: not served (and not in the card).
    pub grpc: Option<GrpcSettings>,
    /// How often an idle SSE stream sends a keep-alive comment.
    pub stream_keep_alive: Duration,
    /// How often an open stream reads its task's events for commits of other processes.
    pub stream_poll: Duration,
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
            policy: AddressPolicy::allow_loopback(),
            signing_key_pem: None,
            retry: RetryPolicy::default(),
        }
    }
}

impl Config {
    pub fn in_memory() -> Self {
        Self {
            storage: Storage::Memory,
            public_url: None,
            tokens: HashMap::new(),
            jwt: None,
            rate_limit: None,
            task_limit: None,
            max_streams: None,
            body_read_timeout: taskledger_app::http::BODY_READ_TIMEOUT,
            header_read_timeout: HEADER_READ_TIMEOUT,
            secrets_key_file: None,
            blocking_timeout: Duration::from_secs(
                taskledger_app::compose::LOCAL_BLOCKING_TIMEOUT_SECS,
            ),
            timings: ScenarioTimings::default(),
            cursor_key: None,
            agent: AgentChoice::Scenario,
            push: PushSettings::default(),
            error_table: Default::default(),
            grpc: None,
            stream_keep_alive: taskledger_app::http::DEFAULT_KEEP_ALIVE,
            stream_poll: taskledger_app::service::DEFAULT_STREAM_POLL,
        }
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
    #[error("server failed: {0}")]
    Serve(#[from] std::io::Error),
    #[error(transparent)]
    Grpc(#[from] GrpcServeError),
    /// An operator command the service refused.
    #[error(transparent)]
    Refused(#[from] taskledger_app::AppError),
}

/// The opened store: its ports, and what runs after commits on it.
pub struct Stores {
    pub events: Arc<dyn EventStore>,
    pub reads: Arc<dyn TaskReadModel>,
    /// The embedded store: its feed drives the relay, its outbox holds webhook deliveries.
    pub embedded: Option<Arc<SqliteStore>>,
    /// The serverless path's parts, when DynamoDB runs with pollers.
    pub serverless: Option<Serverless>,
}

/// What the pollers need: the store, the table's client and name, and the queues.
pub struct Serverless {
    pub store: DynamoStore,
    pub ddb: aws_sdk_dynamodb::Client,
    pub table: String,
    pub turns: SqsTurnQueue,
    pub push: SqsPushQueue,
}

/// The turn and push queues: created (with their DLQs) when `create`, else looked up by name.
async fn queues(prefix: &str, create: bool) -> Result<(SqsTurnQueue, SqsPushQueue), LocalError> {
    let client = sqs::client_from_env().await;
    if create {
        let turns = sqs::create_queues(&client, prefix)
            .await
            .map_err(|e| LocalError::Queues(e.to_string()))?;
        let push = sqs::create_push_queues(&client, prefix)
            .await
            .map_err(|e| LocalError::Queues(e.to_string()))?;
        tracing::info!(turns = %turns, push = %push.queue_url, "SQS queues ready");
        return Ok((SqsTurnQueue::new(client, turns), push));
    }
    let find = |name: String| {
        let client = client.clone();
        async move {
            sqs::queue_url(&client, &name).await.ok_or_else(|| {
                LocalError::Queues(format!(
                    "queue {name} does not exist (start with --create-tables, or deploy the template)"
                ))
            })
        }
    };
    let turns = find(format!("{prefix}{}", sqs::TURNS_QUEUE)).await?;
    let push = find(format!("{prefix}{}", sqs::PUSH_QUEUE)).await?;
    let push_dlq = find(format!("{prefix}{}", sqs::PUSH_DLQ)).await?;
    Ok((
        SqsTurnQueue::new(client.clone(), turns),
        SqsPushQueue::new(client, push, push_dlq),
    ))
}

/// Opens the configured store (creating DynamoDB tables first when asked).
pub async fn open_store(storage: &Storage) -> Result<Stores, LocalError> {
    let sqlite = |s: SqliteStore| {
        let s = Arc::new(s);
        Stores {
            events: s.clone(),
            reads: s.clone(),
            embedded: Some(s),
            serverless: None,
        }
    };
    Ok(match storage {
        Storage::Dir(dir) => sqlite(SqliteStore::open(dir)?),
        Storage::Memory => sqlite(SqliteStore::in_memory()),
        Storage::Dynamo {
            prefix,
            create_tables,
            counter,
            pollers,
        } => {
            let client = match counter {
                Some(c) => dynamo::counting_client_from_env(c.clone()).await,
                None => dynamo::client_from_env().await,
            };
            if *create_tables {
                for t in dynamo::schema::create_tables(&client, prefix).await? {
                    tracing::info!(table = %t, "created DynamoDB table");
                }
            }
            let s = Arc::new(DynamoStore::new(client.clone(), prefix));
            s.check().await?;
            let serverless = if *pollers {
                let (turns, push) = queues(prefix, *create_tables).await?;
                Some(Serverless {
                    store: (*s).clone(),
                    ddb: client,
                    table: dynamo::schema::table_name(prefix, &dynamo::schema::TASKS),
                    turns,
                    push,
                })
            } else {
                None
            };
            Stores {
                events: s.clone(),
                reads: s,
                embedded: None,
                serverless,
            }
        }
    })
}

/// Builds the router with its store, service and agent.
pub async fn build(config: &Config) -> Result<axum::Router, LocalError> {
    Ok(build_bindings(config, None, None).await?.0)
}

/// The HTTP router and the gRPC binding on one service; `grpc_port` is where gRPC listens
/// (for the card), when it is served.
async fn build_bindings(
    config: &Config,
    grpc_port: Option<u16>,
    http_addr: Option<std::net::SocketAddr>,
) -> Result<(axum::Router, A2aGrpc), LocalError> {
    let stores = open_store(&config.storage).await?;
    let dispatch = if stores.embedded.is_some() || stores.serverless.is_some() {
        Dispatch::Feed
    } else {
        Dispatch::InProcess
    };
    let secrets = secrets(config)?;
    let signer = match &config.push.signing_key_pem {
        Some(pem) => Some(Arc::new(PushSigner::from_pem(pem)?)),
        None => None,
    };
    let service = Service::new(
        stores.events,
        stores.reads,
        config
            .agent
            .build(config.timings.clone())
            .await
            .map_err(LocalError::Agent)?,
        CursorCodec::new(cursor_key(config)?),
        ServiceSettings {
            blocking_timeout: config.blocking_timeout,
            dispatch,
            push_enabled: stores.embedded.is_some() || stores.serverless.is_some(),
            push_policy: config.push.policy.clone(),
            stream_poll: config.stream_poll,
            rate_limit: config.rate_limit,
            task_limit: config.task_limit,
            max_streams: config.max_streams,
            secrets: secrets.clone(),
            ..Default::default()
        },
    );
    if let Some(db) = stores.embedded {
        // The embedded path: the feed drives the relay, turns run here, deliveries wait in
        // the outbox for the push worker.
        let sender = WebhookSender::new(config.push.policy.clone(), signer.clone())?
            .with_secrets(secrets.clone());
        tokio::spawn(run_outbox_worker(
            service.pushes_queued(),
            db.clone(),
            Arc::new(sender),
            config.push.retry,
        ));
        let relay = Relay::new(InProcessTurns::new(service.clone()))
            .with_push(db.clone(), db.clone(), Some(service.pushes_queued()))
            .announcing_to(service.clone());
        tokio::spawn(run_feed(service.clone(), db, relay, "agent"));
    }
    if let Some(sl) = stores.serverless {
        let poller =
            taskledger_infra::streams::StreamPoller::for_table(&sl.ddb, &sl.table, pollers::IDLE)
                .await
                .map_err(LocalError::Queues)?;
        let relay =
            compose::stream_relay(Arc::new(sl.store), sl.turns.clone(), Some(sl.push.clone()))
                .announcing_to(service.clone());
        tokio::spawn(poller.run(relay));
        tokio::spawn(pollers::run_turn_poller(
            service.clone(),
            Arc::new(sl.turns),
        ));
        tokio::spawn(pollers::run_push_poller(
            sl.push,
            WebhookSender::new(config.push.policy.clone(), signer.clone())?
                .with_secrets(secrets.clone()),
            config.push.retry,
        ));
    }
    let auth: Arc<dyn Authenticator> = match &config.jwt {
        Some(settings) => Arc::new(
            JwtAuthenticator::new(settings.clone(), config.tokens.clone())
                .await
                .map_err(LocalError::Jwt)?,
        ),
        None => Arc::new(TokenAuthenticator::new(config.tokens.clone())),
    };
    let grpc_address = config.grpc.as_ref().and_then(|g| match &g.public_addr {
        Some(addr) => Some(GrpcAddress::Fixed(addr.clone())),
        None => grpc_port.map(GrpcAddress::Port),
    });
    let http = HttpSettings {
        public_url: config.public_url.clone(),
        name: "taskledger".into(),
        description: "An event-sourced A2A task backend (local server).".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        jwks: signer.as_ref().map(|s| s.jwks()),
        card_signer: signer.clone(),
        board: true,
        grpc: grpc_address,
        error_table: config.error_table,
        path_prefix: None,
        stream_keep_alive: config.stream_keep_alive,
        body_read_timeout: config.body_read_timeout,
    };
    // gRPC has no Host header: its card's URLs are the public URL's, or the HTTP listener's.
    let card_base = match (&config.public_url, http_addr) {
        (Some(u), _) => u.trim_end_matches('/').to_string(),
        (None, Some(addr)) => format!("http://{addr}"),
        (None, None) => "http://127.0.0.1".into(),
    };
    let grpc_card =
        taskledger_app::http::card_at(&http, auth.card_auth(), service.push_enabled(), card_base);
    let grpc = A2aGrpc::new(service.clone(), auth.clone())
        .with_error_table(config.error_table)
        .with_card(grpc_card);
    let state = AppState::new(service, auth, http);
    Ok((router(state), grpc))
}

/// The listeners of a server: HTTP, and gRPC when configured.
pub struct Listeners {
    pub http: TcpListener,
    pub grpc: Option<TcpListener>,
}

impl Listeners {
    /// HTTP on `http`, gRPC where the configuration says (if it does).
    pub async fn bind(config: &Config, http: SocketAddr) -> Result<Self, LocalError> {
        let grpc = match &config.grpc {
            Some(g) => Some(TcpListener::bind(g.listen).await?),
            None => None,
        };
        Ok(Self {
            http: TcpListener::bind(http).await?,
            grpc,
        })
    }
}

/// Where a started server answers.
#[derive(Debug, Clone, Copy)]
pub struct Running {
    pub http: SocketAddr,
    /// The gRPC binding's address, when `Config::grpc` is set.
    pub grpc: Option<SocketAddr>,
}

/// Both servers, ready to run: the configuration (TLS included) has been checked.
struct Servers {
    http: (TcpListener, axum::Router),
    grpc: Option<(TcpListener, GrpcServer)>,
}

async fn prepare(config: &Config, listeners: Listeners) -> Result<Servers, LocalError> {
    let grpc_port = match &listeners.grpc {
        Some(l) => Some(l.local_addr()?.port()),
        None => None,
    };
    let (app, binding) =
        build_bindings(config, grpc_port, listeners.http.local_addr().ok()).await?;
    let grpc = match (listeners.grpc, &config.grpc) {
        (Some(listener), Some(settings)) => {
            Some((listener, GrpcServer::new(binding, settings.tls.as_ref())?))
        }
        _ => None,
    };
    Ok(Servers {
        http: (listeners.http, app),
        grpc,
    })
}

/// Serves until `shutdown` resolves (gRPC too, on its listener, when configured).
pub async fn serve(
    config: &Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), LocalError> {
    let grpc = match &config.grpc {
        Some(g) => Some(TcpListener::bind(g.listen).await?),
        None => None,
    };
    serve_listeners(
        config,
        Listeners {
            http: listener,
            grpc,
        },
        shutdown,
    )
    .await
}

/// Serves on bound listeners until `shutdown` resolves.
pub async fn serve_listeners(
    config: &Config,
    listeners: Listeners,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), LocalError> {
    let servers = prepare(config, listeners).await?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop.send(true);
    });
    let until = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let (listener, app) = servers.http;
    let header_read_timeout = config.header_read_timeout;
    let http = async {
        serve_http(listener, app, header_read_timeout, until(stopped.clone()))
            .await
            .map_err(LocalError::from)
    };
    let grpc = async {
        match servers.grpc {
            Some((listener, server)) => Ok(server.serve(listener, until(stopped.clone())).await?),
            None => Ok(()),
        }
    };
    tokio::try_join!(http, grpc)?;
    Ok(())
}

/// Starts a server on 127.0.0.1 on a free port in the background; returns its address.
pub async fn spawn(config: Config) -> Result<SocketAddr, LocalError> {
    Ok(start(config).await?.http)
}

/// Like `spawn`, and serves gRPC where `Config::grpc` says (port 0: a free port); returns both
/// addresses.
pub async fn start(config: Config) -> Result<Running, LocalError> {
    let listeners = Listeners::bind(&config, SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let http = listeners.http.local_addr()?;
    let grpc = match &listeners.grpc {
        Some(l) => Some(l.local_addr()?),
        None => None,
    };
    let servers = prepare(&config, listeners).await?;
    let (listener, app) = servers.http;
    let header_read_timeout = config.header_read_timeout;
    tokio::spawn(async move {
        let _ = serve_http(listener, app, header_read_timeout, std::future::pending()).await;
    });
    if let Some((listener, server)) = servers.grpc {
        tokio::spawn(async move {
            if let Err(e) = server.serve(listener, std::future::pending()).await {
                tracing::error!(error = %e, "gRPC server stopped");
            }
        });
    }
    Ok(Running { http, grpc })
}
