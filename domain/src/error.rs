//! Domain errors and the one table that maps every error to the wire (JSON-RPC code, HTTP
//! status, gRPC status, ErrorInfo reason): the A2A 1.0.1 column, and the six 1.0.0 values that
//! differ for clients pinned to that revision (`ErrorTable`).

use std::collections::BTreeMap;

use crate::wire::TaskState;

/// Every error a client can see, by A2A name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    JsonParse,
    InvalidRequest,
    MethodNotFound,
    InvalidParams,
    Internal,
    TaskNotFound,
    TaskNotCancelable,
    PushNotificationNotSupported,
    UnsupportedOperation,
    ContentTypeNotSupported,
    InvalidAgentResponse,
    ExtendedAgentCardNotConfigured,
    ExtensionSupportRequired,
    VersionNotSupported,
    Unauthenticated,
    PayloadTooLarge,
    /// The request body's own media type is not JSON (HTTP+JSON: 415, RFC 9110); not to be
    /// confused with `ContentTypeNotSupported`, a part's or output's media type.
    UnsupportedMediaType,
    /// An HTTP+JSON path that exists, with an HTTP method it does not take (405).
    MethodNotAllowed,
    Unavailable,
    /// Draft A2A 1.1: `ifGenerationMatch` named a generation the task has left.
    TaskGenerationMismatch,
    /// Over the principal's request rate (an implementation-defined JSON-RPC server error).
    RateLimited,
    /// The request body did not arrive in time (a slow or stalled client).
    RequestTimeout,
    /// Refused for where it comes from: a cross-site request, or a Host the server does not
    /// answer to (DNS rebinding), on a server that takes no credentials.
    Forbidden,
    /// taskledger's events extension: a continuation cursor names events the store no longer
    /// keeps (the task's retention ended; its archive holds them).
    EventsGone,
}

impl ErrorKind {
    /// Every kind, in declaration order: the one list of them (the bindings' tests, the
    /// gRPC codes' test). `position` does not compile when a kind is added to `ErrorKind`
    /// without being added here.
    pub const ALL: [ErrorKind; 24] = [
        ErrorKind::JsonParse,
        ErrorKind::InvalidRequest,
        ErrorKind::MethodNotFound,
        ErrorKind::InvalidParams,
        ErrorKind::Internal,
        ErrorKind::TaskNotFound,
        ErrorKind::TaskNotCancelable,
        ErrorKind::PushNotificationNotSupported,
        ErrorKind::UnsupportedOperation,
        ErrorKind::ContentTypeNotSupported,
        ErrorKind::InvalidAgentResponse,
        ErrorKind::ExtendedAgentCardNotConfigured,
        ErrorKind::ExtensionSupportRequired,
        ErrorKind::VersionNotSupported,
        ErrorKind::Unauthenticated,
        ErrorKind::PayloadTooLarge,
        ErrorKind::UnsupportedMediaType,
        ErrorKind::MethodNotAllowed,
        ErrorKind::Unavailable,
        ErrorKind::TaskGenerationMismatch,
        ErrorKind::RateLimited,
        ErrorKind::RequestTimeout,
        ErrorKind::Forbidden,
        ErrorKind::EventsGone,
    ];
}

/// Its position in `ALL` (an exhaustive match: a new kind must be listed).
const fn position(kind: ErrorKind) -> usize {
    use ErrorKind::*;
    match kind {
        JsonParse => 0,
        InvalidRequest => 1,
        MethodNotFound => 2,
        InvalidParams => 3,
        Internal => 4,
        TaskNotFound => 5,
        TaskNotCancelable => 6,
        PushNotificationNotSupported => 7,
        UnsupportedOperation => 8,
        ContentTypeNotSupported => 9,
        InvalidAgentResponse => 10,
        ExtendedAgentCardNotConfigured => 11,
        ExtensionSupportRequired => 12,
        VersionNotSupported => 13,
        Unauthenticated => 14,
        PayloadTooLarge => 15,
        UnsupportedMediaType => 16,
        MethodNotAllowed => 17,
        Unavailable => 18,
        TaskGenerationMismatch => 19,
        RateLimited => 20,
        RequestTimeout => 21,
        Forbidden => 22,
        EventsGone => 23,
    }
}

// Checked when compiling: each listed kind sits at its own position, so none is listed twice
// and (with the exhaustive match) none is missing.
const _: () = {
    let mut i = 0;
    while i < ErrorKind::ALL.len() {
        assert!(position(ErrorKind::ALL[i]) == i);
        i += 1;
    }
};

/// Which revision of the spec's mapping table the HTTP and gRPC codes follow: 1.0.1 (the
/// current spec, the default) or 1.0.0, whose six differing rows older clients and the 1.0
/// conformance kit at 357c4a8 expect. JSON-RPC codes and reasons are the same in both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ErrorTable {
    #[default]
    V1_0_1,
    V1_0_0,
}

impl ErrorTable {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim() {
            "1.0.1" | "" => Ok(Self::V1_0_1),
            "1.0.0" => Ok(Self::V1_0_0),
            other => Err(format!("error table {other:?}: expected 1.0.1 or 1.0.0")),
        }
    }
}

/// How one error kind appears on each binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireCode {
    pub json_rpc: i32,
    pub http: u16,
    pub grpc: &'static str,
    /// `google.rpc.ErrorInfo.reason`.
    pub reason: &'static str,
    /// The standard human message.
    pub message: &'static str,
}

/// `google.rpc.ErrorInfo.domain` for A2A errors.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";

impl ErrorKind {
    /// The mapping table (A2A spec §3.3.2/§5.4, 1.0.1 column; §9.5 standard JSON-RPC codes).
    pub const fn wire(self) -> WireCode {
        use ErrorKind::*;
        const fn w(
            json_rpc: i32,
            http: u16,
            grpc: &'static str,
            reason: &'static str,
            message: &'static str,
        ) -> WireCode {
            WireCode {
                json_rpc,
                http,
                grpc,
                reason,
                message,
            }
        }
        match self {
            JsonParse => w(
                -32700,
                400,
                "INVALID_ARGUMENT",
                "PARSE_ERROR",
                "Invalid JSON payload",
            ),
            InvalidRequest => w(
                -32600,
                400,
                "INVALID_ARGUMENT",
                "INVALID_REQUEST",
                "Request payload validation error",
            ),
            MethodNotFound => w(
                -32601,
                404,
                "UNIMPLEMENTED",
                "METHOD_NOT_FOUND",
                "Method not found",
            ),
            InvalidParams => w(
                -32602,
                400,
                "INVALID_ARGUMENT",
                "INVALID_PARAMS",
                "Invalid parameters",
            ),
            Internal => w(-32603, 500, "INTERNAL", "INTERNAL", "Internal error"),
            TaskNotFound => w(-32001, 404, "NOT_FOUND", "TASK_NOT_FOUND", "Task not found"),
            TaskNotCancelable => w(
                -32002,
                400,
                "FAILED_PRECONDITION",
                "TASK_NOT_CANCELABLE",
                "Task cannot be canceled",
            ),
            PushNotificationNotSupported => w(
                -32003,
                400,
                "FAILED_PRECONDITION",
                "PUSH_NOTIFICATION_NOT_SUPPORTED",
                "Push Notification is not supported",
            ),
            UnsupportedOperation => w(
                -32004,
                400,
                "FAILED_PRECONDITION",
                "UNSUPPORTED_OPERATION",
                "This operation is not supported",
            ),
            ContentTypeNotSupported => w(
                -32005,
                400,
                "INVALID_ARGUMENT",
                "CONTENT_TYPE_NOT_SUPPORTED",
                "Incompatible content types",
            ),
            InvalidAgentResponse => w(
                -32006,
                500,
                "INTERNAL",
                "INVALID_AGENT_RESPONSE",
                "Invalid agent response",
            ),
            ExtendedAgentCardNotConfigured => w(
                -32007,
                400,
                "FAILED_PRECONDITION",
                "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
                "Extended agent card is not configured",
            ),
            ExtensionSupportRequired => w(
                -32008,
                400,
                "FAILED_PRECONDITION",
                "EXTENSION_SUPPORT_REQUIRED",
                "Extension support required",
            ),
            VersionNotSupported => w(
                -32009,
                400,
                "FAILED_PRECONDITION",
                "VERSION_NOT_SUPPORTED",
                "Protocol version not supported",
            ),
            Unauthenticated => w(
                -32600,
                401,
                "UNAUTHENTICATED",
                "UNAUTHENTICATED",
                "Authentication required",
            ),
            PayloadTooLarge => w(
                -32600,
                413,
                "INVALID_ARGUMENT",
                "PAYLOAD_TOO_LARGE",
                "Request payload too large",
            ),
            UnsupportedMediaType => w(
                -32005,
                415,
                "INVALID_ARGUMENT",
                "CONTENT_TYPE_NOT_SUPPORTED",
                "Unsupported media type",
            ),
            MethodNotAllowed => w(
                -32601,
                405,
                "UNIMPLEMENTED",
                "METHOD_NOT_ALLOWED",
                "Method not allowed",
            ),
            Unavailable => w(
                -32603,
                503,
                "UNAVAILABLE",
                "UNAVAILABLE",
                "Service temporarily unavailable",
            ),
            TaskGenerationMismatch => w(
                -32010,
                409,
                "ABORTED",
                "TASK_GENERATION_MISMATCH",
                "Task generation mismatch",
            ),
            RateLimited => w(
                -32029,
                429,
                "RESOURCE_EXHAUSTED",
                "RATE_LIMITED",
                "Too many requests",
            ),
            RequestTimeout => w(
                -32600,
                408,
                "DEADLINE_EXCEEDED",
                "REQUEST_TIMEOUT",
                "The request body did not arrive in time",
            ),
            Forbidden => w(
                -32600,
                403,
                "PERMISSION_DENIED",
                "FORBIDDEN",
                "Request refused",
            ),
            EventsGone => w(
                -32011,
                410,
                "NOT_FOUND",
                "EVENTS_GONE",
                "The events are no longer kept",
            ),
        }
    }
}

impl ErrorKind {
    /// The table of revision `table`: 1.0.0 differs in six rows (409, 415 and 502 over HTTP,
    /// UNIMPLEMENTED over gRPC).
    pub const fn wire_for(self, table: ErrorTable) -> WireCode {
        use ErrorKind::*;
        let mut w = self.wire();
        if let ErrorTable::V1_0_0 = table {
            match self {
                TaskNotCancelable => w.http = 409,
                ContentTypeNotSupported => w.http = 415,
                InvalidAgentResponse => w.http = 502,
                PushNotificationNotSupported | UnsupportedOperation | VersionNotSupported => {
                    w.grpc = "UNIMPLEMENTED"
                }
                _ => {}
            }
        }
        w
    }
}

impl ErrorKind {
    /// The HTTP status A2A 0.3's HTTP+JSON binding gave this kind (the official 0.3 SDK's map,
    /// which 0.3 REST clients read): 422 for invalid params, 409 for a task that cannot be
    /// canceled, 501 for what is not supported, 415, 502 and 404 as its table; the rest as
    /// 1.0.1's.
    pub const fn http_v03(self) -> u16 {
        use ErrorKind::*;
        match self {
            InvalidParams => 422,
            TaskNotCancelable => 409,
            PushNotificationNotSupported | UnsupportedOperation => 501,
            ContentTypeNotSupported => 415,
            InvalidAgentResponse => 502,
            ExtendedAgentCardNotConfigured => 404,
            other => other.wire().http,
        }
    }
}

/// Refusals decided by the domain: the command changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DomainError {
    #[error("task {task_id} not found")]
    TaskNotFound { task_id: String },
    #[error("task {task_id} is {} and cannot be canceled", state.as_str())]
    TaskNotCancelable { task_id: String, state: TaskState },
    #[error("task {task_id} is {} (terminal) and accepts no more messages; start a new task in the same context", state.as_str())]
    TaskTerminal { task_id: String, state: TaskState },
    #[error("{field}: {reason}")]
    InvalidParams { field: String, reason: String },
    #[error("task {task_id} already exists")]
    TaskAlreadyExists { task_id: String },
    #[error("{0}")]
    UnsupportedOperation(String),
    /// The plan is not a DAG: duplicate ids, an unknown dependency, or a cycle.
    #[error("{field}: {reason}")]
    PlanCycle {
        field: String,
        reason: String,
        steps: Vec<String>,
    },
    /// The sender may not do this (role rules of the task extension).
    #[error("{field}: {reason}")]
    NotPermitted { field: String, reason: String },
    #[error("gate {gate_id} was already answered ({choice}); it takes one answer")]
    GateClosed { gate_id: String, choice: String },
    /// A part's media type is none of the agent's input modes.
    #[error("Incompatible content type: {field} is {media_type}; this agent accepts {accepted}")]
    ContentTypeNotSupported {
        field: String,
        media_type: String,
        accepted: String,
    },
    #[error("Task generation mismatch: expected {expected} but current generation is {current}")]
    GenerationMismatch {
        task_id: String,
        expected: u64,
        current: u64,
    },
}

impl DomainError {
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::InvalidParams {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::TaskNotFound { .. } => ErrorKind::TaskNotFound,
            Self::TaskNotCancelable { .. } => ErrorKind::TaskNotCancelable,
            Self::TaskTerminal { .. } | Self::UnsupportedOperation(_) => {
                ErrorKind::UnsupportedOperation
            }
            Self::InvalidParams { .. } | Self::PlanCycle { .. } | Self::NotPermitted { .. } => {
                ErrorKind::InvalidParams
            }
            Self::TaskAlreadyExists { .. } => ErrorKind::Internal,
            Self::GenerationMismatch { .. } => ErrorKind::TaskGenerationMismatch,
            Self::GateClosed { .. } => ErrorKind::UnsupportedOperation,
            Self::ContentTypeNotSupported { .. } => ErrorKind::ContentTypeNotSupported,
        }
    }

    /// `ErrorInfo.metadata`: the facts a client can act on (camelCase keys, string values).
    pub fn metadata(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        match self {
            Self::TaskNotFound { task_id } | Self::TaskAlreadyExists { task_id } => {
                m.insert("taskId".into(), task_id.clone());
            }
            Self::TaskNotCancelable { task_id, state } | Self::TaskTerminal { task_id, state } => {
                m.insert("taskId".into(), task_id.clone());
                m.insert("state".into(), state.as_str().into());
            }
            Self::InvalidParams { field, .. } | Self::NotPermitted { field, .. } => {
                m.insert("field".into(), field.clone());
            }
            Self::PlanCycle { field, steps, .. } => {
                m.insert("field".into(), field.clone());
                m.insert("steps".into(), steps.join(","));
                m.insert("error".into(), "PlanCycleError".into());
            }
            Self::GenerationMismatch {
                task_id,
                expected,
                current,
            } => {
                m.insert("taskId".into(), task_id.clone());
                m.insert("expectedGeneration".into(), expected.to_string());
                m.insert("currentGeneration".into(), current.to_string());
            }
            Self::ContentTypeNotSupported {
                field, media_type, ..
            } => {
                m.insert("field".into(), field.clone());
                m.insert("mediaType".into(), media_type.clone());
            }
            Self::GateClosed { gate_id, choice } => {
                m.insert("gateId".into(), gate_id.clone());
                m.insert("choice".into(), choice.clone());
            }
            Self::UnsupportedOperation(_) => {}
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a2a_codes_follow_the_spec_table() {
        assert_eq!(ErrorKind::TaskNotFound.wire().json_rpc, -32001);
        assert_eq!(ErrorKind::TaskNotFound.wire().http, 404);
        assert_eq!(ErrorKind::TaskNotCancelable.wire().json_rpc, -32002);
        assert_eq!(
            ErrorKind::PushNotificationNotSupported.wire().json_rpc,
            -32003
        );
        assert_eq!(ErrorKind::UnsupportedOperation.wire().json_rpc, -32004);
        assert_eq!(ErrorKind::ContentTypeNotSupported.wire().json_rpc, -32005);
        assert_eq!(
            ErrorKind::ExtendedAgentCardNotConfigured.wire().json_rpc,
            -32007
        );
        assert_eq!(ErrorKind::VersionNotSupported.wire().json_rpc, -32009);
        assert_eq!(
            ErrorKind::VersionNotSupported.wire().reason,
            "VERSION_NOT_SUPPORTED"
        );
        assert_eq!(ErrorKind::JsonParse.wire().json_rpc, -32700);
        assert_eq!(ErrorKind::MethodNotFound.wire().json_rpc, -32601);
    }

    #[test]
    fn the_1_0_0_table_differs_in_six_rows_only() {
        use ErrorKind::*;
        let all = [
            JsonParse,
            InvalidRequest,
            MethodNotFound,
            InvalidParams,
            Internal,
            TaskNotFound,
            TaskNotCancelable,
            PushNotificationNotSupported,
            UnsupportedOperation,
            ContentTypeNotSupported,
            InvalidAgentResponse,
            ExtendedAgentCardNotConfigured,
            ExtensionSupportRequired,
            VersionNotSupported,
            Unauthenticated,
            PayloadTooLarge,
            UnsupportedMediaType,
            MethodNotAllowed,
            Unavailable,
            RateLimited,
            RequestTimeout,
            Forbidden,
        ];
        let differing: Vec<_> = all
            .iter()
            .filter(|k| k.wire() != k.wire_for(ErrorTable::V1_0_0))
            .collect();
        assert_eq!(differing.len(), 6, "{differing:?}");
        assert_eq!(TaskNotCancelable.wire_for(ErrorTable::V1_0_0).http, 409);
        assert_eq!(
            UnsupportedOperation.wire_for(ErrorTable::V1_0_0).grpc,
            "UNIMPLEMENTED"
        );
        assert_eq!(
            UnsupportedOperation.wire_for(ErrorTable::V1_0_1).grpc,
            "FAILED_PRECONDITION"
        );
        assert!(all
            .iter()
            .all(|k| k.wire().json_rpc == k.wire_for(ErrorTable::V1_0_0).json_rpc));
        assert_eq!(ErrorTable::parse("1.0.0"), Ok(ErrorTable::V1_0_0));
        assert!(ErrorTable::parse("2.0").is_err());
    }

    #[test]
    fn domain_errors_map_to_their_a2a_kind() {
        let e = DomainError::TaskTerminal {
            task_id: "t".into(),
            state: TaskState::Completed,
        };
        assert_eq!(e.kind(), ErrorKind::UnsupportedOperation);
        assert_eq!(e.metadata()["state"], "TASK_STATE_COMPLETED");
        assert_eq!(
            DomainError::invalid("message.parts", "empty").kind(),
            ErrorKind::InvalidParams
        );
    }
}
