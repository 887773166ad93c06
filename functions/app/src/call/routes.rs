//! The HTTP+JSON binding's one route table (A2A §11, with A2A 0.3's `/v1/…` paths as rows beside
//! 1.x's, ADR 031): each row a path pattern below the binding's base — after an optional
//! `/{tenant}` segment — and what each HTTP method on it runs, and where that method's request
//! object comes from. Ids are percent-decoded path segments; a `{id}:{verb}` segment splits at
//! its last `:` before decoding (an id holding `:` or `/` is sent encoded, `%3A`, `%2F`), and a
//! segment whose verb no row names is an id (on GET: the task itself) or, on another method, no
//! operation at all.

use taskledger_domain::error::ErrorKind;

use super::Entry;
use crate::error::AppError;
use crate::operations::Method;
use crate::v03::jsonrpc::Method03;

/// A segment of a row's path pattern.
#[derive(Debug, Clone, Copy)]
enum Seg {
    /// This literal.
    Lit(&'static str),
    /// Any segment: an id for the request field named (refused as the label says).
    Id(&'static str, &'static str),
    /// `{id}:verb`: the id for the field named, and this verb.
    Verb(&'static str, &'static str),
}

/// Where an operation's request object comes from besides the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The request body (JSON).
    Body,
    /// The query string (GET, DELETE; a body is read and dropped).
    Query,
}

/// What one HTTP method on a row's path runs.
struct Op {
    http: &'static str,
    entry: Entry,
    source: Source,
}

/// A row of the table: a path pattern and its methods (in the order `Allow` lists them).
struct Row {
    path: &'static [Seg],
    ops: &'static [Op],
}

const fn op(http: &'static str, entry: Entry, source: Source) -> Op {
    Op {
        http,
        entry,
        source,
    }
}

use Entry::{V03, V1};
use Seg::{Id, Lit, Verb};
use Source::{Body, Query};

/// The segment every A2A 0.3 path starts with (below a tenant): `/v1/` always means 0.3.
const V03_ROOT: &str = "v1";

const ROUTES: &[Row] = &[
    // A2A 1.x (§11.3)
    Row {
        path: &[Lit("message:send")],
        ops: &[op("POST", V1(Method::SendMessage), Body)],
    },
    Row {
        path: &[Lit("message:stream")],
        ops: &[op("POST", V1(Method::SendStreamingMessage), Body)],
    },
    Row {
        path: &[Lit("extendedAgentCard")],
        ops: &[op("GET", V1(Method::GetExtendedAgentCard), Query)],
    },
    Row {
        path: &[Lit("tasks")],
        ops: &[op("GET", V1(Method::ListTasks), Query)],
    },
    Row {
        path: &[Lit("tasks"), Verb("id", "cancel")],
        ops: &[op("POST", V1(Method::CancelTask), Body)],
    },
    Row {
        path: &[Lit("tasks"), Verb("id", "subscribe")],
        ops: &[
            op("GET", V1(Method::SubscribeToTask), Query),
            op("POST", V1(Method::SubscribeToTask), Body),
        ],
    },
    Row {
        path: &[Lit("tasks"), Id("id", "id")],
        ops: &[op("GET", V1(Method::GetTask), Query)],
    },
    Row {
        path: &[Lit("tasks"), Id("id", "id"), Lit("events")],
        ops: &[op("GET", V1(Method::ListTaskEvents), Query)],
    },
    Row {
        path: &[
            Lit("tasks"),
            Id("taskId", "taskId"),
            Lit("pushNotificationConfigs"),
        ],
        ops: &[
            op("GET", V1(Method::ListTaskPushNotificationConfigs), Query),
            op("POST", V1(Method::CreateTaskPushNotificationConfig), Body),
        ],
    },
    Row {
        path: &[
            Lit("tasks"),
            Id("taskId", "taskId"),
            Lit("pushNotificationConfigs"),
            Id("id", "configId"),
        ],
        ops: &[
            op("GET", V1(Method::GetTaskPushNotificationConfig), Query),
            op(
                "DELETE",
                V1(Method::DeleteTaskPushNotificationConfig),
                Query,
            ),
        ],
    },
    // A2A 0.3 (its HTTP+JSON binding; `GET /v1/tasks` has no 0.3 operation)
    Row {
        path: &[Lit(V03_ROOT), Lit("message:send")],
        ops: &[op("POST", V03(Method03::Send), Body)],
    },
    Row {
        path: &[Lit(V03_ROOT), Lit("message:stream")],
        ops: &[op("POST", V03(Method03::Stream), Body)],
    },
    Row {
        path: &[Lit(V03_ROOT), Lit("card")],
        ops: &[op("GET", V03(Method03::ExtendedCard), Query)],
    },
    Row {
        path: &[Lit(V03_ROOT), Lit("tasks"), Verb("id", "cancel")],
        ops: &[op("POST", V03(Method03::Cancel), Query)],
    },
    // The spec's text says POST, the proto and the 0.3 Python client GET.
    Row {
        path: &[Lit(V03_ROOT), Lit("tasks"), Verb("id", "subscribe")],
        ops: &[
            op("GET", V03(Method03::Resubscribe), Query),
            op("POST", V03(Method03::Resubscribe), Query),
        ],
    },
    Row {
        path: &[Lit(V03_ROOT), Lit("tasks"), Id("id", "id")],
        ops: &[op("GET", V03(Method03::Get), Query)],
    },
    Row {
        path: &[
            Lit(V03_ROOT),
            Lit("tasks"),
            Id("taskId", "taskId"),
            Lit("pushNotificationConfigs"),
        ],
        ops: &[
            op("GET", V03(Method03::ListPushConfigs), Query),
            op("POST", V03(Method03::SetPushConfig), Body),
        ],
    },
    Row {
        path: &[
            Lit(V03_ROOT),
            Lit("tasks"),
            Id("taskId", "taskId"),
            Lit("pushNotificationConfigs"),
            Id("configId", "configId"),
        ],
        ops: &[
            op("GET", V03(Method03::GetPushConfig), Query),
            op("DELETE", V03(Method03::DeletePushConfig), Query),
        ],
    },
];

/// A path's route: the entry it runs, where its request comes from, the tenant and the ids its
/// path names (field, value), decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestRoute {
    pub entry: Entry,
    pub source: Source,
    pub tenant: Option<String>,
    pub ids: Vec<(&'static str, String)>,
}

impl RestRoute {
    /// The id the path names for `field`.
    pub fn id(&self, field: &str) -> Option<&str> {
        self.ids
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, v)| v.as_str())
    }
}

/// The id and verb of a `{id}:{verb}` segment (the last `:`), if it reads as one.
fn split_verb(raw: &str) -> Option<(&str, &str)> {
    raw.rsplit_once(':').filter(|(id, _)| !id.is_empty())
}

/// Whether `segments` fit `pattern`.
fn fits(pattern: &[Seg], segments: &[&str]) -> bool {
    pattern.len() == segments.len()
        && pattern.iter().zip(segments).all(|(p, s)| match p {
            Lit(l) => l == s,
            Id(..) => !s.is_empty(),
            Verb(_, verb) => split_verb(s).is_some_and(|(_, v)| v == *verb),
        })
}

/// A path's segments: its tenant (a first segment no row starts with) and the rest.
fn tenant_and_rest<'a>(segments: &'a [&'a str]) -> (Option<&'a str>, &'a [&'a str]) {
    let starts_a_row = |s: &str| {
        ROUTES
            .iter()
            .any(|r| matches!(r.path.first(), Some(Lit(l)) if *l == s))
    };
    match segments.split_first() {
        Some((first, rest)) if !first.is_empty() && !starts_a_row(first) => (Some(*first), rest),
        _ => (None, segments),
    }
}

/// Whether `path` (below the binding's base) is A2A 0.3's: `/v1/…`, after a tenant or not.
pub fn is_v03_path(path: &str) -> bool {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    tenant_and_rest(&segments).1.first() == Some(&V03_ROOT)
}

/// The route of `http` on `path` (below the binding's base).
pub fn rest_route(http: &str, path: &str) -> Result<RestRoute, AppError> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (tenant, rest) = tenant_and_rest(&segments);
    let v03 = rest.first() == Some(&V03_ROOT);
    let not_found = || {
        let what = if v03 {
            "A2A 0.3 HTTP+JSON"
        } else {
            "HTTP+JSON"
        };
        AppError::protocol(
            ErrorKind::MethodNotFound,
            format!("no {what} operation at {path}"),
        )
        .with("path", path)
    };
    let fitting: Vec<&Row> = ROUTES.iter().filter(|r| fits(r.path, rest)).collect();
    // A segment whose verb a row names is that row's, never an id holding a `:`.
    let verbed: Vec<&Row> = fitting
        .iter()
        .filter(|r| r.path.iter().any(|s| matches!(s, Verb(..))))
        .copied()
        .collect();
    let rows = if verbed.is_empty() { fitting } else { verbed };
    let Some(first) = rows.first() else {
        return Err(not_found());
    };
    let Some((row, op)) = rows
        .iter()
        .find_map(|r| r.ops.iter().find(|o| o.http == http).map(|o| (r, o)))
    else {
        // A verb no row names, on a method the task itself does not take: no such operation.
        let unknown_verb = first
            .path
            .iter()
            .zip(rest)
            .any(|(p, s)| matches!(p, Id(..)) && split_verb(s).is_some());
        if unknown_verb {
            return Err(not_found());
        }
        let allowed: Vec<&str> = first.ops.iter().map(|o| o.http).collect();
        let allowed = allowed.join(", ");
        return Err(AppError::protocol(
            ErrorKind::MethodNotAllowed,
            format!("{http} is not allowed on {path} (allowed: {allowed})"),
        )
        .with("allow", allowed));
    };
    let mut ids = Vec::new();
    for (p, s) in row.path.iter().zip(rest) {
        match p {
            Lit(_) => {}
            Id(field, label) => ids.push((*field, crate::request::path_segment(s, label)?)),
            Verb(field, _) => {
                let (raw, _) = split_verb(s).unwrap_or((s, ""));
                ids.push((*field, crate::request::path_segment(raw, field)?));
            }
        }
    }
    Ok(RestRoute {
        entry: op.entry,
        source: op.source,
        tenant: tenant
            .map(|t| crate::request::path_segment(t, "tenant"))
            .transpose()?,
        ids,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_reached_by_its_own_paths_and_the_0_3_rows_only_below_v1() {
        for row in ROUTES {
            let path: Vec<String> = row
                .path
                .iter()
                .map(|s| match s {
                    Lit(l) => l.to_string(),
                    Id(..) => "x-1".into(),
                    Verb(_, v) => format!("x-1:{v}"),
                })
                .collect();
            let path = format!("/{}", path.join("/"));
            for op in row.ops {
                for p in [path.clone(), format!("/acme{path}")] {
                    let r = rest_route(op.http, &p).unwrap();
                    assert_eq!(
                        (r.entry, r.source),
                        (op.entry, op.source),
                        "{} {p}",
                        op.http
                    );
                    assert_eq!(
                        r.entry.is_v03(),
                        path.starts_with("/v1/"),
                        "{} {p}",
                        op.http
                    );
                }
            }
        }
    }

    #[test]
    fn a_0_3_route_names_its_tenant_task_and_config() {
        let r = rest_route("DELETE", "/acme/v1/tasks/t%2F1/pushNotificationConfigs/c").unwrap();
        assert_eq!(r.entry, V03(Method03::DeletePushConfig));
        assert_eq!(r.tenant.as_deref(), Some("acme"));
        assert_eq!(r.id("taskId"), Some("t/1"));
        assert_eq!(r.id("configId"), Some("c"));
        let e = rest_route("GET", "/v1/tasks").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::MethodNotFound);
        assert!(e.client_message().contains("0.3"), "{}", e.client_message());
        let e = rest_route("POST", "/v1/tasks/t:frobnicate").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::MethodNotFound);
    }
}
