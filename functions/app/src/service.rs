//! The command service: load the head, let the aggregate decide, append with optimistic
//! concurrency (retrying lost races a bounded number of times), then wake waiters and the agent.
//! Queries read the read model, scoped to the caller.

use std::sync::Arc;
use std::time::Duration;

use taskledger_domain::cursor::CursorCodec;
use taskledger_domain::error::{DomainError, ErrorKind};
use taskledger_domain::ext::{self, Participant, Role, TaskExtensionData, TaskRef};
use taskledger_domain::ids::{
    ContextId, HistoryLength, IdempotencyKey, MessageId, PageSize, Principal, TaskId,
};
use taskledger_domain::intake;
use taskledger_domain::ports::{
    commit_for, replay_state, restore, EventStore, IdempotencyRecord, ListQuery, MessageKey,
    StoreError, TaskReadModel, ViewOptions,
};
use taskledger_domain::projection::assemble;
use taskledger_domain::push::{self, AddressPolicy, PushConfigSpec};
use taskledger_domain::task::{
    AppendUserMessage, CreateTask, TaskAggregate, TaskCommand, TaskEvent,
};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{
    CancelTaskRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse, Message,
    SendMessageRequest, SendMessageResponse, Task, TaskPushNotificationConfig,
    TaskPushNotificationConfigRef, TaskState,
};
use tokio::sync::broadcast;
use tracing::{debug, warn};

use crate::agent::Agent;
use crate::error::AppError;

/// How often a command is re-decided after losing a race before the caller gets an error.
pub const MAX_COMMAND_ATTEMPTS: u32 = 12;
/// Longest pause between two attempts (full jitter below it).
const MAX_BACKOFF_MS: u64 = 200;
/// How often a blocking SendMessage looks at the task when no change was announced in-process.
const SETTLE_POLL: Duration = Duration::from_millis(250);
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
    /// Which webhook addresses configs may name (literal addresses are checked at creation).
    pub push_policy: AddressPolicy,
}

/// How committed `AgentWorkRequested` events reach the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dispatch {
    /// Right after the commit, in this process (tests; stores without a durable feed).
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
            push_policy: AddressPolicy::strict(),
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
    /// This service, for work it hands to the agent in the background.
    me: std::sync::Weak<Service>,
    store: Arc<dyn EventStore>,
    reads: Arc<dyn TaskReadModel>,
    agent: Arc<dyn Agent>,
    cursors: CursorCodec,
    changes: broadcast::Sender<TaskChanged>,
    settings: ServiceSettings,
    /// Wakes the relay when new work was committed (feed dispatch).
    work: tokio::sync::Notify,
    /// Wakes the push worker when a commit made deliveries.
    pushes: tokio::sync::Notify,
}

/// Who may act on a task: a client (must own it) or the agent (acts on any task it is given).
#[derive(Debug, Clone, Copy)]
pub enum Actor<'a> {
    Client(&'a Principal),
    Agent,
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
        Arc::new_cyclic(|me| Self {
            me: me.clone(),
            store,
            reads,
            agent,
            cursors,
            changes,
            settings,
            work: tokio::sync::Notify::new(),
            pushes: tokio::sync::Notify::new(),
        })
    }

    /// Resolves when a commit made webhook deliveries (the push worker's wake-up).
    pub async fn pushes_committed(&self) {
        self.pushes.notified().await
    }

    pub fn push_enabled(&self) -> bool {
        self.settings.push_enabled
    }

    /// Subscribes to committed changes (blocking sends; later, streams).
    pub fn changes(&self) -> broadcast::Receiver<TaskChanged> {
        self.changes.subscribe()
    }

    /// Resolves when agent work was committed (the relay's wake-up).
    pub async fn work_committed(&self) {
        self.work.notified().await
    }

    pub fn agent(&self) -> Arc<dyn Agent> {
        self.agent.clone()
    }

    /// Events of a task after `after` (the worker looks up what requested a turn).
    pub async fn events(
        &self,
        task_id: &TaskId,
        after: u64,
    ) -> Result<Vec<taskledger_domain::events::StoredEvent>, AppError> {
        Ok(self.store.events(task_id, after).await?)
    }

    /// Loads the current state of a task (snapshot + tail; full replay if the snapshot is stale).
    pub async fn load(&self, task_id: &TaskId) -> Result<Option<TaskAggregate>, AppError> {
        let Some(loaded) = self.store.load(task_id).await? else {
            return Ok(None);
        };
        match restore(&loaded)? {
            Some(state) => Ok(Some(state)),
            None => Ok(Some(replay_state(&self.store.events(task_id, 0).await?)?)),
        }
    }

    /// Runs commands against a task as one atomic commit, re-deciding after a lost race, then
    /// carries the consequences to related tasks (parents, children).
    /// Returns the new state and the events committed (none: nothing to do).
    pub async fn execute<F>(
        &self,
        actor: Actor<'_>,
        task_id: &TaskId,
        message_key: Option<MessageKey>,
        build: F,
    ) -> Result<(TaskAggregate, Vec<TaskEvent>), AppError>
    where
        F: Fn(&TaskAggregate) -> Vec<TaskCommand>,
    {
        let (state, events) = self.commit_once(actor, task_id, message_key, build).await?;
        if !events.is_empty() {
            self.follow_up(&state, &events).await;
        }
        Ok((state, events))
    }

    async fn commit_once<F>(
        &self,
        actor: Actor<'_>,
        task_id: &TaskId,
        message_key: Option<MessageKey>,
        build: F,
    ) -> Result<(TaskAggregate, Vec<TaskEvent>), AppError>
    where
        F: Fn(&TaskAggregate) -> Vec<TaskCommand>,
    {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let before = self
                .load(task_id)
                .await?
                .filter(|s| visible_to(s, actor))
                .ok_or_else(|| AppError::task_not_found(task_id.as_str()))?;
            let mut scratch = before.clone();
            let mut events = Vec::new();
            for command in build(&before) {
                let decided = scratch
                    .decide(command)
                    .map_err(|e| with_task_id(e, task_id))?;
                for e in &decided {
                    scratch.apply_event(e);
                }
                events.extend(decided);
            }
            if events.is_empty() {
                return Ok((before, events));
            }
            let mut commit = commit_for(task_id.clone(), &before, &events, Timestamp::now());
            commit.message_key = message_key.clone();
            let after = commit.snapshot.clone();
            let pushes = !commit.pushes.is_empty();
            match self.store.append(commit).await {
                Ok(()) => {
                    self.announce(task_id, after.version);
                    self.wake_pushes(pushes);
                    self.dispatch_work(task_id, &events);
                    return Ok((after, events));
                }
                Err(StoreError::Conflict(_)) if attempt < MAX_COMMAND_ATTEMPTS => {
                    debug!(task_id = %task_id, attempt, "lost a race, deciding again");
                    tokio::time::sleep(backoff(attempt)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Consequences for related tasks: a child's state is recorded on its parent (and a parent
    /// whose children are all resolved goes back to its agent); a canceled parent cancels its
    /// unfinished children; a spawned sub-task is created.
    fn follow_up<'a>(
        &'a self,
        state: &'a TaskAggregate,
        events: &'a [TaskEvent],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            let Some(head) = state.head() else { return };
            let status_changed = events.iter().any(|e| {
                matches!(
                    e,
                    TaskEvent::StatusChanged { .. }
                        | TaskEvent::TaskCanceled { .. }
                        | TaskEvent::HelpRequested { .. }
                        | TaskEvent::HelpAnswered { .. }
                )
            });
            if status_changed {
                let parents = head
                    .ext
                    .as_ref()
                    .map(|d| d.parent_tasks.clone())
                    .unwrap_or_default();
                for parent in parents.iter().filter(|p| p.agent.is_none()) {
                    self.record_on_parent(&parent.task_id, head).await;
                }
            }
            if events
                .iter()
                .any(|e| matches!(e, TaskEvent::TaskCanceled { .. }))
            {
                for child in head.unresolved_children() {
                    let Ok(child_id) = TaskId::parse(child.clone()) else {
                        continue;
                    };
                    let r = self
                        .commit_once(Actor::Agent, &child_id, None, |s| {
                            if s.head().is_some_and(|h| h.status.state.is_terminal()) {
                                return vec![];
                            }
                            vec![TaskCommand::CancelTask {
                                at: Timestamp::now(),
                            }]
                        })
                        .await;
                    match r {
                        Ok((child_state, child_events)) => {
                            self.follow_up(&child_state, &child_events).await
                        }
                        Err(e) => {
                            warn!(task_id = %child_id, error = %e, "could not cancel a sub-task")
                        }
                    }
                }
            }
        })
    }

    async fn record_on_parent(&self, parent: &str, child: &taskledger_domain::task::TaskHead) {
        let Ok(parent_id) = TaskId::parse(parent.to_string()) else {
            return;
        };
        let summary = child
            .status
            .message
            .as_ref()
            .map(Message::text)
            .unwrap_or_default();
        let (child_id, state) = (child.id.to_string(), child.status.state);
        let r = self
            .commit_once(Actor::Agent, &parent_id, None, |_| {
                vec![TaskCommand::RecordChildState {
                    child_id: child_id.clone(),
                    state,
                    summary: summary.clone(),
                    at: Timestamp::now(),
                }]
            })
            .await;
        match r {
            // The agent is woken by the commit's AgentWorkRequested, when all are resolved.
            Ok(_) => {}
            Err(e) => {
                warn!(task_id = %parent_id, error = %e, "could not record a sub-task's state")
            }
        }
    }

    /// Spawns a sub-task `<parent>.<n>` (same context, linked both ways, optionally from a plan
    /// step). With `for_participant`, it is a task for that participant: they become its
    /// assignee (the previous assignee a watcher) and it waits for their first message.
    pub async fn spawn_subtask(
        &self,
        parent_id: &TaskId,
        name: &str,
        goal: &str,
        step: Option<String>,
        for_participant: Option<String>,
    ) -> Result<TaskId, AppError> {
        let (state, events) = self
            .commit_once(Actor::Agent, parent_id, None, |_| {
                vec![TaskCommand::SpawnSubTask {
                    step: step.clone(),
                    at: Timestamp::now(),
                }]
            })
            .await?;
        let child = events
            .iter()
            .find_map(|e| match e {
                TaskEvent::SubTaskSpawned { child_id, .. } => Some(child_id.clone()),
                _ => None,
            })
            .ok_or_else(|| AppError::protocol(ErrorKind::Internal, "no sub-task was spawned"))?;
        let head = state
            .head()
            .ok_or_else(|| AppError::task_not_found(parent_id.as_str()))?;
        let parent_ext = head.ext.clone();
        let mut participants: Vec<Participant> = parent_ext
            .as_ref()
            .map(|d| d.participants.clone())
            .unwrap_or_default();
        if let Some(target) = &for_participant {
            for p in &mut participants {
                if p.role == Role::Assignee && &p.id != target {
                    p.role = Role::Watcher;
                }
            }
            match participants.iter_mut().find(|p| &p.id == target) {
                Some(p) => p.role = Role::Assignee,
                None => {
                    return Err(AppError::invalid_params(
                        "participant_id",
                        format!("{target:?} is not a participant of {parent_id}"),
                    ))
                }
            }
        }
        let data = TaskExtensionData {
            name: name.to_string(),
            goal: goal.to_string(),
            kind: None,
            description: String::new(),
            acceptance_criteria: vec![],
            participants,
            parent_tasks: vec![TaskRef::local(parent_id.as_str(), None)],
            sub_tasks: vec![],
            plan: None,
            lifecycle: None,
            model: parent_ext.as_ref().and_then(|d| d.model.clone()),
            reasoning_effort: parent_ext.as_ref().and_then(|d| d.reasoning_effort),
        };
        let child_id = TaskId::parse(child).map_err(|e| AppError::invalid_params("id", e))?;
        let mut goal_message = Message {
            message_id: format!("{child_id}:goal"),
            context_id: None,
            task_id: None,
            role: taskledger_domain::wire::Role::User,
            parts: vec![taskledger_domain::wire::Part::text(goal)],
            metadata: None,
            extensions: vec![],
            reference_task_ids: vec![parent_id.to_string()],
        };
        if let Some(p) = data.participants.iter().find(|p| p.role == Role::Admin) {
            goal_message
                .metadata
                .get_or_insert_with(Default::default)
                .insert(
                    ext::PARTICIPANT_ID_KEY.into(),
                    serde_json::Value::String(p.id.clone()),
                );
        }
        let before = TaskAggregate::default();
        let created = before.decide(TaskCommand::CreateTask(CreateTask {
            task_id: child_id.clone(),
            context_id: head.context_id.clone(),
            owner: head.owner.clone(),
            message: goal_message.clone(),
            at: Timestamp::now(),
            extension: Some(Box::new(data)),
            awaiting_assignee: for_participant.clone(),
        }))?;
        let commit = commit_for(child_id.clone(), &before, &created, Timestamp::now());
        let child_state = commit.snapshot.clone();
        self.wake_pushes(!commit.pushes.is_empty());
        match self.store.append(commit).await {
            Ok(()) => {}
            // Already created by an earlier attempt of this same spawn.
            Err(StoreError::Conflict(_)) => return Ok(child_id),
            Err(e) => return Err(e.into()),
        }
        self.announce(&child_id, child_state.version);
        self.dispatch_work(&child_id, &created);
        self.follow_up(&child_state, &created).await;
        Ok(child_id)
    }

    /// The in-process relay: a committed `AgentWorkRequested` becomes work for the agent — on
    /// the new user message it came with, or on the task itself (resolved sub-tasks).
    fn dispatch_work(&self, task_id: &TaskId, events: &[TaskEvent]) {
        if !events
            .iter()
            .any(|e| matches!(e, TaskEvent::AgentWorkRequested { .. }))
        {
            return;
        }
        if self.settings.dispatch == Dispatch::Feed {
            self.work.notify_one();
            return;
        }
        let Some(svc) = self.me.upgrade() else { return };
        let (agent, id) = (self.agent.clone(), task_id.clone());
        let input = events.iter().rev().find_map(|e| match e {
            TaskEvent::MessageAppended { message, .. }
                if message.role == taskledger_domain::wire::Role::User =>
            {
                Some(message.clone())
            }
            _ => None,
        });
        match input {
            Some(m) => tokio::spawn(async move { agent.on_message(svc, id, m).await }),
            None => tokio::spawn(async move { agent.on_children_resolved(svc, id).await }),
        };
    }

    fn wake_pushes(&self, made: bool) {
        if made {
            self.pushes.notify_one();
        }
    }

    fn announce(&self, task_id: &TaskId, version: u64) {
        // No receiver is fine: nobody is waiting.
        let _ = self.changes.send(TaskChanged {
            task_id: task_id.clone(),
            version,
        });
    }

    // ------------------------------------------------------------ SendMessage

    pub async fn send_message(
        self: &Arc<Self>,
        who: &Principal,
        req: SendMessageRequest,
        idempotency: Option<(IdempotencyKey, String)>,
    ) -> Result<SendMessageResponse, AppError> {
        let config = req.configuration.clone().unwrap_or_default();
        let history = HistoryLength::parse(config.history_length)
            .map_err(|e| AppError::invalid_params("configuration.historyLength", e))?;
        let push = match &config.task_push_notification_config {
            None => None,
            Some(c) => Some(self.push_spec(c, "configuration.taskPushNotificationConfig")?),
        };
        let message = req.message;
        let message_id = intake::validate_user_message(&message, "message")?;

        let (task_id, since, committed) = match message.task_id.clone() {
            Some(raw) => {
                let task_id =
                    TaskId::parse(raw.clone()).map_err(|_| AppError::task_not_found(&raw))?;
                tracing::Span::current().record("task_id", task_id.as_str());
                match self
                    .append_user_message(who, &task_id, &message_id, message.clone(), push)
                    .await?
                {
                    Some((state, events)) => {
                        let wake = events
                            .iter()
                            .any(|e| matches!(e, TaskEvent::AgentWorkRequested { .. }));
                        (task_id, Some((state.version, wake)), Some(state))
                    }
                    None => (task_id, None, None),
                }
            }
            None => {
                if let Some(reply) = self.agent.direct_reply(&message) {
                    return Ok(SendMessageResponse::Message(reply));
                }
                let (task_id, state) = self
                    .create_task(who, message.clone(), idempotency, push)
                    .await?;
                tracing::Span::current().record("task_id", task_id.as_str());
                let version = state.as_ref().map(|s| (s.version, true));
                (task_id, version, state)
            }
        };

        if let Some((version, wake)) = since {
            if wake && !config.return_immediately {
                self.wait_settled(&task_id, version).await?;
            }
        } else if !config.return_immediately {
            // A retry: answer with the task as it settles, like the original request did.
            self.wait_settled(&task_id, 0).await?;
        }
        // Returning at once with no history asked for: the state just committed says it all.
        if let (true, HistoryLength::Last(0), Some(head)) = (
            config.return_immediately,
            history,
            committed.as_ref().and_then(|s| s.head()),
        ) {
            if head.artifacts.is_empty() {
                return Ok(SendMessageResponse::Task(assemble(head, None, None)));
            }
        }
        let task = self.view(who, &task_id, history, true).await?;
        Ok(SendMessageResponse::Task(task))
    }

    /// The state after the append and its events, or `None` when it was a retry.
    async fn append_user_message(
        &self,
        who: &Principal,
        task_id: &TaskId,
        message_id: &MessageId,
        message: Message,
        push: Option<PushConfigSpec>,
    ) -> Result<Option<(TaskAggregate, Vec<TaskEvent>)>, AppError> {
        let key = MessageKey {
            task_id: task_id.clone(),
            message_id: message_id.clone(),
            fingerprint: intake::fingerprint(&message),
        };
        let result = self
            .execute(Actor::Client(who), task_id, Some(key), |_| {
                // A config given with the message is registered first: it sees what follows.
                let mut cmds: Vec<TaskCommand> = push
                    .iter()
                    .map(|config| TaskCommand::SetPushConfig {
                        config: config.clone(),
                        at: Timestamp::now(),
                    })
                    .collect();
                cmds.push(TaskCommand::AppendUserMessage(AppendUserMessage {
                    message: message.clone(),
                    at: Timestamp::now(),
                }));
                cmds
            })
            .await;
        match result {
            Ok((state, events)) => Ok(Some((state, events))),
            Err(AppError::Store(StoreError::DuplicateMessage(_))) => {
                debug!(task_id = %task_id, message_id = %message_id, "retried message, answering as before");
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    async fn create_task(
        &self,
        who: &Principal,
        message: Message,
        idempotency: Option<(IdempotencyKey, String)>,
        push: Option<PushConfigSpec>,
    ) -> Result<(TaskId, Option<TaskAggregate>), AppError> {
        let context_id = match message.context_id.clone() {
            Some(c) => {
                ContextId::parse(c).map_err(|e| AppError::invalid_params("message.contextId", e))?
            }
            None => ContextId::parse(uuid::Uuid::new_v4().to_string())
                .map_err(|e| AppError::invalid_params("message.contextId", e))?,
        };
        let task_id = TaskId::parse(uuid::Uuid::now_v7().to_string())
            .map_err(|e| AppError::invalid_params("id", e))?;
        let before = TaskAggregate::default();
        let mut events = before.decide(TaskCommand::CreateTask(CreateTask {
            task_id: task_id.clone(),
            context_id,
            owner: who.clone(),
            message,
            at: Timestamp::now(),
            extension: None,
            awaiting_assignee: None,
        }))?;
        if let Some(config) = push {
            let mut scratch = before.clone();
            for e in &events {
                scratch.apply_event(e);
            }
            events.extend(scratch.decide(TaskCommand::SetPushConfig {
                config,
                at: Timestamp::now(),
            })?);
        }
        let mut commit = commit_for(task_id.clone(), &before, &events, Timestamp::now());
        commit.idempotency = idempotency
            .as_ref()
            .map(|(key, fingerprint)| IdempotencyRecord {
                owner: who.clone(),
                key: key.clone(),
                fingerprint: fingerprint.clone(),
                task_id: task_id.clone(),
            });
        let state = commit.snapshot.clone();
        let pushes = !commit.pushes.is_empty();
        match self.store.append(commit).await {
            Ok(()) => {
                self.announce(&task_id, state.version);
                self.wake_pushes(pushes);
                self.dispatch_work(&task_id, &events);
                Ok((task_id, Some(state)))
            }
            Err(StoreError::IdempotencyKeyUsed {
                task_id: existing,
                fingerprint,
            }) => {
                let same = idempotency.as_ref().is_some_and(|(_, f)| *f == fingerprint);
                if same {
                    debug!(task_id = %existing, "idempotent retry of a task creation");
                    Ok((existing, None))
                } else {
                    Err(AppError::invalid_params(
                        "Idempotency-Key",
                        "was already used with a different request",
                    ))
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Waits until the task is terminal or newly interrupted after `since`, or the bound passes.
    async fn wait_settled(&self, task_id: &TaskId, since: u64) -> Result<(), AppError> {
        let mut changes = self.changes.subscribe();
        let deadline = tokio::time::Instant::now() + self.settings.blocking_timeout;
        loop {
            let state = self
                .load(task_id)
                .await?
                .ok_or_else(|| AppError::task_not_found(task_id.as_str()))?;
            if state.settled_since(since) {
                return Ok(());
            }
            // Changes made by another process (the worker Lambda) announce nothing here: look again
            // at least every SETTLE_POLL.
            let next_look = (tokio::time::Instant::now() + SETTLE_POLL).min(deadline);
            loop {
                match tokio::time::timeout_at(next_look, changes.recv()).await {
                    Err(_) if next_look >= deadline => return Ok(()),
                    Err(_) => break,
                    Ok(Ok(c)) if &c.task_id == task_id => break,
                    Ok(Ok(_)) => continue,
                    Ok(Err(broadcast::error::RecvError::Lagged(_))) => break,
                    Ok(Err(broadcast::error::RecvError::Closed)) => return Ok(()),
                }
            }
        }
    }

    // ------------------------------------------------------------ queries and cancel

    async fn view(
        &self,
        who: &Principal,
        task_id: &TaskId,
        history: HistoryLength,
        include_artifacts: bool,
    ) -> Result<Task, AppError> {
        let v = self
            .reads
            .get(
                who,
                task_id,
                ViewOptions {
                    history,
                    include_artifacts,
                },
            )
            .await?
            .ok_or_else(|| AppError::task_not_found(task_id.as_str()))?;
        Ok(assemble(&v.head, v.history, v.chunks))
    }

    pub async fn get_task(&self, who: &Principal, req: GetTaskRequest) -> Result<Task, AppError> {
        let history = HistoryLength::parse(req.history_length)
            .map_err(|e| AppError::invalid_params("historyLength", e))?;
        let task_id =
            TaskId::parse(req.id.clone()).map_err(|_| AppError::task_not_found(&req.id))?;
        tracing::Span::current().record("task_id", task_id.as_str());
        self.view(who, &task_id, history, true).await
    }

    pub async fn cancel_task(
        &self,
        who: &Principal,
        req: CancelTaskRequest,
    ) -> Result<Task, AppError> {
        let task_id =
            TaskId::parse(req.id.clone()).map_err(|_| AppError::task_not_found(&req.id))?;
        tracing::Span::current().record("task_id", task_id.as_str());
        self.execute(Actor::Client(who), &task_id, None, |_| {
            vec![TaskCommand::CancelTask {
                at: Timestamp::now(),
            }]
        })
        .await?;
        self.view(who, &task_id, HistoryLength::All, true).await
    }

    pub async fn list_tasks(
        &self,
        who: &Principal,
        req: ListTasksRequest,
    ) -> Result<ListTasksResponse, AppError> {
        let page_size =
            PageSize::parse(req.page_size).map_err(|e| AppError::invalid_params("pageSize", e))?;
        let history = HistoryLength::parse(req.history_length)
            .map_err(|e| AppError::invalid_params("historyLength", e))?;
        let context_id = req
            .context_id
            .clone()
            .filter(|c| !c.is_empty())
            .map(ContextId::parse)
            .transpose()
            .map_err(|e| AppError::invalid_params("contextId", e))?;
        let state = req.status.filter(|s| *s != TaskState::Unspecified);
        let include_artifacts = req.include_artifacts.unwrap_or(false);
        // A token is only good for the caller and filters it was issued for.
        let scope = format!(
            "{}|{}|{}|{}",
            who,
            context_id.as_ref().map(ContextId::as_str).unwrap_or(""),
            state.map(TaskState::as_str).unwrap_or(""),
            req.status_timestamp_after
                .map(|t| t.unix_nanos().to_string())
                .unwrap_or_default()
        );
        let after = match req.page_token.as_deref() {
            None | Some("") => None,
            Some(t) => Some(
                self.cursors
                    .decode(t, &scope, Timestamp::now().unix_secs())
                    .map_err(|e| AppError::invalid_params("pageToken", e))?,
            ),
        };
        let page = self
            .reads
            .list(
                who,
                &ListQuery {
                    context_id,
                    state,
                    status_after: req.status_timestamp_after,
                    after,
                    page_size,
                    view: ViewOptions {
                        history,
                        include_artifacts,
                    },
                },
            )
            .await?;
        Ok(ListTasksResponse {
            tasks: page
                .tasks
                .into_iter()
                .map(|v| assemble(&v.head, v.history, v.chunks))
                .collect(),
            next_page_token: page
                .next
                .map(|c| {
                    self.cursors
                        .encode(&c, &scope, Timestamp::now().unix_secs())
                })
                .unwrap_or_default(),
            page_size: page_size.get() as i32,
            total_size: i32::try_from(page.total_size).unwrap_or(i32::MAX),
        })
    }

    // ------------------------------------------------------------ push notification configs

    /// A config from the wire, validated; a missing id is generated.
    fn push_spec(
        &self,
        wire: &TaskPushNotificationConfig,
        field: &str,
    ) -> Result<PushConfigSpec, AppError> {
        if !self.settings.push_enabled {
            return Err(push_not_supported());
        }
        Ok(PushConfigSpec::parse(
            wire,
            &uuid::Uuid::new_v4().to_string(),
            &self.settings.push_policy,
            field,
        )?)
    }

    /// The caller's task, or TaskNotFound.
    async fn own_task(&self, who: &Principal, raw_id: &str) -> Result<TaskAggregate, AppError> {
        let task_id =
            TaskId::parse(raw_id.to_string()).map_err(|_| AppError::task_not_found(raw_id))?;
        tracing::Span::current().record("task_id", task_id.as_str());
        self.load(&task_id)
            .await?
            .filter(|s| visible_to(s, Actor::Client(who)))
            .ok_or_else(|| AppError::task_not_found(raw_id))
    }

    pub async fn create_push_config(
        &self,
        who: &Principal,
        req: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, AppError> {
        let raw_id = req.task_id.clone().unwrap_or_default();
        if raw_id.is_empty() {
            return Err(AppError::invalid_params("taskId", "is required"));
        }
        let spec = self.push_spec(&req, "")?;
        let task_id =
            TaskId::parse(raw_id.clone()).map_err(|_| AppError::task_not_found(&raw_id))?;
        tracing::Span::current().record("task_id", task_id.as_str());
        let (state, _) = self
            .execute(Actor::Client(who), &task_id, None, |_| {
                vec![TaskCommand::SetPushConfig {
                    config: spec.clone(),
                    at: Timestamp::now(),
                }]
            })
            .await?;
        state
            .head()
            .and_then(|h| h.push.iter().find(|p| p.id == spec.id))
            .map(|p| p.to_wire(task_id.as_str()))
            .ok_or_else(|| AppError::protocol(ErrorKind::Internal, "the config was not stored"))
    }

    pub async fn get_push_config(
        &self,
        who: &Principal,
        req: TaskPushNotificationConfigRef,
    ) -> Result<TaskPushNotificationConfig, AppError> {
        if !self.settings.push_enabled {
            return Err(push_not_supported());
        }
        let state = self.own_task(who, &req.task_id).await?;
        state
            .head()
            .and_then(|h| h.push.iter().find(|p| p.id == req.id))
            .map(|p| p.to_wire(&req.task_id))
            .ok_or_else(|| {
                AppError::protocol(
                    ErrorKind::TaskNotFound,
                    format!(
                        "task {} has no push notification config {:?}",
                        req.task_id, req.id
                    ),
                )
            })
    }

    pub async fn list_push_configs(
        &self,
        who: &Principal,
        req: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, AppError> {
        if !self.settings.push_enabled {
            return Err(push_not_supported());
        }
        let page_size = match req.page_size {
            None | Some(0) => push::DEFAULT_PUSH_CONFIG_PAGE,
            Some(n) if n > 0 && n as usize <= push::MAX_PUSH_CONFIG_PAGE => n as usize,
            Some(n) => {
                return Err(AppError::invalid_params(
                    "pageSize",
                    format!(
                        "must be between 1 and {} (got {n})",
                        push::MAX_PUSH_CONFIG_PAGE
                    ),
                ))
            }
        };
        let state = self.own_task(who, &req.task_id).await?;
        let scope = format!("push|{who}|{}", req.task_id);
        let start = match req.page_token.as_deref() {
            None | Some("") => 0,
            Some(t) => self
                .cursors
                .decode(t, &scope, Timestamp::now().unix_secs())
                .map_err(|e| AppError::invalid_params("pageToken", e))?
                .status_nanos
                .max(0) as usize,
        };
        let all = state.head().map(|h| h.push.as_slice()).unwrap_or_default();
        let page: Vec<_> = all
            .iter()
            .skip(start)
            .take(page_size)
            .map(|p| p.to_wire(&req.task_id))
            .collect();
        let end = start + page.len();
        let next_page_token = if end < all.len() {
            self.cursors.encode(
                &taskledger_domain::ports::Cursor {
                    status_nanos: end as i64,
                    task_id: req.task_id.clone(),
                },
                &scope,
                Timestamp::now().unix_secs(),
            )
        } else {
            String::new()
        };
        Ok(ListTaskPushNotificationConfigsResponse {
            configs: page,
            next_page_token,
        })
    }

    /// Deleting a config that does not exist succeeds (idempotent); the task must exist.
    pub async fn delete_push_config(
        &self,
        who: &Principal,
        req: TaskPushNotificationConfigRef,
    ) -> Result<(), AppError> {
        if !self.settings.push_enabled {
            return Err(push_not_supported());
        }
        let task_id = TaskId::parse(req.task_id.clone())
            .map_err(|_| AppError::task_not_found(&req.task_id))?;
        tracing::Span::current().record("task_id", task_id.as_str());
        self.execute(Actor::Client(who), &task_id, None, |_| {
            vec![TaskCommand::DeletePushConfig {
                id: req.id.clone(),
                at: Timestamp::now(),
            }]
        })
        .await?;
        Ok(())
    }

    /// What the agent sees of a task: its state and its whole history.
    pub async fn agent_view(
        &self,
        task_id: &TaskId,
    ) -> Result<(TaskAggregate, Vec<Message>), AppError> {
        let state = self
            .load(task_id)
            .await?
            .ok_or_else(|| AppError::task_not_found(task_id.as_str()))?;
        let owner = state
            .head()
            .map(|h| h.owner.clone())
            .ok_or_else(|| AppError::task_not_found(task_id.as_str()))?;
        let view = self
            .reads
            .get(
                &owner,
                task_id,
                ViewOptions {
                    history: HistoryLength::All,
                    include_artifacts: false,
                },
            )
            .await?
            .ok_or_else(|| AppError::task_not_found(task_id.as_str()))?;
        Ok((state, view.history.unwrap_or_default()))
    }

    /// The agent reports a failure it cannot recover from; the task fails with a reason.
    pub async fn fail_task(&self, task_id: &TaskId, reason: &str) {
        let message = Message::agent_text(uuid::Uuid::new_v4().to_string(), reason);
        let r = self
            .execute(Actor::Agent, task_id, None, |s| {
                if s.head().is_some_and(|h| h.status.state.is_terminal()) {
                    return vec![];
                }
                vec![TaskCommand::ChangeStatus {
                    state: TaskState::Failed,
                    message: Some(message.clone()),
                    at: Timestamp::now(),
                }]
            })
            .await;
        if let Err(e) = r {
            warn!(task_id = %task_id, error = %e, "could not mark the task failed");
        }
    }
}

fn push_not_supported() -> AppError {
    AppError::protocol(
        ErrorKind::PushNotificationNotSupported,
        "push notifications are not enabled on this server (capabilities.pushNotifications is false)",
    )
}

/// Exponential backoff with full jitter, so racing writers spread out instead of colliding again.
fn backoff(attempt: u32) -> Duration {
    let cap = (2u64 << attempt.min(10)).min(MAX_BACKOFF_MS);
    let r = (uuid::Uuid::new_v4().as_u128() % u128::from(cap + 1)) as u64;
    Duration::from_millis(r.max(1))
}

fn visible_to(state: &TaskAggregate, actor: Actor<'_>) -> bool {
    match actor {
        Actor::Agent => state.head.is_some(),
        Actor::Client(p) => state.head.as_ref().is_some_and(|h| &h.owner == p),
    }
}

fn with_task_id(e: DomainError, task_id: &TaskId) -> DomainError {
    match e {
        DomainError::TaskNotFound { .. } => DomainError::TaskNotFound {
            task_id: task_id.to_string(),
        },
        other => other,
    }
}
