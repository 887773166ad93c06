//! The board as a browser sees it, for the black-box security tests: alice, bob and mallory
//! of acme, signing in from the board's own page, pages read with a session cookie, and a task
//! alice shares.

use reqwest::header::{COOKIE, SET_COOKIE};
use reqwest::redirect::Policy;
use reqwest::StatusCode;
use serde_json::{json, Value};
use taskledger_domain::ids::Principal;

use crate::{test_config, Server};

/// The task extension's media type (a data part carrying the envelope).
pub const MEDIA: &str = "application/vnd.tiny-harness.task+json";

/// alice, bob and mallory of acme, each with a token named by their initial.
pub fn people() -> taskledger_local::Config {
    let mut config = test_config();
    config.tokens = [("a", "alice"), ("b", "bob"), ("m", "mallory")]
        .into_iter()
        .map(|(t, s)| (t.to_string(), Principal::new("acme", s).unwrap()))
        .collect();
    config
}

pub fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap()
}

/// Signs in to the board with `token` from the board's own page; the session cookie.
pub async fn session(s: &Server, token: &str) -> String {
    let r = browser()
        .post(format!("{}/board/login", s.base))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Origin", &s.base)
        .header("Sec-Fetch-Site", "same-origin")
        .body(format!("token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let set = r.headers()[SET_COOKIE].to_str().unwrap();
    set.split(';').next().unwrap().to_string()
}

/// A board page read with `cookie`: status, headers and body.
pub async fn page(
    s: &Server,
    path: &str,
    cookie: &str,
) -> (StatusCode, reqwest::header::HeaderMap, String) {
    let r = browser()
        .get(format!("{}{path}", s.base))
        .header(COOKIE, cookie)
        .send()
        .await
        .unwrap();
    (r.status(), r.headers().clone(), r.text().await.unwrap())
}

/// alice's task shared with `with`, waiting for input (the scenario agent's
/// `tck-input-required-` rule: every later message of that kind runs a turn again).
pub async fn shared_task(alice: &Server, with: &[(&str, &str)]) -> String {
    let participants: Vec<Value> = with
        .iter()
        .map(|(id, role)| json!({"id": id, "kind": "human", "role": role}))
        .collect();
    let v = alice
        .call(
            "SendMessage",
            json!({"message": {"messageId": "tck-input-required-0", "role": "ROLE_USER", "parts": [
                {"text": "Deploy it"},
                {"data": {"name": "Release", "goal": "Ship", "participants": participants}, "mediaType": MEDIA}]},
                "configuration": {"returnImmediately": false}}),
        )
        .await;
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{v}"
    );
    v["result"]["task"]["id"].as_str().unwrap().to_string()
}
