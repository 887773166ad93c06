//! A2UI surfaces (v0.9, basic catalog) drawn as components: the `application/a2ui+json` parts of
//! a task's artifacts are folded into surfaces (createSurface, updateComponents, deleteSurface),
//! and each surface is drawn from its `root` — layout (Column, Row, List, Card, Tabs, Modal),
//! content (Text, Icon, Image, Video, AudioPlayer, Divider) and inputs (TextField, CheckBox,
//! Slider, ChoicePicker, DateTimeInput). A Button sends its action back through the public API
//! (the script turns a click into an A2UI `action` message). Data bindings are not evaluated
//! (a bound value shows its path); an unknown component shows as folded JSON.

use std::collections::BTreeMap;

use maud::{html, Markup};
use serde_json::Value;
use taskledger_domain::wire::{Artifact, PartContent};

/// Nesting drawn at most (a surface is a tree; deeper parts show as JSON).
pub const MAX_DEPTH: usize = 16;

#[derive(Default)]
struct Surface {
    components: BTreeMap<String, Value>,
}

/// The surfaces the task's artifacts build, by id, in order of creation.
fn surfaces(artifacts: &[Artifact]) -> Vec<(String, Surface)> {
    let mut out: Vec<(String, Surface)> = Vec::new();
    let parts = artifacts
        .iter()
        .flat_map(|a| a.parts.iter())
        .filter_map(|p| match (&p.content, p.media_type.as_deref()) {
            (PartContent::Data(v), Some(taskledger_domain::a2ui::MEDIA_TYPE)) => Some(v),
            _ => None,
        });
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
            let id = u
                .get("surfaceId")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if let Some((_, s)) = out.iter_mut().find(|(s, _)| s == id) {
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
        if let Some(id) = m
            .pointer("/deleteSurface/surfaceId")
            .and_then(Value::as_str)
        {
            out.retain(|(s, _)| s != id);
        }
    }
    out
}

/// A text property: a literal string (or `{literalString}`); a data binding shows its path.
fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(o) => o
            .get("literalString")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| {
                o.get("path")
                    .and_then(Value::as_str)
                    .map(|p| format!("{{{p}}}"))
            })
            .unwrap_or_default(),
        None => String::new(),
    }
}

fn component(surface_id: &str, s: &Surface, id: &str, depth: usize) -> Markup {
    let Some(c) = s.components.get(id) else {
        return html! {};
    };
    if depth > MAX_DEPTH {
        return html! { pre { (c.to_string()) } };
    }
    let kids = |key: &str| -> Vec<String> {
        c.get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let child = c.get("child").and_then(Value::as_str).unwrap_or_default();
    match c
        .get("component")
        .and_then(Value::as_str)
        .unwrap_or_default()
    {
        "Column" | "List" => html! {
            div.a2ui-column { @for k in kids("children") { (component(surface_id, s, &k, depth + 1)) } }
        },
        "Row" => html! {
            div.a2ui-row { @for k in kids("children") { (component(surface_id, s, &k, depth + 1)) } }
        },
        "Card" => html! { div.a2ui-card { (component(surface_id, s, child, depth + 1)) } },
        "Text" => html! { p.a2ui-text { (text(c.get("text"))) } },
        "Divider" => html! { hr; },
        "Icon" => html! { span.a2ui-icon { (text(c.get("name"))) } },
        "Image" => html! {
            img.a2ui-image src=(text(c.get("url"))) alt=(text(c.get("altText").or(c.get("description"))));
        },
        "Video" | "AudioPlayer" => {
            html! { a href=(text(c.get("url"))) { (text(c.get("description").or(c.get("url")))) } }
        }
        "Tabs" => html! {
            div.a2ui-tabs {
                @for t in c.get("tabs").or(c.get("tabItems")).and_then(Value::as_array).into_iter().flatten() {
                    section { h4 { (text(t.get("title"))) } (component(surface_id, s, t.get("child").and_then(Value::as_str).unwrap_or_default(), depth + 1)) }
                }
            }
        },
        "Modal" => html! {
            div.a2ui-modal {
                (component(surface_id, s, c.get("trigger").and_then(Value::as_str).unwrap_or_default(), depth + 1))
                (component(surface_id, s, c.get("content").and_then(Value::as_str).unwrap_or_default(), depth + 1))
            }
        },
        // Inputs are drawn (their values are the agent's to bind; an action sends no context).
        "TextField" | "DateTimeInput" => html! {
            label.a2ui-field { (text(c.get("label"))) " " input value=(text(c.get("value").or(c.get("text")))); }
        },
        "CheckBox" => {
            html! { label.a2ui-field { input type="checkbox"; " " (text(c.get("label"))) } }
        }
        "Slider" => html! { label.a2ui-field { (text(c.get("label"))) " " input type="range"; } },
        "ChoicePicker" => html! {
            label.a2ui-field {
                (text(c.get("label"))) " "
                select {
                    @for o in c.get("options").and_then(Value::as_array).into_iter().flatten() {
                        option { (text(o.get("label").or(Some(o)))) }
                    }
                }
            }
        },
        "Button" => {
            let name = c
                .pointer("/action/event/name")
                .or_else(|| c.pointer("/action/name"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            html! {
                form.a2ui-action data-rpc="a2ui-action" data-surface=(surface_id) data-component=(id) data-name=(name) {
                    button type="submit" data-action="a2ui" { (component(surface_id, s, child, depth + 1)) }
                }
            }
        }
        _ => {
            html! { details.data { summary { "A2UI " (c.get("component").and_then(Value::as_str).unwrap_or("component")) } pre { (c.to_string()) } } }
        }
    }
}

/// Every surface of the task, drawn (nothing when it has none).
pub(super) fn render(artifacts: &[Artifact]) -> Markup {
    let all = surfaces(artifacts);
    html! {
        @if !all.is_empty() {
            section {
                h2 { "Surfaces" }
                @for (id, s) in &all {
                    div.a2ui-surface data-surface=(id) {
                        (component(id, s, "root", 0))
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn artifact(parts: Vec<Value>) -> Artifact {
        serde_json::from_value(serde_json::json!({
            "artifactId": "a2ui:9",
            "parts": parts.into_iter().map(|d| serde_json::json!({"data": d, "mediaType": "application/a2ui+json"})).collect::<Vec<_>>()
        }))
        .unwrap()
    }

    #[test]
    fn a_surface_is_drawn_from_its_root_with_buttons_that_send_their_action() {
        let a = artifact(vec![
            serde_json::json!({"createSurface": {"surfaceId": "s1", "catalogId": "basic"}}),
            serde_json::json!({"updateComponents": {"surfaceId": "s1", "components": [
                {"id": "root", "component": "Column", "children": ["t", "b", "img", "f"]},
                {"id": "img", "component": "Image", "url": "data:image/png;base64,AA==", "altText": "a dot"},
                {"id": "f", "component": "TextField", "label": "Name"},
                {"id": "t", "component": "Text", "text": "Pick <one>"},
                {"id": "l", "component": "Text", "text": {"literalString": "OK"}},
                {"id": "b", "component": "Button", "child": "l", "action": {"event": {"name": "ok"}}}
            ]}}),
        ]);
        let html = render(&[a]).into_string();
        assert!(html.contains("Pick &lt;one&gt;"), "escaped: {html}");
        assert!(
            html.contains(r#"data-surface="s1" data-component="b" data-name="ok""#),
            "{html}"
        );
        assert!(html.contains(">OK<"));
        assert!(
            html.contains(r#"alt="a dot""#) && html.contains("Name"),
            "{html}"
        );
        // a deleted surface is gone
        let gone = artifact(vec![
            serde_json::json!({"createSurface": {"surfaceId": "s2"}}),
            serde_json::json!({"deleteSurface": {"surfaceId": "s2"}}),
        ]);
        assert!(render(&[gone]).into_string().is_empty());
    }

    #[test]
    fn a_cycle_of_components_stops_at_the_depth_bound() {
        let a = artifact(vec![
            serde_json::json!({"createSurface": {"surfaceId": "s"}}),
            serde_json::json!({"updateComponents": {"surfaceId": "s", "components": [
                {"id": "root", "component": "Card", "child": "root"}
            ]}}),
        ]);
        assert!(render(&[a]).into_string().contains("<pre>"));
    }
}
