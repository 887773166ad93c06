//! The model loop: system prompt + the task's extension view + history → model → tool calls →
//! results → … until a final answer (artifact + COMPLETED; INPUT_REQUIRED while an emitted A2UI
//! surface still offers the user an action), a help request (INPUT_REQUIRED),
//! waiting on sub-tasks, a failure, or the turn limit (FAILED "turn limit reached").
//! Each step's events are committed before the next step starts, so messages that arrive
//! during a turn are seen at the next step. Tool calls and results are kept in history as data
//! parts marked `kagent.dev/a2a/part-type` = `function_call` / `function_response`.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};
use taskledger_domain::ext::TaskExtensionData;
use taskledger_domain::ids::TaskId;
use taskledger_domain::llm::{
    ChatMessage, ChatRole, LanguageModel, ModelRequest, ToolCall, PART_TYPE_KEY, USAGE_KEY,
};
use taskledger_domain::skills::SkillCatalog;
use taskledger_domain::task::{TaskAggregate, TaskCommand};
use taskledger_domain::time::Timestamp;
use taskledger_domain::tools::{self, SkillOp, ToolAction};
use taskledger_domain::wire::{Artifact, Message, Metadata, Part, PartContent, Role, TaskState};
use tracing::{debug, warn, Instrument};

use crate::agent::{Agent, TurnBudget, TurnEnd};
use crate::error::AppError;
use crate::service::{Actor, Service};

/// Model turns one execution may take before the task fails.
pub const DEFAULT_MAX_TURNS: u32 = 50;

const SYSTEM_PROMPT: &str = "You are the agent working on an A2A task. Use the tools to plan, to \
complete plan steps, to spawn sub-tasks, and to ask participants when you need their input. \
When the work is done, answer with the final result as plain text.";

pub struct LlmAgent {
    model: Arc<dyn LanguageModel>,
    max_turns: u32,
    skills: Arc<SkillCatalog>,
}

/// Why a loop stopped.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Finished,
    Waiting,
    Stopped,
}

impl LlmAgent {
    pub fn new(model: Arc<dyn LanguageModel>, max_turns: u32) -> Arc<Self> {
        Self::with_skills(model, max_turns, SkillCatalog::default())
    }

    /// With skills the model can list, load (their instructions join its context) and read.
    pub fn with_skills(
        model: Arc<dyn LanguageModel>,
        max_turns: u32,
        skills: SkillCatalog,
    ) -> Arc<Self> {
        Arc::new(Self {
            model,
            max_turns,
            skills: Arc::new(skills),
        })
    }

    /// Answers a skill tool from the catalog; load and unload are recorded on the task.
    async fn run_skill(&self, svc: &Arc<Service>, task_id: &TaskId, call: &ToolCall, op: SkillOp) {
        let loaded_now: Vec<String> = svc
            .load(task_id)
            .await
            .ok()
            .flatten()
            .and_then(|s| s.head().map(|h| h.loaded_skills.clone()))
            .unwrap_or_default();
        let loaded = |name: &str| loaded_now.iter().any(|n| n == name);
        let at = Timestamp::now();
        let (result, cmds) = match op {
            SkillOp::List if self.skills.skills.is_empty() => {
                (Ok("no skills are installed".to_string()), vec![])
            }
            SkillOp::List => (
                Ok(self
                    .skills
                    .skills
                    .iter()
                    .map(|s| format!("{}: {}", s.name, s.description))
                    .collect::<Vec<_>>()
                    .join("\n")),
                vec![],
            ),
            SkillOp::Load(name) => match self.skills.get(&name) {
                Some(_) => (
                    Ok(format!("skill {name} loaded")),
                    vec![TaskCommand::LoadSkill { name, at }],
                ),
                None => (
                    Err(format!("skill.not_found: there is no skill named {name:?}")),
                    vec![],
                ),
            },
            SkillOp::Unload(name) => (
                Ok(format!("skill {name} unloaded")),
                vec![TaskCommand::UnloadSkill { name, at }],
            ),
            SkillOp::ListResources(name) => match self.skills.get(&name) {
                Some(s) if loaded(&name) => (
                    Ok(s.resources
                        .iter()
                        .map(|r| format!("{}/{}", r.kind.dir(), r.name))
                        .collect::<Vec<_>>()
                        .join("\n")),
                    vec![],
                ),
                Some(_) => (Err(format!("skill.not_loaded: load {name} first")), vec![]),
                None => (
                    Err(format!("skill.not_found: there is no skill named {name:?}")),
                    vec![],
                ),
            },
            SkillOp::LoadResource {
                name,
                kind,
                resource,
            } => match self.skills.get(&name) {
                Some(s) if loaded(&name) => match s
                    .resources
                    .iter()
                    .find(|r| r.kind == kind && r.name == resource)
                {
                    Some(r) => (Ok(r.content.clone()), vec![]),
                    None => (
                        Err(format!(
                            "skill.resource_not_found: {name} has no {}/{resource}",
                            kind.dir()
                        )),
                        vec![],
                    ),
                },
                Some(_) => (Err(format!("skill.not_loaded: load {name} first")), vec![]),
                None => (
                    Err(format!("skill.not_found: there is no skill named {name:?}")),
                    vec![],
                ),
            },
        };
        self.commit_result(svc, task_id, call, result, cmds).await;
    }

    fn extension_view(data: &TaskExtensionData) -> String {
        let mut v = json!({"name": data.name, "goal": data.goal});
        if !data.acceptance_criteria.is_empty() {
            v["acceptance_criteria"] = json!(data.acceptance_criteria);
        }
        if let Some(plan) = &data.plan {
            v["plan"] = json!(plan);
        }
        if !data.participants.is_empty() {
            v["participants"] = json!(data.participants);
        }
        format!("The task:\n{v}")
    }

    /// History as chat messages; tool calls and results become assistant / tool messages.
    /// Skills: names and descriptions always, bodies of loaded skills in the system prompt.
    fn chat(&self, state: &TaskAggregate, history: &[Message]) -> Vec<ChatMessage> {
        let mut out = vec![ChatMessage::text(ChatRole::System, SYSTEM_PROMPT)];
        if let Some(data) = state.head().and_then(|h| h.ext.as_ref()) {
            out.push(ChatMessage::text(
                ChatRole::System,
                Self::extension_view(data),
            ));
        }
        if !self.skills.skills.is_empty() {
            let list = self
                .skills
                .skills
                .iter()
                .map(|s| format!("- {}: {}", s.name, s.description))
                .collect::<Vec<_>>()
                .join("\n");
            out.push(ChatMessage::text(
                ChatRole::System,
                format!("Skills you can load:\n{list}"),
            ));
        }
        for name in state
            .head()
            .map(|h| h.loaded_skills.clone())
            .unwrap_or_default()
        {
            if let Some(skill) = self.skills.get(&name) {
                out.push(ChatMessage::text(
                    ChatRole::System,
                    format!("Skill {} (loaded):\n{}", skill.name, skill.body),
                ));
            }
        }
        for m in history {
            let mut pieces: Vec<String> = Vec::new();
            let mut calls = Vec::new();
            for p in &m.parts {
                let kind = p
                    .metadata
                    .as_ref()
                    .and_then(|md| md.get(PART_TYPE_KEY))
                    .and_then(Value::as_str);
                match (&p.content, kind) {
                    (PartContent::Data(d), Some("function_call")) => calls.push(ToolCall {
                        id: d["id"].as_str().unwrap_or_default().to_string(),
                        name: d["name"].as_str().unwrap_or_default().to_string(),
                        arguments: d["args"].clone(),
                    }),
                    (PartContent::Data(d), Some("function_response")) => out.push(ChatMessage {
                        role: ChatRole::Tool,
                        content: d["response"].to_string(),
                        tool_calls: vec![],
                        tool_call_id: d["id"].as_str().map(str::to_string),
                        message_id: None,
                    }),
                    (PartContent::Text(t), _) => pieces.push(t.clone()),
                    // The task envelope is in the extension view already.
                    (PartContent::Data(_), _)
                        if p.media_type.as_deref() == Some(taskledger_domain::ext::MEDIA_TYPE) => {}
                    (PartContent::Data(d), _) => pieces.push(d.to_string()),
                    (PartContent::Url(u), _) => pieces.push(format!("[file at {u}]")),
                    (PartContent::Raw(b), _) => pieces.push(format!(
                        "[file {} of {} bytes]",
                        p.filename.as_deref().unwrap_or("unnamed"),
                        b.len()
                    )),
                }
            }
            pieces.retain(|t| !t.is_empty());
            let text = pieces.join("\n");
            let role = if m.role == Role::Agent {
                ChatRole::Assistant
            } else {
                ChatRole::User
            };
            if !text.is_empty() || !calls.is_empty() {
                out.push(ChatMessage {
                    role,
                    content: text,
                    tool_calls: calls,
                    tool_call_id: None,
                    message_id: Some(m.message_id.clone()),
                });
            }
        }
        out
    }

    fn call_part(call: &ToolCall) -> Part {
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

    fn response_message(call: &ToolCall, result: Result<String, String>) -> Message {
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

    /// Runs one tool call and commits its effect together with its result.
    async fn run_tool(
        &self,
        svc: &Arc<Service>,
        task_id: &TaskId,
        call: &ToolCall,
    ) -> (bool, bool) {
        let at = Timestamp::now();
        let action = match tools::plan_call(call, None, at) {
            Ok(a) => a,
            Err(e) => {
                self.commit_result(svc, task_id, call, Err(e.to_string()), vec![])
                    .await;
                return (false, false);
            }
        };
        match action {
            ToolAction::Skill(op) => {
                self.run_skill(svc, task_id, call, op).await;
                (false, false)
            }
            ToolAction::Commands(cmds) => {
                let asks = cmds
                    .iter()
                    .any(|c| matches!(c, TaskCommand::AskParticipant { .. }));
                let result = match cmds.first() {
                    Some(TaskCommand::EmitUi { messages, .. }) => format!(
                        "{} A2UI message(s) emitted in an {} artifact",
                        messages.len(),
                        taskledger_domain::a2ui::ARTIFACT_NAME
                    ),
                    _ => format!("{} done", call.name),
                };
                let ok = self
                    .commit_result(svc, task_id, call, Ok(result), cmds)
                    .await;
                (ok && asks, false)
            }
            ToolAction::SpawnSubTask {
                name,
                goal,
                step,
                for_participant,
            } => match svc
                .spawn_subtask(task_id, &name, &goal, step, for_participant)
                .await
            {
                Ok(child) => {
                    self.commit_result(
                        svc,
                        task_id,
                        call,
                        Ok(format!("sub-task {child} started")),
                        vec![],
                    )
                    .await;
                    (false, true)
                }
                Err(e) => {
                    self.commit_result(svc, task_id, call, Err(e.to_string()), vec![])
                        .await;
                    (false, false)
                }
            },
        }
    }

    /// Commits `cmds` and the tool's result message atomically; a refused command becomes an
    /// error result instead. Returns whether the commands took effect.
    async fn commit_result(
        &self,
        svc: &Service,
        task_id: &TaskId,
        call: &ToolCall,
        result: Result<String, String>,
        cmds: Vec<TaskCommand>,
    ) -> bool {
        let message = Self::response_message(call, result);
        let with_effect = svc
            .execute(Actor::Agent, task_id, None, |_| {
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
                let refused = Self::response_message(call, Err(e.to_string()));
                let r = svc
                    .execute(Actor::Agent, task_id, None, |_| {
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

    /// Tool calls the model made whose results are not in history: they never ran, because a
    /// tool's effect and its result are committed together. After a crash they run now, once.
    fn pending_calls(history: &[Message]) -> Vec<ToolCall> {
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

    async fn step(
        &self,
        svc: &Arc<Service>,
        task_id: &TaskId,
    ) -> Result<Option<Outcome>, AppError> {
        let (state, history) = svc.agent_view(task_id).await?;
        let Some(head) = state.head() else {
            return Ok(Some(Outcome::Stopped));
        };
        if head.status.state.is_terminal() || head.pending_help.is_some() {
            return Ok(Some(Outcome::Stopped));
        }
        let pending = Self::pending_calls(&history);
        if !pending.is_empty() {
            debug!(
                calls = pending.len(),
                "resuming tool calls that had not run"
            );
            let mut waiting = false;
            for call in &pending {
                let (asked, spawned) = self.run_tool(svc, task_id, call).await;
                waiting |= asked || spawned;
            }
            return Ok(waiting.then_some(Outcome::Waiting));
        }
        if !head.unresolved_children().is_empty() {
            return Ok(Some(Outcome::Waiting));
        }
        let ext = head.ext.clone();
        let request = ModelRequest {
            model: ext.as_ref().and_then(|d| d.model.clone()),
            reasoning_effort: ext
                .as_ref()
                .and_then(|d| d.reasoning_effort)
                .map(|e| format!("{e:?}").to_lowercase()),
            messages: self.chat(&state, &history),
            tools: if ext.is_some() {
                tools::specs()
            } else {
                vec![]
            },
        };
        let response = match self.model.complete(request).await {
            Ok(r) => r,
            Err(e) => {
                warn!(error = %e, "model call failed");
                svc.fail_task(task_id, &format!("the model provider kept failing: {e}"))
                    .await;
                return Ok(Some(Outcome::Stopped));
            }
        };
        let mut said = Message::agent_text(
            uuid::Uuid::new_v4().to_string(),
            response.text.clone().unwrap_or_default(),
        );
        said.parts
            .retain(|p| p.as_text().is_some_and(|t| !t.is_empty()));
        said.parts
            .extend(response.tool_calls.iter().map(Self::call_part));
        if let Some(u) = &response.usage {
            said.metadata
                .get_or_insert_with(Metadata::new)
                .insert(USAGE_KEY.into(), json!(u));
        }
        let usage = response.usage;
        let model = response.model.clone();
        let finished = response.tool_calls.is_empty();
        let final_text = response.text.clone().unwrap_or_default();
        svc.execute(Actor::Agent, task_id, None, |s| {
            let mut cmds = Vec::new();
            // A surface the user can still act on keeps the task open for that action.
            let awaits_ui = s.head().is_some_and(|h| h.ui.awaits_action());
            if let Some(u) = usage {
                cmds.push(TaskCommand::RecordUsage {
                    model: model.clone(),
                    usage: u,
                    at: Timestamp::now(),
                });
            }
            if !said.parts.is_empty() && !finished {
                cmds.push(TaskCommand::AppendAgentMessage {
                    message: said.clone(),
                    at: Timestamp::now(),
                });
            }
            if finished {
                cmds.push(TaskCommand::AddArtifact {
                    artifact: Artifact {
                        artifact_id: "answer".into(),
                        name: Some("answer".into()),
                        description: None,
                        parts: vec![Part::text(final_text.clone())],
                        metadata: None,
                        extensions: vec![],
                    },
                    append: false,
                    last_chunk: true,
                    at: Timestamp::now(),
                });
                cmds.push(TaskCommand::ChangeStatus {
                    state: if awaits_ui {
                        TaskState::InputRequired
                    } else {
                        TaskState::Completed
                    },
                    message: Some(said.clone()),
                    at: Timestamp::now(),
                });
            }
            cmds
        })
        .await?;
        if finished {
            return Ok(Some(Outcome::Finished));
        }
        let mut waiting = false;
        for call in &response.tool_calls {
            let (asked, spawned) = self.run_tool(svc, task_id, call).await;
            waiting |= asked || spawned;
        }
        Ok(waiting.then_some(Outcome::Waiting))
    }

    /// The loop for one turn: steps until an outcome, the turn limit (counted over the whole
    /// execution, continuations included), or the budget — then a continuation is recorded.
    async fn run(
        &self,
        svc: Arc<Service>,
        task_id: TaskId,
        budget: TurnBudget,
    ) -> Result<TurnEnd, AppError> {
        let r = svc
            .execute(Actor::Agent, &task_id, None, |s| {
                match s.head().map(|h| h.status.state) {
                    Some(
                        TaskState::Submitted | TaskState::InputRequired | TaskState::AuthRequired,
                    ) => {
                        vec![TaskCommand::ChangeStatus {
                            state: TaskState::Working,
                            message: None,
                            at: Timestamp::now(),
                        }]
                    }
                    _ => vec![],
                }
            })
            .await;
        let state = match r {
            Ok((state, _)) => state,
            Err(e) => {
                debug!(error = %e, "not working on the task");
                return Ok(TurnEnd::Finished);
            }
        };
        // The work request this turn serves, and the steps its execution took in earlier turns.
        let (work_seq, taken) = state
            .head()
            .map(|h| (h.work_requested, h.execution_steps))
            .unwrap_or_default();
        for n in taken..self.max_turns {
            if n > taken && budget.exhausted() {
                svc.execute(Actor::Agent, &task_id, None, |_| {
                    vec![TaskCommand::ContinueAgentWork {
                        after: work_seq,
                        steps_taken: n,
                        at: Timestamp::now(),
                    }]
                })
                .await?;
                debug!(steps = n, "out of time, continuing in a new turn");
                return Ok(TurnEnd::Continued);
            }
            match self.step(&svc, &task_id).await {
                Ok(None) => continue,
                Ok(Some(outcome)) => {
                    debug!(?outcome, "loop ended");
                    if outcome == Outcome::Waiting {
                        // The execution ends here: say so with a status update carrying usage.
                        let r = svc
                            .execute(Actor::Agent, &task_id, None, |_| {
                                vec![TaskCommand::AwaitSubTasks {
                                    at: Timestamp::now(),
                                }]
                            })
                            .await;
                        if let Err(e) = r {
                            debug!(error = %e, "the wait for sub-tasks was not recorded");
                        }
                    }
                    return Ok(TurnEnd::Finished);
                }
                Err(e) => {
                    warn!(error = %e, "agent step failed");
                    svc.fail_task(&task_id, "the agent could not record its work")
                        .await;
                    return Ok(TurnEnd::Finished);
                }
            }
        }
        svc.fail_task(&task_id, "turn limit reached").await;
        Ok(TurnEnd::Finished)
    }
}

#[async_trait]
impl Agent for LlmAgent {
    fn direct_reply(&self, _message: &Message) -> Option<Message> {
        None
    }

    async fn on_message(
        self: Arc<Self>,
        service: Arc<Service>,
        task_id: TaskId,
        _message: Message,
    ) {
        // The loop reads the whole history, the new message included: the same run.
        self.on_children_resolved(service, task_id).await
    }

    async fn on_children_resolved(self: Arc<Self>, service: Arc<Service>, task_id: TaskId) {
        let span = tracing::info_span!("agent", task_id = %task_id, kind = "llm");
        let r = self
            .run(service, task_id, TurnBudget::unlimited())
            .instrument(span)
            .await;
        if let Err(e) = r {
            warn!(error = %e, "the agent's loop stopped");
        }
    }

    async fn run_turn(
        self: Arc<Self>,
        service: Arc<Service>,
        task_id: TaskId,
        _input: Option<Message>,
        budget: TurnBudget,
    ) -> Result<TurnEnd, AppError> {
        let span = tracing::info_span!("agent", task_id = %task_id, kind = "llm");
        self.run(service, task_id, budget).instrument(span).await
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
