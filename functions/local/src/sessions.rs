//! What the board's sessions need of the data directory: the key they are signed with (made at
//! first start) and the sessions signed out before they expired, kept in a file so a restart
//! forgets none. Without a data directory (in memory, DynamoDB) both live in the process: a
//! restart then ends every session.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use taskledger_app::http::SessionRevocations;

use taskledger_infra::files;

/// File in the data directory holding the key board sessions are signed with.
pub const SESSION_KEY_FILE: &str = "board-session.key";
/// File in the data directory listing signed-out sessions (`<id> <expiry>` a line).
pub const REVOKED_FILE: &str = "board-sessions.revoked";
/// Signed-out sessions remembered at most; past it, the one that expires first is forgotten
/// (each is remembered only until it would have expired anyway).
pub const MAX_REVOKED_SESSIONS: usize = 10_000;
/// Bytes of a session key.
const KEY_BYTES: usize = 32;

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn fresh_key() -> Vec<u8> {
    let mut k = Vec::with_capacity(KEY_BYTES);
    while k.len() < KEY_BYTES {
        k.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    }
    k.truncate(KEY_BYTES);
    k
}

/// The session key kept in `dir` (made, private to the owner, at first start); a fresh one in
/// memory without a directory.
pub fn session_key(dir: Option<&Path>) -> std::io::Result<Arc<[u8]>> {
    let Some(dir) = dir else {
        return Ok(fresh_key().into());
    };
    let path = dir.join(SESSION_KEY_FILE);
    match std::fs::read(&path) {
        Ok(k) if k.len() >= KEY_BYTES => Ok(k.into()),
        _ => {
            let k = fresh_key();
            files::write_private(&path, &k)?;
            Ok(k.into())
        }
    }
}

/// Signed-out sessions, in memory and (with a data directory) in `REVOKED_FILE`.
#[derive(Debug)]
pub struct Revocations {
    path: Option<PathBuf>,
    ids: Mutex<HashMap<String, u64>>,
}

impl Revocations {
    /// The revocations kept in `dir` (read now, expired ones dropped); none kept without one.
    pub fn open(dir: Option<&Path>) -> Arc<Self> {
        let path = dir.map(|d| d.join(REVOKED_FILE));
        let now = now();
        let ids = path
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map(|text| {
                text.lines()
                    .filter_map(|l| l.split_once(' '))
                    .filter_map(|(id, exp)| Some((id.to_string(), exp.trim().parse::<u64>().ok()?)))
                    .filter(|(_, exp)| *exp > now)
                    .take(MAX_REVOKED_SESSIONS)
                    .collect()
            })
            .unwrap_or_default();
        Arc::new(Self {
            path,
            ids: Mutex::new(ids),
        })
    }

    fn save(&self, ids: &HashMap<String, u64>) {
        let Some(path) = &self.path else { return };
        let text: String = ids
            .iter()
            .map(|(id, exp)| format!("{id} {exp}\n"))
            .collect();
        if let Err(e) = files::write_private(path, text.as_bytes()) {
            tracing::warn!(path = %path.display(), error = %e, "cannot save the signed-out board sessions");
        }
    }

    pub fn len(&self) -> usize {
        self.ids.lock().map(|m| m.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl SessionRevocations for Revocations {
    fn revoke(&self, id: &str, expires: u64) {
        let Ok(mut ids) = self.ids.lock() else { return };
        let now = now();
        ids.retain(|_, exp| *exp > now);
        ids.insert(id.to_string(), expires);
        while ids.len() > MAX_REVOKED_SESSIONS {
            let first = ids
                .iter()
                .min_by_key(|(_, exp)| **exp)
                .map(|(id, _)| id.clone());
            match first {
                Some(f) => ids.remove(&f),
                None => break,
            };
        }
        self.save(&ids);
    }

    fn is_revoked(&self, id: &str) -> bool {
        self.ids.lock().map(|m| m.contains_key(id)).unwrap_or(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revocations_survive_a_restart_and_expired_ones_are_dropped() {
        let dir = std::env::temp_dir().join(format!("tl-rev-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let r = Revocations::open(Some(&dir));
        r.revoke("s1", now() + 600);
        r.revoke("s2", now() + 600);
        assert!(r.is_revoked("s1"));
        let again = Revocations::open(Some(&dir));
        assert!(again.is_revoked("s1") && again.is_revoked("s2") && !again.is_revoked("s3"));
        std::fs::write(
            dir.join(REVOKED_FILE),
            format!("old {}\nnew {}\n", now() - 1, now() + 60),
        )
        .unwrap();
        let reread = Revocations::open(Some(&dir));
        assert!(!reread.is_revoked("old") && reread.is_revoked("new"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn at_most_the_bound_is_remembered_and_the_first_to_expire_goes_first() {
        let r = Revocations::open(None);
        for i in 0..MAX_REVOKED_SESSIONS {
            r.revoke(&format!("s{i}"), now() + 1000 + i as u64);
        }
        assert_eq!(r.len(), MAX_REVOKED_SESSIONS);
        r.revoke("one-more", now() + 100_000);
        assert_eq!(r.len(), MAX_REVOKED_SESSIONS);
        assert!(!r.is_revoked("s0"), "the first to expire was forgotten");
        assert!(r.is_revoked("s1") && r.is_revoked("one-more"));
    }

    #[test]
    fn the_session_key_is_kept_and_private() {
        let dir = std::env::temp_dir().join(format!("tl-key-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let k = session_key(Some(&dir)).unwrap();
        assert_eq!(k.len(), KEY_BYTES);
        assert_eq!(session_key(Some(&dir)).unwrap(), k);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join(SESSION_KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_ne!(session_key(None).unwrap(), k);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
