//! What the board's sessions need of the data directory: the key they are signed with (made at
//! first start) and the live sessions (an allowlist, `BoardSessions`), kept in a file so a
//! restart ends none — each is checked against its credential again on its next use, so one
//! whose token left the configuration opens nothing. Without a data directory (in memory,
//! DynamoDB) both live in the process: a restart then ends every session.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use taskledger_app::http::{BoardSessions, LiveSession};

use taskledger_infra::files;

/// File in the data directory holding the key board sessions are signed with.
pub const SESSION_KEY_FILE: &str = "board-session.key";
/// File in the data directory holding the live sessions (a JSON line each).
pub const SESSIONS_FILE: &str = "board-sessions";
/// The file signed-out sessions were listed in before sessions were an allowlist: removed.
const OLD_REVOKED_FILE: &str = "board-sessions.revoked";
/// Live sessions one principal may hold; past it, signing in is refused until one ends.
pub const MAX_SESSIONS_PER_PRINCIPAL: usize = 16;
/// Live sessions the server holds at most; past it, signing in is refused until one ends.
pub const MAX_SESSIONS: usize = 10_000;
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

/// The live board sessions, in memory and (with a data directory) in `SESSIONS_FILE`.
#[derive(Debug)]
pub struct Sessions {
    path: Option<PathBuf>,
    live: Mutex<HashMap<String, LiveSession>>,
}

impl Sessions {
    /// The sessions kept in `dir` (read now, ended ones dropped); none kept without one.
    pub fn open(dir: Option<&Path>) -> Arc<Self> {
        let path = dir.map(|d| d.join(SESSIONS_FILE));
        if let Some(d) = dir {
            let _ = std::fs::remove_file(d.join(OLD_REVOKED_FILE));
        }
        let now = now();
        let live = path
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map(|text| {
                text.lines()
                    .filter_map(|l| serde_json::from_str::<LiveSession>(l).ok())
                    .filter(|s| s.exp > now)
                    .take(MAX_SESSIONS)
                    // Checked again on first use: the configuration may have changed since.
                    .map(|s| LiveSession { checked: 0, ..s })
                    .map(|s| (s.sid.clone(), s))
                    .collect()
            })
            .unwrap_or_default();
        Arc::new(Self {
            path,
            live: Mutex::new(live),
        })
    }

    fn save(&self, live: &HashMap<String, LiveSession>) {
        let Some(path) = &self.path else { return };
        let text: String = live
            .values()
            .filter_map(|s| serde_json::to_string(s).ok())
            .map(|l| l + "\n")
            .collect();
        if let Err(e) = files::write_private(path, text.as_bytes()) {
            tracing::warn!(path = %path.display(), error = %e, "cannot save the board sessions");
        }
    }

    pub fn len(&self) -> usize {
        self.live.lock().map(|m| m.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl BoardSessions for Sessions {
    fn start(&self, session: LiveSession) -> Result<(), String> {
        let Ok(mut live) = self.live.lock() else {
            return Err("the server cannot keep sessions now".into());
        };
        let now = now();
        live.retain(|_, s| s.exp > now);
        let theirs = live
            .values()
            .filter(|s| s.tenant == session.tenant && s.subject == session.subject)
            .count();
        if theirs >= MAX_SESSIONS_PER_PRINCIPAL {
            return Err(format!(
                "You have {theirs} board sessions open, the most one may: sign out of one (or \
                 wait until one ends) first."
            ));
        }
        if live.len() >= MAX_SESSIONS {
            return Err(format!(
                "The server holds {MAX_SESSIONS} board sessions, the most it may: try again \
                 once some have ended."
            ));
        }
        live.insert(session.sid.clone(), session);
        self.save(&live);
        Ok(())
    }

    fn get(&self, sid: &str) -> Option<LiveSession> {
        self.live.lock().ok()?.get(sid).cloned()
    }

    fn checked(&self, sid: &str, at: u64) {
        if let Ok(mut live) = self.live.lock() {
            if let Some(s) = live.get_mut(sid) {
                s.checked = at;
            }
        }
    }

    fn end(&self, sid: &str) {
        if let Ok(mut live) = self.live.lock() {
            if live.remove(sid).is_some() {
                self.save(&live);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(sid: &str, subject: &str, exp: u64) -> LiveSession {
        LiveSession {
            sid: sid.into(),
            tenant: "acme".into(),
            subject: subject.into(),
            exp,
            print: taskledger_app::identity::CredentialPrint::of_token(subject),
            checked: 0,
        }
    }

    #[test]
    fn sessions_survive_a_restart_and_ended_ones_do_not() {
        let dir = std::env::temp_dir().join(format!("tl-ses-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(OLD_REVOKED_FILE), "old 1\n").unwrap();
        let s = Sessions::open(Some(&dir));
        assert!(!dir.join(OLD_REVOKED_FILE).exists(), "the old list is gone");
        s.start(live("s1", "alice", now() + 600)).unwrap();
        s.start(live("s2", "bob", now() + 600)).unwrap();
        s.end("s2");
        let again = Sessions::open(Some(&dir));
        assert!(again.get("s1").is_some() && again.get("s2").is_none());
        std::fs::write(
            dir.join(SESSIONS_FILE),
            format!(
                "{}\n{}\nnot json\n",
                serde_json::to_string(&live("old", "alice", now() - 1)).unwrap(),
                serde_json::to_string(&live("new", "alice", now() + 60)).unwrap()
            ),
        )
        .unwrap();
        let reread = Sessions::open(Some(&dir));
        assert!(reread.get("old").is_none() && reread.get("new").is_some());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            reread.start(live("s3", "carol", now() + 60)).unwrap();
            let mode = std::fs::metadata(dir.join(SESSIONS_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_full_principal_or_server_refuses_new_sessions_and_forgets_none() {
        let s = Sessions::open(None);
        for i in 0..MAX_SESSIONS_PER_PRINCIPAL {
            s.start(live(&format!("a{i}"), "alice", now() + 600))
                .unwrap();
        }
        let refused = s.start(live("one-more", "alice", now() + 600)).unwrap_err();
        assert!(refused.contains("16 board sessions open"), "{refused}");
        assert!(
            s.get("a0").is_some(),
            "no session was forgotten to make room"
        );
        s.start(live("b0", "bob", now() + 600)).unwrap();
        // One ends: there is room again.
        s.end("a3");
        s.start(live("one-more", "alice", now() + 600)).unwrap();
        // The server's own bound.
        let full = Sessions::open(None);
        for i in 0..MAX_SESSIONS {
            full.start(live(
                &format!("s{i}"),
                &format!("p{}", i / MAX_SESSIONS_PER_PRINCIPAL),
                now() + 600,
            ))
            .unwrap();
        }
        assert!(full
            .start(live("x", "newcomer", now() + 600))
            .unwrap_err()
            .contains("10000 board sessions"));
        assert!(full.get("s0").is_some());
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
