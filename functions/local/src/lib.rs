//! The all-in-one local server: the A2A API and the agent in one process, on the embedded
//! SQLite store under a data directory, or on DynamoDB (an emulator such as LocalStack or moto
//! via `AWS_ENDPOINT_URL`, or AWS itself). Tests start it in-process on a free port.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use taskledger_app::agent::ScenarioTimings;
use taskledger_app::compose;
pub use taskledger_app::compose::AgentChoice;
use taskledger_app::identity::TokenAuthenticator;
use taskledger_app::runners::push::run_outbox_worker;
use taskledger_app::runners::{run_feed, InProcessTurns, Relay};
use taskledger_app::{router, AppState, Dispatch, HttpSettings, Service, ServiceSettings};
use taskledger_domain::cursor::CursorCodec;
use taskledger_domain::ids::Principal;
use taskledger_domain::ports::{EventStore, TaskReadModel};
use taskledger_domain::push::{AddressPolicy, RetryPolicy};
use taskledger_infra::dynamo::{self, DynamoStore};
use taskledger_infra::sqs::{self, SqsPushQueue, SqsTurnQueue};
use taskledger_infra::webhook::{PushSigner, WebhookSender};

pub mod pollers;
use taskledger_infra::SqliteStore;
use tokio::net::TcpListener;

/// File under the data directory holding the key that signs ListTasks page tokens.
pub const CURSOR_KEY_FILE: &str = "cursor.key";

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
    pub blocking_timeout: Duration,
    pub timings: ScenarioTimings,
    /// Key signing ListTasks page tokens; default: `TASKLEDGER_CURSOR_KEY`, else a key kept in
    /// the data directory, else a fresh one per process.
    pub cursor_key: Option<Vec<u8>>,
    /// The agent: the built-in one (the scripted model behind the conformance rules), or a
    /// model behind an OpenAI-compatible endpoint or Bedrock.
    pub agent: AgentChoice,
    pub push: PushSettings,
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
            blocking_timeout: Duration::from_secs(
                taskledger_app::compose::LOCAL_BLOCKING_TIMEOUT_SECS,
            ),
            timings: ScenarioTimings::default(),
            cursor_key: None,
            agent: AgentChoice::Scenario,
            push: PushSettings::default(),
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
    #[error(transparent)]
    Push(#[from] taskledger_infra::webhook::WebhookError),
    #[error("SQS or the table's stream: {0}")]
    Queues(String),
    #[error("server failed: {0}")]
    Serve(#[from] std::io::Error),
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

fn cursor_key(config: &Config) -> Result<Vec<u8>, LocalError> {
    if let Some(k) = &config.cursor_key {
        return Ok(k.clone());
    }
    let storage = &config.storage;
    let fresh = || {
        format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        )
        .into_bytes()
    };
    if let Ok(k) = std::env::var("TASKLEDGER_CURSOR_KEY") {
        return Ok(k.into_bytes());
    }
    let Storage::Dir(dir) = storage else {
        return Ok(fresh());
    };
    let path = dir.join(CURSOR_KEY_FILE);
    let err = |source| LocalError::CursorKey {
        path: path.display().to_string(),
        source,
    };
    match std::fs::read(&path) {
        Ok(k) if !k.is_empty() => Ok(k),
        Ok(_) | Err(_) => {
            let k = fresh();
            std::fs::write(&path, &k).map_err(err)?;
            Ok(k)
        }
    }
}

/// Builds the router with its store, service and agent.
pub async fn build(config: &Config) -> Result<axum::Router, LocalError> {
    let stores = open_store(&config.storage).await?;
    let dispatch = if stores.embedded.is_some() || stores.serverless.is_some() {
        Dispatch::Feed
    } else {
        Dispatch::InProcess
    };
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
        },
    );
    if let Some(db) = stores.embedded {
        // The embedded path: the feed drives the relay, turns run here, deliveries wait in
        // the outbox for the push worker.
        let sender = WebhookSender::new(config.push.policy.clone(), signer.clone())?;
        tokio::spawn(run_outbox_worker(
            service.pushes_queued(),
            db.clone(),
            Arc::new(sender),
            config.push.retry,
        ));
        let relay = Relay::new(InProcessTurns::new(service.clone())).with_push(
            db.clone(),
            db.clone(),
            Some(service.pushes_queued()),
        );
        tokio::spawn(run_feed(service.clone(), db, relay, "agent"));
    }
    if let Some(sl) = stores.serverless {
        let poller =
            taskledger_infra::streams::StreamPoller::for_table(&sl.ddb, &sl.table, pollers::IDLE)
                .await
                .map_err(LocalError::Queues)?;
        let relay =
            compose::stream_relay(Arc::new(sl.store), sl.turns.clone(), Some(sl.push.clone()));
        tokio::spawn(poller.run(relay));
        tokio::spawn(pollers::run_turn_poller(
            service.clone(),
            Arc::new(sl.turns),
        ));
        tokio::spawn(pollers::run_push_poller(
            sl.push,
            WebhookSender::new(config.push.policy.clone(), signer.clone())?,
            config.push.retry,
        ));
    }
    let state = AppState::new(
        service,
        Arc::new(TokenAuthenticator::new(config.tokens.clone())),
        HttpSettings {
            public_url: config.public_url.clone(),
            name: "taskledger".into(),
            description: "An event-sourced A2A task backend (local server).".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            jwks: signer.as_ref().map(|s| s.jwks()),
        },
    );
    Ok(router(state))
}

/// Serves until `shutdown` resolves.
pub async fn serve(
    config: &Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), LocalError> {
    let app = build(config).await?;
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}

/// Starts a server on 127.0.0.1 on a free port in the background; returns its address.
pub async fn spawn(config: Config) -> Result<SocketAddr, LocalError> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = build(&config).await?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(addr)
}
