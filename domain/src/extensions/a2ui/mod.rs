//! A2UI 0.9.1 for `emit_ui`: the extension this server declares, the checked server-to-client
//! messages that become an `a2ui` artifact, and the surfaces and user actions a task tracks.

mod extension;
mod messages;
mod structure;
mod surfaces;

pub use extension::{card_params, ARTIFACT_NAME, BASIC_CATALOG_ID, EXTENSION_URI, MEDIA_TYPE};
pub use messages::{
    matches_schema, UiError, UiMessages, MAX_UI_BYTES, MAX_UI_MESSAGES, MESSAGE_KINDS,
};
pub use structure::{
    check as check_structure, references, MAX_SURFACES, MAX_SURFACE_BYTES, MAX_SURFACE_COMPONENTS,
    MAX_SURFACE_DEPTH, MAX_SURFACE_NODES, ROOT_ID,
};
pub use surfaces::{
    action_of, Shape, Surface, Surfaces, UiAction, MAX_ACTION_CONTEXT_BYTES, MAX_ACTION_NAME_BYTES,
};

#[cfg(test)]
mod tests;
