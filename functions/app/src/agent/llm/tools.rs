//! Running the model's tool calls: each call's effect (the commands it plans) and its result
//! message are committed together, so a call either happened with its result in history or
//! never ran; after a crash the calls without results run once (`pending_calls`).

use serde_json::{json, Value};
use taskledger_domain::agent::llm::{ToolCall, PART_TYPE_KEY};
use taskledger_domain::agent::tools::{self, ToolAction};
use taskledger_domain::ids::TaskId;
use taskledger_domain::task::TaskCommand;
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Message, Metadata, Part, PartContent};
use tracing::debug;

use super::LlmAgent;
use crate::agent::{SubTask, TaskPort};
use crate::error::AppError;

/// What running one tool call leaves the agent's execution waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ToolOutcome {
    /// Nothing: the loop asks the model again.
    Continue,
    /// A participant was asked: the task waits for the answer.
    AwaitsAnswer,
    /// A sub-task was started: the task waits for it.
    AwaitsSubTask,
}

impl ToolOutcome {
    pub(super) fn waits(self) -> bool {
        self != Self::Continue
    }
}

impl LlmAgent {
    pub(super) fn call_part(call: &ToolCall) -> Part {
        let mut meta = Metadata::new();
        meta.insert(PART_TYPE_KEY.into(), json!("function_call"));
        Part {
            content: PartContent::Data(
                json!({"id": call.id, "name": call.name, "args": call.arguments}),
            ),
            metadata: Some(meta),
            filename: None,
            media_type: Some("application/json".into()),
        }
    }

    pub(super) fn response_message(call: &ToolCall, result: Result<String, String>) -> Message {
        let mut meta = Metadata::new();
        meta.insert(PART_TYPE_KEY.into(), json!("function_response"));
        let response = match result {
            Ok(r) => json!({"result": r}),
            Err(e) => json!({"error": e}),
        };
        let mut m = Message::agent_text(uuid::Uuid::new_v4().to_string(), "");
        m.parts = vec![Part {
            content: PartContent::Data(
                json!({"id": call.id, "name": call.name, "response": response}),
            ),
            metadata: Some(meta),
            filename: None,
            media_type: Some("application/json".into()),
        }];
        m
    }

    /// Runs one tool call and commits its effect together with its result. `loaded` are the
    /// skills loaded on the task.
    pub(super) async fn run_tool(
        &self,
        tasks: &dyn TaskPort,
        task_id: &TaskId,
        call: &ToolCall,
        loaded: &[String],
    ) -> ToolOutcome {
        if let Some(m) = self.mcp.as_ref().filter(|m| m.offers(&call.name)) {
            let result = m.call(call).await;
            commit_result(tasks, task_id, call, result, vec![]).await;
            return ToolOutcome::Continue;
        }
        let at = Timestamp::now();
        let action = match tools::plan_call(call, None, at) {
            Ok(a) => a,
            Err(e) => {
                commit_result(tasks, task_id, call, Err(e.to_string()), vec![]).await;
                return ToolOutcome::Continue;
            }
        };
        match action {
            ToolAction::Skill(op) => {
                self.run_skill(tasks, task_id, call, op, loaded).await;
                ToolOutcome::Continue
            }
            ToolAction::Commands(cmds) => {
                let asks = cmds
                    .iter()
                    .any(|c| matches!(c, TaskCommand::AskParticipant { .. }));
                let result = match cmds.first() {
                    Some(TaskCommand::EmitUi { messages, .. }) => format!(
                        "{} A2UI message(s) emitted in an {} artifact",
                        messages.len(),
                        taskledger_domain::extensions::a2ui::ARTIFACT_NAME
                    ),
                    _ => format!("{} done", call.name),
                };
                let ok = commit_result(tasks, task_id, call, Ok(result), cmds).await;
                if ok && asks {
                    ToolOutcome::AwaitsAnswer
                } else {
                    ToolOutcome::Continue
                }
            }
            ToolAction::SpawnSubTask {
                name,
                goal,
                step,
                for_participant,
            } => {
                let sub = SubTask {
                    name,
                    goal,
                    step,
                    for_participant,
                };
                match tasks.spawn_subtask(task_id, sub).await {
                    Ok(child) => {
                        let started = Ok(format!("sub-task {child} started"));
                        commit_result(tasks, task_id, call, started, vec![]).await;
                        ToolOutcome::AwaitsSubTask
                    }
                    Err(e) => {
                        commit_result(tasks, task_id, call, Err(e.to_string()), vec![]).await;
                        ToolOutcome::Continue
                    }
                }
            }
        }
    }

    /// Tool calls the model made whose results are not in history: they never ran, because a
    /// tool's effect and its result are committed together. After a crash they run now, once.
    pub(super) fn pending_calls(history: &[Message]) -> Vec<ToolCall> {
        let kind = |p: &Part| {
            p.metadata
                .as_ref()
                .and_then(|m| m.get(PART_TYPE_KEY))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let Some(last_call) = history.iter().rposition(|m| {
            m.parts
                .iter()
                .any(|p| kind(p).as_deref() == Some("function_call"))
        }) else {
            return vec![];
        };
        let answered: Vec<String> = history[last_call..]
            .iter()
            .flat_map(|m| m.parts.iter())
            .filter(|p| kind(p).as_deref() == Some("function_response"))
            .filter_map(|p| match &p.content {
                PartContent::Data(d) => d["id"].as_str().map(str::to_string),
                _ => None,
            })
            .collect();
        history[last_call]
            .parts
            .iter()
            .filter(|p| kind(p).as_deref() == Some("function_call"))
            .filter_map(|p| match &p.content {
                PartContent::Data(d) => Some(ToolCall {
                    id: d["id"].as_str().unwrap_or_default().to_string(),
                    name: d["name"].as_str().unwrap_or_default().to_string(),
                    arguments: d["args"].clone(),
                }),
                _ => None,
            })
            .filter(|c| !answered.contains(&c.id))
            .collect()
    }
}

/// Commits `cmds` and the tool's result message atomically; a refused command becomes an
/// error result instead. Returns whether the commands took effect.
pub(super) async fn commit_result(
    tasks: &dyn TaskPort,
    task_id: &TaskId,
    call: &ToolCall,
    result: Result<String, String>,
    cmds: Vec<TaskCommand>,
) -> bool {
    let message = LlmAgent::response_message(call, result);
    let with_effect = tasks
        .execute(task_id, &|_| {
            let mut all = vec![TaskCommand::AppendAgentMessage {
                message: message.clone(),
                at: Timestamp::now(),
            }];
            all.extend(cmds.clone());
            all
        })
        .await;
    match with_effect {
        Ok(_) => true,
        Err(AppError::Domain(e)) if !cmds.is_empty() => {
            let refused = LlmAgent::response_message(call, Err(e.to_string()));
            let r = tasks
                .execute(task_id, &|_| {
                    vec![TaskCommand::AppendAgentMessage {
                        message: refused.clone(),
                        at: Timestamp::now(),
                    }]
                })
                .await;
            if let Err(e) = r {
                debug!(error = %e, "tool result not recorded");
            }
            false
        }
        Err(e) => {
            debug!(error = %e, "tool result not recorded");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call_message(ids: &[&str]) -> Message {
        let mut m = Message::agent_text("m", "");
        m.parts = ids
            .iter()
            .map(|id| {
                LlmAgent::call_part(&ToolCall {
                    id: id.to_string(),
                    name: "create_plan".into(),
                    arguments: json!({}),
                })
            })
            .collect();
        m
    }

    #[test]
    fn calls_without_results_are_pending() {
        let calls = call_message(&["a", "b"]);
        let done = LlmAgent::response_message(
            &ToolCall {
                id: "a".into(),
                name: "create_plan".into(),
                arguments: json!({}),
            },
            Ok("ok".into()),
        );
        let pending = LlmAgent::pending_calls(&[calls.clone(), done]);
        assert_eq!(
            pending.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
            ["b"]
        );
        assert_eq!(LlmAgent::pending_calls(&[calls]).len(), 2);
        assert!(LlmAgent::pending_calls(&[]).is_empty());
    }
}
