//! The A2UI extension as this server declares it: its URI and media type, the catalog surfaces
//! are made from, the name of the artifacts `emit_ui` produces, and the card's parameters.

use serde_json::{json, Map};

use crate::wire::Metadata;

/// The A2UI extension the agent card declares.
pub const EXTENSION_URI: &str = "https://a2ui.org/a2a-extension/a2ui/v0.9.1";
/// Media type of a part holding one A2UI message.
pub const MEDIA_TYPE: &str = "application/a2ui+json";
/// The catalog surfaces are created with (A2UI's basic catalog; 0.9.1 keeps the 0.9 id).
pub const BASIC_CATALOG_ID: &str =
    "https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json";
/// Name of the artifacts `emit_ui` produces; their ids are `a2ui:<event sequence>`.
pub const ARTIFACT_NAME: &str = "a2ui";

/// The extension's card parameters: the catalogs surfaces are made from, no inline catalogs.
pub fn card_params() -> Metadata {
    let mut params = Map::new();
    params.insert("supportedCatalogIds".into(), json!([BASIC_CATALOG_ID]));
    params.insert("acceptsInlineCatalogs".into(), json!(false));
    params
}
