//! SendMessage: a message creates a task or continues one (a retried message or creation is
//! recognised and answered as before), then a blocking send waits for the task to settle.

use std::sync::Arc;
use std::time::Duration;

use taskledger_domain::ids::{
    ContextId, HistoryLength, IdempotencyKey, MessageId, Principal, TaskId,
};
use taskledger_domain::intake;
use taskledger_domain::ports::{IdempotencyRecord, MessageKey, StoreError};
use taskledger_domain::projection::assemble;
use taskledger_domain::push::PushConfigSpec;
use taskledger_domain::task::{
    AppendUserMessage, CreateTask, TaskAggregate, TaskCommand, TaskEvent,
};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Message, SendMessageRequest, SendMessageResponse};
use tokio::sync::broadcast;
use tracing::debug;

use super::commit::{Keys, Target};
use super::{task_id_of, Actor, Service};
use crate::error::AppError;

/// How often a blocking SendMessage looks at the task when no change was announced in-process.
const SETTLE_POLL: Duration = Duration::from_millis(250);

/// A message taken in: the direct reply of the agent, or the task it created or continued.
pub(crate) enum Submission {
    Direct(Message),
    Task(Box<Submitted>),
}

/// The task a message went to, and what the commit did.
pub(crate) struct Submitted {
    pub task_id: TaskId,
    /// The version the message's commit reached and whether it asked the agent for a turn;
    /// `None` when it was a retry answered as before.
    pub since: Option<(u64, bool)>,
    committed: Option<TaskAggregate>,
    pub history: HistoryLength,
    pub return_immediately: bool,
}

impl Service {
    pub async fn send_message(
        self: &Arc<Self>,
        who: &Principal,
        req: SendMessageRequest,
        idempotency: Option<(IdempotencyKey, String)>,
    ) -> Result<SendMessageResponse, AppError> {
        let sub = match self.submit(who, req, idempotency).await? {
            Submission::Direct(reply) => return Ok(SendMessageResponse::Message(reply)),
            Submission::Task(sub) => sub,
        };
        let task_id = &sub.task_id;
        if let Some((version, wake)) = sub.since {
            if wake && !sub.return_immediately {
                self.wait_settled(task_id, version).await?;
            }
        } else if !sub.return_immediately {
            // A retry: answer with the task as it settles, like the original request did.
            self.wait_settled(task_id, 0).await?;
        }
        // Returning at once with no history asked for: the state just committed says it all.
        if let (true, HistoryLength::Last(0), Some(head)) = (
            sub.return_immediately,
            sub.history,
            sub.committed.as_ref().and_then(|s| s.head()),
        ) {
            if head.artifacts.is_empty() {
                return Ok(SendMessageResponse::Task(assemble(head, None, None)));
            }
        }
        let task = self.view(who, task_id, sub.history, true).await?;
        Ok(SendMessageResponse::Task(task))
    }

    /// Takes a message in: validates it, then creates or continues its task (or lets the
    /// agent answer it directly). SendMessage and SendStreamingMessage both start here.
    pub(crate) async fn submit(
        self: &Arc<Self>,
        who: &Principal,
        req: SendMessageRequest,
        idempotency: Option<(IdempotencyKey, String)>,
    ) -> Result<Submission, AppError> {
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
                let task_id = task_id_of(&raw)?;
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
                    return Ok(Submission::Direct(reply));
                }
                let (task_id, state) = self
                    .create_task(who, message.clone(), idempotency, push)
                    .await?;
                tracing::Span::current().record("task_id", task_id.as_str());
                let version = state.as_ref().map(|s| (s.version, true));
                (task_id, version, state)
            }
        };
        Ok(Submission::Task(Box::new(Submitted {
            task_id,
            since,
            committed,
            history,
            return_immediately: config.return_immediately,
        })))
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

    /// A new task for `who`; `None` as state when an idempotent retry found the first one.
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
        let create = CreateTask {
            task_id: task_id.clone(),
            context_id,
            owner: who.clone(),
            message,
            at: Timestamp::now(),
            extension: None,
            awaiting_assignee: None,
        };
        let keys = Keys {
            message: None,
            idempotency: idempotency
                .as_ref()
                .map(|(key, fingerprint)| IdempotencyRecord {
                    owner: who.clone(),
                    key: key.clone(),
                    fingerprint: fingerprint.clone(),
                    task_id: task_id.clone(),
                }),
        };
        let created = self
            .commit(Actor::Client(who), &task_id, Target::New, keys, |_| {
                let mut cmds = vec![TaskCommand::CreateTask(create.clone())];
                cmds.extend(push.iter().map(|config| TaskCommand::SetPushConfig {
                    config: config.clone(),
                    at: Timestamp::now(),
                }));
                cmds
            })
            .await;
        match created {
            Ok(c) => Ok((task_id, Some(c.state))),
            Err(AppError::Store(StoreError::IdempotencyKeyUsed {
                task_id: existing,
                fingerprint,
            })) => {
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
            Err(e) => Err(e),
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
            // Changes made by another process (the worker Lambda) announce nothing here: look
            // again at least every SETTLE_POLL.
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
}
