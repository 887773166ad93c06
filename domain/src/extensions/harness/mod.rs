//! The tiny-harness task extension v1: what A2A's Task lacks (name, goal, participants, parent
//! and sub-tasks, a plan), kept in `Task.metadata[METADATA_KEY]` and checked against its schema.

pub mod plan;
mod refs;

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::DomainError;
use crate::ids::{ParticipantId, TaskId};
use crate::wire::{Message, PartContent};

pub use plan::{slug, Plan, PlanCycleError, Step, StepState};
pub use refs::{EntityRef, TaskRef};

pub const EXTENSION_URI: &str = "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/task/v1";
pub const MEDIA_TYPE: &str = "application/vnd.tiny-harness.task+json";
pub const METADATA_KEY: &str = "io.github.madarauchiha-314.tiny-harness/task";
/// Media type of channel data parts (help requests).
pub const CHANNEL_MEDIA_TYPE: &str = "application/vnd.tiny-harness.channel+json";
/// `Message.metadata` key naming the sender.
pub const PARTICIPANT_ID_KEY: &str = "participant_id";

/// Largest envelope accepted, serialised.
pub const MAX_ENVELOPE_BYTES: usize = 64 * 1024;
/// Most participants on one task.
pub const MAX_PARTICIPANTS: usize = 64;
/// Most acceptance criteria on one task.
pub const MAX_ACCEPTANCE_CRITERIA: usize = 64;
/// Longest model name accepted by `/model`.
pub const MAX_MODEL_NAME_BYTES: usize = 128;

const SCHEMA: &str = include_str!("../../../schemas/task-extension-v1.json");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Assignee,
    Reporter,
    Watcher,
    Admin,
}

impl Role {
    pub fn parse(s: &str) -> Option<Self> {
        serde_json::from_value(Value::String(s.to_string())).ok()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParticipantKind {
    Human,
    Agent,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Participant {
    pub id: String,
    pub kind: ParticipantKind,
    pub role: Role,
    #[serde(default)]
    pub display_name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcceptanceCriterion {
    pub text: String,
    #[serde(default)]
    pub met: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lifecycle {
    Conversation,
    Delegated,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    Low,
    Medium,
    High,
}

/// `TaskExtensionData`, exactly as the schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskExtensionData {
    pub name: String,
    pub goal: String,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub acceptance_criteria: Vec<AcceptanceCriterion>,
    #[serde(default)]
    pub participants: Vec<Participant>,
    #[serde(default)]
    pub parent_tasks: Vec<TaskRef>,
    #[serde(default)]
    pub sub_tasks: Vec<TaskRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Lifecycle>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<Effort>,
    /// Tools the agent runs on this task only once a person approved the call (ours: kagent
    /// hitl/v1; the deployment's `--approve-tools` adds to it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approve_tools: Vec<String>,
}

impl TaskExtensionData {
    /// `lifecycle` as stored, or derived: a task with a parent is delegated.
    pub fn lifecycle(&self) -> Lifecycle {
        self.lifecycle.unwrap_or(if self.parent_tasks.is_empty() {
            Lifecycle::Conversation
        } else {
            Lifecycle::Delegated
        })
    }

    pub fn participant(&self, id: &str) -> Option<&Participant> {
        self.participants.iter().find(|p| p.id == id)
    }

    pub fn admins(&self) -> usize {
        self.participants
            .iter()
            .filter(|p| p.role == Role::Admin)
            .count()
    }
}

fn validator() -> Result<&'static jsonschema::Validator, DomainError> {
    static V: OnceLock<Option<jsonschema::Validator>> = OnceLock::new();
    V.get_or_init(|| {
        serde_json::from_str::<Value>(SCHEMA)
            .ok()
            .and_then(|s| jsonschema::validator_for(&s).ok())
    })
    .as_ref()
    .ok_or_else(|| {
        DomainError::UnsupportedOperation("the task extension schema is unavailable".into())
    })
}

/// `/plan/steps/2/depends_on/0` → `plan.steps[2].depends_on[0]`.
pub fn field_path(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').filter(|s| !s.is_empty()) {
        if seg.chars().all(|c| c.is_ascii_digit()) {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg.replace("~1", "/").replace("~0", "~"));
        }
    }
    out
}

/// The server-controlled fields: an envelope that sets any of them is refused whole.
pub const SERVER_CONTROLLED: [&str; 3] = ["lifecycle", "model", "reasoning_effort"];

/// Checks an envelope from a client: size, the schema (unknown fields refused), no
/// server-controlled field, a DAG plan, the limits. Returns the parsed data.
pub fn validate_envelope(raw: &Value) -> Result<TaskExtensionData, DomainError> {
    let size = raw.to_string().len();
    if size > MAX_ENVELOPE_BYTES {
        return Err(DomainError::invalid(
            "task",
            format!("the task envelope is {size} bytes; the limit is {MAX_ENVELOPE_BYTES}"),
        ));
    }
    if let Some(obj) = raw.as_object() {
        for f in SERVER_CONTROLLED {
            if obj.get(f).is_some_and(|v| !v.is_null()) {
                return Err(DomainError::invalid(
                    f,
                    match f {
                        "lifecycle" => {
                            "is set by the server (conversation, or delegated for a sub-task)"
                        }
                        "model" => "is set by the server; send the command /model <name> instead",
                        _ => {
                            "is set by the server; send the command /effort low|medium|high instead"
                        }
                    },
                ));
            }
        }
    }
    if let Some(e) = validator()?.iter_errors(raw).next() {
        let path = field_path(&e.instance_path().to_string());
        return Err(DomainError::invalid(
            if path.is_empty() {
                "task".to_string()
            } else {
                path
            },
            e.to_string(),
        ));
    }
    let mut data: TaskExtensionData = serde_json::from_value(raw.clone())
        .map_err(|e| DomainError::invalid("task", e.to_string()))?;
    if data.participants.len() > MAX_PARTICIPANTS {
        return Err(DomainError::invalid(
            "participants",
            format!("a task may have at most {MAX_PARTICIPANTS} participants"),
        ));
    }
    if data.acceptance_criteria.len() > MAX_ACCEPTANCE_CRITERIA {
        return Err(DomainError::invalid(
            "acceptance_criteria",
            format!("a task may have at most {MAX_ACCEPTANCE_CRITERIA} acceptance criteria"),
        ));
    }
    for (i, p) in data.participants.iter().enumerate() {
        if p.id.trim().is_empty() {
            return Err(DomainError::invalid(
                format!("participants[{i}].id"),
                "must not be empty",
            ));
        }
        ParticipantId::parse(p.id.as_str())
            .map_err(|e| DomainError::invalid(format!("participants[{i}].id"), e))?;
        if data.participants[..i].iter().any(|o| o.id == p.id) {
            return Err(DomainError::invalid(
                format!("participants[{i}].id"),
                format!("participant {:?} is listed twice", p.id),
            ));
        }
    }
    check_task_refs(&data)?;
    if let Some(plan) = data.plan.take() {
        data.plan = Some(plan.normalize("plan").map_err(DomainError::from)?);
    }
    Ok(data)
}

/// Every task reference in an envelope names a task id (`unresolved_children` and the parent
/// links read them as task ids).
fn check_task_refs(data: &TaskExtensionData) -> Result<(), DomainError> {
    let steps = data.plan.iter().flat_map(|p| p.steps.iter().enumerate());
    let linked = steps.flat_map(|(i, s)| {
        s.linked_tasks
            .iter()
            .enumerate()
            .map(move |(j, r)| (format!("plan.steps[{i}].linked_tasks[{j}]"), r))
    });
    let listed = [
        ("parent_tasks", &data.parent_tasks),
        ("sub_tasks", &data.sub_tasks),
    ]
    .into_iter()
    .flat_map(|(f, refs)| {
        refs.iter()
            .enumerate()
            .map(move |(i, r)| (format!("{f}[{i}]"), r))
    });
    for (path, r) in listed.chain(linked) {
        TaskId::parse(r.task_id.as_str())
            .map_err(|e| DomainError::invalid(format!("{path}.task_id"), e))?;
    }
    Ok(())
}

/// The envelope a message carries: a task+json data part, else `metadata[METADATA_KEY]`.
pub fn envelope_of(m: &Message) -> Option<&Value> {
    m.parts
        .iter()
        .find_map(|p| match (&p.content, p.media_type.as_deref()) {
            (PartContent::Data(v), Some(MEDIA_TYPE)) => Some(v),
            _ => None,
        })
        .or_else(|| m.metadata.as_ref().and_then(|md| md.get(METADATA_KEY)))
}

/// The sender a message at `path` names in `metadata.participant_id` (none unless a string);
/// a string that is not a participant id is refused, naming the field.
pub fn sender_of(m: &Message, path: &str) -> Result<Option<ParticipantId>, DomainError> {
    m.metadata
        .as_ref()
        .and_then(|md| md.get(PARTICIPANT_ID_KEY))
        .and_then(Value::as_str)
        .map(|s| {
            ParticipantId::parse(s).map_err(|e| {
                DomainError::invalid(format!("{path}.metadata.{PARTICIPANT_ID_KEY}"), e)
            })
        })
        .transpose()
}

/// True when a message carries nothing but an envelope (a task update, not a prompt).
pub fn is_envelope_only(m: &Message) -> bool {
    !m.parts.is_empty()
        && m.parts.iter().all(|p| {
            matches!(
                (&p.content, p.media_type.as_deref()),
                (PartContent::Data(_), Some(MEDIA_TYPE))
            )
        })
}

/// A `/model <name>` or `/effort <level>` command in a message's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlashCommand {
    Model(String),
    Effort(String),
}

pub fn slash_command(m: &Message) -> Option<SlashCommand> {
    let text = m.text();
    let text = text.trim();
    let (cmd, arg) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    match cmd {
        "/model" => Some(SlashCommand::Model(arg.trim().to_string())),
        "/effort" => Some(SlashCommand::Effort(arg.trim().to_string())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn base() -> Value {
        json!({"name": "Ship it", "goal": "Release 1.0"})
    }

    #[test]
    fn the_committed_schema_compiles_and_accepts_a_full_envelope() {
        let v = json!({
            "name": "n", "goal": "g", "type": "feature", "description": "d",
            "acceptance_criteria": [{"text": "works", "met": false}],
            "participants": [{"id": "ann", "kind": "human", "role": "admin", "display_name": "Ann"}],
            "parent_tasks": [], "sub_tasks": [{"task_id": "t.1", "state": "working"}],
            "plan": {"steps": [{"id": "a", "name": "A"}, {"id": "b", "name": "B", "depends_on": ["a"]}]}
        });
        let d = validate_envelope(&v).unwrap();
        assert_eq!(d.participants[0].role, Role::Admin);
        assert_eq!(d.lifecycle(), Lifecycle::Conversation);
    }

    #[test]
    fn name_and_goal_are_required() {
        let e = validate_envelope(&json!({"name": "x"})).unwrap_err();
        assert!(
            matches!(e, DomainError::InvalidParams { ref reason, .. } if reason.contains("goal")),
            "{e}"
        );
    }

    #[test]
    fn unknown_fields_are_refused_everywhere() {
        let mut v = base();
        v["colour"] = json!("red");
        assert!(validate_envelope(&v).is_err());
        let mut v = base();
        v["participants"] = json!([{"id": "a", "kind": "human", "role": "admin", "extra": 1}]);
        let e = validate_envelope(&v).unwrap_err();
        assert!(
            matches!(e, DomainError::InvalidParams { ref field, .. } if field == "participants[0]"),
            "{e}"
        );
    }

    #[test]
    fn a_bad_role_names_its_path() {
        let mut v = base();
        v["participants"] = json!([
            {"id": "a", "kind": "human", "role": "admin"},
            {"id": "b", "kind": "human", "role": "boss"}
        ]);
        let e = validate_envelope(&v).unwrap_err();
        assert!(
            matches!(e, DomainError::InvalidParams { ref field, .. } if field == "participants[1].role"),
            "{e}"
        );
    }

    #[test]
    fn server_controlled_fields_refuse_the_envelope_whole() {
        for f in SERVER_CONTROLLED {
            let mut v = base();
            v[f] = json!("low");
            let e = validate_envelope(&v).unwrap_err();
            assert!(
                matches!(e, DomainError::InvalidParams { ref field, .. } if field == f),
                "{e}"
            );
        }
        let mut v = base();
        v["model"] = Value::Null;
        assert!(validate_envelope(&v).is_ok(), "null is not setting it");
    }

    #[test]
    fn a_cyclic_plan_is_a_plan_cycle_error() {
        let mut v = base();
        v["plan"] = json!({"steps": [
            {"id": "a", "name": "A", "depends_on": ["b"]},
            {"id": "b", "name": "B", "depends_on": ["a"]}
        ]});
        let e = validate_envelope(&v).unwrap_err();
        assert!(
            matches!(e, DomainError::PlanCycle { ref steps, .. } if steps.len() == 3),
            "{e}"
        );
    }

    #[test]
    fn envelope_size_at_and_past_the_limit() {
        let mut v = base();
        let pad = MAX_ENVELOPE_BYTES - v.to_string().len() - r#","description":"""#.len();
        v["description"] = json!("x".repeat(pad));
        assert_eq!(v.to_string().len(), MAX_ENVELOPE_BYTES);
        assert!(validate_envelope(&v).is_ok());
        v["description"] = json!("x".repeat(pad + 1));
        assert!(validate_envelope(&v).is_err());
    }

    #[test]
    fn participants_at_and_past_the_limit() {
        let mut v = base();
        let ps: Vec<Value> = (0..MAX_PARTICIPANTS)
            .map(|i| json!({"id": format!("p{i}"), "kind": "human", "role": "watcher"}))
            .collect();
        v["participants"] = json!(ps);
        assert!(validate_envelope(&v).is_ok());
        let mut more = ps;
        more.push(json!({"id": "one-more", "kind": "human", "role": "watcher"}));
        v["participants"] = json!(more);
        assert!(validate_envelope(&v).is_err());
    }

    #[test]
    fn field_paths_read_like_code() {
        assert_eq!(
            field_path("/plan/steps/2/depends_on/0"),
            "plan.steps[2].depends_on[0]"
        );
        assert_eq!(field_path(""), "");
    }

    #[test]
    fn slash_commands_are_recognised() {
        let m = Message::agent_text("m", "  /model gpt-5 ");
        assert_eq!(slash_command(&m), Some(SlashCommand::Model("gpt-5".into())));
        let m = Message::agent_text("m", "/effort high");
        assert_eq!(slash_command(&m), Some(SlashCommand::Effort("high".into())));
        assert_eq!(slash_command(&Message::agent_text("m", "model x")), None);
    }
}
