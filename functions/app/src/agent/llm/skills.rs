//! The skill tools: list the catalog, load and unload a skill (recorded on the task, so its
//! instructions stay in the agent's context), list and read a loaded skill's resources.

use taskledger_domain::agent::llm::ToolCall;
use taskledger_domain::agent::tools::SkillOp;
use taskledger_domain::ids::TaskId;
use taskledger_domain::task::TaskCommand;
use taskledger_domain::time::Timestamp;

use super::tools::commit_result;
use super::LlmAgent;
use crate::agent::TaskPort;

impl LlmAgent {
    /// Answers a skill tool from the catalog; load and unload are recorded on the task.
    pub(super) async fn run_skill(
        &self,
        tasks: &dyn TaskPort,
        task_id: &TaskId,
        call: &ToolCall,
        op: SkillOp,
        loaded_now: &[String],
    ) {
        let loaded = |name: &str| loaded_now.iter().any(|n| n == name);
        let at = Timestamp::now();
        let (result, cmds) = match op {
            SkillOp::List if self.skills.skills.is_empty() => {
                (Ok("no skills are installed".to_string()), vec![])
            }
            SkillOp::List => (
                Ok(self
                    .skills
                    .skills
                    .iter()
                    .map(|s| format!("{}: {}", s.name, s.description))
                    .collect::<Vec<_>>()
                    .join("\n")),
                vec![],
            ),
            SkillOp::Load(name) => match self.skills.get(&name) {
                Some(_) => (
                    Ok(format!("skill {name} loaded")),
                    vec![TaskCommand::LoadSkill { name, at }],
                ),
                None => (
                    Err(format!("skill.not_found: there is no skill named {name:?}")),
                    vec![],
                ),
            },
            SkillOp::Unload(name) => (
                Ok(format!("skill {name} unloaded")),
                vec![TaskCommand::UnloadSkill { name, at }],
            ),
            SkillOp::ListResources(name) => match self.skills.get(&name) {
                Some(s) if loaded(&name) => (
                    Ok(s.resources
                        .iter()
                        .map(|r| format!("{}/{}", r.kind.dir(), r.name))
                        .collect::<Vec<_>>()
                        .join("\n")),
                    vec![],
                ),
                Some(_) => (Err(format!("skill.not_loaded: load {name} first")), vec![]),
                None => (
                    Err(format!("skill.not_found: there is no skill named {name:?}")),
                    vec![],
                ),
            },
            SkillOp::LoadResource {
                name,
                kind,
                resource,
            } => match self.skills.get(&name) {
                Some(s) if loaded(&name) => match s
                    .resources
                    .iter()
                    .find(|r| r.kind == kind && r.name == resource)
                {
                    Some(r) => (Ok(r.content.clone()), vec![]),
                    None => (
                        Err(format!(
                            "skill.resource_not_found: {name} has no {}/{resource}",
                            kind.dir()
                        )),
                        vec![],
                    ),
                },
                Some(_) => (Err(format!("skill.not_loaded: load {name} first")), vec![]),
                None => (
                    Err(format!("skill.not_found: there is no skill named {name:?}")),
                    vec![],
                ),
            },
        };
        commit_result(tasks, task_id, call, result, cmds).await;
    }
}
