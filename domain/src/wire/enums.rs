//! The proto enums (`TaskState`, `Role`, draft 1.1's `ElicitationState`): printed as their names, read from names or numbers.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

macro_rules! proto_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident = $num:literal => $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),+ }
            }
            pub const fn number(self) -> i32 {
                match self { $(Self::$variant => $num),+ }
            }
            pub fn from_name(s: &str) -> Option<Self> {
                match s { $($text => Some(Self::$variant),)+ _ => None }
            }
            pub fn from_number(n: i64) -> Option<Self> {
                match n { $($num => Some(Self::$variant),)+ _ => None }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let v = Value::deserialize(d)?;
                let parsed = match &v {
                    Value::String(s) => Self::from_name(s),
                    Value::Number(n) => n.as_i64().and_then(Self::from_number),
                    _ => None,
                };
                parsed.ok_or_else(|| serde::de::Error::custom(format!(
                    concat!("invalid ", stringify!($name), " {}; expected one of: ", $($text, " "),+), v
                )))
            }
        }
    };
}

proto_enum!(
    /// `lf.a2a.v1.TaskState`.
    TaskState {
        Unspecified = 0 => "TASK_STATE_UNSPECIFIED",
        Submitted = 1 => "TASK_STATE_SUBMITTED",
        Working = 2 => "TASK_STATE_WORKING",
        Completed = 3 => "TASK_STATE_COMPLETED",
        Failed = 4 => "TASK_STATE_FAILED",
        Canceled = 5 => "TASK_STATE_CANCELED",
        InputRequired = 6 => "TASK_STATE_INPUT_REQUIRED",
        Rejected = 7 => "TASK_STATE_REJECTED",
        AuthRequired = 8 => "TASK_STATE_AUTH_REQUIRED",
    }
);

impl TaskState {
    /// Every state a task can be in (not `Unspecified`), in proto order.
    pub const ALL: [TaskState; 8] = [
        Self::Submitted,
        Self::Working,
        Self::Completed,
        Self::Failed,
        Self::Canceled,
        Self::InputRequired,
        Self::Rejected,
        Self::AuthRequired,
    ];

    /// Completed, failed, canceled or rejected: the task never changes again.
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Canceled | Self::Rejected
        )
    }
    /// Input- or auth-required: the agent waits for the client.
    pub const fn is_interrupted(self) -> bool {
        matches!(self, Self::InputRequired | Self::AuthRequired)
    }
}

proto_enum!(
    /// `lf.a2a.v1.Role`.
    Role {
        Unspecified = 0 => "ROLE_UNSPECIFIED",
        User = 1 => "ROLE_USER",
        Agent = 2 => "ROLE_AGENT",
    }
);

proto_enum!(
    /// `lf.a2a.v1.ElicitationState` (draft A2A 1.1, a2aproject/A2A#2149): where a request for
    /// client input stands. WAITING and BLOCKED are open; RESOLVED is final.
    ElicitationState {
        Unspecified = 0 => "ELICITATION_STATE_UNSPECIFIED",
        Waiting = 1 => "ELICITATION_STATE_WAITING",
        Blocked = 2 => "ELICITATION_STATE_BLOCKED",
        Resolved = 3 => "ELICITATION_STATE_RESOLVED",
    }
);
