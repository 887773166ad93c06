//! The all-in-one local server: the A2A API and the agent in one process, on the embedded
//! SQLite store under a data directory, or on DynamoDB (an emulator such as LocalStack or moto
//! via `AWS_ENDPOINT_URL`, or AWS itself). Tests start it in-process on a free port. The gRPC
//! binding is served on a port of its own when configured (`Config::grpc`).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use taskledger_app::compose;
pub use taskledger_app::compose::AgentChoice;
use taskledger_app::grpc::{A2aGrpc, GrpcServer};
use taskledger_app::identity::jwt::JwtAuthenticator;
use taskledger_app::identity::{Authenticator, TokenAuthenticator};
use taskledger_app::runners::push::run_outbox_worker;
use taskledger_app::runners::{run_feed, InProcessTurns, Relay};
use taskledger_app::{router_with, AppState, Dispatch, GrpcAddress, ServiceSettings};
use taskledger_domain::ports::{EventStore, Housekeeping, TaskReadModel};
use taskledger_domain::retention::Retention;
use taskledger_infra::dynamo::{self, DynamoStore};
use taskledger_infra::sqs::{self, SqsPushQueue, SqsTurnQueue};

pub mod archive;
mod config;
pub mod flags;
mod http_server;
mod keys;
pub mod operator;
pub mod pollers;
pub mod runtime;
pub mod sessions;

pub use config::{Config, GrpcSettings, LocalError, PushSettings, Storage};
pub use flags::{LocalFlags, StoreKind};
use http_server::serve_http;
pub use http_server::{HEADER_READ_TIMEOUT, MAX_HEADER_BYTES};
pub use keys::archive_keys;
use keys::{cursor_key, secrets};
pub use keys::{CURSOR_KEY_FILE, SECRETS_KEY_FILE};
use taskledger_infra::SqliteStore;
use tokio::net::TcpListener;

/// The opened store: its ports, and what runs after commits on it.
pub struct Stores {
    pub events: Arc<dyn EventStore>,
    pub reads: Arc<dyn TaskReadModel>,
    /// The deadline reaper's candidates.
    pub housekeeping: Arc<dyn Housekeeping>,
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
    /// The turn queue's dead-letter queue: each turn there is given up (its task fails).
    pub turns_dlq: SqsTurnQueue,
    pub push: SqsPushQueue,
}

/// The queues of the serverless path.
struct Queues {
    turns: SqsTurnQueue,
    turns_dlq: SqsTurnQueue,
    push: SqsPushQueue,
}

/// The turn and push queues: created (with their DLQs) when `create`, else looked up by name.
async fn queues(prefix: &str, create: bool) -> Result<Queues, LocalError> {
    let client = sqs::client_from_env().await;
    if create {
        let (turns, turns_dlq) = sqs::create_queues(&client, prefix)
            .await
            .map_err(|e| LocalError::Queues(e.to_string()))?;
        let push = sqs::create_push_queues(&client, prefix)
            .await
            .map_err(|e| LocalError::Queues(e.to_string()))?;
        tracing::info!(turns = %turns, push = %push.queue_url, "SQS queues ready");
        return Ok(Queues {
            turns: SqsTurnQueue::new(client.clone(), turns),
            turns_dlq: SqsTurnQueue::new(client, turns_dlq),
            push,
        });
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
    let turns_dlq = find(format!("{prefix}{}", sqs::TURNS_DLQ)).await?;
    let push = find(format!("{prefix}{}", sqs::PUSH_QUEUE)).await?;
    let push_dlq = find(format!("{prefix}{}", sqs::PUSH_DLQ)).await?;
    Ok(Queues {
        turns: SqsTurnQueue::new(client.clone(), turns),
        turns_dlq: SqsTurnQueue::new(client.clone(), turns_dlq),
        push: SqsPushQueue::new(client, push, push_dlq),
    })
}

/// Opens the configured store (creating DynamoDB tables first when asked).
pub async fn open_store(storage: &Storage, retention: &Retention) -> Result<Stores, LocalError> {
    let sqlite = |s: SqliteStore| {
        let s = Arc::new(s);
        Stores {
            events: s.clone(),
            reads: s.clone(),
            housekeeping: s.clone(),
            embedded: Some(s),
            serverless: None,
        }
    };
    Ok(match storage {
        Storage::Dir(dir) => sqlite(SqliteStore::open(dir)?),
        Storage::Memory => sqlite(SqliteStore::in_memory()),
        Storage::Dynamo {
            prefix,
            index_shards,
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
            let s = Arc::new(
                DynamoStore::new(client.clone(), prefix)
                    .with_retention(retention.clone())
                    .with_index_shards(*index_shards),
            );
            s.check().await?;
            let serverless = if *pollers {
                let q = queues(prefix, *create_tables).await?;
                Some(Serverless {
                    store: (*s).clone(),
                    ddb: client,
                    table: dynamo::schema::table_name(prefix, &dynamo::schema::TASKS),
                    turns: q.turns,
                    turns_dlq: q.turns_dlq,
                    push: q.push,
                })
            } else {
                None
            };
            Stores {
                events: s.clone(),
                reads: s.clone(),
                housekeeping: s,
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
    let stores = open_store(&config.storage, &config.retention).await?;
    let dispatch = if stores.embedded.is_some() || stores.serverless.is_some() {
        Dispatch::Feed
    } else {
        Dispatch::InProcess
    };
    // What pushes, signs and seals: assembled as every deployment does (`compose::PushParts`).
    let push = compose::PushParts::new(
        config.served.push_notifications
            && (stores.embedded.is_some() || stores.serverless.is_some()),
        config.push.policy.clone(),
        config.push.signing_key_pem.as_deref(),
        secrets(config)?,
        config.push.retry,
    )?;
    let outbox = stores.embedded.clone().map(|db| {
        taskledger_app::http::TaskOutbox(db as Arc<dyn taskledger_domain::ports::PushOutbox>)
    });
    let mcp =
        compose::mcp_tools(&config.mcp, config.mcp_trust.clone()).map_err(LocalError::Agent)?;
    // A long-lived server lists the tools at start (a server that cannot is logged now, not at
    // the first turn); each turn reads the list again only when a server said it changed.
    if let Some(tools) = mcp.clone() {
        tokio::spawn(async move { tools.specs().await });
    }
    let agent = config
        .agent
        .build_with(config.timings.clone(), mcp)
        .await
        .map_err(LocalError::Agent)?;
    let ports = compose::StorePorts {
        events: stores.events,
        reads: stores.reads,
        housekeeping: stores.housekeeping,
    };
    let compose::Assembly {
        service,
        push,
        store,
    } = compose::Assembly::build(
        ports,
        agent,
        cursor_key(config)?,
        push,
        ServiceSettings {
            blocking_timeout: config.blocking_timeout,
            dispatch,
            stream_poll: config.stream_poll,
            streaming_enabled: config.served.streaming,
            retention: config.retention.clone(),
            rate_limit: config.rate_limit,
            task_limit: config.task_limit,
            max_streams: config.max_streams,
            ..Default::default()
        },
    );
    if let Some(db) = stores.embedded {
        // The embedded path: the feed drives the relay, turns run here, deliveries wait in
        // the outbox for the push worker.
        tokio::spawn(run_outbox_worker(
            service.pushes_queued(),
            db.clone(),
            Arc::new(push.sender()?),
            push.retry,
        ));
        let mut relay = Relay::new(InProcessTurns::new(service.clone()))
            .with_push(db.clone(), db.clone(), Some(service.pushes_queued()))
            .announcing_to(service.clone());
        if let Some(sink) = lifecycle_sink(config, &push).await? {
            db.feed_lifecycle();
            relay = relay.publishing_to(db.clone(), sink, config.lifecycle.level);
        }
        tokio::spawn(run_feed(service.clone(), db, relay, "agent"));
    }
    if let (Some(_), None) = (&config.archive_bucket, &stores.serverless) {
        return Err(LocalError::Archive(
            "the archive is written from the DynamoDB table's stream: it needs --store dynamodb with its pollers".into(),
        ));
    }
    if let Some(sl) = stores.serverless {
        let poller =
            taskledger_infra::streams::StreamPoller::for_table(&sl.ddb, &sl.table, pollers::IDLE)
                .await
                .map_err(LocalError::Queues)?;
        let store = Arc::new(sl.store);
        let mut relay =
            compose::stream_relay(store.clone(), sl.turns.clone(), Some(sl.push.clone()))
                .announcing_to(service.clone());
        if let Some(sink) = lifecycle_sink(config, &push).await? {
            relay = relay.publishing_to(store.clone(), sink, config.lifecycle.level);
        }
        if let Some(bucket) = &config.archive_bucket {
            use taskledger_infra::s3::{self, S3Archive};
            let sink = S3Archive::new(s3::client_from_env().await, bucket.clone());
            sink.check()
                .await
                .map_err(|e| LocalError::Archive(e.to_string()))?;
            tracing::info!(bucket = bucket.as_str(), "archiving expiring tasks");
            relay = relay.archiving_to(taskledger_app::runners::Archiver::new(
                store,
                Arc::new(sink),
            ));
        }
        tokio::spawn(poller.run(relay));
        tokio::spawn(pollers::run_turn_poller(
            service.clone(),
            Arc::new(sl.turns),
            config.turn_lease_secs,
        ));
        tokio::spawn(pollers::run_turn_dlq_poller(service.clone(), sl.turns_dlq));
        tokio::spawn(pollers::run_push_poller(
            sl.push,
            push.sender()?,
            push.retry,
        ));
    }
    if config.stall_deadline_secs.is_some() || !config.retention.is_forever() {
        tokio::spawn(taskledger_app::runners::run_reaper(
            service.clone(),
            store.housekeeping.clone(),
            config.stall_deadline_secs,
        ));
    }
    let auth: Arc<dyn Authenticator> = match &config.jwt {
        Some(settings) => Arc::new(
            JwtAuthenticator::new(
                settings.clone(),
                config.tokens.clone(),
                Arc::new(taskledger_infra::jwks::HttpKeySets),
            )
            .await
            .map_err(LocalError::Jwt)?,
        ),
        None => Arc::new(TokenAuthenticator::new(config.tokens.clone())),
    };
    let grpc_address = config.grpc.as_ref().and_then(|g| match &g.public_addr {
        Some(addr) => Some(GrpcAddress::Fixed(addr.clone())),
        None => grpc_port.map(GrpcAddress::Port),
    });
    let mut http = push.http_settings(
        config.public_url.clone(),
        "An event-sourced A2A task backend (local server).",
        config.allowed_hosts.clone(),
        config.error_table,
        config.stream_keep_alive,
    );
    http.board = Some(taskledger_app::http::BoardSettings {
        outbox,
        ..board_settings(config)?
    });
    http.proxies = config.proxies.clone();
    http.grpc = grpc_address;
    http.body_read_timeout = config.body_read_timeout;
    http.metrics = Some(taskledger_app::http::MetricsSettings {
        tasks: Some(store.housekeeping.clone()),
        token: config.metrics_token.clone(),
    });
    // gRPC has no Host header: its card's URLs are the public URL's, or the HTTP listener's.
    let card_base = match (&config.public_url, http_addr) {
        (Some(u), _) => u.trim_end_matches('/').to_string(),
        (None, Some(addr)) => format!("http://{addr}"),
        (None, None) => "http://127.0.0.1".into(),
    };
    let configured = taskledger_app::http::guard::is_configured_url(&http, &card_base);
    let grpc_card = taskledger_app::http::card_at(
        &http,
        auth.card_auth(),
        service.served(),
        card_base,
        configured,
    );
    let grpc = A2aGrpc::new(service.clone(), auth.clone())
        .with_error_table(config.error_table)
        .with_card(grpc_card);
    let state = AppState::new(service, auth, http);
    // The board's pages, beside the endpoints, when it is served.
    let pages = match state.settings.board {
        Some(_) => taskledger_app::board::routes(&state),
        None => axum::Router::new(),
    };
    // Every task an MCP task too (ADR 039).
    let pages = pages.merge(taskledger_app::mcp_tasks::routes(state.clone()));
    Ok((router_with(state, pages), grpc))
}

/// The board's settings: its image origins, and its sessions' key and revocations, kept in the
/// data directory when there is one.
fn board_settings(config: &Config) -> Result<taskledger_app::http::BoardSettings, LocalError> {
    let dir = match &config.storage {
        Storage::Dir(d) => Some(d.as_path()),
        _ => None,
    };
    Ok(taskledger_app::http::BoardSettings {
        image_origins: config.board_image_origins.clone(),
        session_key: sessions::session_key(dir).map_err(|source| LocalError::SessionKey {
            path: dir
                .map(|d| d.join(sessions::SESSION_KEY_FILE).display().to_string())
                .unwrap_or_default(),
            source,
        })?,
        session_ttl: config.board_session_ttl,
        sessions: sessions::Sessions::open(dir),
        outbox: None,
    })
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

/// Where the relay publishes each task's lifecycle (`--event-bus`, `--events-webhook`): none
/// when neither is set. The webhook's events are signed with the push signing key.
async fn lifecycle_sink(
    config: &Config,
    push: &taskledger_app::compose::PushParts,
) -> Result<Option<Arc<dyn taskledger_domain::ports::LifecycleSink>>, LocalError> {
    use taskledger_infra::lifecycle::{EventBridgeLifecycle, Sinks, WebhookLifecycle};
    let mut sinks: Vec<Arc<dyn taskledger_domain::ports::LifecycleSink>> = Vec::new();
    if let Some(bus) = &config.lifecycle.bus {
        let client = EventBridgeLifecycle::client_from_env().await;
        sinks.push(Arc::new(EventBridgeLifecycle::new(client, bus.clone())));
        tracing::info!(
            bus = bus.as_str(),
            "publishing task lifecycle events to EventBridge"
        );
    }
    if let Some(url) = &config.lifecycle.webhook {
        let signer = push.sender()?.signer().cloned();
        let sink = WebhookLifecycle::new(url, signer).map_err(LocalError::Lifecycle)?;
        sinks.push(Arc::new(sink));
        tracing::info!("posting task lifecycle events to the events webhook");
    }
    Ok(match sinks.len() {
        0 => None,
        1 => sinks.pop(),
        _ => Some(Arc::new(Sinks(sinks))),
    })
}
