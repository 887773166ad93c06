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
    secrets_for(&config.storage, config.secrets_key_file.as_deref())
}

/// What signs, verifies and seals around an archive (`export`, `import`): the same keys and
/// webhook policy the server with these settings uses.
pub fn archive_keys(
    storage: &Storage,
    secrets_key_file: Option<&std::path::Path>,
    signing_key_pem: Option<&str>,
    policy: taskledger_domain::push::AddressPolicy,
) -> Result<crate::archive::ArchiveKeys, LocalError> {
    let signer = match signing_key_pem {
        Some(pem) => Some(
            Arc::new(taskledger_infra::webhook::PushSigner::from_pem(pem)?)
                as Arc<dyn taskledger_domain::ports::CardSigner>,
        ),
        None => None,
    };
    if let Storage::Dir(dir) = storage {
        // The keys live beside the store, which may not exist yet (an import into a new one).
        taskledger_infra::files::private_dir(dir)?;
    }
    let seal = secrets_for(storage, secrets_key_file)?.map(|b| {
        Arc::new(taskledger_infra::secrets::Seal(Some(b)))
            as Arc<dyn taskledger_domain::ports::SecretSeal>
    });
    Ok(crate::archive::ArchiveKeys {
        signer,
        seal,
        policy: Some(policy),
    })
}

fn secrets_for(
    storage: &Storage,
    secrets_key_file: Option<&std::path::Path>,
) -> Result<Option<Arc<SecretBox>>, LocalError> {
    let path = match (secrets_key_file.map(|p| p.to_path_buf()), storage) {
        (Some(p), _) => p,
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
