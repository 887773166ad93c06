//! Where a JWT's verification keys come from when the deployment names an identity
//! provider's JWKS URL: fetched over HTTPS by an adapter, bounded in size and time.

use async_trait::async_trait;

#[async_trait]
pub trait KeySetFetch: Send + Sync {
    /// The document at `url`, at most `max_bytes`; the reason when it cannot be had.
    async fn fetch(&self, url: &str, max_bytes: usize) -> Result<Vec<u8>, String>;
}
