//! The conformance kit's scenarios that no model can play through the intrinsic tools (a
//! direct Message reply, REJECTED / AUTH_REQUIRED / INPUT_REQUIRED on a plain task, timed
//! pauses, chunked artifacts, file and data parts) and the liveness faults, keyed by
//! `messageId` prefix — only when a deployment turns them on (`conformance`: off by default;
//! the conformance runs and the tests turn it on), and a rule that ends a task otherwise than
//! by doing its work (rejected, failed, stalled) only for a message whose sender may end it
//! (the owner or an admin). Every other message goes to the model loop on the scripted model,
//! which reads the prefixes it can play (replies only).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use taskledger_domain::agent::scripted::ScriptedModel;
use taskledger_domain::error::DomainError;
use taskledger_domain::ids::TaskId;
use taskledger_domain::task::TaskCommand;
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Artifact, Message, Part, PartContent, TaskState};
use tracing::{debug, warn, Instrument};

use super::llm::{LlmAgent, DEFAULT_MAX_TURNS};
use super::{Agent, TaskPort, TurnBudget, TurnEnd};
use crate::error::AppError;

/// One step of a rule: commands committed together, a pause, or the turn failing.
enum Step {
    Commit(Vec<TaskCommand>),
    Pause(Duration),
    Fail(&'static str),
}

/// The conformance kit's scenarios no model can play through the intrinsic tools, keyed by
/// `messageId` prefix (longest first where prefixes overlap). Any other message goes to the
/// model loop, whose `ScriptedModel` reads the prefixes it can play.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    InputRequired,
    AuthRequired,
    DelayedComplete,
    RejectTask,
    /// A direct Message reply; sent to an existing task, it goes to the model loop.
    MessageResponse,
    ArtifactFileUrl,
    ArtifactFile,
    ArtifactData,
    StreamChunked,
    StreamDirect,
    Resubscribe,
    /// Faults for the liveness paths: every turn fails (an error, as a store outage gives),
    /// or the task goes WORKING and its turn hangs without another word.
    TurnFails,
    TurnStalls,
}

const PREFIXES: [(&str, Scenario); 13] = [
    ("tck-input-required", Scenario::InputRequired),
    ("tck-auth-required", Scenario::AuthRequired),
    ("tck-delayed-complete", Scenario::DelayedComplete),
    ("tck-reject-task", Scenario::RejectTask),
    ("tck-message-response", Scenario::MessageResponse),
    ("tck-artifact-file-url", Scenario::ArtifactFileUrl),
    ("tck-artifact-file", Scenario::ArtifactFile),
    ("tck-artifact-data", Scenario::ArtifactData),
    ("tck-stream-artifact-chunked", Scenario::StreamChunked),
    ("tck-stream-002", Scenario::StreamDirect),
    ("test-resubscribe-message-id", Scenario::Resubscribe),
    ("fault-turn-fails", Scenario::TurnFails),
    ("fault-turn-stalls", Scenario::TurnStalls),
];

impl Scenario {
    /// Whether the rule ends the task otherwise than by doing its work: only a sender who may
    /// end the task (`TaskHead::may_end_for`) steers it there.
    pub fn ends_task(self) -> bool {
        matches!(self, Self::RejectTask | Self::TurnFails | Self::TurnStalls)
    }

    pub fn of(message_id: &str) -> Option<Self> {
        PREFIXES
            .iter()
            .find(|(p, _)| message_id.starts_with(p))
            .map(|(_, s)| *s)
    }
}

/// Pauses of the timed scenarios.
#[derive(Debug, Clone)]
pub struct ScenarioTimings {
    /// `tck-delayed-complete`: how long the task stays WORKING.
    pub delayed_complete: Duration,
    /// `test-resubscribe-message-id`: at least twice the kit's streaming timeout.
    pub resubscribe: Duration,
    /// `fault-turn-stalls`: how long the turn hangs after going WORKING.
    pub stall: Duration,
}

impl Default for ScenarioTimings {
    fn default() -> Self {
        Self {
            delayed_complete: Duration::from_millis(1500),
            resubscribe: Duration::from_millis(4500),
            stall: Duration::from_secs(3600),
        }
    }
}

pub struct ScenarioAgent {
    timings: ScenarioTimings,
    /// Whether the conformance and fault rules apply (else every message goes to the model
    /// loop).
    conformance: bool,
    /// Everything the rules do not cover: the model loop on the scripted model.
    model_loop: Arc<LlmAgent>,
}

impl ScenarioAgent {
    /// The agent with its conformance and fault rules: what the kits and the tests steer.
    pub fn new(timings: ScenarioTimings) -> Arc<Self> {
        Self::configured(timings, true)
    }

    /// The agent, its conformance and fault rules on or off (a deployment's
    /// `--conformance-scenarios`).
    pub fn configured(timings: ScenarioTimings, conformance: bool) -> Arc<Self> {
        Arc::new(Self {
            timings,
            conformance,
            model_loop: LlmAgent::new(Arc::new(ScriptedModel), DEFAULT_MAX_TURNS),
        })
    }

    /// The scenario `message` steers to, if the rules are on.
    fn scenario_of(&self, message: &Message) -> Option<Scenario> {
        self.conformance
            .then(|| Scenario::of(&message.message_id))
            .flatten()
    }

    /// The rule for a scenario no model can play through tools, or `None`: the model loop.
    fn rule(&self, scenario: Scenario) -> Option<Vec<Step>> {
        let now = Timestamp::now;
        let working = || TaskCommand::ChangeStatus {
            state: TaskState::Working,
            message: None,
            at: now(),
        };
        let finish = |state: TaskState, text: &str| TaskCommand::ChangeStatus {
            state,
            message: Some(agent_message(text)),
            at: now(),
        };
        let artifact = |part: Part, append: bool, last_chunk: bool| TaskCommand::AddArtifact {
            artifact: Artifact {
                artifact_id: "result".into(),
                name: Some("result".into()),
                description: None,
                parts: vec![part],
                metadata: None,
                extensions: vec![],
                end_generation: Default::default(),
                start_generation: Default::default(),
            },
            append,
            last_chunk,
            at: now(),
        };
        let complete_with = |part: Part| {
            vec![Step::Commit(vec![
                working(),
                artifact(part, false, true),
                finish(TaskState::Completed, "Task completed"),
            ])]
        };
        Some(match scenario {
            Scenario::InputRequired => vec![Step::Commit(vec![
                working(),
                finish(TaskState::InputRequired, "Please provide more input"),
            ])],
            Scenario::AuthRequired => vec![Step::Commit(vec![
                working(),
                finish(
                    TaskState::AuthRequired,
                    "Authentication is required to continue",
                ),
            ])],
            Scenario::RejectTask => vec![Step::Commit(vec![finish(
                TaskState::Rejected,
                "Task rejected",
            )])],
            Scenario::DelayedComplete => vec![
                Step::Commit(vec![working()]),
                Step::Pause(self.timings.delayed_complete),
                Step::Commit(vec![finish(TaskState::Completed, "Delayed task completed")]),
            ],
            Scenario::Resubscribe => vec![
                Step::Commit(vec![working()]),
                Step::Pause(self.timings.resubscribe),
                Step::Commit(vec![finish(TaskState::Completed, "Task completed")]),
            ],
            Scenario::ArtifactFile => complete_with(Part {
                content: PartContent::Raw(b"file content".to_vec()),
                metadata: None,
                filename: Some("output.txt".into()),
                media_type: Some("text/plain".into()),
            }),
            Scenario::ArtifactFileUrl => complete_with(Part {
                content: PartContent::Url("https://example.com/output.txt".into()),
                metadata: None,
                filename: Some("output.txt".into()),
                media_type: Some("text/plain".into()),
            }),
            Scenario::ArtifactData => complete_with(Part {
                content: PartContent::Data(json!({"key": "value", "count": 42})),
                metadata: None,
                filename: None,
                media_type: Some("application/json".into()),
            }),
            Scenario::StreamChunked => vec![
                Step::Commit(vec![
                    working(),
                    artifact(Part::text("chunk-1 "), false, false),
                ]),
                Step::Commit(vec![artifact(Part::text("chunk-2"), true, true)]),
                Step::Commit(vec![finish(TaskState::Completed, "Task completed")]),
            ],
            Scenario::StreamDirect => vec![Step::Commit(vec![finish(
                TaskState::Completed,
                "Task completed",
            )])],
            Scenario::TurnFails => vec![Step::Fail("scripted fault: the turn fails")],
            Scenario::TurnStalls => vec![
                Step::Commit(vec![working()]),
                Step::Pause(self.timings.stall),
            ],
            Scenario::MessageResponse => return None,
        })
    }
}

fn agent_message(text: &str) -> Message {
    Message::agent_text(uuid::Uuid::new_v4().to_string(), text)
}

#[async_trait]
impl Agent for ScenarioAgent {
    fn direct_reply(&self, message: &Message) -> Option<Message> {
        if self.scenario_of(message) != Some(Scenario::MessageResponse) {
            return None;
        }
        let mut reply = agent_message("Direct message response");
        reply.context_id = Some(
            message
                .context_id
                .clone()
                .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
        );
        Some(reply)
    }

    async fn run_turn(
        &self,
        tasks: Arc<dyn TaskPort>,
        task_id: TaskId,
        input: Option<Message>,
        budget: TurnBudget,
    ) -> Result<TurnEnd, AppError> {
        let mut scenario = input.as_ref().and_then(|m| self.scenario_of(m));
        if let (Some(s), Some(m)) = (scenario, input.as_ref()) {
            if s.ends_task() {
                let (state, _) = tasks.view(&task_id).await?;
                if !state.head().is_some_and(|h| h.may_end_for(m)) {
                    debug!(
                        ?s,
                        "the sender may not end the task: the model loop answers"
                    );
                    scenario = None;
                }
            }
        }
        let rule = scenario.and_then(|s| self.rule(s).map(|steps| (s, steps)));
        match rule {
            Some((scenario, steps)) => {
                let span = tracing::info_span!("agent", task_id = %task_id, ?scenario);
                run_rule(tasks.as_ref(), &task_id, steps)
                    .instrument(span)
                    .await?;
                Ok(TurnEnd::Finished)
            }
            None => {
                self.model_loop
                    .run_turn(tasks, task_id, input, budget)
                    .await
            }
        }
    }
}

/// Commits a rule's steps in order, pausing where it says; a failing step fails the turn.
async fn run_rule(
    tasks: &dyn TaskPort,
    task_id: &TaskId,
    steps: Vec<Step>,
) -> Result<(), AppError> {
    for step in steps {
        match step {
            Step::Pause(d) => tokio::time::sleep(d).await,
            Step::Fail(why) => {
                return Err(AppError::Store(
                    taskledger_domain::ports::StoreError::Unavailable(why.into()),
                ))
            }
            Step::Commit(commands) => match tasks.execute(task_id, &|_| commands.clone()).await {
                Ok(_) => {}
                // Canceled (or finished by another turn) meanwhile: nothing left to do.
                Err(AppError::Domain(DomainError::TaskTerminal { .. })) => {
                    debug!("task became terminal, stopping");
                    return Ok(());
                }
                Err(e) => {
                    warn!(error = %e, "agent step failed");
                    tasks
                        .fail_task(task_id, "the agent could not record its work")
                        .await;
                    return Ok(());
                }
            },
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_pick_rules_longest_first() {
        assert_eq!(
            Scenario::of("tck-artifact-file-url-1a2b"),
            Some(Scenario::ArtifactFileUrl)
        );
        assert_eq!(
            Scenario::of("tck-artifact-file-1a2b"),
            Some(Scenario::ArtifactFile)
        );
        assert_eq!(
            Scenario::of("tck-stream-artifact-chunked-x"),
            Some(Scenario::StreamChunked)
        );
        assert_eq!(
            Scenario::of("tck-stream-002-x"),
            Some(Scenario::StreamDirect)
        );
        // what a model can play goes to the model loop
        for id in [
            "tck-stream-ordering-001",
            "tck-artifact-text-1",
            "tck-complete-task-1",
            "th-ask-bob",
            "hello",
        ] {
            assert_eq!(Scenario::of(id), None, "{id}");
        }
    }
}
