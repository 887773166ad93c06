//! SendStreamingMessage and SubscribeToTask: a stream is the task's event log read from a
//! position. The first event is the Task as of a version (its SSE id), then the update each
//! later event recorded at commit (`projection::stream`), so any process that can read the
//! store serves any subscriber, and a client resumes after the last id it saw
//! (`Last-Event-ID`) with no gap and no duplicate.

mod hub;
mod reader;

use std::pin::Pin;
use std::sync::Arc;

use futures_util::Stream;
use taskledger_domain::error::ErrorKind;
use taskledger_domain::ids::{HistoryLength, IdempotencyKey, Principal, TaskId};
use taskledger_domain::projection::replay;
use taskledger_domain::task::TaskEvent;
use taskledger_domain::wire::{GetTaskRequest, SendMessageRequest, StreamResponse, TaskState};

pub use hub::{Hub, STREAM_BUFFER_BATCHES};
use reader::{Reader, Start};

use super::send::Submission;
use super::{task_id_of, Actor, Service};
use crate::error::AppError;

/// The header (and gRPC metadata key, lower-cased) a client resumes a stream with.
pub const LAST_EVENT_ID: &str = "Last-Event-ID";

/// One event of a stream: the `StreamResponse` JSON and its position (`None` for a direct
/// message reply, which has none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamEvent {
    pub id: Option<u64>,
    /// The task's generation after this event (draft A2A 1.1; not written into `body`).
    pub generation: Option<u64>,
    pub body: Arc<str>,
}

/// A task's stream, as the bindings send it.
pub type TaskStream = Pin<Box<dyn Stream<Item = StreamEvent> + Send>>;

/// Where a stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Until {
    /// SubscribeToTask: at a terminal state.
    Terminal,
    /// SendStreamingMessage: at a terminal or an interrupted state (the client must answer).
    Settled,
}

impl Until {
    fn ends_at(self, state: TaskState) -> bool {
        state.is_terminal() || (self == Self::Settled && state.is_interrupted())
    }
}

fn event_of(
    response: &StreamResponse,
    id: Option<u64>,
    generation: Option<u64>,
) -> Result<StreamEvent, AppError> {
    let body = serde_json::to_string(response).map_err(|e| {
        AppError::protocol(
            ErrorKind::Internal,
            format!("cannot serialise an event: {e}"),
        )
    })?;
    Ok(StreamEvent {
        id,
        generation,
        body: body.into(),
    })
}

/// The position `Last-Event-ID` names, if it is one of the task's (0 ..= its last event).
fn resume_position(raw: &str, version: u64) -> Result<u64, AppError> {
    let text = raw.trim();
    let n = (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse::<u64>().ok())
        .flatten()
        .ok_or_else(|| {
            AppError::invalid_params(
                LAST_EVENT_ID,
                format_args!("{raw:?} is not an event id of this stream (a non-negative integer)"),
            )
        })?;
    if n > version {
        return Err(AppError::invalid_params(
            LAST_EVENT_ID,
            format_args!("event {n} is beyond the task's last event, {version}"),
        ));
    }
    Ok(n)
}

/// A stream asked of a server that declares `capabilities.streaming` false (A2A §3.3.4).
fn streaming_not_supported() -> AppError {
    AppError::protocol(
        ErrorKind::UnsupportedOperation,
        "streaming is not enabled on this server (capabilities.streaming is false): use \
         SendMessage and GetTask",
    )
}

impl Service {
    /// Before a stream is opened: streams are served here.
    fn require_streaming(&self) -> Result<(), AppError> {
        if self.settings.streaming_enabled {
            Ok(())
        } else {
            Err(streaming_not_supported())
        }
    }

    /// SendStreamingMessage: the message is taken in as by SendMessage; the stream is the
    /// task from the message's commit on, until it is terminal or interrupted.
    pub async fn stream_message(
        self: &Arc<Self>,
        who: &Principal,
        req: SendMessageRequest,
        idempotency: Option<(IdempotencyKey, String)>,
    ) -> Result<TaskStream, AppError> {
        // Served, and a place first: a refused stream takes no message in.
        self.require_streaming()?;
        let slot = self.stream_slot(who)?;
        let sub = match self.submit(who, req, idempotency).await? {
            Submission::Direct(reply) => {
                let event = event_of(&StreamResponse::Message(reply), None, None)?;
                return Ok(Box::pin(futures_util::stream::iter([event])));
            }
            Submission::Task(sub) => sub,
        };
        let upto = sub.since.map(|(version, _)| version);
        let mut start = self.snapshot(who, &sub.task_id, upto, sub.history).await?;
        // A message answering an interrupted task asked the agent for a turn: the stream
        // settles where that turn does, not at the state the message found (as a blocking
        // send waits until the task is *newly* interrupted).
        if matches!(sub.since, Some((_, true))) && start.state.is_interrupted() {
            start.state = TaskState::Working;
        }
        Ok(self.open(start, Until::Settled, slot))
    }

    /// SubscribeToTask: the task now, then its updates until it is terminal; with
    /// `last_event_id`, only what follows that event.
    pub async fn subscribe(
        self: &Arc<Self>,
        who: &Principal,
        req: GetTaskRequest,
        last_event_id: Option<&str>,
    ) -> Result<TaskStream, AppError> {
        self.require_streaming()?;
        let task_id = task_id_of(&req.id)?;
        let slot = self.stream_slot(who)?;
        let start = match last_event_id {
            None => {
                let history = HistoryLength::parse(req.history_length)
                    .map_err(|e| AppError::invalid_params("historyLength", e))?
                    .for_read();
                let start = self.snapshot(who, &task_id, None, history).await?;
                if start.state.is_terminal() {
                    return Err(AppError::protocol(
                        ErrorKind::UnsupportedOperation,
                        format!(
                            "task {task_id} is {} already: nothing more will stream (read it \
                             with GetTask; an earlier stream resumes with {LAST_EVENT_ID})",
                            start.state.as_str()
                        ),
                    )
                    .with("taskId", task_id.as_str()));
                }
                start
            }
            Some(raw) => {
                let state = self.ledger.visible(Actor::Client(who), &task_id).await?;
                let after = resume_position(raw, state.version)?;
                let head = state
                    .head
                    .as_ref()
                    .ok_or_else(|| AppError::task_not_found(task_id.as_str()))?;
                // A client that has the current status already (the terminal one included)
                // has nothing more of it to read: the stream settles as that status does.
                // Before it, what follows `after` is still to be sent, settled or not.
                let state = if after >= head.status_version {
                    head.status.state
                } else {
                    TaskState::Working
                };
                Start {
                    context_id: head.context_id.as_str().to_string(),
                    task_id,
                    after,
                    state,
                    first: None,
                    who: who.clone(),
                }
            }
        };
        Ok(self.open(start, Until::Terminal, slot))
    }

    /// The stream from `start`; it holds the principal's `slot` until it ends or is dropped.
    fn open(
        self: &Arc<Self>,
        start: Start,
        until: Until,
        slot: Option<crate::limits::StreamSlot>,
    ) -> TaskStream {
        let deadline = self
            .settings
            .stream_max
            .map(|d| tokio::time::Instant::now() + d);
        let reader = Reader::open(&self.hub, self.store.clone(), start, until, deadline);
        // Counted open until it ends or is dropped.
        let open = crate::telemetry::metrics().stream_opened();
        Box::pin(futures_util::stream::unfold(
            (reader, slot, open),
            |(mut r, slot, open)| async move { r.next().await.map(|event| (event, (r, slot, open))) },
        ))
    }

    /// The task as of event `upto` (the latest when `None`), replayed from its events, if
    /// `who` may see it: the first event of a stream, with the position that follows it.
    async fn snapshot(
        &self,
        who: &Principal,
        task_id: &TaskId,
        upto: Option<u64>,
        history: HistoryLength,
    ) -> Result<Start, AppError> {
        let (state, events) = self.ledger.as_of(task_id, upto).await?;
        let head = state
            .head
            .as_ref()
            .filter(|_| self.ledger.shows(&state, Actor::Client(who)))
            .ok_or_else(|| AppError::task_not_found(task_id.as_str()))?;
        let decoded = events
            .iter()
            .map(|e| e.decode())
            .collect::<Result<Vec<TaskEvent>, String>>()
            .map_err(|e| AppError::protocol(ErrorKind::Internal, e))?;
        let mut task = replay(&decoded, history.for_read())
            .ok_or_else(|| AppError::task_not_found(task_id.as_str()))?;
        // Events carry their generation beside the body (`generation` is shown to 1.1 only).
        let generation = task.generation.take();
        // The Task's id is the last event a client was shown (events after it that show
        // nothing — a turn recorded as finished — leave the id, so two subscribers on either
        // side of such a commit get the same bytes; a resume from it repeats nothing).
        let shown = events
            .iter()
            .rev()
            .find(|e| e.update.is_some())
            .map_or(state.version, |e| e.seq);
        Ok(Start {
            task_id: task_id.clone(),
            context_id: head.context_id.as_str().to_string(),
            after: state.version,
            state: head.status.state,
            first: Some(event_of(
                &StreamResponse::Task(task),
                Some(shown),
                generation,
            )?),
            who: who.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_position_is_an_event_of_the_task() {
        assert_eq!(resume_position("0", 7).unwrap(), 0);
        assert_eq!(resume_position(" 7 ", 7).unwrap(), 7);
        for bad in ["", "-1", "x", "1.5", "+3", "18446744073709551616"] {
            let e = resume_position(bad, 7).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidParams, "{bad:?}");
        }
        let e = resume_position("8", 7).unwrap_err();
        assert!(
            e.client_message().contains("beyond"),
            "{}",
            e.client_message()
        );
    }

    #[test]
    fn a_send_stream_ends_at_an_interrupted_state_a_subscription_does_not() {
        assert!(Until::Settled.ends_at(TaskState::InputRequired));
        assert!(!Until::Terminal.ends_at(TaskState::InputRequired));
        assert!(Until::Terminal.ends_at(TaskState::Canceled));
        assert!(!Until::Settled.ends_at(TaskState::Working));
    }
}

#[cfg(test)]
mod buffer_tests {
    use futures_util::StreamExt;
    use serde_json::json;
    use taskledger_domain::ids::Principal;
    use taskledger_domain::wire::{GetTaskRequest, SendMessageRequest, SendMessageResponse};

    use super::STREAM_BUFFER_BATCHES;
    use crate::service::Service;

    fn answer(task: Option<&str>, n: usize) -> SendMessageRequest {
        let mut m = json!({"messageId": format!("tck-input-required-{n}"), "role": "ROLE_USER",
            "parts": [{"text": "more"}]});
        if let Some(t) = task {
            m["taskId"] = json!(t);
        }
        serde_json::from_value(json!({"message": m})).unwrap()
    }

    /// A subscriber that reads nothing while more than the buffer's batches are committed is
    /// disconnected (its stream ends) after what it had, and resumes from its last id.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_subscriber_past_the_buffer_limit_is_cut_off_and_resumes() {
        let store = std::sync::Arc::new(taskledger_infra::SqliteStore::in_memory());
        let svc = Service::new(
            store.clone(),
            store,
            crate::agent::ScenarioAgent::new(Default::default()),
            taskledger_domain::cursor::CursorCodec::new(b"k".to_vec()),
            Default::default(),
        );
        let who = Principal::new("acme", "alice").unwrap();
        let SendMessageResponse::Task(task) =
            svc.send_message(&who, answer(None, 0), None).await.unwrap()
        else {
            panic!("a task")
        };
        let req = GetTaskRequest {
            tenant: None,
            id: task.id.clone(),
            history_length: None,
            current_generation: None,
            timeline_length: Default::default(),
            as_of_generation: None,
            after: None,
        };
        let mut slow = svc.subscribe(&who, req.clone(), None).await.unwrap();
        let first = slow.next().await.expect("the Task");
        assert!(first.body.starts_with("{\"task\""));
        // Each answer is its own commits, each read by the tailer as a batch of its own.
        let rounds = STREAM_BUFFER_BATCHES * 2;
        for n in 1..=rounds {
            svc.send_message(&who, answer(Some(&task.id), n), None)
                .await
                .unwrap();
            // Let the tailer read this round on its own.
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        let mut got = Vec::new();
        let wait = std::time::Duration::from_secs(5);
        while let Ok(Some(e)) = tokio::time::timeout(wait, slow.next()).await {
            got.push(e);
        }
        let mut whole_stream = svc.subscribe(&who, req.clone(), Some("0")).await.unwrap();
        let mut all = Vec::new();
        while let Ok(Some(e)) = tokio::time::timeout(wait / 5, whole_stream.next()).await {
            all.push(e);
        }
        assert!(
            got.len() < all.len(),
            "the slow subscriber was cut off: {} of {} updates",
            got.len(),
            all.len()
        );
        // Resuming from the last id it had gives exactly the rest.
        let last = got.last().and_then(|e| e.id).unwrap_or(first.id.unwrap());
        let mut rest_stream = svc
            .subscribe(&who, req, Some(&last.to_string()))
            .await
            .unwrap();
        let mut rest = Vec::new();
        while let Ok(Some(e)) = tokio::time::timeout(wait / 5, rest_stream.next()).await {
            rest.push(e);
        }
        let resumed: Vec<_> = got.iter().chain(rest.iter()).map(|e| e.id).collect();
        let whole: Vec<_> = all
            .iter()
            .map(|e| e.id)
            .filter(|id| *id > first.id)
            .collect();
        assert_eq!(resumed, whole, "no gap, no duplicate");
        assert_eq!(all.len(), rounds * 2 + 3);
    }
}
