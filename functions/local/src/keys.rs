//! The keys a local server keeps beside its data: the one signing ListTasks page tokens and the
//! set sealing push-config secrets (each made at first start, or given).

use std::sync::Arc;

use taskledger_infra::secrets::SecretBox;

use crate::{Config, LocalError, Storage};

/// File under the data directory holding the key that signs ListTasks page tokens.
pub const CURSOR_KEY_FILE: &str = "cursor.key";

/// File in the data directory holding the keys that seal push-config secrets.
pub const SECRETS_KEY_FILE: &str = "secrets.keys";

/// The keys push-config secrets are sealed with (`Config::secrets_key_file`).
pub(crate) fn secrets(config: &Config) -> Result<Option<Arc<SecretBox>>, LocalError> {
    let path = match (&config.secrets_key_file, &config.storage) {
        (Some(p), _) => p.clone(),
        (None, Storage::Dir(dir)) => dir.join(SECRETS_KEY_FILE),
        (None, Storage::Memory) => return Ok(Some(Arc::new(SecretBox::ephemeral()))),
        (None, Storage::Dynamo { .. }) => {
            tracing::warn!(
                "push-config tokens and credentials are stored as given: \
                 pass --secrets-key-file to seal them (ADR 022)"
            );
            return Ok(None);
        }
    };
    Ok(Some(Arc::new(SecretBox::load_or_create(&path)?)))
}

pub(crate) fn cursor_key(config: &Config) -> Result<Vec<u8>, LocalError> {
    if let Some(k) = &config.cursor_key {
        return Ok(k.clone());
    }
    let storage = &config.storage;
    let fresh = || {
        format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        )
        .into_bytes()
    };
    if let Ok(k) = std::env::var("TASKLEDGER_CURSOR_KEY") {
        return Ok(k.into_bytes());
    }
    let Storage::Dir(dir) = storage else {
        return Ok(fresh());
    };
    let path = dir.join(CURSOR_KEY_FILE);
    let err = |source| LocalError::CursorKey {
        path: path.display().to_string(),
        source,
    };
    match std::fs::read(&path) {
        Ok(k) if !k.is_empty() => Ok(k),
        Ok(_) | Err(_) => {
            let k = fresh();
            taskledger_infra::files::write_private(&path, &k).map_err(err)?;
            Ok(k)
        }
    }
}
