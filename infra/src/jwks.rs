//! Fetching a JWKS document over HTTP(S): bounded in size and time, bytes only (the identity
//! layer parses and trusts it).

use std::time::Duration;

/// How long one fetch may take.
pub const JWKS_FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// The body at `url`, refused past `max_bytes` or on a non-2xx status.
pub async fn fetch(url: &str, max_bytes: usize) -> Result<Vec<u8>, String> {
    let client = reqwest::Client::builder()
        .timeout(JWKS_FETCH_TIMEOUT)
        .redirect(reqwest::redirect::Policy::limited(3))
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
    let mut response = client
        .get(url)
        .header("accept", "application/json")
        .send()
        .await
        .map_err(|e| format!("JWKS {url}: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("JWKS {url}: HTTP {}", response.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("JWKS {url}: {e}"))?
    {
        if body.len() + chunk.len() > max_bytes {
            return Err(format!("JWKS {url}: over {max_bytes} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// `fetch` as the application asks for it (`KeySetFetch`).
#[derive(Debug, Clone, Copy, Default)]
pub struct HttpKeySets;

#[async_trait::async_trait]
impl taskledger_domain::ports::KeySetFetch for HttpKeySets {
    async fn fetch(&self, url: &str, max_bytes: usize) -> Result<Vec<u8>, String> {
        fetch(url, max_bytes).await
    }
}
