//! The task's generation (draft A2A 1.1, a2aproject/A2A#1810): 1 at creation, one more for
//! every update a client is shown (a status change, an artifact or a chunk), so a gap in the
//! generations a client saw means it missed an update. `RequireGeneration` makes the commands
//! after it in one commit conditional on it (`SendMessageConfiguration.ifGenerationMatch`).

use super::{TaskEvent, TaskHead};
use crate::error::DomainError;

/// `RequireGeneration`: nothing happens, or the commit is refused when the task has moved on.
pub(super) fn require(head: &TaskHead, expected: u64) -> Result<Vec<TaskEvent>, DomainError> {
    if head.generation != expected {
        return Err(DomainError::GenerationMismatch {
            task_id: head.id.to_string(),
            expected,
            current: head.generation,
        });
    }
    Ok(Vec::new())
}
