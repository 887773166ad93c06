//! A2UI 0.9.1 server-to-client messages: checked against the committed schema one kind at a time
//! (an error names the message and the field), and turned into the parts of an `a2ui` artifact.

use std::sync::OnceLock;

use serde_json::{json, Value};

use super::extension::MEDIA_TYPE;
use crate::extensions::harness::field_path;
use crate::wire::{Part, PartContent};

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

const SCHEMA: &str = include_str!("../../../schemas/a2ui/server-to-client-v0.9.1.json");

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
        let bytes = crate::wire::json_size(&messages);
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
