//! Verified JWT bearer tokens on the local server: a real JWKS served over HTTP by a test
//! server, tokens signed with test keys, and every way a token can be wrong refused with 401,
//! the binding's error body and a `WWW-Authenticate` challenge — over JSON-RPC and HTTP+JSON
//! (and gRPC's UNAUTHENTICATED).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::routing::get;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::ecdsa::SigningKey;
use p256::pkcs8::EncodePrivateKey;
use reqwest::StatusCode;
use serde_json::{json, Value};
use taskledger_app::identity::jwt::{JwksSource, JwtSettings, MAX_TOKEN_BYTES};
use taskledger_tests::{chat, test_config, Server};

const ISSUER: &str = "https://idp.example.com/";
const AUDIENCE: &str = "taskledger-api";
/// The servers' refetch interval here (JWKS_REFETCH_MIN in production), so rotation shows.
const REFETCH: std::time::Duration = std::time::Duration::from_millis(300);

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

struct Key {
    kid: String,
    signing: SigningKey,
}

impl Key {
    fn new(kid: &str, seed: u8) -> Self {
        Self {
            kid: kid.into(),
            signing: SigningKey::from_bytes(&[seed; 32].into()).expect("a key"),
        }
    }

    fn jwk(&self) -> Value {
        let point = self.signing.verifying_key().to_encoded_point(false);
        json!({"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": self.kid,
               "x": b64(point.x().unwrap()), "y": b64(point.y().unwrap())})
    }

    fn sign(&self, claims: &Value) -> String {
        self.sign_as(&self.kid, claims)
    }

    /// Signed by this key, naming `kid` in the header.
    fn sign_as(&self, kid: &str, claims: &Value) -> String {
        let der = self.signing.to_pkcs8_der().expect("pkcs8");
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(kid.into());
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_ec_der(der.as_bytes()))
            .expect("signed")
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn claims(sub: &str) -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "tenant": "acme",
           "iat": now(), "exp": now() + 600})
}

/// A JWKS endpoint whose key set the test can change, counting fetches.
struct Idp {
    url: String,
    keys: Arc<Mutex<Value>>,
    fetches: Arc<AtomicUsize>,
}

async fn idp(keys: Value) -> Idp {
    let shared = Arc::new(Mutex::new(keys));
    let fetches = Arc::new(AtomicUsize::new(0));
    let (k, f) = (shared.clone(), fetches.clone());
    let app = axum::Router::new().route(
        "/jwks.json",
        get(move || {
            let (k, f) = (k.clone(), f.clone());
            async move {
                f.fetch_add(1, Ordering::SeqCst);
                axum::Json(k.lock().unwrap().clone())
            }
        }),
    );
    let addr = chat::serve(app).await;
    Idp {
        url: format!("http://{addr}/jwks.json"),
        keys: shared,
        fetches,
    }
}

async fn server(idp: &Idp) -> Server {
    let mut config = test_config();
    config.jwt = Some(JwtSettings {
        issuer: ISSUER.into(),
        audiences: vec![AUDIENCE.into()],
        algorithms: vec![Algorithm::ES256, Algorithm::RS256],
        jwks: JwksSource::Url(idp.url.clone()),
        tenant_claim: "tenant".into(),
        max_lifetime: None,
        refetch_min: REFETCH,
    });
    Server::start_with(config).await
}

/// Status, body and `WWW-Authenticate` of ListTasks over JSON-RPC with `token`.
async fn jsonrpc(s: &Server, token: Option<&str>) -> (StatusCode, Value, Option<String>) {
    let mut req = s
        .client
        .post(format!("{}/a2a", s.base))
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}));
    if let Some(t) = token {
        req = req.header("Authorization", format!("Bearer {t}"));
    }
    let r = req.send().await.expect("sent");
    let challenge = r
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string());
    (r.status(), r.json().await.unwrap_or(Value::Null), challenge)
}

async fn refused(s: &Server, token: &str, why: &str) {
    let (status, body, challenge) = jsonrpc(s, Some(token)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{why}: {body}");
    assert_eq!(
        body["error"]["data"][0]["reason"], "UNAUTHENTICATED",
        "{why}"
    );
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("invalid bearer token"), "{why}: {message}");
    assert_eq!(
        challenge.as_deref(),
        Some(r#"Bearer realm="a2a", error="invalid_token""#),
        "{why}"
    );
    // HTTP+JSON: the same refusal in its own error shape.
    let r = s
        .client
        .get(format!("{}/a2a/rest/tasks", s.base))
        .header("A2A-Version", "1.0")
        .header("Authorization", format!("Bearer {token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{why} (HTTP+JSON)");
    assert!(r.headers().contains_key("www-authenticate"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["status"], "UNAUTHENTICATED", "{why}: {v}");
}

#[tokio::test]
async fn a_valid_token_is_its_principal_and_every_bad_one_is_refused() {
    let key = Key::new("k1", 7);
    let idp = idp(json!({"keys": [key.jwk()]})).await;
    let s = server(&idp).await;

    // Valid: the principal is tenant/sub, and principals do not see each other's tasks.
    let alice = s.as_user(&key.sign(&claims("alice")));
    let bob = s.as_user(&key.sign(&claims("bob")));
    let task = alice.send_task("tck-input-required-jwt", "mine").await;
    let id = task["id"].as_str().unwrap();
    assert_eq!(bob.err("GetTask", json!({"id": id})).await, -32001);
    assert_eq!(alice.total_tasks().await, 1);
    assert_eq!(bob.total_tasks().await, 0);

    // The card says a JWT bearer token is needed.
    let card = s.card().await;
    let scheme = &card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"];
    assert_eq!(scheme["scheme"], "Bearer");
    assert_eq!(scheme["bearerFormat"], "JWT");

    // No token: 401 with a plain challenge.
    let (status, _, challenge) = jsonrpc(&s, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(challenge.as_deref(), Some(r#"Bearer realm="a2a""#));

    let mut expired = claims("alice");
    expired["exp"] = json!(now() - 3600);
    refused(&s, &key.sign(&expired), "expired").await;
    let mut early = claims("alice");
    early["nbf"] = json!(now() + 3600);
    refused(&s, &key.sign(&early), "not yet valid").await;
    let mut aud = claims("alice");
    aud["aud"] = json!("someone-else");
    refused(&s, &key.sign(&aud), "wrong audience").await;
    let mut iss = claims("alice");
    iss["iss"] = json!("https://evil.example.com/");
    refused(&s, &key.sign(&iss), "wrong issuer").await;
    let mut no_exp = claims("alice");
    no_exp.as_object_mut().unwrap().remove("exp");
    refused(&s, &key.sign(&no_exp), "no exp").await;

    // alg: none, with the claims of a valid token and no signature.
    let none = format!(
        "{}.{}.",
        b64(br#"{"alg":"none","typ":"JWT","kid":"k1"}"#),
        b64(claims("alice").to_string().as_bytes())
    );
    refused(&s, &none, "alg none").await;
    // HS256 with the public key as the shared secret (the key-confusion attack).
    let public = key.signing.verifying_key().to_encoded_point(false);
    let mut hs = Header::new(Algorithm::HS256);
    hs.kid = Some("k1".into());
    let confused = jsonwebtoken::encode(
        &hs,
        &claims("alice"),
        &EncodingKey::from_secret(public.as_bytes()),
    )
    .unwrap();
    refused(&s, &confused, "HS256 with the public key").await;
    // Signed by another key under the known kid: bad signature.
    let other = Key::new("k1", 9);
    refused(&s, &other.sign(&claims("alice")), "bad signature").await;
    // A tampered payload.
    let good = key.sign(&claims("alice"));
    let mut parts: Vec<&str> = good.split('.').collect();
    let forged = b64(claims("admin").to_string().as_bytes());
    parts[1] = &forged;
    refused(&s, &parts.join("."), "tampered payload").await;
    // Over the size bound (refused before parsing); at the bound it is parsed (and refused as
    // garbage, not as too long).
    refused(&s, &"a".repeat(MAX_TOKEN_BYTES + 1), "oversized").await;
    let (_, body, _) = jsonrpc(&s, Some(&"a".repeat(MAX_TOKEN_BYTES))).await;
    assert!(!body["error"]["message"].as_str().unwrap().contains("over"));
    // A static-looking garbage token.
    refused(&s, "not-a-jwt", "garbage").await;
    // Nothing above created anything.
    assert_eq!(alice.total_tasks().await, 1);
}

#[tokio::test]
async fn an_unknown_kid_fetches_the_keys_again_once_and_rotation_works() {
    let old = Key::new("old", 3);
    let idp = idp(json!({"keys": [old.jwk()]})).await;
    let s = server(&idp).await;
    let fetched_at_start = idp.fetches.load(Ordering::SeqCst);
    assert_eq!(fetched_at_start, 1, "the JWKS is read at start-up");
    assert_eq!(
        s.as_user(&old.sign(&claims("alice"))).total_tasks().await,
        0,
        "the old key works"
    );
    assert_eq!(
        idp.fetches.load(Ordering::SeqCst),
        1,
        "known keys are cached"
    );

    // The issuer rotates. Unknown kids within the refetch interval of the last fetch are
    // refused from the cache: a flood of made-up kids does not hammer the issuer.
    let new = Key::new("new", 5);
    *idp.keys.lock().unwrap() = json!({"keys": [old.jwk(), new.jwk()]});
    let unknown = Key::new("nobody", 11);
    for _ in 0..5 {
        let (status, _, _) = jsonrpc(&s, Some(&unknown.sign(&claims("alice")))).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    assert!(idp.fetches.load(Ordering::SeqCst) <= 2, "at most one fetch");
    // After the interval, the new key's first token fetches the set once and is accepted.
    tokio::time::sleep(REFETCH * 2).await;
    let before = idp.fetches.load(Ordering::SeqCst);
    let rotated = s.as_user(&new.sign(&claims("alice")));
    assert_eq!(
        rotated.total_tasks().await,
        0,
        "the rotated key is accepted"
    );
    assert_eq!(idp.fetches.load(Ordering::SeqCst), before + 1);
    // Both keys work from the cache now.
    assert_eq!(
        s.as_user(&old.sign(&claims("alice"))).total_tasks().await,
        0
    );
    assert_eq!(idp.fetches.load(Ordering::SeqCst), before + 1);
}

#[tokio::test]
async fn a_jwks_file_works_and_a_bad_configuration_fails_at_start() {
    let key = Key::new("f1", 21);
    let path = std::env::temp_dir().join(format!("jwks-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&path, json!({"keys": [key.jwk()]}).to_string()).unwrap();
    let mut config = test_config();
    config.jwt = Some(JwtSettings {
        issuer: ISSUER.into(),
        audiences: vec![AUDIENCE.into()],
        algorithms: vec![Algorithm::ES256],
        jwks: JwksSource::File(path.clone()),
        tenant_claim: "org".into(),
        max_lifetime: None,
        refetch_min: REFETCH,
    });
    let s = Server::start_with(config.clone()).await;
    let mut c = claims("carol");
    c["org"] = json!("globex");
    let carol = s.as_user(&key.sign(&c));
    carol.send_task("tck-input-required-f", "hello").await;
    assert_eq!(carol.total_tasks().await, 1);

    // A missing JWKS file is a start-up error, not a server that refuses everyone.
    let mut bad = config;
    if let Some(j) = bad.jwt.as_mut() {
        j.jwks = JwksSource::File(path.with_extension("missing"));
    }
    let err = taskledger_local::start(bad).await.expect_err("refused");
    assert!(err.to_string().contains("JWT"), "{err}");
}

#[tokio::test]
async fn a_server_bounding_token_lifetimes_refuses_longer_lived_tokens() {
    let key = Key::new("k1", 7);
    let idp = idp(json!({"keys": [key.jwk()]})).await;
    let mut config = test_config();
    config.jwt = Some(JwtSettings {
        issuer: ISSUER.into(),
        audiences: vec![AUDIENCE.into()],
        algorithms: vec![Algorithm::ES256],
        jwks: JwksSource::Url(idp.url.clone()),
        tenant_claim: "tenant".into(),
        max_lifetime: Some(std::time::Duration::from_secs(3600)),
        refetch_min: REFETCH,
    });
    let s = Server::start_with(config).await;
    let token = |iat: i64, exp: i64| {
        key.sign(
            &json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "tenant": "acme",
                         "iat": iat, "exp": exp}),
        )
    };
    // An hour exactly is accepted.
    let (status, body, _) = jsonrpc(&s, Some(&token(now(), now() + 3600))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // A second more, a year, or no iat at all is refused.
    refused(
        &s,
        &token(now(), now() + 3601),
        "lives an hour and a second",
    )
    .await;
    refused(&s, &token(now(), now() + 365 * 86400), "lives a year").await;
    let no_iat =
        key.sign(&json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": now() + 60}));
    refused(&s, &no_iat, "says nothing of when it was issued").await;
}

/// Whether the board opens with `cookie` (its front page, or the sign-in page it sends to).
async fn board_opens(s: &Server, cookie: &str) -> bool {
    let (status, headers, _) = taskledger_tests::board::page(s, "/", cookie).await;
    match status {
        StatusCode::OK => true,
        StatusCode::SEE_OTHER => {
            assert_eq!(headers["location"], "/board/login");
            false
        }
        other => panic!("the board answered {other}"),
    }
}

#[tokio::test]
async fn a_board_session_ends_when_its_jwt_expires_or_its_key_is_withdrawn() {
    let (kept, dropped) = (Key::new("kept", 3), Key::new("dropped", 5));
    let idp = idp(json!({"keys": [kept.jwk(), dropped.jwk()]})).await;
    let s = server(&idp).await;
    // Given: alice signs in with a token that expires in 3 s; bob with one of a key the
    // issuer is about to withdraw; carol with a token that stays good.
    let mut brief = claims("alice");
    brief["exp"] = json!(now() + 3);
    let alice = taskledger_tests::board::session(&s, &kept.sign(&brief)).await;
    let bob = taskledger_tests::board::session(&s, &dropped.sign(&claims("bob"))).await;
    let carol = taskledger_tests::board::session(&s, &kept.sign(&claims("carol"))).await;
    for c in [&alice, &bob, &carol] {
        assert!(board_opens(&s, c).await);
    }
    // When: the issuer withdraws bob's key (a token of a new key makes the server read the
    // set again), and alice's token expires.
    let new = Key::new("new", 7);
    *idp.keys.lock().unwrap() = json!({"keys": [kept.jwk(), new.jwk()]});
    tokio::time::sleep(REFETCH * 2).await;
    assert_eq!(s.as_user(&new.sign(&claims("dave"))).total_tasks().await, 0);
    tokio::time::sleep(std::time::Duration::from_millis(3_500)).await;
    // Then: their sessions no longer open the board (the cookies themselves are still
    // well signed and unexpired); carol's does.
    assert!(!board_opens(&s, &alice).await, "an expired JWT's session");
    assert!(!board_opens(&s, &bob).await, "a withdrawn key's session");
    assert!(board_opens(&s, &carol).await);
}
