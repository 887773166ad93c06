//! The application layer's error: a domain refusal, a protocol error, or a store failure,
//! each mapped to its A2A kind through the one table in `taskledger_domain::error`.

use std::collections::BTreeMap;

use taskledger_domain::error::{DomainError, ErrorKind};
use taskledger_domain::ports::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Domain(#[from] DomainError),
    /// Refused before the domain was asked (envelope, version, capability, parameters).
    #[error("{message}")]
    Protocol {
        kind: ErrorKind,
        message: String,
        metadata: BTreeMap<String, String>,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl AppError {
    pub fn protocol(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self::Protocol {
            kind,
            message: message.into(),
            metadata: BTreeMap::new(),
        }
    }

    pub fn with(mut self, key: &str, value: impl Into<String>) -> Self {
        if let Self::Protocol { metadata, .. } = &mut self {
            metadata.insert(key.to_string(), value.into());
        }
        self
    }

    pub fn invalid_params(field: impl Into<String>, reason: impl std::fmt::Display) -> Self {
        let field = field.into();
        Self::protocol(ErrorKind::InvalidParams, format!("{field}: {reason}")).with("field", field)
    }

    pub fn task_not_found(task_id: &str) -> Self {
        DomainError::TaskNotFound {
            task_id: task_id.to_string(),
        }
        .into()
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Domain(d) => d.kind(),
            Self::Protocol { kind, .. } => *kind,
            Self::Store(StoreError::Unavailable(_) | StoreError::Conflict(_)) => {
                ErrorKind::Unavailable
            }
            Self::Store(StoreError::TooLarge(_)) => ErrorKind::InvalidParams,
            Self::Store(_) => ErrorKind::Internal,
        }
    }

    /// `ErrorInfo.metadata`.
    pub fn metadata(&self) -> BTreeMap<String, String> {
        match self {
            Self::Domain(d) => d.metadata(),
            Self::Protocol { metadata, .. } => metadata.clone(),
            Self::Store(StoreError::Conflict(id)) => {
                BTreeMap::from([("taskId".to_string(), id.to_string())])
            }
            Self::Store(_) => BTreeMap::new(),
        }
    }

    /// The message a client sees: specific for its own mistakes, generic for ours.
    pub fn client_message(&self) -> String {
        match self.kind() {
            ErrorKind::Internal => ErrorKind::Internal.wire().message.to_string(),
            ErrorKind::Unavailable => match self {
                Self::Store(StoreError::Conflict(id)) => {
                    format!("task {id} is being changed by other requests; retry the request")
                }
                _ => ErrorKind::Unavailable.wire().message.to_string(),
            },
            _ => self.to_string(),
        }
    }

    /// Our fault rather than the client's: logged at error level.
    pub fn is_server_side(&self) -> bool {
        matches!(self.kind(), ErrorKind::Internal | ErrorKind::Unavailable)
    }
}
