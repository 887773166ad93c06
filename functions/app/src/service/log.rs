//! The events extension's reads of a task's log (ADR 037): a page of it as the caller may see
//! it, with a continuation cursor bound to the caller and the task; and the task as of a past
//! generation, folded from it. Nothing here writes.

use taskledger_domain::error::ErrorKind;
use taskledger_domain::ids::{HistoryLength, Principal, TaskId};
use taskledger_domain::projection::first_commit_view;
use taskledger_domain::projection::log::{self, LogReader};
use taskledger_domain::task::stored::StoredEvent;
use taskledger_domain::wire::{
    GetTaskRequest, ListTaskEventsRequest, ListTaskEventsResponse, Task,
};

use super::{task_id_of, Actor, Service};
use crate::error::AppError;

impl Service {
    /// ListTaskEvents: the events after `after` (or the cursor `pageToken`), at most `limit`,
    /// of a task the caller sees. A cursor of a task whose log is no longer kept (past its
    /// retention) is EventsGone; of another task or caller, refused.
    pub async fn list_task_events(
        &self,
        who: &Principal,
        req: ListTaskEventsRequest,
    ) -> Result<ListTaskEventsResponse, AppError> {
        let task_id = task_id_of(&req.id)?;
        let limit = log::page_limit(req.limit.map(i64::from))
            .map_err(|e| AppError::invalid_params("limit", e))?;
        let scope = format!("{who}|{task_id}");
        let token = req.page_token.as_deref().filter(|t| !t.is_empty());
        let (after, cursor) = match (token, req.after) {
            (Some(_), Some(_)) => {
                return Err(AppError::invalid_params(
                    "pageToken",
                    "names where the page starts, as after does: send one of them",
                ))
            }
            (Some(t), None) => {
                let at = self
                    .cursors
                    .decode_position(t, &scope)
                    .map_err(|e| AppError::invalid_params("pageToken", e))?;
                (at, true)
            }
            (None, after) => (after.unwrap_or(0), false),
        };
        let state = match self.ledger.current(&task_id).await? {
            Some(s) if self.ledger.shows(&s, Actor::Client(who)) => s,
            // The cursor was issued to this caller for this task: its log was kept, and is not.
            Some(s) if cursor && s.head.as_ref().is_some_and(|h| self.ledger.expired(h)) => {
                return Err(gone(&task_id, after))
            }
            None if cursor => return Err(gone(&task_id, after)),
            _ => return Err(AppError::task_not_found(task_id.as_str())),
        };
        let Some(head) = state.head.as_ref() else {
            return Err(AppError::task_not_found(task_id.as_str()));
        };
        if after > state.version {
            return Err(AppError::invalid_params(
                "after",
                format_args!(
                    "event {after} is past the task's last event, {}",
                    state.version
                ),
            ));
        }
        let events = self.store.events(&task_id, 0).await?;
        let (events, last, has_more) =
            log::page(head, &events, after, limit, LogReader::Client(who));
        Ok(ListTaskEventsResponse {
            events,
            next_page_token: self.cursors.encode_position(last, &scope),
            has_more,
        })
    }

    /// GetTask `asOfGeneration`: the task as it was at that generation (1 to the current one),
    /// folded from its log, for a caller who sees it now.
    pub async fn get_task_as_of(
        &self,
        who: &Principal,
        req: GetTaskRequest,
    ) -> Result<Task, AppError> {
        let task_id = task_id_of(&req.id)?;
        let history = HistoryLength::parse(req.history_length)
            .map_err(|e| AppError::invalid_params("historyLength", e))?
            .for_read();
        let generation = req.as_of_generation.unwrap_or(0);
        let state = self.ledger.visible(Actor::Client(who), &task_id).await?;
        let current = state.head.as_ref().map_or(0, |h| h.generation);
        if generation == 0 || generation > current {
            return Err(AppError::invalid_params(
                "asOfGeneration",
                format_args!("{generation} is not a generation of the task (1 to {current})"),
            ));
        }
        let events = self.store.events(&task_id, 0).await?;
        let upto = log::events_as_of(&events, generation);
        fold(&task_id, &events[..upto], history)
    }

    /// The task as it was right after event `seq` of its log (the board's timeline slider),
    /// for a caller who sees it now; with the task's last event.
    pub async fn task_at_event(
        &self,
        who: &Principal,
        task_id: &TaskId,
        seq: u64,
        history: HistoryLength,
    ) -> Result<(Task, u64), AppError> {
        let state = self.ledger.visible(Actor::Client(who), task_id).await?;
        if seq == 0 || seq > state.version {
            return Err(AppError::invalid_params(
                "at",
                format_args!("{seq} is not an event of the task (1 to {})", state.version),
            ));
        }
        let events = self.store.events(task_id, 0).await?;
        let upto = events.partition_point(|e| e.seq <= seq);
        Ok((fold(task_id, &events[..upto], history)?, state.version))
    }
}

/// The task after `events` (its log from the first event on), shaped as GetTask shows it.
fn fold(
    task_id: &TaskId,
    events: &[StoredEvent],
    history: HistoryLength,
) -> Result<Task, AppError> {
    let folded = events
        .iter()
        .map(StoredEvent::decode)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| AppError::protocol(ErrorKind::Internal, e))?;
    first_commit_view(&folded, history, true)
        .ok_or_else(|| AppError::task_not_found(task_id.as_str()))
}

fn gone(task_id: &TaskId, after: u64) -> AppError {
    AppError::protocol(
        ErrorKind::EventsGone,
        format!(
            "the events of task {task_id} after {after} are no longer kept: the task's retention \
             ended (its archive holds them)"
        ),
    )
    .with("taskId", task_id.as_str())
}
