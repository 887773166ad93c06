//! Secrets at rest: push-config tokens and credentials are sealed with AES-256-GCM before they
//! are stored (events, snapshots, outbox, queue messages) and opened only where a webhook is
//! sent. Keys have ids: the first key seals, every key opens, so a new key can be put in front
//! and old items still open (rotation). ADR 022.

use std::path::Path;

use aes_gcm::aead::{Aead, KeyInit, OsRng, Payload};
use aes_gcm::{AeadCore, Aes256Gcm, Key, Nonce};
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;

/// What a sealed value starts with (then `<kid>:<base64url(nonce ‖ ciphertext ‖ tag)>`).
pub const SEALED_PREFIX: &str = "enc:v1:";
/// Keys one deployment may hold (the current one and those it rotated from).
pub const MAX_KEYS: usize = 16;
/// Longest key id, in bytes.
pub const MAX_KID_BYTES: usize = 64;
const NONCE_BYTES: usize = 12;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SecretsError {
    #[error("secrets key file: {0}")]
    Keys(String),
    #[error("a stored secret was sealed with key {0:?}, which is not configured")]
    UnknownKey(String),
    #[error("a stored secret does not open: {0}")]
    Corrupt(String),
    #[error("secrets key file {path}: {error}")]
    Io { path: String, error: String },
}

/// The keys secrets are sealed and opened with.
pub struct SecretBox {
    /// `(kid, cipher)`; the first seals.
    keys: Vec<(String, Aes256Gcm)>,
}

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kids: Vec<&str> = self.keys.iter().map(|(k, _)| k.as_str()).collect();
        write!(f, "SecretBox {{ kids: {kids:?} }}")
    }
}

impl SecretBox {
    /// Keys from text: one `<kid>:<base64 of 32 bytes>` per line (blank lines and `#` comments
    /// ignored), the first line the key that seals.
    pub fn from_text(text: &str) -> Result<Self, SecretsError> {
        let mut keys = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |why: &str| SecretsError::Keys(format!("line {}: {why}", n + 1));
            let (kid, key) = line
                .split_once(':')
                .ok_or_else(|| bad("expected <kid>:<base64 key>"))?;
            if kid.is_empty()
                || kid.len() > MAX_KID_BYTES
                || !kid
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            {
                return Err(bad(&format!(
                    "a key id is 1 to {MAX_KID_BYTES} letters, digits, '-', '_' or '.'"
                )));
            }
            if keys.iter().any(|(k, _)| k == kid) {
                return Err(bad(&format!("key id {kid:?} is given twice")));
            }
            let bytes = STANDARD
                .decode(key.trim())
                .map_err(|_| bad("the key is not base64"))?;
            if bytes.len() != 32 {
                return Err(bad(&format!(
                    "an AES-256 key is 32 bytes (this one has {})",
                    bytes.len()
                )));
            }
            keys.push((
                kid.to_string(),
                Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&bytes)),
            ));
        }
        if keys.is_empty() {
            return Err(SecretsError::Keys("no key given".into()));
        }
        if keys.len() > MAX_KEYS {
            return Err(SecretsError::Keys(format!(
                "at most {MAX_KEYS} keys (got {})",
                keys.len()
            )));
        }
        Ok(Self { keys })
    }

    /// A new random key's line, for a key file (`<kid>:<base64>`).
    pub fn new_key_line(kid: &str) -> String {
        let key = Aes256Gcm::generate_key(OsRng);
        format!("{kid}:{}", STANDARD.encode(key))
    }

    /// A box with one fresh random key (an in-memory store: nothing outlives the process).
    pub fn ephemeral() -> Self {
        Self::from_text(&Self::new_key_line("ephemeral")).expect("a generated key is valid")
    }

    /// The keys in `path`; when the file does not exist it is created with one new key
    /// (owner-only permissions), so a local server seals from its first start.
    pub fn load_or_create(path: &Path) -> Result<Self, SecretsError> {
        let io = |e: std::io::Error| SecretsError::Io {
            path: path.display().to_string(),
            error: e.to_string(),
        };
        match std::fs::read_to_string(path) {
            Ok(text) => Self::from_text(&text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let line = Self::new_key_line(&format!(
                    "k{}",
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| d.as_secs())
                        .unwrap_or(0)
                ));
                let text = format!(
                    "# taskledger secrets keys: <kid>:<base64 32 bytes>; the first seals, all open.\n{line}\n"
                );
                write_private(path, &text).map_err(io)?;
                Self::from_text(&text)
            }
            Err(e) => Err(io(e)),
        }
    }

    /// `plain` sealed with the current key.
    pub fn seal(&self, plain: &str) -> String {
        let (kid, cipher) = &self.keys[0];
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let sealed = cipher
            .encrypt(
                &nonce,
                Payload {
                    msg: plain.as_bytes(),
                    aad: kid.as_bytes(),
                },
            )
            .expect("AES-GCM seals any input below its length limit");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        format!("{SEALED_PREFIX}{kid}:{}", URL_SAFE_NO_PAD.encode(out))
    }

    /// The plain value of a stored one: sealed values open with their key; a value stored
    /// before sealing (no prefix) is returned as it is.
    pub fn open(&self, stored: &str) -> Result<String, SecretsError> {
        let Some(rest) = stored.strip_prefix(SEALED_PREFIX) else {
            return Ok(stored.to_string());
        };
        let (kid, data) = rest
            .split_once(':')
            .ok_or_else(|| SecretsError::Corrupt("no key id".into()))?;
        let (_, cipher) = self
            .keys
            .iter()
            .find(|(k, _)| k == kid)
            .ok_or_else(|| SecretsError::UnknownKey(kid.to_string()))?;
        let bytes = URL_SAFE_NO_PAD
            .decode(data)
            .map_err(|_| SecretsError::Corrupt("not base64url".into()))?;
        if bytes.len() < NONCE_BYTES {
            return Err(SecretsError::Corrupt("too short".into()));
        }
        let (nonce, sealed) = bytes.split_at(NONCE_BYTES);
        let plain = cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: sealed,
                    aad: kid.as_bytes(),
                },
            )
            .map_err(|_| SecretsError::Corrupt("authentication failed".into()))?;
        String::from_utf8(plain).map_err(|_| SecretsError::Corrupt("not UTF-8".into()))
    }
}

/// Opens a value that may be sealed, with the box if there is one (none: stored as given).
pub fn open_with(secrets: Option<&SecretBox>, stored: &str) -> Result<String, SecretsError> {
    match secrets {
        Some(b) => b.open(stored),
        None if stored.starts_with(SEALED_PREFIX) => Err(SecretsError::UnknownKey(
            stored[SEALED_PREFIX.len()..]
                .split(':')
                .next()
                .unwrap_or("")
                .to_string(),
        )),
        None => Ok(stored.to_string()),
    }
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    crate::files::create_new_private(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_secret_opens_and_does_not_show_its_plain_text() {
        let b = SecretBox::ephemeral();
        let sealed = b.seal("s3cr3t-credentials");
        assert!(sealed.starts_with("enc:v1:ephemeral:"), "{sealed}");
        assert!(!sealed.contains("s3cr3t"));
        assert_eq!(b.open(&sealed).unwrap(), "s3cr3t-credentials");
        // two seals of one value differ (a fresh nonce each time)
        assert_ne!(b.seal("x"), b.seal("x"));
        // a value stored before sealing reads as it is
        assert_eq!(b.open("plain-old").unwrap(), "plain-old");
    }

    #[test]
    fn after_rotation_the_new_key_seals_and_the_old_one_still_opens() {
        let old = SecretBox::new_key_line("2026-01");
        let new = SecretBox::new_key_line("2026-12");
        let before = SecretBox::from_text(&old).unwrap();
        let sealed_before = before.seal("old secret");
        let after = SecretBox::from_text(&format!("{new}\n{old}\n")).unwrap();
        assert_eq!(after.open(&sealed_before).unwrap(), "old secret");
        assert!(after.seal("new").starts_with("enc:v1:2026-12:"));
        // dropping the old key: what it sealed no longer opens, and says which key it needs
        let only_new = SecretBox::from_text(&new).unwrap();
        assert_eq!(
            only_new.open(&sealed_before).unwrap_err(),
            SecretsError::UnknownKey("2026-01".into())
        );
    }

    #[test]
    fn a_tampered_secret_does_not_open() {
        let b = SecretBox::ephemeral();
        let sealed = b.seal("value");
        let mut bytes = sealed.into_bytes();
        let last = bytes.len() - 2;
        bytes[last] = if bytes[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(bytes).unwrap();
        assert!(matches!(b.open(&tampered), Err(SecretsError::Corrupt(_))));
        // another key id spliced in does not open either (the id is authenticated)
        let other = SecretBox::from_text(&format!(
            "{}\n{}",
            SecretBox::new_key_line("a"),
            SecretBox::new_key_line("b")
        ))
        .unwrap();
        let s = other.seal("v").replacen("enc:v1:a:", "enc:v1:b:", 1);
        assert!(matches!(other.open(&s), Err(SecretsError::Corrupt(_))));
    }

    #[test]
    fn key_files_are_checked_at_the_boundaries() {
        let key = STANDARD.encode([7u8; 32]);
        assert!(SecretBox::from_text(&format!("k:{key}")).is_ok());
        assert!(SecretBox::from_text(&format!("{}:{key}", "k".repeat(MAX_KID_BYTES))).is_ok());
        assert!(SecretBox::from_text(&format!("{}:{key}", "k".repeat(MAX_KID_BYTES + 1))).is_err());
        assert!(SecretBox::from_text(&format!("k:{}", STANDARD.encode([7u8; 31]))).is_err());
        assert!(
            SecretBox::from_text(&format!("k:{key}\nk:{key}")).is_err(),
            "twice"
        );
        assert!(SecretBox::from_text("# only a comment\n").is_err());
        let lines = |n: usize| {
            (0..n)
                .map(|i| format!("k{i}:{key}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert!(SecretBox::from_text(&lines(MAX_KEYS)).is_ok());
        assert!(SecretBox::from_text(&lines(MAX_KEYS + 1)).is_err());
    }

    #[test]
    fn a_missing_key_file_is_created_private_and_read_back_the_same() {
        let dir = std::env::temp_dir().join(format!("tl-secrets-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keys");
        let first = SecretBox::load_or_create(&path).unwrap();
        let sealed = first.seal("v");
        let again = SecretBox::load_or_create(&path).unwrap();
        assert_eq!(again.open(&sealed).unwrap(), "v");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "owner only");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// The store's sealing as the application asks for it (`SecretSeal`): with keys, sealed and
/// opened by them; without, stored as given and a sealed value never opened.
#[derive(Clone)]
pub struct Seal(pub Option<std::sync::Arc<SecretBox>>);

impl std::fmt::Debug for Seal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Seal(keys)"
        } else {
            "Seal(none)"
        })
    }
}

impl taskledger_domain::ports::SecretSeal for Seal {
    fn seal(&self, plain: &str) -> String {
        match &self.0 {
            Some(b) => b.seal(plain),
            None => plain.to_string(),
        }
    }

    fn open(&self, stored: &str) -> Option<String> {
        open_with(self.0.as_deref(), stored).ok()
    }
}
