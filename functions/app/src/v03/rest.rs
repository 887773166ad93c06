//! HTTP+JSON paths of A2A 0.3: the `/v1/…` paths below the binding's base URL (and below a
//! `/{tenant}` prefix), ahead of the 1.0 routes, so `/v1/` always means 0.3 — parsed into the
//! 0.3 method and the ids the path names; a 0.3 body (ProtoJSON of the 0.3 proto) is read into
//! 0.3's JSON-RPC params, which become the 1.0 request as for JSON-RPC (`jsonrpc`); answers and
//! stream events go back the same way. The HTTP framing is the REST binding's.

use serde_json::{json, Value};
use taskledger_domain::error::ErrorKind;

use super::jsonrpc::{self, Method03};
use super::proto_json;
use crate::error::AppError;
use crate::operations::Outcome;

fn refused(kind: ErrorKind, what: String) -> AppError {
    AppError::protocol(kind, what)
}

/// A 0.3 route: the method, the ids its path names, and whether it reads a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route03 {
    pub method: Method03,
    pub tenant: Option<String>,
    pub task: Option<String>,
    pub config: Option<String>,
}

/// The 0.3 route of a path below the binding's base, if it is a 0.3 path (`/v1/…` or
/// `/{tenant}/v1/…`).
pub fn route(http_method: &str, path: &str) -> Option<Result<Route03, AppError>> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (tenant, rest) = match segments.as_slice() {
        ["v1", rest @ ..] => (None, rest),
        [tenant, "v1", rest @ ..] if !tenant.is_empty() => (Some(*tenant), rest),
        _ => return None,
    };
    Some(route_below(http_method, path, tenant, rest))
}

fn route_below(
    http: &str,
    path: &str,
    tenant: Option<&str>,
    rest: &[&str],
) -> Result<Route03, AppError> {
    let not_allowed = |allowed: &str| {
        Err(refused(
            ErrorKind::MethodNotAllowed,
            format!("{http} is not allowed on {path} (allowed: {allowed})"),
        )
        .with("allow", allowed))
    };
    let mut r = Route03 {
        method: Method03::Get,
        tenant: tenant
            .map(|t| crate::request::path_segment(t, "tenant"))
            .transpose()?,
        task: None,
        config: None,
    };
    let with = |mut r: Route03, m: Method03| {
        r.method = m;
        Ok(r)
    };
    match rest {
        ["message:send"] if http == "POST" => with(r, Method03::Send),
        ["message:stream"] if http == "POST" => with(r, Method03::Stream),
        ["message:send" | "message:stream"] => not_allowed("POST"),
        ["card"] if http == "GET" => with(r, Method03::ExtendedCard),
        ["card"] => not_allowed("GET"),
        ["tasks", last] => {
            let (raw, verb) = match last.rsplit_once(':') {
                Some((id, verb)) if !id.is_empty() => (id, Some(verb)),
                _ => (*last, None),
            };
            match (verb, http) {
                (Some("cancel"), "POST") => {
                    r.task = Some(crate::request::path_segment(raw, "id")?);
                    with(r, Method03::Cancel)
                }
                (Some("cancel"), _) => not_allowed("POST"),
                // The spec's text says POST, the proto and the 0.3 Python client GET.
                (Some("subscribe"), "GET" | "POST") => {
                    r.task = Some(crate::request::path_segment(raw, "id")?);
                    with(r, Method03::Resubscribe)
                }
                (Some("subscribe"), _) => not_allowed("GET, POST"),
                (_, "GET") => {
                    r.task = Some(crate::request::path_segment(last, "id")?);
                    with(r, Method03::Get)
                }
                _ => not_allowed("GET"),
            }
        }
        ["tasks", id, "pushNotificationConfigs"] => {
            r.task = Some(crate::request::path_segment(id, "taskId")?);
            match http {
                "POST" => with(r, Method03::SetPushConfig),
                "GET" => with(r, Method03::ListPushConfigs),
                _ => not_allowed("GET, POST"),
            }
        }
        ["tasks", id, "pushNotificationConfigs", config] => {
            r.task = Some(crate::request::path_segment(id, "taskId")?);
            r.config = Some(crate::request::path_segment(config, "configId")?);
            match http {
                "GET" => with(r, Method03::GetPushConfig),
                "DELETE" => with(r, Method03::DeletePushConfig),
                _ => not_allowed("GET, DELETE"),
            }
        }
        // `GET /v1/tasks` (ListTasks) has no 0.3 operation.
        _ => Err(refused(
            ErrorKind::MethodNotFound,
            format!("no A2A 0.3 HTTP+JSON operation at {path}"),
        )
        .with("path", path)),
    }
}

/// `historyLength` (or `history_length`) from the query.
fn history_length(query: Option<&str>) -> Result<Option<i64>, AppError> {
    for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        if k == "historyLength" || k == "history_length" {
            return v.parse::<i64>().map(Some).map_err(|_| {
                AppError::invalid_params(
                    "historyLength",
                    format!("must be a whole number (got {v:?})"),
                )
            });
        }
    }
    Ok(None)
}

/// The JSON-RPC 0.3 params a route and its body (when it reads one) stand for.
fn params(r: &Route03, body: &Value, query: Option<&str>) -> Result<Value, AppError> {
    let task = r.task.clone().unwrap_or_default();
    Ok(match r.method {
        Method03::Send | Method03::Stream => proto_json::send_request_in(body)?,
        Method03::Get => {
            let mut p = json!({"id": task});
            if let Some(n) = history_length(query)? {
                p["historyLength"] = n.into();
            }
            p
        }
        Method03::Cancel | Method03::Resubscribe | Method03::ListPushConfigs => json!({"id": task}),
        Method03::SetPushConfig => json!({
            "taskId": task,
            "pushNotificationConfig": proto_json::set_config_in(body)?,
        }),
        Method03::GetPushConfig | Method03::DeletePushConfig => json!({
            "id": task,
            "pushNotificationConfigId": r.config.clone().unwrap_or_default(),
        }),
        Method03::ExtendedCard => json!({}),
    })
}

impl Route03 {
    /// Whether the route reads a body (sends and push-config writes).
    pub fn reads_body(&self) -> bool {
        matches!(
            self.method,
            Method03::Send | Method03::Stream | Method03::SetPushConfig
        )
    }

    /// The 1.0 request object of the route, its body and query, with the path's tenant.
    pub fn request(&self, body: &Value, query: Option<&str>) -> Result<Value, AppError> {
        let mut request = jsonrpc::request(self.method, &params(self, body, query)?)?;
        if let (Some(t), Some(o)) = (&self.tenant, request.as_object_mut()) {
            o.insert("tenant".into(), t.clone().into());
        }
        Ok(request)
    }

    /// A result as the 0.3 REST answer (the 0.3 proto's ProtoJSON).
    pub fn answer(&self, outcome: &Outcome) -> Result<Value, AppError> {
        Ok(proto_json::answer(
            self.method,
            &jsonrpc::result(self.method, outcome)?,
        ))
    }

    /// A stream event's `StreamResponse` JSON as the 0.3 REST event.
    pub fn event(&self, body: &str) -> String {
        let event: Value =
            serde_json::from_str(&jsonrpc::stream_event(self.method, body)).unwrap_or_default();
        proto_json::response_out(&event).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_paths_are_0_3_and_others_are_not() {
        let r = |m: &str, p: &str| {
            route(m, p).map(|r| r.map(|r| (r.method, r.tenant, r.task, r.config)))
        };
        assert_eq!(
            r("POST", "/v1/message:send").unwrap().unwrap().0,
            Method03::Send
        );
        assert_eq!(
            r("GET", "/acme/v1/tasks/t%2F1").unwrap().unwrap(),
            (Method03::Get, Some("acme".into()), Some("t/1".into()), None)
        );
        assert_eq!(
            r("GET", "/v1/tasks/t:subscribe").unwrap().unwrap().0,
            Method03::Resubscribe
        );
        assert_eq!(
            r("POST", "/v1/tasks/t:subscribe").unwrap().unwrap().0,
            Method03::Resubscribe
        );
        assert_eq!(
            r("DELETE", "/v1/tasks/t/pushNotificationConfigs/c")
                .unwrap()
                .unwrap(),
            (
                Method03::DeletePushConfig,
                None,
                Some("t".into()),
                Some("c".into())
            )
        );
        assert_eq!(
            r("GET", "/v1/card").unwrap().unwrap().0,
            Method03::ExtendedCard
        );
        let e = route("GET", "/v1/tasks").unwrap().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::MethodNotFound);
        let e = route("PUT", "/v1/message:send").unwrap().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::MethodNotAllowed);
        assert!(route("POST", "/message:send").is_none());
        assert!(route("GET", "/acme/tasks/t").is_none());
    }

    #[test]
    fn history_length_is_read_in_either_spelling() {
        assert_eq!(history_length(Some("historyLength=3")).unwrap(), Some(3));
        assert_eq!(history_length(Some("history_length=2")).unwrap(), Some(2));
        assert_eq!(history_length(None).unwrap(), None);
        assert!(history_length(Some("historyLength=x")).is_err());
    }
}
