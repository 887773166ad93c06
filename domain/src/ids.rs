//! Identifiers and bounded request values as newtypes: an invalid one cannot exist past `parse`.

use serde::{Deserialize, Serialize};

/// Longest task, context, message, artifact, step or participant id or idempotency key we
/// accept, in UTF-8 bytes.
pub const MAX_ID_BYTES: usize = 256;
/// Longest tenant or subject name, in UTF-8 bytes.
pub const MAX_PRINCIPAL_BYTES: usize = 128;

fn check_id(what: &str, s: &str, max: usize) -> Result<(), String> {
    if s.is_empty() {
        return Err(format!("{what} must not be empty"));
    }
    if s.len() > max {
        return Err(format!("{what} is longer than {max} bytes"));
    }
    if s.chars().any(char::is_control) {
        return Err(format!("{what} must not contain control characters"));
    }
    Ok(())
}

macro_rules! id_newtype {
    ($(#[$m:meta])* $name:ident, $what:literal, $max:expr) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            pub fn parse(s: impl Into<String>) -> Result<Self, String> {
                let s = s.into();
                check_id($what, &s, $max)?;
                Ok(Self(s))
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl stored::Stored for $name {
            fn from_stored(s: String) -> Self {
                Self(s)
            }
        }

        impl TryFrom<String> for $name {
            type Error = String;
            fn try_from(s: String) -> Result<Self, String> {
                Self::parse(s)
            }
        }

        impl From<$name> for String {
            fn from(v: $name) -> String {
                v.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

id_newtype!(
    /// A task id: server generated, opaque to clients.
    TaskId, "task id", MAX_ID_BYTES
);
id_newtype!(
    /// A context id: server generated or the client's.
    ContextId, "contextId", MAX_ID_BYTES
);
id_newtype!(
    /// A message id, chosen by the message's author.
    MessageId, "messageId", MAX_ID_BYTES
);
id_newtype!(
    /// An artifact id, unique within its task.
    ArtifactId, "artifactId", MAX_ID_BYTES
);
id_newtype!(
    /// A plan step's id: given in the plan, else the slug of the step's name.
    StepId, "step id", MAX_ID_BYTES
);
id_newtype!(
    /// A participant's id, as the task extension's participant list and a message's
    /// `metadata.participant_id` name them.
    ParticipantId, "participant id", MAX_ID_BYTES
);
id_newtype!(
    /// A client's `Idempotency-Key` for task creation.
    IdempotencyKey, "Idempotency-Key", MAX_ID_BYTES
);
id_newtype!(
    /// The tenant a principal acts for.
    Tenant, "tenant", MAX_PRINCIPAL_BYTES
);
id_newtype!(
    /// The authenticated subject (user or service) within a tenant.
    Subject, "subject", MAX_PRINCIPAL_BYTES
);

/// Reading ids back from stored events and snapshots as they were written. `parse` checks every
/// id where it enters (the wire, an envelope, a tool call, a plan); stored facts are not checked
/// again, because before these fields were typed their values were checked less (a sender's
/// `participant_id` and the task references in extension data not at all, participant and step
/// ids only for being non-blank, child ids not for length), and a stricter read would make such
/// events unreadable. Used with `#[serde(deserialize_with)]` on the id fields of events and the
/// head, and to read the ids kept in extension data (plan steps, task references).
pub(crate) mod stored {
    use serde::{Deserialize, Deserializer};

    /// An id type that can be built from a stored string without the check.
    pub trait Stored: Sized {
        fn from_stored(s: String) -> Self;
    }

    pub fn id<'de, D: Deserializer<'de>, T: Stored>(d: D) -> Result<T, D::Error> {
        String::deserialize(d).map(T::from_stored)
    }

    pub fn opt<'de, D: Deserializer<'de>, T: Stored>(d: D) -> Result<Option<T>, D::Error> {
        Option::<String>::deserialize(d).map(|s| s.map(T::from_stored))
    }

    pub fn vec<'de, D: Deserializer<'de>, T: Stored>(d: D) -> Result<Vec<T>, D::Error> {
        Vec::<String>::deserialize(d).map(|v| v.into_iter().map(T::from_stored).collect())
    }
}

/// Who is calling: every request has one. Tasks belong to the principal that created them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Principal {
    pub tenant: Tenant,
    pub subject: Subject,
}

/// Tenant and subject of the anonymous dev principal (local server without tokens).
pub const ANONYMOUS_TENANT: &str = "default";
pub const ANONYMOUS_SUBJECT: &str = "anonymous";

impl Principal {
    /// The anonymous dev principal: `default/anonymous`.
    pub fn anonymous() -> Self {
        Self {
            tenant: Tenant(ANONYMOUS_TENANT.to_string()),
            subject: Subject(ANONYMOUS_SUBJECT.to_string()),
        }
    }

    pub fn new(tenant: &str, subject: &str) -> Result<Self, String> {
        Ok(Self {
            tenant: Tenant::parse(tenant)?,
            subject: Subject::parse(subject)?,
        })
    }
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.tenant, self.subject)
    }
}

/// How many history messages to return: unset = all, 0 = none (member omitted), N = last N.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum HistoryLength {
    #[default]
    All,
    Last(u32),
}

/// Messages a read returns when it names no `historyLength` (GetTask, the Task a subscription
/// starts with).
pub const DEFAULT_HISTORY_LENGTH: u32 = 100;
/// The most messages any read returns, whatever `historyLength` asks.
pub const MAX_HISTORY_LENGTH: u32 = 1_000;

impl HistoryLength {
    /// What a read of the whole task returns: unset is `DEFAULT_HISTORY_LENGTH`, and no more
    /// than `MAX_HISTORY_LENGTH` either way.
    pub fn for_read(self) -> Self {
        match self {
            Self::All => Self::Last(DEFAULT_HISTORY_LENGTH),
            Self::Last(n) => Self::Last(n.min(MAX_HISTORY_LENGTH)),
        }
    }

    /// At most `MAX_HISTORY_LENGTH`; unset stays unset (where the server's default is already
    /// bounded, as a send's answer and a ListTasks page are).
    pub fn at_most_max(self) -> Self {
        match self {
            Self::Last(n) => Self::Last(n.min(MAX_HISTORY_LENGTH)),
            all => all,
        }
    }

    pub fn parse(v: Option<i32>) -> Result<Self, String> {
        match v {
            None => Ok(Self::All),
            Some(n) if n < 0 => Err(format!("historyLength must not be negative (got {n})")),
            Some(n) => Ok(Self::Last(n as u32)),
        }
    }
}

/// Smallest, largest and default ListTasks page size.
pub const PAGE_SIZE_MIN: i32 = 1;
pub const PAGE_SIZE_MAX: i32 = 100;
pub const PAGE_SIZE_DEFAULT: i32 = 50;

/// A ListTasks page size within `PAGE_SIZE_MIN..=PAGE_SIZE_MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageSize(u32);

impl PageSize {
    pub fn parse(v: Option<i32>) -> Result<Self, String> {
        match v {
            None => Ok(Self(PAGE_SIZE_DEFAULT as u32)),
            Some(n) if (PAGE_SIZE_MIN..=PAGE_SIZE_MAX).contains(&n) => Ok(Self(n as u32)),
            Some(n) => Err(format!(
                "pageSize must be between {PAGE_SIZE_MIN} and {PAGE_SIZE_MAX} (got {n})"
            )),
        }
    }
    pub fn get(self) -> u32 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_at_and_past_the_length_limit() {
        assert!(TaskId::parse("a".repeat(MAX_ID_BYTES)).is_ok());
        assert!(TaskId::parse("a".repeat(MAX_ID_BYTES + 1)).is_err());
        assert!(MessageId::parse("").is_err());
        assert!(ContextId::parse("a\nb").is_err());
        assert!(Tenant::parse("t".repeat(MAX_PRINCIPAL_BYTES)).is_ok());
        assert!(Tenant::parse("t".repeat(MAX_PRINCIPAL_BYTES + 1)).is_err());
    }

    #[test]
    fn step_and_participant_ids_at_and_past_the_length_limit() {
        assert!(StepId::parse("s".repeat(MAX_ID_BYTES)).is_ok());
        assert!(StepId::parse("s".repeat(MAX_ID_BYTES + 1)).is_err());
        assert!(ParticipantId::parse("p".repeat(MAX_ID_BYTES)).is_ok());
        assert!(ParticipantId::parse("p".repeat(MAX_ID_BYTES + 1)).is_err());
        // bytes, not characters: 128 two-byte characters are at the limit, one more is past it
        assert!(ParticipantId::parse("é".repeat(MAX_ID_BYTES / 2)).is_ok());
        assert!(ParticipantId::parse("é".repeat(MAX_ID_BYTES / 2 + 1)).is_err());
        for bad in ["", "a\tb", "a\u{7f}"] {
            assert!(StepId::parse(bad).is_err(), "{bad:?}");
            assert!(ParticipantId::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            ParticipantId::parse("").unwrap_err(),
            "participant id must not be empty"
        );
        assert_eq!(
            StepId::parse("s".repeat(MAX_ID_BYTES + 1)).unwrap_err(),
            "step id is longer than 256 bytes"
        );
        // lenient, like the other ids: spaces, punctuation and any case are fine
        for ok in ["write-it", "ann", "Ann Smith", "bob@example.com", " x "] {
            assert!(StepId::parse(ok).is_ok() && ParticipantId::parse(ok).is_ok());
        }
    }

    #[test]
    fn the_new_ids_serialise_as_plain_strings() {
        let p = ParticipantId::parse("ann").unwrap();
        assert_eq!(serde_json::to_string(&p).unwrap(), r#""ann""#);
        assert_eq!(
            serde_json::from_str::<ParticipantId>(r#""ann""#).unwrap(),
            p
        );
        assert!(serde_json::from_str::<StepId>(r#""""#).is_err());
    }

    #[test]
    fn page_size_bounds() {
        assert_eq!(PageSize::parse(None).unwrap().get(), 50);
        assert_eq!(PageSize::parse(Some(PAGE_SIZE_MIN)).unwrap().get(), 1);
        assert_eq!(PageSize::parse(Some(PAGE_SIZE_MAX)).unwrap().get(), 100);
        assert!(PageSize::parse(Some(0)).is_err());
        assert!(PageSize::parse(Some(101)).is_err());
    }

    #[test]
    fn history_length_rules() {
        assert_eq!(HistoryLength::parse(None).unwrap(), HistoryLength::All);
        assert_eq!(
            HistoryLength::All.for_read(),
            HistoryLength::Last(DEFAULT_HISTORY_LENGTH)
        );
        assert_eq!(
            HistoryLength::Last(MAX_HISTORY_LENGTH).for_read(),
            HistoryLength::Last(MAX_HISTORY_LENGTH)
        );
        assert_eq!(
            HistoryLength::Last(MAX_HISTORY_LENGTH + 1).for_read(),
            HistoryLength::Last(MAX_HISTORY_LENGTH)
        );
        assert_eq!(HistoryLength::All.at_most_max(), HistoryLength::All);
        assert_eq!(
            HistoryLength::Last(MAX_HISTORY_LENGTH + 1).at_most_max(),
            HistoryLength::Last(MAX_HISTORY_LENGTH)
        );
        assert_eq!(
            HistoryLength::parse(Some(0)).unwrap(),
            HistoryLength::Last(0)
        );
        assert_eq!(
            HistoryLength::parse(Some(3)).unwrap(),
            HistoryLength::Last(3)
        );
        assert!(HistoryLength::parse(Some(-1)).is_err());
    }
}
