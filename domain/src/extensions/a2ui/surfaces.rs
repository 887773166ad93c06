//! What a task knows of the surfaces its A2UI messages created, and the user actions on them:
//! an action is read from a user message and accepted only on a surface the task created.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::extension::MEDIA_TYPE;
use crate::wire::PartContent;

/// What a task knows of one surface it created: its components, and which of them carry an
/// action (a user can act on them).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Surface {
    pub components: BTreeSet<String>,
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub actionable: BTreeSet<String>,
    /// Each component's references and size, for the checks of the next emit
    /// (`structure::check`). Empty for surfaces recorded before it was kept.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub shape: BTreeMap<String, Shape>,
}

/// What the structure checks need of one component: the ids it draws inside itself, and its
/// size as JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shape {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refs: Vec<String>,
    pub bytes: u32,
}

impl Shape {
    pub fn of(component: &Value) -> Self {
        Self {
            refs: references(component),
            bytes: u32::try_from(crate::wire::json_size(component)).unwrap_or(u32::MAX),
        }
    }
}

/// The surfaces a task's emitted A2UI messages created and have not deleted, by id.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Surfaces(BTreeMap<String, Surface>);

impl Surfaces {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The surfaces by id.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Surface)> {
        self.0.iter()
    }

    /// Follows one emitted server message.
    pub fn apply(&mut self, message: &Value) {
        let id = |kind: &str| {
            message
                .get(kind)
                .and_then(|k| k.get("surfaceId"))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        if let Some(s) = id("createSurface") {
            self.0.insert(s, Surface::default());
        } else if let Some(s) = id("updateComponents") {
            let surface = self.0.entry(s).or_default();
            let components = message["updateComponents"]["components"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for c in components {
                if let Some(cid) = c.get("id").and_then(Value::as_str) {
                    surface.components.insert(cid.to_string());
                    surface.shape.insert(cid.to_string(), Shape::of(&c));
                    if c.get("action").is_some() {
                        surface.actionable.insert(cid.to_string());
                    } else {
                        surface.actionable.remove(cid);
                    }
                }
            }
        } else if let Some(s) = id("deleteSurface") {
            self.0.remove(&s);
        }
    }

    /// Some surface still offers an action: the agent waits for the user.
    pub fn awaits_action(&self) -> bool {
        self.0.values().any(|s| !s.actionable.is_empty())
    }

    /// An action is accepted only on a surface and component this task created.
    pub fn check(&self, action: &UiAction) -> Result<(), String> {
        let surface = self.0.get(&action.surface_id).ok_or_else(|| {
            format!(
                "A2UI action discarded: this task has no surface {:?}",
                action.surface_id
            )
        })?;
        if !surface.components.contains(&action.component_id) {
            return Err(format!(
                "A2UI action discarded: surface {:?} has no component {:?}",
                action.surface_id, action.component_id
            ));
        }
        Ok(())
    }
}

/// Longest action name accepted, in bytes.
pub const MAX_ACTION_NAME_BYTES: usize = 256;
/// Largest action context accepted (the resolved values of the surface's inputs), as JSON bytes.
pub const MAX_ACTION_CONTEXT_BYTES: usize = 16 * 1024;

/// A user's action on a surface (A2UI client-to-server `action`; 0.8's `userAction` too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UiAction {
    pub name: String,
    pub surface_id: String,
    pub component_id: String,
    /// What the action's `context` resolved to on the user's side (the values of the inputs it
    /// names); empty when it names none.
    pub context: serde_json::Map<String, Value>,
}

impl UiAction {
    /// The text the agent sees in place of the raw event.
    pub fn text(&self) -> String {
        let said = format!(
            "[A2UI action] {} on surface {} from {}",
            self.name, self.surface_id, self.component_id
        );
        if self.context.is_empty() {
            said
        } else {
            format!("{said} with {}", Value::Object(self.context.clone()))
        }
    }
}

/// The action a user message carries in an `application/a2ui+json` part: `None` when it has no
/// such part, an error when the part is not an action this server understands.
pub fn action_of(message: &crate::wire::Message) -> Option<Result<UiAction, String>> {
    let data = message.parts.iter().find_map(|p| match &p.content {
        PartContent::Data(v) if p.media_type.as_deref() == Some(MEDIA_TYPE) => Some(v),
        _ => None,
    })?;
    let action = data.get("action").or_else(|| data.get("userAction"));
    let field = |k: &str| {
        action
            .and_then(|a| a.get(k))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let context = match action.and_then(|a| a.get("context")) {
        None => Ok(serde_json::Map::new()),
        Some(Value::Object(c))
            if Value::Object(c.clone()).to_string().len() <= MAX_ACTION_CONTEXT_BYTES =>
        {
            Ok(c.clone())
        }
        Some(Value::Object(_)) => Err(format!(
            "A2UI action discarded: its context is over {MAX_ACTION_CONTEXT_BYTES} bytes as JSON"
        )),
        Some(_) => Err("A2UI action discarded: its context must be an object".to_string()),
    };
    Some(match (field("name"), field("surfaceId"), field("sourceComponentId")) {
        (Some(name), Some(surface_id), Some(component_id)) => {
            if name.len() > MAX_ACTION_NAME_BYTES || name.chars().any(char::is_control) {
                Err(format!(
                    "A2UI action discarded: the name must be 1 to {MAX_ACTION_NAME_BYTES} bytes without control characters"
                ))
            } else {
                context.map(|context| UiAction {
                    name,
                    surface_id,
                    component_id,
                    context,
                })
            }
        }
        _ => Err(
            "A2UI action discarded: an application/a2ui+json part must hold an action with name, surfaceId and sourceComponentId"
                .to_string(),
        ),
    })
}

/// The components `c` draws inside itself, by id, in the basic catalog's fields: `children`
/// (a list, or a template's `componentId`), `child`, a Modal's `trigger` and `content`, and the
/// `child` of each of a Tabs' `tabs` (0.8: `tabItems`).
pub fn references(c: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut push = |v: Option<&Value>| {
        if let Some(id) = v.and_then(Value::as_str).filter(|s| !s.is_empty()) {
            out.push(id.to_string());
        }
    };
    match c.get("children") {
        Some(Value::Array(ids)) => ids.iter().for_each(|v| push(Some(v))),
        Some(t @ Value::Object(_)) => push(t.get("componentId")),
        _ => {}
    }
    push(c.get("child"));
    push(c.get("trigger"));
    push(c.get("content"));
    for tab in c
        .get("tabs")
        .or_else(|| c.get("tabItems"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        push(tab.get("child"));
    }
    out
}
