//! HTTP+JSON routes of A2A 1.x (A2A §11): a row of the one route table (`call::rest_route`,
//! where 0.3's `/v1/…` rows sit beside these) as the operation's request fields, and camelCase
//! query parameters typed as their request fields expect.

use serde_json::{json, Map, Value};
use taskledger_domain::error::ErrorKind;

use crate::call::{Entry, RestRoute, Source};
use crate::error::AppError;
use crate::operations::Method;

/// Where a request goes: its operation, and the request fields its path fills.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub method: Method,
    pub fields: Map<String, Value>,
    /// The request object comes from the query (GET, DELETE) rather than the body.
    pub from_query: bool,
}

impl Route {
    /// The 1.x route a route of the table is (its ids and tenant as request fields); a 0.3
    /// row is not one (`call::Route03`).
    pub fn of(route: RestRoute) -> Result<Self, AppError> {
        let Entry::V1(method) = route.entry else {
            return Err(AppError::protocol(
                ErrorKind::Internal,
                "an A2A 0.3 route reached the 1.x HTTP+JSON handler",
            ));
        };
        let mut fields = Map::new();
        if let Some(t) = route.tenant {
            fields.insert("tenant".into(), json!(t));
        }
        for (field, value) in route.ids {
            fields.insert(field.into(), json!(value));
        }
        Ok(Route {
            method,
            fields,
            from_query: route.source == Source::Query,
        })
    }
}

/// The 1.x route of `http_method` on `path` (below the binding's base path).
#[cfg(test)]
pub(crate) fn route(http_method: &str, path: &str) -> Result<Route, AppError> {
    Route::of(crate::call::rest_route(http_method, path)?)
}

/// How a query parameter is typed in its request object.
#[derive(Clone, Copy)]
enum Kind {
    Text,
    Int,
    Bool,
}

/// The query parameters each operation reads, camelCase (their snake_case names too).
fn parameters(method: Method) -> &'static [(&'static str, &'static str, Kind)] {
    match method {
        Method::ListTasks => &[
            ("contextId", "context_id", Kind::Text),
            ("status", "status", Kind::Text),
            ("pageSize", "page_size", Kind::Int),
            ("pageToken", "page_token", Kind::Text),
            ("historyLength", "history_length", Kind::Int),
            ("statusTimestampAfter", "status_timestamp_after", Kind::Text),
            ("includeArtifacts", "include_artifacts", Kind::Bool),
            ("timelineLength", "timeline_length", Kind::Int),
            // taskledger's sharing filter (ADR 021)
            ("scope", "scope", Kind::Text),
        ],
        // An int64 (draft A2A 1.1) stays text: the request type reads ProtoJSON's decimal string.
        Method::GetTask => &[
            ("historyLength", "history_length", Kind::Int),
            ("currentGeneration", "current_generation", Kind::Text),
            ("timelineLength", "timeline_length", Kind::Int),
            // taskledger's events extension
            ("asOfGeneration", "as_of_generation", Kind::Text),
        ],
        Method::SubscribeToTask => &[
            ("historyLength", "history_length", Kind::Int),
            // taskledger's events extension: from after this event
            ("after", "after", Kind::Text),
        ],
        Method::ListTaskEvents => &[
            ("after", "after", Kind::Text),
            ("limit", "limit", Kind::Int),
            ("pageToken", "page_token", Kind::Text),
        ],
        Method::ListTaskPushNotificationConfigs => &[
            ("pageSize", "page_size", Kind::Int),
            ("pageToken", "page_token", Kind::Text),
        ],
        _ => &[],
    }
}

/// The query's parameters of `method` as request fields: numbers and booleans typed, each at
/// most once; parameters the operation does not read are ignored.
pub fn query_fields(method: Method, query: Option<&str>) -> Result<Map<String, Value>, AppError> {
    let mut out = Map::new();
    for (key, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        let Some((name, _, kind)) = parameters(method)
            .iter()
            .find(|(camel, snake, _)| key == *camel || key == *snake)
        else {
            continue;
        };
        if out.contains_key(*name) {
            return Err(AppError::invalid_params(
                *name,
                "is given more than once in the query",
            ));
        }
        let typed = match kind {
            Kind::Text => json!(value),
            Kind::Int => json!(value.parse::<i64>().map_err(|_| {
                AppError::invalid_params(*name, format!("must be a whole number (got {value:?})"))
            })?),
            Kind::Bool => match value.as_ref() {
                "true" => json!(true),
                "false" => json!(false),
                other => {
                    return Err(AppError::invalid_params(
                        *name,
                        format!("must be true or false (got {other:?})"),
                    ))
                }
            },
        };
        out.insert((*name).to_string(), typed);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(r: Result<Route, AppError>) -> ErrorKind {
        r.expect_err("refused").kind()
    }

    #[test]
    fn every_operation_has_its_path_with_or_without_a_tenant() {
        let cases = [
            ("POST", "/message:send", Method::SendMessage),
            ("POST", "/message:stream", Method::SendStreamingMessage),
            ("GET", "/tasks", Method::ListTasks),
            ("GET", "/tasks/t-1", Method::GetTask),
            ("POST", "/tasks/t-1:cancel", Method::CancelTask),
            ("GET", "/tasks/t-1:subscribe", Method::SubscribeToTask),
            ("POST", "/tasks/t-1:subscribe", Method::SubscribeToTask),
            (
                "POST",
                "/tasks/t-1/pushNotificationConfigs",
                Method::CreateTaskPushNotificationConfig,
            ),
            (
                "GET",
                "/tasks/t-1/pushNotificationConfigs",
                Method::ListTaskPushNotificationConfigs,
            ),
            (
                "GET",
                "/tasks/t-1/pushNotificationConfigs/c-1",
                Method::GetTaskPushNotificationConfig,
            ),
            (
                "DELETE",
                "/tasks/t-1/pushNotificationConfigs/c-1",
                Method::DeleteTaskPushNotificationConfig,
            ),
            ("GET", "/extendedAgentCard", Method::GetExtendedAgentCard),
            ("GET", "/tasks/t-1/events", Method::ListTaskEvents),
        ];
        for (http, path, method) in cases {
            assert_eq!(route(http, path).unwrap().method, method, "{http} {path}");
            let tenanted = route(http, &format!("/acme{path}")).unwrap();
            assert_eq!(tenanted.method, method, "{http} /acme{path}");
            assert_eq!(tenanted.fields["tenant"], "acme");
        }
        let r = route("DELETE", "/tasks/t-1/pushNotificationConfigs/c-1").unwrap();
        assert_eq!(r.fields["taskId"], "t-1");
        assert_eq!(r.fields["id"], "c-1");
    }

    #[test]
    fn ids_holding_colons_and_slashes_are_sent_encoded() {
        let r = route("POST", "/tasks/a%3Ab%2Fc:cancel").unwrap();
        assert_eq!(r.method, Method::CancelTask);
        assert_eq!(r.fields["id"], "a:b/c");
        let r = route("POST", "/tasks/a:b:cancel").unwrap();
        assert_eq!(r.fields["id"], "a:b", "the last colon is the verb's");
        let r = route("GET", "/tasks/a:b").unwrap();
        assert_eq!(r.method, Method::GetTask);
        assert_eq!(
            r.fields["id"], "a:b",
            "GET knows no verb b: the id holds a colon"
        );
    }

    #[test]
    fn unknown_verbs_and_paths_are_not_found_and_wrong_methods_not_allowed() {
        assert_eq!(
            kind(route("POST", "/tasks/x:frobnicate")),
            ErrorKind::MethodNotFound
        );
        assert_eq!(
            kind(route("GET", "/nothing/here/at/all")),
            ErrorKind::MethodNotFound
        );
        assert_eq!(
            kind(route("GET", "/message:send")),
            ErrorKind::MethodNotAllowed
        );
        assert_eq!(kind(route("DELETE", "/tasks")), ErrorKind::MethodNotAllowed);
        assert_eq!(
            kind(route("POST", "/tasks/t-1")),
            ErrorKind::MethodNotAllowed
        );
        assert_eq!(
            kind(route("GET", "/tasks/t-1:cancel")),
            ErrorKind::MethodNotAllowed
        );
        assert_eq!(
            kind(route("POST", "/tasks/%FF:cancel")),
            ErrorKind::InvalidParams
        );
    }

    #[test]
    fn query_parameters_are_typed_once_each() {
        let q = query_fields(
            Method::ListTasks,
            Some("pageSize=2&status=TASK_STATE_COMPLETED&includeArtifacts=true&context_id=c%201&other=x"),
        )
        .unwrap();
        assert_eq!(q["pageSize"], 2);
        assert_eq!(q["status"], "TASK_STATE_COMPLETED");
        assert_eq!(q["includeArtifacts"], true);
        assert_eq!(q["contextId"], "c 1");
        assert!(!q.contains_key("other"));
        let bad = |query: &str| {
            query_fields(Method::ListTasks, Some(query))
                .expect_err("refused")
                .metadata()["field"]
                .clone()
        };
        assert_eq!(bad("pageSize=abc"), "pageSize");
        assert_eq!(bad("historyLength=1.5"), "historyLength");
        assert_eq!(bad("includeArtifacts=yes"), "includeArtifacts");
        assert_eq!(bad("pageSize=1&page_size=2"), "pageSize");
        let h = query_fields(Method::GetTask, Some("historyLength=-1")).unwrap();
        assert_eq!(
            h["historyLength"], -1,
            "the range is the request's to check"
        );
    }
}
