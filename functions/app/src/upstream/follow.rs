//! One turn's work on an upstream task (ADR 034): forward the turn's input if the upstream has
//! not had it yet, then follow the upstream task — the answer's stream, then `GetTask` polls
//! with backoff — committing each
//! batch of its events, until it ends or waits for someone, or the turn's window is over and
//! the work continues in a new turn.

use std::sync::Mutex;
use std::time::Duration;

use futures_util::FutureExt;
use taskledger_domain::agent::upstream::UpstreamInterface;
use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::{OutboundError, OutboundEvents};
use taskledger_domain::task::{
    plan_upstream, TaskCommand, TaskHead, UpstreamBatch, UpstreamHead, MAX_UPSTREAM_BATCH,
};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Message, StreamResponse};
use tokio::time::Instant;
use tracing::{debug, warn};

use super::client::{decode, A2aClient, Trouble};
use super::{FollowSettings, RETRY_PAUSE, UPSTREAM_ATTEMPTS};
use crate::agent::{TaskPort, TurnEnd};
use crate::error::AppError;

/// What stops a turn's work on the upstream.
pub(super) enum Stop {
    Trouble(Trouble),
    /// Our side failed (the store): the turn is tried again.
    Ours(AppError),
    /// Our own words for why the upstream's answer cannot be kept (the task fails with them).
    Refused(String),
}

impl From<Trouble> for Stop {
    fn from(t: Trouble) -> Self {
        Stop::Trouble(t)
    }
}

pub(super) struct Follower<'a> {
    client: &'a A2aClient,
    tasks: &'a dyn TaskPort,
    task_id: &'a TaskId,
    work_seq: u64,
    steps: u32,
    mirror: Option<UpstreamHead>,
    settings: FollowSettings,
    until: Instant,
    /// Our task is finished, or another turn follows the upstream task now.
    done: bool,
}

/// Calls `f` up to `UPSTREAM_ATTEMPTS` times while it fails in a way that may pass.
async fn retry<T, F, Fut>(mut f: F) -> Result<T, Trouble>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Trouble>>,
{
    let mut pause = RETRY_PAUSE;
    let mut attempt = 1;
    loop {
        match f().await {
            Err(Trouble::Transient(e)) if attempt < UPSTREAM_ATTEMPTS => {
                warn!(error = %e, attempt, "the upstream agent did not answer; trying again");
                tokio::time::sleep(pause).await;
                pause *= 2;
                attempt += 1;
            }
            r => return r,
        }
    }
}

impl<'a> Follower<'a> {
    pub(super) fn new(
        client: &'a A2aClient,
        tasks: &'a dyn TaskPort,
        task_id: &'a TaskId,
        head: &TaskHead,
        settings: FollowSettings,
        window: Duration,
    ) -> Self {
        Self {
            client,
            tasks,
            task_id,
            work_seq: head.work_requested,
            steps: head.execution_steps,
            mirror: head.upstream.clone(),
            settings,
            until: Instant::now() + window,
            done: false,
        }
    }

    fn at_work(&self) -> bool {
        !self.done && self.mirror.as_ref().is_some_and(UpstreamHead::at_work)
    }

    fn window_over(&self) -> bool {
        Instant::now() >= self.until
    }

    pub(super) async fn run(&mut self, input: Option<Message>) -> Result<TurnEnd, Stop> {
        let card = retry(|| self.client.card()).await?;
        let interface = match self.mirror.as_ref() {
            Some(m) => card.still_offers(&m.interface).cloned().ok_or_else(|| {
                Stop::Refused(format!(
                    "the upstream agent's card no longer offers the JSON-RPC {} interface this \
                     task was linked through",
                    m.interface.split(' ').nth(1).unwrap_or_default()
                ))
            })?,
            None => card.interface.clone(),
        };
        let unsent = self
            .mirror
            .as_ref()
            .is_none_or(|m| m.forwarded < self.work_seq && !m.state.is_terminal());
        if let Some(message) = input.filter(|_| unsent) {
            let link = self
                .mirror
                .as_ref()
                .filter(|m| !m.task_id.is_empty())
                .map(|m| (m.task_id.clone(), m.context_id.clone()));
            let link = link.as_ref().map(|(t, c)| (t.as_str(), c.as_str()));
            if card.streaming {
                let events = retry(|| self.client.send_stream(&interface, &message, link)).await?;
                self.drain(&interface, events, Some(self.work_seq)).await?;
            } else {
                let answer = retry(|| self.client.send(&interface, &message, link)).await?;
                self.commit(&interface, vec![answer], Some(self.work_seq))
                    .await?;
            }
        }
        self.follow(&interface).await
    }

    /// Follows the upstream task until it is no longer at work or the window is over, by
    /// `GetTask` polls with backoff: a snapshot is compared with the mirror, so reading it twice
    /// changes nothing. A resubscription is not used: the official SDKs tap the task's queue
    /// before reading the snapshot they send first, so an artifact chunk enqueued in between
    /// arrives in both, and an append has no sequence number to tell it from the next (ADR 034).
    async fn follow(&mut self, i: &UpstreamInterface) -> Result<TurnEnd, Stop> {
        let mut pause = self.settings.min_poll;
        while self.at_work() {
            if self.window_over() {
                return self.continue_later().await;
            }
            let task_id = self.upstream_task_id();
            let before = self.mirror.as_ref().map_or(0, |m| m.events);
            let task = retry(|| self.client.get_task(i, &task_id)).await?;
            self.commit(i, vec![task], None).await?;
            if !self.at_work() {
                break;
            }
            let moved = self.mirror.as_ref().is_some_and(|m| m.events != before);
            pause = if moved {
                self.settings.min_poll
            } else {
                (pause * 2).min(self.settings.max_poll)
            };
            let left = self.until.saturating_duration_since(Instant::now());
            tokio::time::sleep(pause.min(left)).await;
        }
        Ok(TurnEnd::Finished)
    }

    fn upstream_task_id(&self) -> String {
        self.mirror
            .as_ref()
            .map(|m| m.task_id.clone())
            .unwrap_or_default()
    }

    /// Commits a stream's events batch by batch: each batch is what arrived together (up to
    /// `MAX_UPSTREAM_BATCH`). Ends with the stream, the window, or the upstream task's work.
    async fn drain(
        &mut self,
        i: &UpstreamInterface,
        mut events: Box<dyn OutboundEvents>,
        mut forwarded: Option<u64>,
    ) -> Result<(), Stop> {
        loop {
            let left = self.until.saturating_duration_since(Instant::now());
            let first = match tokio::time::timeout(left, events.next()).await {
                Err(_) | Ok(None) => return Ok(()),
                Ok(Some(Err(e))) => {
                    debug!(error = %e, "the upstream's stream broke off");
                    return match e {
                        OutboundError::TooLarge(_) => Err(Trouble::from(e).into()),
                        _ => Ok(()),
                    };
                }
                Ok(Some(Ok(data))) => data,
            };
            let mut batch = vec![decode(i.protocol, &first)?];
            while batch.len() < MAX_UPSTREAM_BATCH {
                match events.next().now_or_never() {
                    Some(Some(Ok(data))) => batch.push(decode(i.protocol, &data)?),
                    _ => break,
                }
            }
            self.commit(i, batch, forwarded.take()).await?;
            if !self.at_work() {
                return Ok(());
            }
        }
    }

    /// One batch through the one commit path, decided on the task as it is then.
    async fn commit(
        &mut self,
        i: &UpstreamInterface,
        events: Vec<StreamResponse>,
        forwarded: Option<u64>,
    ) -> Result<(), Stop> {
        let after = self.mirror.as_ref().map_or(0, |m| m.events);
        let batch = UpstreamBatch {
            after,
            forwarded,
            interface: i.describe(),
            events,
        };
        let refusal = Mutex::new(None);
        let (state, committed) = self
            .tasks
            .execute(self.task_id, &|s| {
                // A task finished meanwhile (canceled by its owner) records nothing more.
                let Some(head) = s.head().filter(|h| !h.status.state.is_terminal()) else {
                    return vec![];
                };
                match plan_upstream(head, &batch, Timestamp::now()) {
                    Ok(commands) => commands,
                    Err(r) => {
                        if let Ok(mut slot) = refusal.lock() {
                            *slot = Some(r);
                        }
                        vec![]
                    }
                }
            })
            .await
            .map_err(|e| match e {
                AppError::Domain(d) => Stop::Refused(format!(
                    "taskledger's rules refuse what the upstream agent sent: {d}"
                )),
                other => Stop::Ours(other),
            })?;
        if let Some(r) = refusal.lock().ok().and_then(|mut r| r.take()) {
            return Err(Stop::Refused(r.0));
        }
        let Some(head) = state.head() else {
            self.done = true;
            return Ok(());
        };
        let mirror = head.upstream.clone();
        let held = mirror.as_ref().map_or(0, |m| m.events);
        if committed.is_empty() && held != after {
            debug!(task_id = %self.task_id, "another turn follows the upstream task");
            self.done = true;
        }
        if head.status.state.is_terminal() {
            self.done = true;
        }
        self.mirror = mirror;
        Ok(())
    }

    /// The window is over with the upstream still at work: the same work goes on in a new turn
    /// (through the turn queue), which follows the upstream task from where this one stopped.
    async fn continue_later(&mut self) -> Result<TurnEnd, Stop> {
        let (work_seq, steps) = (self.work_seq, self.steps.saturating_add(1));
        self.tasks
            .execute(self.task_id, &|_| {
                vec![TaskCommand::ContinueAgentWork {
                    after: work_seq,
                    steps_taken: steps,
                    at: Timestamp::now(),
                }]
            })
            .await
            .map_err(Stop::Ours)?;
        debug!(task_id = %self.task_id, "the upstream is still at work; following on in a new turn");
        Ok(TurnEnd::Continued)
    }
}
