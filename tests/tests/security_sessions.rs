//! Issue 51, class C, through the real binary: a board session lives while the server holds it
//! and its credential is still accepted — a restart without the token ends it; signing in and
//! out never makes another's signed-out session work again (the server refuses new sessions
//! rather than forget old ones); a request carrying two session cookies opens nothing; behind
//! TLS the cookie is `__Host-` prefixed. The JWT side (a key no longer published) is in
//! `tests/tests/jwt.rs`.

use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use reqwest::StatusCode;
use taskledger_tests::binary::ServerProcess;

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("tl-sec-sessions-{name}-{}", uuid::Uuid::new_v4()))
}

/// Signs in with `token` from the board's own page: the `Set-Cookie` pair, or the status.
async fn sign_in(s: &ServerProcess, token: &str) -> Result<String, StatusCode> {
    let r = s
        .client
        .post(format!("{}/board/login", s.base()))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Origin", s.base())
        .header("Sec-Fetch-Site", "same-origin")
        .body(format!("token={token}"))
        .send()
        .await
        .unwrap();
    if r.status() != StatusCode::SEE_OTHER {
        return Err(r.status());
    }
    let set = r.headers()[SET_COOKIE].to_str().unwrap();
    Ok(set.split(';').next().unwrap().to_string())
}

async fn sign_out(s: &ServerProcess, cookie: &str) {
    let r = s
        .client
        .post(format!("{}/board/logout", s.base()))
        .header("Origin", s.base())
        .header("Sec-Fetch-Site", "same-origin")
        .header(COOKIE, cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
}

/// Whether the board opens with `cookie` (else it sends the visitor to sign in).
async fn opens(s: &ServerProcess, cookie: &str) -> bool {
    let r = s
        .client
        .get(format!("{}/", s.base()))
        .header(COOKIE, cookie)
        .send()
        .await
        .unwrap();
    match r.status() {
        StatusCode::OK => true,
        StatusCode::SEE_OTHER => {
            assert_eq!(r.headers()[LOCATION], "/board/login");
            false
        }
        other => panic!("the board answered {other}"),
    }
}

#[tokio::test]
async fn a_session_ends_when_its_token_leaves_the_configuration() {
    let dir = temp("token-gone");
    let both = ["--tokens", "ta=acme/alice,tb=acme/bob"];
    let s = ServerProcess::sqlite_with(&dir, &both).await;
    let (alice, bob) = (
        sign_in(&s, "ta").await.unwrap(),
        sign_in(&s, "tb").await.unwrap(),
    );
    assert!(opens(&s, &alice).await && opens(&s, &bob).await);
    drop(s);
    // The same data directory, alice's token gone: the API refuses it, and so does the board.
    let s = ServerProcess::sqlite_with(&dir, &["--tokens", "tb=acme/bob"]).await;
    assert!(
        !opens(&s, &alice).await,
        "alice's session outlived her token"
    );
    assert!(opens(&s, &bob).await, "bob's token is still configured");
    // Given back, it does not come back to life: the session ended for good.
    drop(s);
    let s = ServerProcess::sqlite_with(&dir, &both).await;
    assert!(!opens(&s, &alice).await);
    assert!(opens(&s, &bob).await);
}

#[tokio::test]
async fn signing_in_and_out_never_revives_anothers_signed_out_session() {
    let dir = temp("churn");
    let s = ServerProcess::sqlite_with(&dir, &["--tokens", "ta=acme/alice,tb=acme/bob"]).await;
    let bobs = sign_in(&s, "tb").await.unwrap();
    sign_out(&s, &bobs).await;
    assert!(!opens(&s, &bobs).await);
    // alice churns through sessions one past what the old revocation list held (it forgot its
    // oldest entry then, bob's); bob's copied cookie stays dead throughout.
    const OLD_REVOKED_LIST: usize = 10_000;
    const CHURNERS: usize = 8;
    let churn = (0..CHURNERS).map(|w| {
        let s = &s;
        async move {
            for _ in (w..=OLD_REVOKED_LIST).step_by(CHURNERS) {
                let c = sign_in(s, "ta").await.unwrap();
                sign_out(s, &c).await;
            }
        }
    });
    futures_util::future::join_all(churn).await;
    assert!(!opens(&s, &bobs).await, "a signed-out session works again");
    // Without signing out, alice reaches her bound: the next sign-in is refused, and none of
    // hers (or anyone's) is forgotten to make room.
    let mut hers = Vec::new();
    loop {
        match sign_in(&s, "ta").await {
            Ok(c) => hers.push(c),
            Err(status) => {
                assert_eq!(status, StatusCode::UNAUTHORIZED);
                break;
            }
        }
        assert!(hers.len() <= 16, "more than the bound of sessions");
    }
    assert_eq!(hers.len(), 16);
    for c in &hers {
        assert!(opens(&s, c).await);
    }
    assert!(sign_in(&s, "tb").await.is_ok(), "bob has his own room");
}

#[tokio::test]
async fn two_session_cookies_open_nothing() {
    let dir = temp("two");
    let s = ServerProcess::sqlite_with(&dir, &["--tokens", "ta=acme/alice,tm=acme/mallory"]).await;
    let alice = sign_in(&s, "ta").await.unwrap();
    let mallory = sign_in(&s, "tm").await.unwrap();
    assert!(opens(&s, &alice).await);
    // mallory plants her session beside alice's (from a page on another port of the host).
    assert!(!opens(&s, &format!("{mallory}; {alice}")).await);
    assert!(!opens(&s, &format!("{alice}; {mallory}")).await);
}

#[tokio::test]
async fn behind_tls_the_cookie_is_host_prefixed_and_only_that_one_is_read() {
    let dir = temp("tls");
    let s = ServerProcess::sqlite_with(
        &dir,
        &[
            "--tokens",
            "ta=acme/alice",
            "--public-url",
            "https://board.example",
        ],
    )
    .await;
    let r = s
        .client
        .post(format!("{}/board/login", s.base()))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Origin", "https://board.example")
        .header("Sec-Fetch-Site", "same-origin")
        .body("token=ta")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let set = r.headers()[SET_COOKIE].to_str().unwrap().to_string();
    assert!(set.starts_with("__Host-tl_session="), "{set}");
    assert!(set.contains("; Secure") && set.contains("Path=/") && !set.contains("Domain"));
    let pair = set.split(';').next().unwrap().to_string();
    assert!(opens(&s, &pair).await);
    // The same value without the prefix (a cookie any port of the host could set) is not read.
    let plain = pair.replacen("__Host-", "", 1);
    assert!(!opens(&s, &plain).await);
}
