//! A2UI 0.9.1 server-to-client messages (`emit_ui`): checked against our committed schema
//! (`domain/schemas/a2ui/server-to-client-v0.9.1.json`), one message kind at a time so an error
//! names the message and the field, and turned into the parts of an `a2ui` artifact.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde_json::{json, Map, Value};

use crate::ext::field_path;
use crate::wire::{Metadata, Part, PartContent};

/// The A2UI extension the agent card declares.
pub const EXTENSION_URI: &str = "https://a2ui.org/a2a-extension/a2ui/v0.9.1";
/// Media type of a part holding one A2UI message.
pub const MEDIA_TYPE: &str = "application/a2ui+json";
/// The catalog surfaces are created with (A2UI's basic catalog; 0.9.1 keeps the 0.9 id).
pub const BASIC_CATALOG_ID: &str =
    "https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json";
/// Name of the artifacts `emit_ui` produces; their ids are `a2ui:<event sequence>`.
pub const ARTIFACT_NAME: &str = "a2ui";
/// Most messages one `emit_ui` call may send.
pub const MAX_UI_MESSAGES: usize = 50;
/// Largest total size of one call's messages, serialised (they are stored as one artifact).
pub const MAX_UI_BYTES: usize = 64 * 1024;
/// The four message keys, in the order the specification lists them.
pub const MESSAGE_KINDS: [&str; 4] = [
    "createSurface",
    "updateComponents",
    "updateDataModel",
    "deleteSurface",
];

const SCHEMA: &str = include_str!("../schemas/a2ui/server-to-client-v0.9.1.json");

/// Why a message was refused: the field (`messages[2].createSurface.catalogId`) and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct UiError {
    pub field: String,
    pub reason: String,
}

fn refuse(field: impl Into<String>, reason: impl Into<String>) -> UiError {
    UiError {
        field: field.into(),
        reason: reason.into(),
    }
}

/// The whole schema (every kind under `oneOf`), and one validator per kind.
struct Validators {
    any: jsonschema::Validator,
    kinds: Vec<(&'static str, jsonschema::Validator)>,
}

fn validators() -> Option<&'static Validators> {
    static V: OnceLock<Option<Validators>> = OnceLock::new();
    V.get_or_init(|| {
        let schema: Value = serde_json::from_str(SCHEMA).ok()?;
        let any = jsonschema::validator_for(&schema).ok()?;
        let mut kinds = Vec::new();
        for kind in MESSAGE_KINDS {
            let one = json!({
                "$schema": schema["$schema"],
                "$ref": format!("#/$defs/{kind}"),
                "$defs": schema["$defs"],
            });
            kinds.push((kind, jsonschema::validator_for(&one).ok()?));
        }
        Some(Validators { any, kinds })
    })
    .as_ref()
}

/// Checks one message against the whole schema (used to keep the per-kind checks honest).
pub fn matches_schema(message: &Value) -> bool {
    validators().is_some_and(|v| v.any.is_valid(message))
}

/// The field an error is about: the instance path, plus the missing or unexpected member.
fn error_field(e: &jsonschema::ValidationError<'_>) -> (String, String) {
    let mut path = field_path(&e.instance_path().to_string());
    let member = match e.kind() {
        jsonschema::error::ValidationErrorKind::Required { property } => {
            property.as_str().map(str::to_string)
        }
        jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
            unexpected.first().cloned()
        }
        _ => None,
    };
    if let Some(m) = member {
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(&m);
    }
    (path, e.to_string())
}

fn check_message(i: usize, message: &Value) -> Result<(), UiError> {
    let at = format!("messages[{i}]");
    let Some(object) = message.as_object() else {
        return Err(refuse(at, "an A2UI message is a JSON object"));
    };
    let present: Vec<&str> = MESSAGE_KINDS
        .iter()
        .copied()
        .filter(|k| object.contains_key(*k))
        .collect();
    let [kind] = present.as_slice() else {
        return Err(refuse(
            at,
            format!(
                "an A2UI message holds exactly one of {} (found {})",
                MESSAGE_KINDS.join(", "),
                if present.is_empty() {
                    "none".to_string()
                } else {
                    present.join(" and ")
                }
            ),
        ));
    };
    let validator = validators()
        .and_then(|v| v.kinds.iter().find(|(k, _)| k == kind))
        .map(|(_, v)| v)
        .ok_or_else(|| refuse(at.clone(), "the A2UI schema could not be loaded"))?;
    if let Some(e) = validator.iter_errors(message).next() {
        let (field, reason) = error_field(&e);
        let field = if field.is_empty() {
            at
        } else {
            format!("{at}.{field}")
        };
        return Err(refuse(field, reason));
    }
    Ok(())
}

/// A2UI server messages that passed the checks; only `parse` makes one.
#[derive(Debug, Clone, PartialEq)]
pub struct UiMessages(Vec<Value>);

impl UiMessages {
    /// Checks count, size and every message; the first failure is reported, nothing is kept.
    pub fn parse(messages: Vec<Value>) -> Result<Self, UiError> {
        if messages.is_empty() {
            return Err(refuse("messages", "send at least one A2UI message"));
        }
        if messages.len() > MAX_UI_MESSAGES {
            return Err(refuse(
                "messages",
                format!(
                    "at most {MAX_UI_MESSAGES} A2UI messages per call (got {})",
                    messages.len()
                ),
            ));
        }
        let bytes = serde_json::to_vec(&messages).map_or(usize::MAX, |b| b.len());
        if bytes > MAX_UI_BYTES {
            return Err(refuse(
                "messages",
                format!("at most {MAX_UI_BYTES} bytes of A2UI messages per call (got {bytes})"),
            ));
        }
        for (i, m) in messages.iter().enumerate() {
            check_message(i, m)?;
        }
        Ok(Self(messages))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn messages(&self) -> &[Value] {
        &self.0
    }

    /// One data part per message, of media type `application/a2ui+json`.
    pub fn parts(&self) -> Vec<Part> {
        self.0
            .iter()
            .map(|m| Part {
                content: PartContent::Data(m.clone()),
                metadata: None,
                filename: None,
                media_type: Some(MEDIA_TYPE.into()),
            })
            .collect()
    }
}

/// The extension's card parameters: the catalogs surfaces are made from, no inline catalogs.
pub fn card_params() -> Metadata {
    let mut params = Map::new();
    params.insert("supportedCatalogIds".into(), json!([BASIC_CATALOG_ID]));
    params.insert("acceptsInlineCatalogs".into(), json!(false));
    params
}

// ------------------------------------------------------------------ surfaces and actions

/// What a task knows of one surface it created: its components, and which of them carry an
/// action (a user can act on them).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Surface {
    pub components: BTreeSet<String>,
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub actionable: BTreeSet<String>,
}

/// The surfaces a task's emitted A2UI messages created and have not deleted, by id.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Surfaces(BTreeMap<String, Surface>);

impl Surfaces {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
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

/// A user's action on a surface (A2UI client-to-server `action`; 0.8's `userAction` too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UiAction {
    pub name: String,
    pub surface_id: String,
    pub component_id: String,
}

impl UiAction {
    /// The text the agent sees in place of the raw event.
    pub fn text(&self) -> String {
        format!(
            "[A2UI action] {} on surface {} from {}",
            self.name, self.surface_id, self.component_id
        )
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
    Some(match (field("name"), field("surfaceId"), field("sourceComponentId")) {
        (Some(name), Some(surface_id), Some(component_id)) => {
            if name.len() > MAX_ACTION_NAME_BYTES || name.chars().any(char::is_control) {
                Err(format!(
                    "A2UI action discarded: the name must be 1 to {MAX_ACTION_NAME_BYTES} bytes without control characters"
                ))
            } else {
                Ok(UiAction {
                    name,
                    surface_id,
                    component_id,
                })
            }
        }
        _ => Err(
            "A2UI action discarded: an application/a2ui+json part must hold an action with name, surfaceId and sourceComponentId"
                .to_string(),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn err(messages: Vec<Value>) -> UiError {
        UiMessages::parse(messages).unwrap_err()
    }

    #[test]
    fn each_of_the_four_kinds_is_accepted() {
        let all = vec![
            create("s"),
            json!({"version": "v0.9", "createSurface": {"surfaceId": "t", "catalogId": BASIC_CATALOG_ID, "theme": {"primaryColor": "#00f"}, "sendDataModel": true}}),
            components(),
            json!({"version": "v0.9", "updateDataModel": {"surfaceId": "s", "path": "/user", "value": {"name": "Ann"}}}),
            json!({"version": "v0.9", "updateDataModel": {"surfaceId": "s"}}),
            json!({"version": "v0.9", "deleteSurface": {"surfaceId": "s"}}),
        ];
        for m in &all {
            assert!(matches_schema(m), "the whole schema agrees: {m}");
        }
        let ok = UiMessages::parse(all).unwrap();
        assert_eq!(ok.len(), 6);
        let parts = ok.parts();
        assert_eq!(parts.len(), 6, "one data part per message");
        assert!(parts
            .iter()
            .all(|p| p.media_type.as_deref() == Some(MEDIA_TYPE)));
        assert!(
            matches!(&parts[2].content, PartContent::Data(d) if d["updateComponents"]["components"][0]["id"] == "root")
        );
    }

    #[test]
    fn a_message_needs_exactly_one_kind() {
        let e = err(vec![create("s"), json!({"version": "v0.9"})]);
        assert_eq!(e.field, "messages[1]");
        assert!(e.reason.contains("found none"), "{e}");
        let e = err(vec![
            json!({"version": "v0.9", "createSurface": {"surfaceId": "s", "catalogId": "c"}, "deleteSurface": {"surfaceId": "s"}}),
        ]);
        assert_eq!(e.field, "messages[0]");
        assert!(e.reason.contains("createSurface and deleteSurface"), "{e}");
        let e = err(vec![
            json!({"version": "v0.9", "beginRendering": {"surfaceId": "s", "root": "r"}}),
        ]);
        assert_eq!(e.field, "messages[0]", "a v0.8 message is none of the four");
        let e = err(vec![json!(["not", "an", "object"])]);
        assert_eq!(e.field, "messages[0]");
    }

    #[test]
    fn errors_name_the_message_and_the_field() {
        let cases = [
            (
                json!({"version": "v0.9", "createSurface": {"surfaceId": "s"}}),
                "messages[0].createSurface.catalogId",
            ),
            (
                json!({"createSurface": {"surfaceId": "s", "catalogId": "c"}}),
                "messages[0].version",
            ),
            (
                json!({"version": "v0.8", "deleteSurface": {"surfaceId": "s"}}),
                "messages[0].version",
            ),
            (
                json!({"version": "v0.9", "updateComponents": {"surfaceId": "s", "components": [{"id": "root", "component": "Text"}, {"component": "Text"}]}}),
                "messages[0].updateComponents.components[1].id",
            ),
            (
                json!({"version": "v0.9", "updateComponents": {"surfaceId": "s", "components": [{"id": "root"}]}}),
                "messages[0].updateComponents.components[0].component",
            ),
            (
                json!({"version": "v0.9", "updateComponents": {"surfaceId": "s", "components": []}}),
                "messages[0].updateComponents.components",
            ),
            (
                json!({"version": "v0.9", "updateDataModel": {"path": "/x", "value": 1}}),
                "messages[0].updateDataModel.surfaceId",
            ),
            (
                json!({"version": "v0.9", "updateDataModel": {"surfaceId": "s", "path": 7}}),
                "messages[0].updateDataModel.path",
            ),
            (
                json!({"version": "v0.9", "deleteSurface": {"surfaceId": ""}}),
                "messages[0].deleteSurface.surfaceId",
            ),
            (
                json!({"version": "v0.9", "deleteSurface": {"surfaceId": "s", "force": true}}),
                "messages[0].deleteSurface.force",
            ),
            (
                json!({"version": "v0.9", "deleteSurface": {"surfaceId": "s"}, "extra": 1}),
                "messages[0].extra",
            ),
        ];
        for (message, field) in cases {
            assert!(
                !matches_schema(&message),
                "the whole schema agrees: {message}"
            );
            assert_eq!(err(vec![message.clone()]).field, field, "{message}");
        }
        // the first bad message is the one reported
        let e = err(vec![
            create("a"),
            create("b"),
            json!({"version": "v0.9", "createSurface": {"catalogId": "c"}}),
            json!({"version": "v0.9"}),
        ]);
        assert_eq!(e.field, "messages[2].createSurface.surfaceId");
    }

    #[test]
    fn at_most_max_ui_messages_per_call() {
        let at_limit: Vec<Value> = (0..MAX_UI_MESSAGES)
            .map(|i| create(&format!("s{i}")))
            .collect();
        assert_eq!(
            UiMessages::parse(at_limit.clone()).unwrap().len(),
            MAX_UI_MESSAGES
        );
        let mut past = at_limit;
        past.push(create("one-more"));
        let e = err(past);
        assert_eq!(e.field, "messages");
        assert!(e.reason.contains(&MAX_UI_MESSAGES.to_string()), "{e}");
        assert_eq!(err(vec![]).field, "messages");
    }

    #[test]
    fn at_most_max_ui_bytes_per_call() {
        let with_text = |n: usize| json!({"version": "v0.9", "updateDataModel": {"surfaceId": "s", "path": "/t", "value": "x".repeat(n)}});
        let overhead = serde_json::to_vec(&vec![with_text(0)]).unwrap().len();
        let exact = vec![with_text(MAX_UI_BYTES - overhead)];
        assert_eq!(serde_json::to_vec(&exact).unwrap().len(), MAX_UI_BYTES);
        assert!(UiMessages::parse(exact).is_ok());
        let e = err(vec![with_text(MAX_UI_BYTES - overhead + 1)]);
        assert_eq!(e.field, "messages");
        assert!(e.reason.contains("bytes"), "{e}");
    }

    #[test]
    fn the_task_gets_one_closed_a2ui_artifact_named_after_its_event() {
        use crate::ids::{ContextId, Principal, TaskId};
        use crate::task::{CreateTask, TaskAggregate, TaskCommand, TaskEvent};
        use crate::time::Timestamp;
        use crate::wire::{Message, TaskState};

        let mut task = TaskAggregate::default();
        let created = task
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
        created.iter().for_each(|e| task.apply_event(e));
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
    fn the_card_names_the_basic_catalog_and_no_inline_ones() {
        let p = card_params();
        assert_eq!(p["supportedCatalogIds"][0], BASIC_CATALOG_ID);
        assert_eq!(p["acceptsInlineCatalogs"], false);
    }

    fn action_message(data: Value) -> crate::wire::Message {
        let mut m = crate::wire::Message::user_text("a-1", "");
        m.parts = vec![Part {
            content: PartContent::Data(data),
            metadata: None,
            filename: None,
            media_type: Some(MEDIA_TYPE.into()),
        }];
        m
    }

    #[test]
    fn surfaces_follow_the_emitted_messages() {
        let mut s = Surfaces::default();
        s.apply(&create("s1"));
        assert!(!s.awaits_action(), "an empty surface asks nothing");
        s.apply(&json!({"version": "v0.9", "updateComponents": {"surfaceId": "s1", "components": [
            {"id": "t", "component": "Text", "text": "hi"},
            {"id": "b", "component": "Button", "child": "t", "action": {"event": {"name": "go"}}}]}}));
        assert!(s.awaits_action());
        let on = |surface: &str, component: &str| UiAction {
            name: "go".into(),
            surface_id: surface.into(),
            component_id: component.into(),
        };
        assert!(s.check(&on("s1", "b")).is_ok());
        assert!(s
            .check(&on("s1", "zz"))
            .unwrap_err()
            .contains("no component"));
        assert!(s.check(&on("s2", "b")).unwrap_err().contains("no surface"));
        // The button replaced by plain text: nothing left to act on.
        s.apply(
            &json!({"version": "v0.9", "updateComponents": {"surfaceId": "s1", "components": [
            {"id": "b", "component": "Text", "text": "done"}]}}),
        );
        assert!(!s.awaits_action());
        s.apply(&json!({"version": "v0.9", "deleteSurface": {"surfaceId": "s1"}}));
        assert!(s.is_empty());
        assert!(s.check(&on("s1", "b")).is_err());
    }

    #[test]
    fn actions_are_read_from_a2ui_parts_in_both_shapes() {
        let a = action_of(&action_message(json!({"version": "v0.9", "action": {
            "name": "submit", "surfaceId": "s1", "sourceComponentId": "b", "context": {}}})))
        .unwrap()
        .unwrap();
        assert_eq!(a.text(), "[A2UI action] submit on surface s1 from b");
        let old = action_of(&action_message(json!({"userAction": {
            "name": "submit", "surfaceId": "s1", "sourceComponentId": "b"}})))
        .unwrap();
        assert_eq!(old.unwrap(), a);
        assert!(action_of(&action_message(json!({"action": {"name": "x"}})))
            .unwrap()
            .is_err());
        assert!(action_of(&crate::wire::Message::user_text("m", "plain")).is_none());
    }

    #[test]
    fn the_action_name_limit_is_inclusive() {
        let named = |n: String| {
            action_of(&action_message(json!({"action": {
                "name": n, "surfaceId": "s", "sourceComponentId": "c"}})))
            .unwrap()
        };
        assert!(named("n".repeat(MAX_ACTION_NAME_BYTES)).is_ok());
        assert!(named("n".repeat(MAX_ACTION_NAME_BYTES + 1)).is_err());
        assert!(named("a\nb".into()).is_err());
    }
}
