//! An upstream agent's events as our commands (ADR 034): a batch of upstream events — a stream's
//! status and artifact updates, a message, or a snapshot of its task (a non-blocking send's
//! answer, a `GetTask` poll, the first event of a resubscription) — becomes one commit: the
//! mirror first (`RecordUpstream`), then each change in order. A batch decided on a task that
//! applied a different number of events than the batch follows is a duplicate (a redelivered
//! turn, a second follower) and decides nothing; a snapshot is compared with the mirror, so
//! reading the same snapshot twice changes nothing. What breaks the protocol — another task's
//! id, an artifact chunk after its last, an event after the upstream task ended, a status going
//! back from a final state, anything past our bounds — is refused with a reason the task's
//! status can say; nothing of the batch is stored then.

use crate::time::Timestamp;
use crate::wire::{
    json_size, Artifact, Message, Role, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState,
    TaskStatus,
};

use super::admission::MAX_STORED_MESSAGE_BYTES;
use super::commands::TaskCommand;
use super::head::TaskHead;
use super::intake::MAX_PARTS_PER_MESSAGE;
use super::mirror::{UpstreamArtifact, UpstreamHead};

/// Most upstream events one batch (one commit) carries.
pub const MAX_UPSTREAM_BATCH: usize = 64;

/// Upstream events read together, to be committed together.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamBatch {
    /// The mirror's count of applied events when the follower read these
    /// (`UpstreamHead::events`).
    pub after: u64,
    /// Our work request whose input these events answer, when the batch is the answer to a send.
    pub forwarded: Option<u64>,
    /// The interface the events came through.
    pub interface: String,
    pub events: Vec<StreamResponse>,
}

/// Why an upstream's events cannot become ours (said in the task's FAILED status).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UpstreamRefusal(pub String);

fn refuse<T>(why: impl Into<String>) -> Result<T, UpstreamRefusal> {
    Err(UpstreamRefusal(why.into()))
}

/// The commands `batch` makes on `head` (none: a duplicate, or nothing new).
pub fn plan(
    head: &TaskHead,
    batch: &UpstreamBatch,
    at: Timestamp,
) -> Result<Vec<TaskCommand>, UpstreamRefusal> {
    if batch.events.len() > MAX_UPSTREAM_BATCH {
        return refuse(format!(
            "the upstream agent sent {} events at once, past {MAX_UPSTREAM_BATCH}",
            batch.events.len()
        ));
    }
    let held = head.upstream.clone();
    let mut mirror = held
        .clone()
        .unwrap_or_else(|| UpstreamHead::new(batch.interface.clone(), at));
    if mirror.events != batch.after {
        return Ok(vec![]);
    }
    let mut out = Planned {
        state: head.status.state,
        commands: Vec::new(),
    };
    for event in &batch.events {
        if mirror.state.is_terminal() {
            return refuse(format!(
                "the upstream agent sent an event after its task ended ({})",
                mirror.state.as_str()
            ));
        }
        match event {
            StreamResponse::Task(t) => snapshot(&mut mirror, &mut out, t)?,
            StreamResponse::Message(m) => message(&mut mirror, &mut out, m)?,
            StreamResponse::StatusUpdate(s) => {
                link(&mut mirror, &s.task_id, &s.context_id)?;
                status(&mut mirror, &mut out, &s.status)?;
            }
            StreamResponse::ArtifactUpdate(a) => {
                link(&mut mirror, &a.task_id, &a.context_id)?;
                artifact_update(&mut mirror, &mut out, a)?;
            }
        }
    }
    // Only events that changed something count: a snapshot read again, a status repeated, is
    // neither progress nor a position a duplicate could be told by.
    if !out.commands.is_empty() {
        mirror.events = batch.after + batch.events.len() as u64;
        mirror.progress_at = at;
    }
    if let Some(w) = batch.forwarded {
        mirror.forwarded = mirror.forwarded.max(w);
    }
    mirror.check().map_err(UpstreamRefusal)?;
    if held.as_ref() == Some(&mirror) {
        return Ok(vec![]);
    }
    let mut commands = vec![TaskCommand::RecordUpstream {
        upstream: Box::new(mirror),
        at,
    }];
    commands.extend(out.commands.into_iter().map(|c| c.at(at)));
    Ok(commands)
}

/// The changes planned so far, and the state they leave our task in.
struct Planned {
    state: TaskState,
    commands: Vec<Change>,
}

/// One change, stamped when the batch is.
enum Change {
    Status(TaskState, Option<Message>),
    Cancel,
    Artifact(Artifact, bool, bool),
    Message(Message),
}

impl Change {
    fn at(self, at: Timestamp) -> TaskCommand {
        match self {
            Change::Status(state, message) => TaskCommand::ChangeStatus { state, message, at },
            Change::Cancel => TaskCommand::CancelTask { at, by: None },
            Change::Artifact(artifact, append, last_chunk) => TaskCommand::AddArtifact {
                artifact,
                append,
                last_chunk,
                at,
            },
            Change::Message(message) => TaskCommand::AppendAgentMessage { message, at },
        }
    }
}

/// The upstream task's ids: the first event names them, every later one must name the same.
fn link(mirror: &mut UpstreamHead, task_id: &str, context_id: &str) -> Result<(), UpstreamRefusal> {
    if task_id.is_empty() {
        return refuse("the upstream agent sent an event without a task id");
    }
    if mirror.task_id.is_empty() {
        mirror.task_id = task_id.to_string();
        mirror.context_id = context_id.to_string();
        return Ok(());
    }
    if mirror.task_id != task_id {
        return refuse(format!(
            "the upstream agent sent an event of task {task_id:.80}, not of the task this one \
             follows ({})",
            mirror.task_id
        ));
    }
    Ok(())
}

/// An upstream message as one of ours: the agent's, with an id, within our bounds.
fn own(mut m: Message, fallback_id: String) -> Result<Message, UpstreamRefusal> {
    m.role = Role::Agent;
    m.task_id = None;
    m.context_id = None;
    m.reference_task_ids.clear();
    if m.message_id.trim().is_empty() {
        m.message_id = fallback_id;
    }
    if m.parts.len() > MAX_PARTS_PER_MESSAGE {
        return refuse(format!(
            "the upstream agent sent a message of {} parts, past {MAX_PARTS_PER_MESSAGE}",
            m.parts.len()
        ));
    }
    let size = json_size(&m);
    if size > MAX_STORED_MESSAGE_BYTES {
        return refuse(format!(
            "the upstream agent sent a message of {size} bytes, past {MAX_STORED_MESSAGE_BYTES}"
        ));
    }
    Ok(m)
}

fn status(
    mirror: &mut UpstreamHead,
    out: &mut Planned,
    s: &TaskStatus,
) -> Result<(), UpstreamRefusal> {
    let state = s.state;
    if state == TaskState::Unspecified {
        return refuse("the upstream agent sent a status without a state");
    }
    let message = s.message.clone().filter(|m| !m.parts.is_empty());
    let message_id = message.as_ref().map(|m| m.message_id.clone());
    if state == mirror.state && (message.is_none() || message_id == mirror.status_message) {
        return Ok(());
    }
    let fallback = format!("upstream-{}-{}", mirror.task_id, mirror.events + 1);
    let message = message.map(|m| own(m, fallback)).transpose()?;
    mirror.state = state;
    mirror.status_message = message.as_ref().map(|m| m.message_id.clone());
    match state {
        TaskState::Canceled => out.commands.push(Change::Cancel),
        // Ours is submitted already: a message of the upstream's is kept, the state is not news.
        TaskState::Submitted if out.state == TaskState::Submitted => {
            if let Some(m) = message {
                out.commands.push(Change::Message(m));
            }
            return Ok(());
        }
        _ => out.commands.push(Change::Status(state, message)),
    }
    out.state = state;
    Ok(())
}

fn message(
    mirror: &mut UpstreamHead,
    out: &mut Planned,
    m: &Message,
) -> Result<(), UpstreamRefusal> {
    let fallback = format!("upstream-message-{}", mirror.events + 1);
    let linked = !mirror.task_id.is_empty();
    if let Some(t) = m.task_id.as_deref().filter(|t| !t.is_empty()) {
        if linked && t != mirror.task_id {
            return refuse(format!(
                "the upstream agent sent a message of task {t:.80}, not of the task this one \
                 follows ({})",
                mirror.task_id
            ));
        }
    }
    let m = own(m.clone(), fallback)?;
    if linked {
        out.commands.push(Change::Message(m));
        return Ok(());
    }
    // A direct reply, no task upstream: it is the answer, and our task is done.
    mirror.state = TaskState::Completed;
    mirror.status_message = Some(m.message_id.clone());
    out.commands
        .push(Change::Status(TaskState::Completed, Some(m)));
    out.state = TaskState::Completed;
    Ok(())
}

fn artifact_update(
    mirror: &mut UpstreamHead,
    out: &mut Planned,
    a: &TaskArtifactUpdateEvent,
) -> Result<(), UpstreamRefusal> {
    let id = a.artifact.artifact_id.clone();
    let parts = a.artifact.parts.len() as u64;
    match (a.append, mirror.artifacts.iter_mut().find(|x| x.id == id)) {
        (true, Some(held)) if held.closed => {
            return refuse(format!(
                "the upstream agent appended to artifact {id:.80} after its last chunk"
            ))
        }
        (true, Some(held)) => {
            held.parts += parts;
            held.closed = a.last_chunk;
        }
        (_, Some(held)) => {
            held.parts = parts;
            held.closed = a.last_chunk;
        }
        (_, None) => mirror.artifacts.push(UpstreamArtifact {
            id,
            parts,
            closed: a.last_chunk,
        }),
    }
    let artifact = bounded_artifact(a.artifact.clone())?;
    out.commands
        .push(Change::Artifact(artifact, a.append, a.last_chunk));
    Ok(())
}

fn bounded_artifact(a: Artifact) -> Result<Artifact, UpstreamRefusal> {
    if a.parts.is_empty() {
        return refuse(format!(
            "the upstream agent sent artifact {:.80} without parts",
            a.artifact_id
        ));
    }
    if a.parts.len() > MAX_PARTS_PER_MESSAGE {
        return refuse(format!(
            "the upstream agent sent {} parts of artifact {:.80} at once, past {MAX_PARTS_PER_MESSAGE}",
            a.parts.len(),
            a.artifact_id
        ));
    }
    let size = json_size(&a);
    if size > MAX_STORED_MESSAGE_BYTES {
        return refuse(format!(
            "the upstream agent sent {size} bytes of artifact {:.80} at once, past \
             {MAX_STORED_MESSAGE_BYTES}",
            a.artifact_id
        ));
    }
    Ok(a)
}

/// A snapshot of the upstream task: what the mirror lacks of its artifacts (new ones, further
/// parts), then its status. History is not read: the agent's messages reach us as status
/// messages, and the user's are ours already.
fn snapshot(mirror: &mut UpstreamHead, out: &mut Planned, t: &Task) -> Result<(), UpstreamRefusal> {
    link(mirror, &t.id, &t.context_id)?;
    let ended = t.status.state.is_terminal();
    for a in t.artifacts.iter().flatten() {
        let have = mirror.artifact(&a.artifact_id).map(|h| h.parts);
        let total = a.parts.len() as u64;
        let update = match have {
            Some(n) if n == total => continue,
            Some(n) if n < total => {
                let mut rest = a.clone();
                rest.parts = a.parts[n as usize..].to_vec();
                (rest, true)
            }
            _ => (a.clone(), false),
        };
        if update.0.parts.is_empty() {
            continue;
        }
        let event = TaskArtifactUpdateEvent {
            task_id: t.id.clone(),
            context_id: t.context_id.clone(),
            artifact: update.0,
            append: update.1,
            last_chunk: ended,
            metadata: None,
            generation: None,
        };
        artifact_update(mirror, out, &event)?;
    }
    status(mirror, out, &t.status)
}

#[cfg(test)]
#[path = "upstream_tests.rs"]
mod tests;
