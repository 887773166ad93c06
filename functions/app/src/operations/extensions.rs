//! Extension negotiation (A2A §4.6): a client activates extensions by listing their URIs in
//! `A2A-Extensions` (or in `message.extensions`); only URIs the card declares are activated,
//! unknown ones are ignored, and a declared extension marked `required` that the client did not
//! activate refuses the request. The active ones are echoed in the response.
//!
//! Always on, active or not: the tiny-harness task extension (an envelope in a message is
//! read, `Task.metadata` carries its data), kagent's usage extension and A2UI — their data is
//! what the task is. An extension whose metadata a client must opt into (DMP's) reads
//! `Extensions::is_active` before it writes anything.

use std::sync::LazyLock;

use taskledger_domain::card;
use taskledger_domain::error::ErrorKind;

use crate::error::AppError;

/// The extensions active for one request, in the order the card declares them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extensions {
    active: Vec<String>,
}

impl Extensions {
    pub fn is_active(&self, uri: &str) -> bool {
        self.active.iter().any(|a| a == uri)
    }

    pub fn active(&self) -> &[String] {
        &self.active
    }

    /// The `A2A-Extensions` value of the response (none: no header).
    pub fn header(&self) -> Option<String> {
        (!self.active.is_empty()).then(|| self.active.join(", "))
    }
}

/// The URIs the card declares, each with whether it is required, in the card's order (the
/// card's extensions are built once: their parameters are documents).
static DECLARED: LazyLock<Vec<(String, bool)>> = LazyLock::new(|| {
    card::extensions()
        .into_iter()
        .map(|e| (e.uri, e.required))
        .collect()
});

/// The active extensions of a request that lists `requested` in its header and `in_message`
/// on its message.
pub fn negotiate(requested: &[String], in_message: &[String]) -> Result<Extensions, AppError> {
    let asked = |uri: &str| requested.iter().chain(in_message).any(|r| r == uri);
    let mut active = Vec::new();
    for (uri, required) in DECLARED.iter() {
        if asked(uri) {
            active.push(uri.clone());
        } else if *required {
            return Err(AppError::protocol(
                ErrorKind::ExtensionSupportRequired,
                format!("extension {uri} is required: list it in the A2A-Extensions header"),
            )
            .with("extension", uri.clone()));
        }
    }
    Ok(Extensions { active })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_extensions_are_activated_and_unknown_ones_ignored() {
        let uri = taskledger_domain::extensions::harness::EXTENSION_URI.to_string();
        let e = negotiate(&[uri.clone(), "urn:unknown".into()], &[]).unwrap();
        assert_eq!(e.active(), std::slice::from_ref(&uri));
        assert!(e.is_active(&uri));
        assert!(!e.is_active("urn:unknown"));
        assert_eq!(e.header().as_deref(), Some(uri.as_str()));
    }

    #[test]
    fn a_message_can_activate_an_extension_too() {
        let uri = taskledger_domain::extensions::usage::USAGE_EXTENSION_URI.to_string();
        let e = negotiate(&[], std::slice::from_ref(&uri)).unwrap();
        assert!(e.is_active(&uri));
        assert_eq!(negotiate(&[], &[]).unwrap().header(), None);
    }
}
