//! Verified JWT bearer tokens (the local server and a container deployment; on Lambda the API
//! Gateway JWT authorizer checks them instead): signature by a key of the configured JWKS (a
//! file, or a URL cached and fetched again — at most once per `JWKS_REFETCH_MIN` — when a token
//! names a key it does not hold), issuer, audience, expiry and not-before with a small leeway,
//! and only the asymmetric algorithms configured (never `none`, never HMAC, so a public key can
//! never serve as a shared secret). `sub` and the tenant claim make the principal.

use base64::Engine;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use taskledger_domain::ports::KeySetFetch;

use jsonwebtoken::errors::ErrorKind as JwtErrorKind;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};
use taskledger_domain::ids::Principal;
use tokio::sync::{Mutex, RwLock};

use super::AuthError;

/// Longest bearer token read (a larger one is refused before any parsing).
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// Largest JWKS document read, and most keys kept from it.
pub const MAX_JWKS_BYTES: usize = 64 * 1024;
pub const MAX_JWKS_KEYS: usize = 32;
/// A token naming an unknown key fetches the JWKS again at most this often.
pub const JWKS_REFETCH_MIN: Duration = Duration::from_secs(30);
/// A JWKS from a URL is fetched again after this long even when every key is known.
pub const JWKS_MAX_AGE: Duration = Duration::from_secs(15 * 60);
/// Clock skew allowed on `exp` and `nbf`.
pub const LEEWAY_SECS: u64 = 30;
/// The longest JWT lifetime a server may be configured to accept at most (`max_lifetime`).
pub const MAX_LIFETIME_LIMIT: Duration = Duration::from_secs(366 * 24 * 3600);

/// A configured maximum lifetime in seconds: 0 is none; past `MAX_LIFETIME_LIMIT` is refused.
pub fn max_lifetime(secs: u64) -> Result<Option<Duration>, String> {
    match secs {
        0 => Ok(None),
        s if s > MAX_LIFETIME_LIMIT.as_secs() => Err(format!(
            "{s} s is longer than {} s (a year); 0 accepts any lifetime",
            MAX_LIFETIME_LIMIT.as_secs()
        )),
        s => Ok(Some(Duration::from_secs(s))),
    }
}

/// Where the keys are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksSource {
    File(PathBuf),
    Url(String),
}

impl JwksSource {
    /// `https://…` / `http://…` is a URL, anything else a file path.
    pub fn parse(s: &str) -> Self {
        if s.starts_with("https://") || s.starts_with("http://") {
            Self::Url(s.to_string())
        } else {
            Self::File(PathBuf::from(s))
        }
    }
}

/// What a token must satisfy.
#[derive(Debug, Clone)]
pub struct JwtSettings {
    pub issuer: String,
    pub audiences: Vec<String>,
    pub algorithms: Vec<Algorithm>,
    pub jwks: JwksSource,
    /// Claim naming the tenant (absent: tenant `default`).
    pub tenant_claim: String,
    /// How often an unknown `kid` may fetch the JWKS again (`JWKS_REFETCH_MIN`).
    pub refetch_min: Duration,
    /// The longest lifetime a token may have: `exp` at most this long after `iat` (which is
    /// then required) and after now. None: any.
    pub max_lifetime: Option<Duration>,
}

/// The asymmetric algorithms a configuration may name.
pub fn parse_algorithms(list: &str) -> Result<Vec<Algorithm>, String> {
    let mut out = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let alg: Algorithm = name
            .parse()
            .map_err(|_| format!("unknown JWT algorithm {name:?}"))?;
        if matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512) {
            return Err(format!(
                "{name} is a shared-secret algorithm; tokens must be signed with a private key (RS256, ES256, …)"
            ));
        }
        out.push(alg);
    }
    if out.is_empty() {
        return Err("at least one JWT algorithm is needed".into());
    }
    Ok(out)
}

struct Keys {
    by_kid: HashMap<String, (DecodingKey, Option<Algorithm>)>,
    fetched: Option<Instant>,
}

/// Verifies JWT bearer tokens; configured static tokens (development) are accepted beside them.
pub struct JwtAuthenticator {
    settings: JwtSettings,
    static_tokens: HashMap<String, Principal>,
    /// The static tokens' prints (board sessions check theirs again).
    static_prints: HashMap<super::CredentialPrint, Principal>,
    keys: RwLock<Keys>,
    /// One fetch at a time; the others wait for its result.
    fetching: Mutex<()>,
    /// Fetches a JWKS URL (an adapter, handed in by the composition).
    fetcher: Arc<dyn KeySetFetch>,
}

fn invalid(why: impl Into<String>) -> AuthError {
    AuthError::InvalidToken(why.into())
}

/// The keys of a JWKS document (keys without a `kid` cannot be chosen and are skipped).
fn parse_jwks(bytes: &[u8]) -> Result<HashMap<String, (DecodingKey, Option<Algorithm>)>, String> {
    if bytes.len() > MAX_JWKS_BYTES {
        return Err(format!("the JWKS is over {MAX_JWKS_BYTES} bytes"));
    }
    let set: JwkSet = serde_json::from_slice(bytes).map_err(|e| format!("invalid JWKS: {e}"))?;
    let mut out = HashMap::new();
    for jwk in set.keys.iter().take(MAX_JWKS_KEYS) {
        let Some(kid) = jwk.common.key_id.clone() else {
            continue;
        };
        let alg = jwk
            .common
            .key_algorithm
            .and_then(|a| a.to_string().parse::<Algorithm>().ok());
        match DecodingKey::from_jwk(jwk) {
            Ok(key) => {
                out.insert(kid, (key, alg));
            }
            Err(e) => tracing::warn!(kid = %kid, error = %e, "skipping a JWKS key"),
        }
    }
    Ok(out)
}

impl JwtAuthenticator {
    /// Reads the JWKS once, so a bad configuration fails at start-up.
    pub async fn new(
        settings: JwtSettings,
        static_tokens: HashMap<String, Principal>,
        fetcher: Arc<dyn KeySetFetch>,
    ) -> Result<Self, String> {
        if settings.audiences.is_empty() {
            return Err("a JWT audience is required".into());
        }
        let keys = Self::load(&settings.jwks, fetcher.as_ref()).await?;
        Ok(Self {
            settings,
            static_prints: super::prints_of(&static_tokens),
            static_tokens,
            keys: RwLock::new(Keys {
                by_kid: keys,
                fetched: Some(Instant::now()),
            }),
            fetching: Mutex::new(()),
            fetcher,
        })
    }

    async fn load(
        source: &JwksSource,
        fetcher: &dyn KeySetFetch,
    ) -> Result<HashMap<String, (DecodingKey, Option<Algorithm>)>, String> {
        let bytes = match source {
            JwksSource::File(p) => {
                std::fs::read(p).map_err(|e| format!("JWKS {}: {e}", p.display()))?
            }
            JwksSource::Url(u) => fetcher.fetch(u, MAX_JWKS_BYTES).await?,
        };
        parse_jwks(&bytes)
    }

    /// The key `kid` names, fetching the JWKS again when it is unknown or old (bounded).
    async fn key(&self, kid: &str) -> Result<(DecodingKey, Option<Algorithm>), AuthError> {
        let stale = |k: &Keys, unknown: bool| {
            let age = k.fetched.map(|t| t.elapsed()).unwrap_or(Duration::MAX);
            (unknown && age >= self.settings.refetch_min) || age >= JWKS_MAX_AGE
        };
        {
            let k = self.keys.read().await;
            let known = k.by_kid.get(kid).cloned();
            if !stale(&k, known.is_none()) {
                return known.ok_or_else(|| invalid(format!("unknown signing key {kid:?}")));
            }
        }
        let _one = self.fetching.lock().await;
        {
            // Another request may have fetched while this one waited.
            let k = self.keys.read().await;
            if !stale(&k, !k.by_kid.contains_key(kid)) {
                return k
                    .by_kid
                    .get(kid)
                    .cloned()
                    .ok_or_else(|| invalid(format!("unknown signing key {kid:?}")));
            }
        }
        match Self::load(&self.settings.jwks, self.fetcher.as_ref()).await {
            Ok(fresh) => {
                let mut k = self.keys.write().await;
                k.by_kid = fresh;
                k.fetched = Some(Instant::now());
            }
            Err(e) => {
                // Keep the keys held; try again after the refetch interval.
                tracing::warn!(error = %e, "cannot fetch the JWKS");
                self.keys.write().await.fetched = Some(Instant::now());
            }
        }
        self.keys
            .read()
            .await
            .by_kid
            .get(kid)
            .cloned()
            .ok_or_else(|| invalid(format!("unknown signing key {kid:?}")))
    }

    /// The principal of a verified token.
    pub async fn verify(&self, token: &str) -> Result<Principal, AuthError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(invalid(format!(
                "the token is over {MAX_TOKEN_BYTES} bytes"
            )));
        }
        // `alg: none` and unknown algorithms fail to parse here.
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| invalid(format!("not a signed JWT ({e})")))?;
        if !self.settings.algorithms.contains(&header.alg) {
            return Err(invalid(format!(
                "algorithm {:?} is not accepted",
                header.alg
            )));
        }
        let kid = header
            .kid
            .ok_or_else(|| invalid("the token names no signing key (kid)"))?;
        let (key, key_alg) = self.key(&kid).await?;
        if key_alg.is_some_and(|a| a != header.alg) {
            return Err(invalid(format!(
                "key {kid:?} is for another algorithm than {:?}",
                header.alg
            )));
        }
        let mut v = Validation::new(header.alg);
        v.set_issuer(&[&self.settings.issuer]);
        v.set_audience(&self.settings.audiences);
        v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        v.leeway = LEEWAY_SECS;
        v.validate_nbf = true;
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &v).map_err(|e| {
            invalid(match e.kind() {
                JwtErrorKind::ExpiredSignature => "the token has expired".to_string(),
                JwtErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".into(),
                JwtErrorKind::InvalidAudience => "the token is for another audience".into(),
                JwtErrorKind::InvalidIssuer => "the token is from another issuer".into(),
                JwtErrorKind::InvalidSignature => "bad signature".into(),
                JwtErrorKind::MissingRequiredClaim(c) => format!("the token has no {c} claim"),
                other => format!("invalid token ({other:?})"),
            })
        })?;
        if let Some(max) = self.settings.max_lifetime {
            lifetime_within(&data.claims, max)?;
        }
        let text = |k: &str| data.claims.get(k).and_then(Value::as_str);
        let subject = text("sub").ok_or_else(|| invalid("the sub claim is not a string"))?;
        let tenant = match data.claims.get(&self.settings.tenant_claim) {
            None => "default",
            Some(Value::String(t)) => t.as_str(),
            Some(_) => return Err(invalid("the tenant claim is not a string")),
        };
        Principal::new(tenant, subject).map_err(AuthError::BadClaims)
    }

    /// What a board session keeps of an accepted token: a static token's print, or the JWT's
    /// key and expiry.
    pub fn print(&self, token: &str) -> Option<super::CredentialPrint> {
        if self.static_tokens.contains_key(token) {
            return Some(super::CredentialPrint::of_token(token));
        }
        let kid = jsonwebtoken::decode_header(token).ok()?.kid?;
        let exp = jwt_expiry(token)?;
        Some(super::CredentialPrint::Jwt { kid, exp })
    }

    /// Whether a credential of `print` would still be accepted as `who`: a static token still
    /// configured for `who`, or a JWT unexpired whose key the JWKS still publishes (fetched
    /// again as `verify` would).
    pub async fn accepts_print(&self, print: &super::CredentialPrint, who: &Principal) -> bool {
        match print {
            super::CredentialPrint::Token { .. } => self.static_prints.get(print) == Some(who),
            super::CredentialPrint::Jwt { kid, exp } => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(u64::MAX);
                *exp > now && self.key(kid).await.is_ok()
            }
        }
    }

    /// A static (development) token's principal, or the verified JWT's.
    pub async fn authenticate_bearer(&self, token: &str) -> Result<Principal, AuthError> {
        if let Some(p) = self.static_tokens.get(token) {
            return Ok(p.clone());
        }
        self.verify(token).await
    }
}

/// The `exp` of a JWT, read without checking anything: called only on a token the
/// authenticator has just verified.
pub fn jwt_expiry(token: &str) -> Option<u64> {
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    let claims: serde_json::Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload.trim_end_matches('='))
            .ok()?,
    )
    .ok()?;
    claims.get("exp")?.as_u64()
}

/// A verified token's lifetime against `max`: it must say when it was issued, and end no more
/// than `max` after that, nor after now (leeway allowed).
fn lifetime_within(claims: &Map<String, Value>, max: Duration) -> Result<(), AuthError> {
    let secs = |k: &str| claims.get(k).and_then(Value::as_u64);
    let exp = secs("exp").ok_or_else(|| invalid("the token has no exp claim"))?;
    let iat = secs("iat").ok_or_else(|| {
        invalid("the token has no iat claim (this server bounds token lifetimes)")
    })?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let max = max.as_secs();
    if exp.saturating_sub(iat) > max || exp.saturating_sub(now) > max + LEEWAY_SECS {
        return Err(invalid(format!(
            "the token lives longer than this server accepts ({max} s)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lifetime_at_the_bound_is_accepted_and_one_second_more_is_not() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let claims = |iat: u64, exp: u64| {
            let mut m = Map::new();
            m.insert("iat".into(), iat.into());
            m.insert("exp".into(), exp.into());
            m
        };
        let max = Duration::from_secs(3600);
        assert!(lifetime_within(&claims(now, now + 3600), max).is_ok());
        assert!(lifetime_within(&claims(now, now + 3601), max).is_err());
        // Issued "long ago" on paper but valid for a year from now: refused by the second rule.
        assert!(lifetime_within(&claims(now + 360 * 86400, now + 365 * 86400), max).is_err());
        let mut no_iat = claims(now, now + 60);
        no_iat.remove("iat");
        assert!(lifetime_within(&no_iat, max).is_err());
        assert_eq!(max_lifetime(0), Ok(None));
        assert_eq!(
            max_lifetime(MAX_LIFETIME_LIMIT.as_secs()),
            Ok(Some(MAX_LIFETIME_LIMIT))
        );
        assert!(max_lifetime(MAX_LIFETIME_LIMIT.as_secs() + 1).is_err());
    }

    #[test]
    fn only_asymmetric_algorithms_may_be_configured() {
        assert_eq!(
            parse_algorithms("RS256, ES256").unwrap(),
            [Algorithm::RS256, Algorithm::ES256]
        );
        assert!(parse_algorithms("HS256")
            .unwrap_err()
            .contains("shared-secret"));
        assert!(parse_algorithms("none").is_err());
        assert!(parse_algorithms("").is_err());
    }

    #[test]
    fn a_jwks_over_the_bound_is_refused() {
        let big = vec![b' '; MAX_JWKS_BYTES + 1];
        assert!(parse_jwks(&big).unwrap_err().contains("over"));
        let at = format!("{{\"keys\":[]}}{}", " ".repeat(MAX_JWKS_BYTES - 11));
        assert_eq!(at.len(), MAX_JWKS_BYTES);
        assert!(parse_jwks(at.as_bytes()).unwrap().is_empty());
    }

    #[test]
    fn sources_are_urls_or_files() {
        assert_eq!(
            JwksSource::parse("https://idp/jwks.json"),
            JwksSource::Url("https://idp/jwks.json".into())
        );
        assert_eq!(
            JwksSource::parse("/etc/jwks.json"),
            JwksSource::File("/etc/jwks.json".into())
        );
    }
}
