//! The three A2A bindings a `Server` can be called through (`TASKLEDGER_TEST_BINDING` =
//! `jsonrpc`, the default, `rest` or `grpc`), and the translations that let one test speak any
//! of them: a JSON-RPC method and its `params` become the HTTP+JSON request (path, query, body)
//! or the gRPC request message, and the reply comes back as the JSON-RPC response object the
//! tests read (`{"jsonrpc","id","result"}` or `{"jsonrpc","id","error":{code,message,data}}`).
//!
//! Errors are mapped through the domain's one error table (`ErrorKind::wire`): the ErrorInfo
//! `reason` of an HTTP+JSON or gRPC error names its row, and the row gives the JSON-RPC code; on
//! the way the HTTP status (and `error.code`, `error.status`) or the gRPC status code are checked
//! against the same row.

use std::collections::BTreeMap;
use std::str::FromStr;

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use reqwest::{Method as HttpMethod, StatusCode};
use serde_json::{json, Map, Value};
use taskledger_app::grpc::convert;
use taskledger_app::grpc::errors::code_named;
use taskledger_app::grpc::events_proto::{self as epb, task_events_client::TaskEventsClient};
use taskledger_app::grpc::proto::{self as pb, a2a_service_client::A2aServiceClient};
use taskledger_domain::card::REST_PATH;
use taskledger_domain::error::{ErrorKind, ErrorTable};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::metadata::{MetadataKey, MetadataValue};
use tonic::transport::Channel;
use tonic::{Request, Status};
use tonic_types::StatusExt;

/// The environment variable choosing the binding of `Server::start`/`start_with`.
pub const BINDING_ENV: &str = "TASKLEDGER_TEST_BINDING";

/// One of A2A's three standard bindings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    JsonRpc,
    Rest,
    Grpc,
}

impl Binding {
    pub const ALL: [Binding; 3] = [Binding::JsonRpc, Binding::Rest, Binding::Grpc];

    /// `TASKLEDGER_TEST_BINDING`: `jsonrpc` (or unset), `rest` or `grpc`.
    pub fn from_env() -> Self {
        match std::env::var(BINDING_ENV).as_deref() {
            Err(_) | Ok("") | Ok("jsonrpc") => Self::JsonRpc,
            Ok("rest") => Self::Rest,
            Ok("grpc") => Self::Grpc,
            Ok(other) => panic!("{BINDING_ENV}={other:?}: expected jsonrpc, rest or grpc"),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::JsonRpc => "jsonrpc",
            Self::Rest => "rest",
            Self::Grpc => "grpc",
        }
    }

    pub fn is_jsonrpc(self) -> bool {
        self == Self::JsonRpc
    }

    pub fn is_rest(self) -> bool {
        self == Self::Rest
    }

    pub fn is_grpc(self) -> bool {
        self == Self::Grpc
    }
}

/// The binding the tests of this process run through.
pub fn binding() -> Binding {
    Binding::from_env()
}

// ------------------------------------------------------------------ the error table, reversed

/// Every kind of the domain's error table (`ErrorKind::ALL`, the one list).
pub const ERROR_KINDS: [ErrorKind; ErrorKind::ALL.len()] = ErrorKind::ALL;

/// The kinds whose ErrorInfo reason is `reason` (more than one may share it:
/// `CONTENT_TYPE_NOT_SUPPORTED` is a part's media type and the body's).
pub fn kinds_with_reason(reason: &str) -> Vec<ErrorKind> {
    ERROR_KINDS
        .into_iter()
        .filter(|k| k.wire().reason == reason)
        .collect()
}

/// The JSON-RPC code of an ErrorInfo reason, from the table (the kinds sharing a reason must
/// agree on it).
pub fn json_rpc_code(reason: &str) -> i64 {
    let kinds = kinds_with_reason(reason);
    let first = kinds
        .first()
        .unwrap_or_else(|| panic!("reason {reason:?} is in no row of the error table"));
    let code = first.wire().json_rpc;
    assert!(
        kinds.iter().all(|k| k.wire().json_rpc == code),
        "reason {reason:?} maps to more than one JSON-RPC code: {kinds:?}"
    );
    i64::from(code)
}

fn rpc_error(code: i64, message: &str, data: Vec<Value>) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": message, "data": data}})
}

fn rpc_result(result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "result": result})
}

// ------------------------------------------------------------------ HTTP+JSON

/// One HTTP+JSON request, below `REST_PATH`.
#[derive(Debug, Clone, PartialEq)]
pub struct RestRequest {
    pub method: HttpMethod,
    /// Percent-encoded, with the `/{tenant}` prefix when the params name one.
    pub path: String,
    pub query: Vec<(String, String)>,
    /// The JSON object body (POST only).
    pub body: Option<Value>,
}

/// What a path segment keeps unencoded: RFC 3986 unreserved characters only, so `:` and `/`
/// inside an id never read as a verb or a segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

pub fn encode_segment(s: &str) -> String {
    utf8_percent_encode(s, SEGMENT).to_string()
}

/// `page_size` → `pageSize`; camelCase names stay as they are.
fn camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `params` as an object: absent (`null`) is `{}`, as on JSON-RPC; anything else is not a
/// request object.
fn params_object(params: &Value) -> Result<Map<String, Value>, String> {
    match params {
        Value::Null => Ok(Map::new()),
        Value::Object(m) => Ok(m.clone()),
        other => Err(format!(
            "params {other} is not an object: only JSON-RPC carries such params"
        )),
    }
}

/// Takes the path field `camel` (or its snake_case name) out of the params: a string, or a
/// number written as its text. A missing, empty or structured value makes no path segment.
fn take_path_field(p: &mut Map<String, Value>, camel: &str, snake: &str) -> Result<String, String> {
    let a = p.remove(camel);
    let b = p.remove(snake);
    let v = a.or(b);
    match v {
        Some(Value::String(s)) if !s.is_empty() => Ok(encode_segment(&s)),
        Some(Value::Number(n)) => Ok(n.to_string()),
        other => Err(format!(
            "{camel} = {} cannot be a path segment of the HTTP+JSON binding",
            other.map_or("(missing)".to_string(), |v| v.to_string())
        )),
    }
}

/// The request message `M`'s descriptor (from the binding's own descriptor set).
fn descriptor<M: prost::Name>() -> prost_reflect::MessageDescriptor {
    static POOL: std::sync::OnceLock<prost_reflect::DescriptorPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        prost_reflect::DescriptorPool::decode(taskledger_app::grpc::FILE_DESCRIPTOR_SET)
            .expect("descriptor set")
    })
    .get_message_by_name(&M::full_name())
    .unwrap_or_else(|| panic!("no descriptor for {}", M::full_name()))
}

/// The query of the remaining params of a request message `request`: its fields by camelCase
/// name, scalars as text, arrays as repeated parameters; `null` is left out; a nested object
/// cannot be a query parameter (A2A §11.5). Members that are no field of the message are left
/// out: the operation ignores them on every binding.
fn query_of(
    p: &Map<String, Value>,
    request: &prost_reflect::MessageDescriptor,
) -> Result<Vec<(String, String)>, String> {
    fn text(name: &str, v: &Value) -> Result<Option<String>, String> {
        Ok(match v {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            Value::Bool(_) | Value::Number(_) => Some(v.to_string()),
            Value::Array(_) | Value::Object(_) => {
                return Err(format!("{name} = {v} cannot be a query parameter"))
            }
        })
    }
    let mut out = Vec::new();
    for (k, v) in p {
        let name = camel(k);
        if request.get_field_by_json_name(&name).is_none() && request.get_field_by_name(k).is_none()
        {
            continue;
        }
        let items: Vec<&Value> = match v {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        for item in items {
            if let Some(t) = text(&name, item)? {
                out.push((name.clone(), t));
            }
        }
    }
    Ok(out)
}

/// The HTTP+JSON request of a JSON-RPC method and its params (A2A §11, the table in §5.3);
/// `Err` when the params cannot be said on this binding (why, in words).
pub fn rest_request(method: &str, params: &Value) -> Result<RestRequest, String> {
    let mut p = params_object(params)?;
    let prefix = match p.remove("tenant") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(t)) if !t.is_empty() => format!("/{}", encode_segment(&t)),
        Some(other) => return Err(format!("tenant = {other} cannot be a path prefix")),
    };
    // The query's request message (GET and DELETE); none: the params are the body.
    let (http, path, query_of_message) = match method {
        "SendMessage" => (HttpMethod::POST, "/message:send".to_string(), None),
        "SendStreamingMessage" => (HttpMethod::POST, "/message:stream".to_string(), None),
        "GetTask" => {
            let id = take_path_field(&mut p, "id", "id")?;
            let m = descriptor::<pb::GetTaskRequest>();
            (HttpMethod::GET, format!("/tasks/{id}"), Some(m))
        }
        "ListTasks" => (
            HttpMethod::GET,
            "/tasks".to_string(),
            Some(descriptor::<pb::ListTasksRequest>()),
        ),
        "CancelTask" => {
            let id = take_path_field(&mut p, "id", "id")?;
            (HttpMethod::POST, format!("/tasks/{id}:cancel"), None)
        }
        "SubscribeToTask" => {
            let id = take_path_field(&mut p, "id", "id")?;
            let m = descriptor::<pb::SubscribeToTaskRequest>();
            (HttpMethod::GET, format!("/tasks/{id}:subscribe"), Some(m))
        }
        "CreateTaskPushNotificationConfig" => {
            let task = take_path_field(&mut p, "taskId", "task_id")?;
            (
                HttpMethod::POST,
                format!("/tasks/{task}/pushNotificationConfigs"),
                None,
            )
        }
        "GetTaskPushNotificationConfig" | "DeleteTaskPushNotificationConfig" => {
            let task = take_path_field(&mut p, "taskId", "task_id")?;
            let id = take_path_field(&mut p, "id", "id")?;
            let (http, m) = if method.starts_with("Get") {
                let m = descriptor::<pb::GetTaskPushNotificationConfigRequest>();
                (HttpMethod::GET, m)
            } else {
                let m = descriptor::<pb::DeleteTaskPushNotificationConfigRequest>();
                (HttpMethod::DELETE, m)
            };
            (
                http,
                format!("/tasks/{task}/pushNotificationConfigs/{id}"),
                Some(m),
            )
        }
        "ListTaskPushNotificationConfigs" => {
            let task = take_path_field(&mut p, "taskId", "task_id")?;
            (
                HttpMethod::GET,
                format!("/tasks/{task}/pushNotificationConfigs"),
                Some(descriptor::<pb::ListTaskPushNotificationConfigsRequest>()),
            )
        }
        "GetExtendedAgentCard" => (
            HttpMethod::GET,
            "/extendedAgentCard".to_string(),
            Some(descriptor::<pb::GetExtendedAgentCardRequest>()),
        ),
        // taskledger's events extension
        "ListTaskEvents" => {
            let id = take_path_field(&mut p, "id", "id")?;
            let m = descriptor::<epb::ListTaskEventsRequest>();
            (HttpMethod::GET, format!("/tasks/{id}/events"), Some(m))
        }
        // No operation of this name: a path the binding does not have.
        other => (
            HttpMethod::POST,
            format!("/{}", encode_segment(other)),
            None,
        ),
    };
    let (query, body) = match query_of_message {
        None => (Vec::new(), Some(Value::Object(p))),
        Some(m) => (query_of(&p, &m)?, None),
    };
    Ok(RestRequest {
        method: http,
        path: format!("{prefix}{path}"),
        query,
        body,
    })
}

/// An HTTP+JSON error body as the JSON-RPC error response, checking its shape on the way:
/// `{"error": {"code": <HTTP status>, "status", "message", "details": [ErrorInfo, …]}}`, the
/// code equal to the HTTP status, and status and code those of the reason's row in the table.
pub fn rest_error(status: StatusCode, body: &Value, table: ErrorTable) -> Value {
    let e = body
        .get("error")
        .and_then(Value::as_object)
        .unwrap_or_else(|| panic!("HTTP {status}: not an AIP-193 error body: {body}"));
    assert!(
        e.keys()
            .all(|k| ["code", "status", "message", "details"].contains(&k.as_str())),
        "only code, status, message, details: {body}"
    );
    assert_eq!(
        e.get("code").and_then(Value::as_u64),
        Some(u64::from(status.as_u16())),
        "error.code is the HTTP status: {body}"
    );
    let details = e
        .get("details")
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("details: {body}"))
        .clone();
    let info = details
        .iter()
        .find(|d| d["@type"] == "type.googleapis.com/google.rpc.ErrorInfo")
        .unwrap_or_else(|| panic!("no ErrorInfo in the details: {body}"));
    let reason = info["reason"]
        .as_str()
        .unwrap_or_else(|| panic!("ErrorInfo without a reason: {body}"));
    let grpc_status = e.get("status").and_then(Value::as_str).unwrap_or_default();
    let kinds = kinds_with_reason(reason);
    assert!(
        kinds.iter().any(|k| {
            let w = k.wire_for(table);
            w.http == status.as_u16() && w.grpc == grpc_status
        }),
        "HTTP {status} / {grpc_status} is not the table's row for {reason} ({kinds:?}): {body}"
    );
    let message = e.get("message").and_then(Value::as_str).unwrap_or_default();
    rpc_error(json_rpc_code(reason), message, details)
}

/// A call over HTTP+JSON, as its JSON-RPC response object.
pub(crate) async fn rest_call(
    server: &crate::Server,
    method: &str,
    params: Value,
    extra: &[(&str, &str)],
) -> Value {
    let r = rest_request(method, &params)
        .unwrap_or_else(|why| panic!("{method} {params} over HTTP+JSON: {why}"));
    let mut url = format!("{}{REST_PATH}{}", server.base, r.path);
    if !r.query.is_empty() {
        let query = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(&r.query)
            .finish();
        url = format!("{url}?{query}");
    }
    let mut req = server.client.request(r.method.clone(), &url);
    // An extra `A2A-Version` replaces the default.
    if !extra
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("A2A-Version"))
    {
        req = req.header("A2A-Version", "1.0");
    }
    if let Some(body) = &r.body {
        req = req
            .header("Content-Type", "application/json")
            .body(serde_json::to_vec(body).expect("json"));
    }
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    if let Some(t) = &server.token {
        req = req.header("Authorization", format!("Bearer {t}"));
    }
    let resp = req.send().await.expect("request sent");
    let status = resp.status();
    let bytes = resp.bytes().await.expect("body");
    let v: Value = serde_json::from_slice(&bytes).unwrap_or_else(|_| {
        panic!(
            "{} {url}: HTTP {status}, not a JSON body: {}",
            r.method,
            String::from_utf8_lossy(&bytes)
        )
    });
    if status.is_success() {
        rpc_result(v)
    } else {
        rest_error(status, &v, server.error_table)
    }
}

// ------------------------------------------------------------------ gRPC

/// The request message of an RPC from its ProtoJSON params, by `convert::from_protojson` (the
/// binding's own transcoder), checked against prost-reflect's ProtoJSON reader
/// (`convert::from_protojson_dynamic`). Params are sayable on gRPC when both accept them:
/// what they refuse (a string in an integer field, an enum name the proto lacks, an int32 out
/// of range) no gRPC client can send.
pub fn grpc_message<M>(params: &Value) -> Result<M, String>
where
    M: prost::Message + prost::Name + Default + PartialEq + std::fmt::Debug,
{
    let value = Value::Object(params_object(params)?);
    let reference: M = convert::from_protojson_dynamic(value.clone())
        .map_err(|e| format!("not a {} in ProtoJSON: {e}", M::full_name()))?;
    let ours: M = convert::from_protojson(value.clone())
        .map_err(|e| format!("convert::from_protojson {}: {e}", M::full_name()))?;
    if ours != reference {
        // They disagree on Timestamps outside 1678–2262: the reply encoder (encode.rs) writes
        // them through i64 nanoseconds and clamps them (2999-01-01 becomes 2262-04-11). Send
        // what the params say, and say so.
        eprintln!(
            "note: convert::from_protojson and prost-reflect disagree on {value}: \
             {ours:?} / {reference:?}; sending the latter"
        );
        return Ok(reference);
    }
    Ok(ours)
}

/// Whether `params` can be said as the request of `method` on gRPC (why not, in words).
pub fn grpc_expressible(method: &str, params: &Value) -> Result<(), String> {
    fn check<M>(p: &Value) -> Result<(), String>
    where
        M: prost::Message + prost::Name + Default + PartialEq + std::fmt::Debug,
    {
        grpc_message::<M>(p).map(|_| ())
    }
    match method {
        "SendMessage" | "SendStreamingMessage" => check::<pb::SendMessageRequest>(params),
        "GetTask" => check::<pb::GetTaskRequest>(params),
        "ListTasks" => check::<pb::ListTasksRequest>(params),
        "CancelTask" => check::<pb::CancelTaskRequest>(params),
        "SubscribeToTask" => check::<pb::SubscribeToTaskRequest>(params),
        "CreateTaskPushNotificationConfig" => check::<pb::TaskPushNotificationConfig>(params),
        "GetTaskPushNotificationConfig" => {
            check::<pb::GetTaskPushNotificationConfigRequest>(params)
        }
        "ListTaskPushNotificationConfigs" => {
            check::<pb::ListTaskPushNotificationConfigsRequest>(params)
        }
        "DeleteTaskPushNotificationConfig" => {
            check::<pb::DeleteTaskPushNotificationConfigRequest>(params)
        }
        "GetExtendedAgentCard" => check::<pb::GetExtendedAgentCardRequest>(params),
        "ListTaskEvents" => check::<epb::ListTaskEventsRequest>(params),
        _ => params_object(params).map(|_| ()),
    }
}

/// Proto3 cannot tell these REQUIRED response fields (A2A §3.1.4) from unset at their default
/// values, so the ProtoJSON printer leaves them out; the JSON bindings always carry them.
/// Printing them at their default is what a ProtoJSON printer emitting defaults would do.
fn with_required_defaults(method: &str, mut v: Value) -> Value {
    let defaults: &[(&str, Value)] = match method {
        "ListTasks" => &[
            ("tasks", json!([])),
            ("nextPageToken", json!("")),
            ("pageSize", json!(0)),
            ("totalSize", json!(0)),
        ],
        "ListTaskPushNotificationConfigs" => {
            &[("configs", json!([])), ("nextPageToken", json!(""))]
        }
        "ListTaskEvents" => &[("events", json!([])), ("nextPageToken", json!(""))],
        _ => &[],
    };
    if let Some(m) = v.as_object_mut() {
        for (k, d) in defaults {
            m.entry(k.to_string()).or_insert_with(|| d.clone());
        }
    }
    v
}

/// A gRPC status as the JSON-RPC error response: the code of its ErrorInfo reason (checking
/// that the status code is the table's for that reason), `data` = [the ErrorInfo as ProtoJSON].
/// A status without ErrorInfo (tonic's own answer, e.g. to an RPC the service lacks) keeps
/// `data` empty, with the JSON-RPC code all rows of its gRPC code share.
pub fn grpc_error(s: &Status, table: ErrorTable) -> Value {
    match s.get_details_error_info() {
        Some(info) => {
            let kinds = kinds_with_reason(&info.reason);
            assert!(
                kinds
                    .iter()
                    .any(|k| code_named(k.wire_for(table).grpc) == s.code()),
                "gRPC {:?} is not the table's code for {} ({kinds:?}): {s:?}",
                s.code(),
                info.reason
            );
            let mut data = json!({
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": info.reason,
                "domain": info.domain,
            });
            if !info.metadata.is_empty() {
                let sorted: BTreeMap<_, _> = info.metadata.into_iter().collect();
                data["metadata"] = json!(sorted);
            }
            rpc_error(json_rpc_code(&info.reason), s.message(), vec![data])
        }
        None => {
            let codes: Vec<i32> = ERROR_KINDS
                .into_iter()
                .filter(|k| code_named(k.wire_for(table).grpc) == s.code())
                .map(|k| k.wire().json_rpc)
                .collect();
            assert!(
                !codes.is_empty() && codes.iter().all(|c| *c == codes[0]),
                "gRPC {:?} without ErrorInfo maps to no single JSON-RPC code: {s:?}",
                s.code()
            );
            rpc_error(i64::from(codes[0]), s.message(), Vec::new())
        }
    }
}

/// A request with `a2a-version: 1.0`, the bearer token and the extra headers as metadata
/// (lowercase keys).
pub(crate) fn grpc_request<T>(
    message: T,
    token: Option<&str>,
    extra: &[(&str, &str)],
) -> Request<T> {
    let mut r = Request::new(message);
    let m = r.metadata_mut();
    m.insert("a2a-version", MetadataValue::from_static("1.0"));
    if let Some(t) = token {
        m.insert(
            "authorization",
            format!("Bearer {t}").parse().expect("ascii token"),
        );
    }
    for (k, v) in extra {
        let key = MetadataKey::from_bytes(k.to_ascii_lowercase().as_bytes())
            .unwrap_or_else(|e| panic!("metadata key {k:?}: {e}"));
        let value = v
            .parse()
            .unwrap_or_else(|e| panic!("metadata value {v:?}: {e}"));
        // The version replaces the default; other keys may repeat (`a2a-extensions`).
        if key == "a2a-version" {
            m.insert(key, value);
        } else {
            m.append(key, value);
        }
    }
    r
}

/// A call over gRPC, as its JSON-RPC response object.
pub(crate) async fn grpc_call(
    server: &crate::Server,
    method: &str,
    params: Value,
    extra: &[(&str, &str)],
) -> Value {
    let endpoint = server.grpc.as_ref().unwrap_or_else(|| {
        panic!("this server does not serve gRPC (start it with Server::start_with)")
    });
    let table = server.error_table;
    let token = server.token.as_deref();
    let mut client = A2aServiceClient::new(endpoint.channel.clone());
    let fail = |why: String| -> ! { panic!("{method} {params} over gRPC: {why}") };
    macro_rules! unary {
        ($rpc:ident, $req:ty) => {{
            let message: $req = grpc_message(&params).unwrap_or_else(|why| fail(why));
            match client.$rpc(grpc_request(message, token, extra)).await {
                Ok(reply) => Ok(convert::to_protojson(reply.get_ref())
                    .unwrap_or_else(|e| fail(format!("the reply: {e}")))),
                Err(s) => Err(s),
            }
        }};
    }
    macro_rules! streaming {
        ($rpc:ident, $req:ty) => {{
            let message: $req = grpc_message(&params).unwrap_or_else(|why| fail(why));
            match client.$rpc(grpc_request(message, token, extra)).await {
                Ok(_) => fail("a stream: call() answers single replies only".into()),
                Err(s) => Err(s),
            }
        }};
    }
    let outcome: Result<Value, Status> = match method {
        "SendMessage" => unary!(send_message, pb::SendMessageRequest),
        "SendStreamingMessage" => streaming!(send_streaming_message, pb::SendMessageRequest),
        "GetTask" => unary!(get_task, pb::GetTaskRequest),
        "ListTasks" => unary!(list_tasks, pb::ListTasksRequest),
        "CancelTask" => unary!(cancel_task, pb::CancelTaskRequest),
        "SubscribeToTask" => streaming!(subscribe_to_task, pb::SubscribeToTaskRequest),
        "CreateTaskPushNotificationConfig" => unary!(
            create_task_push_notification_config,
            pb::TaskPushNotificationConfig
        ),
        "GetTaskPushNotificationConfig" => unary!(
            get_task_push_notification_config,
            pb::GetTaskPushNotificationConfigRequest
        ),
        "ListTaskPushNotificationConfigs" => unary!(
            list_task_push_notification_configs,
            pb::ListTaskPushNotificationConfigsRequest
        ),
        "DeleteTaskPushNotificationConfig" => {
            let message: pb::DeleteTaskPushNotificationConfigRequest =
                grpc_message(&params).unwrap_or_else(|why| fail(why));
            client
                .delete_task_push_notification_config(grpc_request(message, token, extra))
                .await
                .map(|_| json!({}))
        }
        "GetExtendedAgentCard" => {
            unary!(get_extended_agent_card, pb::GetExtendedAgentCardRequest)
        }
        "ListTaskEvents" => {
            let message: epb::ListTaskEventsRequest =
                grpc_message(&params).unwrap_or_else(|why| fail(why));
            let mut events = TaskEventsClient::new(endpoint.channel.clone());
            match events
                .list_task_events(grpc_request(message, token, extra))
                .await
            {
                Ok(reply) => Ok(convert::to_protojson(reply.get_ref())
                    .unwrap_or_else(|e| fail(format!("the reply: {e}")))),
                Err(s) => Err(s),
            }
        }
        // No RPC of this name: the service's path with it, an empty message.
        other => {
            params_object(&params).unwrap_or_else(|why| fail(why));
            let path =
                PathAndQuery::from_str(&format!("/lf.a2a.v1.A2AService/{}", encode_segment(other)))
                    .unwrap_or_else(|e| fail(format!("path: {e}")));
            let mut grpc = tonic::client::Grpc::new(endpoint.channel.clone());
            grpc.ready()
                .await
                .unwrap_or_else(|e| fail(format!("not ready: {e}")));
            let codec = tonic_prost::ProstCodec::<(), ()>::default();
            grpc.unary(grpc_request((), token, extra), path, codec)
                .await
                .map(|_| json!({}))
        }
    };
    match outcome {
        Ok(v) => rpc_result(with_required_defaults(method, v)),
        Err(s) => grpc_error(&s, table),
    }
}

/// The gRPC side of a server: its address and a (lazily connecting) channel.
#[derive(Clone, Debug)]
pub struct GrpcEndpoint {
    pub addr: std::net::SocketAddr,
    pub channel: Channel,
}

impl GrpcEndpoint {
    pub fn new(addr: std::net::SocketAddr) -> Self {
        let channel = Channel::from_shared(format!("http://{addr}"))
            .expect("uri")
            .connect_lazy();
        Self { addr, channel }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_map_back_to_their_json_rpc_codes() {
        assert_eq!(json_rpc_code("TASK_NOT_FOUND"), -32001);
        assert_eq!(json_rpc_code("CONTENT_TYPE_NOT_SUPPORTED"), -32005);
        assert_eq!(json_rpc_code("METHOD_NOT_ALLOWED"), -32601);
        for k in ERROR_KINDS {
            assert_eq!(json_rpc_code(k.wire().reason), i64::from(k.wire().json_rpc));
        }
    }

    #[test]
    fn methods_map_to_their_http_json_requests() {
        let r = rest_request("GetTask", &json!({"id": "a:b/c", "history_length": 1})).unwrap();
        assert_eq!(r.method, HttpMethod::GET);
        assert_eq!(r.path, "/tasks/a%3Ab%2Fc");
        assert_eq!(r.query, [("historyLength".to_string(), "1".to_string())]);
        let r = rest_request("CancelTask", &json!({"id": "t", "tenant": "acme"})).unwrap();
        assert_eq!(
            (r.method, r.path.as_str()),
            (HttpMethod::POST, "/acme/tasks/t:cancel")
        );
        assert_eq!(r.body, Some(json!({})));
        let r = rest_request(
            "CreateTaskPushNotificationConfig",
            &json!({"task_id": "t", "url": "u"}),
        )
        .unwrap();
        assert_eq!(r.path, "/tasks/t/pushNotificationConfigs");
        assert_eq!(r.body, Some(json!({"url": "u"})));
        let r = rest_request(
            "DeleteTaskPushNotificationConfig",
            &json!({"taskId": "t", "id": "c"}),
        )
        .unwrap();
        assert_eq!(
            (r.method, r.path.as_str()),
            (HttpMethod::DELETE, "/tasks/t/pushNotificationConfigs/c")
        );
        let r = rest_request(
            "ListTasks",
            &json!({"page_size": 2, "includeArtifacts": true, "pageToken": null}),
        )
        .unwrap();
        assert_eq!(
            r.query,
            [
                ("includeArtifacts".to_string(), "true".to_string()),
                ("pageSize".to_string(), "2".to_string())
            ]
        );
        assert_eq!(
            rest_request("NoSuchMethod", &json!({})).unwrap().path,
            "/NoSuchMethod"
        );
        assert!(rest_request("GetTask", &json!({})).is_err());
        assert!(rest_request("ListTasks", &json!({"pageToken": {}})).is_err());
        let r = rest_request("ListTasks", &json!({"message": {"a": 1}, "x": 1})).unwrap();
        assert!(r.query.is_empty(), "no fields of ListTasksRequest");
        assert!(rest_request("SendMessage", &json!([1])).is_err());
    }

    #[test]
    fn params_a_grpc_client_cannot_send_are_said_so() {
        assert!(grpc_expressible("ListTasks", &json!({"status": "TASK_STATE_BOGUS"})).is_err());
        assert!(grpc_expressible("GetTask", &json!({"id": 5})).is_err());
        assert!(grpc_expressible("ListTasks", &json!({"pageSize": 9_999_999_999_i64})).is_err());
        assert!(grpc_expressible(
            "ListTasks",
            &json!({"page_size": 2, "status": "TASK_STATE_WORKING"})
        )
        .is_ok());
        assert!(grpc_expressible("GetTask", &json!(null)).is_ok());
    }
}
