//! How a push config's token and credentials are kept at rest (ADR 022): sealed when the
//! deployment has keys, opened to be shown back to their owner. The sealing is an adapter's
//! (AES-256-GCM under keys from a file or a secret); the application only asks for it.

/// Seals and opens stored secrets.
pub trait SecretSeal: Send + Sync + std::fmt::Debug {
    /// `plain` as it is to be stored: sealed when keys are configured, as given otherwise.
    fn seal(&self, plain: &str) -> String;
    /// A stored value as it was given; `None` when it cannot be opened (it was sealed with a
    /// key that is not configured, or it does not open).
    fn open(&self, stored: &str) -> Option<String>;
}
