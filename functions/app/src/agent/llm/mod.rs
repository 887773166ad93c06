//! The model loop: system prompt + the task's extension view + history → model → tool calls →
//! results → … until a final answer (artifact + COMPLETED; INPUT_REQUIRED while an emitted A2UI
//! surface still offers the user an action), a help request (INPUT_REQUIRED), waiting on
//! sub-tasks, a failure, or the turn limit (FAILED "turn limit reached"). Each step's events are
//! committed before the next step starts, so messages that arrive during a turn are seen at the
//! next step. Tool calls and results are kept in history as data parts marked
//! `kagent.dev/a2a/part-type` = `function_call` / `function_response`.

mod approval;
mod mcp;
mod prompt;
mod skills;
mod tools;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;
use taskledger_domain::agent::llm::{LanguageModel, ModelRequest};
use taskledger_domain::agent::skills::SkillCatalog;
use taskledger_domain::extensions::usage::USAGE_KEY;
use taskledger_domain::ids::TaskId;
use taskledger_domain::task::{TaskAggregate, TaskCommand};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Artifact, Message, Metadata, Part, TaskState};
use tracing::{debug, warn, Instrument};

use super::{Agent, TaskPort, TurnBudget, TurnEnd};
use crate::error::AppError;
pub use mcp::McpTools;

/// Model turns one execution may take before the task fails.
pub const DEFAULT_MAX_TURNS: u32 = 50;

pub struct LlmAgent {
    model: Arc<dyn LanguageModel>,
    max_turns: u32,
    skills: Arc<SkillCatalog>,
    /// Tools that wait for a person's approval on every task (the deployment's list).
    approve_tools: Vec<String>,
    /// Tools of MCP servers offered beside the intrinsic ones (ADR 034).
    mcp: Option<Arc<McpTools>>,
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
        Self::configured(model, max_turns, skills, vec![])
    }

    /// With skills, and tools that run only once a person approved the call.
    pub fn configured(
        model: Arc<dyn LanguageModel>,
        max_turns: u32,
        skills: SkillCatalog,
        approve_tools: Vec<String>,
    ) -> Arc<Self> {
        Self::with_mcp(model, max_turns, skills, approve_tools, None)
    }

    /// With skills, approvals, and MCP servers' tools.
    pub fn with_mcp(
        model: Arc<dyn LanguageModel>,
        max_turns: u32,
        skills: SkillCatalog,
        approve_tools: Vec<String>,
        mcp: Option<Arc<McpTools>>,
    ) -> Arc<Self> {
        Arc::new(Self {
            model,
            max_turns,
            skills: Arc::new(skills),
            approve_tools,
            mcp,
        })
    }

    /// One step on `view` (the task as the turn found it, for the first step) or on the task
    /// read now. While `start.unsaid`, the task has yet to go WORKING: the step says so in its
    /// own commit before anything that waits or commits, or, when the model answers at once
    /// (nothing to wait for), in the commit of that answer.
    async fn step(
        &self,
        tasks: &dyn TaskPort,
        task_id: &TaskId,
        view: Option<View>,
        start: &mut Start,
    ) -> Result<Option<Outcome>, AppError> {
        let (state, history) = match view {
            Some(v) => v,
            None => tasks.view(task_id).await?,
        };
        let Some(head) = state.head() else {
            return Ok(Some(Outcome::Stopped));
        };
        if head.status.state.is_terminal() {
            return Ok(Some(Outcome::Stopped));
        }
        if head.pending_help.is_some() || head.open_tool_approval().is_some() {
            start.say(tasks, task_id).await?;
            return Ok(Some(Outcome::Stopped));
        }
        let loaded = head.loaded_skills.clone();
        let pending = Self::pending_calls(&history);
        if !pending.is_empty() {
            start.say(tasks, task_id).await?;
            debug!(
                calls = pending.len(),
                "resuming tool calls that had not run"
            );
            let waiting = self
                .run_tools(tasks, task_id, head, &pending, &loaded)
                .await;
            return Ok(waiting.then_some(Outcome::Waiting));
        }
        if !head.unresolved_children().is_empty() {
            start.say(tasks, task_id).await?;
            return Ok(Some(Outcome::Waiting));
        }
        let ext = head.ext.clone();
        // The call is a span of the turn's trace; the provider is told of a trace of its own
        // (a root linked to the call, no `tracestate`): the caller's trace id and vendor state
        // are not the provider's to see. Unexported, it is told of none.
        let span = crate::exported_span!(
            "llm.call",
            task_id = %task_id,
            gen_ai.request.model = ext.as_ref().and_then(|d| d.model.clone()).unwrap_or_default()
        );
        let outgoing = crate::exported_span!(parent: &span, "llm.request", otel.kind = "client");
        crate::telemetry::trace::own_trace(
            &outgoing,
            crate::telemetry::trace::of_span(&span).as_ref(),
        );
        let request = ModelRequest {
            trace: crate::telemetry::trace::of_span(&outgoing),
            model: ext.as_ref().and_then(|d| d.model.clone()),
            reasoning_effort: ext
                .as_ref()
                .and_then(|d| d.reasoning_effort)
                .map(|e| format!("{e:?}").to_lowercase()),
            messages: self.chat(&state, &history),
            tools: {
                let mut tools = if ext.is_some() {
                    taskledger_domain::agent::tools::specs()
                } else {
                    vec![]
                };
                if let Some(m) = &self.mcp {
                    tools.extend(m.specs().await);
                }
                tools
            },
        };
        // A model that answers at once (polled once) has nothing to wait for.
        let mut call = tracing::Instrument::instrument(
            tracing::Instrument::instrument(self.model.complete(request), outgoing),
            span,
        );
        let response = match futures_util::FutureExt::now_or_never(&mut call) {
            Some(r) => r,
            None => {
                start.say(tasks, task_id).await?;
                call.await
            }
        };
        let response = match response {
            Ok(r) => r,
            Err(e) => {
                start.say(tasks, task_id).await?;
                let said = crate::telemetry::incident("the model provider kept failing", &e);
                tasks.fail_task(task_id, &said).await;
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
            use crate::telemetry::{metrics, TokenKind};
            metrics().tokens(TokenKind::Input, u.input_tokens);
            metrics().tokens(TokenKind::Output, u.output_tokens + u.reasoning_tokens);
            said.metadata
                .get_or_insert_with(Metadata::new)
                .insert(USAGE_KEY.into(), json!(u));
        }
        let usage = response.usage;
        let model = response.model.clone();
        let finished = response.tool_calls.is_empty();
        let final_text = response.text.clone().unwrap_or_default();
        let unsaid = start.unsaid;
        tasks
            .execute(task_id, &|s| {
                let mut cmds = if unsaid { working(s) } else { Vec::new() };
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
                            end_generation: Default::default(),
                            start_generation: Default::default(),
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
        start.unsaid = false;
        if finished {
            return Ok(Some(Outcome::Finished));
        }
        let waiting = self
            .run_tools(tasks, task_id, head, &response.tool_calls, &loaded)
            .await;
        Ok(waiting.then_some(Outcome::Waiting))
    }

    /// The loop for one turn: steps until an outcome, the turn limit (counted over the whole
    /// execution, continuations included), or the budget — then a continuation is recorded.
    async fn run(
        &self,
        tasks: &dyn TaskPort,
        task_id: &TaskId,
        budget: TurnBudget,
    ) -> Result<TurnEnd, AppError> {
        let (state, history) = match tasks.view(task_id).await {
            Ok(view) => view,
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
        let mut view = Some((state, history));
        let mut start = Start { unsaid: true };
        for n in taken..self.max_turns {
            if n > taken && budget.exhausted() {
                start.say(tasks, task_id).await?;
                tasks
                    .execute(task_id, &|_| {
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
            match self.step(tasks, task_id, view.take(), &mut start).await {
                Ok(None) => continue,
                Ok(Some(outcome)) => {
                    debug!(?outcome, "loop ended");
                    if outcome == Outcome::Waiting {
                        // The execution ends here: say so with a status update carrying usage.
                        let r = tasks
                            .execute(task_id, &|_| {
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
                    tasks
                        .fail_task(task_id, "the agent could not record its work")
                        .await;
                    return Ok(TurnEnd::Finished);
                }
            }
        }
        start.say(tasks, task_id).await?;
        tasks.fail_task(task_id, "turn limit reached").await;
        Ok(TurnEnd::Finished)
    }
}

/// The task and its history, as a step reads them.
type View = (Arc<TaskAggregate>, Vec<Message>);

/// Whether the turn has said the task is WORKING yet.
struct Start {
    unsaid: bool,
}

impl Start {
    /// Commits WORKING now, if not said yet.
    async fn say(&mut self, tasks: &dyn TaskPort, task_id: &TaskId) -> Result<(), AppError> {
        if self.unsaid {
            tasks.execute(task_id, &working).await?;
            self.unsaid = false;
        }
        Ok(())
    }
}

/// A turn's start: a task submitted or waiting on its user goes WORKING.
fn working(s: &TaskAggregate) -> Vec<TaskCommand> {
    match s.head().map(|h| h.status.state) {
        Some(TaskState::Submitted | TaskState::InputRequired | TaskState::AuthRequired) => {
            vec![TaskCommand::ChangeStatus {
                state: TaskState::Working,
                message: None,
                at: Timestamp::now(),
            }]
        }
        _ => vec![],
    }
}

#[async_trait]
impl Agent for LlmAgent {
    async fn run_turn(
        &self,
        tasks: Arc<dyn TaskPort>,
        task_id: TaskId,
        _input: Option<Message>,
        budget: TurnBudget,
    ) -> Result<TurnEnd, AppError> {
        // The loop reads the whole history, the input message included.
        let span = tracing::info_span!("agent", task_id = %task_id, kind = "llm");
        self.run(tasks.as_ref(), &task_id, budget)
            .instrument(span)
            .await
    }
}
