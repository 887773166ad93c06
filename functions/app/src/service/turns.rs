//! The turn handler every queue, feed and the in-process dispatcher drive: a turn (task, sequence of its
//! `AgentWorkRequested` event) runs the agent on that work; duplicates and superseded turns do
//! nothing, and a finished turn is recorded (`AgentTurnFinished`) so redelivery never repeats it.

use crate::telemetry;
use std::sync::Arc;

use taskledger_domain::agent::turns::{turn_input, AgentTurn, TurnInput};
use taskledger_domain::ids::TaskId;
use taskledger_domain::task::TaskAggregate;
use taskledger_domain::task::{TaskCommand, TaskEvent};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::Message;
use tracing::{warn, Instrument};

use super::agent_port::TurnPort;
use super::ledger::TurnStart;
use super::{Change, Service};
use crate::agent::{TaskPort, TurnBudget, TurnEnd};
use crate::error::AppError;

/// Events one command may append: the window searched for a turn's input message.
const INPUT_WINDOW: u64 = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnOutcome {
    Ran,
    /// Already finished (a redelivery or a replayed feed).
    Duplicate,
    /// A newer work request covers this one; its own turn runs the agent.
    Superseded,
    /// The task is gone or finished.
    Nothing,
    /// The budget ran out first: the work goes on in a continuation turn.
    Continued,
    /// It failed on every attempt: the task failed (`give_up_turn`).
    GivenUp,
}

/// Records the finished turn, decided on the newest state the turn holds of its task.
async fn finish(
    svc: &Service,
    task_id: &TaskId,
    work_seq: u64,
    latest: Option<Arc<TaskAggregate>>,
) -> Result<(), AppError> {
    // Made already: the turn's commit that left the task waiting carried it (`TurnPort`).
    if latest
        .as_ref()
        .and_then(|l| l.head())
        .is_some_and(|h| h.turn_done >= work_seq)
    {
        return Ok(());
    }
    svc.execute(Change::by_agent(task_id).knowing(latest), |_| {
        vec![TaskCommand::FinishAgentTurn {
            work_seq,
            at: Timestamp::now(),
        }]
    })
    .await
    .map(|_| ())
}

/// The reason a dead-lettered turn is given up with.
/// What a task's status says when its turn kept failing (the error itself is logged under the
/// correlation id the status names: `telemetry::incident`).
pub const TURN_FAILED: &str = "the agent's turn kept failing";

pub const DEAD_LETTERED: &str =
    "its queue message was dead-lettered (every receive ended without an answer: the worker \
     crashed or timed out)";

/// Attempts at a turn run in this process (in-process dispatch, the embedded feed) before it is
/// given up and its task fails; a queue counts its own receives (`MAX_RECEIVES` on SQS).
pub const IN_PROCESS_TURN_ATTEMPTS: u32 = 3;
/// The pause before the second attempt; it doubles for each one after.
const IN_PROCESS_RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(200);

/// The turn will not run again (`attempts` made, the last failing with `reason`, or the queue
/// dead-lettered it): its task fails saying why, through the one commit path, unless the work
/// is done or superseded by now (the domain's `liveness`).
pub async fn give_up_turn(
    svc: &Service,
    turn: &AgentTurn,
    attempts: u32,
    reason: &str,
) -> Result<(), AppError> {
    warn!(task_id = %turn.task_id, work_seq = turn.work_seq, attempts, reason, "turn given up; the task fails");
    telemetry::metrics().turn(telemetry::TurnOutcome::GivenUp, None);
    svc.execute(Change::by_agent(&turn.task_id), |_| {
        vec![TaskCommand::GiveUpAgentWork {
            work_seq: turn.work_seq,
            attempts,
            reason: reason.to_string(),
            at: Timestamp::now(),
        }]
    })
    .await
    .map(|_| ())
}

/// Runs a turn in this process up to `IN_PROCESS_TURN_ATTEMPTS` times, pausing between
/// attempts; the last failure gives the turn up (`give_up_turn`).
pub(crate) async fn run_turn_retrying(
    svc: &Arc<Service>,
    turn: &AgentTurn,
    delivery: Delivery,
) -> Result<TurnOutcome, AppError> {
    let mut pause = IN_PROCESS_RETRY_PAUSE;
    let mut attempt = 1;
    loop {
        match run_turn(svc, turn, TurnBudget::unlimited(), delivery).await {
            Ok(outcome) => return Ok(outcome),
            Err(e) if attempt < IN_PROCESS_TURN_ATTEMPTS => {
                warn!(task_id = %turn.task_id, error = %e, attempt, "turn failed; trying again");
                tokio::time::sleep(pause).await;
                pause *= 2;
                attempt += 1;
            }
            Err(e) => {
                give_up_turn(svc, turn, attempt, &telemetry::incident(TURN_FAILED, &e)).await?;
                return Ok(TurnOutcome::GivenUp);
            }
        }
    }
}

/// Runs one turn with no deadline (the embedded worker).
pub async fn handle_turn(svc: &Arc<Service>, turn: &AgentTurn) -> Result<TurnOutcome, AppError> {
    handle_turn_within(svc, turn, TurnBudget::unlimited()).await
}

/// Runs one turn: the agent works on the input that requested it until done or out of budget
/// (then it records a continuation, a new turn), and a finished turn is recorded.
pub async fn handle_turn_within(
    svc: &Arc<Service>,
    turn: &AgentTurn,
    budget: TurnBudget,
) -> Result<TurnOutcome, AppError> {
    run_turn(svc, turn, budget, Delivery::AtLeastOnce).await
}

/// How often a turn may be delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// From a queue or a feed: a finished turn is recorded so a redelivery does nothing.
    AtLeastOnce,
    /// Handed over once in this process (in-process dispatch): no record is needed.
    Once,
}

pub(crate) async fn run_turn(
    svc: &Arc<Service>,
    turn: &AgentTurn,
    budget: TurnBudget,
    delivery: Delivery,
) -> Result<TurnOutcome, AppError> {
    let task_id = &turn.task_id;
    // The one read of the task's state this handler makes: what this process's commit of the
    // request left, if it kept it; else the store's state.
    let Some(TurnStart { state, commit }) = svc.ledger().for_turn(task_id, turn.work_seq).await?
    else {
        return Ok(TurnOutcome::Nothing);
    };
    let Some(head) = state.head() else {
        return Ok(TurnOutcome::Nothing);
    };
    if head.turn_done >= turn.work_seq {
        return Ok(TurnOutcome::Duplicate);
    }
    // Neither case needs a record: a redelivery finds the same newer request or final state.
    if head.work_requested > turn.work_seq {
        return Ok(TurnOutcome::Superseded);
    }
    if head.status.state.is_terminal() {
        return Ok(TurnOutcome::Nothing);
    }
    let found = commit
        .as_ref()
        .map(|c| turn_input(c.numbered(), turn.work_seq));
    let input = match found {
        Some(TurnInput::Input(input)) => input.map(|m| *m),
        _ => match input_from_log(svc, turn).await? {
            Some(input) => input,
            None => return Ok(TurnOutcome::Nothing),
        },
    };
    // The turn joins the trace of the commit that asked for it; what the agent commits joins
    // the turn's (ADR 033).
    let parent = telemetry::trace::stored(turn.trace.as_deref());
    let span = tracing::info_span!(
        "agent.turn",
        task_id = %task_id,
        context_id = %head.context_id,
        work_seq = turn.work_seq,
        outcome = tracing::field::Empty
    );
    telemetry::trace::set_parent(&span, parent.as_ref());
    let record = (delivery == Delivery::AtLeastOnce).then_some(turn.work_seq);
    let turn_port = Arc::new(TurnPort::new(svc.clone(), state, record));
    let port: Arc<dyn TaskPort> = turn_port.clone();
    let started = std::time::Instant::now();
    let ran = telemetry::trace::within(
        parent,
        svc.agent()
            .run_turn(port, task_id.clone(), input, budget)
            .instrument(span.clone()),
    )
    .await;
    let outcome = match &ran {
        Ok(TurnEnd::Continued) => telemetry::TurnOutcome::Continued,
        Ok(_) => telemetry::TurnOutcome::Ran,
        Err(_) => telemetry::TurnOutcome::Failed,
    };
    span.record("outcome", outcome.label());
    telemetry::metrics().turn(outcome, Some(started.elapsed()));
    let end = ran?;
    if end == TurnEnd::Continued {
        // The continuation's newer request supersedes this turn: no record needed.
        return Ok(TurnOutcome::Continued);
    }
    // A task that waits (input required, sub-tasks) needs the record, or a redelivery would run
    // the agent on it again; one the turn finished needs none (a redelivery finds it terminal).
    if delivery == Delivery::Once {
        return Ok(TurnOutcome::Ran);
    }
    // A task the turn finished records nothing more (the aggregate's rule: decided on the state
    // the turn's last commit left, nothing, without a second look at the store).
    finish(svc, task_id, turn.work_seq, turn_port.latest()).await?;
    Ok(TurnOutcome::Ran)
}

/// The input of a turn, read from the task's log around its work request; `None` when no work
/// request was committed at that sequence (an emulator's stream may replay a write it rolled
/// back, whose sequence number a different event may hold by now).
async fn input_from_log(
    svc: &Service,
    turn: &AgentTurn,
) -> Result<Option<Option<Message>>, AppError> {
    let from = turn.work_seq.saturating_sub(INPUT_WINDOW);
    let events = svc.events(&turn.task_id, from).await?;
    let decoded: Vec<(u64, TaskEvent)> = events
        .iter()
        .filter_map(|e| e.decode().ok().map(|d| (e.seq, d)))
        .collect();
    match turn_input(decoded.iter().map(|(seq, e)| (*seq, e)), turn.work_seq) {
        TurnInput::NotRequested => {
            warn!(task_id = %turn.task_id, work_seq = turn.work_seq, "no work request at this sequence; the turn does nothing");
            Ok(None)
        }
        TurnInput::Input(input) => Ok(Some(input.map(|m| *m))),
        // Nothing but answered help requests in the window: no input message.
        TurnInput::Undecided => Ok(Some(None)),
    }
}
