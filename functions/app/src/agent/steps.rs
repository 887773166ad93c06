//! What a conformance rule does, step by step: commits of commands decided together, pauses,
//! a hold until the task ends, or the turn failing. Shared by both conformance contracts (the
//! a2a-tck kit's `messageId` prefixes in `scenario`, ACTS's text prefixes in `acts`).

use std::time::Duration;

use taskledger_domain::error::DomainError;
use taskledger_domain::ids::TaskId;
use taskledger_domain::task::TaskCommand;
use taskledger_domain::wire::Message;
use tracing::{debug, warn};

use super::TaskPort;
use crate::error::AppError;

/// How often a hold looks whether its task has ended.
pub const HOLD_POLL: Duration = Duration::from_millis(100);

/// One step of a rule.
pub enum Step {
    Commit(Vec<TaskCommand>),
    Pause(Duration),
    /// Wait until the task is terminal (canceled, by a client), at most this long; the steps
    /// after it run only if it did not end.
    HoldUntilTerminal(Duration),
    Fail(&'static str),
}

/// An agent message with a fresh id.
pub fn agent_message(text: &str) -> Message {
    Message::agent_text(uuid::Uuid::new_v4().to_string(), text)
}

/// Commits a rule's steps in order, pausing where it says; a failing step fails the turn. A
/// task that ends meanwhile (canceled, or finished by another turn) ends the rule quietly.
pub async fn run(tasks: &dyn TaskPort, task_id: &TaskId, steps: Vec<Step>) -> Result<(), AppError> {
    for step in steps {
        match step {
            Step::Pause(d) => tokio::time::sleep(d).await,
            Step::HoldUntilTerminal(at_most) => {
                if ended_within(tasks, task_id, at_most).await {
                    debug!("task ended during the hold");
                    return Ok(());
                }
            }
            Step::Fail(why) => {
                return Err(AppError::Store(
                    taskledger_domain::ports::StoreError::Unavailable(why.into()),
                ))
            }
            Step::Commit(commands) => match tasks.execute(task_id, &|_| commands.clone()).await {
                Ok(_) => {}
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

/// Whether the task is terminal, looking every `HOLD_POLL` for at most `at_most`.
async fn ended_within(tasks: &dyn TaskPort, task_id: &TaskId, at_most: Duration) -> bool {
    let until = tokio::time::Instant::now() + at_most;
    loop {
        let ended = match tasks.view(task_id).await {
            Ok((state, _)) => state.head().is_none_or(|h| h.status.state.is_terminal()),
            Err(_) => true,
        };
        if ended {
            return true;
        }
        if tokio::time::Instant::now() >= until {
            return false;
        }
        tokio::time::sleep(HOLD_POLL).await;
    }
}
