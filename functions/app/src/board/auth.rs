//! Signing in to the board: the token (a static token or a JWT) is entered once and checked by
//! the server's authenticator like any API request. The pages are then read with a signed,
//! expiring session in an HttpOnly cookie (`session.rs`) — never the token itself — that the
//! server holds while it lives and checks against the credential again on use, and the
//! script's API calls carry the token from the tab's `sessionStorage` (the API never reads the
//! cookie, so no other site can act with it). Signing in and out are refused from other sites
//! (`Origin`, `Sec-Fetch-Site`): no page elsewhere can sign a visitor in as someone else, or out.
//! Behind TLS the cookie is `__Host-` prefixed; a request carrying two session cookies (one
//! planted beside the real one) opens nothing.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, COOKIE, LOCATION, SET_COOKIE};
use axum::http::{Extensions, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::html;
use taskledger_domain::card::CardAuth;
use taskledger_domain::ids::Principal;

use super::layout;
use super::session::{Session, COOKIE_NAME, SECURE_COOKIE_NAME};
use crate::http::{guard, AppState, BoardSettings};

/// Longest token the sign-in form takes (a JWT of the authenticator's own bound fits).
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// The session cookie a board request carries: the one of `name`, if there is exactly one.
fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    let mut found = headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .filter(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string());
    let first = found.next()?;
    (found.next().is_none() && !first.is_empty()).then_some(first)
}

/// Whether the board is reached over TLS (its cookie is then `__Host-` and `Secure`).
fn secure(state: &AppState, headers: &HeaderMap, extensions: &Extensions) -> bool {
    guard::base(&state.settings, headers, extensions)
        .url
        .starts_with("https:")
}

/// The session cookie's name for a request.
fn cookie_name(secure: bool) -> &'static str {
    if secure {
        SECURE_COOKIE_NAME
    } else {
        COOKIE_NAME
    }
}

fn board(state: &AppState) -> Option<&BoardSettings> {
    state.settings.board.as_ref()
}

/// Checks `token` (none: no credentials) as the API would.
async fn check(state: &AppState, token: Option<&str>) -> Result<Principal, String> {
    let mut request = Request::builder().uri("/board");
    if let Some(t) = token {
        request = request.header(AUTHORIZATION, format!("Bearer {t}"));
    }
    let (parts, ()) = request.body(()).map_err(|e| e.to_string())?.into_parts();
    crate::identity::caller(state.auth.as_ref(), &state.service, &parts)
        .await
        .map_err(|e| e.to_string())
}

/// The principal a page is for: a server without credentials serves its one principal; else
/// the session's, while it is valid. Without one, the way to the sign-in form.
pub(super) async fn principal(
    state: &AppState,
    headers: &HeaderMap,
    extensions: &Extensions,
) -> Result<Principal, Response> {
    let to_login = || (StatusCode::SEE_OTHER, [(LOCATION, "/board/login")]).into_response();
    if !needs_token(state) {
        return check(state, None).await.map_err(|_| to_login());
    }
    let settings = board(state).ok_or_else(to_login)?;
    let name = cookie_name(secure(state, headers, extensions));
    let Some(session) = cookie(headers, name).and_then(|c| Session::open(settings, &c)) else {
        return Err(to_login());
    };
    session
        .still_live(settings, state.auth.as_ref())
        .await
        .ok_or_else(to_login)
}

/// A sign-in or sign-out from another site is refused before anything else happens.
fn cross_site(state: &AppState, parts: &axum::http::request::Parts) -> Option<Response> {
    let why = guard::same_origin(&state.settings, parts).err()?;
    tracing::debug!(%why, path = %parts.uri.path(), "board form refused");
    let body = html! {
        h1 { "Refused" }
        p { "This form can only be sent from the board's own pages (" (why) ")." }
        p { a href="/board/login" { "Sign in" } }
    };
    Some((StatusCode::FORBIDDEN, layout::page("Refused", None, body)).into_response())
}

fn needs_token(state: &AppState) -> bool {
    state.auth.card_auth() != CardAuth::None
}

pub(super) async fn login_form(State(state): State<Arc<AppState>>) -> Response {
    page(&state, None)
}

fn page(state: &AppState, error: Option<&str>) -> Response {
    let body = html! {
        h1 { "Sign in" }
        @if let Some(e) = error { p.error role="alert" { (e) } }
        @if needs_token(state) {
            form #login method="post" action="/board/login" {
                label for="token" { "Token (a bearer token or a JWT)" }
                input #token name="token" type="password" autocomplete="off" required autofocus;
                button type="submit" { "Sign in" }
            }
        } @else {
            p { "This server needs no token: everyone is the development principal." }
            p { a href="/" { "Open the board" } }
        }
    };
    let status = if error.is_some() {
        StatusCode::UNAUTHORIZED
    } else {
        StatusCode::OK
    };
    (status, layout::page("Sign in", None, body)).into_response()
}

/// The sign-in form's `token` field (`application/x-www-form-urlencoded`).
fn token_field(body: &[u8]) -> String {
    form_urlencoded::parse(body)
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

pub(super) async fn login(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    if let Some(refused) = cross_site(&state, &parts) {
        return refused;
    }
    let Ok(body) = axum::body::to_bytes(body, MAX_TOKEN_BYTES * 4).await else {
        return page(&state, Some("That is not a token."));
    };
    if body.len() > MAX_TOKEN_BYTES * 4 {
        return page(&state, Some("That is not a token."));
    }
    let field = token_field(&body);
    let t = field.trim();
    if t.is_empty() || t.len() > MAX_TOKEN_BYTES || !t.bytes().all(|b| b.is_ascii_graphic()) {
        return page(&state, Some("That is not a token."));
    }
    let who = match check(&state, Some(t)).await {
        Err(why) => return page(&state, Some(&format!("The token was not accepted: {why}"))),
        Ok(who) => who,
    };
    let (Some(settings), Some(print)) = (board(&state), state.auth.print(t)) else {
        return page(&state, Some("This server keeps no board sessions."));
    };
    let session = Session::start(settings, &who, &print);
    if let Err(why) = settings.sessions.start(session.live(print)) {
        return page(&state, Some(&why));
    }
    let secure = secure(&state, &parts.headers, &parts.extensions);
    let mut r = (StatusCode::SEE_OTHER, [(LOCATION, "/")]).into_response();
    let cookie = format!(
        "{}={}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{}",
        cookie_name(secure),
        session.seal(&settings.session_key),
        session.remaining(),
        if secure { "; Secure" } else { "" }
    );
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        r.headers_mut().insert(SET_COOKIE, v);
    }
    tracing::info!(principal = %who, "board session started");
    r
}

/// Signing out: the session is revoked (a copy of the cookie opens nothing more) and cleared.
pub(super) async fn logout(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let (parts, _) = request.into_parts();
    if let Some(refused) = cross_site(&state, &parts) {
        return refused;
    }
    let secure = secure(&state, &parts.headers, &parts.extensions);
    let name = cookie_name(secure);
    if let (Some(settings), Some(c)) = (board(&state), cookie(&parts.headers, name)) {
        if let Some(s) = Session::open(settings, &c) {
            settings.sessions.end(&s.sid);
        }
    }
    let mut r = (StatusCode::SEE_OTHER, [(LOCATION, "/board/login")]).into_response();
    let cleared = format!(
        "{name}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{}",
        if secure { "; Secure" } else { "" }
    );
    if let Ok(v) = HeaderValue::from_str(&cleared) {
        r.headers_mut().insert(SET_COOKIE, v);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_is_read_from_its_one_cookie_only() {
        let mut h = HeaderMap::new();
        h.insert(COOKIE, HeaderValue::from_static("a=1; tl_session=abc; b=2"));
        assert_eq!(cookie(&h, COOKIE_NAME).as_deref(), Some("abc"));
        assert_eq!(cookie(&h, SECURE_COOKIE_NAME), None, "not the secure one");
        let mut h = HeaderMap::new();
        h.insert(
            COOKIE,
            HeaderValue::from_static("tl_session_x=abc; tl_session=; tl_token=abc"),
        );
        assert_eq!(cookie(&h, COOKIE_NAME), None);
        assert_eq!(cookie(&HeaderMap::new(), COOKIE_NAME), None);
        // Two of them (one planted by a page on another port): neither is read.
        let mut h = HeaderMap::new();
        h.insert(COOKIE, HeaderValue::from_static("tl_session=planted"));
        h.append(COOKIE, HeaderValue::from_static("tl_session=real"));
        assert_eq!(cookie(&h, COOKIE_NAME), None);
        let mut h = HeaderMap::new();
        h.insert(
            COOKIE,
            HeaderValue::from_static("__Host-tl_session=a; __Host-tl_session=b"),
        );
        assert_eq!(cookie(&h, SECURE_COOKIE_NAME), None);
    }
}
