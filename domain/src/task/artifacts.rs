//! Artifacts: adding one or streaming it in chunks, the A2UI artifacts `emit_ui` makes, and
//! what the head keeps of them (chunk counts, and the A2UI surfaces they leave on the task).

use crate::error::DomainError;
use crate::extensions::a2ui::{UiMessages, ARTIFACT_NAME, EXTENSION_URI, MEDIA_TYPE};
use crate::ids::ArtifactId;
use crate::task::intake;
use crate::time::Timestamp;
use crate::wire::{Artifact, PartContent};

use super::events::TaskEvent;
use super::head::{ArtifactHead, TaskHead};
use super::status::refuse_if_terminal;

/// Most artifacts one task may hold (the head lists them, so it stays small).
pub const MAX_ARTIFACTS_PER_TASK: usize = 256;
/// Most chunks one artifact may be streamed in.
pub const MAX_CHUNKS_PER_ARTIFACT: u32 = 10_000;

/// `AddArtifact`: a new artifact (or a replacement, same id), or with `append` a further chunk
/// of an open one.
pub(super) fn add_artifact(
    head: &TaskHead,
    artifact: Artifact,
    append: bool,
    last_chunk: bool,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    // A2UI surfaces come only from `emit_ui`, which checks their structure.
    let a2ui_part = artifact
        .parts
        .iter()
        .position(|p| p.media_type.as_deref() == Some(MEDIA_TYPE));
    if let Some(i) = a2ui_part {
        return Err(DomainError::invalid(
            format!("artifact.parts[{i}].mediaType"),
            format!(
                "A2UI messages ({MEDIA_TYPE}) are emitted with the emit_ui tool, which checks them"
            ),
        ));
    }
    if artifact.name.as_deref() == Some(ARTIFACT_NAME) {
        return Err(DomainError::invalid(
            "artifact.name",
            format!("{ARTIFACT_NAME:?} names the artifacts emit_ui makes; choose another name"),
        ));
    }
    store_artifact(head, artifact, append, last_chunk, at)
}

/// An artifact (or a chunk of one) recorded: the rules every artifact keeps.
fn store_artifact(
    head: &TaskHead,
    mut artifact: Artifact,
    append: bool,
    last_chunk: bool,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    refuse_if_terminal(head)?;
    let id = ArtifactId::parse(artifact.artifact_id.clone())
        .map_err(|e| DomainError::invalid("artifact.artifactId", e))?;
    if artifact.parts.is_empty() {
        return Err(DomainError::invalid(
            "artifact.parts",
            "an artifact needs at least one part",
        ));
    }
    let existing = head.artifacts.iter().find(|a| a.artifact_id == id);
    let at = head.next_stamp(at);
    match (append, existing) {
        (true, Some(a)) => {
            if a.closed {
                return Err(DomainError::invalid(
                    "artifact.artifactId",
                    format!("artifact {id} already received its last chunk"),
                ));
            }
            if a.chunks >= MAX_CHUNKS_PER_ARTIFACT {
                return Err(DomainError::invalid(
                    "artifact.parts",
                    format!("an artifact may have at most {MAX_CHUNKS_PER_ARTIFACT} chunks"),
                ));
            }
            intake::strip_server_keys(&mut artifact.metadata);
            Ok(vec![TaskEvent::ArtifactChunkAppended {
                artifact_id: id,
                parts: artifact.parts,
                metadata: artifact.metadata,
                last_chunk,
                at,
            }])
        }
        _ => {
            if existing.is_none() && head.artifacts.len() >= MAX_ARTIFACTS_PER_TASK {
                return Err(DomainError::invalid(
                    "artifact",
                    format!("a task may have at most {MAX_ARTIFACTS_PER_TASK} artifacts"),
                ));
            }
            intake::strip_server_keys(&mut artifact.metadata);
            intake::stamp_timeline(&mut artifact.metadata, at);
            Ok(vec![TaskEvent::ArtifactAdded {
                artifact,
                last_chunk,
                at,
            }])
        }
    }
}

/// `EmitUi`: checked A2UI messages become a new, closed artifact `a2ui:<sequence of its event>`
/// (`version` is the task's version before the command).
pub(super) fn emit_ui(
    head: &TaskHead,
    version: u64,
    messages: UiMessages,
    at: Timestamp,
) -> Result<Vec<TaskEvent>, DomainError> {
    refuse_if_terminal(head)?;
    crate::extensions::a2ui::check_structure(&head.ui, messages.messages())
        .map_err(|e| DomainError::invalid(e.field, e.reason))?;
    // The event's own sequence: unique in the task, and fixed once committed.
    let seq = version + 1;
    store_artifact(
        head,
        Artifact {
            artifact_id: format!("{ARTIFACT_NAME}:{seq}"),
            name: Some(ARTIFACT_NAME.into()),
            description: None,
            parts: messages.parts(),
            metadata: None,
            extensions: vec![EXTENSION_URI.into()],
            end_generation: Default::default(),
            start_generation: Default::default(),
        },
        false,
        true,
        at,
    )
}

pub(super) fn apply_artifact_added(
    head: &mut TaskHead,
    artifact: &Artifact,
    last_chunk: bool,
    at: Timestamp,
) {
    let id = ArtifactId::parse(artifact.artifact_id.clone());
    if let Ok(id) = id {
        let entry = ArtifactHead {
            artifact_id: id.clone(),
            chunks: 1,
            closed: last_chunk,
        };
        match head.artifacts.iter_mut().find(|a| a.artifact_id == id) {
            Some(a) => *a = entry,
            None => head.artifacts.push(entry),
        }
    }
    if artifact.name.as_deref() == Some(ARTIFACT_NAME) {
        for p in &artifact.parts {
            if let (PartContent::Data(m), Some(MEDIA_TYPE)) = (&p.content, p.media_type.as_deref())
            {
                head.ui.apply(m);
            }
        }
    }
    head.last_timeline = head.last_timeline.max(at);
}

pub(super) fn apply_chunk_appended(
    head: &mut TaskHead,
    artifact_id: &ArtifactId,
    last_chunk: bool,
    at: Timestamp,
) {
    if let Some(a) = head
        .artifacts
        .iter_mut()
        .find(|a| &a.artifact_id == artifact_id)
    {
        a.chunks += 1;
        a.closed = last_chunk;
    }
    head.last_timeline = head.last_timeline.max(at);
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::extensions::a2ui::{UiMessages, ARTIFACT_NAME, BASIC_CATALOG_ID, EXTENSION_URI};

    fn create(surface: &str) -> Value {
        json!({"version": "v0.9", "createSurface": {"surfaceId": surface, "catalogId": BASIC_CATALOG_ID}})
    }

    fn components() -> Value {
        json!({"version": "v0.9", "updateComponents": {"surfaceId": "s", "components": [
            {"id": "root", "component": "Column", "children": ["title", "ok"]},
            {"id": "title", "component": "Text", "text": "Pick a region", "variant": "h2"},
            {"id": "ok", "component": "Button", "child": "title", "action": {"event": {"name": "ok"}}}
        ]}})
    }

    /// Given a task, just created.
    fn created() -> crate::task::TaskAggregate {
        use crate::ids::{ContextId, Principal, TaskId};
        use crate::task::{CreateTask, TaskAggregate, TaskCommand};
        use crate::time::Timestamp;
        use crate::wire::Message;
        let mut task = TaskAggregate::default();
        let events = task
            .decide(TaskCommand::CreateTask(CreateTask {
                task_id: TaskId::parse("t-1").unwrap(),
                context_id: ContextId::parse("c-1").unwrap(),
                owner: Principal::anonymous(),
                message: Message::user_text("m-1", "show me"),
                at: Timestamp::now(),
                extension: None,
                awaiting_assignee: None,
            }))
            .unwrap();
        events.iter().for_each(|e| task.apply_event(e));
        task
    }

    #[test]
    fn the_task_gets_one_closed_a2ui_artifact_named_after_its_event() {
        use crate::task::{TaskCommand, TaskEvent};
        use crate::time::Timestamp;
        use crate::wire::TaskState;

        let mut task = created();
        let emit = || TaskCommand::EmitUi {
            messages: UiMessages::parse(vec![create("s"), components()]).unwrap(),
            at: Timestamp::now(),
        };
        let events = task.decide(emit()).unwrap();
        let [TaskEvent::ArtifactAdded {
            artifact,
            last_chunk,
            ..
        }] = events.as_slice()
        else {
            panic!("one artifact: {events:?}")
        };
        assert_eq!(artifact.artifact_id, format!("a2ui:{}", task.version + 1));
        assert_eq!(artifact.name.as_deref(), Some(ARTIFACT_NAME));
        assert_eq!(artifact.parts.len(), 2);
        assert_eq!(artifact.extensions, vec![EXTENSION_URI.to_string()]);
        assert!(*last_chunk);
        events.iter().for_each(|e| task.apply_event(e));
        // a second call is a second artifact, the first one stays as it was
        let again = task.decide(emit()).unwrap();
        assert!(
            matches!(&again[0], TaskEvent::ArtifactAdded { artifact: a, .. } if a.artifact_id == format!("a2ui:{}", task.version + 1))
        );
        again.iter().for_each(|e| task.apply_event(e));
        assert_eq!(task.head().unwrap().artifacts.len(), 2);
        // nothing is emitted on a finished task
        let done = task
            .decide(TaskCommand::ChangeStatus {
                state: TaskState::Completed,
                message: None,
                at: Timestamp::now(),
            })
            .unwrap();
        done.iter().for_each(|e| task.apply_event(e));
        assert!(task.decide(emit()).is_err());
    }

    #[test]
    fn a2ui_comes_only_from_emit_ui_and_a_surface_that_draws_itself_is_refused() {
        use crate::task::TaskCommand;
        use crate::time::Timestamp;
        use crate::wire::{Artifact, Part};

        // given a task
        let task = created();
        // when the agent emits a Column holding itself, it is refused and nothing is recorded
        let looped = json!({"version": "v0.9", "updateComponents": {"surfaceId": "s", "components": [
            {"id": "root", "component": "Column", "children": ["root", "root", "root", "root"]}
        ]}});
        let e = task
            .decide(TaskCommand::EmitUi {
                messages: UiMessages::parse(vec![create("s"), looped]).unwrap(),
                at: Timestamp::now(),
            })
            .unwrap_err();
        assert!(e.to_string().contains("contains itself"), "{e}");
        // when an artifact carries A2UI messages past emit_ui, or takes its name, it is refused
        let part: Part = serde_json::from_value(
            json!({"data": create("s"), "mediaType": "application/a2ui+json"}),
        )
        .unwrap();
        let add = |name: &str, parts: Vec<Part>| TaskCommand::AddArtifact {
            artifact: Artifact {
                artifact_id: "x-1".into(),
                name: Some(name.into()),
                description: None,
                parts,
                metadata: None,
                extensions: vec![],
                end_generation: Default::default(),
                start_generation: Default::default(),
            },
            append: false,
            last_chunk: true,
            at: Timestamp::now(),
        };
        let e = task.decide(add("report", vec![part])).unwrap_err();
        assert!(e.to_string().contains("emit_ui"), "{e}");
        let e = task
            .decide(add(ARTIFACT_NAME, vec![Part::text("hi")]))
            .unwrap_err();
        assert!(e.to_string().contains("emit_ui"), "{e}");
        assert!(task.decide(add("report", vec![Part::text("hi")])).is_ok());
    }
}
