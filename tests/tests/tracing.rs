//! One trace from the request to the agent turn and the webhook (ADR 033): the process exports
//! its spans over OTLP/HTTP (JSON) to a receiver of the test's own; one SendMessage carrying a
//! client's `traceparent`, answered by the model loop (a mock Chat Completions server) on a task
//! with a push config, yields spans of that trace covering the request, the commit, the relay,
//! the agent turn, the model call and the webhook delivery, each the child of the one before;
//! the model provider and the webhook receive `traceparent` headers naming the spans that
//! called them. On the embedded store and on the emulator path (stream → relay → SQS → worker
//! → push queue). One test binary: the exporter is the process's.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::HeaderMap;
use serde_json::json;
use taskledger_infra::llm::OpenAiSettings;
use taskledger_infra::logging::LogFormat;
use taskledger_infra::otlp::OtlpSettings;
use taskledger_local::{AgentChoice, Config, Storage};
use taskledger_tests::binding::Binding;
use taskledger_tests::otlp::{Collector, Span};
use taskledger_tests::receiver::{state_of, Receiver, Script};
use taskledger_tests::{aws_endpoint, chat, fast_timings, Server};

/// A Chat Completions server that answers at once and keeps each request's headers.
async fn model() -> (String, Arc<Mutex<Vec<HeaderMap>>>) {
    let seen: Arc<Mutex<Vec<HeaderMap>>> = Arc::default();
    let kept = seen.clone();
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |headers: HeaderMap| {
            let kept = kept.clone();
            async move {
                kept.lock().unwrap().push(headers);
                axum::Json(chat::answer(Some("all done"), vec![]))
            }
        }),
    );
    (format!("http://{}/v1", chat::serve(app).await), seen)
}

fn config(storage: Storage, model_url: &str) -> Config {
    let mut c = Config::in_memory().with_conformance_scenarios();
    c.storage = storage;
    c.timings = fast_timings();
    c.push = taskledger_tests::loopback_push();
    c.agent = AgentChoice::OpenAi {
        settings: OpenAiSettings::new(model_url.to_string(), "mock-1"),
        max_turns: 4,
        skills_dir: None,
        approve_tools: vec![],
    };
    c
}

fn by_id<'a>(spans: &'a [Span], id: &str) -> Option<&'a Span> {
    spans.iter().find(|s| s.span_id == id)
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

/// Sends one message with a client trace; checks the trace it makes.
async fn one_trace(collector: &Collector, storage: Storage, label: &str) {
    let (model_url, model_headers) = model().await;
    let hook = Receiver::start(Script::Always(200)).await;
    let server = Server::start_with(config(storage, &model_url))
        .await
        .over(Binding::JsonRpc);
    let trace_id = format!("{:032x}", rand_u128());
    let client_span = "00f067aa0ba902b7";
    let traceparent = format!("00-{trace_id}-{client_span}-01");
    let v = server
        .call_with(
            "SendMessage",
            json!({
                "message": {"messageId": format!("trace-{label}"), "role": "ROLE_USER",
                    "parts": [{"text": "please do it"}]},
                "configuration": {"taskPushNotificationConfig": {"url": hook.url}},
            }),
            &[("traceparent", &traceparent), ("tracestate", "acme=1")],
        )
        .await;
    assert!(v.get("error").is_none(), "{label}: {v}");
    hook.wait_for(Duration::from_secs(30), |r| {
        r.iter()
            .any(|x| state_of(x).as_deref() == Some("TASK_STATE_COMPLETED"))
    })
    .await;

    let wanted = [
        "SendMessage",
        "commit",
        "relay",
        "agent.turn",
        "llm.call",
        "push.delivery",
    ];
    let spans = collector
        .trace(&trace_id, Duration::from_secs(20), |s| {
            wanted.iter().all(|w| s.iter().any(|x| x.name == *w))
        })
        .await;
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    for w in wanted {
        assert!(names.contains(&w), "{label}: no {w} span in {names:?}");
    }
    // Parent links: the request's is the client's span; every other span's parent is a span
    // of the trace; each hop's parent is the one before it.
    let request = named(&spans, "SendMessage")[0];
    assert_eq!(request.parent, client_span, "{label}");
    assert_eq!(
        request.attributes.get("a2a.binding").map(String::as_str),
        Some("jsonrpc")
    );
    // OpenTelemetry's draft A2A conventions (semantic-conventions PR #195): a server span
    // named after the method, with what the request and its answer say.
    let attr = |s: &Span, k: &str| s.attributes.get(k).cloned().unwrap_or_default();
    assert_eq!(request.kind, 2, "{label}: a server span");
    let task_id = v["result"]["task"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for (k, want) in [
        ("a2a.method.name", "SendMessage".to_string()),
        ("a2a.protocol.version", "1.0".to_string()),
        ("a2a.message.id", format!("trace-{label}")),
        ("a2a.task.id", task_id.clone()),
        (
            "gen_ai.conversation.id",
            v["result"]["task"]["contextId"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        ),
    ] {
        assert_eq!(attr(request, k), want, "{label}: {k}");
    }
    assert!(
        attr(request, "a2a.task.state").starts_with("TASK_STATE_"),
        "{label}"
    );
    assert!(request.attributes.contains_key("a2a.tenant"), "{label}");
    let delivery = named(&spans, "push.delivery")[0];
    assert_eq!(delivery.kind, 3, "{label}: the push is a client span");
    assert_eq!(attr(delivery, "a2a.task.id"), task_id, "{label}");
    for s in spans.iter().filter(|s| s.span_id != request.span_id) {
        assert!(
            by_id(&spans, &s.parent).is_some(),
            "{label}: {} has no parent in the trace",
            s.name
        );
    }
    let parent_name = |s: &Span| {
        by_id(&spans, &s.parent)
            .map(|p| p.name.clone())
            .unwrap_or_default()
    };
    assert!(
        named(&spans, "commit")
            .iter()
            .any(|c| c.parent == request.span_id),
        "{label}: the request's commit"
    );
    for relay in named(&spans, "relay") {
        assert_eq!(
            parent_name(relay),
            "commit",
            "{label}: a relay follows a commit"
        );
    }
    for turn in named(&spans, "agent.turn") {
        assert_eq!(
            parent_name(turn),
            "relay",
            "{label}: a turn follows the relay of its request"
        );
    }
    // Names up the parent chain.
    let ancestors = |s: &Span| {
        let mut names = Vec::new();
        let mut at = by_id(&spans, &s.parent);
        while let Some(p) = at {
            names.push(p.name.clone());
            at = by_id(&spans, &p.parent);
        }
        names
    };
    for call in named(&spans, "llm.call") {
        assert!(
            ancestors(call).contains(&"agent.turn".to_string()),
            "{label}: {:?}",
            ancestors(call)
        );
    }
    for push in named(&spans, "push.delivery") {
        assert_eq!(
            parent_name(push),
            "relay",
            "{label}: a delivery follows the relay of its update"
        );
    }
    // The agent's own commits join its turn.
    assert!(
        named(&spans, "commit")
            .iter()
            .any(|c| ancestors(c).contains(&"agent.turn".to_string())),
        "{label}: the turn's commits are in the trace"
    );
    // The provider is told of a trace of its own — a root linked to the call, no tracestate —
    // never the caller's (issue 51, D); the webhook, the caller's own, joins the caller's.
    let calls: Vec<String> = named(&spans, "llm.call")
        .iter()
        .map(|s| s.span_id.clone())
        .collect();
    let (model_parent, model_state) = {
        let seen = model_headers.lock().unwrap();
        let h = &seen[0];
        (
            h.get("traceparent")
                .map(|v| v.to_str().unwrap().to_string())
                .expect("the model call carries traceparent"),
            h.get("tracestate").map(|v| v.to_str().unwrap().to_string()),
        )
    };
    assert!(
        !model_parent.contains(&trace_id),
        "{label}: the provider saw the caller's trace: {model_parent}"
    );
    assert_eq!(
        model_state, None,
        "{label}: the provider saw the caller's tracestate"
    );
    let own_trace = model_parent.split('-').nth(1).unwrap().to_string();
    let own = collector
        .trace(&own_trace, Duration::from_secs(20), |s| {
            s.iter().any(|x| x.name == "llm.request")
        })
        .await;
    let request_span = named(&own, "llm.request")
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("{label}: no llm.request span in the provider's trace"));
    assert!(request_span.parent.is_empty(), "{label}: a root");
    assert!(
        model_parent.contains(&request_span.span_id),
        "{label}: {model_parent}"
    );
    assert!(
        request_span
            .links
            .iter()
            .any(|(t, s)| *t == trace_id && calls.contains(s)),
        "{label}: linked to the call: {:?}",
        request_span.links
    );
    let pushes: Vec<String> = named(&spans, "push.delivery")
        .iter()
        .map(|s| s.span_id.clone())
        .collect();
    for r in hook.unique() {
        let tp = r
            .header("traceparent")
            .expect("a delivery carries traceparent");
        assert!(tp.starts_with(&format!("00-{trace_id}-")), "{label}: {tp}");
        assert!(
            pushes.iter().any(|p| tp.contains(p.as_str())),
            "{label}: {tp}"
        );
        assert_eq!(r.header("tracestate"), Some("acme=1"), "{label}");
    }
}

fn rand_u128() -> u128 {
    uuid::Uuid::new_v4().as_u128() | 1
}

#[tokio::test]
async fn one_send_is_one_trace_from_request_to_turn_to_webhook() {
    let collector = Collector::start().await;
    let settings = OtlpSettings::new(
        Some(&collector.url),
        None,
        Some("http/json"),
        "taskledger-test",
    )
    .unwrap()
    .unwrap();
    taskledger_app::compose::init_telemetry(LogFormat::Pretty { ansi: false }, Some(&settings))
        .unwrap();

    one_trace(&collector, Storage::Memory, "sqlite").await;
    if aws_endpoint() {
        let storage = Storage::Dynamo {
            index_shards: 1,
            prefix: format!("tl-trace-{}-", uuid::Uuid::new_v4().simple()),
            create_tables: true,
            counter: None,
            pollers: true,
        };
        one_trace(&collector, storage, "emulator").await;
    }

    // A malformed, oversized or unknown-version traceparent starts a new trace: never an error.
    let (model_url, _) = model().await;
    let server = Server::start_with(config(Storage::Memory, &model_url))
        .await
        .over(Binding::JsonRpc);
    for bad in [
        "garbage".to_string(),
        format!("00-{}-00f067aa0ba902b7-01", "a".repeat(33)),
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_string(),
        "x".repeat(8000),
    ] {
        let v = server
            .call_with(
                "SendMessage",
                json!({"message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                    "parts": [{"text": "hi"}]}}),
                &[("traceparent", &bad), ("tracestate", &"k=v,".repeat(400))],
            )
            .await;
        assert!(
            v.get("error").is_none(),
            "{}: {v}",
            &bad[..bad.len().min(40)]
        );
    }

    // A refused request's span names its error (OpenTelemetry's `error.type`: the reason).
    let refused_trace = format!("{:032x}", rand_u128());
    let v = server
        .call_with(
            "GetTask",
            json!({"id": "no-such-task"}),
            &[(
                "traceparent",
                &format!("00-{refused_trace}-00f067aa0ba902b7-01"),
            )],
        )
        .await;
    assert!(v.get("error").is_some(), "{v}");
    let spans = collector
        .trace(&refused_trace, Duration::from_secs(20), |s| {
            s.iter().any(|x| x.name == "GetTask")
        })
        .await;
    let get = named(&spans, "GetTask")[0];
    assert_eq!(
        get.attributes.get("error.type").map(String::as_str),
        Some("TASK_NOT_FOUND"),
        "{:?}",
        get.attributes
    );

    mcp_call_is_a_client_span_named_to_the_server(&collector).await;
    an_upstream_call_is_a_client_span_under_the_a2a_names(&collector).await;
}

/// An MCP tool call (issue 52): a client span `mcp.call` of a trace of its own, linked to the
/// caller's (issue 51, D), and named to the MCP server in the call's `_meta.traceparent`
/// (SEP-414) — never the caller's trace, never a `tracestate`.
async fn mcp_call_is_a_client_span_named_to_the_server(collector: &Collector) {
    let probe = taskledger_tests::mcp_probe::probe(
        json!([{"name": "whoami", "description": "who calls", "inputSchema": {"type": "object"}}]),
    )
    .await;
    let asked = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move || {
            let first = !asked.swap(true, std::sync::atomic::Ordering::SeqCst);
            async move {
                axum::Json(if first {
                    chat::answer(None, vec![chat::tool("c1", "probe__whoami", json!({}))])
                } else {
                    chat::answer(Some("done"), vec![])
                })
            }
        }),
    );
    let model_url = format!("http://{}/v1", chat::serve(app).await);
    let mut c = config(Storage::Memory, &model_url);
    c.mcp = vec![taskledger_app::compose::McpServerSpec::new(
        "probe",
        &probe.url,
        taskledger_domain::push::AddressPolicy::allow_loopback(),
    )];
    let server = Server::start_with(c).await.over(Binding::JsonRpc);
    let trace_id = format!("{:032x}", rand_u128());
    let v = server
        .call_with(
            "SendMessage",
            json!({"message": {"messageId": "trace-mcp", "role": "ROLE_USER",
                "parts": [{"text": "who is there"}]}, "configuration": {"returnImmediately": false}}),
            &[
                ("traceparent", &format!("00-{trace_id}-00f067aa0ba902b7-01")),
                ("tracestate", "acme=1"),
            ],
        )
        .await;
    assert!(v.get("error").is_none(), "{v}");
    let (_, params) = probe
        .calls
        .lock()
        .unwrap()
        .first()
        .cloned()
        .expect("the tool was called");
    let meta = &params["_meta"];
    let sent = meta["traceparent"]
        .as_str()
        .expect("_meta.traceparent")
        .to_string();
    assert!(meta.get("tracestate").is_none(), "{meta}");
    client_span_of_its_own(collector, &sent, &trace_id, "mcp.call").await;
}

/// The client span `name` the `traceparent` a server was `sent` names: a root of a trace of
/// its own (never the caller's `trace_id`), linked to the caller's.
async fn client_span_of_its_own(
    collector: &Collector,
    sent: &str,
    trace_id: &str,
    name: &str,
) -> Span {
    let parts: Vec<&str> = sent.split('-').collect();
    assert_eq!(parts.len(), 4, "{sent}");
    assert_ne!(parts[1], trace_id, "the server saw the caller's trace");
    let spans = collector
        .trace(parts[1], Duration::from_secs(20), |s| {
            s.iter().any(|x| x.name == name)
        })
        .await;
    let call = named(&spans, name)[0].clone();
    assert_eq!(
        call.span_id, parts[2],
        "the server is told the calling span"
    );
    assert_eq!(call.kind, 3, "a client span");
    assert!(call.parent.is_empty(), "a root of its own trace");
    assert!(
        call.links.iter().any(|(t, _)| *t == trace_id),
        "linked to the caller's trace: {:?}",
        call.links
    );
    call
}

/// A call to an upstream A2A agent (issue 53, 6): a client span of a trace of its own, linked to
/// the caller's, named after the A2A method with OpenTelemetry's draft A2A attributes — the
/// method, the protocol version, the server, the message sent.
async fn an_upstream_call_is_a_client_span_under_the_a2a_names(collector: &Collector) {
    let seen: Arc<Mutex<Vec<HeaderMap>>> = Arc::default();
    let kept = seen.clone();
    let base: Arc<Mutex<String>> = Arc::default();
    let card_base = base.clone();
    let app = axum::Router::new()
        .route(
            "/.well-known/agent-card.json",
            axum::routing::get(move || {
                let url = card_base.lock().unwrap().clone();
                async move {
                    axum::Json(json!({"name": "up", "description": "d", "version": "1",
                        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC",
                            "protocolVersion": "1.0"}],
                        "capabilities": {"streaming": true}, "defaultInputModes": ["text/plain"],
                        "defaultOutputModes": ["text/plain"], "skills": []}))
                }
            }),
        )
        .route(
            "/",
            axum::routing::post(
                move |headers: HeaderMap, axum::Json(req): axum::Json<serde_json::Value>| {
                    kept.lock().unwrap().push(headers);
                    async move {
                        let done = json!({"statusUpdate": {"taskId": "u-1", "contextId": "uc",
                            "status": {"state": "TASK_STATE_COMPLETED"}}});
                        (
                            [("content-type", "text/event-stream")],
                            format!(
                                "data: {}\n\n",
                                json!({"jsonrpc": "2.0", "id": req["id"], "result": done})
                            ),
                        )
                    }
                },
            ),
        );
    let url = format!("http://{}", chat::serve(app).await);
    *base.lock().unwrap() = format!("{url}/");
    let mut c = config(Storage::Memory, "http://127.0.0.1:9/v1");
    c.agent = AgentChoice::Upstream(
        taskledger_app::compose::UpstreamChoice::new(
            &url,
            taskledger_domain::push::AddressPolicy::allow_loopback(),
        )
        .unwrap(),
    );
    let server = Server::start_with(c).await.over(Binding::JsonRpc);
    let trace_id = format!("{:032x}", rand_u128());
    let v = server
        .call_with(
            "SendMessage",
            json!({"message": {"messageId": "trace-upstream", "role": "ROLE_USER",
                "parts": [{"text": "hello"}]}, "configuration": {"returnImmediately": false}}),
            &[("traceparent", &format!("00-{trace_id}-00f067aa0ba902b7-01"))],
        )
        .await;
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{v}"
    );
    let sent = seen.lock().unwrap()[0]
        .get("traceparent")
        .and_then(|h| h.to_str().ok())
        .expect("the upstream is told a traceparent")
        .to_string();
    let call = client_span_of_its_own(collector, &sent, &trace_id, "SendStreamingMessage").await;
    for (k, want) in [
        ("a2a.method.name", "SendStreamingMessage"),
        ("rpc.method", "SendStreamingMessage"),
        ("a2a.protocol.version", "1.0"),
        ("server.address", "127.0.0.1"),
        ("a2a.message.id", "trace-upstream"),
    ] {
        assert_eq!(
            call.attributes.get(k).map(String::as_str),
            Some(want),
            "{k}: {:?}",
            call.attributes
        );
    }
    assert!(
        !call.attributes.contains_key("error.type"),
        "{:?}",
        call.attributes
    );
}
