//! The A2A 0.3 JSON-RPC object shapes, to and from the 1.0 ProtoJSON the operations layer reads
//! and writes: `kind` discriminators (`message`, `task`, `text`/`file`/`data`,
//! `status-update`, `artifact-update`), roles `user`/`agent`, lowercase states
//! (`input-required`), file parts under `file {bytes | uri, mimeType, name}`, a data part's value
//! an object (others wrapped as `{"value": …}` with `metadata.data_part_compat`), a data
//! part's media type in `metadata.mimeType` (0.3 parts have no media type of their own; A2UI
//! 0.8 on A2A 0.3 put it there), `final` on status updates. Pure functions of JSON values;
//! every refusal names the field.

use serde_json::{json, Map, Value};

use crate::error::AppError;

/// Marks a 0.3 data part that wraps a value that is not an object.
pub const DATA_PART_COMPAT: &str = "data_part_compat";
/// Where a 0.3 data part carries its media type.
pub const DATA_MIME_TYPE: &str = "mimeType";

fn object<'a>(v: &'a Value, field: &str) -> Result<&'a Map<String, Value>, AppError> {
    v.as_object()
        .ok_or_else(|| AppError::invalid_params(field, "must be an object"))
}

/// Checks a `kind` against what a 0.3 object of that place is (absent is accepted, as the
/// official 0.3 SDK's models default it).
fn expect_kind(o: &Map<String, Value>, want: &str, field: &str) -> Result<(), AppError> {
    match o.get("kind") {
        None => Ok(()),
        Some(Value::String(k)) if k == want => Ok(()),
        Some(other) => Err(AppError::invalid_params(
            format!("{field}.kind"),
            format!("must be {want:?} here (got {other})"),
        )),
    }
}

/// Copies the members `keys` that are present.
/// A message's members that are the same in 0.3 and 1.0.
const MESSAGE_FIELDS: &[&str] = &[
    "messageId",
    "contextId",
    "taskId",
    "referenceTaskIds",
    "extensions",
    "metadata",
];

fn copy(from: &Map<String, Value>, to: &mut Map<String, Value>, keys: &[&str]) {
    for k in keys {
        if let Some(v) = from.get(*k) {
            to.insert((*k).to_string(), v.clone());
        }
    }
}

// ---- 0.3 → 1.0 (requests) ----

/// A 0.3 `Message` as 1.0 reads it.
pub fn message_in(v: &Value, field: &str) -> Result<Value, AppError> {
    let o = object(v, field)?;
    expect_kind(o, "message", field)?;
    let mut out = Map::new();
    copy(o, &mut out, MESSAGE_FIELDS);
    let role = match o.get("role").and_then(Value::as_str) {
        Some("user") => "ROLE_USER",
        Some("agent") => "ROLE_AGENT",
        Some(other) => {
            return Err(AppError::invalid_params(
                format!("{field}.role"),
                format!("is \"user\" or \"agent\" in A2A 0.3 (got {other:?}; ROLE_USER is 1.0's spelling: send A2A-Version: 1.0 with a 1.0 method)"),
            ))
        }
        None => return Err(AppError::invalid_params(format!("{field}.role"), "is required")),
    };
    out.insert("role".into(), role.into());
    let parts = match o.get("parts") {
        Some(Value::Array(parts)) => parts
            .iter()
            .enumerate()
            .map(|(i, p)| part_in(p, &format!("{field}.parts[{i}]")))
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => {
            return Err(AppError::invalid_params(
                format!("{field}.parts"),
                "must be an array",
            ))
        }
        None => {
            return Err(AppError::invalid_params(
                format!("{field}.parts"),
                "is required",
            ))
        }
    };
    out.insert("parts".into(), Value::Array(parts));
    Ok(Value::Object(out))
}

/// A 0.3 `Part` (`TextPart`, `FilePart`, `DataPart`) as 1.0 reads it.
pub fn part_in(v: &Value, field: &str) -> Result<Value, AppError> {
    let o = object(v, field)?;
    // `type` was the discriminator before 0.3 (0.2): read as `kind` when that is absent.
    let kind = match o.get("kind").or_else(|| o.get("type")) {
        Some(Value::String(k)) => k.as_str(),
        Some(_) => {
            return Err(AppError::invalid_params(
                format!("{field}.kind"),
                "must be a string",
            ))
        }
        // Without `kind`, what the part holds says which it is.
        None if o.contains_key("text") => "text",
        None if o.contains_key("file") => "file",
        None if o.contains_key("data") => "data",
        None => "",
    };
    let mut out = Map::new();
    match kind {
        "text" => {
            let text = o.get("text").filter(|t| t.is_string()).ok_or_else(|| {
                AppError::invalid_params(format!("{field}.text"), "a text part needs its text")
            })?;
            out.insert("text".into(), text.clone());
            copy(o, &mut out, &["metadata"]);
        }
        "file" => {
            let file = o.get("file").ok_or_else(|| {
                AppError::invalid_params(format!("{field}.file"), "a file part needs its file")
            })?;
            let f = object(file, &format!("{field}.file"))?;
            match (f.get("bytes"), f.get("uri")) {
                (Some(b), None) => out.insert("raw".into(), b.clone()),
                (None, Some(u)) => out.insert("url".into(), u.clone()),
                _ => {
                    return Err(AppError::invalid_params(
                        format!("{field}.file"),
                        "holds exactly one of bytes and uri",
                    ))
                }
            };
            if let Some(m) = f.get("mimeType") {
                out.insert("mediaType".into(), m.clone());
            }
            if let Some(n) = f.get("name") {
                out.insert("filename".into(), n.clone());
            }
            copy(o, &mut out, &["metadata"]);
        }
        "data" => {
            let data = o.get("data").ok_or_else(|| {
                AppError::invalid_params(format!("{field}.data"), "a data part needs its data")
            })?;
            let mut metadata = o.get("metadata").and_then(Value::as_object).cloned();
            let wrapped = metadata
                .as_mut()
                .and_then(|m| m.remove(DATA_PART_COMPAT))
                .is_some_and(|w| w == Value::Bool(true));
            let media = metadata
                .as_mut()
                .and_then(|m| m.remove(DATA_MIME_TYPE))
                .or_else(|| o.get("mediaType").cloned());
            let value = match data.get("value") {
                Some(inner) if wrapped => inner.clone(),
                _ => data.clone(),
            };
            out.insert("data".into(), value);
            if let Some(m) = metadata.filter(|m| !m.is_empty()) {
                out.insert("metadata".into(), Value::Object(m));
            }
            if let Some(mt) = media {
                out.insert("mediaType".into(), mt);
            }
        }
        "" => {
            let hint = if o.contains_key("raw") || o.contains_key("url") {
                " (raw and url are 1.0's file fields: a 0.3 file part is {\"kind\": \"file\", \"file\": {\"bytes\" or \"uri\"}})"
            } else {
                ""
            };
            return Err(AppError::invalid_params(
                field,
                format!("a 0.3 part is a text, file or data part{hint}"),
            ));
        }
        other => {
            return Err(AppError::invalid_params(
                format!("{field}.kind"),
                format!("{other:?} is not a part kind (text, file or data)"),
            ))
        }
    }
    Ok(Value::Object(out))
}

/// A 0.3 `PushNotificationConfig` (`{id?, url, token?, authentication?: {schemes[],
/// credentials?}}`) for task `task_id`, as 1.0's flat `TaskPushNotificationConfig`. Without an
/// id, the task's id names it (as 0.3 servers did).
pub fn push_config_in(v: &Value, task_id: &str, field: &str) -> Result<Value, AppError> {
    let o = object(v, field)?;
    let mut out = Map::new();
    out.insert("taskId".into(), task_id.into());
    copy(o, &mut out, &["url", "token"]);
    let id = o
        .get("id")
        .and_then(Value::as_str)
        .filter(|i| !i.is_empty())
        .unwrap_or(task_id);
    out.insert("id".into(), id.into());
    if let Some(auth) = o.get("authentication") {
        let a = object(auth, &format!("{field}.authentication"))?;
        let scheme = match a.get("schemes") {
            Some(Value::Array(s)) => s.first().cloned().unwrap_or(Value::Null),
            _ => {
                return Err(AppError::invalid_params(
                    format!("{field}.authentication.schemes"),
                    "is a list of scheme names",
                ))
            }
        };
        let mut info = Map::new();
        info.insert("scheme".into(), scheme);
        copy(a, &mut info, &["credentials"]);
        out.insert("authentication".into(), Value::Object(info));
    }
    Ok(Value::Object(out))
}

/// A 0.3 `MessageSendParams` (`{message, configuration?, metadata?}`) as 1.0's
/// `SendMessageRequest`: `blocking` becomes `returnImmediately` (absent: blocking, the default
/// of both), `historyLength` 0 (0.3: no limit) unset, `pushNotificationConfig` the flat 1.0
/// config.
pub fn send_params_in(params: &Value) -> Result<Value, AppError> {
    let o = object(params, "params")?;
    let message = o
        .get("message")
        .ok_or_else(|| AppError::invalid_params("params.message", "is required"))?;
    let mut out = Map::new();
    out.insert("message".into(), message_in(message, "params.message")?);
    copy(o, &mut out, &["metadata"]);
    if let Some(c) = o.get("configuration").filter(|c| !c.is_null()) {
        let c = object(c, "params.configuration")?;
        let mut config = Map::new();
        copy(c, &mut config, &["acceptedOutputModes"]);
        if let Some(n) = c
            .get("historyLength")
            .filter(|n| n.as_i64() != Some(0) && !n.is_null())
        {
            config.insert("historyLength".into(), n.clone());
        }
        match c.get("blocking") {
            Some(Value::Bool(b)) => {
                config.insert("returnImmediately".into(), Value::Bool(!b));
            }
            None | Some(Value::Null) => {}
            Some(_) => {
                return Err(AppError::invalid_params(
                    "params.configuration.blocking",
                    "must be true or false",
                ))
            }
        }
        if let Some(p) = c.get("pushNotificationConfig").filter(|p| !p.is_null()) {
            let task = out["message"]
                .get("taskId")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let mut flat = push_config_in(p, &task, "params.configuration.pushNotificationConfig")?;
            if task.is_empty() {
                // A new task's config: the server names it (and fills the task id).
                if let Some(f) = flat.as_object_mut() {
                    f.remove("taskId");
                    if p.get("id")
                        .and_then(Value::as_str)
                        .is_none_or(str::is_empty)
                    {
                        f.remove("id");
                    }
                }
            }
            config.insert("taskPushNotificationConfig".into(), flat);
        }
        out.insert("configuration".into(), Value::Object(config));
    }
    Ok(Value::Object(out))
}

// ---- 1.0 → 0.3 (results and events) ----

/// A 1.0 state as 0.3 writes it (`TASK_STATE_INPUT_REQUIRED` → `input-required`).
pub fn state_out(state: &str) -> &'static str {
    match state {
        "TASK_STATE_SUBMITTED" => "submitted",
        "TASK_STATE_WORKING" => "working",
        "TASK_STATE_INPUT_REQUIRED" => "input-required",
        "TASK_STATE_AUTH_REQUIRED" => "auth-required",
        "TASK_STATE_COMPLETED" => "completed",
        "TASK_STATE_CANCELED" => "canceled",
        "TASK_STATE_FAILED" => "failed",
        "TASK_STATE_REJECTED" => "rejected",
        _ => "unknown",
    }
}

/// A 1.0 `Part` as a 0.3 part.
pub fn part_out(p: &Value) -> Value {
    let Some(o) = p.as_object() else {
        return p.clone();
    };
    let mut out = Map::new();
    if let Some(t) = o.get("text") {
        out.insert("kind".into(), "text".into());
        out.insert("text".into(), t.clone());
    } else if o.contains_key("raw") || o.contains_key("url") {
        out.insert("kind".into(), "file".into());
        let mut file = Map::new();
        if let Some(b) = o.get("raw") {
            file.insert("bytes".into(), b.clone());
        }
        if let Some(u) = o.get("url") {
            file.insert("uri".into(), u.clone());
        }
        if let Some(m) = o.get("mediaType") {
            file.insert("mimeType".into(), m.clone());
        }
        if let Some(n) = o.get("filename") {
            file.insert("name".into(), n.clone());
        }
        out.insert("file".into(), Value::Object(file));
    } else if let Some(d) = o.get("data") {
        out.insert("kind".into(), "data".into());
        let mut m = o
            .get("metadata")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        if d.is_object() {
            out.insert("data".into(), d.clone());
        } else {
            out.insert("data".into(), json!({ "value": d }));
            m.insert(DATA_PART_COMPAT.into(), Value::Bool(true));
        }
        if let Some(mt) = o.get("mediaType") {
            m.insert(DATA_MIME_TYPE.into(), mt.clone());
        }
        if !m.is_empty() {
            out.insert("metadata".into(), Value::Object(m));
        }
    }
    if !out.contains_key("metadata") {
        copy(o, &mut out, &["metadata"]);
    }
    Value::Object(out)
}

fn parts_out(v: Option<&Value>) -> Value {
    Value::Array(
        v.and_then(Value::as_array)
            .map(|ps| ps.iter().map(part_out).collect())
            .unwrap_or_default(),
    )
}

/// A 1.0 `Message` as a 0.3 message.
pub fn message_out(m: &Value) -> Value {
    let Some(o) = m.as_object() else {
        return m.clone();
    };
    let mut out = Map::new();
    out.insert("kind".into(), "message".into());
    copy(o, &mut out, MESSAGE_FIELDS);
    let role = match o.get("role").and_then(Value::as_str) {
        Some("ROLE_USER") => "user",
        _ => "agent",
    };
    out.insert("role".into(), role.into());
    out.insert("parts".into(), parts_out(o.get("parts")));
    Value::Object(out)
}

/// A 1.0 `TaskStatus` as 0.3 writes it.
pub fn status_out(s: &Value) -> Value {
    let mut out = Map::new();
    let state = s.get("state").and_then(Value::as_str).unwrap_or_default();
    out.insert("state".into(), state_out(state).into());
    if let Some(m) = s.get("message") {
        out.insert("message".into(), message_out(m));
    }
    if let Some(t) = s.get("timestamp") {
        out.insert("timestamp".into(), t.clone());
    }
    Value::Object(out)
}

/// A 1.0 `Artifact` as 0.3 writes it (no `kind`).
pub fn artifact_out(a: &Value) -> Value {
    let Some(o) = a.as_object() else {
        return a.clone();
    };
    let mut out = Map::new();
    copy(
        o,
        &mut out,
        &[
            "artifactId",
            "name",
            "description",
            "metadata",
            "extensions",
        ],
    );
    out.insert("parts".into(), parts_out(o.get("parts")));
    Value::Object(out)
}

/// A 1.0 `Task` as a 0.3 task.
pub fn task_out(t: &Value) -> Value {
    let Some(o) = t.as_object() else {
        return t.clone();
    };
    let mut out = Map::new();
    out.insert("kind".into(), "task".into());
    copy(o, &mut out, &["id", "metadata"]);
    out.insert(
        "contextId".into(),
        o.get("contextId").cloned().unwrap_or_else(|| "".into()),
    );
    task_members(o, &mut out, [status_out, message_out, artifact_out]);
    Value::Object(out)
}

/// A task's status, history and artifacts from `from` into `out`, each through its mapping
/// (`[status, message, artifact]`): the part of a task every direction of translation shares.
pub(super) fn task_members(
    from: &Map<String, Value>,
    out: &mut Map<String, Value>,
    [status, message, artifact]: [fn(&Value) -> Value; 3],
) {
    out.insert(
        "status".into(),
        status(from.get("status").unwrap_or(&Value::Null)),
    );
    if let Some(Value::Array(h)) = from.get("history") {
        out.insert("history".into(), h.iter().map(message).collect());
    }
    if let Some(Value::Array(a)) = from.get("artifacts") {
        out.insert("artifacts".into(), a.iter().map(artifact).collect());
    }
}

/// SendMessage's 1.0 result (`{"task"}` or `{"message"}`) as 0.3's: the object itself.
pub fn send_result_out(r: &Value) -> Value {
    match (r.get("task"), r.get("message")) {
        (Some(t), _) => task_out(t),
        (None, Some(m)) => message_out(m),
        _ => r.clone(),
    }
}

/// One 1.0 `StreamResponse` as a 0.3 stream event. A status update is `final` when it ends
/// the stream: `ends_at` says which states do (terminal ones; for `message/stream` also the
/// interrupted ones, where 0.3 closes the stream for the client to answer).
pub fn event_out(e: &Value, ends_at: impl Fn(&str) -> bool) -> Value {
    if let Some(t) = e.get("task") {
        return task_out(t);
    }
    if let Some(m) = e.get("message") {
        return message_out(m);
    }
    if let Some(u) = e.get("statusUpdate").and_then(Value::as_object) {
        let state = u
            .get("status")
            .and_then(|s| s.get("state"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut out = Map::new();
        out.insert("kind".into(), "status-update".into());
        copy(u, &mut out, &["taskId", "contextId", "metadata"]);
        out.insert(
            "status".into(),
            status_out(u.get("status").unwrap_or(&Value::Null)),
        );
        out.insert("final".into(), Value::Bool(ends_at(state)));
        return Value::Object(out);
    }
    if let Some(u) = e.get("artifactUpdate").and_then(Value::as_object) {
        let mut out = Map::new();
        out.insert("kind".into(), "artifact-update".into());
        copy(
            u,
            &mut out,
            &["taskId", "contextId", "append", "lastChunk", "metadata"],
        );
        out.insert(
            "artifact".into(),
            artifact_out(u.get("artifact").unwrap_or(&Value::Null)),
        );
        return Value::Object(out);
    }
    e.clone()
}

/// A 1.0 flat `TaskPushNotificationConfig` as 0.3's `{taskId, pushNotificationConfig}`.
pub fn push_config_out(c: &Value) -> Value {
    let Some(o) = c.as_object() else {
        return c.clone();
    };
    let mut config = Map::new();
    copy(o, &mut config, &["id", "url", "token"]);
    if let Some(a) = o.get("authentication").and_then(Value::as_object) {
        let mut auth = Map::new();
        let schemes: Vec<Value> = a.get("scheme").cloned().into_iter().collect();
        auth.insert("schemes".into(), Value::Array(schemes));
        copy(a, &mut auth, &["credentials"]);
        config.insert("authentication".into(), Value::Object(auth));
    }
    json!({
        "taskId": o.get("taskId").cloned().unwrap_or_default(),
        "pushNotificationConfig": config,
    })
}

#[cfg(test)]
#[path = "objects_tests.rs"]
mod tests;
