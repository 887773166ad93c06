//! The task board's pages over real HTTP (ADR 023): signing in, the board with its counts,
//! filters and rows (shared tasks included), and a task page that offers each principal only
//! what its role allows — the asked participant an answer, a watcher nothing to send, the owner
//! a cancel — and shows nothing of a task to anyone else.

use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use reqwest::redirect::Policy;
use reqwest::StatusCode;
use serde_json::json;
use taskledger_domain::ids::Principal;
use taskledger_tests::{test_config, Server};

const MEDIA: &str = "application/vnd.tiny-harness.task+json";

fn people() -> taskledger_local::Config {
    let mut config = test_config();
    config.tokens = [
        ("a", "alice"),
        ("b", "bob"),
        ("c", "carol"),
        ("m", "mallory"),
    ]
    .into_iter()
    .map(|(t, s)| (t.to_string(), Principal::new("acme", s).unwrap()))
    .collect();
    config
}

fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap()
}

/// The session cookie (`name=value`) signing in with `token` gives.
async fn session(s: &Server, token: &str) -> String {
    let r = browser()
        .post(format!("{}/board/login", s.base))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(format!("token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER, "signed in");
    let set = r.headers()[SET_COOKIE].to_str().unwrap();
    set.split(';').next().unwrap().to_string()
}

/// A page as the principal of `token` reads it, signed in (none: not signed in).
async fn page(s: &Server, path: &str, token: Option<&str>) -> (StatusCode, String) {
    let mut r = browser().get(format!("{}{path}", s.base));
    if let Some(t) = token {
        r = r.header(COOKIE, session(s, t).await);
    }
    let r = r.send().await.unwrap();
    (r.status(), r.text().await.unwrap())
}

/// alice's task with a plan, shared with bob (assignee) and carol (watcher), waiting for bob.
async fn shared_task(s: &Server) -> String {
    let env = json!({
        "name": "Release 1.0", "goal": "Ship it",
        "participants": [
            {"id": "alice", "kind": "human", "role": "admin"},
            {"id": "bob", "kind": "human", "role": "assignee"},
            {"id": "carol", "kind": "human", "role": "watcher"}
        ],
        "plan": {"steps": [{"id": "", "name": "Build"}, {"id": "", "name": "Ship", "depends_on": ["Build"]}]}
    });
    let v = s
        .as_user("a")
        .call(
            "SendMessage",
            json!({"message": {"messageId": "th-ask-bob", "role": "ROLE_USER",
                "parts": [{"text": "Deploy it"}, {"data": env, "mediaType": MEDIA}]},
                "configuration": {"returnImmediately": false}}),
        )
        .await;
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{v}"
    );
    v["result"]["task"]["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn signing_in_checks_the_token_and_keeps_it_in_a_cookie() {
    let s = Server::start_with(people()).await;
    let (status, _) = page(&s, "/", None).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (status, form) = page(&s, "/board/login", None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(form.contains(r#"name="token""#), "{form}");
    let login = |t: &str| {
        browser()
            .post(format!("{}/board/login", s.base))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(format!("token={t}"))
            .send()
    };
    let r = login("wrong").await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.headers().get(SET_COOKIE).is_none());
    let r = login("b").await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()[LOCATION], "/");
    let cookie = r.headers()[SET_COOKIE].to_str().unwrap().to_string();
    assert!(
        cookie.starts_with("tl_session=")
            && !cookie.starts_with("tl_session=b;")
            && cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Strict")
            && cookie.contains("Max-Age="),
        "a signed session, not the token: {cookie}"
    );
    let (status, board) = page(&s, "/", Some("b")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(board.contains("acme/bob"), "signed in as bob");
}

#[tokio::test]
async fn the_board_lists_own_and_shared_tasks_with_counts_and_filters() {
    let s = Server::start_with(people()).await;
    let id = shared_task(&s).await;
    s.as_user("b").send_task("m-own", "bob's own").await;
    let (status, board) = page(&s, "/", Some("b")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        board.contains(&format!(r#"data-task-id="{id}""#)),
        "the shared task"
    );
    assert!(
        board.contains("Release 1.0") && board.contains("Ship it"),
        "name and goal"
    );
    assert!(board.contains("carol (watcher)"), "participants");
    assert_eq!(board.matches("<tr data-task-id=").count(), 2);
    assert!(
        board.contains(r#"data-count="TASK_STATE_INPUT_REQUIRED">1<"#),
        "{board}"
    );
    assert!(board.contains(r#"data-count="TASK_STATE_COMPLETED">1<"#));
    let (_, filtered) = page(&s, "/?state=TASK_STATE_INPUT_REQUIRED", Some("b")).await;
    assert_eq!(filtered.matches("<tr data-task-id=").count(), 1);
    assert!(filtered.contains(&id));
    let (status, _) = page(&s, "/?state=TASK_STATE_BOGUS", Some("b")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // mallory sees none of it
    let (_, hers) = page(&s, "/", Some("m")).await;
    assert_eq!(hers.matches("<tr data-task-id=").count(), 0);
    assert!(hers.contains(r#"<p class="empty">No tasks"#), "{hers}");
    assert!(
        board.contains(r#"<p class="empty" hidden>"#),
        "hidden when there are tasks"
    );
}

#[tokio::test]
async fn a_task_page_offers_each_principal_what_its_role_allows() {
    let s = Server::start_with(people()).await;
    let id = shared_task(&s).await;
    let path = format!("/board/tasks/{id}");
    // bob was asked: he may answer with the options, and send
    let (status, bobs) = page(&s, &path, Some("b")).await;
    assert_eq!(status, StatusCode::OK);
    for want in [
        r#"data-rpc="answer-help""#,
        r#"value="a""#,
        r#"data-rpc="send""#,
        "Which option should I take?",
    ] {
        assert!(bobs.contains(want), "bob: {want}");
    }
    assert!(
        !bobs.contains(r#"data-rpc="cancel""#),
        "an assignee does not cancel"
    );
    // the plan is drawn, steps coloured by state, participants and the timeline listed
    assert!(bobs.contains(r#"<svg class="plan""#) && bobs.contains(r#"data-step-state="pending""#));
    assert!(bobs.contains("<line"), "Ship depends on Build");
    assert!(
        bobs.contains("TaskCreated") && bobs.contains("HelpRequested"),
        "the timeline"
    );
    // carol watches: no answer, no send, no cancel
    let (_, carols) = page(&s, &path, Some("c")).await;
    for absent in [
        r#"data-rpc="answer-help""#,
        r#"data-rpc="send""#,
        r#"data-rpc="cancel""#,
    ] {
        assert!(!carols.contains(absent), "carol: {absent}");
    }
    assert!(carols.contains("Release 1.0"));
    // alice owns: she may cancel and send; she was not asked
    let (_, alices) = page(&s, &path, Some("a")).await;
    assert!(alices.contains(r#"data-rpc="cancel""#) && alices.contains(r#"data-rpc="send""#));
    assert!(!alices.contains(r#"data-rpc="answer-help""#));
    assert!(
        alices.contains("Push subscriptions"),
        "the owner sees its webhooks"
    );
    assert!(
        bobs.contains("Push subscriptions"),
        "bob sees his own webhooks (none)"
    );
    // mallory: no such task, nothing of it shown
    let (status, hers) = page(&s, &path, Some("m")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(!hers.contains("Release 1.0"));
}

#[tokio::test]
async fn the_pages_and_their_assets_come_from_the_server_itself() {
    let s = Server::start_with(people()).await;
    for (path, kind) in [
        ("/board/assets/board.js", "javascript"),
        ("/board/assets/board.css", "css"),
    ] {
        let r = browser()
            .get(format!("{}{path}", s.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert!(r.headers()["content-type"].to_str().unwrap().contains(kind));
    }
    let (_, board) = page(&s, "/", Some("a")).await;
    assert!(
        !board.contains("http://") && !board.contains("https://"),
        "no external assets"
    );
}

/// A sub-task's own sub-task shows under it on the first task's page: the tree is followed level
/// by level, with names and states, and each entry links to its page.
#[tokio::test]
async fn the_task_page_draws_the_sub_task_tree_below_the_first_level() {
    let s = Server::start_with(people()).await;
    let alice = s.as_user("a");
    let spawn = |id: &'static str, goal: &'static str| {
        let message = json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": goal},
            {"data": {"name": "Release", "goal": "Ship"}, "mediaType": MEDIA}]});
        let alice = &alice;
        async move {
            alice
                .call(
                    "SendMessage",
                    json!({"message": message, "configuration": {"returnImmediately": false}}),
                )
                .await
        }
    };
    let subs = |v: &serde_json::Value| -> Vec<String> {
        v["metadata"][taskledger_domain::extensions::harness::METADATA_KEY]["sub_tasks"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|r| r["task_id"].as_str().unwrap().to_string())
            .collect()
    };
    // the scripted model: a goal marked `th-subtask: ` spawns the next level itself
    let top = spawn("th-subtask-1", "th-subtask: Sort the notes").await;
    let top_id = top["result"]["task"]["id"].as_str().unwrap().to_string();
    let got = alice.call("GetTask", json!({"id": top_id})).await;
    let child = subs(&got["result"]).first().cloned().expect("a sub-task");
    let got = alice.call("GetTask", json!({"id": child})).await;
    let grandchild = subs(&got["result"])
        .first()
        .cloned()
        .expect("a sub-sub-task");
    let (status, html) = page(&s, &format!("/board/tasks/{top_id}"), Some("a")).await;
    assert_eq!(status, StatusCode::OK);
    let tree = &html[html.find(r#"<ul class="subtasks">"#).expect("the tree")..];
    let at_child = tree.find(&format!("/board/tasks/{child}")).unwrap();
    let at_grandchild = tree.find(&format!("/board/tasks/{grandchild}")).unwrap();
    assert!(at_child < at_grandchild, "{tree}");
    assert!(
        tree[at_child..at_grandchild].contains("<ul>"),
        "the grandchild is nested under the child: {tree}"
    );
    assert!(tree.contains("badge"), "states are shown: {tree}");
    // the grandchild's page names its parent
    let (_, html) = page(&s, &format!("/board/tasks/{grandchild}"), Some("a")).await;
    assert!(html.contains("Part of") && html.contains(&child), "{html}");
}

/// A task page shows its agent turns and how each ended, and to the owner the deliveries its
/// outbox still holds (here one a webhook refused for good: dead-lettered, with the reason);
/// a participant who is not the owner sees the turns but no deliveries.
#[tokio::test]
async fn a_task_page_shows_its_agent_turns_and_the_deliveries_still_waiting() {
    let mut config = people();
    config.push.policy = taskledger_domain::push::AddressPolicy::allow_loopback();
    let s = Server::start_with(config).await;
    let hook = taskledger_tests::receiver::Receiver::start(
        taskledger_tests::receiver::Script::Always(400),
    )
    .await;
    let id = shared_task(&s).await;
    s.as_user("a")
        .ok(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": hook.url}),
        )
        .await;
    // bob answers: a new turn; the agent completes the task; the update is refused for good.
    s.as_user("b")
        .ok(
            "SendMessage",
            json!({"message": {"messageId": "th-bob-answers", "role": "ROLE_USER", "taskId": id,
                "parts": [{"text": "done"}]}, "configuration": {"returnImmediately": false}}),
        )
        .await;
    let path = format!("/board/tasks/{id}");
    let mut html = String::new();
    for _ in 0..100 {
        html = page(&s, &path, Some("a")).await.1;
        if html.contains("data-state=\"dead-lettered\"") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(html.contains("Agent turns"), "{html}");
    assert!(
        html.matches("data-turn=").count() >= 2,
        "two work requests: {html}"
    );
    assert!(
        html.contains("data-outcome=\"finished\"") || html.contains("data-outcome=\"ended\""),
        "{html}"
    );
    assert!(html.contains("Webhook deliveries"));
    assert!(html.contains("data-state=\"dead-lettered\""), "{html}");
    let (_, bobs) = page(&s, &path, Some("b")).await;
    assert!(bobs.contains("Agent turns"));
    assert!(
        !bobs.contains("data-delivery=") && !bobs.contains(hook.url.as_str()),
        "each principal sees only its own deliveries: {bobs}"
    );
}

#[tokio::test]
async fn the_timeline_slider_redraws_a_task_page_as_of_any_event_read_only() {
    let s = Server::start_with(people()).await;
    let id = shared_task(&s).await;
    let (status, now) = page(&s, &format!("/board/tasks/{id}"), Some("a")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(now.contains(r#"name="at""#), "the slider: {now}");
    assert!(
        now.contains("data-rpc=\"cancel\""),
        "the owner may cancel now"
    );
    assert!(!now.contains("data-as-of=\""), "the live page");
    // After the first event: the task as created, nothing offered.
    let (status, then) = page(&s, &format!("/board/tasks/{id}?at=1"), Some("a")).await;
    assert_eq!(status, StatusCode::OK, "{then}");
    assert!(
        then.contains(r#"data-state="TASK_STATE_SUBMITTED""#),
        "{then}"
    );
    assert!(then.contains(r#"data-as-of="1""#));
    assert!(then.contains("after event #1 (generation 1)"), "{then}");
    assert!(
        !then.contains("data-rpc="),
        "a past state offers no action: {then}"
    );
    assert!(
        then.contains("<li data-seq=\"1\""),
        "its timeline ends at the event"
    );
    assert!(!then.contains("<li data-seq=\"2\""), "{then}");
    // An event the task does not have, or a page for someone not on it.
    let (status, body) = page(&s, &format!("/board/tasks/{id}?at=999"), Some("a")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("is not an event of the task"), "{body}");
    let (status, _) = page(&s, &format!("/board/tasks/{id}?at=1"), Some("m")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
