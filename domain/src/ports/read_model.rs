//! The read side's port: what a reader asks of a task (history, artifacts), what the read
//! model answers, and the read model itself (GetTask, ListTasks, counts), scoped to the caller.

use async_trait::async_trait;

use super::StoreError;
use crate::ids::{ContextId, HistoryLength, PageSize, Principal, TaskId};
use crate::projection::ArtifactChunk;
use crate::task::TaskHead;
use crate::time::Timestamp;
use crate::wire::{Message, TaskState};

/// What a reader asked for besides the head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewOptions {
    pub history: HistoryLength,
    pub include_artifacts: bool,
    /// History is what the head keeps of it (at most `history`, fewer when the head holds
    /// fewer: a server default, as ListTasks uses; spec §3.2.4 lets a server return fewer).
    pub tail_only: bool,
}

/// Where a view's history comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum HistoryRead {
    /// The head holds it (`None`: no history asked for).
    Ready(Option<Vec<Message>>),
    /// Read the history rows from position `from` up to `until` (the first position the
    /// head's tail holds; a store written before ADR 029 has rows past it too), then `tail`.
    Rows {
        from: u64,
        until: u64,
        tail: Vec<Message>,
    },
}

impl ViewOptions {
    pub const fn exact(history: HistoryLength, include_artifacts: bool) -> Self {
        Self {
            history,
            include_artifacts,
            tail_only: false,
        }
    }

    /// The head's tail when it holds the history asked for (or when the tail is all a reader
    /// gets); the rows to read otherwise.
    pub fn history_read(&self, head: &TaskHead) -> HistoryRead {
        if let Some(h) = head.recent.view(head.history_len, self.history) {
            return HistoryRead::Ready(h);
        }
        let n = match self.history {
            HistoryLength::Last(n) => n as u64,
            HistoryLength::All => head.history_len,
        };
        if self.tail_only {
            let tail = head.recent.last(n as usize);
            return HistoryRead::Ready(Some(tail));
        }
        HistoryRead::Rows {
            from: head.history_len.saturating_sub(n),
            until: head.history_len.saturating_sub(head.recent.len() as u64),
            tail: head.recent.messages().cloned().collect(),
        }
    }
}

/// A task as the read model holds it, ready for `projection::assemble`.
#[derive(Debug, Clone)]
pub struct TaskView {
    pub head: TaskHead,
    /// `None` when history was not asked for (`historyLength` 0).
    pub history: Option<Vec<Message>>,
    /// `None` when artifacts were not asked for.
    pub chunks: Option<Vec<ArtifactChunk>>,
}

/// Where a ListTasks page starts: after this (status timestamp, task id), newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub status_nanos: i64,
    pub task_id: String,
}

/// Which of the caller's tasks a list holds: those it owns, those shared with it (it is a
/// participant), or both (the default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ListScope {
    #[default]
    All,
    Owned,
    Shared,
}

impl ListScope {
    /// `owned`, `shared`, or nothing (both).
    pub fn parse(v: Option<&str>) -> Result<Self, String> {
        match v {
            None | Some("") => Ok(Self::All),
            Some("owned") => Ok(Self::Owned),
            Some("shared") => Ok(Self::Shared),
            Some(other) => Err(format!(
                "is owned, shared, or unset for both (got {other:?})"
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::All => "",
            Self::Owned => "owned",
            Self::Shared => "shared",
        }
    }
}

/// ListTasks filters, already validated.
#[derive(Debug, Clone)]
pub struct ListQuery {
    pub scope: ListScope,
    pub context_id: Option<ContextId>,
    pub state: Option<TaskState>,
    pub status_after: Option<Timestamp>,
    /// Finished tasks whose status time is at or before this are past their expiry
    /// (`retention`): not listed, not counted.
    pub finished_before: Option<Timestamp>,
    pub after: Option<Cursor>,
    pub page_size: PageSize,
    pub view: ViewOptions,
}

#[derive(Debug, Clone)]
pub struct ListPage {
    pub tasks: Vec<TaskView>,
    /// Matches before paging.
    pub total_size: u64,
    /// Set when more tasks follow.
    pub next: Option<Cursor>,
}

/// The task read model: GetTask and ListTasks, scoped to the caller: the tasks it owns and
/// those shared with it (`TaskHead::visible_to`).
#[async_trait]
pub trait TaskReadModel: Send + Sync {
    /// The task, or `None` if it does not exist or the caller may not see it.
    async fn get(
        &self,
        who: &Principal,
        task_id: &TaskId,
        view: ViewOptions,
    ) -> Result<Option<TaskView>, StoreError>;
    async fn list(&self, who: &Principal, query: &ListQuery) -> Result<ListPage, StoreError>;
    /// How many of the tasks `list` would find (scope and context as given) are in each state,
    /// for a board's counts, without reading the tasks; in the states' proto order, those with
    /// no task left out.
    /// Finished tasks whose status time is at or before `finished_before` are not counted.
    async fn count_by_state(
        &self,
        who: &Principal,
        scope: ListScope,
        context_id: Option<&ContextId>,
        finished_before: Option<Timestamp>,
    ) -> Result<Vec<(TaskState, u64)>, StoreError>;
    /// The view of a head the caller already holds (a command's committed state): only the
    /// history rows and chunks it needs are read.
    async fn complete(&self, head: TaskHead, view: ViewOptions) -> Result<TaskView, StoreError>;
    /// A stamp that changes whenever anything is committed to the store, by this process or
    /// any other, and is cheap to read; `None` when the store cannot tell cheaply. What was
    /// read after a stamp was taken is current for as long as the stamp reads the same.
    async fn change_stamp(&self) -> Result<Option<u64>, StoreError> {
        Ok(None)
    }
}
