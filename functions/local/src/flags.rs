//! The local server's own flags (beside the `Settings` every deployment reads: where it
//! listens and keeps its data, its callers' credentials, per-principal limits, gRPC, the
//! board, its pollers), and the one place a `Config` is made of them (`Config::from_flags`).
//!
//! Local only, on purpose: on AWS, API Gateway's JWT authorizer verifies callers and its
//! throttling bounds their rates (an in-process limit would count per Lambda instance),
//! neither API Gateway nor a Function URL carries gRPC, and the board is served by the local
//! server only.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use taskledger_app::compose::{self, McpServerSpec};
use taskledger_app::grpc::TlsPem;
use taskledger_app::identity::jwt::{self, JwksSource, JwtSettings};
use taskledger_app::identity::TokenAuthenticator;
use taskledger_app::settings::{Deployment, Settings, SettingsError};

use crate::config::{Config, GrpcSettings, PushSettings, Storage};

/// Where tasks are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StoreKind {
    Auto,
    Sqlite,
    Dynamodb,
}

/// The local server's own flags.
#[derive(Debug, Clone, clap::Args)]
pub struct LocalFlags {
    /// Where tasks are stored; `auto` is DynamoDB when AWS_ENDPOINT_URL(_DYNAMODB) is set
    /// (and --in-memory is not).
    #[arg(long, env = "TASKLEDGER_STORE", value_enum, default_value_t = StoreKind::Auto)]
    pub store: StoreKind,
    /// Create the DynamoDB tables and the SQS queues (turns, push, their DLQs) at start if they
    /// do not exist.
    #[arg(long, env = "TASKLEDGER_CREATE_TABLES", default_value_t = false, value_parser = clap::builder::BoolishValueParser::new())]
    pub create_tables: bool,
    /// On DynamoDB: run agent work in-process right after each commit instead of through the
    /// table's stream and the SQS queues (no push notifications then).
    #[arg(long, env = "TASKLEDGER_IN_PROCESS_AGENT", default_value_t = false, value_parser = clap::builder::BoolishValueParser::new())]
    pub in_process_agent: bool,
    /// The operator's bearer token for /metrics (process-wide counts, every tenant's): on a
    /// server with --tokens or JWTs, /metrics answers only to it.
    #[arg(long, env = "TASKLEDGER_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<String>,
    /// Address to listen on.
    #[arg(long, env = "TASKLEDGER_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Directory holding the SQLite store and the keys.
    #[arg(long, env = "TASKLEDGER_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// Keep everything in memory (nothing survives a restart).
    #[arg(long, env = "TASKLEDGER_IN_MEMORY", default_value_t = false, value_parser = clap::builder::BoolishValueParser::new())]
    pub in_memory: bool,
    /// Bearer tokens as `token=tenant/subject,…`; none means everyone is default/anonymous.
    #[arg(
        long,
        env = "TASKLEDGER_TOKENS",
        default_value = "",
        hide_env_values = true
    )]
    pub tokens: String,
    /// Requests a second each principal may make (bursts of twice that); 0: no limit.
    #[arg(long, env = "TASKLEDGER_RATE_LIMIT", default_value_t = 0)]
    pub rate_limit: u32,
    /// Tasks a minute each principal may create; 0: no limit.
    #[arg(long, env = "TASKLEDGER_TASKS_PER_MINUTE", default_value_t = 0)]
    pub tasks_per_minute: u32,
    /// Streams each principal may hold open at once; 0: no limit.
    #[arg(long, env = "TASKLEDGER_MAX_STREAMS", default_value_t = 0)]
    pub max_streams: usize,
    /// Seconds a request body may take to arrive before the request is answered 408.
    #[arg(long, env = "TASKLEDGER_BODY_READ_TIMEOUT_SECS", default_value_t = taskledger_app::http::BODY_READ_TIMEOUT.as_secs())]
    pub body_read_timeout_secs: u64,
    /// Seconds a request's headers may take to arrive before the connection is closed.
    #[arg(long, env = "TASKLEDGER_HEADER_READ_TIMEOUT_SECS", default_value_t = crate::HEADER_READ_TIMEOUT.as_secs())]
    pub header_read_timeout_secs: u64,
    /// Verify JWT bearer tokens from this issuer (`iss`); needs --jwt-audience and --jwt-jwks.
    #[arg(long, env = "TASKLEDGER_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// Accepted audiences (`aud`), comma-separated.
    #[arg(long, env = "TASKLEDGER_JWT_AUDIENCE", default_value = "")]
    pub jwt_audience: String,
    /// The issuer's keys: a JWKS URL (fetched again for an unknown `kid`) or file.
    #[arg(long, env = "TASKLEDGER_JWT_JWKS")]
    pub jwt_jwks: Option<String>,
    /// Accepted signature algorithms (asymmetric only), comma-separated.
    #[arg(long, env = "TASKLEDGER_JWT_ALGORITHMS", default_value = "RS256,ES256")]
    pub jwt_algorithms: String,
    /// The longest lifetime a JWT may have (`exp` after `iat`, and after now), in seconds;
    /// 0: any lifetime.
    #[arg(long, env = "TASKLEDGER_JWT_MAX_LIFETIME_SECS", default_value_t = 0)]
    pub jwt_max_lifetime_secs: u64,
    /// MCP servers run as child processes spoken to over stdio, `NAME=CMD` (the program and its
    /// arguments, split on blanks, no shell), repeatable.
    #[arg(long = "mcp-command")]
    pub mcp_commands: Vec<String>,
    /// Serve the gRPC binding (lf.a2a.v1.A2AService) on this address too; off by default.
    /// Plaintext HTTP/2 (h2c) unless a TLS certificate and key are given.
    #[arg(long, env = "TASKLEDGER_GRPC_LISTEN")]
    pub grpc_listen: Option<SocketAddr>,
    /// PEM certificate chain for gRPC over TLS (with --grpc-tls-key).
    #[arg(long, env = "TASKLEDGER_GRPC_TLS_CERT", requires = "grpc_tls_key")]
    pub grpc_tls_cert: Option<PathBuf>,
    /// PEM private key for gRPC over TLS (with --grpc-tls-cert).
    #[arg(long, env = "TASKLEDGER_GRPC_TLS_KEY", requires = "grpc_tls_cert")]
    pub grpc_tls_key: Option<PathBuf>,
    /// `host:port` the agent card gives for gRPC (default: the card's host with the gRPC port).
    #[arg(long, env = "TASKLEDGER_GRPC_PUBLIC_ADDR")]
    pub grpc_public_addr: Option<String>,
    /// Async worker threads serving connections (default: one per core but one, at least one;
    /// the store works on threads of its own).
    #[arg(long, env = "TASKLEDGER_WORKERS", value_parser = crate::runtime::parse_workers)]
    pub workers: Option<usize>,
    /// Proxies (addresses or CIDRs, comma-separated) whose X-Forwarded-Proto and
    /// X-Forwarded-Host are believed; from anyone else they are ignored.
    #[arg(long, env = "TASKLEDGER_TRUSTED_PROXIES", default_value = "")]
    pub trusted_proxies: String,
    /// Origins (`https://cdn.example.com`, comma-separated) images on board pages may come from
    /// besides the board's own and `data:`; any other image is offered as a link.
    #[arg(long, env = "TASKLEDGER_BOARD_IMAGE_ORIGINS", default_value = "")]
    pub board_image_origins: String,
    /// A URL each task's lifecycle event is POSTed to (the EventBridge envelope, signed as
    /// push deliveries are), from the relay (ADR 038); empty: none.
    #[arg(long, env = "TASKLEDGER_EVENTS_WEBHOOK", default_value = "")]
    pub events_webhook: String,
    /// Seconds a board session lasts at most (a JWT's own expiry ends it sooner).
    #[arg(long, env = "TASKLEDGER_BOARD_SESSION_TTL_SECS", default_value_t = taskledger_app::board::DEFAULT_SESSION_TTL.as_secs())]
    pub board_session_ttl_secs: u64,
    /// Seconds a turn taken from the SQS turn queue (`--store dynamodb`) stays hidden from
    /// other receivers, renewed every third of it while it runs: a crashed server's turns run
    /// again within this bound (the Lambda worker's is the queue's visibility timeout).
    #[arg(long, env = "TASKLEDGER_TURN_LEASE_SECS", default_value_t = crate::pollers::DEFAULT_TURN_LEASE_SECS)]
    pub turn_lease_secs: u32,
    /// Log format: `pretty` (human) or `json`.
    #[arg(long, env = "TASKLEDGER_LOG_FORMAT", default_value = "pretty")]
    pub log_format: String,
}

fn invalid<E: std::fmt::Display>(name: &'static str) -> impl FnOnce(E) -> SettingsError {
    move |why| SettingsError::invalid(name, why)
}

impl LocalFlags {
    /// Every flag at its default (tests' configurations start here).
    pub fn defaults() -> Self {
        taskledger_app::settings::defaults_of()
    }

    /// Whether the store is DynamoDB.
    pub fn uses_dynamo(&self) -> bool {
        match self.store {
            StoreKind::Dynamodb => true,
            StoreKind::Sqlite => false,
            // `--in-memory` asks for the embedded store, whatever endpoint the environment names.
            StoreKind::Auto => {
                !self.in_memory && taskledger_app::settings::aws_endpoint_configured()
            }
        }
    }

    /// The store the flags name.
    pub fn storage(&self, settings: &Settings) -> Storage {
        if self.uses_dynamo() {
            Storage::Dynamo {
                prefix: settings.table_prefix.clone(),
                index_shards: settings.index_shards,
                create_tables: self.create_tables,
                counter: None,
                pollers: !self.in_process_agent,
            }
        } else if self.in_memory {
            Storage::Memory
        } else {
            Storage::Dir(self.data_dir.clone())
        }
    }

    /// `--grpc-listen` and its TLS files, read now so a missing file stops the start.
    fn grpc(&self) -> Result<Option<GrpcSettings>, SettingsError> {
        let Some(listen) = self.grpc_listen else {
            if self.grpc_tls_cert.is_some() {
                return Err(SettingsError::invalid(
                    "--grpc-tls-cert/--grpc-tls-key",
                    "need --grpc-listen",
                ));
            }
            return Ok(None);
        };
        let read = |flag: &'static str, path: &PathBuf| {
            std::fs::read_to_string(path)
                .map_err(|e| SettingsError::invalid(flag, format!("{}: {e}", path.display())))
        };
        let tls = match (&self.grpc_tls_cert, &self.grpc_tls_key) {
            (Some(cert), Some(key)) => Some(TlsPem {
                cert: read("--grpc-tls-cert", cert)?,
                key: read("--grpc-tls-key", key)?,
            }),
            _ => None,
        };
        Ok(Some(GrpcSettings {
            listen,
            tls,
            public_addr: self.grpc_public_addr.clone().filter(|a| !a.is_empty()),
        }))
    }

    /// The JWT settings the flags name (none without `--jwt-issuer`).
    fn jwt(&self, settings: &Settings) -> Result<Option<JwtSettings>, SettingsError> {
        let Some(issuer) = self.jwt_issuer.clone().filter(|i| !i.is_empty()) else {
            return Ok(None);
        };
        let audiences: Vec<String> = compose::tool_list(&self.jwt_audience);
        if audiences.is_empty() {
            return Err(SettingsError::invalid(
                "--jwt-issuer",
                "needs --jwt-audience",
            ));
        }
        let jwks = self
            .jwt_jwks
            .as_deref()
            .filter(|j| !j.is_empty())
            .ok_or_else(|| {
                SettingsError::invalid("--jwt-issuer", "needs --jwt-jwks (a JWKS URL or file)")
            })?;
        Ok(Some(JwtSettings {
            issuer,
            audiences,
            algorithms: jwt::parse_algorithms(&self.jwt_algorithms)
                .map_err(invalid("--jwt-algorithms"))?,
            jwks: JwksSource::parse(jwks),
            tenant_claim: settings.tenant_claim.clone(),
            refetch_min: jwt::JWKS_REFETCH_MIN,
            max_lifetime: jwt::max_lifetime(self.jwt_max_lifetime_secs)
                .map_err(invalid("--jwt-max-lifetime-secs"))?,
        }))
    }

    /// `--board-session-ttl-secs`: 1 s to `MAX_SESSION_TTL`.
    fn session_ttl(&self) -> Result<Duration, SettingsError> {
        let max = taskledger_app::board::MAX_SESSION_TTL;
        let secs = self.board_session_ttl_secs;
        if secs == 0 || secs > max.as_secs() {
            return Err(SettingsError::invalid(
                "--board-session-ttl-secs",
                format!("{secs} is not between 1 and {} (30 days)", max.as_secs()),
            ));
        }
        Ok(Duration::from_secs(secs))
    }
}

impl Config {
    /// A server in memory with every setting and flag at its default (the defaults are
    /// written once, on the flags: `Settings`, `LocalFlags`).
    pub fn in_memory() -> Self {
        let mut config = Self::from_flags(&Settings::defaults(), &LocalFlags::defaults(), |_| None)
            .unwrap_or_else(|e| unreachable!("the defaults are valid: {e}"));
        config.storage = Storage::Memory;
        config
    }

    /// The local server's configuration from its settings and flags: every value parsed and
    /// checked here, once (a bad one stops the start, naming its flag). `custom` finds an
    /// agent built into the binary by name (`--custom-agent`).
    pub fn from_flags(
        settings: &Settings,
        local: &LocalFlags,
        custom: impl Fn(&str) -> Option<std::sync::Arc<dyn taskledger_app::agent::Agent>>,
    ) -> Result<Self, SettingsError> {
        let d = Deployment::Local;
        let uses_dynamo = local.uses_dynamo();
        let mcp = settings
            .mcp_servers(d)?
            .into_iter()
            .chain(
                McpServerSpec::parse_commands(&local.mcp_commands)
                    .map_err(invalid("--mcp-command"))?,
            )
            .collect();
        Ok(Config {
            storage: local.storage(settings),
            public_url: settings.public_url.clone().filter(|u| !u.is_empty()),
            tokens: TokenAuthenticator::parse_table(&local.tokens)
                .map_err(invalid("--tokens / TASKLEDGER_TOKENS"))?,
            jwt: local.jwt(settings)?,
            rate_limit: taskledger_app::limits::RateLimit::per_second(local.rate_limit),
            task_limit: taskledger_app::limits::RateLimit::tasks_per_minute(local.tasks_per_minute),
            max_streams: (local.max_streams > 0).then_some(local.max_streams),
            body_read_timeout: Duration::from_secs(local.body_read_timeout_secs.max(1)),
            header_read_timeout: Duration::from_secs(local.header_read_timeout_secs.max(1)),
            secrets_key_file: settings.secrets_key_file.clone(),
            blocking_timeout: settings.blocking_timeout(d),
            timings: Default::default(),
            cursor_key: settings
                .cursor_key
                .clone()
                .filter(|k| !k.is_empty())
                .map(String::into_bytes),
            agent: settings.agent(d, custom)?,
            mcp,
            mcp_trust: settings.mcp_trust(),
            push: PushSettings {
                policy: settings.address_policy(d)?,
                signing_key_pem: settings.signing_key_pem()?,
                retry: settings.retry(),
            },
            error_table: settings.error_table,
            grpc: local.grpc()?,
            stream_keep_alive: settings.stream_keep_alive(),
            stream_poll: settings.stream_poll(),
            served: taskledger_domain::card::Served {
                streaming: settings.streaming_enabled,
                push_notifications: settings.push_enabled,
            },
            allowed_hosts: taskledger_app::http::guard::parse_allowed_hosts(&settings.allowed_hosts)
                .map_err(invalid("--allowed-hosts"))?,
            metrics_token: local.metrics_token.clone().filter(|t| !t.is_empty()),
            proxies: taskledger_app::http::Proxies::parse(&local.trusted_proxies)
                .map_err(invalid("--trusted-proxies"))?,
            board_image_origins: taskledger_app::board::ImageOrigins::parse(&local.board_image_origins)
                .map_err(invalid("--board-image-origins"))?
                .origins()
                .to_vec(),
            board_session_ttl: local.session_ttl()?,
            stall_deadline_secs: settings.stall_deadline()?,
            turn_lease_secs: crate::pollers::turn_lease(local.turn_lease_secs)
                .map_err(invalid("--turn-lease-secs"))?,
            retention: settings.retention()?,
            lifecycle: lifecycle(settings, local)?,
            archive_bucket: match settings.archive_bucket.as_str() {
                "" => None,
                b if uses_dynamo && !local.in_process_agent => Some(
                    taskledger_infra::s3::BucketName::parse(b).map_err(invalid("--archive-bucket"))?,
                ),
                _ => return Err(SettingsError::invalid("--archive-bucket", "archives from the DynamoDB table's stream: it needs --store dynamodb without --in-process-agent (on the embedded store, `taskledger export` writes the same files)")),
            },
        })
    }
}

/// Where each task's lifecycle is published (`--event-bus`, `--events-webhook`) and how much
/// it tells (`--event-detail-level`), checked.
fn lifecycle(
    settings: &Settings,
    local: &LocalFlags,
) -> Result<crate::config::LifecycleSettings, SettingsError> {
    let level =
        taskledger_domain::projection::lifecycle::DetailLevel::parse(&settings.event_detail_level)
            .map_err(|e| SettingsError::invalid("--event-detail-level", e))?;
    let webhook = Some(local.events_webhook.trim().to_string()).filter(|w| !w.is_empty());
    if let Some(w) = &webhook {
        taskledger_infra::lifecycle::WebhookLifecycle::new(w, None)
            .map_err(|e| SettingsError::invalid("--events-webhook", e))?;
    }
    Ok(crate::config::LifecycleSettings {
        bus: Some(settings.event_bus.trim().to_string()).filter(|b| !b.is_empty()),
        webhook,
        level,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lifecycle_sink_is_checked_when_the_server_starts() {
        let (mut settings, mut local) = (Settings::defaults(), LocalFlags::defaults());
        assert!(
            !lifecycle(&settings, &local).unwrap().is_on(),
            "none by default"
        );
        local.events_webhook = "https://hooks.example.com/events".into();
        settings.event_bus = "taskledger-tasks".into();
        settings.event_detail_level = "full".into();
        let on = lifecycle(&settings, &local).unwrap();
        assert_eq!(on.bus.as_deref(), Some("taskledger-tasks"));
        assert_eq!(
            on.level,
            taskledger_domain::projection::lifecycle::DetailLevel::Full
        );
        local.events_webhook = "file:///etc/passwd".into();
        let e = lifecycle(&settings, &local).unwrap_err().to_string();
        assert!(e.contains("--events-webhook"), "{e}");
        local.events_webhook.clear();
        settings.event_detail_level = "everything".into();
        let e = lifecycle(&settings, &local).unwrap_err().to_string();
        assert!(e.contains("--event-detail-level"), "{e}");
    }

    #[test]
    fn streams_and_pushes_are_served_unless_a_flag_turns_them_off() {
        let (mut settings, local) = (Settings::defaults(), LocalFlags::defaults());
        let served = |s: &Settings| Config::from_flags(s, &local, |_| None).unwrap().served;
        assert_eq!(served(&settings), taskledger_domain::card::Served::all());
        settings.streaming_enabled = false;
        assert!(!served(&settings).streaming && served(&settings).push_notifications);
        settings.push_enabled = false;
        assert!(!served(&settings).streaming && !served(&settings).push_notifications);
    }
}
