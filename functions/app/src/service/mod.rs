//! The command service: each A2A operation is a use case (`send`, `queries`, `push_configs`,
//! `cancel`, `handoffs`, `streams`, `turns`), and every change to a task is one `execute`
//! (`execute.rs`: the ledger's commit, then announce, dispatch and follow-up). Where a task's
//! state comes from is the ledger's alone (`ledger/`). Agents reach the service through the
//! small `TaskPort` it implements (`crate::agent::TaskPort`), never the other way round.

mod agent_port;
mod answers;
mod cancel;
mod dispatch;
mod execute;
mod family;
mod handoffs;
pub mod ledger;
mod log;
mod nested;
mod push_configs;
mod queries;
mod send;
pub mod streams;
pub mod turns;

use std::sync::Arc;
use std::time::Duration;

use taskledger_domain::agent::turns::AgentTurn;
use taskledger_domain::cursor::CursorCodec;
use taskledger_domain::ids::{Principal, TaskId};
use taskledger_domain::ports::{EventStore, TaskReadModel};
use taskledger_domain::push::AddressPolicy;
use taskledger_domain::retention::Retention;
use taskledger_domain::task::stored::StoredEvent;
use taskledger_domain::task::TaskHead;
use tokio::sync::{broadcast, mpsc};

use crate::agent::Agent;
use crate::error::AppError;

pub use answers::{ANSWER_CACHE_BYTES, ANSWER_MAX_BYTES};
pub use execute::Change;
pub use ledger::{
    Committed, Ledger, RestoreError, MAX_COMMAND_ATTEMPTS, MAX_RESTORED_COMMIT_EVENTS,
    STATE_CACHE_TASKS,
};

/// Capacity of the in-process change feed that wakes blocking requests.
const CHANGE_FEED_CAPACITY: usize = 4096;

#[derive(Debug, Clone)]
pub struct ServiceSettings {
    /// How long a blocking SendMessage waits for the task to settle before answering as it is.
    pub blocking_timeout: Duration,
    /// How committed agent work reaches the agent.
    pub dispatch: Dispatch,
    /// Whether webhook deliveries are made (a push worker runs): push config operations and
    /// `capabilities.pushNotifications` depend on it.
    pub push_enabled: bool,
    /// Whether SendStreamingMessage and SubscribeToTask are served
    /// (`capabilities.streaming`): when not, both answer UnsupportedOperation.
    pub streaming_enabled: bool,
    /// Which webhook addresses configs may name (literal addresses are checked at creation).
    pub push_policy: AddressPolicy,
    /// How often an open stream reads its task's events when no commit was announced in this
    /// process (commits of other processes, without a relay here to announce them).
    pub stream_poll: Duration,
    /// How long a stream stays open at most (a Lambda's timeout); the client resumes with
    /// `Last-Event-ID`. `None`: until the task settles.
    pub stream_max: Option<Duration>,
    /// How long a GetTask with `currentGeneration` (draft A2A 1.1) waits for the task to move.
    pub long_poll_max: Duration,
    /// Each principal's request rate (none: no limit).
    pub rate_limit: Option<crate::limits::RateLimit>,
    /// Tasks each principal may create a minute (none: no limit).
    pub task_limit: Option<crate::limits::RateLimit>,
    /// Streams each principal may hold open (none: no limit).
    pub max_streams: Option<usize>,
    /// How push-config tokens and credentials are sealed before they are stored (none: stored
    /// as given; ADR 022) — handed in by the binary's composition.
    pub secrets: Option<Arc<dyn taskledger_domain::ports::SecretSeal>>,
    /// Tasks whose latest state is kept in memory, in front of a store where that pays
    /// (0: none; ADR 025).
    pub state_cache: usize,
    /// Bytes of GetTask answers kept while the store has not changed (0: none; ADR 026).
    pub answer_cache: usize,
    /// How long finished tasks are kept: one past its expiry is gone for every caller.
    pub retention: Retention,
}

/// `ServiceSettings::long_poll_max` unless configured (below API Gateway's 29 s on Lambda).
pub const DEFAULT_LONG_POLL_MAX: Duration = Duration::from_secs(30);

/// `ServiceSettings::stream_poll` unless configured.
pub const DEFAULT_STREAM_POLL: Duration = Duration::from_millis(500);

/// How committed `AgentWorkRequested` events reach the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dispatch {
    /// Right after the commit, in this process (tests; stores without a durable feed): the
    /// turns go to the in-process dispatcher (`runners::dispatch`).
    InProcess,
    /// Through the durable feed: a relay turns events into turns and a worker runs them, so
    /// work survives a crash. The service only nudges the relay.
    Feed,
}

impl Default for ServiceSettings {
    fn default() -> Self {
        Self {
            blocking_timeout: Duration::from_secs(60),
            dispatch: Dispatch::InProcess,
            push_enabled: false,
            streaming_enabled: true,
            push_policy: AddressPolicy::strict(),
            stream_poll: DEFAULT_STREAM_POLL,
            stream_max: None,
            long_poll_max: DEFAULT_LONG_POLL_MAX,
            rate_limit: None,
            task_limit: None,
            max_streams: None,
            secrets: None,
            state_cache: STATE_CACHE_TASKS,
            answer_cache: ANSWER_CACHE_BYTES,
            retention: Retention::default(),
        }
    }
}

/// A committed change: task and the version it reached.
#[derive(Debug, Clone)]
pub struct TaskChanged {
    pub task_id: TaskId,
    pub version: u64,
}

pub struct Service {
    /// Where a task's state comes from, and the only way it changes.
    ledger: Ledger,
    /// The event log, read (streams, history); written through the ledger only.
    store: Arc<dyn EventStore>,
    reads: Arc<dyn TaskReadModel>,
    agent: Arc<dyn Agent>,
    cursors: CursorCodec,
    changes: broadcast::Sender<TaskChanged>,
    settings: ServiceSettings,
    /// Wakes the relay when new work was committed (feed dispatch).
    work: tokio::sync::Notify,
    /// Wakes the embedded push worker when the relay queued deliveries.
    pushes: Arc<tokio::sync::Notify>,
    /// Turns committed with in-process dispatch, for the dispatcher the service started.
    turns: Option<mpsc::UnboundedSender<AgentTurn>>,
    /// The tailers of the tasks this process streams.
    hub: streams::Hub,
    limiter: Option<crate::limits::RateLimiter>,
    task_limiter: Option<crate::limits::RateLimiter>,
    stream_limit: Option<Arc<crate::limits::StreamLimit>>,
    answers: Option<answers::AnswerCache>,
}

/// Who may act on a task: a client (must own it) or the agent (acts on any task it is given).
#[derive(Debug, Clone, Copy)]
pub enum Actor<'a> {
    Client(&'a Principal),
    Agent,
}

impl Service {
    /// Every binding's first step after authentication: the caller's request rate.
    pub fn admit(&self, who: &Principal) -> Result<(), AppError> {
        match &self.limiter {
            Some(l) => l.admit(who),
            None => Ok(()),
        }
    }

    /// Before a stream opens: a place among the streams `who` may hold open (`None`: no limit).
    pub(crate) fn stream_slot(
        &self,
        who: &Principal,
    ) -> Result<Option<crate::limits::StreamSlot>, AppError> {
        self.stream_limit
            .as_ref()
            .map(|l| l.acquire(who))
            .transpose()
    }

    /// Before a client's new task: the tasks it may create a minute.
    pub(crate) fn admit_task(&self, who: &Principal) -> Result<(), AppError> {
        match &self.task_limiter {
            Some(l) => l.admit(who),
            None => Ok(()),
        }
    }
}

impl Service {
    pub fn new(
        store: Arc<dyn EventStore>,
        reads: Arc<dyn TaskReadModel>,
        agent: Arc<dyn Agent>,
        cursors: CursorCodec,
        settings: ServiceSettings,
    ) -> Arc<Self> {
        let (changes, _) = broadcast::channel(CHANGE_FEED_CAPACITY);
        let (turns, queue) = match settings.dispatch {
            Dispatch::InProcess => {
                let (tx, rx) = mpsc::unbounded_channel();
                (Some(tx), Some(rx))
            }
            Dispatch::Feed => (None, None),
        };
        let hub = streams::Hub::new(store.clone(), settings.stream_poll);
        let (settings_limit, task_limit) = (settings.rate_limit, settings.task_limit);
        let max_streams = settings.max_streams;
        let ledger = Ledger::new(
            store.clone(),
            settings.state_cache,
            settings.retention.clone(),
            settings.push_policy.clone(),
        );
        let answers =
            (settings.answer_cache > 0).then(|| answers::AnswerCache::new(settings.answer_cache));
        let svc = Arc::new(Self {
            ledger,
            hub,
            store,
            reads,
            agent,
            cursors,
            changes,
            settings,
            work: tokio::sync::Notify::new(),
            pushes: Arc::default(),
            turns,
            limiter: settings_limit.map(crate::limits::RateLimiter::new),
            task_limiter: task_limit.map(crate::limits::RateLimiter::new),
            stream_limit: max_streams.map(crate::limits::StreamLimit::new),
            answers,
        });
        if let Some(queue) = queue {
            dispatch::start(&svc, queue);
        }
        svc
    }

    /// What the relay notifies once it queued webhook deliveries (the embedded push worker's
    /// wake-up).
    pub fn pushes_queued(&self) -> Arc<tokio::sync::Notify> {
        self.pushes.clone()
    }

    pub fn push_enabled(&self) -> bool {
        self.settings.push_enabled
    }

    /// The capability-gated operations this service serves, as its card declares them.
    pub fn served(&self) -> taskledger_domain::card::Served {
        taskledger_domain::card::Served {
            streaming: self.settings.streaming_enabled,
            push_notifications: self.settings.push_enabled,
        }
    }

    /// The limits every caller works within here (stated in the extended agent card).
    pub fn caller_limits(&self) -> taskledger_domain::card::extended::CallerLimits {
        taskledger_domain::card::extended::CallerLimits {
            requests_per_second: self.settings.rate_limit.map(|r| (r.per_second, r.burst)),
            tasks_per_minute: self.settings.task_limit.map(|r| r.shown),
            open_streams: self.settings.max_streams,
        }
    }

    /// Subscribes to committed changes (blocking sends; later, streams).
    pub fn changes(&self) -> broadcast::Receiver<TaskChanged> {
        self.changes.subscribe()
    }

    /// A commit of `task_id` was seen outside this process's commit path (a relay reading the
    /// store's feed): blocking sends and streams of the task look now.
    pub fn commit_seen(&self, task_id: &TaskId, version: u64) {
        self.announce(task_id, version);
    }

    /// How many tasks this process tails for open streams.
    pub fn streamed_tasks(&self) -> usize {
        self.hub.tailing()
    }

    /// Resolves when a commit put work in the feed: a turn or a pushed update (the relay's
    /// wake-up).
    pub async fn work_committed(&self) {
        self.work.notified().await
    }

    pub fn agent(&self) -> Arc<dyn Agent> {
        self.agent.clone()
    }

    /// Events of a task after `after` (the worker looks up what requested a turn).
    pub async fn events(&self, task_id: &TaskId, after: u64) -> Result<Vec<StoredEvent>, AppError> {
        Ok(self.store.events(task_id, after).await?)
    }

    /// Where a task's state comes from: read it there (`current`, `visible`, …).
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Whether the task is past its expiry (`retention`): gone for every caller.
    pub fn expired(&self, head: &TaskHead) -> bool {
        self.ledger.expired(head)
    }

    /// The deployment's retention.
    pub fn retention(&self) -> &Retention {
        self.ledger.retention()
    }
}

/// A task id from the wire: one longer than any id is invalid (and is not echoed back, so an
/// error reply stays small on every binding); any other that cannot be an id names no task.
fn task_id_of(raw: &str) -> Result<TaskId, AppError> {
    if raw.len() > taskledger_domain::ids::MAX_ID_BYTES {
        return Err(AppError::invalid_params(
            "id",
            format_args!(
                "a task id is at most {} bytes; this one has {}",
                taskledger_domain::ids::MAX_ID_BYTES,
                raw.len()
            ),
        ));
    }
    let id = TaskId::parse(raw.to_string()).map_err(|_| AppError::task_not_found(raw))?;
    tracing::Span::current().record("task_id", id.as_str());
    Ok(id)
}
