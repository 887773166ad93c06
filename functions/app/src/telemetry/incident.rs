//! A failure that participants read about: what failed, in words, and a correlation id — the
//! details (a provider's error body with its organisation and project, an internal URL, a store
//! error) go to the log under that id, once, here, and never into a task's status text.

/// The status text for a failure of `what` ("the model provider kept failing"), with `detail`
/// logged under the correlation id the text names.
pub fn incident(what: &str, detail: &dyn std::fmt::Display) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    let id = &id[..12];
    tracing::error!(correlation_id = id, error = %detail, "{what}");
    format!("{what} (correlation id {id}: the details are in the server's log)")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_text_names_the_failure_and_an_id_never_the_detail() {
        let detail = "401 from https://api.internal:8443/v1 (org-7Hq, proj_42)";
        let text = super::incident("the model provider kept failing", &detail);
        assert!(text.starts_with("the model provider kept failing (correlation id "));
        for secret in ["api.internal", "org-7Hq", "proj_42", "401"] {
            assert!(!text.contains(secret), "{text}");
        }
        let id = text.split("correlation id ").nth(1).unwrap();
        assert_eq!(id.split(':').next().unwrap().len(), 12);
    }
}
