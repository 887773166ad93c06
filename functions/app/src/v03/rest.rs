//! HTTP+JSON requests of A2A 0.3: a `/v1/…` path below the binding's base URL (and below a
//! `/{tenant}` prefix) is a row of the one route table (`call::rest_route`), which names the 0.3
//! method and the ids the path holds (`Route03`); a 0.3 body (ProtoJSON of the 0.3 proto) is read into
//! 0.3's JSON-RPC params, which become the 1.0 request as for JSON-RPC (`jsonrpc`); answers and
//! stream events go back the same way. The HTTP framing is the REST binding's.

use serde_json::{json, Value};

use super::jsonrpc::{self, Method03};
use super::proto_json;
use crate::error::AppError;
use crate::operations::Outcome;

/// A 0.3 route: the method, the ids its path names, and whether it reads a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route03 {
    pub method: Method03,
    pub tenant: Option<String>,
    pub task: Option<String>,
    pub config: Option<String>,
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
    fn history_length_is_read_in_either_spelling() {
        assert_eq!(history_length(Some("historyLength=3")).unwrap(), Some(3));
        assert_eq!(history_length(Some("history_length=2")).unwrap(), Some(2));
        assert_eq!(history_length(None).unwrap(), None);
        assert!(history_length(Some("historyLength=x")).is_err());
    }
}
