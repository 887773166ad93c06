//! A2A 0.3's HTTP+JSON and gRPC shapes: ProtoJSON of the 0.3 proto (`a2a.v1`), which differs
//! from 0.3's JSON-RPC objects — no `kind`, a message's parts in `content`, file parts under
//! `fileWithUri`/`fileWithBytes`, a data part's object under `data.data`, enum names
//! (`ROLE_USER`, `TASK_STATE_CANCELLED` with two Ls), push configs named by resource
//! (`tasks/{t}/pushNotificationConfigs/{c}`). Both directions go through the JSON-RPC shapes
//! (`objects`), so there is one translation to 1.0. Input takes camelCase and snake_case keys.
//!
//! Bytes follow the official Python SDK, which 0.3 REST and gRPC clients use: the proto's
//! `bytes` field holds the UTF-8 of the JSON-RPC shape's base64 text (so its ProtoJSON is the
//! base64 of that base64).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::{json, Map, Value};

use super::jsonrpc::Method03;
use crate::error::AppError;

/// `key` or its snake_case spelling, as ProtoJSON readers accept both.
fn field<'a>(o: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    o.get(key).or_else(|| {
        let mut snake = String::with_capacity(key.len() + 4);
        for c in key.chars() {
            if c.is_ascii_uppercase() {
                snake.push('_');
                snake.push(c.to_ascii_lowercase());
            } else {
                snake.push(c);
            }
        }
        o.get(&snake)
    })
}

fn put(out: &mut Map<String, Value>, key: &str, v: Option<&Value>) {
    if let Some(v) = v.filter(|v| !v.is_null()) {
        out.insert(key.to_string(), v.clone());
    }
}

// ---- 0.3 ProtoJSON → 0.3 JSON-RPC (requests) ----

fn part_in(v: &Value, at: &str) -> Result<Value, AppError> {
    let o = v
        .as_object()
        .ok_or_else(|| AppError::invalid_params(at, "must be an object"))?;
    let mut out = Map::new();
    if let Some(t) = field(o, "text") {
        out.insert("kind".into(), "text".into());
        out.insert("text".into(), t.clone());
    } else if let Some(f) = field(o, "file").and_then(Value::as_object) {
        out.insert("kind".into(), "file".into());
        let mut file = Map::new();
        if let Some(u) = field(f, "fileWithUri") {
            file.insert("uri".into(), u.clone());
        }
        if let Some(b) = field(f, "fileWithBytes").and_then(Value::as_str) {
            // ProtoJSON's base64 of the base64 text the Python SDK put in the bytes.
            let text = STANDARD
                .decode(b)
                .ok()
                .and_then(|raw| String::from_utf8(raw).ok())
                .ok_or_else(|| {
                    AppError::invalid_params(
                        format!("{at}.file.fileWithBytes"),
                        "is not base64 of base64 text",
                    )
                })?;
            file.insert("bytes".into(), text.into());
        }
        put(&mut file, "mimeType", field(f, "mimeType"));
        put(&mut file, "name", field(f, "name"));
        out.insert("file".into(), Value::Object(file));
    } else if let Some(d) = field(o, "data") {
        out.insert("kind".into(), "data".into());
        out.insert("data".into(), d.get("data").cloned().unwrap_or(json!({})));
    } else {
        return Err(AppError::invalid_params(
            at,
            "a 0.3 part holds text, file or data",
        ));
    }
    put(&mut out, "metadata", field(o, "metadata"));
    Ok(Value::Object(out))
}

/// A 0.3 ProtoJSON `Message` in the JSON-RPC shape.
pub fn message_in(v: &Value, at: &str) -> Result<Value, AppError> {
    let o = v
        .as_object()
        .ok_or_else(|| AppError::invalid_params(at, "must be an object"))?;
    let mut out = Map::new();
    out.insert("kind".into(), "message".into());
    for k in ["messageId", "contextId", "taskId", "metadata", "extensions"] {
        put(&mut out, k, field(o, k));
    }
    let role = match field(o, "role").and_then(Value::as_str) {
        Some("ROLE_USER") | Some("user") => "user",
        Some("ROLE_AGENT") | Some("agent") => "agent",
        other => {
            return Err(AppError::invalid_params(
                format!("{at}.role"),
                format!("is ROLE_USER or ROLE_AGENT (got {other:?})"),
            ))
        }
    };
    out.insert("role".into(), role.into());
    let content = field(o, "content")
        .or_else(|| field(o, "parts"))
        .and_then(Value::as_array)
        .ok_or_else(|| AppError::invalid_params(format!("{at}.content"), "is required"))?;
    let parts = content
        .iter()
        .enumerate()
        .map(|(i, p)| part_in(p, &format!("{at}.content[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    out.insert("parts".into(), Value::Array(parts));
    Ok(Value::Object(out))
}

/// A 0.3 ProtoJSON `PushNotificationConfig` in the JSON-RPC shape (the same fields).
fn push_config_in(v: &Value) -> Value {
    let Some(o) = v.as_object() else {
        return v.clone();
    };
    let mut out = Map::new();
    for k in ["id", "url", "token"] {
        put(&mut out, k, field(o, k));
    }
    if let Some(a) = field(o, "authentication").and_then(Value::as_object) {
        let mut auth = Map::new();
        auth.insert(
            "schemes".into(),
            field(a, "schemes").cloned().unwrap_or(json!([])),
        );
        put(&mut auth, "credentials", field(a, "credentials"));
        out.insert("authentication".into(), Value::Object(auth));
    }
    Value::Object(out)
}

/// A 0.3 ProtoJSON `SendMessageRequest` as JSON-RPC `MessageSendParams`. Proto3 cannot tell
/// an absent `blocking` from `false`: absent is non-blocking here, as 0.3 servers read it.
pub fn send_request_in(v: &Value) -> Result<Value, AppError> {
    let o = v
        .as_object()
        .ok_or_else(|| AppError::invalid_params("request", "must be an object"))?;
    let message = field(o, "message")
        .or_else(|| field(o, "request"))
        .ok_or_else(|| AppError::invalid_params("request.message", "is required"))?;
    let mut out = Map::new();
    out.insert("message".into(), message_in(message, "request.message")?);
    put(&mut out, "metadata", field(o, "metadata"));
    let c = field(o, "configuration").and_then(Value::as_object);
    let mut config = Map::new();
    if let Some(c) = c {
        put(
            &mut config,
            "acceptedOutputModes",
            field(c, "acceptedOutputModes"),
        );
        put(&mut config, "historyLength", field(c, "historyLength"));
        if let Some(p) = field(c, "pushNotification") {
            config.insert("pushNotificationConfig".into(), push_config_in(p));
        }
    }
    let blocking = c
        .and_then(|c| field(c, "blocking"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    config.insert("blocking".into(), blocking.into());
    out.insert("configuration".into(), Value::Object(config));
    Ok(Value::Object(out))
}

/// A set-config body in any of the shapes 0.3 clients send — the whole
/// `CreateTaskPushNotificationConfigRequest` (`{parent, configId, config}`), its `config`
/// (`{name, pushNotificationConfig}`), or the bare `PushNotificationConfig` — as the JSON-RPC
/// `pushNotificationConfig`. The config id falls back to `configId`.
pub fn set_config_in(v: &Value) -> Result<Value, AppError> {
    let o = v
        .as_object()
        .ok_or_else(|| AppError::invalid_params("request", "must be an object"))?;
    let config = field(o, "config").unwrap_or(v);
    let inner = config
        .as_object()
        .and_then(|c| field(c, "pushNotificationConfig"))
        .unwrap_or(config);
    let mut out = push_config_in(inner);
    let missing = out
        .get("id")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    if let (true, Some(id), Some(m)) = (missing, field(o, "configId"), out.as_object_mut()) {
        m.insert("id".into(), id.clone());
    }
    Ok(out)
}

// ---- 0.3 JSON-RPC → 0.3 ProtoJSON (results and events) ----

/// A JSON-RPC 0.3 state as the 0.3 proto names it.
fn state_out(s: &str) -> &'static str {
    match s {
        "submitted" => "TASK_STATE_SUBMITTED",
        "working" => "TASK_STATE_WORKING",
        "input-required" => "TASK_STATE_INPUT_REQUIRED",
        "auth-required" => "TASK_STATE_AUTH_REQUIRED",
        "completed" => "TASK_STATE_COMPLETED",
        "canceled" => "TASK_STATE_CANCELLED",
        "failed" => "TASK_STATE_FAILED",
        "rejected" => "TASK_STATE_REJECTED",
        _ => "TASK_STATE_UNSPECIFIED",
    }
}

fn part_out(p: &Value) -> Value {
    let mut out = Map::new();
    match p.get("kind").and_then(Value::as_str) {
        Some("text") => put(&mut out, "text", p.get("text")),
        Some("file") => {
            let f = p.get("file").cloned().unwrap_or_default();
            let mut file = Map::new();
            put(&mut file, "fileWithUri", f.get("uri"));
            if let Some(b) = f.get("bytes").and_then(Value::as_str) {
                file.insert("fileWithBytes".into(), STANDARD.encode(b.as_bytes()).into());
            }
            put(&mut file, "mimeType", f.get("mimeType"));
            put(&mut file, "name", f.get("name"));
            out.insert("file".into(), Value::Object(file));
        }
        Some("data") => {
            out.insert(
                "data".into(),
                json!({"data": p.get("data").cloned().unwrap_or_default()}),
            );
        }
        _ => {}
    }
    put(&mut out, "metadata", p.get("metadata"));
    Value::Object(out)
}

fn parts_out(v: Option<&Value>) -> Value {
    Value::Array(
        v.and_then(Value::as_array)
            .map(|ps| ps.iter().map(part_out).collect())
            .unwrap_or_default(),
    )
}

/// A JSON-RPC 0.3 message in ProtoJSON.
pub fn message_out(m: &Value) -> Value {
    let mut out = Map::new();
    for k in ["messageId", "contextId", "taskId", "metadata", "extensions"] {
        put(&mut out, k, m.get(k));
    }
    let role = match m.get("role").and_then(Value::as_str) {
        Some("user") => "ROLE_USER",
        _ => "ROLE_AGENT",
    };
    out.insert("role".into(), role.into());
    out.insert("content".into(), parts_out(m.get("parts")));
    Value::Object(out)
}

fn status_out(s: &Value) -> Value {
    let mut out = Map::new();
    let state = s.get("state").and_then(Value::as_str).unwrap_or_default();
    out.insert("state".into(), state_out(state).into());
    if let Some(m) = s.get("message") {
        out.insert("message".into(), message_out(m));
    }
    put(&mut out, "timestamp", s.get("timestamp"));
    Value::Object(out)
}

fn artifact_out(a: &Value) -> Value {
    let mut out = Map::new();
    for k in [
        "artifactId",
        "name",
        "description",
        "metadata",
        "extensions",
    ] {
        put(&mut out, k, a.get(k));
    }
    out.insert("parts".into(), parts_out(a.get("parts")));
    Value::Object(out)
}

/// A JSON-RPC 0.3 task in ProtoJSON.
pub fn task_out(t: &Value) -> Value {
    let mut out = Map::new();
    for k in ["id", "contextId", "metadata"] {
        put(&mut out, k, t.get(k));
    }
    if let Some(o) = t.as_object() {
        super::objects::task_members(o, &mut out, [status_out, message_out, artifact_out]);
    }
    Value::Object(out)
}

/// A JSON-RPC 0.3 send result, or stream event, as the ProtoJSON `SendMessageResponse` /
/// `StreamResponse` (one member named for what it holds; `final` only when true).
pub fn response_out(v: &Value) -> Value {
    match v.get("kind").and_then(Value::as_str) {
        Some("task") => json!({"task": task_out(v)}),
        Some("message") => json!({"message": message_out(v)}),
        Some("status-update") => {
            let mut u = Map::new();
            for k in ["taskId", "contextId", "metadata"] {
                put(&mut u, k, v.get(k));
            }
            u.insert(
                "status".into(),
                status_out(v.get("status").unwrap_or(&Value::Null)),
            );
            if v.get("final") == Some(&Value::Bool(true)) {
                u.insert("final".into(), true.into());
            }
            json!({"statusUpdate": u})
        }
        Some("artifact-update") => {
            let mut u = Map::new();
            for k in ["taskId", "contextId", "metadata"] {
                put(&mut u, k, v.get(k));
            }
            for k in ["append", "lastChunk"] {
                if v.get(k) == Some(&Value::Bool(true)) {
                    u.insert(k.into(), true.into());
                }
            }
            u.insert(
                "artifact".into(),
                artifact_out(v.get("artifact").unwrap_or(&Value::Null)),
            );
            json!({"artifactUpdate": u})
        }
        _ => v.clone(),
    }
}

/// A JSON-RPC 0.3 `TaskPushNotificationConfig` as the ProtoJSON one, named by resource.
pub fn push_config_out(c: &Value) -> Value {
    let task = c.get("taskId").and_then(Value::as_str).unwrap_or_default();
    let config = c.get("pushNotificationConfig").cloned().unwrap_or_default();
    let id = config.get("id").and_then(Value::as_str).unwrap_or_default();
    json!({
        "name": format!("tasks/{task}/pushNotificationConfigs/{id}"),
        "pushNotificationConfig": config,
    })
}

/// A JSON-RPC 0.3 result (`jsonrpc::result`) as the HTTP+JSON and gRPC bindings answer it.
pub fn answer(method: Method03, result: &Value) -> Value {
    match method {
        Method03::Send => response_out(result),
        Method03::Get | Method03::Cancel => task_out(result),
        Method03::SetPushConfig | Method03::GetPushConfig => push_config_out(result),
        Method03::ListPushConfigs => json!({
            "configs": result
                .as_array()
                .into_iter()
                .flatten()
                .map(push_config_out)
                .collect::<Vec<_>>(),
        }),
        Method03::DeletePushConfig => json!({}),
        _ => result.clone(),
    }
}

#[cfg(test)]
#[path = "proto_json_tests.rs"]
mod tests;
