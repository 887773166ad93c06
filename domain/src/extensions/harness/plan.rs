//! The plan: a DAG of steps. Ids are slugs of names; dependencies name steps by id or name.
//! Duplicates, unknown dependencies and cycles are a `PlanCycleError` naming the steps.

use serde::{Deserialize, Serialize};

use super::refs::TaskRef;
use crate::error::DomainError;
use crate::ids::StepId;

/// Most steps a plan may have.
pub const MAX_PLAN_STEPS: usize = 100;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepState {
    #[default]
    Pending,
    Active,
    Done,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub depends_on: Vec<String>,
    #[serde(default)]
    pub linked_tasks: Vec<TaskRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    #[serde(default)]
    pub state: StepState,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub steps: Vec<Step>,
}

/// A plan that is not a DAG; `steps` are the offending step ids, `field` where the problem is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct PlanCycleError {
    pub field: String,
    pub reason: String,
    pub steps: Vec<String>,
}

/// A plan that is not a DAG is refused as `DomainError::PlanCycle`, naming its steps.
impl From<PlanCycleError> for DomainError {
    fn from(e: PlanCycleError) -> Self {
        Self::PlanCycle {
            field: e.field,
            reason: e.reason,
            steps: e.steps,
        }
    }
}

/// Lower-case; every run of characters outside `[a-z0-9]` becomes one `-`; trimmed; `step` if empty.
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c);
        } else {
            dash = true;
        }
    }
    if out.is_empty() {
        "step".into()
    } else {
        out
    }
}

impl Plan {
    /// Gives every step an id (its own, else the slug of its name), resolves dependencies given
    /// by name to ids, and checks the result is a DAG. `path` is where the plan sits (`plan`).
    pub fn normalize(mut self, path: &str) -> Result<Plan, PlanCycleError> {
        if self.steps.len() > MAX_PLAN_STEPS {
            return Err(PlanCycleError {
                field: format!("{path}.steps"),
                reason: format!("a plan may have at most {MAX_PLAN_STEPS} steps"),
                steps: vec![],
            });
        }
        for (i, s) in self.steps.iter_mut().enumerate() {
            s.id = if s.id.trim().is_empty() {
                slug(&s.name)
            } else {
                s.id.trim().to_string()
            };
            // The plan's step ids enter here: events and commands carry them as `StepId`.
            if let Err(reason) = StepId::parse(s.id.as_str()) {
                return Err(PlanCycleError {
                    field: format!("{path}.steps[{i}].id"),
                    reason,
                    steps: vec![],
                });
            }
        }
        for (i, s) in self.steps.iter().enumerate() {
            if let Some(j) = self.steps[..i].iter().position(|o| o.id == s.id) {
                return Err(PlanCycleError {
                    field: format!("{path}.steps[{i}].id"),
                    reason: format!("step id {:?} is used by steps[{j}] too", s.id),
                    steps: vec![s.id.clone()],
                });
            }
        }
        let ids: Vec<String> = self.steps.iter().map(|s| s.id.clone()).collect();
        let names: Vec<String> = self.steps.iter().map(|s| s.name.clone()).collect();
        for (i, s) in self.steps.iter_mut().enumerate() {
            for (k, dep) in s.depends_on.iter_mut().enumerate() {
                let resolved = ids
                    .iter()
                    .position(|id| id == dep)
                    .or_else(|| names.iter().position(|n| n == dep))
                    .or_else(|| ids.iter().position(|id| *id == slug(dep)));
                match resolved {
                    Some(p) => *dep = ids[p].clone(),
                    None => {
                        return Err(PlanCycleError {
                            field: format!("{path}.steps[{i}].depends_on[{k}]"),
                            reason: format!("step {:?} depends on unknown step {dep:?}", s.id),
                            steps: vec![s.id.clone()],
                        })
                    }
                }
            }
        }
        if let Some(cycle) = find_cycle(&self.steps) {
            let first = self
                .steps
                .iter()
                .position(|s| s.id == cycle[0])
                .unwrap_or(0);
            return Err(PlanCycleError {
                field: format!("{path}.steps[{first}].depends_on"),
                reason: format!(
                    "the steps {} depend on each other in a cycle",
                    cycle.join(" -> ")
                ),
                steps: cycle,
            });
        }
        Ok(self)
    }

    pub fn step(&self, id_or_name: &str) -> Option<&Step> {
        self.index_of(id_or_name).map(|i| &self.steps[i])
    }

    pub fn index_of(&self, id_or_name: &str) -> Option<usize> {
        self.steps
            .iter()
            .position(|s| s.id == id_or_name)
            .or_else(|| self.steps.iter().position(|s| s.name == id_or_name))
            .or_else(|| self.steps.iter().position(|s| s.id == slug(id_or_name)))
    }

    /// Dependencies of a step that are not done yet.
    pub fn blockers(&self, index: usize) -> Vec<String> {
        self.steps[index]
            .depends_on
            .iter()
            .filter(|d| {
                self.steps
                    .iter()
                    .find(|s| &s.id == *d)
                    .is_none_or(|s| s.state != StepState::Done)
            })
            .cloned()
            .collect()
    }

    /// A replacement plan keeps the state and output of steps that were done under the same id.
    pub fn replacing(mut self, old: &Plan) -> Plan {
        for s in &mut self.steps {
            if let Some(o) = old
                .steps
                .iter()
                .find(|o| o.id == s.id && o.state == StepState::Done)
            {
                s.state = StepState::Done;
                s.output = o.output.clone();
            }
        }
        self
    }
}

/// The ids of one cycle, if the dependency graph has any (dependencies resolved to ids).
fn find_cycle(steps: &[Step]) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Closed,
    }
    fn visit(
        i: usize,
        steps: &[Step],
        marks: &mut [Mark],
        stack: &mut Vec<usize>,
    ) -> Option<Vec<String>> {
        marks[i] = Mark::Open;
        stack.push(i);
        for d in &steps[i].depends_on {
            let Some(j) = steps.iter().position(|s| &s.id == d) else {
                continue;
            };
            match marks[j] {
                Mark::Open => {
                    let from = stack.iter().position(|&k| k == j).unwrap_or(0);
                    let mut cycle: Vec<String> =
                        stack[from..].iter().map(|&k| steps[k].id.clone()).collect();
                    cycle.push(steps[j].id.clone());
                    return Some(cycle);
                }
                Mark::New => {
                    if let Some(c) = visit(j, steps, marks, stack) {
                        return Some(c);
                    }
                }
                Mark::Closed => {}
            }
        }
        stack.pop();
        marks[i] = Mark::Closed;
        None
    }
    let mut marks = vec![Mark::New; steps.len()];
    for i in 0..steps.len() {
        if marks[i] == Mark::New {
            if let Some(c) = visit(i, steps, &mut marks, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(id: &str, name: &str, deps: &[&str]) -> Step {
        Step {
            id: id.into(),
            name: name.into(),
            description: String::new(),
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
            linked_tasks: vec![],
            output: None,
            state: StepState::Pending,
        }
    }

    #[test]
    fn slugs_follow_the_harness_rule() {
        assert_eq!(slug("Write the Report!"), "write-the-report");
        assert_eq!(slug("  --a__b  "), "a-b");
        assert_eq!(slug("???"), "step");
        assert_eq!(slug("Étape 2"), "tape-2");
    }

    #[test]
    fn ids_come_from_names_and_dependencies_by_name_resolve_to_ids() {
        let p = Plan {
            steps: vec![
                step("", "Gather data", &[]),
                step("", "Write report", &["Gather data"]),
            ],
        }
        .normalize("plan")
        .unwrap();
        assert_eq!(p.steps[0].id, "gather-data");
        assert_eq!(p.steps[1].depends_on, vec!["gather-data".to_string()]);
    }

    #[test]
    fn duplicate_ids_are_refused_with_the_step() {
        let e = Plan {
            steps: vec![step("a", "A", &[]), step("a", "A again", &[])],
        }
        .normalize("plan")
        .unwrap_err();
        assert_eq!(e.field, "plan.steps[1].id");
        assert_eq!(e.steps, vec!["a".to_string()]);
    }

    #[test]
    fn unknown_dependencies_are_refused_with_their_path() {
        let e = Plan {
            steps: vec![
                step("a", "A", &[]),
                step("b", "B", &[]),
                step("c", "C", &["a", "zzz"]),
            ],
        }
        .normalize("plan")
        .unwrap_err();
        assert_eq!(e.field, "plan.steps[2].depends_on[1]");
        assert_eq!(e.steps, vec!["c".to_string()]);
    }

    #[test]
    fn cycles_are_refused_naming_the_steps() {
        let e = Plan {
            steps: vec![
                step("a", "A", &["c"]),
                step("b", "B", &["a"]),
                step("c", "C", &["b"]),
                step("d", "D", &[]),
            ],
        }
        .normalize("plan")
        .unwrap_err();
        assert_eq!(e.steps, vec!["a", "c", "b", "a"]);
        assert!(e.reason.contains("cycle"));
        let e = Plan {
            steps: vec![step("a", "A", &["a"])],
        }
        .normalize("plan")
        .unwrap_err();
        assert_eq!(e.steps, vec!["a", "a"]);
    }

    #[test]
    fn plan_size_at_and_past_the_limit() {
        let steps: Vec<Step> = (0..MAX_PLAN_STEPS)
            .map(|i| step(&format!("s{i}"), "x", &[]))
            .collect();
        assert!(Plan {
            steps: steps.clone()
        }
        .normalize("plan")
        .is_ok());
        let mut more = steps;
        more.push(step("extra", "x", &[]));
        assert!(Plan { steps: more }.normalize("plan").is_err());
    }

    #[test]
    fn a_replaced_plan_keeps_done_outputs_where_ids_match() {
        let mut old = Plan {
            steps: vec![step("a", "A", &[]), step("b", "B", &["a"])],
        };
        old.steps[0].state = StepState::Done;
        old.steps[0].output = Some("data".into());
        let new = Plan {
            steps: vec![step("a", "A", &[]), step("c", "C", &["a"])],
        }
        .replacing(&old);
        assert_eq!(new.steps[0].state, StepState::Done);
        assert_eq!(new.steps[0].output.as_deref(), Some("data"));
        assert_eq!(new.steps[1].state, StepState::Pending);
    }
}
