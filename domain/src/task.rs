//! The Task aggregate: commands in, events out (`decide`), events folded into state (`apply`).
//! Pure and synchronous; ids and the clock come in with the command.

use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};

use crate::error::DomainError;
use crate::ids::{ArtifactId, ContextId, Principal, TaskId};
use crate::intake::{self, TASK_CREATED_AT_KEY};
use crate::time::{nanos, Timestamp};
use crate::wire::{Artifact, Message, Metadata, Part, TaskState, TaskStatus};

/// Most artifacts one task may hold (the head lists them, so it stays small).
pub const MAX_ARTIFACTS_PER_TASK: usize = 256;
/// Most chunks one artifact may be streamed in.
pub const MAX_CHUNKS_PER_ARTIFACT: u32 = 10_000;

/// Version of the event payload shapes written today (see `upcast`).
pub const EVENT_VERSION: &str = "1.0";

// ------------------------------------------------------------------ commands

/// A client starts a task with its first message.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateTask {
    pub task_id: TaskId,
    pub context_id: ContextId,
    pub owner: Principal,
    pub message: Message,
    pub at: Timestamp,
}

/// A client sends a message to an existing task.
#[derive(Debug, Clone, PartialEq)]
pub struct AppendUserMessage {
    pub message: Message,
    pub at: Timestamp,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TaskCommand {
    CreateTask(CreateTask),
    AppendUserMessage(AppendUserMessage),
    /// The agent says something (kept in history).
    AppendAgentMessage {
        message: Message,
        at: Timestamp,
    },
    /// The agent moves the task to a new state, optionally with a status message.
    ChangeStatus {
        state: TaskState,
        message: Option<Message>,
        at: Timestamp,
    },
    /// The agent adds an artifact, or a chunk of one (`append`).
    AddArtifact {
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
        at: Timestamp,
    },
    /// A client cancels the task.
    CancelTask {
        at: Timestamp,
    },
}

// ------------------------------------------------------------------ events

/// What happened to a task. Serialized externally tagged (`{"MessageAppended": {…}}`) with
/// type and version stored beside it, so old shapes can be upcast.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum TaskEvent {
    TaskCreated {
        task_id: TaskId,
        context_id: ContextId,
        owner: Principal,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    MessageAppended {
        message: Message,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    StatusChanged {
        state: TaskState,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<Message>,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    ArtifactAdded {
        artifact: Artifact,
        last_chunk: bool,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    ArtifactChunkAppended {
        artifact_id: ArtifactId,
        parts: Vec<Part>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Metadata>,
        last_chunk: bool,
        #[serde(with = "nanos")]
        at: Timestamp,
    },
    TaskCanceled {
        #[serde(with = "nanos")]
        at: Timestamp,
    },
}

impl TaskEvent {
    pub fn name(&self) -> &'static str {
        match self {
            Self::TaskCreated { .. } => "TaskCreated",
            Self::MessageAppended { .. } => "MessageAppended",
            Self::StatusChanged { .. } => "StatusChanged",
            Self::ArtifactAdded { .. } => "ArtifactAdded",
            Self::ArtifactChunkAppended { .. } => "ArtifactChunkAppended",
            Self::TaskCanceled { .. } => "TaskCanceled",
        }
    }
}

impl DomainEvent for TaskEvent {
    fn event_type(&self) -> String {
        self.name().to_string()
    }
    fn event_version(&self) -> String {
        EVENT_VERSION.to_string()
    }
}

// ------------------------------------------------------------------ state

/// What the head remembers of an artifact (its content lives in the read model).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactHead {
    pub artifact_id: ArtifactId,
    /// Chunks written so far (the first one is chunk 0).
    pub chunks: u32,
    /// A chunk marked `lastChunk` arrived: no more appends.
    pub closed: bool,
}

/// The current state of a created task, small whatever its history (the snapshot).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskHead {
    pub id: TaskId,
    pub context_id: ContextId,
    pub owner: Principal,
    #[serde(with = "nanos")]
    pub created_at: Timestamp,
    pub status: TaskStatus,
    /// Version of the event that last changed the status.
    pub status_version: u64,
    pub metadata: Metadata,
    pub artifacts: Vec<ArtifactHead>,
    /// Messages in history so far.
    pub history_len: u64,
    /// The last timeline stamp handed out; the next one is strictly later.
    #[serde(with = "nanos")]
    pub last_timeline: Timestamp,
}

/// The aggregate: `None` until created. `version` counts applied events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskAggregate {
    pub version: u64,
    pub head: Option<TaskHead>,
}

impl TaskHead {
    fn next_stamp(&self, at: Timestamp) -> Timestamp {
        if at > self.last_timeline {
            at
        } else {
            self.last_timeline.next_nano()
        }
    }

    /// Gives an agent message its task, context and timeline stamp.
    fn own_message(&self, mut m: Message, at: Timestamp) -> Message {
        intake::strip_server_keys(&mut m.metadata);
        intake::stamp_timeline(&mut m.metadata, at);
        m.task_id = Some(self.id.to_string());
        m.context_id = Some(self.context_id.to_string());
        m
    }
}

impl TaskAggregate {
    pub fn head(&self) -> Option<&TaskHead> {
        self.head.as_ref()
    }

    /// The decision: which events a command causes, or why it is refused. Changes nothing.
    pub fn decide(&self, command: TaskCommand) -> Result<Vec<TaskEvent>, DomainError> {
        if let TaskCommand::CreateTask(c) = command {
            return self.decide_create(c);
        }
        let head = self
            .head
            .as_ref()
            .ok_or_else(|| DomainError::TaskNotFound {
                task_id: String::new(),
            })?;
        let state = head.status.state;
        match command {
            TaskCommand::CreateTask(_) => unreachable_create(),
            TaskCommand::AppendUserMessage(c) => {
                if state.is_terminal() {
                    return Err(DomainError::TaskTerminal {
                        task_id: head.id.to_string(),
                        state,
                    });
                }
                intake::validate_user_message(&c.message, "message")?;
                if let Some(ctx) = c.message.context_id.as_deref() {
                    if ctx != head.context_id.as_str() {
                        return Err(DomainError::invalid(
                            "message.contextId",
                            format!(
                                "does not match the context {} of task {}",
                                head.context_id, head.id
                            ),
                        ));
                    }
                }
                let at = head.next_stamp(c.at);
                Ok(vec![TaskEvent::MessageAppended {
                    message: head.own_message(c.message, at),
                    at,
                }])
            }
            TaskCommand::AppendAgentMessage { message, at } => {
                refuse_if_terminal(head)?;
                intake::validate_agent_message(&message, "message")?;
                let at = head.next_stamp(at);
                Ok(vec![TaskEvent::MessageAppended {
                    message: head.own_message(message, at),
                    at,
                }])
            }
            TaskCommand::ChangeStatus {
                state: new_state,
                message,
                at,
            } => {
                refuse_if_terminal(head)?;
                if new_state == TaskState::Unspecified {
                    return Err(DomainError::invalid("status.state", "must be set"));
                }
                if new_state == TaskState::Canceled {
                    return Err(DomainError::invalid(
                        "status.state",
                        "a task is canceled with CancelTask",
                    ));
                }
                let at = head.next_stamp(at);
                let message = match message {
                    Some(m) => {
                        intake::validate_agent_message(&m, "status.message")?;
                        Some(head.own_message(m, at))
                    }
                    None => None,
                };
                Ok(vec![TaskEvent::StatusChanged {
                    state: new_state,
                    message,
                    at,
                }])
            }
            TaskCommand::AddArtifact {
                mut artifact,
                append,
                last_chunk,
                at,
            } => {
                refuse_if_terminal(head)?;
                let id = ArtifactId::parse(artifact.artifact_id.clone())
                    .map_err(|e| DomainError::invalid("artifact.artifactId", e))?;
                if artifact.parts.is_empty() {
                    return Err(DomainError::invalid(
                        "artifact.parts",
                        "an artifact needs at least one part",
                    ));
                }
                let existing = head.artifacts.iter().find(|a| a.artifact_id == id);
                let at = head.next_stamp(at);
                match (append, existing) {
                    (true, Some(a)) => {
                        if a.closed {
                            return Err(DomainError::invalid(
                                "artifact.artifactId",
                                format!("artifact {id} already received its last chunk"),
                            ));
                        }
                        if a.chunks >= MAX_CHUNKS_PER_ARTIFACT {
                            return Err(DomainError::invalid(
                                "artifact.parts",
                                format!(
                                    "an artifact may have at most {MAX_CHUNKS_PER_ARTIFACT} chunks"
                                ),
                            ));
                        }
                        intake::strip_server_keys(&mut artifact.metadata);
                        Ok(vec![TaskEvent::ArtifactChunkAppended {
                            artifact_id: id,
                            parts: artifact.parts,
                            metadata: artifact.metadata,
                            last_chunk,
                            at,
                        }])
                    }
                    _ => {
                        if existing.is_none() && head.artifacts.len() >= MAX_ARTIFACTS_PER_TASK {
                            return Err(DomainError::invalid(
                                "artifact",
                                format!(
                                    "a task may have at most {MAX_ARTIFACTS_PER_TASK} artifacts"
                                ),
                            ));
                        }
                        intake::strip_server_keys(&mut artifact.metadata);
                        intake::stamp_timeline(&mut artifact.metadata, at);
                        Ok(vec![TaskEvent::ArtifactAdded {
                            artifact,
                            last_chunk,
                            at,
                        }])
                    }
                }
            }
            TaskCommand::CancelTask { at } => match state {
                // A repeated cancel is answered with the canceled task, nothing new happens.
                TaskState::Canceled => Ok(vec![]),
                s if s.is_terminal() => Err(DomainError::TaskNotCancelable {
                    task_id: head.id.to_string(),
                    state: s,
                }),
                _ => Ok(vec![TaskEvent::TaskCanceled {
                    at: head.next_stamp(at),
                }]),
            },
        }
    }

    fn decide_create(&self, c: CreateTask) -> Result<Vec<TaskEvent>, DomainError> {
        if let Some(h) = &self.head {
            return Err(DomainError::TaskAlreadyExists {
                task_id: h.id.to_string(),
            });
        }
        intake::validate_user_message(&c.message, "message")?;
        let mut message = c.message;
        intake::strip_server_keys(&mut message.metadata);
        intake::stamp_timeline(&mut message.metadata, c.at);
        message.task_id = Some(c.task_id.to_string());
        message.context_id = Some(c.context_id.to_string());
        Ok(vec![
            TaskEvent::TaskCreated {
                task_id: c.task_id,
                context_id: c.context_id,
                owner: c.owner,
                at: c.at,
            },
            TaskEvent::MessageAppended { message, at: c.at },
        ])
    }

    /// Folds one event into the state. No rules here: events are facts.
    pub fn apply_event(&mut self, event: &TaskEvent) {
        self.version += 1;
        let version = self.version;
        if let TaskEvent::TaskCreated {
            task_id,
            context_id,
            owner,
            at,
        } = event
        {
            let mut metadata = Metadata::new();
            metadata.insert(
                TASK_CREATED_AT_KEY.into(),
                serde_json::Value::String(at.to_rfc3339_nanos()),
            );
            self.head = Some(TaskHead {
                id: task_id.clone(),
                context_id: context_id.clone(),
                owner: owner.clone(),
                created_at: *at,
                status: TaskStatus {
                    state: TaskState::Submitted,
                    message: None,
                    timestamp: Some(*at),
                },
                status_version: version,
                metadata,
                artifacts: Vec::new(),
                history_len: 0,
                last_timeline: *at,
            });
            return;
        }
        let Some(head) = self.head.as_mut() else {
            return;
        };
        match event {
            TaskEvent::TaskCreated { .. } => {}
            TaskEvent::MessageAppended { at, .. } => {
                head.history_len += 1;
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::StatusChanged { state, message, at } => {
                if message.is_some() {
                    head.history_len += 1;
                }
                head.status = TaskStatus {
                    state: *state,
                    message: message.clone(),
                    timestamp: Some(*at),
                };
                head.status_version = version;
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::ArtifactAdded {
                artifact,
                last_chunk,
                at,
            } => {
                let id = ArtifactId::parse(artifact.artifact_id.clone());
                if let Ok(id) = id {
                    let entry = ArtifactHead {
                        artifact_id: id.clone(),
                        chunks: 1,
                        closed: *last_chunk,
                    };
                    match head.artifacts.iter_mut().find(|a| a.artifact_id == id) {
                        Some(a) => *a = entry,
                        None => head.artifacts.push(entry),
                    }
                }
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::ArtifactChunkAppended {
                artifact_id,
                last_chunk,
                at,
                ..
            } => {
                if let Some(a) = head
                    .artifacts
                    .iter_mut()
                    .find(|a| &a.artifact_id == artifact_id)
                {
                    a.chunks += 1;
                    a.closed = *last_chunk;
                }
                head.last_timeline = head.last_timeline.max(*at);
            }
            TaskEvent::TaskCanceled { at } => {
                head.status = TaskStatus {
                    state: TaskState::Canceled,
                    message: None,
                    timestamp: Some(*at),
                };
                head.status_version = version;
                head.last_timeline = head.last_timeline.max(*at);
            }
        }
    }

    /// True once the task has reached a terminal or interrupted state after `since`:
    /// what a blocking SendMessage waits for.
    pub fn settled_since(&self, since: u64) -> bool {
        self.head.as_ref().is_some_and(|h| {
            h.status.state.is_terminal()
                || (h.status.state.is_interrupted() && h.status_version > since)
        })
    }
}

fn refuse_if_terminal(head: &TaskHead) -> Result<(), DomainError> {
    let state = head.status.state;
    if state.is_terminal() {
        return Err(DomainError::TaskTerminal {
            task_id: head.id.to_string(),
            state,
        });
    }
    Ok(())
}

fn unreachable_create() -> Result<Vec<TaskEvent>, DomainError> {
    Err(DomainError::UnsupportedOperation(
        "task creation is decided separately".into(),
    ))
}

impl Aggregate for TaskAggregate {
    const TYPE: &'static str = "task";
    type Command = TaskCommand;
    type Event = TaskEvent;
    type Error = DomainError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _services: &Self::Services,
        sink: &cqrs_es::event_sink::EventSink<Self>,
    ) -> Result<(), Self::Error> {
        for event in self.decide(command)? {
            sink.write(event, self).await;
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        self.apply_event(&event);
    }
}
