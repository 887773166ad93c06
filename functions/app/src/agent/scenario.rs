//! The conformance kits' test-agent contracts — only when a deployment turns them on
//! (`conformance`: off by default; the conformance runs and the tests turn it on). The a2a-tck
//! kit's scenarios that no model can play through the intrinsic tools (a direct Message reply,
//! REJECTED / AUTH_REQUIRED / INPUT_REQUIRED on a plain task, timed pauses, chunked artifacts,
//! file and data parts) and the liveness faults are keyed by `messageId` prefix; ACTS's
//! behaviours (`acts`) by the first text part of the message, or of the task's first message
//! for a continuation. A message the `messageId` contract names (a scenario here, or a script
//! of the scripted model) is that contract's; every message neither names goes to the model
//! loop on the scripted model. A rule or behaviour that ends a task otherwise than by doing its
//! work (rejected, failed, stalled, held until canceled) follows only a message whose sender
//! may end the task (the owner or an admin).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use taskledger_domain::agent::scripted::{Script, ScriptedModel};
use taskledger_domain::ids::TaskId;
use taskledger_domain::task::{TaskAggregate, TaskCommand, TaskEvent};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Artifact, Message, Part, PartContent, TaskState};
use tracing::{debug, Instrument};

use super::acts::{self, ActsTimings, Behavior};
use super::llm::{LlmAgent, DEFAULT_MAX_TURNS};
use super::steps::{self, agent_message, Step};
use super::{Agent, Build, SubTask, TaskPort, TurnBudget, TurnEnd};
use crate::error::AppError;

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

/// Whether the sender of `m` may end the task (`TaskHead::may_end_for`).
async fn may_end(tasks: &dyn TaskPort, task_id: &TaskId, m: &Message) -> Result<bool, AppError> {
    let (state, _) = tasks.view(task_id).await?;
    Ok(state.head().is_some_and(|h| h.may_end_for(m)))
}

/// Whether the `messageId` contract names `message_id`: a scenario rule, or a script the
/// scripted model plays (anything but its echo). Such a message is never read for ACTS.
fn kit_names(message_id: &str) -> bool {
    Scenario::of(message_id).is_some() || Script::of(message_id) != Script::Echo
}

/// The ACTS behaviour a message names, unless the `messageId` contract has it.
fn acts_behavior(m: &Message) -> Option<Behavior> {
    (!kit_names(&m.message_id)).then(|| acts::of(m)).flatten()
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
    /// ACTS's timed behaviours (`tck-long-running`, `tck-cancel`).
    pub acts: ActsTimings,
}

impl Default for ScenarioTimings {
    fn default() -> Self {
        Self {
            delayed_complete: Duration::from_millis(1500),
            resubscribe: Duration::from_millis(4500),
            stall: Duration::from_secs(3600),
            acts: ActsTimings::default(),
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
    /// The A2A client `tck-client-parse` asks to parse (none: that behaviour fails saying so).
    client: Option<Arc<dyn acts::ClientProbe>>,
}

impl ScenarioAgent {
    /// The agent with its conformance and fault rules: what the kits and the tests steer.
    pub fn new(timings: ScenarioTimings) -> Arc<Self> {
        Self::configured(timings, true)
    }

    /// The agent, its conformance and fault rules on or off (a deployment's
    /// `--conformance-scenarios`).
    pub fn configured(timings: ScenarioTimings, conformance: bool) -> Arc<Self> {
        Self::with_client(timings, conformance, None)
    }

    /// The agent, with the A2A client ACTS's client tests ask to parse (`tck-client-parse`).
    pub fn with_client(
        timings: ScenarioTimings,
        conformance: bool,
        client: Option<Arc<dyn acts::ClientProbe>>,
    ) -> Arc<Self> {
        Arc::new(Self {
            timings,
            conformance,
            model_loop: LlmAgent::new(Arc::new(ScriptedModel), DEFAULT_MAX_TURNS),
            client,
        })
    }

    /// `tck-client-parse`: what the client made of the message's canned payload.
    async fn client_parse(&self, input: Option<&Message>) -> Vec<Step> {
        let parsed = match (&self.client, input.and_then(acts::client_request)) {
            (Some(client), Some((operation, payload))) => {
                Ok(client.parse(&operation, payload).await)
            }
            (None, _) => Err("tck-client-parse: no A2A client is configured here".to_string()),
            (_, None) => {
                Err("tck-client-parse needs a data part {operation, wire_payload}".to_string())
            }
        };
        acts::client_parse_steps(parsed)
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

#[async_trait]
impl Agent for ScenarioAgent {
    fn direct_reply(&self, message: &Message) -> Option<Message> {
        if !self.conformance {
            return None;
        }
        if Scenario::of(&message.message_id) == Some(Scenario::MessageResponse) {
            let mut reply = agent_message("Direct message response");
            reply.context_id = Some(
                message
                    .context_id
                    .clone()
                    .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
            );
            return Some(reply);
        }
        (acts_behavior(message) == Some(Behavior::MessageResponse))
            .then(|| acts::direct_reply(message))
    }

    async fn run_turn(
        &self,
        tasks: Arc<dyn TaskPort>,
        task_id: TaskId,
        input: Option<Message>,
        budget: TurnBudget,
    ) -> Result<TurnEnd, AppError> {
        if !self.conformance {
            return self
                .model_loop
                .run_turn(tasks, task_id, input, budget)
                .await;
        }
        let named = input.as_ref().filter(|m| kit_names(&m.message_id));
        let mut scenario = named.and_then(|m| Scenario::of(&m.message_id));
        if let (Some(s), Some(m)) = (scenario, input.as_ref()) {
            if s.ends_task() && !may_end(tasks.as_ref(), &task_id, m).await? {
                debug!(
                    ?s,
                    "the sender may not end the task: the model loop answers"
                );
                scenario = None;
            }
        }
        let rule = scenario.and_then(|scenario| {
            self.rule(scenario)
                .map(|steps| (format!("{scenario:?}"), steps))
        });
        if let Some((rule, steps)) = rule {
            return self.play(tasks.as_ref(), &task_id, &rule, steps).await;
        }
        // A turn without an input message (resolved sub-tasks, a continuation) is the loop's.
        if named.is_some() || input.is_none() {
            return self
                .model_loop
                .run_turn(tasks, task_id, input, budget)
                .await;
        }
        // ACTS: the message names a behaviour, or the task's first message did.
        let (mut behavior, tasks) = match input.as_ref().and_then(acts_behavior) {
            Some(b) => (Some(b), tasks),
            None => {
                let (behavior, viewed) = opening_behavior(tasks, &task_id).await?;
                (behavior, viewed)
            }
        };
        if let (Some(b), Some(m)) = (behavior.as_ref(), input.as_ref()) {
            if b.ends_task() && !may_end(tasks.as_ref(), &task_id, m).await? {
                debug!(
                    ?b,
                    "the sender may not end the task: the model loop answers"
                );
                behavior = None;
            }
        }
        let steps = match behavior.as_ref() {
            Some(b @ Behavior::ClientParse) => Some((b, self.client_parse(input.as_ref()).await)),
            b => b.and_then(|b| {
                acts::steps(b, &task_id, input.as_ref(), self.timings.acts).map(|s| (b, s))
            }),
        };
        match steps {
            Some((b, steps)) => {
                self.play(tasks.as_ref(), &task_id, &format!("{b:?}"), steps)
                    .await
            }
            None => {
                self.model_loop
                    .run_turn(tasks, task_id, input, budget)
                    .await
            }
        }
    }
}

impl ScenarioAgent {
    async fn play(
        &self,
        tasks: &dyn TaskPort,
        task_id: &TaskId,
        rule: &str,
        steps: Vec<Step>,
    ) -> Result<TurnEnd, AppError> {
        let span = tracing::info_span!("agent", task_id = %task_id, rule);
        steps::run(tasks, task_id, steps).instrument(span).await?;
        Ok(TurnEnd::Finished)
    }
}

/// The ACTS behaviour the task's first message names (a continuation says none itself), and
/// the port to go on with: the view read for it is handed to the model loop as its first, so
/// a turn on a task of neither contract reads its task no more often than before.
async fn opening_behavior(
    tasks: Arc<dyn TaskPort>,
    task_id: &TaskId,
) -> Result<(Option<Behavior>, Arc<dyn TaskPort>), AppError> {
    let view = tasks.view(task_id).await?;
    let behavior = view.1.first().and_then(acts_behavior);
    let port = Arc::new(Viewed {
        inner: tasks,
        first: Mutex::new(Some(view)),
    });
    Ok((behavior, port))
}

/// A port whose first view is one already read.
struct Viewed {
    inner: Arc<dyn TaskPort>,
    first: Mutex<Option<(Arc<TaskAggregate>, Vec<Message>)>>,
}

#[async_trait]
impl TaskPort for Viewed {
    async fn execute(
        &self,
        task_id: &TaskId,
        build: Build<'_>,
    ) -> Result<(Arc<TaskAggregate>, Vec<TaskEvent>), AppError> {
        // A commit makes the view read before it stale.
        if let Ok(mut first) = self.first.lock() {
            first.take();
        }
        self.inner.execute(task_id, build).await
    }

    async fn view(&self, task_id: &TaskId) -> Result<(Arc<TaskAggregate>, Vec<Message>), AppError> {
        let first = self.first.lock().ok().and_then(|mut f| f.take());
        match first {
            Some(v) if v.0.head().is_some_and(|h| &h.id == task_id) => Ok(v),
            _ => self.inner.view(task_id).await,
        }
    }

    async fn spawn_subtask(&self, parent: &TaskId, sub: SubTask) -> Result<TaskId, AppError> {
        self.inner.spawn_subtask(parent, sub).await
    }

    async fn fail_task(&self, task_id: &TaskId, reason: &str) {
        self.inner.fail_task(task_id, reason).await
    }
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
