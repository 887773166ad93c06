//! Gates: a decision a person owes before work goes on — a question, the choices it allows,
//! who may decide, and what each choice does. Raised by the system (a handoff's
//! task-proposal gate), answered once by a deciding principal, folded into the head the same
//! way whichever extension raised it; the answer's effect is decided in the same commit.

use crate::error::DomainError;
use crate::extensions::dmp::{GateStateV1, OpenGate};
use crate::extensions::harness::Role;
use crate::extensions::hitl::Approval;
use crate::ids::{ParticipantId, Principal};
use crate::time::Timestamp;
use crate::wire::Message;

use super::events::TaskEvent;
use super::head::TaskHead;
pub use super::shapes::{AnswerGate, Gate, GateAnswer, GateKind};
use super::sharing::{self, Speaker};

/// DMP envelope/v1 on `Message.metadata`: of it, an `answer` (`replyTo` a gate, `choice`)
/// is read, which answers a gate.
pub const ENVELOPE_URI: &str = "https://dispatch.foo/a2a/ext/envelope/v1";

/// Longest gate id or choice an answer may name, in bytes.
pub const MAX_ANSWER_FIELD_BYTES: usize = 200;

/// The gate answer a message carries (`{kind: "answer", replyTo, choice}` under
/// `ENVELOPE_URI`): `None` when it carries no answer; the gate id and the choice, if any.
pub fn answer_of(message: &Message) -> Option<Result<(String, Option<String>), DomainError>> {
    let envelope = message.metadata.as_ref()?.get(ENVELOPE_URI)?;
    if envelope.get("kind").and_then(|k| k.as_str()) != Some("answer") {
        return None;
    }
    let text = |field: &str| -> Result<Option<String>, DomainError> {
        match envelope.get(field) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s))
                if !s.is_empty() && s.len() <= MAX_ANSWER_FIELD_BYTES && !s.contains('\n') =>
            {
                Ok(Some(s.clone()))
            }
            Some(_) => Err(DomainError::invalid(
                field,
                format!("must be one line of 1 to {MAX_ANSWER_FIELD_BYTES} bytes"),
            )),
        }
    };
    Some((|| {
        let gate = text("replyTo")?.ok_or_else(|| {
            DomainError::invalid("replyTo", "an answer names the gate it answers")
        })?;
        Ok((gate, text("choice")?))
    })())
}

/// The id a gate raised as event `seq` of the task gets.
pub fn gate_id(seq: u64) -> String {
    format!("gate-{seq}")
}

/// The event raising a gate of `kind` as event `seq`.
pub(super) fn raise(kind: GateKind, seq: u64, at: Timestamp) -> TaskEvent {
    TaskEvent::GateRaised {
        gate: Gate {
            id: gate_id(seq),
            kind,
            opened_at: at,
            answer: None,
            tools: vec![],
            nested: None,
        },
    }
}

/// Who decides a gate in an answer from `caller` naming `named`: the answer's speaker
/// (`sharing::speaker`), who must be the owner or speak as an admin participant.
pub(super) fn decider(
    head: &TaskHead,
    caller: Option<&Principal>,
    named: Option<ParticipantId>,
    field: String,
    gate_id: &str,
) -> Result<Speaker, DomainError> {
    let speaker =
        sharing::speaker(head, caller.unwrap_or(&head.owner), named).map_err(|reason| {
            DomainError::NotPermitted {
                field: field.clone(),
                reason,
            }
        })?;
    if !may_decide(head, speaker.sender.as_ref()) {
        return Err(DomainError::NotPermitted {
            field,
            reason: format!("only the task's owner or an admin participant decides gate {gate_id}"),
        });
    }
    Ok(speaker)
}

/// Whether `by` may decide a gate of the task: the owner (no participant named) or an admin.
pub(super) fn may_decide(head: &TaskHead, by: Option<&ParticipantId>) -> bool {
    match by {
        None => true,
        Some(p) => head
            .ext
            .as_ref()
            .and_then(|d| d.participant(p.as_str()))
            .is_some_and(|p| p.role == Role::Admin),
    }
}

/// `AnswerGate`: refused unless the gate is open, the sender decides and the choice is
/// offered; then the answer, the gate's close and the choice's effect, in one commit.
pub(super) fn answer(head: &TaskHead, c: AnswerGate) -> Result<Vec<TaskEvent>, DomainError> {
    let gate = head
        .gates
        .iter()
        .find(|g| g.id == c.gate_id)
        .ok_or_else(|| {
            DomainError::invalid(
                "replyTo",
                format!("{:?} is no gate of task {}", c.gate_id, head.id),
            )
        })?;
    if let Some(done) = &gate.answer {
        return Err(DomainError::GateClosed {
            gate_id: gate.id.clone(),
            choice: done.choice.clone(),
        });
    }
    let speaker = decider(head, c.caller.as_ref(), c.by, "replyTo".into(), &gate.id)?;
    if gate.kind == GateKind::ToolApproval {
        return Err(DomainError::invalid(
            "replyTo",
            format!(
                "gate {} asks to approve tool calls: answer it with a hitl/v1 \
                 tool_approval_response",
                gate.id
            ),
        ));
    }
    let offered = gate.kind.choices();
    let choice = c
        .choice
        .filter(|ch| offered.contains(&ch.as_str()))
        .ok_or_else(|| {
            DomainError::invalid(
                "choice",
                format!(
                    "gate {} is answered with one of {}",
                    gate.id,
                    offered.join(", ")
                ),
            )
        })?;
    crate::task::intake::validate_user_message(&c.message, "message")?;
    let at = head.next_stamp(c.at);
    let mut events = vec![TaskEvent::MessageAppended {
        message: head.own_message(c.message, at),
        at,
        acted_by: speaker.acted_by,
    }];
    events.push(TaskEvent::GateAnswered {
        gate_id: gate.id.clone(),
        choice: choice.clone(),
        by: speaker.sender,
        approvals: vec![],
        at: c.at,
    });
    // What the choice does follows from the answer: the status the task then has is the
    // §8.7 projection's (`handoff_status::answered`).
    Ok(events)
}

pub(super) fn apply_raised(head: &mut TaskHead, gate: &Gate) {
    head.gates.push(gate.clone());
}

pub(super) fn apply_answered(
    head: &mut TaskHead,
    gate_id: &str,
    choice: &str,
    by: &Option<ParticipantId>,
    approvals: &[Approval],
    at: Timestamp,
) {
    if let Some(g) = head.gates.iter_mut().find(|g| g.id == gate_id) {
        g.answer = Some(GateAnswer {
            choice: choice.to_string(),
            by: by.clone(),
            at,
            approvals: approvals.to_vec(),
        });
    }
}

/// `GateStateV1` of the open gates (`{gates: [{id, type, openedAt, waitingOn}]}`).
pub fn gate_state<'a>(open: impl Iterator<Item = &'a Gate>) -> GateStateV1 {
    let open: Vec<OpenGate> = open
        .map(|g| OpenGate {
            id: g.id.clone(),
            gate_type: g.kind.name().to_string(),
            opened_at: g.opened_at,
        })
        .collect();
    GateStateV1::from_open_gates(&open)
}

impl TaskHead {
    /// The gates still waiting for a decision.
    pub fn open_gates(&self) -> impl Iterator<Item = &Gate> {
        self.gates.iter().filter(|g| g.answer.is_none())
    }
}

#[cfg(test)]
#[path = "gates_tests.rs"]
mod tests;
