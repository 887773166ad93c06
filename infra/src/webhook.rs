//! The webhook sender: POSTs one delivery, SSRF-guarded, optionally signed (detached JWS, ES256)
//! with a key whose public half is served at `/.well-known/jwks.json`.
//!
//! Every address a host name resolves to is checked by the address policy inside the connector's
//! resolver, so the check and the connection use the same answer (no DNS-rebinding gap); literal
//! addresses are checked before sending. Redirects are not followed, proxies are not used, and
//! each attempt has a timeout.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use taskledger_domain::trace::TraceContext;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::DecodePrivateKey;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use taskledger_domain::push::{
    self, classify_status, parse_retry_after, AddressPolicy, AttemptResult, PushDelivery,
};
use taskledger_domain::time::Timestamp;

/// How long one delivery attempt may take, connection included.
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("cannot build the webhook HTTP client: {0}")]
    Client(String),
    #[error("the push signing key is not a P-256 private key in PEM (PKCS#8 or SEC1): {0}")]
    Key(String),
}

/// Resolves with the system resolver, then keeps only the addresses the policy permits.
struct GuardedResolver {
    policy: Arc<AddressPolicy>,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refusals = Vec::new();
            let allowed: Vec<SocketAddr> = found
                .into_iter()
                .filter(|a| match policy.permits(a.ip()) {
                    Ok(()) => true,
                    Err(why) => {
                        refusals.push(why);
                        false
                    }
                })
                .collect();
            if allowed.is_empty() {
                let why = if refusals.is_empty() {
                    format!("{host} has no address")
                } else {
                    format!("{host} resolves to {}", refusals.join("; "))
                };
                return Err(Box::new(Refused(why)) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// The guard refused every address of a host.
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "refused: {}", self.0)
    }
}

impl std::error::Error for Refused {}

/// An HTTP client whose every connection goes only to addresses `policy` permits (checked in
/// the resolver, so the check and the connection use the same answer), following no redirect
/// and using no proxy: for every call to an address a task, a card or a deployment names.
pub(crate) fn guarded_client(policy: Arc<AddressPolicy>) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .dns_resolver(Arc::new(GuardedResolver { policy }))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(concat!("taskledger/", env!("CARGO_PKG_VERSION")))
}

/// A literal address in `url` never reaches the resolver: the policy's answer for it.
pub(crate) fn literal_permitted(policy: &AddressPolicy, url: &reqwest::Url) -> Result<(), String> {
    let literal = match url.host() {
        Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        _ => None,
    };
    match literal {
        Some(ip) => policy.permits(ip),
        None => Ok(()),
    }
}

/// Signs delivery bodies: detached compact JWS (RFC 7515 appendix F), ES256.
pub struct PushSigner {
    key: SigningKey,
    kid: String,
    jwk: Value,
}

impl std::fmt::Debug for PushSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PushSigner {{ kid: {:?} }}", self.kid)
    }
}

impl PushSigner {
    /// From a PEM private key (PKCS#8 `PRIVATE KEY` or SEC1 `EC PRIVATE KEY`) on P-256.
    pub fn from_pem(pem: &str) -> Result<Self, WebhookError> {
        let key = SigningKey::from_pkcs8_pem(pem)
            .or_else(|_| {
                p256::SecretKey::from_sec1_pem(pem)
                    .map(SigningKey::from)
                    .map_err(|e| e.to_string())
            })
            .map_err(WebhookError::Key)?;
        Ok(Self::from_key(key))
    }

    pub fn from_key(key: SigningKey) -> Self {
        let point = key.verifying_key().to_encoded_point(false);
        let (x, y) = (
            URL_SAFE_NO_PAD.encode(point.x().map(|x| x.as_slice()).unwrap_or_default()),
            URL_SAFE_NO_PAD.encode(point.y().map(|y| y.as_slice()).unwrap_or_default()),
        );
        // RFC 7638 thumbprint: members in lexicographic order, no spaces.
        let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
        let kid = URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()));
        let jwk = json!({
            "kty": "EC", "crv": "P-256", "x": x, "y": y,
            "kid": kid, "use": "sig", "alg": "ES256",
        });
        Self { key, kid, jwk }
    }

    /// `{"keys": [...]}` for `/.well-known/jwks.json`.
    pub fn jwks(&self) -> Value {
        json!({ "keys": [self.jwk] })
    }

    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// A JWS with a detached `payload` (RFC 7515 appendix F) as `(protected, signature)`, its
    /// protected header naming the key (`kid`) and, when given, where the key set is (`jku`).
    pub fn sign_detached(&self, payload: &[u8], jku: Option<&str>) -> (String, String) {
        let mut header = json!({"alg": "ES256", "kid": self.kid, "typ": "JOSE"});
        if let Some(u) = jku {
            header["jku"] = json!(u);
        }
        let protected = URL_SAFE_NO_PAD.encode(header.to_string());
        let input = format!("{protected}.{}", URL_SAFE_NO_PAD.encode(payload));
        let signature: Signature = self.key.sign(input.as_bytes());
        (protected, URL_SAFE_NO_PAD.encode(signature.to_bytes()))
    }

    /// `<protected>..<signature>`: the payload (the body, base64url) is left out.
    pub fn sign(&self, body: &[u8]) -> String {
        let header = json!({"alg": "ES256", "kid": self.kid, "typ": "JOSE"});
        let protected = URL_SAFE_NO_PAD.encode(header.to_string());
        let input = format!("{protected}.{}", URL_SAFE_NO_PAD.encode(body));
        let signature: Signature = self.key.sign(input.as_bytes());
        format!(
            "{protected}..{}",
            URL_SAFE_NO_PAD.encode(signature.to_bytes())
        )
    }
}

/// Sends deliveries. Cheap to clone.
#[derive(Clone)]
pub struct WebhookSender {
    client: reqwest::Client,
    policy: Arc<AddressPolicy>,
    signer: Option<Arc<PushSigner>>,
    /// Opens the sealed token and credentials of a config, right before they are sent.
    secrets: Option<Arc<crate::secrets::SecretBox>>,
}

impl WebhookSender {
    pub fn new(
        policy: AddressPolicy,
        signer: Option<Arc<PushSigner>>,
    ) -> Result<Self, WebhookError> {
        let policy = Arc::new(policy);
        let client = guarded_client(policy.clone())
            .timeout(DELIVERY_TIMEOUT)
            .build()
            .map_err(|e| WebhookError::Client(e.to_string()))?;
        Ok(Self {
            client,
            policy,
            signer,
            secrets: None,
        })
    }

    /// Opens sealed config secrets with `secrets` (ADR 022).
    pub fn with_secrets(mut self, secrets: Option<Arc<crate::secrets::SecretBox>>) -> Self {
        self.secrets = secrets;
        self
    }

    pub fn signer(&self) -> Option<&Arc<PushSigner>> {
        self.signer.as_ref()
    }

    /// One attempt.
    pub async fn send(&self, d: &PushDelivery) -> AttemptResult {
        let url = match reqwest::Url::parse(&d.config.url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => u,
            Ok(u) => {
                return AttemptResult::Permanent {
                    reason: format!("scheme {} is not http or https", u.scheme()),
                }
            }
            Err(e) => {
                return AttemptResult::Permanent {
                    reason: format!("the URL is invalid: {e}"),
                }
            }
        };
        // A literal address never reaches the resolver: check it here.
        if let Err(why) = literal_permitted(&self.policy, &url) {
            return AttemptResult::Permanent {
                reason: format!("refused: {why}"),
            };
        }
        // The config's secrets, opened only here, for this request.
        let mut config = d.config.clone();
        let secrets = self.secrets.as_deref();
        for value in [&mut config.token, &mut config.credentials] {
            if let Some(v) = value.as_mut() {
                match crate::secrets::open_with(secrets, v) {
                    Ok(plain) => *v = plain,
                    Err(e) => {
                        return AttemptResult::Permanent {
                            reason: format!("the config's secrets do not open: {e}"),
                        }
                    }
                }
            }
        }
        let body = d.body.clone().into_bytes();
        let mut req = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, d.content_type())
            .header(push::SEQUENCE_HEADER, d.seq.to_string())
            .header(push::DELIVERY_ID_HEADER, d.delivery_id());
        if let Some(auth) = config.authorization() {
            req = req.header(reqwest::header::AUTHORIZATION, auth);
        }
        if let Some(token) = &config.token {
            req = req.header(push::TOKEN_HEADER, token);
        }
        if let Some(signer) = &self.signer {
            req = req.header(push::SIGNATURE_HEADER, signer.sign(&body));
        }
        // The receiver joins the trace the update belongs to (W3C Trace Context).
        if let Some(t) = d.trace.as_deref().and_then(TraceContext::from_stored) {
            req = req.header("traceparent", t.traceparent());
            if let Some(state) = t.tracestate() {
                req = req.header("tracestate", state);
            }
        }
        match req.body(body).send().await {
            Ok(resp) => {
                let retry_after = resp
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| parse_retry_after(v, Timestamp::now().unix_secs()));
                classify_status(resp.status().as_u16(), retry_after)
            }
            Err(e) => {
                // reqwest names the URL in its errors: a webhook URL is a capability.
                let e = e.without_url();
                let chain = error_chain(&e);
                if chain.contains("refused: ") {
                    AttemptResult::Permanent {
                        reason: chain
                            .split("refused: ")
                            .nth(1)
                            .map(|r| format!("refused: {r}"))
                            .unwrap_or(chain),
                    }
                } else {
                    AttemptResult::Transient {
                        reason: if e.is_timeout() {
                            format!("timed out after {}s", DELIVERY_TIMEOUT.as_secs())
                        } else {
                            format!("network error: {chain}")
                        },
                        retry_after: None,
                    }
                }
            }
        }
    }
}

#[async_trait::async_trait]
impl taskledger_domain::ports::WebhookSend for WebhookSender {
    async fn send(&self, delivery: &PushDelivery) -> AttemptResult {
        WebhookSender::send(self, delivery).await
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

impl taskledger_domain::ports::CardSigner for PushSigner {
    fn sign_detached(&self, payload: &[u8], jku: Option<&str>) -> (String, String) {
        PushSigner::sign_detached(self, payload, jku)
    }

    fn verify_detached(&self, protected: &str, payload: &[u8], signature: &str) -> bool {
        use p256::ecdsa::signature::Verifier;
        let header: Option<Value> = URL_SAFE_NO_PAD
            .decode(protected)
            .ok()
            .and_then(|h| serde_json::from_slice(&h).ok());
        let names_this_key = header.is_some_and(|h| {
            h.get("alg").and_then(Value::as_str) == Some("ES256")
                && h.get("kid").and_then(Value::as_str) == Some(self.kid.as_str())
        });
        let Some(signature) = URL_SAFE_NO_PAD
            .decode(signature)
            .ok()
            .and_then(|s| Signature::from_slice(&s).ok())
        else {
            return false;
        };
        let input = format!("{protected}.{}", URL_SAFE_NO_PAD.encode(payload));
        names_this_key
            && self
                .key
                .verifying_key()
                .verify(input.as_bytes(), &signature)
                .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::Verifier;
    use p256::ecdsa::VerifyingKey;

    #[test]
    fn a_detached_signature_verifies_with_its_key_only_and_unchanged() {
        use taskledger_domain::ports::CardSigner;
        let signer = PushSigner::from_key(SigningKey::from_slice(&[7u8; 32]).unwrap());
        let other = PushSigner::from_key(SigningKey::from_slice(&[8u8; 32]).unwrap());
        let (protected, sig) = CardSigner::sign_detached(&signer, b"statement", None);
        assert!(signer.verify_detached(&protected, b"statement", &sig));
        assert!(!signer.verify_detached(&protected, b"statement!", &sig));
        assert!(!other.verify_detached(&protected, b"statement", &sig));
        let (other_protected, other_sig) = CardSigner::sign_detached(&other, b"statement", None);
        assert!(!signer.verify_detached(&other_protected, b"statement", &other_sig));
        assert!(!signer.verify_detached("e30", b"statement", &sig), "no kid");
        assert!(!signer.verify_detached(&protected, b"statement", "!!"));
    }

    #[test]
    fn signatures_verify_with_the_published_key() {
        let key = SigningKey::from_slice(&[7u8; 32]).unwrap();
        let signer = PushSigner::from_key(key);
        let body = br#"{"statusUpdate":{}}"#;
        let jws = signer.sign(body);
        let (protected, rest) = jws.split_once("..").unwrap();
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(protected).unwrap()).unwrap();
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["kid"], signer.kid());
        let jwk = &signer.jwks()["keys"][0];
        let mut sec1 = vec![4u8];
        sec1.extend(URL_SAFE_NO_PAD.decode(jwk["x"].as_str().unwrap()).unwrap());
        sec1.extend(URL_SAFE_NO_PAD.decode(jwk["y"].as_str().unwrap()).unwrap());
        let vk = VerifyingKey::from_sec1_bytes(&sec1).unwrap();
        let sig = Signature::from_slice(&URL_SAFE_NO_PAD.decode(rest).unwrap()).unwrap();
        let input = format!("{protected}.{}", URL_SAFE_NO_PAD.encode(body));
        assert!(vk.verify(input.as_bytes(), &sig).is_ok());
        assert!(vk.verify(b"tampered", &sig).is_err());
    }

    #[test]
    fn keys_load_from_pem_and_garbage_is_refused() {
        use p256::pkcs8::{EncodePrivateKey, LineEnding};
        let key = SigningKey::from_slice(&[9u8; 32]).unwrap();
        let pem = key.to_pkcs8_pem(LineEnding::LF).unwrap();
        let signer = PushSigner::from_pem(&pem).unwrap();
        assert_eq!(signer.kid(), PushSigner::from_key(key).kid());
        assert!(PushSigner::from_pem("not a key").is_err());
    }
}
