//! ListTasks page tokens: opaque to clients, signed so a forged or altered one is refused,
//! and bound to the filters they were issued for.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::ports::Cursor;

type HmacSha256 = Hmac<Sha256>;

/// Bytes of the HMAC kept in a token.
const TAG_BYTES: usize = 16;
/// Longest page token we try to decode.
pub const MAX_PAGE_TOKEN_BYTES: usize = 1024;
/// How long a page token stays valid after it was issued.
pub const PAGE_TOKEN_TTL_SECS: i64 = 24 * 60 * 60;

/// Signs and checks page tokens with a server secret.
#[derive(Clone)]
pub struct CursorCodec {
    key: Vec<u8>,
}

impl std::fmt::Debug for CursorCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorCodec(..)")
    }
}

impl CursorCodec {
    pub fn new(key: impl Into<Vec<u8>>) -> Self {
        Self { key: key.into() }
    }

    fn tag(&self, body: &[u8]) -> Vec<u8> {
        let mut mac = match HmacSha256::new_from_slice(&self.key) {
            Ok(m) => m,
            // HMAC accepts keys of any length; this arm is never taken.
            Err(_) => return vec![0; TAG_BYTES],
        };
        mac.update(body);
        mac.finalize().into_bytes()[..TAG_BYTES].to_vec()
    }

    /// `scope` binds the token to the caller and the filters of the request; `now_secs` (Unix
    /// seconds) starts its lifetime.
    pub fn encode(&self, cursor: &Cursor, scope: &str, now_secs: i64) -> String {
        let visible = format!("2|{now_secs}|{}|{}", cursor.status_nanos, cursor.task_id);
        self.seal(&visible, scope)
    }

    pub fn decode(&self, token: &str, scope: &str, now_secs: i64) -> Result<Cursor, String> {
        const BAD: &str = "pageToken is not a token this server issued for this query";
        let visible = self.opened(token, scope).ok_or(BAD)?;
        let mut it = visible.splitn(4, '|');
        let (Some("2"), Some(issued), Some(nanos), Some(task_id)) =
            (it.next(), it.next(), it.next(), it.next())
        else {
            return Err(BAD.into());
        };
        let issued: i64 = issued.parse().map_err(|_| BAD)?;
        if now_secs - issued > PAGE_TOKEN_TTL_SECS {
            return Err("pageToken has expired; list again from the first page".into());
        }
        Ok(Cursor {
            status_nanos: nanos.parse().map_err(|_| BAD)?,
            task_id: task_id.to_string(),
        })
    }
}

impl CursorCodec {
    /// A position in a log (taskledger's events API: the last event a page scanned) as a
    /// continuation cursor bound to `scope` (the tenant and task it reads). It does not
    /// expire: a log position stays one while the log is kept.
    pub fn encode_position(&self, seq: u64, scope: &str) -> String {
        self.seal(&format!("e1|{seq}"), scope)
    }

    /// The position a cursor of `scope` holds; a forged one, or one of another scope (another
    /// task or tenant), is refused.
    pub fn decode_position(&self, token: &str, scope: &str) -> Result<u64, String> {
        self.opened(token, scope)
            .and_then(|v| v.strip_prefix("e1|")?.parse().ok())
            .ok_or_else(|| "pageToken is not a cursor this server issued for this task".into())
    }

    /// A token of `visible` bound to `scope`: the text and its tag, base64url each.
    fn seal(&self, visible: &str, scope: &str) -> String {
        let tag = self.tag(format!("{visible}|{scope}").as_bytes());
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(visible.as_bytes()),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// The text of a token this codec sealed for `scope` (`None`: too long, malformed, forged,
    /// or another scope's).
    fn opened(&self, token: &str, scope: &str) -> Option<String> {
        if token.len() > MAX_PAGE_TOKEN_BYTES {
            return None;
        }
        let (visible, tag) = token.split_once('.')?;
        let visible = String::from_utf8(URL_SAFE_NO_PAD.decode(visible).ok()?).ok()?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        (self.tag(format!("{visible}|{scope}").as_bytes()) == tag).then_some(visible)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c() -> Cursor {
        Cursor {
            status_nanos: 1_700_000_000_000_000_001,
            task_id: "t-1".into(),
        }
    }

    #[test]
    fn a_token_round_trips_for_its_scope() {
        let codec = CursorCodec::new("k");
        let t = codec.encode(&c(), "a/b|ctx", 1000);
        assert_eq!(codec.decode(&t, "a/b|ctx", 1000).unwrap(), c());
    }

    #[test]
    fn a_token_expires_after_its_lifetime() {
        let codec = CursorCodec::new("k");
        let t = codec.encode(&c(), "s", 1000);
        assert!(codec.decode(&t, "s", 1000 + PAGE_TOKEN_TTL_SECS).is_ok());
        let e = codec
            .decode(&t, "s", 1000 + PAGE_TOKEN_TTL_SECS + 1)
            .unwrap_err();
        assert!(e.contains("expired"));
    }

    #[test]
    fn forged_altered_or_foreign_tokens_are_refused() {
        let codec = CursorCodec::new("k");
        let t = codec.encode(&c(), "scope", 5);
        assert!(codec.decode(&t, "scope", 5).is_ok());
        assert!(codec.decode(&t, "other scope", 5).is_err());
        assert!(CursorCodec::new("other key")
            .decode(&t, "scope", 5)
            .is_err());
        assert!(codec.decode("garbage", "scope", 5).is_err());
        assert!(codec.decode(&format!("x{t}"), "scope", 5).is_err());
        assert!(codec
            .decode(&"a".repeat(MAX_PAGE_TOKEN_BYTES + 1), "scope", 5)
            .is_err());
    }

    #[test]
    fn a_log_position_round_trips_for_its_task_only() {
        let codec = CursorCodec::new("k");
        let t = codec.encode_position(42, "acme|t-1");
        assert_eq!(codec.decode_position(&t, "acme|t-1"), Ok(42));
        assert!(codec.decode_position(&t, "acme|t-2").is_err());
        assert!(codec.decode_position(&t, "other|t-1").is_err());
        assert!(CursorCodec::new("k2")
            .decode_position(&t, "acme|t-1")
            .is_err());
        let list_token = codec.encode(&c(), "acme|t-1", 5);
        assert!(codec.decode_position(&list_token, "acme|t-1").is_err());
        assert!(codec
            .decode_position(&"a".repeat(MAX_PAGE_TOKEN_BYTES + 1), "acme|t-1")
            .is_err());
    }
}
