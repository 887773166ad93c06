//! Drawing one surface from its `root`: layout (Column, Row, List — with child templates over a
//! data array —, Card, Tabs, Modal), content (Text, Icon, Image, Video, AudioPlayer, Divider)
//! and inputs (TextField, CheckBox, Slider, ChoicePicker, DateTimeInput) with their bound values.
//! A bound input carries `data-path`; a Button is a form whose `data-context` lists what its
//! action's context names (a pointer, or a literal), for the script to resolve when clicked.
//! An unknown component shows as folded JSON.

use std::cell::Cell;

use maud::{html, Markup};
use serde_json::{Map, Value};

use super::model::{self, Bound};
use super::Surface;
use crate::board::urls::{self, Image, ImageOrigins};

/// Nesting drawn at most (the domain refuses deeper surfaces; deeper parts show as JSON).
pub const MAX_DEPTH: usize = taskledger_domain::extensions::a2ui::MAX_SURFACE_DEPTH;
/// Items of one List template drawn at most.
pub const MAX_LIST_ITEMS: usize = 200;
/// Components drawn at most for one surface, List items included: past it the rest is left out
/// with a note. Whatever a surface holds, drawing it is bounded.
pub const MAX_DRAWN_NODES: usize = 2_000;

struct Draw<'a> {
    surface_id: &'a str,
    s: &'a Surface,
    may_act: bool,
    origins: &'a ImageOrigins,
    /// Components still to be drawn.
    budget: Cell<usize>,
    /// Whether one was left out for want of budget.
    cut: Cell<bool>,
}

/// The surface, drawn from its `root` component, at most `MAX_DRAWN_NODES` components.
pub(super) fn root(surface_id: &str, s: &Surface, may_act: bool, origins: &ImageOrigins) -> Markup {
    let draw = Draw {
        surface_id,
        s,
        may_act,
        origins,
        budget: Cell::new(MAX_DRAWN_NODES),
        cut: Cell::new(false),
    };
    let drawn = draw.component(taskledger_domain::extensions::a2ui::ROOT_ID, "", 0);
    html! {
        (drawn)
        @if draw.cut.get() {
            p.a2ui-cut role="note" { "Only the first " (MAX_DRAWN_NODES) " components of this surface are shown." }
        }
    }
}

impl Draw<'_> {
    fn eval(&self, v: Option<&Value>, base: &str) -> Bound {
        model::eval(&self.s.data, v, base)
    }

    fn text(&self, v: Option<&Value>, base: &str) -> String {
        model::shown(&self.eval(v, base).value)
    }

    /// A container's children: a list of ids, or a template drawn once per item of a data array
    /// (or object) with relative paths under that item.
    fn children(&self, c: &Value, base: &str, depth: usize) -> Markup {
        let kids = c.get("children");
        if let Some(ids) = kids.and_then(Value::as_array) {
            return html! {
                @for k in ids.iter().filter_map(Value::as_str) { (self.component(k, base, depth + 1)) }
            };
        }
        let Some(t) = kids.filter(|k| k.is_object()) else {
            return html! {};
        };
        let template = t
            .get("componentId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let path = model::absolute(
            t.get("path").and_then(Value::as_str).unwrap_or_default(),
            base,
        );
        let keys: Vec<String> = match self.s.data.pointer(&path) {
            Some(Value::Array(a)) => (0..a.len()).map(|i| i.to_string()).collect(),
            Some(Value::Object(o)) => o.keys().cloned().collect(),
            _ => Vec::new(),
        };
        html! {
            @for k in keys.iter().take(MAX_LIST_ITEMS) {
                (self.component(template, &format!("{path}/{}", k.replace('~', "~0").replace('/', "~1")), depth + 1))
            }
        }
    }

    fn component(&self, id: &str, base: &str, depth: usize) -> Markup {
        let Some(c) = self.s.components.get(id) else {
            return html! {};
        };
        match self.budget.get() {
            0 => {
                self.cut.set(true);
                return html! {};
            }
            n => self.budget.set(n - 1),
        }
        if depth > MAX_DEPTH {
            return html! { pre { (c.to_string()) } };
        }
        let child = c.get("child").and_then(Value::as_str).unwrap_or_default();
        let kind = c
            .get("component")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match kind {
            "Column" | "List" => html! { div.a2ui-column { (self.children(c, base, depth)) } },
            "Row" => html! { div.a2ui-row { (self.children(c, base, depth)) } },
            "Card" => html! { div.a2ui-card { (self.component(child, base, depth + 1)) } },
            "Text" => {
                let b = self.eval(c.get("text"), base);
                html! { p.a2ui-text data-bound=[b.path] { (model::shown(&b.value)) } }
            }
            "Divider" => html! { hr; },
            "Icon" => html! { span.a2ui-icon { (self.text(c.get("name"), base)) } },
            "Image" => {
                let url = self.text(c.get("url"), base);
                let alt = self.text(c.get("altText").or(c.get("description")), base);
                match urls::image(&url, self.origins) {
                    Image::Shown(src) => html! { img.a2ui-image src=(src) alt=(alt); },
                    Image::Link(href) => html! {
                        a.a2ui-image-link href=(href) rel="noopener noreferrer" target="_blank" {
                            "🖼 " (if alt.is_empty() { href.clone() } else { alt })
                        }
                    },
                    Image::Text => {
                        html! { span.a2ui-image-text { "🖼 " (if alt.is_empty() { url } else { alt }) } }
                    }
                }
            }
            "Video" | "AudioPlayer" => {
                let url = self.text(c.get("url"), base);
                let label = self.text(c.get("description").or(c.get("url")), base);
                match urls::link(&url) {
                    Some(href) => {
                        html! { a href=(href) rel="noopener noreferrer" target="_blank" { (label) } }
                    }
                    None => html! { span.a2ui-media-text { (label) } },
                }
            }
            "Tabs" => html! {
                div.a2ui-tabs {
                    @for t in c.get("tabs").or(c.get("tabItems")).and_then(Value::as_array).into_iter().flatten() {
                        section {
                            h4 { (self.text(t.get("title"), base)) }
                            (self.component(t.get("child").and_then(Value::as_str).unwrap_or_default(), base, depth + 1))
                        }
                    }
                }
            },
            "Modal" => html! {
                div.a2ui-modal {
                    (self.component(c.get("trigger").and_then(Value::as_str).unwrap_or_default(), base, depth + 1))
                    (self.component(c.get("content").and_then(Value::as_str).unwrap_or_default(), base, depth + 1))
                }
            },
            "TextField" => self.text_field(id, c, base),
            "DateTimeInput" => {
                let b = self.eval(c.get("value"), base);
                let date = c.get("enableDate").and_then(Value::as_bool).unwrap_or(true);
                let time = c
                    .get("enableTime")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let kind = match (date, time) {
                    (true, true) => "datetime-local",
                    (false, true) => "time",
                    _ => "date",
                };
                html! {
                    label.a2ui-field {
                        (self.text(c.get("label"), base)) " "
                        input type=(kind) name=(id) value=(model::shown(&b.value)) data-path=[b.path];
                    }
                }
            }
            "CheckBox" => {
                let b = self.eval(c.get("value"), base);
                html! {
                    label.a2ui-field {
                        input type="checkbox" name=(id) checked[b.value == Value::Bool(true)] data-path=[b.path];
                        " " (self.text(c.get("label"), base))
                    }
                }
            }
            "Slider" => {
                let b = self.eval(c.get("value"), base);
                let num = |k: &str, d: f64| c.get(k).and_then(Value::as_f64).unwrap_or(d);
                html! {
                    label.a2ui-field {
                        (self.text(c.get("label"), base)) " "
                        input type="range" name=(id) min=(num("minValue", num("min", 0.0))) max=(num("maxValue", num("max", 100.0)))
                            value=(model::shown(&b.value)) data-path=[b.path] data-kind="number";
                    }
                }
            }
            "ChoicePicker" => self.choice_picker(id, c, base),
            "Button" => self.button(id, c, base, depth),
            _ => html! {
                details.data {
                    summary { "A2UI " (if kind.is_empty() { "component" } else { kind }) }
                    pre { (c.to_string()) }
                }
            },
        }
    }

    fn text_field(&self, id: &str, c: &Value, base: &str) -> Markup {
        let b = self.eval(c.get("value").or(c.get("text")), base);
        let label = self.text(c.get("label"), base);
        let variant = c
            .get("variant")
            .or(c.get("textFieldType"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let value = model::shown(&b.value);
        html! {
            label.a2ui-field {
                (label) " "
                @match variant {
                    "longText" => { textarea name=(id) data-path=[b.path] { (value) } }
                    "number" => { input type="number" name=(id) value=(value) data-path=[b.path] data-kind="number"; }
                    "obscured" => { input type="password" name=(id) value=(value) data-path=[b.path]; }
                    _ => { input name=(id) value=(value) data-path=[b.path]; }
                }
            }
        }
    }

    fn choice_picker(&self, id: &str, c: &Value, base: &str) -> Markup {
        let b = self.eval(c.get("value").or(c.get("selections")), base);
        let chosen: Vec<String> = match &b.value {
            Value::Array(a) => a.iter().map(model::shown).collect(),
            Value::Null => Vec::new(),
            v => vec![model::shown(v)],
        };
        let many = c.get("variant").and_then(Value::as_str) == Some("multipleSelection")
            || c.get("maxAllowedSelections")
                .and_then(Value::as_u64)
                .is_some_and(|n| n > 1);
        html! {
            label.a2ui-field {
                (self.text(c.get("label").or(c.get("description")), base)) " "
                select name=(id) multiple[many] data-path=[b.path] data-kind="list" {
                    @for o in c.get("options").and_then(Value::as_array).into_iter().flatten() {
                        @let label = self.text(o.get("label").or(Some(o)), base);
                        @let value = o.get("value").map(|v| self.text(Some(v), base)).unwrap_or_else(|| label.clone());
                        option value=(value) selected[chosen.contains(&value)] { (label) }
                    }
                }
            }
        }
    }

    /// A Button: a form the script sends as an A2UI `action` with its context resolved; only when
    /// the caller may act on the task (else shown disabled).
    fn button(&self, id: &str, c: &Value, base: &str, depth: usize) -> Markup {
        let event = c.pointer("/action/event").or_else(|| c.get("action"));
        let name = event
            .and_then(|e| e.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let context: Map<String, Value> = event
            .and_then(|e| e.get("context"))
            .and_then(Value::as_object)
            .map(|ctx| {
                ctx.iter()
                    .map(|(k, v)| {
                        let b = self.eval(Some(v), base);
                        let mut entry = Map::new();
                        if let Some(p) = b.path {
                            entry.insert("path".into(), Value::String(p));
                        }
                        entry.insert("value".into(), b.value);
                        (k.clone(), Value::Object(entry))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let label = self.component(
            c.get("child").and_then(Value::as_str).unwrap_or_default(),
            base,
            depth + 1,
        );
        html! {
            @if self.may_act {
                form.a2ui-action data-rpc="a2ui-action" data-surface=(self.surface_id) data-component=(id)
                    data-name=(name) data-context=(Value::Object(context).to_string()) {
                    button type="submit" data-action="a2ui" { (label) }
                }
            } @else {
                button type="button" disabled title="You may not act on this task" { (label) }
            }
        }
    }
}
