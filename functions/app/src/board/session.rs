//! A board session: what the sign-in cookie holds instead of the token itself — the principal,
//! an id, and when it ends, signed with the server's session key (HMAC-SHA256). It proves the
//! token was checked at sign-in without carrying it, it expires (`BoardSettings::session_ttl`,
//! sooner when a JWT does), and signing out revokes its id, so a copied cookie is worth nothing
//! after either.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use taskledger_domain::ids::Principal;

use crate::http::BoardSettings;

/// The cookie holding a board session.
pub const COOKIE_NAME: &str = "tl_session";
/// Longest cookie value read (a session is ~150 bytes).
pub const MAX_SESSION_BYTES: usize = 1024;
/// How long a board session lasts by default.
pub const DEFAULT_SESSION_TTL: std::time::Duration = std::time::Duration::from_secs(8 * 3600);
/// The longest session a server may be configured with.
pub const MAX_SESSION_TTL: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// The session's id (what signing out revokes).
    pub sid: String,
    pub tenant: String,
    pub subject: String,
    /// Unix seconds after which it is no longer accepted.
    pub exp: u64,
}

fn mac(key: &[u8], payload: &str) -> Hmac<Sha256> {
    // HMAC takes a key of any length.
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key)
        .unwrap_or_else(|_| <Hmac<Sha256> as Mac>::new_from_slice(&[0]).expect("a one-byte key"));
    m.update(payload.as_bytes());
    m
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Session {
    /// A new session of `who`, ending after the configured lifetime or at `not_after` (a JWT's
    /// `exp`), whichever comes first.
    pub fn start(settings: &BoardSettings, who: &Principal, not_after: Option<u64>) -> Self {
        let ttl_end = now().saturating_add(settings.session_ttl.as_secs());
        Self {
            sid: uuid::Uuid::new_v4().simple().to_string(),
            tenant: who.tenant.to_string(),
            subject: who.subject.to_string(),
            exp: not_after.map_or(ttl_end, |n| n.min(ttl_end)),
        }
    }

    /// The cookie value: `<payload>.<mac>`, both base64url.
    pub fn seal(&self, key: &[u8]) -> String {
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(self).unwrap_or_default());
        let tag = URL_SAFE_NO_PAD.encode(mac(key, &payload).finalize().into_bytes());
        format!("{payload}.{tag}")
    }

    /// The session a cookie value holds, if it is one this server signed, unexpired and not
    /// signed out.
    pub fn open(settings: &BoardSettings, value: &str) -> Option<Self> {
        if value.len() > MAX_SESSION_BYTES {
            return None;
        }
        let (payload, tag) = value.split_once('.')?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        mac(&settings.session_key, payload)
            .verify_slice(&tag)
            .ok()?;
        let session: Self = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
        (session.exp > now() && !settings.revoked.is_revoked(&session.sid)).then_some(session)
    }

    pub fn principal(&self) -> Option<Principal> {
        Principal::new(&self.tenant, &self.subject).ok()
    }

    /// Seconds until it ends (a cookie's `Max-Age`).
    pub fn remaining(&self) -> u64 {
        self.exp.saturating_sub(now())
    }
}

/// The `exp` of a JWT, read without checking anything: called only on a token the
/// authenticator has just verified.
pub fn jwt_expiry(token: &str) -> Option<u64> {
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    let claims: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?)
            .ok()?;
    claims.get("exp")?.as_u64()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::http::SessionRevocations;

    #[derive(Debug, Default)]
    struct Revoked(Mutex<HashMap<String, u64>>);

    impl SessionRevocations for Revoked {
        fn revoke(&self, id: &str, expires: u64) {
            self.0.lock().unwrap().insert(id.into(), expires);
        }
        fn is_revoked(&self, id: &str) -> bool {
            self.0.lock().unwrap().contains_key(id)
        }
    }

    fn settings(key: &[u8]) -> BoardSettings {
        BoardSettings {
            image_origins: vec![],
            session_key: key.into(),
            session_ttl: DEFAULT_SESSION_TTL,
            revoked: Arc::new(Revoked::default()),
            outbox: None,
        }
    }

    #[test]
    fn a_session_opens_only_with_its_key_unchanged_unexpired_and_not_revoked() {
        let s = settings(b"key-1");
        let who = Principal::new("acme", "alice").unwrap();
        let session = Session::start(&s, &who, None);
        let cookie = session.seal(&s.session_key);
        assert!(
            !cookie.contains("alice"),
            "the principal is encoded, the token absent"
        );
        let opened = Session::open(&s, &cookie).expect("opens");
        assert_eq!(opened.principal(), Some(who.clone()));
        assert!(
            Session::open(&settings(b"key-2"), &cookie).is_none(),
            "another key"
        );
        // A changed payload (bob instead of alice) does not verify.
        let (_, tag) = cookie.split_once('.').unwrap();
        let mut forged = session.clone();
        forged.subject = "bob".into();
        let forged_payload = forged.seal(b"whatever");
        let (payload, _) = forged_payload.split_once('.').unwrap();
        assert!(Session::open(&s, &format!("{payload}.{tag}")).is_none());
        // Expired.
        let mut old = session.clone();
        old.exp = now() - 1;
        assert!(Session::open(&s, &old.seal(&s.session_key)).is_none());
        // Signed out.
        s.revoked.revoke(&session.sid, session.exp);
        assert!(Session::open(&s, &cookie).is_none());
        assert!(Session::open(&s, "garbage").is_none());
        assert!(Session::open(&s, &"a.".repeat(MAX_SESSION_BYTES)).is_none());
    }

    #[test]
    fn a_session_ends_no_later_than_the_token_it_was_started_with() {
        let s = settings(b"k");
        let who = Principal::new("acme", "alice").unwrap();
        let soon = now() + 60;
        assert_eq!(Session::start(&s, &who, Some(soon)).exp, soon);
        let late = now() + MAX_SESSION_TTL.as_secs();
        assert!(Session::start(&s, &who, Some(late)).exp <= now() + DEFAULT_SESSION_TTL.as_secs());
        let claims = URL_SAFE_NO_PAD.encode(br#"{"sub":"alice","exp":1234}"#);
        assert_eq!(jwt_expiry(&format!("h.{claims}.s")), Some(1234));
        assert_eq!(jwt_expiry("tok-alice"), None);
    }
}
