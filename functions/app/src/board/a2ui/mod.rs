//! A2UI surfaces (v0.9, basic catalog) drawn as components: the `application/a2ui+json` parts of
//! a task's artifacts are folded into surfaces (createSurface, updateComponents, updateDataModel,
//! deleteSurface), and each surface is drawn from its `root` with its data bindings evaluated
//! against the surface's data model (`model.rs`); the drawing is `draw.rs`. Inputs carry the
//! JSON Pointer they are bound to, so the script keeps a Text bound to the same path current and
//! a Button's action sends its context resolved from what the person entered.

mod draw;
mod model;

use std::collections::BTreeMap;

use maud::{html, Markup};
use serde_json::Value;
use taskledger_domain::wire::{Artifact, PartContent};

use super::urls::ImageOrigins;

/// One surface: its components by id and its data model.
#[derive(Default)]
struct Surface {
    components: BTreeMap<String, Value>,
    data: Value,
}

/// The surfaces the task's artifacts build, by id, in order of creation.
fn surfaces(artifacts: &[Artifact]) -> Vec<(String, Surface)> {
    let mut out: Vec<(String, Surface)> = Vec::new();
    // Only what `emit_ui` made (the domain checked its structure); nothing else is drawn.
    let parts = artifacts
        .iter()
        .filter(|a| a.name.as_deref() == Some(taskledger_domain::extensions::a2ui::ARTIFACT_NAME))
        .flat_map(|a| a.parts.iter())
        .filter_map(|p| match (&p.content, p.media_type.as_deref()) {
            (PartContent::Data(v), Some(taskledger_domain::extensions::a2ui::MEDIA_TYPE)) => {
                Some(v)
            }
            _ => None,
        });
    let id_of = |m: &Value| {
        m.get("surfaceId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    for m in parts {
        if let Some(id) = m
            .pointer("/createSurface/surfaceId")
            .and_then(Value::as_str)
        {
            if !out.iter().any(|(s, _)| s == id) {
                out.push((id.to_string(), Surface::default()));
            }
        }
        if let Some(u) = m.get("updateComponents") {
            let id = id_of(u);
            if let Some((_, s)) = out.iter_mut().find(|(s, _)| *s == id) {
                for c in u
                    .get("components")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(cid) = c.get("id").and_then(Value::as_str) {
                        s.components.insert(cid.to_string(), c.clone());
                    }
                }
            }
        }
        if let Some(u) = m.get("updateDataModel") {
            let id = id_of(u);
            if let Some((_, s)) = out.iter_mut().find(|(s, _)| *s == id) {
                let path = u.get("path").and_then(Value::as_str).unwrap_or_default();
                model::set(&mut s.data, path, u.get("value").cloned());
            }
        }
        if let Some(id) = m
            .pointer("/deleteSurface/surfaceId")
            .and_then(Value::as_str)
        {
            out.retain(|(s, _)| s != id);
        }
    }
    out
}

/// Every surface of the task, drawn (nothing when it has none). Buttons act only when the
/// caller may send a message on the task (`may_act`); otherwise they show, disabled. Images
/// come only from the board, `data:` or `origins` (`urls`).
pub(super) fn render(artifacts: &[Artifact], may_act: bool, origins: &ImageOrigins) -> Markup {
    let all = surfaces(artifacts);
    html! {
        @if !all.is_empty() {
            section {
                h2 { "Surfaces" }
                @for (id, s) in &all {
                    div.a2ui-surface data-surface=(id) {
                        (draw::root(id, s, may_act, origins))
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
