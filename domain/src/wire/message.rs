//! `Message`: one turn of the conversation between a client and the agent.

use serde::{Deserialize, Serialize};

use super::enums::Role;
use super::part::Part;
use super::proto::{null_as_default, Metadata};

/// `lf.a2a.v1.Message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(alias = "message_id", default)]
    pub message_id: String,
    #[serde(alias = "context_id", default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(alias = "task_id", default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default = "unspecified_role")]
    pub role: Role,
    #[serde(default, deserialize_with = "null_as_default")]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<String>,
    #[serde(
        alias = "reference_task_ids",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub reference_task_ids: Vec<String>,
    /// Draft A2A 1.1 (a2aproject/A2A#2149): the elicitations the sender means this message
    /// to answer — a hint, kept with the message; shown to and read from 1.1 requests only.
    #[serde(
        alias = "elicitation_ids",
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub elicitation_ids: Vec<String>,
}

fn unspecified_role() -> Role {
    Role::Unspecified
}

impl Message {
    /// A user message with one text part.
    pub fn user_text(message_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            ..Self::agent_text(message_id, text)
        }
    }

    /// An agent message with one text part.
    pub fn agent_text(message_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            message_id: message_id.into(),
            context_id: None,
            task_id: None,
            role: Role::Agent,
            parts: vec![Part::text(text)],
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
            elicitation_ids: Vec::new(),
        }
    }
    /// The concatenated text parts.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(Part::as_text)
            .collect::<Vec<_>>()
            .join("")
    }
}
