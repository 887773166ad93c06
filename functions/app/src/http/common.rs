//! What the two HTTP bindings read and write the same way: the body (bounded before it is
//! parsed), its media type, the service parameters (`A2A-Version`, `A2A-Extensions`,
//! `Idempotency-Key`), the ErrorInfo of an error, JSON responses and the echoed extensions.

use axum::body::{Body, Bytes};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use taskledger_domain::error::{ErrorKind, ERROR_DOMAIN};

use super::MAX_BODY_BYTES;
use crate::error::AppError;
use crate::operations::{Extensions, Outcome};

/// The body, refused as PayloadTooLarge past `MAX_BODY_BYTES` (by its declared length before
/// anything is read).
/// How long a request body may take to arrive by default (`HttpSettings::body_read_timeout`).
pub const BODY_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Reads and drops the body of a request whose route takes none, bounded as `read_body`: a
/// response sent before its request's body is read ends the keep-alive connection, and a client
/// reusing it (the 0.3 SDK after `POST …:cancel` with `{}`) finds it closed under its next request.
pub async fn discard_body(
    body: Body,
    headers: &HeaderMap,
    within: std::time::Duration,
) -> Result<(), AppError> {
    read_body(body, headers, within).await.map(drop)
}

/// The body, bounded in size (`MAX_BODY_BYTES`) and in time (`within`: a stalled client is
/// answered 408 instead of holding the connection).
pub async fn read_body(
    body: Body,
    headers: &HeaderMap,
    within: std::time::Duration,
) -> Result<Bytes, AppError> {
    match tokio::time::timeout(within, read_bounded(body, headers)).await {
        Ok(r) => r,
        Err(_) => Err(AppError::protocol(
            ErrorKind::RequestTimeout,
            format!(
                "the request body did not arrive within {} ms",
                within.as_millis()
            ),
        )),
    }
}

async fn read_bounded(body: Body, headers: &HeaderMap) -> Result<Bytes, AppError> {
    let too_large = || {
        AppError::protocol(
            ErrorKind::PayloadTooLarge,
            format!("request body exceeds {MAX_BODY_BYTES} bytes"),
        )
    };
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| too_large())
}

/// A2A's own media type for HTTP+JSON bodies (§11.1: SHOULD be used for requests and
/// responses; registered with no parameters, UTF-8 only, §14.1).
pub const A2A_JSON: &str = "application/a2a+json";

/// What a request says its body is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyType {
    /// `application/json`, or any `+json` type such as `application/a2a+json`.
    Json,
    /// No `Content-Type`.
    Missing,
    /// Anything else (its essence, lower-cased).
    Other(String),
    /// A JSON type with a parameter it cannot take: a charset other than UTF-8 (on any JSON
    /// type), or any parameter but `charset=utf-8` on `application/a2a+json`; why, in words.
    BadParameter(String),
}

/// A body is read as JSON only when the request says it is: a JSON type is not one a web page
/// may send to another origin without asking first (CORS preflight), so no page elsewhere can
/// make a browser post an A2A request here.
pub fn body_type(headers: &HeaderMap) -> BodyType {
    let Some(ct) = headers.get(CONTENT_TYPE) else {
        return BodyType::Missing;
    };
    let ct = ct.to_str().unwrap_or("").to_ascii_lowercase();
    let mut pieces = ct.split(';');
    let essence = pieces.next().unwrap_or("").trim().to_string();
    if essence != "application/json" && !essence.ends_with("+json") {
        return BodyType::Other(essence);
    }
    for param in pieces.map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = param.split_once('=').unwrap_or((param, ""));
        let value = value.trim().trim_matches('"');
        match name.trim() {
            "charset" if value == "utf-8" => {}
            "charset" => {
                return BodyType::BadParameter(format!(
                    "Content-Type {essence} with charset={value}: A2A bodies are UTF-8 JSON; \
                     send charset=utf-8 or no charset"
                ))
            }
            _ if essence == A2A_JSON => {
                return BodyType::BadParameter(format!(
                    "Content-Type {A2A_JSON} takes no parameters (got {param:?}); send it bare"
                ))
            }
            _ => {}
        }
    }
    BodyType::Json
}

impl BodyType {
    /// Why a body of this type is refused (`None`: it is JSON).
    pub fn refusal(&self) -> Option<String> {
        match self {
            Self::Json => None,
            Self::Missing => Some(
                "the request has a body but no Content-Type; send Content-Type: application/json"
                    .into(),
            ),
            Self::Other(essence) => Some(format!(
                "Content-Type {essence:?} is not supported; send application/json"
            )),
            Self::BadParameter(why) => Some(why.clone()),
        }
    }
}

/// Whether an HTTP+JSON answer is written as `application/a2a+json`: when the request's
/// `Accept` names it (not at q=0), or, with no `Accept` naming a JSON type, when the request's
/// body was sent as it. Everyone else gets `application/json`, as before.
pub fn answers_in_a2a_json(headers: &HeaderMap) -> bool {
    let mut names_json = false;
    for range in headers
        .get_all(axum::http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
    {
        let mut pieces = range.split(';');
        let media = pieces.next().unwrap_or("").trim().to_ascii_lowercase();
        let refused = pieces.any(|p| {
            p.split_once('=').is_some_and(|(k, v)| {
                k.trim().eq_ignore_ascii_case("q")
                    && v.trim().parse::<f32>().is_ok_and(|q| q <= 0.0)
            })
        });
        if media == A2A_JSON && !refused {
            return true;
        }
        names_json |= media == "application/json";
    }
    !names_json
        && headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|e| e.trim().eq_ignore_ascii_case(A2A_JSON))
}

/// `response` written as `application/a2a+json` when it was JSON (an SSE stream, a 204 stay
/// as they are).
pub fn as_a2a_json(mut response: Response) -> Response {
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"application/json");
    if is_json {
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(A2A_JSON));
    }
    response
}

/// The `google.rpc.ErrorInfo` of an error, as ProtoJSON.
pub fn error_info(e: &AppError) -> Value {
    let mut info = json!({
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": e.kind().wire().reason,
        "domain": ERROR_DOMAIN,
    });
    let meta = e.metadata();
    if !meta.is_empty() {
        info["metadata"] = json!(meta);
    }
    info
}

/// An error as `google.rpc.Status` JSON (the HTTP+JSON binding's shape) with the table's HTTP
/// status.
pub fn status_error(e: &AppError, table: taskledger_domain::error::ErrorTable) -> Response {
    let wire = e.kind().wire_for(table);
    let status = StatusCode::from_u16(wire.http).unwrap_or(StatusCode::BAD_REQUEST);
    let body = json!({"error": {
        "code": wire.http,
        "status": wire.grpc,
        "message": e.client_message(),
        "details": [error_info(e)],
    }});
    json_response(status, &body)
}

/// A request refused before any binding read it (the guard of `guard.rs`): a JSON-RPC error
/// response (id null) on a JSON-RPC path, else the HTTP+JSON shape; the table's HTTP status
/// either way. Logged here.
pub fn refusal(
    parts: &axum::http::request::Parts,
    e: &AppError,
    table: taskledger_domain::error::ErrorTable,
) -> Response {
    log_refusal(e);
    let path = parts.uri.path();
    let rest = path.contains(taskledger_domain::card::REST_PATH);
    let jsonrpc = !rest
        && parts.method == axum::http::Method::POST
        && (path.ends_with(taskledger_domain::card::JSONRPC_PATH)
            || path.ends_with(&format!("{}/", taskledger_domain::card::JSONRPC_PATH))
            || path == "/");
    if !jsonrpc {
        return status_error(e, table);
    }
    let wire = e.kind().wire_for(table);
    let status = StatusCode::from_u16(wire.http).unwrap_or(StatusCode::BAD_REQUEST);
    let body = json!({
        "jsonrpc": "2.0",
        "id": Value::Null,
        "error": {
            "code": wire.json_rpc,
            "message": e.client_message(),
            "data": [error_info(e)],
        },
    });
    json_response(status, &body)
}

/// Logs an error where it is handled: ours at error level, the client's at debug.
pub fn log_refusal(e: &AppError) {
    let reason = e.kind().wire().reason;
    if e.is_server_side() {
        tracing::error!(error = %e, reason, "request failed");
    } else {
        tracing::debug!(error = %e, reason, "request refused");
    }
}

/// A result's body, serialised straight from the typed outcome: bare (HTTP+JSON), or as the
/// `result` of the JSON-RPC response to `rpc_id`.
pub fn result_body(outcome: &Outcome, rpc_id: Option<&Value>) -> Result<Vec<u8>, AppError> {
    let mut out = Vec::with_capacity(RESULT_CAPACITY);
    if let Some(id) = rpc_id {
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        serde_json::to_writer(&mut out, id).map_err(not_serialised)?;
        out.extend_from_slice(br#","result":"#);
    }
    match outcome {
        Outcome::Encoded(json) => out.extend_from_slice(json),
        other => serde_json::to_writer(&mut out, other).map_err(not_serialised)?,
    }
    if rpc_id.is_some() {
        out.push(b'}');
    }
    Ok(out)
}

/// A JSON-RPC success response to `rpc_id` whose result is `result` (`null` included: 0.3's
/// delete answers `"result": null`).
pub fn value_body(result: &Value, rpc_id: &Value) -> Result<Vec<u8>, AppError> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": rpc_id, "result": result}))
        .map_err(not_serialised)
}

fn not_serialised(e: serde_json::Error) -> AppError {
    AppError::protocol(
        ErrorKind::Internal,
        format!("cannot serialise the result: {e}"),
    )
}

/// Room reserved for a result's body (a task with a short history fits).
const RESULT_CAPACITY: usize = 2048;

/// A 200 with a JSON body already serialised.
pub fn json_bytes_response(body: Vec<u8>) -> Response {
    (
        StatusCode::OK,
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        body,
    )
        .into_response()
}

pub fn json_response(status: StatusCode, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    (
        status,
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        bytes,
    )
        .into_response()
}

/// Echoes the extensions that were active for the request, in every extension header a line
/// reads (`Line::EXTENSION_HEADERS`).
pub fn with_extensions(mut response: Response, extensions: &Extensions) -> Response {
    if let Some(v) = extensions
        .header()
        .and_then(|h| HeaderValue::from_str(&h).ok())
    {
        for name in crate::call::Line::EXTENSION_HEADERS {
            response.headers_mut().insert(name, v.clone());
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn a2a_json_is_json_bare_or_with_utf_8_and_refused_with_any_other_parameter() {
        let body = |ct| body_type(&headers(&[("content-type", ct)]));
        for ok in [
            "application/a2a+json",
            "Application/A2A+JSON",
            "application/a2a+json; charset=utf-8",
            "application/a2a+json;charset=\"UTF-8\"",
            "application/json; charset=utf-8",
            "application/json; foo=bar",
        ] {
            assert_eq!(body(ok), BodyType::Json, "{ok}");
        }
        for bad in [
            "application/a2a+json; charset=iso-8859-1",
            "application/json; charset=latin1",
            "application/a2a+json; version=1.0",
            "application/a2a+json; profile",
        ] {
            match body(bad) {
                BodyType::BadParameter(why) => assert!(why.contains("Content-Type"), "{why}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
        assert_eq!(body("text/plain"), BodyType::Other("text/plain".into()));
        assert_eq!(body_type(&HeaderMap::new()), BodyType::Missing);
    }

    #[test]
    fn the_answer_is_a2a_json_when_accept_names_it_or_the_body_was_sent_as_it() {
        let asks = |pairs: &[(&'static str, &'static str)]| answers_in_a2a_json(&headers(pairs));
        assert!(asks(&[("accept", "application/a2a+json")]));
        assert!(asks(&[(
            "accept",
            "application/json;q=0.5, application/a2a+json"
        )]));
        assert!(!asks(&[("accept", "application/a2a+json;q=0")]));
        assert!(asks(&[("content-type", "application/a2a+json")]));
        assert!(asks(&[
            ("content-type", "application/a2a+json"),
            ("accept", "*/*")
        ]));
        assert!(!asks(&[
            ("content-type", "application/a2a+json"),
            ("accept", "application/json")
        ]));
        assert!(!asks(&[("content-type", "application/json")]));
        assert!(!asks(&[]));
    }
}
