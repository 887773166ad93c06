//! The plan as a drawn DAG: steps in columns by their depth (the longest chain of dependencies
//! before them), arrows from each dependency, each step coloured by its state, a done step's
//! output on hover (its SVG title).

use std::collections::HashMap;

use maud::{html, Markup};
use serde_json::Value;

const W: usize = 170;
const H: usize = 44;
const GAP_X: usize = 50;
const GAP_Y: usize = 16;

struct Step {
    id: String,
    name: String,
    state: String,
    output: Option<String>,
    depends_on: Vec<String>,
}

fn steps(ext: Option<&Value>) -> Vec<Step> {
    ext.and_then(|e| e.get("plan"))
        .and_then(|p| p.get("steps"))
        .and_then(Value::as_array)
        .map(|ss| {
            ss.iter()
                .map(|s| Step {
                    id: s
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    name: s
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    state: s
                        .get("state")
                        .and_then(Value::as_str)
                        .unwrap_or("pending")
                        .to_string(),
                    output: s.get("output").and_then(Value::as_str).map(str::to_string),
                    depends_on: s
                        .get("depends_on")
                        .and_then(Value::as_array)
                        .map(|d| {
                            d.iter()
                                .filter_map(Value::as_str)
                                .map(str::to_string)
                                .collect()
                        })
                        .unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Each step's depth; the plan is a DAG (the domain refuses cycles), and a dependency that names
/// no step counts as none.
fn depths(steps: &[Step]) -> Vec<usize> {
    let index: HashMap<&str, usize> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect();
    let mut depth = vec![0usize; steps.len()];
    // At most n rounds settle the longest paths of a DAG of n steps.
    for _ in 0..steps.len() {
        let mut changed = false;
        for (i, s) in steps.iter().enumerate() {
            for d in &s.depends_on {
                if let Some(&j) = index.get(d.as_str()) {
                    if depth[j] + 1 > depth[i] {
                        depth[i] = depth[j] + 1;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    depth
}

pub(super) fn render(ext: Option<&Value>) -> Markup {
    let steps = steps(ext);
    if steps.is_empty() {
        return html! { p { "No plan." } };
    }
    let depth = depths(&steps);
    let mut row_in_col: HashMap<usize, usize> = HashMap::new();
    let pos: Vec<(usize, usize)> = depth
        .iter()
        .map(|d| {
            let r = row_in_col.entry(*d).or_insert(0);
            let p = (d * (W + GAP_X) + 8, *r * (H + GAP_Y) + 8);
            *r += 1;
            p
        })
        .collect();
    let width = depth.iter().max().map_or(1, |d| d + 1) * (W + GAP_X) + 16;
    let height = row_in_col.values().max().copied().unwrap_or(1) * (H + GAP_Y) + 16;
    let index: HashMap<&str, usize> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect();
    html! {
        svg.plan role="img" aria-label="Plan" width=(width) height=(height) viewBox={ "0 0 " (width) " " (height) } {
            defs {
                marker #arrow viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto" {
                    path d="M0,0 L10,5 L0,10 z" {}
                }
            }
            @for (i, s) in steps.iter().enumerate() {
                @for d in &s.depends_on {
                    @if let Some(&j) = index.get(d.as_str()) {
                        line.edge x1=(pos[j].0 + W) y1=(pos[j].1 + H / 2) x2=(pos[i].0) y2=(pos[i].1 + H / 2) marker-end="url(#arrow)" {}
                    }
                }
            }
            @for (i, s) in steps.iter().enumerate() {
                g class={ "step " (s.state) } data-step=(s.id) data-step-state=(s.state) {
                    title { (s.name) " — " (s.state) @if let Some(o) = &s.output { ": " (o) } }
                    rect x=(pos[i].0) y=(pos[i].1) width=(W) height=(H) rx="6" {}
                    text x=(pos[i].0 + 8) y=(pos[i].1 + 18) { (truncate(&s.name, 22)) }
                    text.sub x=(pos[i].0 + 8) y=(pos[i].1 + 36) { (s.state) }
                }
            }
        }
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_sit_in_columns_by_the_longest_chain_before_them() {
        let ext = serde_json::json!({"plan": {"steps": [
            {"id": "a", "name": "A", "depends_on": []},
            {"id": "b", "name": "B", "depends_on": ["a"]},
            {"id": "c", "name": "C", "depends_on": ["a", "b"], "state": "done", "output": "ok"},
            {"id": "d", "name": "D", "depends_on": ["nowhere"]}
        ]}});
        let s = steps(Some(&ext));
        assert_eq!(depths(&s), [0, 1, 2, 0]);
        let svg = render(Some(&ext)).into_string();
        assert!(
            svg.contains(r#"data-step="c" data-step-state="done""#),
            "{svg}"
        );
        assert!(svg.contains("C — done: ok"), "the output on hover");
        assert_eq!(
            svg.matches("<line").count(),
            3,
            "one arrow per known dependency"
        );
    }
}
