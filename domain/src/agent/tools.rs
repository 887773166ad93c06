//! Intrinsic tools of the task extension: committed definitions (`domain/schemas/intrinsics`),
//! argument validation (a typed error result, and nothing runs), and what each call does.

use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

use crate::agent::llm::{ToolCall, ToolSpec};
use crate::extensions::a2ui::UiMessages;
use crate::extensions::harness::{field_path, Plan, Role, Step, StepState};
use crate::ids::ParticipantId;
use crate::task::TaskCommand;
use crate::time::Timestamp;

const DEFINITIONS: [(&str, &str); 13] = [
    (
        "list_skills",
        include_str!("../../schemas/intrinsics/list_skills.json"),
    ),
    (
        "load_skill",
        include_str!("../../schemas/intrinsics/load_skill.json"),
    ),
    (
        "unload_skill",
        include_str!("../../schemas/intrinsics/unload_skill.json"),
    ),
    (
        "list_skill_resources",
        include_str!("../../schemas/intrinsics/list_skill_resources.json"),
    ),
    (
        "load_skill_resource",
        include_str!("../../schemas/intrinsics/load_skill_resource.json"),
    ),
    (
        "create_plan",
        include_str!("../../schemas/intrinsics/create_plan.json"),
    ),
    (
        "complete_step",
        include_str!("../../schemas/intrinsics/complete_step.json"),
    ),
    (
        "spawn_subtask",
        include_str!("../../schemas/intrinsics/spawn_subtask.json"),
    ),
    (
        "ask_participant",
        include_str!("../../schemas/intrinsics/ask_participant.json"),
    ),
    (
        "create_task_for_participant",
        include_str!("../../schemas/intrinsics/create_task_for_participant.json"),
    ),
    (
        "set_participant_role",
        include_str!("../../schemas/intrinsics/set_participant_role.json"),
    ),
    (
        "emit_ui",
        include_str!("../../schemas/intrinsics/emit_ui.json"),
    ),
    (
        "advance_work",
        include_str!("../../schemas/intrinsics/advance_work.json"),
    ),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Idempotency {
    Idempotent,
    NotIdempotent,
}

/// One committed tool definition.
#[derive(Debug, Clone, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub idempotency: Idempotency,
    pub input_schema: Value,
}

struct Compiled {
    def: ToolDefinition,
    validator: jsonschema::Validator,
}

fn registry() -> &'static [Compiled] {
    static R: OnceLock<Vec<Compiled>> = OnceLock::new();
    R.get_or_init(|| {
        DEFINITIONS
            .iter()
            .filter_map(|(_, text)| {
                let def: ToolDefinition = serde_json::from_str(text).ok()?;
                let validator = jsonschema::validator_for(&def.input_schema).ok()?;
                Some(Compiled { def, validator })
            })
            .collect()
    })
}

/// The tools offered to the model.
pub fn specs() -> Vec<ToolSpec> {
    registry()
        .iter()
        .map(|c| ToolSpec {
            name: c.def.name.clone(),
            description: c.def.description.clone(),
            input_schema: c.def.input_schema.clone(),
        })
        .collect()
}

pub fn definition(name: &str) -> Option<&'static ToolDefinition> {
    registry()
        .iter()
        .find(|c| c.def.name == name)
        .map(|c| &c.def)
}

/// A typed error result for the model; nothing ran.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    #[error("tool.not_found: there is no tool named {0:?}")]
    NotFound(String),
    #[error("tool.invalid_arguments: {field}: {reason}")]
    InvalidArguments { field: String, reason: String },
}

/// A skill tool: answered from the skill catalog (load and unload are also recorded).
#[derive(Debug, Clone, PartialEq)]
pub enum SkillOp {
    List,
    Load(String),
    Unload(String),
    ListResources(String),
    LoadResource {
        name: String,
        kind: crate::agent::skills::ResourceKind,
        resource: String,
    },
}

/// What a valid call does.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolAction {
    Skill(SkillOp),
    /// Commands on this task, committed together with the call's result.
    Commands(Vec<TaskCommand>),
    /// A sub-task (a second aggregate), optionally from a plan step (its id or name) and
    /// for a participant.
    SpawnSubTask {
        name: String,
        goal: String,
        step: Option<String>,
        for_participant: Option<ParticipantId>,
    },
}

#[derive(Deserialize)]
struct PlanArgs {
    steps: Vec<PlanStepArgs>,
}
#[derive(Deserialize)]
struct PlanStepArgs {
    name: String,
    description: String,
    #[serde(default)]
    depends_on: Vec<String>,
}
#[derive(Deserialize)]
struct CompleteArgs {
    step: String,
    output: String,
}
#[derive(Deserialize)]
struct SpawnArgs {
    name: String,
    goal: String,
    #[serde(default)]
    step: Option<String>,
    #[serde(default)]
    participant_id: Option<String>,
}
#[derive(Deserialize)]
struct AskArgs {
    participant_id: String,
    question: String,
    #[serde(default)]
    options: Vec<String>,
}
#[derive(Deserialize)]
struct SkillArgs {
    name: String,
}
#[derive(Deserialize)]
struct ResourceArgs {
    name: String,
    kind: crate::agent::skills::ResourceKind,
    resource: String,
}
#[derive(Deserialize)]
struct EmitUiArgs {
    messages: Vec<Value>,
}
#[derive(Deserialize)]
struct AdvanceArgs {
    status: String,
    #[serde(default)]
    artifacts: Vec<crate::extensions::dmp::WorkArtifact>,
}
#[derive(Deserialize)]
struct RoleArgs {
    participant_id: String,
    role: Role,
}

/// A participant id argument, checked where it enters.
fn participant(field: &str, id: String) -> Result<ParticipantId, ToolError> {
    ParticipantId::parse(id).map_err(|reason| ToolError::InvalidArguments {
        field: field.into(),
        reason,
    })
}

fn args<T: serde::de::DeserializeOwned>(v: &Value) -> Result<T, ToolError> {
    serde_json::from_value(v.clone()).map_err(|e| ToolError::InvalidArguments {
        field: "arguments".into(),
        reason: e.to_string(),
    })
}

/// Validates a call against its schema and turns it into an action. `by` is the acting
/// participant (for role changes).
pub fn plan_call(
    call: &ToolCall,
    by: Option<&ParticipantId>,
    at: Timestamp,
) -> Result<ToolAction, ToolError> {
    let compiled = registry()
        .iter()
        .find(|c| c.def.name == call.name)
        .ok_or_else(|| ToolError::NotFound(call.name.clone()))?;
    if let Some(e) = compiled.validator.iter_errors(&call.arguments).next() {
        let path = field_path(&e.instance_path().to_string());
        return Err(ToolError::InvalidArguments {
            field: if path.is_empty() {
                "arguments".into()
            } else {
                path
            },
            reason: e.to_string(),
        });
    }
    let a = &call.arguments;
    Ok(match call.name.as_str() {
        "create_plan" => {
            let p: PlanArgs = args(a)?;
            ToolAction::Commands(vec![TaskCommand::CreatePlan {
                plan: Plan {
                    steps: p
                        .steps
                        .into_iter()
                        .map(|s| Step {
                            id: String::new(),
                            name: s.name,
                            description: s.description,
                            depends_on: s.depends_on,
                            linked_tasks: vec![],
                            output: None,
                            state: StepState::Pending,
                        })
                        .collect(),
                },
                at,
            }])
        }
        "complete_step" => {
            let c: CompleteArgs = args(a)?;
            ToolAction::Commands(vec![TaskCommand::CompleteStep {
                step: c.step,
                output: c.output,
                at,
            }])
        }
        "spawn_subtask" => {
            let s: SpawnArgs = args(a)?;
            ToolAction::SpawnSubTask {
                name: s.name,
                goal: s.goal,
                step: s.step,
                for_participant: None,
            }
        }
        "create_task_for_participant" => {
            let s: SpawnArgs = args(a)?;
            ToolAction::SpawnSubTask {
                name: s.name,
                goal: s.goal,
                step: s.step,
                for_participant: s
                    .participant_id
                    .map(|p| participant("participant_id", p))
                    .transpose()?,
            }
        }
        "ask_participant" => {
            let q: AskArgs = args(a)?;
            ToolAction::Commands(vec![TaskCommand::AskParticipant {
                participant_id: participant("participant_id", q.participant_id)?,
                question: q.question,
                options: q.options,
                at,
            }])
        }
        "set_participant_role" => {
            let r: RoleArgs = args(a)?;
            ToolAction::Commands(vec![TaskCommand::SetParticipantRole {
                participant_id: participant("participant_id", r.participant_id)?,
                role: r.role,
                by: by.cloned(),
                at,
            }])
        }
        "advance_work" => {
            let w: AdvanceArgs = args(a)?;
            ToolAction::Commands(vec![TaskCommand::AdvanceWork(Box::new(
                crate::task::AdvanceWork {
                    status: crate::extensions::dmp::WorkStatus::parse(&w.status),
                    artifacts: w.artifacts,
                    at,
                },
            ))])
        }
        "emit_ui" => {
            let u: EmitUiArgs = args(a)?;
            let messages =
                UiMessages::parse(u.messages).map_err(|e| ToolError::InvalidArguments {
                    field: e.field,
                    reason: e.reason,
                })?;
            ToolAction::Commands(vec![TaskCommand::EmitUi { messages, at }])
        }
        "list_skills" => ToolAction::Skill(SkillOp::List),
        "load_skill" => ToolAction::Skill(SkillOp::Load(args::<SkillArgs>(a)?.name)),
        "unload_skill" => ToolAction::Skill(SkillOp::Unload(args::<SkillArgs>(a)?.name)),
        "list_skill_resources" => {
            ToolAction::Skill(SkillOp::ListResources(args::<SkillArgs>(a)?.name))
        }
        "load_skill_resource" => {
            let r: ResourceArgs = args(a)?;
            ToolAction::Skill(SkillOp::LoadResource {
                name: r.name,
                kind: r.kind,
                resource: r.resource,
            })
        }
        other => return Err(ToolError::NotFound(other.to_string())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, arguments: Value) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments,
        }
    }

    #[test]
    fn every_committed_definition_loads_and_declares_idempotency() {
        assert_eq!(specs().len(), DEFINITIONS.len());
        assert_eq!(
            definition("create_plan").unwrap().idempotency,
            Idempotency::Idempotent
        );
        assert_eq!(
            definition("spawn_subtask").unwrap().idempotency,
            Idempotency::NotIdempotent
        );
        for s in specs() {
            assert_eq!(s.input_schema["additionalProperties"], false, "{}", s.name);
        }
    }

    #[test]
    fn an_unknown_tool_is_a_typed_error() {
        let e = plan_call(&call("rm_rf", json!({})), None, Timestamp::now()).unwrap_err();
        assert!(matches!(e, ToolError::NotFound(_)));
        assert!(e.to_string().starts_with("tool.not_found"));
    }

    #[test]
    fn bad_arguments_are_a_typed_error_with_a_path() {
        let e = plan_call(
            &call("create_plan", json!({"steps": []})),
            None,
            Timestamp::now(),
        )
        .unwrap_err();
        assert!(
            matches!(e, ToolError::InvalidArguments { ref field, .. } if field == "steps"),
            "{e}"
        );
        let e = plan_call(
            &call(
                "create_plan",
                json!({"steps": [{"name": "a", "description": "d", "extra": 1}]}),
            ),
            None,
            Timestamp::now(),
        )
        .unwrap_err();
        assert!(
            matches!(e, ToolError::InvalidArguments { ref field, .. } if field == "steps[0]"),
            "{e}"
        );
        let e = plan_call(
            &call(
                "set_participant_role",
                json!({"participant_id": "a", "role": "boss"}),
            ),
            None,
            Timestamp::now(),
        )
        .unwrap_err();
        assert!(
            matches!(e, ToolError::InvalidArguments { ref field, .. } if field == "role"),
            "{e}"
        );
    }

    #[test]
    fn emit_ui_checks_every_a2ui_message_and_names_the_failing_one() {
        let create = json!({"version": "v0.9", "createSurface": {"surfaceId": "s", "catalogId": crate::extensions::a2ui::BASIC_CATALOG_ID}});
        let a = plan_call(
            &call("emit_ui", json!({"messages": [create.clone()]})),
            None,
            Timestamp::now(),
        )
        .unwrap();
        assert!(
            matches!(a, ToolAction::Commands(ref c) if matches!(&c[0], TaskCommand::EmitUi { messages, .. } if messages.len() == 1))
        );
        assert_eq!(
            definition("emit_ui").unwrap().idempotency,
            Idempotency::NotIdempotent
        );
        let e = plan_call(
            &call(
                "emit_ui",
                json!({"messages": [create, {"version": "v0.9", "updateComponents": {"surfaceId": "s", "components": [{"id": "root"}]}}]}),
            ),
            None,
            Timestamp::now(),
        )
        .unwrap_err();
        assert!(
            matches!(e, ToolError::InvalidArguments { ref field, .. } if field == "messages[1].updateComponents.components[0].component"),
            "{e}"
        );
        assert!(e
            .to_string()
            .starts_with("tool.invalid_arguments: messages[1]"));
        // the tool's own schema: at least one message, each an object
        for bad in [
            json!({"messages": []}),
            json!({"messages": ["hi"]}),
            json!({}),
        ] {
            let e = plan_call(&call("emit_ui", bad.clone()), None, Timestamp::now()).unwrap_err();
            assert!(
                matches!(e, ToolError::InvalidArguments { .. }),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn valid_calls_become_task_commands() {
        let a = plan_call(
            &call("create_plan", json!({"steps": [{"name": "Gather", "description": ""}, {"name": "Write", "description": "", "depends_on": ["Gather"]}]})),
            None,
            Timestamp::now(),
        )
        .unwrap();
        assert!(
            matches!(a, ToolAction::Commands(ref c) if matches!(&c[0], TaskCommand::CreatePlan { plan, .. } if plan.steps.len() == 2))
        );
        let a = plan_call(
            &call(
                "create_task_for_participant",
                json!({"participant_id": "bob", "name": "Review", "goal": "Review it"}),
            ),
            None,
            Timestamp::now(),
        )
        .unwrap();
        assert!(
            matches!(a, ToolAction::SpawnSubTask { for_participant: Some(ref p), .. } if p == "bob")
        );
    }
}
