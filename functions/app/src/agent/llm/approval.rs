//! Which tool calls wait for a person (kagent hitl/v1): a call of a tool the deployment
//! (`--approve-tools`) or the task (`approve_tools` in its extension data) marks runs only
//! once a person approved it; a rejected call never runs and the model reads the rejection as
//! its result. On a task without hitl/v1 active nobody could approve, so such a call is not
//! run and the model is told why.

use taskledger_domain::agent::llm::ToolCall;
use taskledger_domain::agent::mcp::approval_covers;
use taskledger_domain::ids::TaskId;
use taskledger_domain::task::{RequestToolApproval, TaskCommand, TaskHead, ToolCallAsked};
use taskledger_domain::time::Timestamp;
use tracing::debug;

use super::tools::commit_result;
use super::LlmAgent;
use crate::agent::TaskPort;

/// What the loop does with one call.
#[derive(Debug, PartialEq, Eq)]
enum Gatekeeping {
    Run,
    Refuse(String),
    Ask,
}

impl LlmAgent {
    /// A tool the deployment's or the task's list names (an MCP tool also by `NAME__*`), or an
    /// MCP tool annotated destructive that the deployment does not trust.
    fn needs_approval(&self, head: &TaskHead, tool: &str) -> bool {
        let listed = |list: &[String]| list.iter().any(|t| approval_covers(t, tool));
        listed(&self.approve_tools)
            || head.ext.as_ref().is_some_and(|d| listed(&d.approve_tools))
            || self.mcp.as_ref().is_some_and(|m| m.destructive(tool))
    }

    fn gatekeeping(&self, head: &TaskHead, call: &ToolCall) -> Gatekeeping {
        if !self.needs_approval(head, &call.name) {
            return Gatekeeping::Run;
        }
        match head.tool_decision(&call.id) {
            Some(a) if a.approved => Gatekeeping::Run,
            Some(a) => Gatekeeping::Refuse(match &a.rejection_reason {
                Some(r) => format!("the user rejected this call: {r}"),
                None => "the user rejected this call".into(),
            }),
            None if !head.hitl => Gatekeeping::Refuse(format!(
                "{} runs only after a person approves it, and this task's client did not \
                 activate {}: the call was not run",
                call.name,
                taskledger_domain::extensions::hitl::HITL_URI
            )),
            None => Gatekeeping::Ask,
        }
    }

    /// Runs tool calls in order until one needs an approval nobody gave yet: then one gate
    /// asks about every such call from there on, and the rest wait with it. True when the
    /// execution waits (for a person, an answer or a sub-task).
    pub(super) async fn run_tools(
        &self,
        tasks: &dyn TaskPort,
        task_id: &TaskId,
        head: &TaskHead,
        calls: &[ToolCall],
        loaded: &[String],
    ) -> bool {
        let mut waiting = false;
        for (i, call) in calls.iter().enumerate() {
            match self.gatekeeping(head, call) {
                Gatekeeping::Run => {
                    waiting |= self.run_tool(tasks, task_id, call, loaded).await.waits();
                }
                Gatekeeping::Refuse(why) => {
                    commit_result(tasks, task_id, call, Err(why), vec![]).await;
                }
                Gatekeeping::Ask => {
                    let asked: Vec<ToolCallAsked> = calls[i..]
                        .iter()
                        .filter(|c| self.gatekeeping(head, c) == Gatekeeping::Ask)
                        .map(|c| ToolCallAsked {
                            call_id: c.id.clone(),
                            name: c.name.clone(),
                            args: c.arguments.clone(),
                        })
                        .collect();
                    let r = tasks
                        .execute(task_id, &|_| {
                            vec![TaskCommand::RequestToolApproval(Box::new(
                                RequestToolApproval {
                                    calls: asked.clone(),
                                    nested: None,
                                    at: Timestamp::now(),
                                },
                            ))]
                        })
                        .await;
                    if let Err(e) = r {
                        debug!(error = %e, "the approval request was not recorded");
                    }
                    return true;
                }
            }
        }
        waiting
    }
}
