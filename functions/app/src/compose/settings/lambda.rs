//! What only a Lambda function reads: how the API function is reached and answers, the queues
//! the stream relay and the push worker use, the worker's margin, the metrics' namespace. Set
//! by the template (`template.yaml`), never by hand; the local server has flags of its own for
//! the same concerns (its listeners, its pollers).

use std::time::Duration;

use super::SettingsError;

/// Who the API function believes the caller is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ApiAuth {
    /// API Gateway's JWT authorizer (its claims, `TASKLEDGER_TENANT_CLAIM`).
    Gateway,
    /// A Function URL with AuthType AWS_IAM (the caller's IAM identity).
    Iam,
}

/// A Lambda function's own settings.
#[derive(Debug, Clone, clap::Args)]
pub struct LambdaSettings {
    /// How the API function learns the caller: `gateway` or `iam`.
    #[arg(long, env = "TASKLEDGER_AUTH", value_enum, default_value_t = ApiAuth::Gateway)]
    pub auth: ApiAuth,
    /// The API function answers as a stream (a Function URL with InvokeMode RESPONSE_STREAM),
    /// not buffered (API Gateway's HTTP API).
    #[arg(long, env = "TASKLEDGER_RESPONSE_STREAMING", default_value_t = false, action = clap::ArgAction::Set,
          value_parser = clap::builder::BoolishValueParser::new())]
    pub response_streaming: bool,
    /// Seconds a stream stays open (default: 24 buffered, below API Gateway's 30 s; the
    /// invocation's deadline less 3 s streamed).
    #[arg(long, env = "TASKLEDGER_STREAM_MAX_SECS")]
    pub stream_max_secs: Option<u64>,
    /// A REST API stage or a custom domain's base path in front of the routes.
    #[arg(long, env = "TASKLEDGER_PATH_PREFIX")]
    pub path_prefix: Option<String>,
    /// The FIFO agent-turn queue (the relay sends to it).
    #[arg(long, env = "TASKLEDGER_TURNS_QUEUE_URL")]
    pub turns_queue_url: Option<String>,
    /// The push queue (the relay fans pushed updates onto it; the push worker reads it).
    #[arg(long, env = "TASKLEDGER_PUSH_QUEUE_URL")]
    pub push_queue_url: Option<String>,
    /// The push queue's dead-letter queue.
    #[arg(long, env = "TASKLEDGER_PUSH_DLQ_URL")]
    pub push_dlq_url: Option<String>,
    /// Seconds before the invocation's deadline a turn stops and continues in a new turn.
    #[arg(long, env = "TASKLEDGER_TURN_MARGIN_SECS", default_value_t = crate::agent::DEFAULT_TURN_MARGIN.as_secs())]
    pub turn_margin_secs: u64,
    /// The CloudWatch namespace of the functions' EMF metrics.
    #[arg(long, env = "TASKLEDGER_METRICS_NAMESPACE", default_value = crate::telemetry::emf::DEFAULT_NAMESPACE)]
    pub metrics_namespace: String,
}

impl LambdaSettings {
    pub fn from_env() -> Result<Self, SettingsError> {
        super::parse_env()
    }

    /// A variable the function cannot run without.
    pub fn required<'a>(
        value: &'a Option<String>,
        name: &'static str,
        what: &str,
    ) -> Result<&'a str, SettingsError> {
        value
            .as_deref()
            .filter(|v| !v.trim().is_empty())
            .ok_or_else(|| SettingsError::invalid(name, format!("must name {what}")))
    }

    /// The push queue and its dead-letter queue, which the push worker cannot run without.
    pub fn push_queues(&self) -> Result<(String, String), SettingsError> {
        let queue = Self::required(
            &self.push_queue_url,
            "TASKLEDGER_PUSH_QUEUE_URL",
            "the push queue",
        )?;
        let dlq = Self::required(
            &self.push_dlq_url,
            "TASKLEDGER_PUSH_DLQ_URL",
            "the push dead-letter queue",
        )?;
        Ok((queue.to_string(), dlq.to_string()))
    }

    pub fn turn_margin(&self) -> Duration {
        Duration::from_secs(self.turn_margin_secs)
    }
}
