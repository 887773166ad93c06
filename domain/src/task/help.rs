//! Asking a participant for help: the question (the task waits, INPUT_REQUIRED, for that
//! participant's reply), the reply that answers it, and how both fold into the head.

use crate::error::DomainError;
use crate::extensions::harness;
use crate::extensions::hitl::{self, HITL_URI};
use crate::ids::ParticipantId;
use crate::time::Timestamp;
use crate::wire::{Message, Metadata, Part, PartContent, TaskState, TaskStatus};

use super::events::TaskEvent;
use super::head::{PendingHelp, TaskHead};
use super::status::refuse_if_terminal;

/// Longest help question, in bytes.
pub const MAX_QUESTION_BYTES: usize = 4096;

/// `AskParticipant`: asks a participant; the task waits (INPUT_REQUIRED) for their reply.
pub(super) fn ask(
    head: &TaskHead,
    participant_id: ParticipantId,
    question: String,
    options: Vec<String>,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    refuse_if_terminal(head)?;
    let data = head.ext_or_refuse("participant_id")?;
    if data.participant(participant_id.as_str()).is_none() {
        return Err(DomainError::invalid(
            "participant_id",
            format!(
                "{:?} is not a participant of this task",
                participant_id.as_str()
            ),
        ));
    }
    if question.trim().is_empty() || question.len() > MAX_QUESTION_BYTES {
        return Err(DomainError::invalid(
            "question",
            format!("must be 1 to {MAX_QUESTION_BYTES} bytes"),
        ));
    }
    let at = head.next_stamp(at);
    let mut text = question.clone();
    if !options.is_empty() {
        text.push_str(&format!("\nOptions: {}", options.join(", ")));
    }
    let mut m = Message::agent_text(format!("{}:help:{}", head.id, head.history_len), text);
    m.parts.push(Part {
        content: PartContent::Data(serde_json::json!({
            "channel_id": head.id.to_string(),
            "sender": "agent",
            "kind": "help_request",
            "text": question,
        })),
        metadata: None,
        filename: None,
        media_type: Some(harness::CHANNEL_MEDIA_TYPE.into()),
    });
    if head.hitl {
        m.extensions = vec![HITL_URI.into()];
        let mut meta = Metadata::new();
        meta.insert(
            HITL_URI.into(),
            hitl::ask_user_request(&m.message_id, &question, &options),
        );
        m.metadata = Some(meta);
    }
    Ok(vec![TaskEvent::HelpRequested {
        participant_id,
        question,
        options,
        message: head.own_message(m, at),
        at,
    }])
}

/// A user message while a help request is open: only the asked participant's reply answers
/// it (and resumes the task); `None` for anyone else's.
pub(super) fn answer(
    head: &TaskHead,
    sender: Option<&ParticipantId>,
    at: Timestamp,
) -> Option<TaskEvent> {
    let help = head.pending_help.as_ref()?;
    (sender == Some(&help.participant_id)).then(|| TaskEvent::HelpAnswered {
        participant_id: help.participant_id.clone(),
        at,
    })
}

pub(super) fn apply_requested(
    head: &mut TaskHead,
    version: u64,
    participant_id: &ParticipantId,
    question: &str,
    options: &[String],
    message: &Message,
    at: Timestamp,
) {
    head.record_history(message);
    head.pending_help = Some(PendingHelp {
        id: message.message_id.clone(),
        participant_id: participant_id.clone(),
        question: question.to_string(),
        options: options.to_vec(),
    });
    head.status = TaskStatus {
        state: TaskState::InputRequired,
        message: Some(message.clone()),
        timestamp: Some(at),
        elicitations: Vec::new(),
    };
    head.status_version = version;
    head.last_timeline = head.last_timeline.max(at);
}

pub(super) fn apply_answered(head: &mut TaskHead, version: u64, at: Timestamp) {
    head.pending_help = None;
    head.status = TaskStatus {
        state: TaskState::Working,
        message: None,
        timestamp: Some(at),
        elicitations: Vec::new(),
    };
    head.status_version = version;
    head.last_timeline = head.last_timeline.max(at);
}
