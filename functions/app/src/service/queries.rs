//! GetTask and ListTasks, scoped to the caller, and the agent's view of a task; the only owner
//! of the page-token codec (ListTasks and the push config list page with it).

use taskledger_domain::ids::{ContextId, HistoryLength, PageSize, Principal, TaskId};
use taskledger_domain::ports::{Cursor, HistoryRead, ListQuery, ListScope, ViewOptions};
use taskledger_domain::projection::assemble;
use taskledger_domain::task::{TaskAggregate, TaskHead};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{
    GetTaskRequest, ListTasksRequest, ListTasksResponse, Message, Task, TaskState,
};

use std::sync::Arc;

use super::answers::{AnswerKey, Audience, Lookup};
use super::{task_id_of, Actor, Service};
use crate::error::AppError;
use taskledger_domain::error::ErrorKind;

impl Service {
    /// A page token for `cursor`, good only for `scope` (the caller and the filters).
    pub(super) fn page_token(&self, cursor: &Cursor, scope: &str) -> String {
        self.cursors
            .encode(cursor, scope, Timestamp::now().unix_secs())
    }

    /// The cursor a page token carries, if it was issued for `scope` and has not expired.
    pub(super) fn page_cursor(&self, token: &str, scope: &str) -> Result<Cursor, AppError> {
        self.cursors
            .decode(token, scope, Timestamp::now().unix_secs())
            .map_err(|e| AppError::invalid_params("pageToken", e))
    }

    pub(super) async fn view(
        &self,
        who: &Principal,
        task_id: &TaskId,
        history: HistoryLength,
        include_artifacts: bool,
    ) -> Result<Task, AppError> {
        let v = self
            .reads
            .get(who, task_id, ViewOptions::exact(history, include_artifacts))
            .await?
            .filter(|v| !self.expired(&v.head))
            .ok_or_else(|| AppError::task_not_found(task_id.as_str()))?;
        Ok(assemble(&v.head, v.history, v.chunks))
    }

    /// A command's answer from the state it committed (or a wait last read): the head, and
    /// its tail of history — with no `historyLength` asked, the tail is the server's default
    /// (ADR 019). Only artifacts, or a longer history asked for, are read.
    pub(super) async fn answer_from(
        &self,
        who: &Principal,
        head: &TaskHead,
        history: HistoryLength,
    ) -> Result<Task, AppError> {
        let options = ViewOptions {
            history,
            include_artifacts: true,
            tail_only: history == HistoryLength::All,
        };
        if head.artifacts.is_empty() {
            if let HistoryRead::Ready(h) = options.history_read(head) {
                return Ok(assemble(head, h, None));
            }
        }
        if !head.visible_to(who) {
            return Err(AppError::task_not_found(head.id.as_str()));
        }
        let v = self.reads.complete(head.clone(), options).await?;
        Ok(assemble(&v.head, v.history, v.chunks))
    }

    pub async fn get_task(&self, who: &Principal, req: GetTaskRequest) -> Result<Task, AppError> {
        let (task_id, history) = self.get_task_request(who, &req).await?;
        self.view(who, &task_id, history, true).await
    }

    /// GetTask's answer as `render` makes it (`variant` tells renderings apart), served from
    /// the answers kept while nothing has been committed to the store since they were read
    /// (ADR 026); read, rendered and kept otherwise.
    pub async fn get_task_rendered(
        &self,
        who: &Principal,
        req: GetTaskRequest,
        variant: u8,
        render: impl FnOnce(Task) -> Result<Arc<[u8]>, AppError>,
    ) -> Result<Arc<[u8]>, AppError> {
        let (task_id, history) = self.get_task_request(who, &req).await?;
        let kept = match (&self.answers, req.current_generation) {
            // A long poll's answer is the task as the wait left it.
            (Some(cache), None) => self.reads.change_stamp().await?.map(|s| (cache, s)),
            _ => None,
        };
        let Some((cache, stamp)) = kept else {
            return render(self.view(who, &task_id, history, true).await?);
        };
        let key = AnswerKey {
            task_id,
            history,
            variant,
        };
        if let Lookup::Hit(answer) = cache.get(&key, stamp, who) {
            return Ok(answer);
        }
        let v = self
            .reads
            .get(who, &key.task_id, ViewOptions::exact(history, true))
            .await?
            .filter(|v| !self.expired(&v.head))
            .ok_or_else(|| AppError::task_not_found(key.task_id.as_str()))?;
        let audience = Audience {
            owner: v.head.owner.clone(),
            shared: v.head.shared_with(),
            expires: self.retention().expires_at(&v.head),
        };
        let answer = render(assemble(&v.head, v.history, v.chunks))?;
        cache.put(key, stamp, audience, answer.clone());
        Ok(answer)
    }

    /// A GetTask's task id and history length, once a long poll (draft A2A 1.1:
    /// `currentGeneration`) has seen the task move past the generation it names, or timed out.
    async fn get_task_request(
        &self,
        who: &Principal,
        req: &GetTaskRequest,
    ) -> Result<(TaskId, HistoryLength), AppError> {
        let history = HistoryLength::parse(req.history_length)
            .map_err(|e| AppError::invalid_params("historyLength", e))?
            .for_read();
        let task_id = task_id_of(&req.id)?;
        if let Some(seen) = req.current_generation {
            self.ledger.visible(Actor::Client(who), &task_id).await?;
            let bound = self.settings.long_poll_max;
            self.wait_for(&task_id, bound, None, |s| {
                s.head.as_ref().is_some_and(|h| h.generation > seen)
            })
            .await?;
        }
        Ok((task_id, history))
    }

    pub async fn list_tasks(
        &self,
        who: &Principal,
        req: ListTasksRequest,
    ) -> Result<ListTasksResponse, AppError> {
        let page_size =
            PageSize::parse(req.page_size).map_err(|e| AppError::invalid_params("pageSize", e))?;
        let history = HistoryLength::parse(req.history_length)
            .map_err(|e| AppError::invalid_params("historyLength", e))?
            .at_most_max();
        let context_id = req
            .context_id
            .clone()
            .filter(|c| !c.is_empty())
            .map(ContextId::parse)
            .transpose()
            .map_err(|e| AppError::invalid_params("contextId", e))?;
        let state = req.status.filter(|s| *s != TaskState::Unspecified);
        let include_artifacts = req.include_artifacts.unwrap_or(false);
        let shared = ListScope::parse(req.scope.as_deref())
            .map_err(|e| AppError::invalid_params("scope", e))?;
        // A token is only good for the caller and filters it was issued for.
        let scope = format!(
            "{}|{}|{}|{}|{}",
            who,
            shared.as_str(),
            context_id.as_ref().map(ContextId::as_str).unwrap_or(""),
            state.map(TaskState::as_str).unwrap_or(""),
            req.status_timestamp_after
                .map(|t| t.unix_nanos().to_string())
                .unwrap_or_default()
        );
        let after = match req.page_token.as_deref() {
            None | Some("") => None,
            Some(t) => Some(self.page_cursor(t, &scope)?),
        };
        let page = self
            .reads
            .list(
                who,
                &ListQuery {
                    scope: shared,
                    context_id,
                    state,
                    status_after: req.status_timestamp_after,
                    finished_before: self.finished_before(who),
                    after,
                    page_size,
                    // Each task's history is what its head keeps (its last messages, up to
                    // RECENT_MESSAGES within RECENT_BYTES; unset: all of those), so a page
                    // reads no per-task items (ADR 019).
                    view: ViewOptions {
                        history,
                        include_artifacts,
                        tail_only: true,
                    },
                },
            )
            .await?;
        Ok(ListTasksResponse {
            tasks: page
                .tasks
                .into_iter()
                .map(|v| assemble(&v.head, v.history, v.chunks))
                .collect(),
            next_page_token: page
                .next
                .map(|c| self.page_token(&c, &scope))
                .unwrap_or_default(),
            page_size: page_size.get() as i32,
            total_size: i32::try_from(page.total_size).unwrap_or(i32::MAX),
        })
    }

    /// How many of the caller's tasks (own and shared; in `context`, if given) are in each state.
    pub async fn count_tasks_by_state(
        &self,
        who: &Principal,
        context: Option<&str>,
    ) -> Result<Vec<(TaskState, u64)>, AppError> {
        let context = context
            .filter(|c| !c.is_empty())
            .map(|c| ContextId::parse(c.to_string()))
            .transpose()
            .map_err(|e| AppError::invalid_params("contextId", e))?;
        Ok(self
            .reads
            .count_by_state(
                who,
                ListScope::All,
                context.as_ref(),
                self.finished_before(who),
            )
            .await?)
    }

    /// The status time at or before which the caller's finished tasks are past their expiry.
    fn finished_before(&self, who: &Principal) -> Option<Timestamp> {
        self.retention()
            .finished_before(who.tenant.as_str(), Timestamp::now())
    }

    /// Draft A2A 1.1: `task` with its timeline (its last `length` entries) and its artifacts'
    /// generations, read from the event log (`projection::timeline`). The task was read as
    /// the caller already, who may see it.
    pub async fn with_timeline(
        &self,
        task: &mut Task,
        length: HistoryLength,
    ) -> Result<(), AppError> {
        let id = task_id_of(&task.id)?;
        let events = self.store.events(&id, 0).await?;
        let t = taskledger_domain::projection::timeline::timeline(&events, length)
            .map_err(|e| AppError::protocol(ErrorKind::Internal, e))?;
        task.timeline = Some(t.entries);
        for a in task.artifacts.iter_mut().flatten() {
            if let Some((start, end)) = t.artifacts.get(&a.artifact_id) {
                a.start_generation = Some(*start);
                a.end_generation = Some(*end);
            }
        }
        Ok(())
    }

    /// What the agent sees of a task: its state and its whole history.
    pub async fn agent_view(
        &self,
        task_id: &TaskId,
    ) -> Result<(Arc<TaskAggregate>, Vec<Message>), AppError> {
        let state = self
            .ledger
            .current(task_id)
            .await?
            .ok_or_else(|| AppError::task_not_found(task_id.as_str()))?;
        let history = self.history_of(&state, task_id).await?;
        Ok((state, history))
    }

    /// The whole history of a task in `state`: what its head keeps, when that is all of it,
    /// else read from the read model.
    pub(crate) async fn history_of(
        &self,
        state: &TaskAggregate,
        task_id: &TaskId,
    ) -> Result<Vec<Message>, AppError> {
        let head = state
            .head()
            .ok_or_else(|| AppError::task_not_found(task_id.as_str()))?;
        let options = ViewOptions::exact(HistoryLength::All, false);
        if let HistoryRead::Ready(history) = options.history_read(head) {
            return Ok(history.unwrap_or_default());
        }
        let view = self.reads.complete(head.clone(), options).await?;
        Ok(view.history.unwrap_or_default())
    }
}
