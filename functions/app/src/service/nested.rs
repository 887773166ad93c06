//! Nested approvals (kagent hitl/v1 `nested`): a child task paused for tool approvals is
//! surfaced on its parent as a gate of the parent naming the child's calls, so the person
//! watching the parent decides them there; the parent's decisions are forwarded to the child,
//! whose agent then runs or skips its calls.

use serde_json::json;
use taskledger_domain::extensions::hitl::{Nested, HITL_URI};
use taskledger_domain::ids::TaskId;
use taskledger_domain::task::{
    AnswerToolApproval, RequestToolApproval, TaskCommand, TaskEvent, TaskHead,
};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Message, Metadata};
use tracing::debug;

use super::{Change, Service};

impl Service {
    /// The child's open tool-approval gate, raised again on its parent `parent_id`.
    pub(super) async fn surface_on_parent(&self, parent_id: &TaskId, child: &TaskHead) {
        let Some(gate) = child.open_tool_approval() else {
            return;
        };
        let nested = Nested {
            subagent_name: child
                .ext
                .as_ref()
                .map_or_else(|| child.id.to_string(), |d| d.name.clone()),
            task_id: child.id.to_string(),
            context_id: child.context_id.to_string(),
            tools: gate.asked().to_vec(),
        };
        let r = self
            .execute(Change::by_agent(parent_id), |s| {
                // Surfaced once: a parent already asking about these calls asks nothing new.
                let asked = s.head().is_some_and(|h| {
                    h.open_gates().any(|g| {
                        g.nested
                            .as_ref()
                            .is_some_and(|n| n.task_id == nested.task_id)
                    })
                });
                if asked {
                    return vec![];
                }
                vec![TaskCommand::RequestToolApproval(Box::new(
                    RequestToolApproval {
                        calls: vec![],
                        nested: Some(nested.clone()),
                        at: Timestamp::now(),
                    },
                ))]
            })
            .await;
        if let Err(e) = r {
            debug!(task_id = %parent_id, error = %e, "a child's approval was not surfaced");
        }
    }

    /// Decisions a commit on `head` made on a gate surfacing a child's calls, sent on to the
    /// child as its own `tool_approval_response`.
    pub(super) async fn forward_to_child(&self, head: &TaskHead, events: &[TaskEvent]) {
        for e in events {
            let TaskEvent::GateAnswered {
                gate_id, approvals, ..
            } = e
            else {
                continue;
            };
            let Some(nested) = head
                .gates
                .iter()
                .find(|g| &g.id == gate_id)
                .and_then(|g| g.nested.as_ref())
            else {
                continue;
            };
            let Ok(child_id) = TaskId::parse(nested.task_id.clone()) else {
                continue;
            };
            let mut message = Message::user_text(format!("{}:{gate_id}:forwarded", head.id), "");
            message.extensions = vec![HITL_URI.into()];
            let mut meta = Metadata::new();
            meta.insert(
                HITL_URI.into(),
                json!({"type": "tool_approval_response", "approvals": approvals}),
            );
            message.metadata = Some(meta);
            let r = self
                .execute(Change::by_agent(&child_id), |_| {
                    vec![TaskCommand::AnswerToolApproval(Box::new(
                        AnswerToolApproval {
                            approvals: approvals.clone(),
                            by: None,
                            message: message.clone(),
                            at: Timestamp::now(),
                            caller: None,
                        },
                    ))]
                })
                .await;
            if let Err(e) = r {
                debug!(task_id = %child_id, error = %e, "decisions not forwarded");
            }
        }
    }
}
