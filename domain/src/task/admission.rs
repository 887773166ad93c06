//! The one gate every event passes before it is stored, whatever brought it: a command's
//! decision (which keeps these rules by construction — the ledger checks it anyway) or an
//! archive's line (which keeps nothing by construction). It holds an event to the aggregate's
//! rules on the state it follows: a task is created once and first; its times lie between the
//! Unix epoch and a little past now; nothing but subscriptions, usage and a handoff's own
//! projection follows a finished task; a status moves only where `decide` moves it; messages,
//! artifacts and history stay inside the intake's bounds; participants and roles change only
//! by an admin; a push config is one `PushConfigSpec::parse` would have made.
//!
//! What it cannot know from an event alone — who really sent it, beyond the `by` it names —
//! is what a signed archive vouches for (`archive`).

use crate::extensions::harness::TaskExtensionData;
use crate::push::AddressPolicy;
use crate::time::Timestamp;
use crate::wire::{json_size, Artifact, Message, Part, TaskState};

use super::events::TaskEvent;
use super::head::{TaskAggregate, TaskHead};
use super::intake::{MAX_MESSAGE_METADATA_BYTES, MAX_PARTS_PER_MESSAGE};
use super::{handoff_status, participants, MAX_ARTIFACTS_PER_TASK, MAX_CHUNKS_PER_ARTIFACT};
use super::{MAX_HISTORY_BYTES, MAX_HISTORY_MESSAGES};

/// The largest message or artifact chunk stored, as JSON: what one request body may carry.
pub const MAX_STORED_MESSAGE_BYTES: usize = 1024 * 1024;
/// The largest task envelope stored, as JSON: what a client may send (`MAX_ENVELOPE_BYTES`)
/// with room for what the server keeps in it (sub-task links, lifecycle).
pub const MAX_STORED_ENVELOPE_BYTES: usize = 4 * crate::extensions::harness::MAX_ENVELOPE_BYTES;
/// How far past the gate's clock an event's time may lie (clocks of the processes that decide
/// disagree a little; an event from next year is not one of ours).
pub const MAX_CLOCK_AHEAD_SECS: i64 = 24 * 3600;

/// What the gate checks against besides the state: its clock and the webhook address policy.
#[derive(Debug, Clone)]
pub struct Admission {
    pub now: Timestamp,
    pub addresses: AddressPolicy,
}

impl Admission {
    pub fn new(now: Timestamp, addresses: AddressPolicy) -> Self {
        Self { now, addresses }
    }

    /// The earliest time an event may carry: the Unix epoch (stores keep times as nanoseconds
    /// since it).
    pub fn earliest() -> Timestamp {
        Timestamp::from_unix_nanos(0)
    }

    fn latest(&self) -> Timestamp {
        self.now.plus_secs(MAX_CLOCK_AHEAD_SECS)
    }

    fn check_time(&self, what: &str, t: Timestamp) -> Result<(), String> {
        if t < Self::earliest() || t > self.latest() {
            return Err(format!(
                "{what} {} is outside the times a task's events hold ({} to a day past now, {})",
                t.to_rfc3339_millis(),
                Self::earliest().to_rfc3339_millis(),
                self.now.to_rfc3339_millis()
            ));
        }
        Ok(())
    }
}

impl TaskEvent {
    /// The time the event says it happened (a gate's opening for `GateRaised`).
    pub fn at(&self) -> Timestamp {
        use TaskEvent::*;
        match self {
            GateRaised { gate } => gate.opened_at,
            TaskCreated { at, .. }
            | MessageAppended { at, .. }
            | StatusChanged { at, .. }
            | ArtifactAdded { at, .. }
            | ArtifactChunkAppended { at, .. }
            | TaskCanceled { at }
            | ExtensionUpdated { at, .. }
            | MessageRefused { at, .. }
            | ModelChanged { at, .. }
            | ReasoningEffortChanged { at, .. }
            | ParticipantRoleChanged { at, .. }
            | PlanCreated { at, .. }
            | StepStarted { at, .. }
            | StepCompleted { at, .. }
            | StepFailed { at, .. }
            | SubTaskSpawned { at, .. }
            | ChildStateRecorded { at, .. }
            | HelpRequested { at, .. }
            | HelpAnswered { at, .. }
            | AgentWorkRequested { at, .. }
            | SkillLoaded { at, .. }
            | SkillUnloaded { at, .. }
            | AgentTurnFinished { at, .. }
            | UsageRecorded { at, .. }
            | ParticipantTaskOpened { at, .. }
            | PushConfigSet { at, .. }
            | HandoffProposed { at, .. }
            | WorkAdvanced { at, .. }
            | GateAnswered { at, .. }
            | PushConfigDeleted { at, .. }
            | ExecutionContinued { at, .. }
            | AccessRevoked { at, .. }
            | SubTasksAwaited { at, .. }
            | UpstreamRecorded { at, .. } => *at,
        }
    }
}

impl TaskAggregate {
    /// Whether `event`, recorded at `recorded_at`, may follow this state; why not, if not.
    pub fn admit(
        &self,
        event: &TaskEvent,
        recorded_at: Timestamp,
        gate: &Admission,
    ) -> Result<(), String> {
        gate.check_time("its recorded time", recorded_at)?;
        gate.check_time("its time", event.at())?;
        let head = match (&self.head, event) {
            (None, TaskEvent::TaskCreated { .. }) => return Ok(()),
            (None, e) => return Err(format!("a {} before the task was created", e.name())),
            (Some(h), TaskEvent::TaskCreated { .. }) => {
                return Err(format!("task {} is created a second time", h.id))
            }
            (Some(h), _) => h,
        };
        if head.status.state.is_terminal() && !after_the_end(head, event) {
            return Err(format!(
                "a {} after task {} finished ({})",
                event.name(),
                head.id,
                head.status.state.as_str()
            ));
        }
        admit_on(head, event, gate)
    }
}

/// What may follow a finished task: its subscriptions changing, usage counted late, access
/// revoked, and a handoff's own projection (its work item moves on after its task ends).
fn after_the_end(head: &TaskHead, event: &TaskEvent) -> bool {
    use TaskEvent::*;
    match event {
        PushConfigSet { .. } | PushConfigDeleted { .. } | AccessRevoked { .. } => true,
        UsageRecorded { .. } => true,
        WorkAdvanced { .. } | GateRaised { .. } | GateAnswered { .. } | ArtifactAdded { .. } => {
            head.handoff.is_some()
        }
        StatusChanged { state, .. } => {
            head.handoff.is_some() && handoff_status::shown(head).state == *state
        }
        _ => false,
    }
}

fn admit_on(head: &TaskHead, event: &TaskEvent, gate: &Admission) -> Result<(), String> {
    use TaskEvent::*;
    match event {
        MessageAppended {
            message, acted_by, ..
        } => {
            let size = bounded_message(message)? as u64;
            if head.history_len >= MAX_HISTORY_MESSAGES {
                return Err(format!(
                    "task {} holds {MAX_HISTORY_MESSAGES} messages, the most it may",
                    head.id
                ));
            }
            if head.history_bytes.saturating_add(size) > MAX_HISTORY_BYTES {
                return Err(format!(
                    "task {}'s history would pass {MAX_HISTORY_BYTES} bytes",
                    head.id
                ));
            }
            match acted_by {
                Some(who) if !head.administered_by(who) => Err(format!(
                    "{who} sent a message for another participant without administering task {}",
                    head.id
                )),
                _ => Ok(()),
            }
        }
        StatusChanged { state, message, .. } => {
            if let Some(m) = message {
                bounded_message(m)?;
            }
            status_change(head, *state)
        }
        HelpRequested { message, .. } => bounded_message(message).map(|_| ()),
        TaskCanceled { .. } => Ok(()),
        ArtifactAdded { artifact, .. } => new_artifact(head, artifact),
        ArtifactChunkAppended {
            artifact_id, parts, ..
        } => {
            bounded_parts(parts)?;
            match head
                .artifacts
                .iter()
                .find(|a| a.artifact_id == *artifact_id)
            {
                None => Err(format!(
                    "a chunk of artifact {artifact_id}, which it does not have"
                )),
                Some(a) if a.closed => Err(format!(
                    "a chunk of artifact {artifact_id} after its last chunk"
                )),
                Some(a) if a.chunks >= MAX_CHUNKS_PER_ARTIFACT => Err(format!(
                    "artifact {artifact_id} would have more than {MAX_CHUNKS_PER_ARTIFACT} chunks"
                )),
                Some(_) => Ok(()),
            }
        }
        ParticipantRoleChanged {
            participant_id, by, ..
        } => {
            let data = head
                .ext
                .as_ref()
                .ok_or_else(|| format!("task {} has no participants", head.id))?;
            participants::require_admin(data, by.as_ref(), "role").map_err(|e| e.to_string())?;
            if data.participant(participant_id.as_str()).is_none() {
                return Err(format!(
                    "{participant_id} is not a participant of task {}",
                    head.id
                ));
            }
            Ok(())
        }
        ExtensionUpdated { data, by, .. } => extension_change(head, data, by.as_ref()),
        UpstreamRecorded { upstream, .. } => super::upstream::admit(head, upstream),
        PushConfigSet { config, .. } => {
            let wire = crate::wire::TaskPushNotificationConfig {
                tenant: None,
                id: Some(config.id.clone()),
                task_id: None,
                url: config.url.clone(),
                token: None,
                authentication: None,
                protocol: config.protocol,
            };
            crate::push::PushConfigSpec::parse(&wire, &config.id, &gate.addresses, "config")
                .map_err(|e| e.to_string())?;
            if let Some(o) = config.owner.as_ref().filter(|o| !head.visible_to(o)) {
                return Err(format!(
                    "a push config of {o}, who does not see task {}",
                    head.id
                ));
            }
            let by = config.owner.as_ref().unwrap_or(&head.owner);
            super::subscriptions::room_for(head, by, &config.id).map_err(|e| e.to_string())
        }
        _ => Ok(()),
    }
}

/// A status moves only where a decision moves it: never to UNSPECIFIED, to CANCELED only by
/// `TaskCanceled`, to COMPLETED only with every sub-task resolved.
fn status_change(head: &TaskHead, state: TaskState) -> Result<(), String> {
    match state {
        TaskState::Unspecified => Err("a status change to no state".into()),
        TaskState::Canceled => {
            Err("a status change to CANCELED (a task is canceled by TaskCanceled)".into())
        }
        TaskState::Completed if head.handoff.is_none() => {
            match head.unresolved_children().first() {
                Some(open) => Err(format!(
                    "task {} completes while sub-task {open} is unresolved",
                    head.id
                )),
                None => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

fn new_artifact(head: &TaskHead, artifact: &Artifact) -> Result<(), String> {
    crate::ids::ArtifactId::parse(artifact.artifact_id.clone())
        .map_err(|e| format!("artifactId: {e}"))?;
    if artifact.parts.is_empty() {
        return Err("an artifact without parts".into());
    }
    bounded_parts(&artifact.parts)?;
    if json_size(artifact) > MAX_STORED_MESSAGE_BYTES {
        return Err(format!(
            "artifact {} is past {MAX_STORED_MESSAGE_BYTES} bytes",
            artifact.artifact_id
        ));
    }
    let known = head
        .artifacts
        .iter()
        .any(|a| a.artifact_id.as_str() == artifact.artifact_id);
    if !known && head.artifacts.len() >= MAX_ARTIFACTS_PER_TASK {
        return Err(format!(
            "task {} would have more than {MAX_ARTIFACTS_PER_TASK} artifacts",
            head.id
        ));
    }
    Ok(())
}

/// The envelope changes as `messages::envelope` lets it: participants and tool approvals only
/// by an admin, never without an admin, and the sub-task links only by spawning.
fn extension_change(
    head: &TaskHead,
    data: &TaskExtensionData,
    by: Option<&crate::ids::ParticipantId>,
) -> Result<(), String> {
    let size = json_size(data);
    if size > MAX_STORED_ENVELOPE_BYTES {
        return Err(format!(
            "the task envelope is {size} bytes, past {MAX_STORED_ENVELOPE_BYTES}"
        ));
    }
    let Some(current) = &head.ext else {
        return Ok(());
    };
    if data.participants != current.participants {
        participants::may_replace(current, &data.participants, by).map_err(|e| e.to_string())?;
    }
    if data.approve_tools != current.approve_tools {
        participants::require_admin(current, by, "approve_tools").map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// A message within the intake's bounds: its size as JSON.
fn bounded_message(m: &Message) -> Result<usize, String> {
    if m.parts.len() > MAX_PARTS_PER_MESSAGE {
        return Err(format!(
            "{} parts, past {MAX_PARTS_PER_MESSAGE}",
            m.parts.len()
        ));
    }
    if let Some(meta) = &m.metadata {
        let size = json_size(meta);
        if size > MAX_MESSAGE_METADATA_BYTES {
            return Err(format!(
                "message {}'s metadata is {size} bytes, past {MAX_MESSAGE_METADATA_BYTES}",
                m.message_id
            ));
        }
    }
    let size = json_size(m);
    if size > MAX_STORED_MESSAGE_BYTES {
        return Err(format!(
            "message {} is {size} bytes, past {MAX_STORED_MESSAGE_BYTES}",
            m.message_id
        ));
    }
    Ok(size)
}

fn bounded_parts(parts: &[Part]) -> Result<(), String> {
    if parts.len() > MAX_PARTS_PER_MESSAGE {
        return Err(format!(
            "{} parts, past {MAX_PARTS_PER_MESSAGE}",
            parts.len()
        ));
    }
    if json_size(parts) > MAX_STORED_MESSAGE_BYTES {
        return Err(format!("parts past {MAX_STORED_MESSAGE_BYTES} bytes"));
    }
    Ok(())
}

#[cfg(test)]
#[path = "admission_tests.rs"]
mod tests;
