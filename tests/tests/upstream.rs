//! An upstream A2A agent as the worker (issue 52, ADR 034), against the official Python SDK's
//! servers started here (`tests/upstream/agent_v1.py` on a2a-sdk 1.x, `agent_v03.py` on 0.3):
//! echo, a direct reply, the input-required round trip, chunked artifacts on our stream, cancel,
//! a long task followed across turns, polling an upstream that does not stream, the legacy card
//! path; and, against servers written here, what a misbehaving upstream gets (another task's
//! id, a chunk after the last, an oversized event, a card that drops its interface), an
//! unreachable one, the SSRF rules, and the credential: ours sent, our caller's never.
//!
//! The Python partners come from `scripts/test.sh` (`TASKLEDGER_UPSTREAM_PY1`,
//! `TASKLEDGER_UPSTREAM_PY03`: the venvs' interpreters); without them these tests say "skipped"
//! (unless `TASKLEDGER_REQUIRE_UPSTREAM` is set).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::{get, post};
use axum::Json;
use serde_json::{json, Value};
use taskledger_app::compose::{AgentChoice, UpstreamChoice};
use taskledger_domain::push::AddressPolicy;
use taskledger_tests::binary::free_port;
use taskledger_tests::upstream::{partner, Sdk};
use taskledger_tests::{test_config, Server};

fn choice(url: &str, window: Duration) -> UpstreamChoice {
    let mut c = UpstreamChoice::new(url, AddressPolicy::allow_loopback()).unwrap();
    c.follow.window = window;
    c
}

async fn server_for(c: UpstreamChoice) -> Server {
    let mut config = test_config();
    config.agent = AgentChoice::Upstream(c);
    config.blocking_timeout = Duration::from_secs(20);
    Server::start_with(config).await
}

fn tag() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_string()
}

fn artifact_text(task: &Value, id: &str) -> String {
    task["artifacts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["artifactId"] == id)
        .flat_map(|a| a["parts"].as_array().cloned().unwrap_or_default())
        .map(|p| p["text"].as_str().unwrap_or_default().to_string())
        .collect()
}

async fn task_of(s: &Server, id: &str) -> Value {
    s.ok("GetTask", json!({"id": id})).await
}

async fn echo_reply_and_ask(sdk: Sdk) {
    let Some(p) = partner(sdk, &[]).await else {
        return;
    };
    let s = server_for(choice(&p.url, Duration::from_secs(30))).await;
    // our card advertises the upstream's skill, with our own interfaces
    let card = s.card().await;
    let skill = if sdk == Sdk::V1 {
        "steered"
    } else {
        "steered03"
    };
    assert_eq!(card["skills"][0]["id"], skill, "{card}");
    assert!(card["supportedInterfaces"][0]["url"]
        .as_str()
        .unwrap()
        .starts_with(&s.base));
    // echo: a task upstream, its artifact ours
    let t = s.send_task(&format!("m-{}", tag()), "echo hi there").await;
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    assert_eq!(artifact_text(&t, "echo"), "echo: hi there");
    // reply: no task upstream, the reply is our answer
    let t = s.send_task(&format!("m-{}", tag()), "reply yo").await;
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    assert_eq!(t["status"]["message"]["parts"][0]["text"], "reply: yo");
    // ask: INPUT_REQUIRED with the upstream's question, the answer goes back to its task
    let t = s.send_task(&format!("m-{}", tag()), "ask").await;
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{t}");
    assert_eq!(
        t["status"]["message"]["parts"][0]["text"],
        "what is your name?"
    );
    let id = t["id"].as_str().unwrap();
    let answer = s
        .send(
            &format!("m-{}", tag()),
            "Ada",
            json!({"taskId": id}),
            json!({}),
        )
        .await;
    let t = &answer["result"]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    assert_eq!(artifact_text(t, "greeting"), "hello Ada");
    // every call was counted, and its time observed
    let m = taskledger_app::telemetry::metrics().snapshot().upstream;
    assert!(m.counts[0].1 >= 4, "{m:?}");
    assert!(m.latency.count >= m.counts[0].1, "{m:?}");
    // an upstream failure is ours, with its message
    let t = s.send_task(&format!("m-{}", tag()), "fail").await;
    assert_eq!(t["status"]["state"], "TASK_STATE_FAILED", "{t}");
    assert_eq!(
        t["status"]["message"]["parts"][0]["text"],
        "it went wrong upstream"
    );
}

#[tokio::test]
async fn a_1_x_agent_echoes_replies_and_asks_through_taskledger() {
    echo_reply_and_ask(Sdk::V1).await;
}

#[tokio::test]
async fn a_0_3_agent_echoes_replies_and_asks_through_taskledger() {
    echo_reply_and_ask(Sdk::V03).await;
}

async fn chunks_on_our_stream(sdk: Sdk) {
    let Some(p) = partner(sdk, &[]).await else {
        return;
    };
    let s = server_for(choice(&p.url, Duration::from_secs(30))).await;
    let params = json!({"message": {"messageId": format!("m-{}", tag()), "role": "ROLE_USER",
        "parts": [{"text": "chunks 3"}]}});
    let events = s
        .stream("SendStreamingMessage", params)
        .await
        .stream()
        .rest()
        .await;
    let chunks: Vec<&Value> = events
        .iter()
        .filter(|e| e.kind() == "artifactUpdate")
        .map(|e| e.body())
        .collect();
    assert_eq!(chunks.len(), 3, "{events:?}");
    assert_eq!(chunks[2]["lastChunk"], true);
    assert_eq!(chunks[1]["append"], true);
    assert_eq!(events.last().unwrap().state(), Some("TASK_STATE_COMPLETED"));
    let id = chunks[0]["taskId"].as_str().unwrap();
    assert_eq!(
        artifact_text(&task_of(&s, id).await, "chunked"),
        "chunk-1 chunk-2 chunk-3 "
    );
}

#[tokio::test]
async fn a_1_x_agents_chunked_artifact_streams_to_our_client() {
    chunks_on_our_stream(Sdk::V1).await;
}

#[tokio::test]
async fn a_0_3_agents_chunked_artifact_streams_to_our_client() {
    chunks_on_our_stream(Sdk::V03).await;
}

/// A long task, followed by turns of one second each: every tick arrives once.
async fn long_task_across_turns(sdk: Sdk, flags: &[&str]) {
    let Some(p) = partner(sdk, flags).await else {
        return;
    };
    let s = server_for(choice(&p.url, Duration::from_secs(1))).await;
    let id = s
        .start_task(
            json!({"messageId": format!("m-{}", tag()), "role": "ROLE_USER",
            "parts": [{"text": "slow 3"}]}),
        )
        .await;
    let t = s.wait_state(&id, "TASK_STATE_COMPLETED").await;
    assert_eq!(
        t["status"]["message"]["parts"][0]["text"],
        "done after 6 ticks"
    );
    let ticks: String = (1..=6).map(|i| format!("tick-{i} ")).collect();
    assert_eq!(artifact_text(&task_of(&s, &id).await, "progress"), ticks);
}

#[tokio::test]
async fn a_long_1_x_task_is_followed_across_turns() {
    long_task_across_turns(Sdk::V1, &[]).await;
}

#[tokio::test]
async fn a_long_0_3_task_is_followed_across_turns_by_polling() {
    long_task_across_turns(Sdk::V03, &[]).await;
}

#[tokio::test]
async fn an_agent_that_does_not_stream_is_polled_with_backoff() {
    long_task_across_turns(Sdk::V1, &["--no-streaming"]).await;
}

#[tokio::test]
async fn the_0_2_card_path_is_read_when_the_card_is_not_at_the_new_one() {
    let Some(p) = partner(Sdk::V03, &["--legacy-card", "--no-streaming"]).await else {
        return;
    };
    let s = server_for(choice(&p.url, Duration::from_secs(30))).await;
    let t = s.send_task(&format!("m-{}", tag()), "echo legacy").await;
    assert_eq!(artifact_text(&t, "echo"), "echo: legacy", "{t}");
}

#[tokio::test]
async fn our_cancel_cancels_the_upstream_task() {
    cancel_reaches_the_upstream(Sdk::V1).await;
}

#[tokio::test]
async fn our_cancel_cancels_a_0_3_upstream_task() {
    cancel_reaches_the_upstream(Sdk::V03).await;
}

/// Our CancelTask of a task the upstream works on cancels the upstream's task: its own GetTask
/// (0.3: tasks/get) says so, the task named by the mirror our task's log recorded.
async fn cancel_reaches_the_upstream(sdk: Sdk) {
    let Some(p) = partner(sdk, &[]).await else {
        return;
    };
    let s = server_for(choice(&p.url, Duration::from_secs(30))).await;
    let id = s
        .start_task(
            json!({"messageId": format!("m-{}", tag()), "role": "ROLE_USER",
            "parts": [{"text": "wait"}]}),
        )
        .await;
    s.wait_state(&id, "TASK_STATE_WORKING").await;
    let c = s.ok("CancelTask", json!({"id": id})).await;
    assert_eq!(c["status"]["state"], "TASK_STATE_CANCELED");
    let log = s.ok("ListTaskEvents", json!({"id": id})).await;
    let upstream = log["events"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|e| e["payload"]["UpstreamRecorded"]["upstream"]["task_id"].as_str())
        .unwrap_or_else(|| panic!("no upstream task in {log}"))
        .to_string();
    let (method, canceled) = match sdk {
        Sdk::V1 => ("GetTask", "TASK_STATE_CANCELED"),
        Sdk::V03 => ("tasks/get", "canceled"),
    };
    let client = reqwest::Client::new();
    let mut seen = Value::Null;
    for _ in 0..100 {
        seen = client
            .post(format!("{}/", p.url))
            .header("A2A-Version", if sdk == Sdk::V1 { "1.0" } else { "0.3" })
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method,
                "params": {"id": upstream}}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if seen["result"]["status"]["state"] == canceled {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the upstream task was not canceled: {seen}");
}

// ---- upstreams written here: what a misbehaving one gets ----

/// What a scripted upstream answers a send with (1.0 JSON-RPC, one SSE stream), and what it
/// saw of the requests.
#[derive(Clone, Default)]
struct Script {
    events: Vec<Value>,
    seen_auth: Arc<Mutex<Vec<String>>>,
    /// The card's interface URL (another one makes a card that dropped ours).
    interface: Arc<Mutex<Option<String>>>,
    /// The card's skills.
    skills: Arc<Mutex<Vec<Value>>>,
}

async fn scripted_card(State(s): State<Script>, headers: HeaderMap) -> Json<Value> {
    s.seen_auth.lock().unwrap().push(
        headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string(),
    );
    let url = s.interface.lock().unwrap().clone().unwrap_or_default();
    let skills = s.skills.lock().unwrap().clone();
    Json(
        json!({"name": "scripted", "description": "d", "version": "1",
        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": true}, "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"], "skills": skills}),
    )
}

async fn scripted_rpc(
    State(s): State<Script>,
    headers: HeaderMap,
    Json(req): Json<Value>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    s.seen_auth.lock().unwrap().push(
        headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string(),
    );
    let body: String = s
        .events
        .iter()
        .map(|e| {
            format!(
                "data: {}\n\n",
                json!({"jsonrpc": "2.0", "id": req["id"], "result": e})
            )
        })
        .collect();
    ([("content-type", "text/event-stream")], body).into_response()
}

async fn scripted(events: Vec<Value>) -> (String, Script) {
    let script = Script {
        events,
        ..Default::default()
    };
    let card = axum::Router::new().route("/.well-known/agent-card.json", get(scripted_card));
    (serve_script(&script, card).await, script)
}

/// Serves `card` (the card's routes) beside the scripted JSON-RPC endpoint; the base URL, which
/// the card names as its interface.
async fn serve_script(script: &Script, card: axum::Router<Script>) -> String {
    let app = card
        .route("/", post(scripted_rpc))
        .with_state(script.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    *script.interface.lock().unwrap() = Some(format!("{url}/"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// A server whose upstream's card is trusted for no time, with a task waiting for input; once
/// `meanwhile` ran, the answer is sent (its turn reads the card again). The task's id.
async fn answered_after(url: &str, meanwhile: impl FnOnce()) -> (Server, String) {
    let mut c = choice(url, Duration::from_secs(5));
    c.follow.card_ttl = Duration::ZERO;
    let s = server_for(c).await;
    let t = s.send_task(&format!("m-{}", tag()), "go").await;
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{t}");
    let id = t["id"].as_str().unwrap().to_string();
    meanwhile();
    s.send(
        &format!("m-{}", tag()),
        "more",
        json!({"taskId": id}),
        json!({"returnImmediately": true}),
    )
    .await;
    (s, id)
}

fn status(task: &str, state: &str) -> Value {
    json!({"statusUpdate": {"taskId": task, "contextId": "c", "status": {"state": state}}})
}

fn chunk(task: &str, text: &str, append: bool, last: bool) -> Value {
    json!({"artifactUpdate": {"taskId": task, "contextId": "c", "append": append, "lastChunk": last,
        "artifact": {"artifactId": "a", "parts": [{"text": text}]}}})
}

async fn failed_with(events: Vec<Value>) -> (String, Value) {
    let (url, _) = scripted(events).await;
    let s = server_for(choice(&url, Duration::from_secs(5))).await;
    let id = s
        .start_task(
            json!({"messageId": format!("m-{}", tag()), "role": "ROLE_USER",
            "parts": [{"text": "go"}]}),
        )
        .await;
    let t = s.wait_state(&id, "TASK_STATE_FAILED").await;
    let text = t["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (text, task_of(&s, &id).await)
}

#[tokio::test]
async fn an_event_of_another_task_fails_ours_saying_so() {
    let (text, t) = failed_with(vec![
        status("u-1", "TASK_STATE_WORKING"),
        chunk("u-1", "kept", false, false),
        status("u-2", "TASK_STATE_COMPLETED"),
    ])
    .await;
    assert!(text.contains("not of the task this one follows"), "{text}");
    // the events came together, one batch: nothing of the batch with the breach is kept
    assert_eq!(artifact_text(&t, "a"), "");
}

#[tokio::test]
async fn a_chunk_after_the_last_fails_ours_saying_so() {
    let (text, _) = failed_with(vec![
        status("u-1", "TASK_STATE_WORKING"),
        chunk("u-1", "a", false, true),
        chunk("u-1", "b", true, false),
    ])
    .await;
    assert!(text.contains("after its last chunk"), "{text}");
}

#[tokio::test]
async fn an_oversized_event_fails_ours_and_nothing_of_it_is_stored() {
    let big = "x".repeat(3 * 1024 * 1024);
    let (text, t) = failed_with(vec![
        status("u-1", "TASK_STATE_WORKING"),
        chunk("u-1", &big, false, true),
    ])
    .await;
    assert!(text.contains("correlation id"), "{text}");
    assert!(t["artifacts"].as_array().is_none_or(Vec::is_empty), "{t}");
}

#[tokio::test]
async fn garbage_fails_ours_with_a_correlation_id_not_the_upstreams_words() {
    let (text, _) = failed_with(vec![
        json!({"bogus": "<script>secret-internal-host</script>"}),
    ])
    .await;
    assert!(text.contains("correlation id"), "{text}");
    assert!(!text.contains("secret-internal-host"), "{text}");
}

#[tokio::test]
async fn a_card_that_drops_the_tasks_interface_fails_the_task_at_its_next_turn() {
    let (url, script) = scripted(vec![status("u-1", "TASK_STATE_INPUT_REQUIRED")]).await;
    // the answer's turn reads the card again (trusted for no time here)
    let (s, id) = answered_after(&url, || {
        *script.interface.lock().unwrap() = Some(format!("{url}/moved"));
    })
    .await;
    let t = s.wait_state(&id, "TASK_STATE_FAILED").await;
    let text = t["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(text.contains("no longer offers"), "{text}");
    assert!(
        !text.contains("127.0.0.1"),
        "no URL in what participants read: {text}"
    );
}

#[tokio::test]
async fn our_credential_reaches_the_upstream_and_our_callers_token_never_does() {
    let (url, script) = scripted(vec![
        status("u-1", "TASK_STATE_WORKING"),
        status("u-1", "TASK_STATE_COMPLETED"),
    ])
    .await;
    let mut c = choice(&url, Duration::from_secs(5));
    c.token = taskledger_app::compose::UpstreamToken::new("upstream-secret");
    let mut config = test_config();
    config.agent = AgentChoice::Upstream(c);
    config.tokens.insert(
        "tok-alice".into(),
        taskledger_domain::ids::Principal::new("acme", "alice").unwrap(),
    );
    let s = Server::start_with(config).await.as_user("tok-alice");
    let t = s.send_task(&format!("m-{}", tag()), "go").await;
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    let seen = script.seen_auth.lock().unwrap().clone();
    assert!(!seen.is_empty());
    assert!(
        seen.iter().all(|a| a == "Bearer upstream-secret"),
        "{seen:?}"
    );
}

#[tokio::test]
async fn an_upstream_on_a_refused_address_fails_the_task_by_the_ssrf_rules() {
    let (url, script) = scripted(vec![status("u-1", "TASK_STATE_COMPLETED")]).await;
    let c = UpstreamChoice::new(&url, AddressPolicy::strict()).unwrap();
    let s = server_for(c).await;
    let id = s
        .start_task(
            json!({"messageId": format!("m-{}", tag()), "role": "ROLE_USER",
            "parts": [{"text": "go"}]}),
        )
        .await;
    let t = s.wait_state(&id, "TASK_STATE_FAILED").await;
    let text = t["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(text.contains("SSRF"), "{text}");
    assert!(
        script.seen_auth.lock().unwrap().is_empty(),
        "nothing reached it"
    );
}

#[tokio::test]
async fn an_unreachable_upstream_is_retried_then_given_up_saying_why() {
    let url = format!("http://127.0.0.1:{}", free_port());
    let s = server_for(choice(&url, Duration::from_secs(5))).await;
    let id = s
        .start_task(
            json!({"messageId": format!("m-{}", tag()), "role": "ROLE_USER",
            "parts": [{"text": "go"}]}),
        )
        .await;
    let t = s.wait_state(&id, "TASK_STATE_FAILED").await;
    let text = t["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(text.contains("given up after 3 attempts"), "{text}");
    assert!(!text.contains("127.0.0.1"), "{text}");
}

/// The serverless path: DynamoDB's stream relays each work request (the first message, every
/// continuation, the user's answer) to the SQS turn queue, whose worker follows the upstream.
#[tokio::test]
async fn a_long_task_and_an_answer_go_through_the_dynamodb_stream_and_the_turn_queue() {
    if !taskledger_tests::aws_endpoint() {
        return;
    }
    let Some(p) = partner(Sdk::V1, &[]).await else {
        return;
    };
    let mut config = test_config();
    config.storage = taskledger_local::Storage::Dynamo {
        index_shards: 1,
        prefix: format!("tl-up-{}-", uuid::Uuid::new_v4().simple()),
        create_tables: true,
        counter: None,
        pollers: true,
    };
    config.agent = AgentChoice::Upstream(choice(&p.url, Duration::from_secs(1)));
    config.blocking_timeout = Duration::from_secs(20);
    let s = Server::start_with(config).await;
    let id = s
        .start_task(
            json!({"messageId": format!("m-{}", tag()), "role": "ROLE_USER",
            "parts": [{"text": "slow 2"}]}),
        )
        .await;
    s.wait_state(&id, "TASK_STATE_COMPLETED").await;
    let ticks: String = (1..=4).map(|i| format!("tick-{i} ")).collect();
    assert_eq!(artifact_text(&task_of(&s, &id).await, "progress"), ticks);
    let t = s.send_task(&format!("m-{}", tag()), "ask").await;
    let id = t["id"].as_str().unwrap();
    let t = s.wait_state(id, "TASK_STATE_INPUT_REQUIRED").await;
    assert_eq!(
        t["status"]["message"]["parts"][0]["text"],
        "what is your name?"
    );
    s.send(
        &format!("m-{}", tag()),
        "Grace",
        json!({"taskId": id}),
        json!({}),
    )
    .await;
    let t = s.wait_state(id, "TASK_STATE_COMPLETED").await;
    assert_eq!(artifact_text(&t, "greeting"), "hello Grace");
}

#[tokio::test]
async fn the_upstreams_auth_required_becomes_ours_with_its_message() {
    let mut asks = status("u-1", "TASK_STATE_AUTH_REQUIRED");
    asks["statusUpdate"]["status"]["message"] = json!({"messageId": "u-m-1",
        "role": "ROLE_AGENT", "parts": [{"text": "sign in to the calendar first"}]});
    let (url, _) = scripted(vec![status("u-1", "TASK_STATE_WORKING"), asks]).await;
    let s = server_for(choice(&url, Duration::from_secs(5))).await;
    let t = s.send_task(&format!("m-{}", tag()), "book it").await;
    assert_eq!(t["status"]["state"], "TASK_STATE_AUTH_REQUIRED", "{t}");
    assert_eq!(
        t["status"]["message"]["parts"][0]["text"], "sign in to the calendar first",
        "{t}"
    );
}

#[tokio::test]
async fn an_unchanged_card_is_read_again_by_its_etag() {
    use axum::response::IntoResponse;
    let script = Script {
        events: vec![status("u-1", "TASK_STATE_INPUT_REQUIRED")],
        ..Default::default()
    };
    let asked: Arc<Mutex<Vec<String>>> = Arc::default();
    let (card_state, seen) = (script.clone(), asked.clone());
    let card = move |headers: HeaderMap| {
        let (s, seen) = (card_state.clone(), seen.clone());
        async move {
            let etag = "\"card-v1\"";
            let sent = headers
                .get("if-none-match")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            seen.lock().unwrap().push(sent.clone());
            if sent == etag {
                return (axum::http::StatusCode::NOT_MODIFIED, [("etag", etag)]).into_response();
            }
            let Json(body) = scripted_card(State(s), headers).await;
            ([("etag", etag)], Json(body)).into_response()
        }
    };
    let url = serve_script(
        &script,
        axum::Router::new().route("/.well-known/agent-card.json", get(card)),
    )
    .await;
    // Two turns, each reading the card (trusted for no time here): the second asks by its tag,
    // is told it has not changed, and goes on with the card it holds.
    let _served = answered_after(&url, || {}).await;
    for _ in 0..200 {
        if asked.lock().unwrap().len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let asked = asked.lock().unwrap().clone();
    assert!(asked.len() >= 2, "{asked:?}");
    assert_eq!(asked[0], "", "the first read asks for the card");
    assert!(
        asked[1..].iter().all(|a| a == "\"card-v1\""),
        "later reads ask by its tag: {asked:?}"
    );
}

#[tokio::test]
async fn our_card_follows_the_upstreams_skills_without_a_turn() {
    let (url, script) = scripted(vec![]).await;
    let skill = |id: &str| json!({"id": id, "name": id, "description": "d", "tags": ["t"]});
    *script.skills.lock().unwrap() = vec![skill("plan")];
    let mut c = choice(&url, Duration::from_secs(5));
    c.follow.card_ttl = Duration::from_millis(100);
    let s = server_for(c).await;
    let ours = || async {
        let card: Value = reqwest::get(format!("{}/.well-known/agent-card.json", s.base))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        card["skills"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|k| k["id"].as_str().map(str::to_string))
            .collect::<Vec<_>>()
    };
    let until = |want: &'static str, gone: &'static str| {
        let ours = &ours;
        async move {
            let mut seen = Vec::new();
            for _ in 0..100 {
                seen = ours().await;
                if seen.iter().any(|k| k == want) && !seen.iter().any(|k| k == gone) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            panic!("our card's skills {seen:?}: no {want}, or still {gone}");
        }
    };
    until("plan", "ship").await;
    // The upstream changes its skills; no task runs: our card follows within its TTL.
    *script.skills.lock().unwrap() = vec![skill("ship")];
    until("ship", "plan").await;
}

#[tokio::test]
async fn behind_an_upstream_the_input_modes_our_card_states_are_the_ones_we_take() {
    // The scripted upstream takes text/plain only.
    let (url, _) = scripted(vec![status("u-1", "TASK_STATE_COMPLETED")]).await;
    let s = server_for(choice(&url, Duration::from_secs(5))).await;
    let envelope = taskledger_domain::extensions::harness::MEDIA_TYPE;
    let mut modes = Value::Null;
    for _ in 0..100 {
        let card: Value = reqwest::get(format!("{}/.well-known/agent-card.json", s.base))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        modes = card["defaultInputModes"].clone();
        if modes == json!(["text/plain", envelope]) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(modes, json!(["text/plain", envelope]));
    // A data part (application/json, which the built-in agent takes) is refused, saying so.
    let v = s
        .call(
            "SendMessage",
            json!({"message": {"messageId": format!("m-{}", tag()), "role": "ROLE_USER",
                "parts": [{"data": {"a": 1}}]}}),
        )
        .await;
    assert_eq!(v["error"]["code"], -32005, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("application/json"),
        "{v}"
    );
    // Text is taken.
    let t = s.send_task(&format!("m-{}", tag()), "go").await;
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
}
