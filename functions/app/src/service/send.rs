//! SendMessage: a message creates a task or continues one (a retried message or creation is
//! recognised and answered as before), then a blocking send waits for the task to settle.

use std::sync::Arc;
use std::time::Duration;

use taskledger_domain::error::DomainError;
use taskledger_domain::extensions::dmp::WorkRequest;
use taskledger_domain::extensions::hitl;
use taskledger_domain::ids::{
    ContextId, HistoryLength, IdempotencyKey, MessageId, Principal, TaskId,
};
use taskledger_domain::ports::{IdempotencyRecord, MessageKey, StoreError};
use taskledger_domain::projection::first_commit_view;
use taskledger_domain::push::PushConfigSpec;
use taskledger_domain::task::intake;
use taskledger_domain::task::{
    AnswerGate, AnswerToolApproval, AppendUserMessage, CreateTask, HandoffWork, ProposeHandoff,
    TaskAggregate, TaskCommand, TaskEvent,
};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Message, SendMessageRequest, SendMessageResponse};
use tokio::sync::broadcast;
use tracing::debug;

use super::ledger::Keys;
use super::{task_id_of, Actor, Change, Service};
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
    committed: Option<Arc<TaskAggregate>>,
    /// The events of a new task's first commit (none for a message to an existing task).
    first: Option<Vec<TaskEvent>>,
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
        let settled = match sub.since {
            Some((version, true)) if !sub.return_immediately => {
                let known = sub.committed.clone();
                Some(self.wait_settled(task_id, version, known).await?)
            }
            // A retry: answer with the task as it settles, like the original request did.
            None if !sub.return_immediately => Some(self.wait_settled(task_id, 0, None).await?),
            _ => None,
        };
        // Returning at once with a task just created: its first commit's events say all the
        // read model holds of it (no read of what was just written).
        if let (true, Some(events)) = (sub.return_immediately, sub.first.as_ref()) {
            if let Some(task) = first_commit_view(events, sub.history, true) {
                return Ok(SendMessageResponse::Task(Box::new(task)));
            }
        }
        // The answer shows the state the wait last read, or the one the commit left: no
        // read-back of either.
        let state = settled.or(sub.committed);
        let task = match state.as_ref().and_then(|s| s.head()) {
            Some(head) => self.answer_from(who, head, sub.history).await?,
            None => self.view(who, task_id, sub.history, true).await?,
        };
        Ok(SendMessageResponse::Task(Box::new(task)))
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
            .map_err(|e| AppError::invalid_params("configuration.historyLength", e))?
            .at_most_max();
        let push = match &config.task_push_notification_config {
            None => None,
            Some(c) => Some(self.push_spec(c, "configuration.taskPushNotificationConfig")?),
        };
        let message = req.message;
        let message_id = intake::validate_user_message(&message, "message")?;
        // Behind an upstream agent, the modes the card states are those of ours it takes too.
        if let Some(theirs) = self.agent().advertised().map(|a| a.input_modes) {
            let modes = intake::input_modes(&theirs);
            let modes: Vec<&str> = modes.iter().map(String::as_str).collect();
            intake::check_input_modes(&message, "message", &modes)?;
        }

        let (task_id, since, committed, first) = match message.task_id.clone() {
            Some(raw) => {
                let task_id = task_id_of(&raw)?;
                let guard = config
                    .if_generation_match
                    .map(|expected| TaskCommand::RequireGeneration { expected });
                match self
                    .append_user_message(who, &task_id, &message_id, message.clone(), push, guard)
                    .await?
                {
                    Some((state, events)) => {
                        let wake = events
                            .iter()
                            .any(|e| matches!(e, TaskEvent::AgentWorkRequested { .. }));
                        (task_id, Some((state.version, wake)), Some(state), None)
                    }
                    None => (task_id, None, None, None),
                }
            }
            None => {
                // DMP work/v1 (read only when the client activated it): a handoff opens a
                // draft, a status request is answered at once.
                let handoff = match WorkRequest::from_metadata(message.metadata.as_ref())
                    .map_err(DomainError::from)?
                {
                    Some(WorkRequest::Status { task }) => {
                        return Ok(Submission::Direct(self.work_status(who, task).await?))
                    }
                    Some(WorkRequest::Handoff(h)) => Some(HandoffWork::from(&h)),
                    None => None,
                };
                if handoff.is_none() {
                    if let Some(reply) = self.agent.direct_reply(&message) {
                        return Ok(Submission::Direct(reply));
                    }
                }
                // A proposal asks nothing of the agent: nothing to wait for.
                let wake = handoff.is_none();
                self.admit_task(who)?;
                let (task_id, state) = self
                    .create_task(who, message.clone(), idempotency, push, handoff)
                    .await?;
                tracing::Span::current().record("task_id", task_id.as_str());
                let version = state.as_ref().map(|(s, _)| (s.version, wake));
                let (state, first) = state.unzip();
                (task_id, version, state, first)
            }
        };
        Ok(Submission::Task(Box::new(Submitted {
            task_id,
            since,
            committed,
            first,
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
        guard: Option<TaskCommand>,
    ) -> Result<Option<(Arc<TaskAggregate>, Vec<TaskEvent>)>, AppError> {
        let key = MessageKey {
            task_id: task_id.clone(),
            message_id: message_id.clone(),
            fingerprint: intake::fingerprint(&message),
        };
        // A DMP answer to one of the task's gates is decided as that, not as new input.
        let answer = match taskledger_domain::task::answer_of(&message).transpose()? {
            Some((gate_id, choice)) => Some(AnswerGate {
                gate_id,
                choice,
                by: taskledger_domain::extensions::harness::sender_of(&message, "message")?,
                message: message.clone(),
                at: Timestamp::now(),
                caller: Some(who.clone()),
            }),
            None => None,
        };
        // A hitl/v1 tool_approval_response decides the open tool-approval gate.
        let approval = match hitl::response_of(&message).transpose()? {
            Some(hitl::Response::ToolApproval(approvals)) => Some(AnswerToolApproval {
                approvals,
                by: taskledger_domain::extensions::harness::sender_of(&message, "message")?,
                message: message.clone(),
                at: Timestamp::now(),
                caller: Some(who.clone()),
            }),
            _ => None,
        };
        let result = self
            .execute(
                Change::to(Actor::Client(who), task_id).message_key(key),
                |_| {
                    // A condition on the task goes first; then a config given with the message
                    // is registered: it sees what follows.
                    let mut cmds: Vec<TaskCommand> = guard.iter().cloned().collect();
                    cmds.extend(push.iter().map(|config| TaskCommand::SetPushConfig {
                        config: config.clone(),
                        at: Timestamp::now(),
                        by: Some(who.clone()),
                    }));
                    cmds.push(match (&answer, &approval) {
                        (Some(a), _) => TaskCommand::AnswerGate(Box::new(a.clone())),
                        (None, Some(a)) => TaskCommand::AnswerToolApproval(Box::new(a.clone())),
                        (None, None) => TaskCommand::AppendUserMessage(AppendUserMessage {
                            message: message.clone(),
                            at: Timestamp::now(),
                            caller: Some(who.clone()),
                        }),
                    });
                    cmds
                },
            )
            .await;
        match result {
            Ok(c) => Ok(Some((c.state, c.events))),
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
        handoff: Option<HandoffWork>,
    ) -> Result<(TaskId, Option<(Arc<TaskAggregate>, Vec<TaskEvent>)>), AppError> {
        let context_id = match message.context_id.clone() {
            Some(c) => {
                ContextId::parse(c).map_err(|e| AppError::invalid_params("message.contextId", e))?
            }
            // Time-ordered like task ids: a new context lands at the end of the by-context
            // index instead of on a random page of it.
            None => ContextId::parse(uuid::Uuid::now_v7().to_string())
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
            trace: None,
        };
        let created = self
            .execute(
                Change::to(Actor::Client(who), &task_id).creating(keys),
                |_| {
                    let first = match &handoff {
                        Some(work) => TaskCommand::ProposeHandoff(Box::new(ProposeHandoff {
                            task_id: create.task_id.clone(),
                            context_id: create.context_id.clone(),
                            owner: create.owner.clone(),
                            message: create.message.clone(),
                            work: work.clone(),
                            at: create.at,
                        })),
                        None => TaskCommand::CreateTask(create.clone()),
                    };
                    let mut cmds = vec![first];
                    cmds.extend(push.iter().map(|config| TaskCommand::SetPushConfig {
                        config: config.clone(),
                        at: Timestamp::now(),
                        by: Some(who.clone()),
                    }));
                    cmds
                },
            )
            .await;
        match created {
            Ok(c) => Ok((task_id, Some((c.state, c.events)))),
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
    async fn wait_settled(
        &self,
        task_id: &TaskId,
        since: u64,
        known: Option<Arc<TaskAggregate>>,
    ) -> Result<Arc<TaskAggregate>, AppError> {
        let bound = self.settings.blocking_timeout;
        self.wait_for(task_id, bound, known, |s| s.settled_since(since))
            .await
    }

    /// Waits until `done` holds for the task (starting from `known` when the caller holds its
    /// latest state), or `bound` passes, and returns the state it last read: woken by commits announced in this process, and looking again every
    /// `SETTLE_POLL` for those of others.
    pub(super) async fn wait_for(
        &self,
        task_id: &TaskId,
        bound: Duration,
        mut known: Option<Arc<TaskAggregate>>,
        done: impl Fn(&TaskAggregate) -> bool,
    ) -> Result<Arc<TaskAggregate>, AppError> {
        let mut changes = self.changes.subscribe();
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            // The state the caller already holds (just committed) spares the first read.
            let state = match known.take() {
                Some(s) => s,
                None => self
                    .ledger
                    .current(task_id)
                    .await?
                    .ok_or_else(|| AppError::task_not_found(task_id.as_str()))?,
            };
            if done(&state) {
                return Ok(state);
            }
            // Changes made by another process (the worker Lambda) announce nothing here: look
            // again at least every SETTLE_POLL.
            let next_look = (tokio::time::Instant::now() + SETTLE_POLL).min(deadline);
            loop {
                match tokio::time::timeout_at(next_look, changes.recv()).await {
                    Err(_) if next_look >= deadline => return Ok(state),
                    Err(_) => break,
                    Ok(Ok(c)) if &c.task_id == task_id => break,
                    Ok(Ok(_)) => continue,
                    Ok(Err(broadcast::error::RecvError::Lagged(_))) => break,
                    Ok(Err(broadcast::error::RecvError::Closed)) => return Ok(state),
                }
            }
        }
    }
}
