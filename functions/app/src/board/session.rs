//! A board session: what the sign-in cookie holds instead of the token itself — the principal,
//! an id, and when it ends, signed with the server's session key (HMAC-SHA256) — and what the
//! server keeps of it (`BoardSessions`, an allowlist): the print of the credential it started
//! with. A page opens only for a session the server still holds, whose credential the
//! authenticator would still accept (asked again at most once a `REVALIDATE_EVERY` a session:
//! the token still configured, the JWT unexpired and its key still published). Signing out
//! ends it; a copied cookie is worth nothing after that, after its credential goes, or after
//! it expires (`BoardSettings::session_ttl`, sooner when a JWT does).

use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use taskledger_domain::ids::Principal;

use crate::http::{BoardSettings, LiveSession};
use crate::identity::{Authenticator, CredentialPrint};

/// The cookie holding a board session over plain HTTP.
pub const COOKIE_NAME: &str = "tl_session";
/// The cookie holding it behind TLS: `__Host-` (Secure, the whole host, no `Domain`), which no
/// page of another host or scheme can set.
pub const SECURE_COOKIE_NAME: &str = "__Host-tl_session";
/// Longest cookie value read (a session is ~150 bytes).
pub const MAX_SESSION_BYTES: usize = 1024;
/// How long a board session lasts by default.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(8 * 3600);
/// The longest session a server may be configured with.
pub const MAX_SESSION_TTL: Duration = Duration::from_secs(30 * 24 * 3600);
/// How often a live session's credential is checked again, at most (a page read in between
/// trusts the last check).
pub const REVALIDATE_EVERY: Duration = Duration::from_secs(1);

/// The signed cookie's payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// The session's id (what the server keeps it under).
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

pub(super) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Session {
    /// A new session of `who`, ending after the configured lifetime or at the credential's own
    /// end (a JWT's `exp`), whichever comes first.
    pub fn start(settings: &BoardSettings, who: &Principal, print: &CredentialPrint) -> Self {
        let ttl_end = now().saturating_add(settings.session_ttl.as_secs());
        let not_after = match print {
            CredentialPrint::Jwt { exp, .. } => Some(*exp),
            CredentialPrint::Token { .. } => None,
        };
        Self {
            sid: uuid::Uuid::new_v4().simple().to_string(),
            tenant: who.tenant.to_string(),
            subject: who.subject.to_string(),
            exp: not_after.map_or(ttl_end, |n| n.min(ttl_end)),
        }
    }

    /// What the server keeps of it.
    pub fn live(&self, print: CredentialPrint) -> LiveSession {
        LiveSession {
            sid: self.sid.clone(),
            tenant: self.tenant.clone(),
            subject: self.subject.clone(),
            exp: self.exp,
            print,
            checked: now(),
        }
    }

    /// The cookie value: `<payload>.<mac>`, both base64url.
    pub fn seal(&self, key: &[u8]) -> String {
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(self).unwrap_or_default());
        let tag = URL_SAFE_NO_PAD.encode(mac(key, &payload).finalize().into_bytes());
        format!("{payload}.{tag}")
    }

    /// The session a cookie value holds, if it is one this server signed and it has not
    /// expired (whether the server still holds it is `live`'s).
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
        (session.exp > now()).then_some(session)
    }

    pub fn principal(&self) -> Option<Principal> {
        Principal::new(&self.tenant, &self.subject).ok()
    }

    /// Seconds until it ends (a cookie's `Max-Age`).
    pub fn remaining(&self) -> u64 {
        self.exp.saturating_sub(now())
    }

    /// The principal of this session if the server still holds it, for the same principal,
    /// and its credential is still accepted (asked again once `REVALIDATE_EVERY` has passed
    /// since the last check); a session that fails is ended.
    pub async fn still_live(
        &self,
        settings: &BoardSettings,
        auth: &dyn Authenticator,
    ) -> Option<Principal> {
        let live = settings.sessions.get(&self.sid)?;
        let who = self.principal()?;
        if live.tenant != self.tenant || live.subject != self.subject || live.exp <= now() {
            settings.sessions.end(&self.sid);
            return None;
        }
        let at = now();
        if at.saturating_sub(live.checked) >= REVALIDATE_EVERY.as_secs() {
            if !auth.accepts_print(&live.print, &who).await {
                tracing::info!(principal = %who, "board session ended: its credential is no longer accepted");
                settings.sessions.end(&self.sid);
                return None;
            }
            settings.sessions.checked(&self.sid, at);
        }
        Some(who)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::http::BoardSessions;

    #[derive(Debug, Default)]
    struct Held(Mutex<HashMap<String, LiveSession>>);

    impl BoardSessions for Held {
        fn start(&self, s: LiveSession) -> Result<(), String> {
            self.0.lock().unwrap().insert(s.sid.clone(), s);
            Ok(())
        }
        fn get(&self, sid: &str) -> Option<LiveSession> {
            self.0.lock().unwrap().get(sid).cloned()
        }
        fn checked(&self, sid: &str, at: u64) {
            if let Some(s) = self.0.lock().unwrap().get_mut(sid) {
                s.checked = at;
            }
        }
        fn end(&self, sid: &str) {
            self.0.lock().unwrap().remove(sid);
        }
    }

    fn settings(key: &[u8]) -> BoardSettings {
        BoardSettings {
            image_origins: vec![],
            session_key: key.into(),
            session_ttl: DEFAULT_SESSION_TTL,
            sessions: Arc::new(Held::default()),
            outbox: None,
        }
    }

    fn token() -> CredentialPrint {
        CredentialPrint::of_token("tok-alice")
    }

    #[test]
    fn a_cookie_opens_only_with_its_key_unchanged_and_unexpired() {
        let s = settings(b"key-1");
        let who = Principal::new("acme", "alice").unwrap();
        let session = Session::start(&s, &who, &token());
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
        assert!(Session::open(&s, "garbage").is_none());
        assert!(Session::open(&s, &"a.".repeat(MAX_SESSION_BYTES)).is_none());
    }

    #[test]
    fn a_session_ends_no_later_than_the_jwt_it_was_started_with() {
        let s = settings(b"k");
        let who = Principal::new("acme", "alice").unwrap();
        let soon = now() + 60;
        let jwt = |exp| CredentialPrint::Jwt {
            kid: "k1".into(),
            exp,
        };
        assert_eq!(Session::start(&s, &who, &jwt(soon)).exp, soon);
        let late = now() + MAX_SESSION_TTL.as_secs();
        assert!(Session::start(&s, &who, &jwt(late)).exp <= now() + DEFAULT_SESSION_TTL.as_secs());
    }

    struct Accepts(bool);

    #[async_trait::async_trait]
    impl Authenticator for Accepts {
        async fn authenticate(
            &self,
            _: &axum::http::request::Parts,
        ) -> Result<Principal, crate::identity::AuthError> {
            Err(crate::identity::AuthError::Unknown)
        }
        fn card_auth(&self) -> taskledger_domain::card::CardAuth {
            taskledger_domain::card::CardAuth::Bearer
        }
        async fn accepts_print(&self, _: &CredentialPrint, _: &Principal) -> bool {
            self.0
        }
    }

    #[tokio::test]
    async fn a_session_lives_while_the_server_holds_it_and_its_credential_is_accepted() {
        let s = settings(b"k");
        let who = Principal::new("acme", "alice").unwrap();
        let session = Session::start(&s, &who, &token());
        // Not held: a cookie the server never kept (or forgot) opens nothing.
        assert_eq!(session.still_live(&s, &Accepts(true)).await, None);
        let mut live = session.live(token());
        live.checked = 0;
        s.sessions.start(live).unwrap();
        assert_eq!(
            session.still_live(&s, &Accepts(true)).await,
            Some(who.clone())
        );
        // Checked just now: the next read within the second does not ask again.
        assert_eq!(
            session.still_live(&s, &Accepts(false)).await,
            Some(who.clone())
        );
        // Once the credential is no longer accepted, the session ends for good.
        s.sessions.checked(&session.sid, 0);
        assert_eq!(session.still_live(&s, &Accepts(false)).await, None);
        assert!(s.sessions.get(&session.sid).is_none());
        assert_eq!(session.still_live(&s, &Accepts(true)).await, None);
    }
}
