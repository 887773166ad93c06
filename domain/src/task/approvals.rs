//! Tool approvals (kagent hitl/v1): before the agent runs a tool that needs a person's
//! approval, it raises a tool-approval gate listing the calls; the task waits
//! (INPUT_REQUIRED, the pause payload on `status.message`) until a deciding principal decides
//! every call exactly once. The decisions are kept on the gate: the agent then runs each
//! approved call once and gives the model each rejection as that call's result. A child
//! task's pause is surfaced on its parent as a gate of the parent (`nested`), whose decisions
//! the service forwards to the child.

use crate::error::DomainError;
use crate::extensions::hitl::{self, Approval, PendingTool, HITL_URI};
use crate::wire::{Message, Metadata, TaskState};

use super::events::TaskEvent;
use super::gates::{self, Gate, GateKind};
use super::head::TaskHead;
pub use super::shapes::{AnswerToolApproval, RequestToolApproval, ToolCallAsked};
use super::status::refuse_if_terminal;

/// The choice a tool-approval gate's answer records (the decisions are per call).
pub const DECIDED: &str = "decided";

fn approvals_field() -> String {
    format!("message.metadata[{HITL_URI}].approvals")
}

impl Gate {
    /// The calls a tool-approval gate asks about, its own or its child's.
    pub fn asked(&self) -> &[PendingTool] {
        match &self.nested {
            Some(n) => &n.tools,
            None => &self.tools,
        }
    }
}

/// The pause: a tool-approval gate raised as event `version + 1`, and INPUT_REQUIRED with
/// the request on `status.message`.
pub(super) fn request(
    head: &TaskHead,
    version: u64,
    c: RequestToolApproval,
) -> Result<Vec<TaskEvent>, DomainError> {
    refuse_if_terminal(head)?;
    if c.calls.is_empty() && c.nested.as_ref().is_none_or(|n| n.tools.is_empty()) {
        return Err(DomainError::invalid(
            "tools",
            "an approval asks about a call",
        ));
    }
    if head.open_gates().next().is_some() {
        return Err(DomainError::UnsupportedOperation(format!(
            "task {} already waits for a decision",
            head.id
        )));
    }
    for call in &c.calls {
        if head.tool_decision(&call.call_id).is_some() {
            return Err(DomainError::invalid(
                "call_id",
                format!("call {} was decided already", call.call_id),
            ));
        }
    }
    let gate_id = gates::gate_id(version + 1);
    let tools: Vec<PendingTool> = c
        .calls
        .into_iter()
        .enumerate()
        .map(|(i, call)| PendingTool {
            id: format!("{gate_id}.{i}"),
            call_id: call.call_id,
            name: call.name,
            args: call.args,
        })
        .collect();
    let at = head.next_stamp(c.at);
    let payload = hitl::tool_approval_request(&tools, c.nested.as_ref());
    let hint = payload["hint"].as_str().unwrap_or_default().to_string();
    let mut said = Message::agent_text(format!("{}:{gate_id}", head.id), hint);
    said.extensions = vec![HITL_URI.into()];
    let mut meta = Metadata::new();
    meta.insert(HITL_URI.into(), payload);
    said.metadata = Some(meta);
    Ok(vec![
        TaskEvent::GateRaised {
            gate: Gate {
                id: gate_id,
                kind: GateKind::ToolApproval,
                opened_at: at,
                answer: None,
                tools,
                nested: c.nested,
            },
        },
        TaskEvent::StatusChanged {
            state: TaskState::InputRequired,
            message: Some(said),
            at,
        },
    ])
}

/// The decisions: refused unless a tool-approval gate is open, the sender decides, and every
/// call it asks about is decided exactly once (omission never means approval); then the
/// message, the answer, WORKING and the agent's wake-up, in one commit.
pub(super) fn answer(
    head: &TaskHead,
    c: AnswerToolApproval,
) -> Result<Vec<TaskEvent>, DomainError> {
    refuse_if_terminal(head)?;
    let Some(gate) = head.open_gates().find(|g| g.kind == GateKind::ToolApproval) else {
        // A second decision on a gate already answered is stale: it resumes nothing.
        if let Some(done) = head.gates.iter().rev().find(|g| {
            g.kind == GateKind::ToolApproval
                && g.asked()
                    .iter()
                    .any(|t| c.approvals.iter().any(|a| a.id == t.id))
        }) {
            return Err(DomainError::GateClosed {
                gate_id: done.id.clone(),
                choice: DECIDED.into(),
            });
        }
        return Err(DomainError::invalid(
            approvals_field(),
            format!("task {} waits for no tool approval", head.id),
        ));
    };
    let speaker = gates::decider(head, c.caller.as_ref(), c.by, approvals_field(), &gate.id)?;
    let pending = gate.asked();
    for (i, a) in c.approvals.iter().enumerate() {
        if !pending.iter().any(|t| t.id == a.id) {
            return Err(DomainError::invalid(
                format!("{}[{i}].id", approvals_field()),
                format!("{:?} is no call that gate {} asks about", a.id, gate.id),
            ));
        }
    }
    if let Some(missing) = pending
        .iter()
        .find(|t| !c.approvals.iter().any(|a| a.id == t.id))
    {
        return Err(DomainError::invalid(
            approvals_field(),
            format!(
                "call {} ({}) is not decided: every call is approved or rejected",
                missing.id, missing.name
            ),
        ));
    }
    crate::task::intake::validate_user_message(&c.message, "message")?;
    let at = head.next_stamp(c.at);
    let mut events = vec![
        TaskEvent::MessageAppended {
            message: head.own_message(c.message, at),
            at,
            acted_by: speaker.acted_by,
        },
        TaskEvent::GateAnswered {
            gate_id: gate.id.clone(),
            choice: DECIDED.into(),
            by: speaker.sender,
            approvals: c.approvals,
            at,
        },
        TaskEvent::StatusChanged {
            state: TaskState::Working,
            message: None,
            at,
        },
    ];
    // A child's calls run in the child, which the decisions are forwarded to; the parent's
    // agent goes on waiting for it.
    if gate.nested.is_none() {
        events.push(TaskEvent::AgentWorkRequested {
            reason: "tool calls decided".into(),
            at,
        });
    }
    Ok(events)
}

impl TaskHead {
    /// How a person decided the agent's call `call_id`, if they did.
    pub fn tool_decision(&self, call_id: &str) -> Option<&Approval> {
        self.gates
            .iter()
            .filter(|g| g.kind == GateKind::ToolApproval && g.nested.is_none())
            .find_map(|g| {
                let tool = g.tools.iter().find(|t| t.call_id == call_id)?;
                let answer = g.answer.as_ref()?;
                answer.approvals.iter().find(|a| a.id == tool.id)
            })
    }

    /// Whether the agent's call `call_id` waits on an open gate.
    pub fn tool_awaits_decision(&self, call_id: &str) -> bool {
        self.open_gates()
            .any(|g| g.tools.iter().any(|t| t.call_id == call_id))
    }

    /// The open tool-approval gate, if the task waits on one.
    pub fn open_tool_approval(&self) -> Option<&Gate> {
        self.open_gates().find(|g| g.kind == GateKind::ToolApproval)
    }
}

#[cfg(test)]
#[path = "approvals_tests.rs"]
mod tests;
