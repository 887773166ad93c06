//! The HTTP+JSON binding over real sockets: its error shape (AIP-193 `google.rpc.Status` with
//! an ErrorInfo, the HTTP status from the error table), paths (custom verbs, percent-encoded
//! ids, the tenant prefix), query parameters, bodies and media types, and the extensions echoed
//! on every binding. Each refusal changes nothing.

use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use taskledger_app::grpc::proto as pb;
use taskledger_domain::card::REST_PATH;
use taskledger_domain::error::ErrorTable;
use taskledger_domain::extensions::harness::EXTENSION_URI;
use taskledger_local::GrpcSettings;
use taskledger_tests::binding::{encode_segment, rest_error};
use taskledger_tests::{error_code, test_config, Binding, Server};
use tonic::metadata::MetadataValue;

/// What came back: status, headers, the body as JSON (Null if none).
struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Value,
}

impl Reply {
    /// The error's ErrorInfo, checking the binding's error shape on the way (the body's `code`
    /// is the HTTP status; status and code are the reason's row of the table).
    fn error_info(&self) -> Value {
        assert!(
            !self.status.is_success(),
            "expected an error: {}",
            self.body
        );
        assert_eq!(
            self.headers["content-type"], "application/json",
            "{}",
            self.body
        );
        let rpc = rest_error(self.status, &self.body, ErrorTable::default());
        assert_eq!(
            self.body["error"]["details"].as_array().map(Vec::len),
            Some(1)
        );
        let info = self.body["error"]["details"][0].clone();
        assert_eq!(info["domain"], "a2a-protocol.org");
        assert_eq!(rpc["error"]["data"][0], info);
        info
    }

    fn reason(&self) -> String {
        self.error_info()["reason"].as_str().unwrap().to_string()
    }
}

/// One HTTP+JSON request: `A2A-Version: 1.0` unless `headers` say otherwise.
async fn rest(
    s: &Server,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> Reply {
    let mut req = s
        .client
        .request(method, format!("{}{REST_PATH}{path}", s.base));
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("a2a-version"))
    {
        req = req.header("A2A-Version", "1.0");
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if let Some(b) = body {
        req = req.body(b);
    }
    let resp = req.send().await.expect("request sent");
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = resp.bytes().await.expect("body");
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Reply {
        status,
        headers,
        body,
    }
}

const JSON: (&str, &str) = ("Content-Type", "application/json");

fn send_body(message_id: &str) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"message": {"messageId": message_id, "role": "ROLE_USER",
                                           "parts": [{"text": "hello"}]}}),
    )
    .unwrap()
}

async fn total(s: &Server) -> i64 {
    s.over(Binding::JsonRpc).total_tasks().await
}

#[tokio::test]
async fn an_unknown_task_is_404_task_not_found_with_error_info() {
    let s = Server::start().await;
    let r = rest(&s, Method::GET, "/tasks/nope", &[], None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.body["error"]["code"], 404);
    assert_eq!(r.body["error"]["status"], "NOT_FOUND");
    assert!(r.body["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("nope")));
    let info = r.error_info();
    assert_eq!(info["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
    assert_eq!(info["reason"], "TASK_NOT_FOUND");
    assert_eq!(info["metadata"]["taskId"], "nope");
    for (method, path) in [
        (Method::POST, "/tasks/nope:cancel"),
        (Method::GET, "/tasks/nope/pushNotificationConfigs"),
    ] {
        let r = rest(&s, method, path, &[JSON], None).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}: {}", r.body);
        assert_eq!(r.reason(), "TASK_NOT_FOUND", "{path}");
    }
}

#[tokio::test]
async fn unknown_paths_and_verbs_are_404_and_wrong_methods_405_with_allow() {
    let s = Server::start().await;
    let r = rest(&s, Method::POST, "/tasks/x:frobnicate", &[JSON], None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    assert_eq!(r.reason(), "METHOD_NOT_FOUND");
    assert_eq!(r.body["error"]["status"], "UNIMPLEMENTED");
    for path in ["/nothing/here/at/all", "/message:frobnicate"] {
        let r = rest(&s, Method::GET, path, &[], None).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}: {}", r.body);
        assert_eq!(r.reason(), "METHOD_NOT_FOUND", "{path}");
    }
    // `/v1/…` is A2A 0.3's (ADR 031): an unknown path there is refused in 0.3's shape.
    let resp = s
        .client
        .get(format!("{}{REST_PATH}/v1/tasks/x/y", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["code"], -32601, "{body}");
    for (method, path, allow) in [
        (Method::DELETE, "/tasks", "GET"),
        (Method::GET, "/message:send", "POST"),
        (Method::PUT, "/message:stream", "POST"),
        (Method::POST, "/tasks/t-1", "GET"),
        (Method::GET, "/tasks/t-1:cancel", "POST"),
        (Method::DELETE, "/tasks/t-1:subscribe", "GET, POST"),
        (
            Method::PUT,
            "/tasks/t-1/pushNotificationConfigs",
            "GET, POST",
        ),
        (
            Method::POST,
            "/tasks/t-1/pushNotificationConfigs/c-1",
            "GET, DELETE",
        ),
        (Method::POST, "/extendedAgentCard", "GET"),
        (Method::DELETE, "/acme/tasks", "GET"),
    ] {
        let r = rest(&s, method.clone(), path, &[JSON], None).await;
        assert_eq!(
            r.status,
            StatusCode::METHOD_NOT_ALLOWED,
            "{method} {path}: {}",
            r.body
        );
        assert_eq!(r.headers["allow"], allow, "{method} {path}");
        assert_eq!(r.reason(), "METHOD_NOT_ALLOWED", "{method} {path}");
    }
    assert_eq!(total(&s).await, 0);
}

#[tokio::test]
async fn bad_query_parameters_are_400_invalid_params_naming_the_field() {
    let s = Server::start().await;
    let id = s.over(Binding::JsonRpc).send_task("m", "x").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let cases = [
        ("/tasks?pageSize=abc".to_string(), "pageSize"),
        ("/tasks?pageSize=1.5".to_string(), "pageSize"),
        (
            "/tasks?includeArtifacts=yes".to_string(),
            "includeArtifacts",
        ),
        ("/tasks?pageSize=0".to_string(), "pageSize"),
        ("/tasks?historyLength=-1".to_string(), "historyLength"),
        (format!("/tasks/{id}?historyLength=-1"), "historyLength"),
        (format!("/tasks/{id}?historyLength=x"), "historyLength"),
        ("/tasks?pageSize=1&pageSize=2".to_string(), "pageSize"),
        ("/tasks?pageSize=1&page_size=2".to_string(), "pageSize"),
        (
            format!("/tasks/{id}?historyLength=1&historyLength=1"),
            "historyLength",
        ),
        ("/tasks?status=TASK_STATE_BOGUS".to_string(), "status"),
    ];
    for (path, field) in cases {
        let r = rest(&s, Method::GET, &path, &[], None).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{path}: {}", r.body);
        let info = r.error_info();
        assert_eq!(info["reason"], "INVALID_PARAMS", "{path}");
        // a query value that does not parse names the parameter; one that parses but does not
        // fit its request field names it under the request (`request.status`)
        let named = info["metadata"]["field"].as_str().unwrap_or_default();
        assert_eq!(
            named.strip_prefix("request.").unwrap_or(named),
            field,
            "{path}: {}",
            r.body
        );
    }
    // well-formed ones are served, snake_case too
    let r = rest(
        &s,
        Method::GET,
        &format!("/tasks/{id}?history_length=1"),
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["history"].as_array().map(Vec::len), Some(1));
    let r = rest(
        &s,
        Method::GET,
        "/tasks?pageSize=1&status=TASK_STATE_COMPLETED&includeArtifacts=true",
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["totalSize"], 1);
    assert!(r.body["tasks"][0]["artifacts"].is_array());
}

#[tokio::test]
async fn bodies_are_bounded_json_objects_of_a_json_media_type_and_refusals_change_nothing() {
    let s = Server::start().await;
    let limit = taskledger_app::http::MAX_BODY_BYTES;
    // over 1 MiB: 413 before parsing (a body that is not even JSON is not read as one)
    let big = format!(
        r#"{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{{"text":"{}"}}]}}}}"#,
        "a".repeat(limit)
    );
    let garbage = vec![b'{'; limit + 1];
    for body in [big.into_bytes(), garbage] {
        let r = rest(&s, Method::POST, "/message:send", &[JSON], Some(body)).await;
        assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", r.body);
        assert_eq!(r.reason(), "PAYLOAD_TOO_LARGE");
    }
    // not a JSON object
    for (body, reason) in [
        ("[1, 2]", "INVALID_REQUEST"),
        ("\"hi\"", "INVALID_REQUEST"),
        ("null", "INVALID_REQUEST"),
        ("{not json", "PARSE_ERROR"),
    ] {
        let r = rest(
            &s,
            Method::POST,
            "/message:send",
            &[JSON],
            Some(body.as_bytes().to_vec()),
        )
        .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {}", r.body);
        assert_eq!(r.reason(), reason, "{body}");
    }
    // a JSON object that is no request
    let r = rest(
        &s,
        Method::POST,
        "/message:send",
        &[JSON],
        Some(b"{\"message\": {\"messageId\": \"m\", \"parts\": []}}".to_vec()),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.reason(), "INVALID_PARAMS");
    // not a JSON media type: 415, whatever the body
    for ct in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "text/json",
    ] {
        let r = rest(
            &s,
            Method::POST,
            "/message:send",
            &[("Content-Type", ct)],
            Some(send_body("m-ct")),
        )
        .await;
        assert_eq!(
            r.status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{ct}: {}",
            r.body
        );
        assert_eq!(r.reason(), "CONTENT_TYPE_NOT_SUPPORTED", "{ct}");
    }
    // no version: 0.3, refused
    let r = rest(
        &s,
        Method::POST,
        "/message:send",
        &[JSON, ("A2A-Version", "0.3")],
        Some(send_body("m-v")),
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.reason(), "VERSION_NOT_SUPPORTED");
    assert_eq!(total(&s).await, 0, "no refusal made a task");
    // the JSON media types are accepted, with parameters
    for ct in [
        "application/json",
        "application/a2a+json",
        "application/a2a+json; charset=utf-8",
    ] {
        let r = rest(
            &s,
            Method::POST,
            "/message:send",
            &[("Content-Type", ct)],
            Some(send_body("m-ok")),
        )
        .await;
        assert_eq!(r.status, StatusCode::OK, "{ct}: {}", r.body);
        assert_eq!(r.body["task"]["status"]["state"], "TASK_STATE_COMPLETED");
        // Asked in A2A's own media type, answered in it (§11.1).
        let answered = if ct.starts_with("application/a2a+json") {
            "application/a2a+json"
        } else {
            "application/json"
        };
        assert_eq!(r.headers["content-type"], answered, "{ct}");
    }
    assert_eq!(total(&s).await, 3);
    // application/a2a+json is registered with no parameters and UTF-8 only: anything else on
    // it (and another charset on any JSON type) is 415 with the reason, and changes nothing.
    for ct in [
        "application/a2a+json; charset=iso-8859-1",
        "application/a2a+json; version=1.0",
        "application/json; charset=utf-16",
    ] {
        let r = rest(
            &s,
            Method::POST,
            "/message:send",
            &[("Content-Type", ct)],
            Some(send_body("m-param")),
        )
        .await;
        assert_eq!(
            r.status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{ct}: {}",
            r.body
        );
        assert!(
            r.body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("Content-Type")),
            "{ct}: {}",
            r.body
        );
    }
    assert_eq!(total(&s).await, 3, "no refusal made a task");
    // Every route answers in it when Accept names it, errors included; application/json
    // otherwise.
    let id = r_id(&s).await;
    let a2a = [("Accept", "application/a2a+json")];
    for path in [format!("/tasks/{id}"), "/tasks".to_string()] {
        let r = rest(&s, Method::GET, &path, &a2a, None).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.body);
        assert_eq!(r.headers["content-type"], "application/a2a+json", "{path}");
        let r = rest(&s, Method::GET, &path, &[], None).await;
        assert_eq!(r.headers["content-type"], "application/json", "{path}");
    }
    let r = rest(&s, Method::GET, "/tasks/no-such-task", &a2a, None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.headers["content-type"], "application/a2a+json");
    assert_eq!(r.body["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
}

/// The id of some task of `s`.
async fn r_id(s: &Server) -> String {
    let r = rest(s, Method::GET, "/tasks", &[], None).await;
    r.body["tasks"][0]["id"]
        .as_str()
        .expect("a task")
        .to_string()
}

#[tokio::test]
async fn json_rpc_refuses_a_non_json_content_type_with_32005() {
    let s = Server::start().await;
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}}}))
    .unwrap();
    let (status, v) = s
        .post_raw(
            "/a2a",
            body,
            &[("Content-Type", "text/plain"), ("A2A-Version", "1.0")],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "a JSON-RPC error: {v}");
    assert_eq!(error_code(&v), -32005);
    assert_eq!(
        v["error"]["data"][0]["reason"],
        "CONTENT_TYPE_NOT_SUPPORTED"
    );
    assert_eq!(total(&s).await, 0);
}

#[tokio::test]
async fn ids_holding_colons_and_slashes_travel_percent_encoded() {
    let s = Server::start().await;
    // The decoded id is what the server looks up: TaskNotFound names it.
    let odd = "a:b/c d%e";
    let enc = encode_segment(odd);
    assert_eq!(enc, "a%3Ab%2Fc%20d%25e");
    for (method, path) in [
        (Method::GET, format!("/tasks/{enc}")),
        (Method::POST, format!("/tasks/{enc}:cancel")),
        (Method::GET, format!("/tasks/{enc}/pushNotificationConfigs")),
        (
            Method::GET,
            format!("/tasks/{enc}/pushNotificationConfigs/c%2F1"),
        ),
    ] {
        let r = rest(&s, method.clone(), &path, &[JSON], None).await;
        assert_eq!(
            r.status,
            StatusCode::NOT_FOUND,
            "{method} {path}: {}",
            r.body
        );
        let info = r.error_info();
        assert_eq!(info["reason"], "TASK_NOT_FOUND");
        assert_eq!(info["metadata"]["taskId"], odd, "{method} {path}");
    }
    // the last `:` is the verb's; on GET, where no verb is, a `:` belongs to the id
    let r = rest(&s, Method::POST, "/tasks/a:b:cancel", &[JSON], None).await;
    assert_eq!(r.error_info()["metadata"]["taskId"], "a:b");
    let r = rest(&s, Method::GET, "/tasks/a:b", &[], None).await;
    assert_eq!(r.error_info()["metadata"]["taskId"], "a:b");
    // a real task, every character of its id percent-encoded, is reached
    let task = s
        .over(Binding::JsonRpc)
        .send_task("tck-input-required-pe", "x")
        .await;
    let id = task["id"].as_str().unwrap();
    let every: String = id.bytes().map(|b| format!("%{b:02X}")).collect();
    let r = rest(&s, Method::GET, &format!("/tasks/{every}"), &[], None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["id"], id);
    let r = rest(
        &s,
        Method::POST,
        &format!("/tasks/{every}:cancel"),
        &[JSON],
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["status"]["state"], "TASK_STATE_CANCELED");
    // a sub-task's id holds a `.`, sent as it is
    let child = format!("{id}.1");
    let r = rest(&s, Method::GET, &format!("/tasks/{child}"), &[], None).await;
    assert_eq!(r.error_info()["metadata"]["taskId"], child);
}

#[tokio::test]
async fn a_tenant_prefix_routes_every_operation() {
    let s = Server::start().await;
    let r = rest(
        &s,
        Method::POST,
        "/acme/message:send",
        &[JSON],
        Some(send_body("tck-input-required-tn")),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let id = r.body["task"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        r.body["task"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    let r = rest(&s, Method::GET, &format!("/acme/tasks/{id}"), &[], None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["id"], id);
    let r = rest(&s, Method::GET, "/acme/tasks?pageSize=10", &[], None).await;
    assert_eq!(r.body["totalSize"], 1, "{}", r.body);
    let hook = serde_json::to_vec(&json!({"id": "h", "url": "https://example.com/h"})).unwrap();
    let r = rest(
        &s,
        Method::POST,
        &format!("/acme/tasks/{id}/pushNotificationConfigs"),
        &[JSON],
        Some(hook),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["taskId"], id);
    let r = rest(
        &s,
        Method::GET,
        &format!("/acme/tasks/{id}/pushNotificationConfigs/h"),
        &[],
        None,
    )
    .await;
    assert_eq!(r.body["url"], "https://example.com/h");
    let r = rest(
        &s,
        Method::DELETE,
        &format!("/acme/tasks/{id}/pushNotificationConfigs/h"),
        &[],
        None,
    )
    .await;
    assert_eq!((r.status, r.body.clone()), (StatusCode::OK, json!({})));
    let r = rest(
        &s,
        Method::POST,
        &format!("/acme/tasks/{id}:cancel"),
        &[JSON],
        None,
    )
    .await;
    assert_eq!(
        r.body["status"]["state"], "TASK_STATE_CANCELED",
        "{}",
        r.body
    );
    // the harness's tenant param takes the same path
    let v = s
        .over(Binding::Rest)
        .ok("GetTask", json!({"tenant": "acme", "id": id}))
        .await;
    assert_eq!(v["id"], id);
    // an undeclared capability under a tenant is still its own error
    let r = rest(&s, Method::GET, "/acme/extendedAgentCard", &[], None).await;
    assert_eq!(r.reason(), "UNSUPPORTED_OPERATION");
}

#[tokio::test]
async fn a_declared_extension_is_echoed_on_every_binding_and_an_unknown_one_ignored() {
    let mut config = test_config();
    config.grpc = Some(GrpcSettings::loopback());
    let s = Server::start_with(config).await;
    let asked = format!("urn:example:unknown, {EXTENSION_URI}");
    // JSON-RPC
    let list =
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks"})).unwrap();
    for (header, echoed) in [
        (Some(asked.as_str()), Some(EXTENSION_URI)),
        (Some("urn:example:unknown"), None),
        (None, None),
    ] {
        let mut req = s
            .client
            .post(format!("{}/a2a", s.base))
            .header("Content-Type", "application/json")
            .header("A2A-Version", "1.0")
            .body(list.clone());
        if let Some(h) = header {
            req = req.header("A2A-Extensions", h);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let got = resp
            .headers()
            .get("a2a-extensions")
            .map(|v| v.to_str().unwrap().to_string());
        assert_eq!(got.as_deref(), echoed, "JSON-RPC, asked {header:?}");
        let v: Value = resp.json().await.unwrap();
        assert!(v.get("result").is_some(), "{v}");
    }
    // HTTP+JSON
    for (header, echoed) in [
        (Some(asked.as_str()), Some(EXTENSION_URI)),
        (Some("urn:example:unknown"), None),
        (None, None),
    ] {
        let mut h = vec![];
        if let Some(x) = header {
            h.push(("A2A-Extensions", x));
        }
        let r = rest(&s, Method::GET, "/tasks", &h, None).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let got = r.headers.get("a2a-extensions").map(|v| v.to_str().unwrap());
        assert_eq!(got, echoed, "HTTP+JSON, asked {header:?}");
    }
    // gRPC
    let addr = s.grpc.as_ref().unwrap().addr;
    let mut client = taskledger_tests::grpc::connect(addr).await;
    for (header, echoed) in [
        (Some(asked.as_str()), Some(EXTENSION_URI)),
        (Some("urn:example:unknown"), None),
        (None, None),
    ] {
        let mut r = tonic::Request::new(pb::ListTasksRequest::default());
        r.metadata_mut()
            .insert("a2a-version", MetadataValue::from_static("1.0"));
        if let Some(x) = header {
            r.metadata_mut()
                .insert("a2a-extensions", x.parse().unwrap());
        }
        let reply = client.list_tasks(r).await.expect("served");
        let got = reply
            .metadata()
            .get("a2a-extensions")
            .map(|v| v.to_str().unwrap());
        assert_eq!(got, echoed, "gRPC, asked {header:?}");
    }
    // the harness carries the header on every binding (gRPC: as metadata)
    for b in Binding::ALL {
        let v = s
            .over(b)
            .call_with(
                "ListTasks",
                json!({}),
                &[("A2A-Extensions", "urn:example:unknown")],
            )
            .await;
        assert!(v.get("result").is_some(), "{b:?}: {v}");
    }
    assert_eq!(total(&s).await, 0);
}
