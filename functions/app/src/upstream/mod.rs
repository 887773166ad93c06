//! The upstream forwarder (ADR 034): an A2A agent a team already serves does a task's work,
//! and taskledger keeps the task. A turn sends the user's message to the upstream (as a
//! stream where the upstream streams, else non-blocking), follows the upstream task — its
//! stream, then `GetTask` polls with backoff — and commits each batch of its
//! events through the one commit path (`task::plan_upstream`: in order, once, within bounds).
//! A turn follows for at most its window and then continues in a new turn through the turn
//! queue, so long work never holds a worker; the upstream's INPUT_REQUIRED is ours, the
//! user's answer goes back to the same upstream task, our cancel cancels it, and its end ends
//! ours. An upstream that cannot be reached is retried with backoff, then the turn fails and
//! the liveness rules give it up (the task FAILED, saying why); one that answers what A2A does
//! not allow fails the task with a clear status message and nothing of it stored.

mod client;
mod follow;
mod probe;
mod spans;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use taskledger_domain::agent::upstream::Advertised;
use taskledger_domain::ids::TaskId;
use taskledger_domain::ports::Outbound;
use taskledger_domain::task::TaskHead;
use taskledger_domain::wire::Message;
use tracing::{debug, warn, Instrument};

use crate::agent::{Agent, TaskPort, TurnBudget, TurnEnd};
use crate::error::AppError;

pub use client::{A2aClient, Trouble, CARD_REVALIDATE_EVERY};
pub use probe::{ClientParser, PROBE_TIMEOUT};

/// How long one turn follows an upstream task before it continues in a new turn.
pub const DEFAULT_FOLLOW_WINDOW: Duration = Duration::from_secs(60);
/// Every turn follows the upstream at least this long, whatever its budget (the model loop's
/// rule: a turn always takes its first step): a turn that had none left would only record a
/// continuation, and the next the same, without ever reading the upstream. The margin before
/// a Lambda invocation's deadline covers it.
pub const MIN_FOLLOW_WINDOW: Duration = Duration::from_secs(1);
/// The first pause between two polls of an upstream task that does not stream; it doubles
/// while nothing changes, up to `MAX_POLL_PAUSE`.
pub const MIN_POLL_PAUSE: Duration = Duration::from_millis(250);
pub const MAX_POLL_PAUSE: Duration = Duration::from_secs(5);
/// Attempts at one call to an upstream that cannot be reached, in one turn; then the turn fails
/// (and is tried again and given up by the turn's own rules).
pub const UPSTREAM_ATTEMPTS: u32 = 3;
/// The pause before the second attempt; it doubles for each one after.
const RETRY_PAUSE: Duration = Duration::from_millis(200);
/// How long our cancel waits for the upstream's.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

/// How the forwarder follows long work.
#[derive(Debug, Clone, Copy)]
pub struct FollowSettings {
    /// How long one turn follows an upstream task (less, when the turn's budget is shorter).
    pub window: Duration,
    pub min_poll: Duration,
    pub max_poll: Duration,
    /// How long the upstream's card is trusted before it is revalidated.
    pub card_ttl: Duration,
}

impl Default for FollowSettings {
    fn default() -> Self {
        Self {
            window: DEFAULT_FOLLOW_WINDOW,
            min_poll: MIN_POLL_PAUSE,
            max_poll: MAX_POLL_PAUSE,
            card_ttl: CARD_REVALIDATE_EVERY,
        }
    }
}

/// The upstream agent as the worker.
pub struct UpstreamAgent {
    client: Arc<A2aClient>,
    follow: FollowSettings,
}

impl UpstreamAgent {
    /// The agent whose card is under `url`, reached through `http` (the SSRF-guarded client
    /// with the deployment's credential).
    pub fn new(http: Arc<dyn Outbound>, url: &str, follow: FollowSettings) -> Arc<Self> {
        Arc::new(Self {
            client: Arc::new(A2aClient::new(http, url, follow.card_ttl)),
            follow,
        })
    }

    /// Reads the upstream's card now (our card advertises its skills from then on); a card
    /// that cannot be read is logged and read again at the first turn.
    pub async fn discover(&self) {
        match self.client.card().await {
            Ok(card) => tracing::info!(
                upstream = %card.name,
                protocol = card.interface.protocol.label(),
                streaming = card.streaming,
                "upstream agent discovered"
            ),
            Err(e) => warn!(error = %e, "the upstream agent's card cannot be read yet"),
        }
    }
}

/// A failure participants read about: our own words for a refused batch, a correlation id for
/// anything of the upstream's (its error texts stay in the log).
fn said(trouble: &Trouble) -> String {
    crate::telemetry::incident("the upstream agent's answer could not be used", trouble)
}

#[async_trait]
impl Agent for UpstreamAgent {
    async fn run_turn(
        &self,
        tasks: Arc<dyn TaskPort>,
        task_id: TaskId,
        input: Option<Message>,
        budget: TurnBudget,
    ) -> Result<TurnEnd, AppError> {
        let span = tracing::info_span!("agent", task_id = %task_id, kind = "upstream");
        async {
            let (state, _) = tasks.view(&task_id).await?;
            let Some(head) = state.head().filter(|h| !h.status.state.is_terminal()) else {
                return Ok(TurnEnd::Finished);
            };
            let window = follow_window(self.follow.window, budget.remaining());
            let mut follower = follow::Follower::new(
                &self.client,
                tasks.as_ref(),
                &task_id,
                head,
                self.follow,
                window,
            );
            let why = match follower.run(input).await {
                Ok(end) => return Ok(end),
                // Tried again by the turn's own rules, then given up (liveness).
                Err(follow::Stop::Trouble(Trouble::Transient(e))) => {
                    return Err(AppError::protocol(
                        taskledger_domain::error::ErrorKind::Unavailable,
                        format!("the upstream agent could not be reached: {e}"),
                    ))
                }
                Err(follow::Stop::Ours(e)) => return Err(e),
                Err(follow::Stop::Trouble(Trouble::AddressRefused)) => {
                    "The upstream agent's address is refused by this server's SSRF rules (the \
                     push allowlist)"
                        .to_string()
                }
                Err(follow::Stop::Trouble(broken)) => said(&broken),
                Err(follow::Stop::Refused(why)) => {
                    format!("The upstream agent's answer cannot be kept: {why}")
                }
            };
            tasks.fail_task(&task_id, &why).await;
            Ok(TurnEnd::Finished)
        }
        .instrument(span)
        .await
    }

    async fn canceled(&self, head: &TaskHead) {
        let Some(up) = head.upstream.as_ref().filter(|u| u.open()) else {
            return;
        };
        let cancel = async {
            let card = self.client.card().await?;
            let Some(i) = card.still_offers(&up.interface) else {
                return Err(Trouble::Broken(
                    "the card no longer offers the interface".into(),
                ));
            };
            self.client.cancel(i, &up.task_id).await
        };
        match tokio::time::timeout(CANCEL_TIMEOUT, cancel).await {
            Ok(Ok(())) => debug!(task_id = %head.id, "upstream task canceled"),
            Ok(Err(e)) => {
                warn!(task_id = %head.id, error = %e, "the upstream task was not canceled")
            }
            Err(_) => warn!(task_id = %head.id, "the upstream's cancel did not answer in time"),
        }
    }

    fn advertised(&self) -> Option<Advertised> {
        self.client.refresh_if_stale();
        self.client.cached().map(|c| c.advertised)
    }
}

/// How long a turn follows: its window, less when the turn's budget has less left, never less
/// than `MIN_FOLLOW_WINDOW`.
fn follow_window(window: Duration, left: Option<Duration>) -> Duration {
    left.map_or(window, |left| left.min(window))
        .max(MIN_FOLLOW_WINDOW)
}

#[cfg(test)]
mod window_tests {
    use super::*;

    #[test]
    fn a_turn_follows_its_window_less_when_its_budget_is_shorter_never_less_than_the_minimum() {
        let w = Duration::from_secs(60);
        assert_eq!(follow_window(w, None), w);
        assert_eq!(
            follow_window(w, Some(Duration::from_secs(10))),
            Duration::from_secs(10)
        );
        assert_eq!(follow_window(w, Some(MIN_FOLLOW_WINDOW)), MIN_FOLLOW_WINDOW);
        // A budget already spent still looks at the upstream once.
        let under = MIN_FOLLOW_WINDOW - Duration::from_millis(1);
        assert_eq!(follow_window(w, Some(under)), MIN_FOLLOW_WINDOW);
        assert_eq!(follow_window(w, Some(Duration::ZERO)), MIN_FOLLOW_WINDOW);
    }
}
