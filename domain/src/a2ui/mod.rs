//! A2UI 0.9.1 for `emit_ui`: the extension this server declares, the checked server-to-client
//! messages that become an `a2ui` artifact, and the surfaces and user actions a task tracks.

mod extension;
mod messages;
mod surfaces;

pub use extension::{card_params, ARTIFACT_NAME, BASIC_CATALOG_ID, EXTENSION_URI, MEDIA_TYPE};
pub use messages::{
    matches_schema, UiError, UiMessages, MAX_UI_BYTES, MAX_UI_MESSAGES, MESSAGE_KINDS,
};
pub use surfaces::{
    action_of, Surface, Surfaces, UiAction, MAX_ACTION_CONTEXT_BYTES, MAX_ACTION_NAME_BYTES,
};

#[cfg(test)]
mod tests;
