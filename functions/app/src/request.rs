//! What every binding reads the same way before a method runs: the protocol version the
//! client speaks (`A2A-Version`), the extensions it asks for (`A2A-Extensions`), and a request
//! object decoded into its typed wire request with the failing field named. JSON-RPC and gRPC
//! both call these, so a refusal is the same error on either.

use serde::de::DeserializeOwned;
use serde_json::Value;
use taskledger_domain::error::ErrorKind;

use crate::error::AppError;

/// The protocol major version served.
pub const SUPPORTED_MAJOR: u32 = 1;
/// Header (HTTP, any case) and gRPC metadata key (lowercase) naming the client's version.
pub const VERSION_HEADER: &str = "A2A-Version";
/// Header and gRPC metadata key listing the extensions the client wants active.
pub const EXTENSIONS_HEADER: &str = "A2A-Extensions";
/// The header making task creation safe to retry (gRPC: the `idempotency-key` metadata).
pub const IDEMPOTENCY_HEADER: &str = "Idempotency-Key";
/// A2A 0.3's name for it, read beside it (the union is asked for) and echoed beside it.
pub const V03_EXTENSIONS_HEADER: &str = "X-A2A-Extensions";

/// The minor version from which the draft's task generations are served (A2A 1.1,
/// a2aproject/A2A#1810): `generation` on tasks and updates, long-polling GetTask, conditional
/// sends. A 1.0 client sees none of it.
pub const GENERATIONS_MINOR: u32 = 1;

/// The A2A operations, by their JSON-RPC / gRPC method names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    SendMessage,
    SendStreamingMessage,
    GetTask,
    ListTasks,
    CancelTask,
    SubscribeToTask,
    CreateTaskPushNotificationConfig,
    GetTaskPushNotificationConfig,
    ListTaskPushNotificationConfigs,
    DeleteTaskPushNotificationConfig,
    GetExtendedAgentCard,
    /// taskledger's events extension (`urn:taskledger:ext:events:v1`): a page of a task's log.
    ListTaskEvents,
}

pub(crate) const METHODS: [(&str, Method); 12] = [
    ("SendMessage", Method::SendMessage),
    ("SendStreamingMessage", Method::SendStreamingMessage),
    ("GetTask", Method::GetTask),
    ("ListTasks", Method::ListTasks),
    ("CancelTask", Method::CancelTask),
    ("SubscribeToTask", Method::SubscribeToTask),
    (
        "CreateTaskPushNotificationConfig",
        Method::CreateTaskPushNotificationConfig,
    ),
    (
        "GetTaskPushNotificationConfig",
        Method::GetTaskPushNotificationConfig,
    ),
    (
        "ListTaskPushNotificationConfigs",
        Method::ListTaskPushNotificationConfigs,
    ),
    (
        "DeleteTaskPushNotificationConfig",
        Method::DeleteTaskPushNotificationConfig,
    ),
    ("GetExtendedAgentCard", Method::GetExtendedAgentCard),
    ("ListTaskEvents", Method::ListTaskEvents),
];

impl Method {
    /// Every method, in declaration order (`index` is the position here).
    pub const ALL: [Method; 12] = [
        Method::SendMessage,
        Method::SendStreamingMessage,
        Method::GetTask,
        Method::ListTasks,
        Method::CancelTask,
        Method::SubscribeToTask,
        Method::CreateTaskPushNotificationConfig,
        Method::GetTaskPushNotificationConfig,
        Method::ListTaskPushNotificationConfigs,
        Method::DeleteTaskPushNotificationConfig,
        Method::GetExtendedAgentCard,
        Method::ListTaskEvents,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    /// Whether its answer is a stream of updates.
    pub fn streams(self) -> bool {
        matches!(self, Method::SendStreamingMessage | Method::SubscribeToTask)
    }

    /// The method of a JSON-RPC `method` or gRPC RPC name; an unknown one is MethodNotFound.
    pub fn named(name: &str) -> Result<Self, AppError> {
        METHODS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, m)| *m)
            .ok_or_else(|| {
                AppError::protocol(
                    ErrorKind::MethodNotFound,
                    format!("method {name:?} does not exist"),
                )
                .with("method", name)
            })
    }

    pub fn name(self) -> &'static str {
        METHODS
            .iter()
            .find(|(_, m)| *m == self)
            .map(|(n, _)| *n)
            .unwrap_or("unknown")
    }
}

/// The `1.x` a request speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProtocolVersion {
    pub minor: u32,
}

impl ProtocolVersion {
    /// Whether the client speaks the draft 1.1 generations.
    pub fn generations(self) -> bool {
        self.minor >= GENERATIONS_MINOR
    }
}

/// The protocol versions served, as a VersionNotSupported error names them.
pub const SUPPORTED_VERSIONS: &str = "0.3, 1.0, 1.1";

/// The version rule of a 1.x method (`SendMessage`, …): a missing or empty value means 0.3,
/// whose methods are the 0.3 ones (`message/send`, …), so it is refused; any `1.x` is served.
/// `requested` is the value as the binding found it (a header already trimmed).
pub fn check_version(requested: Option<String>) -> Result<ProtocolVersion, AppError> {
    let requested = requested
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "0.3".to_string());
    let mut numbers = requested.split('.');
    let major = numbers.next().and_then(|m| m.parse::<u32>().ok());
    let minor = match numbers.next() {
        None => Some(0),
        Some(m) => m.parse::<u32>().ok(),
    };
    if let (Some(SUPPORTED_MAJOR), Some(minor)) = (major, minor) {
        return Ok(ProtocolVersion { minor });
    }
    Err(AppError::protocol(
        ErrorKind::VersionNotSupported,
        format!(
            "A2A protocol version {requested} is not served by this method; send \
             {VERSION_HEADER}: 1.0 (versions served: {SUPPORTED_VERSIONS}; 0.3 clients call the 0.3 \
             methods, paths and service)"
        ),
    )
    .with("requestedVersion", requested)
    .with("supportedVersions", SUPPORTED_VERSIONS))
}

/// The version rule of a 0.3 method (`message/send`, `/v1/…`, `a2a.v1.A2AService`): no
/// version (0.3 has no header), or any `0.x`. A 1.x version with a 0.3 method mixes the two
/// lines and is refused.
pub fn check_v03_version(requested: Option<&str>) -> Result<(), AppError> {
    let requested = requested.map(str::trim).filter(|v| !v.is_empty());
    match requested {
        None => Ok(()),
        Some(v) if v.split('.').next() == Some("0") => Ok(()),
        Some(v) => Err(AppError::protocol(
            ErrorKind::VersionNotSupported,
            format!(
                "this is an A2A 0.3 method, called with {VERSION_HEADER}: {v}; a 0.3 client sends \
                 no version, a 1.x client calls the 1.x methods (versions served: \
                 {SUPPORTED_VERSIONS})"
            ),
        )
        .with("requestedVersion", v)
        .with("supportedVersions", SUPPORTED_VERSIONS)),
    }
}

/// Which card a fetch of the well-known card gets (ADR 031).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardShape {
    /// The 1.0 card with the 0.3 fields merged in: no version (how every 0.3 client and
    /// most fetchers ask), or a `0.x` one.
    Merged,
    /// The 1.0 card as it is, nothing merged: a client that says it speaks `1.x`.
    Pure,
}

/// The card a request's `A2A-Version` asks for: none or `0.x` → the merged card, `1.x` → the
/// pure 1.0 card; any other version is VersionNotSupported, naming those served.
pub fn card_shape(requested: Option<&str>) -> Result<CardShape, AppError> {
    let Some(v) = requested.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(CardShape::Merged);
    };
    let mut numbers = v.split('.');
    let major = numbers.next().and_then(|m| m.parse::<u32>().ok());
    let minor_ok = numbers.next().is_none_or(|m| m.parse::<u32>().is_ok());
    match major {
        Some(0) if minor_ok => Ok(CardShape::Merged),
        Some(SUPPORTED_MAJOR) if minor_ok => Ok(CardShape::Pure),
        _ => Err(AppError::protocol(
            ErrorKind::VersionNotSupported,
            format!(
                "no agent card for A2A protocol version {v}; send {VERSION_HEADER}: 1.0 for the \
                 1.0 card, or none for the card 0.3 clients read (versions served: \
                 {SUPPORTED_VERSIONS})"
            ),
        )
        .with("requestedVersion", v)
        .with("supportedVersions", SUPPORTED_VERSIONS)),
    }
}

/// `A2A-Version` from the header, else from the query (`?A2A-Version=1.0`).
pub fn requested_version(headers: &axum::http::HeaderMap, query: Option<&str>) -> Option<String> {
    let from_query = query.and_then(|q| {
        q.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            k.eq_ignore_ascii_case(VERSION_HEADER)
                .then(|| v.to_string())
        })
    });
    headers
        .get(VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_string())
        .or(from_query)
}

/// The extension URIs a client asks for (comma-separated, blanks dropped). Unknown URIs are
/// kept here and ignored by whoever reads the list: none of taskledger's extensions is
/// required, so no request is refused for what it leaves out.
pub fn requested_extensions(values: &[&str]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(str::to_string)
        .collect()
}

/// Decodes a request object into its typed request; a failure is InvalidParams naming the
/// field under `root` (`params.message.parts` on JSON-RPC), or `root` itself for the object.
pub fn decode<T: DeserializeOwned>(value: Value, root: &str) -> Result<T, AppError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." {
            root.to_string()
        } else {
            format!("{root}.{path}")
        };
        AppError::invalid_params(field, e.into_inner())
    })
}

/// `GetExtendedAgentCard`: the card declares no extended card.
/// A path segment percent-decoded; empty or not UTF-8 is refused, naming `what` (both REST
/// route tables, 1.x and 0.3).
pub fn path_segment(raw: &str, what: &str) -> Result<String, AppError> {
    let s = percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .map_err(|_| AppError::invalid_params(what, "is not UTF-8 once percent-decoded"))?
        .into_owned();
    if s.is_empty() {
        return Err(AppError::invalid_params(what, "must not be empty"));
    }
    Ok(s)
}

pub fn extended_card_unsupported() -> AppError {
    AppError::protocol(
        ErrorKind::UnsupportedOperation,
        "this agent declares no extended agent card (capabilities.extendedAgentCard is false)",
    )
}

/// The caller's W3C trace context from its `traceparent` values (one; two are none, as the
/// recommendation says) and its `tracestate` values (joined): what both HTTP bindings' headers
/// and gRPC's metadata give. Anything unreadable is no context, never an error.
pub fn trace_context<'a>(
    parents: impl IntoIterator<Item = &'a str>,
    states: impl IntoIterator<Item = &'a str>,
) -> Option<taskledger_domain::trace::TraceContext> {
    let mut parents = parents.into_iter();
    let parent = parents.next()?;
    if parents.next().is_some() {
        return None;
    }
    let states: Vec<&str> = states.into_iter().collect();
    let state = (!states.is_empty()).then(|| states.join(","));
    taskledger_domain::trace::TraceContext::parse(parent.trim(), state.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_or_empty_means_0_3_and_is_refused() {
        for v in [
            None,
            Some(String::new()),
            Some("0.3".into()),
            Some("99.0".into()),
        ] {
            let e = check_version(v).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::VersionNotSupported);
        }
        assert_eq!(
            check_version(None).unwrap_err().metadata()["requestedVersion"],
            "0.3"
        );
    }

    #[test]
    fn any_1_x_is_served() {
        for (v, minor) in [("1.0", 0), ("1.1", 1), ("1", 0), ("1.7", 7)] {
            assert_eq!(check_version(Some(v.into())).unwrap().minor, minor, "{v}");
        }
        assert!(check_version(Some("1x".into())).is_err());
        assert!(check_version(Some("1.x".into())).is_err());
        assert!(!check_version(Some("1.0".into())).unwrap().generations());
        assert!(check_version(Some("1.1".into())).unwrap().generations());
    }

    #[test]
    fn the_card_is_merged_for_no_version_or_0_x_pure_for_1_x_and_refused_otherwise() {
        for v in [None, Some(""), Some("0.3"), Some(" 0.2 ")] {
            assert_eq!(card_shape(v).unwrap(), CardShape::Merged, "{v:?}");
        }
        for v in ["1.0", "1.1", "1"] {
            assert_eq!(card_shape(Some(v)).unwrap(), CardShape::Pure, "{v}");
        }
        for v in ["2.0", "1.x", "one", "0.x", "-1"] {
            let e = card_shape(Some(v)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::VersionNotSupported, "{v}");
            assert_eq!(e.metadata()["supportedVersions"], SUPPORTED_VERSIONS);
        }
    }

    #[test]
    fn extensions_split_on_commas_across_values() {
        assert_eq!(
            requested_extensions(&["urn:a, urn:b", "", " urn:c "]),
            vec!["urn:a", "urn:b", "urn:c"]
        );
    }

    #[test]
    fn decode_names_the_failing_field() {
        use taskledger_domain::wire::GetTaskRequest;
        let e = decode::<GetTaskRequest>(serde_json::json!({}), "params").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidParams);
        assert_eq!(e.metadata()["field"], "params");
        let e = decode::<GetTaskRequest>(
            serde_json::json!({"id": "t", "historyLength": "x"}),
            "request",
        )
        .unwrap_err();
        assert_eq!(e.metadata()["field"], "request.historyLength");
    }
}
