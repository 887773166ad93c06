//! A custom agent in Rust, in the same binary (issue 52, item 4): the whole of what an agent
//! may do is the port it is handed — read the task (`TaskPort::view`), commit messages,
//! artifacts and status changes through the ledger (`TaskPort::execute`, each command decided
//! by the task's rules and held by the gate like any other), ask for input (a status of
//! INPUT_REQUIRED with its question; the answer comes back as the next turn's input), fail the
//! task (`TaskPort::fail_task`). Everything around the task — durable events, streams, push,
//! retention, sharing, the board, traces — is taskledger's.
//!
//! `Greeter` greets whoever names themselves: "hello, NAME" as an artifact, and the task is
//! COMPLETED; a message that names nobody is answered with a question, and the task waits for
//! the answer. Build it into the local server with `--custom-agent greeter`, into the worker
//! Lambda with `TASKLEDGER_CUSTOM_AGENT=greeter`.

use std::sync::Arc;

use async_trait::async_trait;
use taskledger_app::agent::{Agent, TaskPort, TurnBudget, TurnEnd};
use taskledger_app::AppError;
use taskledger_domain::ids::TaskId;
use taskledger_domain::task::TaskCommand;
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Artifact, Message, Part, TaskState};

/// The longest name greeted; a longer one is asked for again.
pub const MAX_NAME_CHARS: usize = 100;

/// The example agent.
#[derive(Debug, Default)]
pub struct Greeter;

/// The agent, as the binaries take it.
pub fn greeter() -> Arc<dyn Agent> {
    Arc::new(Greeter)
}

/// The custom agents built in, by the name a deployment picks them with.
pub fn by_name(name: &str) -> Option<Arc<dyn Agent>> {
    match name.trim() {
        "greeter" => Some(greeter()),
        _ => None,
    }
}

/// The name a message gives: its words, trimmed; none if empty or too long.
fn name_in(message: Option<&Message>) -> Option<String> {
    let text = message?.text();
    let name = text.trim();
    (!name.is_empty() && name.chars().count() <= MAX_NAME_CHARS).then(|| name.to_string())
}

#[async_trait]
impl Agent for Greeter {
    async fn run_turn(
        &self,
        tasks: Arc<dyn TaskPort>,
        task_id: TaskId,
        input: Option<Message>,
        _budget: TurnBudget,
    ) -> Result<TurnEnd, AppError> {
        // The task as it is: a finished one is left alone.
        let (state, _history) = tasks.view(&task_id).await?;
        if state.head().is_none_or(|h| h.status.state.is_terminal()) {
            return Ok(TurnEnd::Finished);
        }
        let said = |text: String| Message::agent_text(uuid::Uuid::new_v4().to_string(), text);
        // Each `execute` is one commit; the closure is decided on the task's state then (and
        // again, should another commit have come first).
        let commands: Vec<TaskCommand> = match name_in(input.as_ref()) {
            Some(name) => vec![
                TaskCommand::AddArtifact {
                    artifact: Artifact {
                        artifact_id: "greeting".into(),
                        name: Some("greeting".into()),
                        description: None,
                        parts: vec![Part::text(format!("hello, {name}"))],
                        metadata: None,
                        extensions: vec![],
                        start_generation: None,
                        end_generation: None,
                    },
                    append: false,
                    last_chunk: true,
                    at: Timestamp::now(),
                },
                TaskCommand::ChangeStatus {
                    state: TaskState::Completed,
                    message: Some(said(format!("Greeted {name}."))),
                    at: Timestamp::now(),
                },
            ],
            None => vec![TaskCommand::ChangeStatus {
                state: TaskState::InputRequired,
                message: Some(said("Who should I greet?".into())),
                at: Timestamp::now(),
            }],
        };
        tasks.execute(&task_id, &|_| commands.clone()).await?;
        Ok(TurnEnd::Finished)
    }
}
