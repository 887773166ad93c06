//! What signs the agent card and the archives `export` writes (ADR 022's key, the one that
//! signs webhook deliveries): a detached JWS over the card's canonical payload, or an archive's
//! statement. The keys and the algorithm are an adapter's.

/// Signs payloads as detached JWS.
pub trait CardSigner: Send + Sync + std::fmt::Debug {
    /// The JWS over `payload` with a detached payload: its protected header and signature (both
    /// base64url), the header naming `jku` when given.
    fn sign_detached(&self, payload: &[u8], jku: Option<&str>) -> (String, String);
    /// Whether `signature` under `protected` (both base64url) is this key's over `payload`.
    fn verify_detached(&self, protected: &str, payload: &[u8], signature: &str) -> bool;
}
