//! Intake of client messages: validation with field paths, stripping of server-owned metadata,
//! and the content fingerprint that tells a retry from a new message.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::DomainError;
use crate::ids::MessageId;
use crate::time::Timestamp;
use crate::wire::{Message, Metadata, Part, PartContent, Role};

/// Most parts one message may carry.
pub const MAX_PARTS_PER_MESSAGE: usize = 100;
/// Largest `message.metadata` (all of it, as compact JSON), in bytes.
pub const MAX_MESSAGE_METADATA_BYTES: usize = 64 * 1024;
/// Most elicitation ids one message may name (draft A2A 1.1 `Message.elicitationIds`).
pub const MAX_ELICITATION_IDS_PER_MESSAGE: usize = 32;
/// Longest elicitation id a message may name, in bytes.
pub const MAX_ELICITATION_ID_BYTES: usize = 256;

/// The media types a client's message parts may have: the card's `defaultInputModes` (no skill
/// narrows or widens them), and what this intake checks every incoming part against. A2UI
/// actions and tiny-harness channel replies are read as input (ADR 010); anything else is
/// refused as ContentTypeNotSupported before it is taken in.
pub const INPUT_MODES: [&str; 6] = [
    "text/plain",
    "application/json",
    "application/octet-stream",
    crate::extensions::harness::MEDIA_TYPE,
    crate::extensions::harness::CHANNEL_MEDIA_TYPE,
    crate::extensions::a2ui::MEDIA_TYPE,
];

/// kagent metadata key: ordering stamp of a message or artifact (RFC 3339, UTC, nanoseconds).
pub const TIMELINE_POSITION_KEY: &str = "kagent.dev/a2a/timeline-position";
/// kagent metadata key: when the task was created (RFC 3339, UTC, nanoseconds).
pub const TASK_CREATED_AT_KEY: &str = "kagent.dev/a2a/task-created-at";

/// Checks a message a client sent; `path` is where it sits in the request (`message`).
pub fn validate_user_message(m: &Message, path: &str) -> Result<MessageId, DomainError> {
    let id = MessageId::parse(m.message_id.clone())
        .map_err(|e| DomainError::invalid(format!("{path}.messageId"), e))?;
    match m.role {
        Role::User => {}
        Role::Unspecified => {
            return Err(DomainError::invalid(
                format!("{path}.role"),
                "is required and must be ROLE_USER",
            ))
        }
        Role::Agent => {
            return Err(DomainError::invalid(
                format!("{path}.role"),
                "a client message must have role ROLE_USER",
            ))
        }
    }
    validate_metadata(m, path)?;
    validate_parts(m, path)?;
    validate_elicitation_ids(m, path)?;
    check_input_modes(m, path, &INPUT_MODES)?;
    Ok(id)
}

/// The elicitations a message says it answers (draft A2A 1.1): a hint, kept with the message.
/// Only its size is checked — an id the task never made, or one already resolved, is taken
/// as it is (the draft: a recipient MUST NOT reject a message for naming one).
fn validate_elicitation_ids(m: &Message, path: &str) -> Result<(), DomainError> {
    let ids = &m.elicitation_ids;
    if ids.len() > MAX_ELICITATION_IDS_PER_MESSAGE {
        return Err(DomainError::invalid(
            format!("{path}.elicitationIds"),
            format!(
                "a message may name at most {MAX_ELICITATION_IDS_PER_MESSAGE} elicitations (got {})",
                ids.len()
            ),
        ));
    }
    for (i, id) in ids.iter().enumerate() {
        if id.is_empty() || id.len() > MAX_ELICITATION_ID_BYTES {
            return Err(DomainError::invalid(
                format!("{path}.elicitationIds[{i}]"),
                format!("must be 1 to {MAX_ELICITATION_ID_BYTES} bytes"),
            ));
        }
    }
    Ok(())
}

/// The media type a part is taken as: the one it declares (its essence: parameters dropped,
/// lower case), else its kind's own (`text/plain` for text, `application/json` for data,
/// `application/octet-stream` for bytes). A URL without one declares nothing to check.
pub fn part_media_type(p: &Part) -> Option<String> {
    let declared = p
        .media_type
        .as_deref()
        .map(|t| {
            t.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|t| !t.is_empty());
    declared.or_else(|| {
        match &p.content {
            PartContent::Text(_) => Some("text/plain"),
            PartContent::Data(_) => Some("application/json"),
            PartContent::Raw(_) => Some("application/octet-stream"),
            PartContent::Url(_) => None,
        }
        .map(str::to_string)
    })
}

/// The input modes the deployment's card states and its intake holds every client part to:
/// the built-in `INPUT_MODES`, or — behind an upstream agent that states its own (ADR 034) —
/// those of ours the upstream accepts too, and the task envelope (taskledger's, whoever works
/// on the task). One list for the card and the check, so neither says more than the other.
pub fn input_modes(upstream: &[String]) -> Vec<String> {
    if upstream.is_empty() {
        return INPUT_MODES.iter().map(|m| m.to_string()).collect();
    }
    let theirs: Vec<&str> = upstream.iter().map(String::as_str).collect();
    let mut out: Vec<String> = INPUT_MODES
        .iter()
        .filter(|m| accepts(&theirs, &m.to_ascii_lowercase()))
        .map(|m| m.to_string())
        .collect();
    let envelope = crate::extensions::harness::MEDIA_TYPE.to_string();
    if !out.contains(&envelope) {
        out.push(envelope);
    }
    out
}

/// Whether `media_type` (an essence) is one of `accepted`: equal, or under a `type/*` or `*/*`
/// the list holds.
pub fn accepts(accepted: &[&str], media_type: &str) -> bool {
    let (kind, _) = media_type.split_once('/').unwrap_or((media_type, ""));
    accepted.iter().any(|a| {
        let a = a.to_ascii_lowercase();
        a == media_type || a == "*/*" || a.strip_suffix("/*").is_some_and(|k| k == kind)
    })
}

/// Every part of a client's message against the agent's input modes (the card's, for every
/// binding and protocol version): the first that is none of them is ContentTypeNotSupported,
/// named by its path, and nothing is taken in.
pub fn check_input_modes(m: &Message, path: &str, accepted: &[&str]) -> Result<(), DomainError> {
    for (i, p) in m.parts.iter().enumerate() {
        let Some(media_type) = part_media_type(p) else {
            continue;
        };
        if !accepts(accepted, &media_type) {
            return Err(DomainError::ContentTypeNotSupported {
                field: format!("{path}.parts[{i}]"),
                media_type,
                accepted: accepted.join(", "),
            });
        }
    }
    Ok(())
}

fn validate_metadata(m: &Message, path: &str) -> Result<(), DomainError> {
    let Some(meta) = &m.metadata else {
        return Ok(());
    };
    let size = crate::wire::json_size(meta);
    if size > MAX_MESSAGE_METADATA_BYTES {
        return Err(DomainError::invalid(
            format!("{path}.metadata"),
            format!("is {size} bytes as JSON; at most {MAX_MESSAGE_METADATA_BYTES} are accepted"),
        ));
    }
    Ok(())
}

/// Checks a message the agent produced.
pub fn validate_agent_message(m: &Message, path: &str) -> Result<(), DomainError> {
    MessageId::parse(m.message_id.clone())
        .map_err(|e| DomainError::invalid(format!("{path}.messageId"), e))?;
    if m.role != Role::Agent {
        return Err(DomainError::invalid(
            format!("{path}.role"),
            "an agent message must have role ROLE_AGENT",
        ));
    }
    validate_parts(m, path)
}

fn validate_parts(m: &Message, path: &str) -> Result<(), DomainError> {
    if m.parts.is_empty() {
        return Err(DomainError::invalid(
            format!("{path}.parts"),
            "a message needs at least one part",
        ));
    }
    if m.parts.len() > MAX_PARTS_PER_MESSAGE {
        return Err(DomainError::invalid(
            format!("{path}.parts"),
            format!(
                "a message may have at most {MAX_PARTS_PER_MESSAGE} parts (got {})",
                m.parts.len()
            ),
        ));
    }
    for (i, p) in m.parts.iter().enumerate() {
        if let PartContent::Url(u) = &p.content {
            if u.is_empty() {
                return Err(DomainError::invalid(
                    format!("{path}.parts[{i}].url"),
                    "must not be empty",
                ));
            }
        }
    }
    Ok(())
}

/// Removes the server-owned kagent keys a caller may have put into metadata.
pub fn strip_server_keys(meta: &mut Option<Metadata>) {
    if let Some(m) = meta {
        m.remove(TIMELINE_POSITION_KEY);
        m.remove(TASK_CREATED_AT_KEY);
        if m.is_empty() {
            *meta = None;
        }
    }
}

/// Sets the timeline stamp on a metadata object.
pub fn stamp_timeline(meta: &mut Option<Metadata>, at: Timestamp) {
    meta.get_or_insert_with(Metadata::new).insert(
        TIMELINE_POSITION_KEY.into(),
        Value::String(at.to_rfc3339_nanos()),
    );
}

/// A digest of what a message says (role, parts, metadata, extensions, references), not of
/// where it was sent: the same `messageId` with the same fingerprint on the same task is a retry.
pub fn fingerprint(m: &Message) -> String {
    let mut meta = m.metadata.clone();
    strip_server_keys(&mut meta);
    // serde_json's map is ordered by key, so this serialisation is canonical.
    let mut canonical = serde_json::json!({
        "role": m.role,
        "parts": m.parts,
        "metadata": meta,
        "extensions": m.extensions,
        "referenceTaskIds": m.reference_task_ids,
    });
    // Only when named, so the fingerprints of messages without them stay what they were.
    if !m.elicitation_ids.is_empty() {
        canonical["elicitationIds"] = serde_json::json!(m.elicitation_ids);
    }
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// A digest of arbitrary JSON (used for idempotent task creation).
pub fn json_fingerprint(v: &Value) -> String {
    let digest = Sha256::digest(v.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn message_metadata_is_bounded_at_64_kib_as_json() {
        let with = |n: usize| {
            let mut m = Message::user_text("m-1", "hi");
            // {"k":"<n-10 x>"} is n bytes
            let mut meta = Metadata::new();
            meta.insert("k".into(), Value::String("x".repeat(n - 8)));
            m.metadata = Some(meta);
            m
        };
        let at = with(MAX_MESSAGE_METADATA_BYTES);
        assert_eq!(
            serde_json::to_vec(at.metadata.as_ref().unwrap())
                .unwrap()
                .len(),
            MAX_MESSAGE_METADATA_BYTES
        );
        assert!(validate_user_message(&at, "message").is_ok());
        let err = validate_user_message(&with(MAX_MESSAGE_METADATA_BYTES + 1), "message")
            .expect_err("one byte past");
        assert_eq!(err.metadata()["field"], "message.metadata");
    }

    use super::*;
    use crate::wire::Part;
    use serde_json::json;

    #[test]
    fn a_message_names_at_most_32_elicitations_of_at_most_256_bytes() {
        let naming = |ids: Vec<String>| {
            let mut m = Message::user_text("m-1", "hi");
            m.elicitation_ids = ids;
            validate_user_message(&m, "message")
        };
        let many = |n: usize| (0..n).map(|i| format!("gate-{i}")).collect::<Vec<_>>();
        assert!(naming(many(MAX_ELICITATION_IDS_PER_MESSAGE)).is_ok());
        let err = naming(many(MAX_ELICITATION_IDS_PER_MESSAGE + 1)).expect_err("one past");
        assert_eq!(err.metadata()["field"], "message.elicitationIds");
        assert!(naming(vec!["x".repeat(MAX_ELICITATION_ID_BYTES)]).is_ok());
        let err = naming(vec!["ok".into(), "x".repeat(MAX_ELICITATION_ID_BYTES + 1)])
            .expect_err("one byte past");
        assert_eq!(err.metadata()["field"], "message.elicitationIds[1]");
        let err = naming(vec![String::new()]).expect_err("empty");
        assert_eq!(err.metadata()["field"], "message.elicitationIds[0]");
        // Ids the task never made are a hint like any other: nothing to refuse.
        assert!(naming(vec!["no-such-elicitation".into()]).is_ok());
    }

    #[test]
    fn naming_elicitations_changes_the_fingerprint_only_when_named() {
        let plain = Message::user_text("m-1", "hi");
        let mut naming = plain.clone();
        naming.elicitation_ids = vec!["gate-3".into()];
        assert_ne!(fingerprint(&plain), fingerprint(&naming));
        let canonical = json!({"role": plain.role, "parts": plain.parts, "metadata": null,
            "extensions": [], "referenceTaskIds": []});
        let digest = Sha256::digest(canonical.to_string().as_bytes());
        let before: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            fingerprint(&plain),
            before,
            "as before elicitations existed"
        );
    }

    fn user(text: &str) -> Message {
        Message::user_text("m-1", text)
    }

    #[test]
    fn a_message_without_parts_is_refused_with_its_path() {
        let mut m = user("x");
        m.parts.clear();
        let e = validate_user_message(&m, "message").unwrap_err();
        assert_eq!(
            e,
            DomainError::invalid("message.parts", "a message needs at least one part")
        );
    }

    #[test]
    fn behind_an_upstream_the_modes_are_ours_it_takes_too_and_the_envelope() {
        let envelope = crate::extensions::harness::MEDIA_TYPE;
        // None stated: the built-in modes.
        assert_eq!(input_modes(&[]), INPUT_MODES.map(str::to_string).to_vec());
        // Text only: text and the envelope.
        assert_eq!(
            input_modes(&["text/plain".into()]),
            vec!["text/plain".to_string(), envelope.to_string()]
        );
        // A wildcard takes every one of ours; a type we do not take is not stated.
        assert_eq!(input_modes(&["*/*".into()]).len(), INPUT_MODES.len());
        assert_eq!(
            input_modes(&["image/png".into(), "Application/*".into()]),
            INPUT_MODES
                .iter()
                .filter(|m| m.starts_with("application/"))
                .map(|m| m.to_string())
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_part_outside_the_input_modes_is_refused_with_its_path_and_type() {
        let mut m = user("x");
        m.parts.push(Part {
            content: PartContent::Raw(b"tck".to_vec()),
            metadata: None,
            filename: None,
            media_type: Some("application/x-unsupported-type-12345".into()),
        });
        let e = validate_user_message(&m, "message").unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::ContentTypeNotSupported);
        assert_eq!(e.metadata()["field"], "message.parts[1]");
        assert_eq!(
            e.metadata()["mediaType"],
            "application/x-unsupported-type-12345"
        );
        assert!(e.to_string().contains("Incompatible content type"), "{e}");
    }

    #[test]
    fn every_kind_of_part_is_checked_by_the_type_it_declares_or_its_own() {
        let part = |content, media_type: Option<&str>| Part {
            content,
            metadata: None,
            filename: None,
            media_type: media_type.map(str::to_string),
        };
        let odd = Some("image/x-odd");
        let refused = [
            part(PartContent::Text("t".into()), odd),
            part(PartContent::Raw(vec![1]), odd),
            part(PartContent::Url("https://x.example/f".into()), odd),
            part(PartContent::Data(json!({"a": 1})), odd),
        ];
        for p in refused {
            let mut m = user("x");
            m.parts = vec![p];
            assert!(
                validate_user_message(&m, "message").is_err(),
                "{:?}",
                m.parts
            );
        }
        let accepted = [
            part(PartContent::Text("t".into()), None),
            part(
                PartContent::Text("t".into()),
                Some("Text/Plain; charset=utf-8"),
            ),
            part(PartContent::Raw(vec![1]), None),
            part(PartContent::Url("https://x.example/f".into()), None),
            part(PartContent::Data(json!({"a": 1})), None),
            part(
                PartContent::Data(json!({})),
                Some(crate::extensions::a2ui::MEDIA_TYPE),
            ),
            part(PartContent::Text("t".into()), Some("")),
        ];
        for p in accepted {
            let mut m = user("x");
            m.parts = vec![p];
            assert!(
                validate_user_message(&m, "message").is_ok(),
                "{:?}",
                m.parts
            );
        }
    }

    #[test]
    fn wildcards_in_the_accepted_modes_cover_their_types() {
        assert!(accepts(&["image/*"], "image/png"));
        assert!(!accepts(&["image/*"], "imagex/png"));
        assert!(accepts(&["*/*"], "application/x-anything"));
        assert!(!accepts(&["text/plain"], "text/markdown"));
        assert!(accepts(&["Text/Plain"], "text/plain"));
    }

    #[test]
    fn parts_at_and_past_the_limit() {
        let mut m = user("x");
        m.parts = vec![Part::text("p"); MAX_PARTS_PER_MESSAGE];
        assert!(validate_user_message(&m, "message").is_ok());
        m.parts.push(Part::text("p"));
        assert!(validate_user_message(&m, "message").is_err());
    }

    #[test]
    fn role_and_message_id_are_required() {
        let mut m = user("x");
        m.role = Role::Unspecified;
        assert!(
            matches!(validate_user_message(&m, "message"), Err(DomainError::InvalidParams { field, .. }) if field == "message.role")
        );
        let mut m = user("x");
        m.message_id.clear();
        assert!(
            matches!(validate_user_message(&m, "message"), Err(DomainError::InvalidParams { field, .. }) if field == "message.messageId")
        );
    }

    #[test]
    fn server_keys_are_stripped_and_others_kept() {
        let mut meta = Some(
            json!({TIMELINE_POSITION_KEY: "x", TASK_CREATED_AT_KEY: "y", "mine": 1})
                .as_object()
                .unwrap()
                .clone(),
        );
        strip_server_keys(&mut meta);
        assert_eq!(
            meta.unwrap(),
            json!({"mine": 1}).as_object().unwrap().clone()
        );
    }

    #[test]
    fn fingerprint_ignores_ids_and_server_keys_but_not_content() {
        let a = user("hello");
        let mut b = user("hello");
        b.message_id = "other".into();
        b.task_id = Some("t".into());
        stamp_timeline(&mut b.metadata, Timestamp::now());
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&user("hello!")));
    }
}
