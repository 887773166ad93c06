//! Signing in to the board: the token (a static token or a JWT) is entered once, checked by the
//! server's authenticator like any API request, and kept for the browser session — in an
//! HttpOnly cookie the pages are read with, and in the tab's `sessionStorage` for the script's
//! API calls (the API itself never reads the cookie, so no other site can act with it).

use std::sync::Arc;

use axum::extract::State;
use axum::http::header::{AUTHORIZATION, COOKIE, LOCATION, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::html;
use taskledger_domain::card::CardAuth;
use taskledger_domain::ids::Principal;

use super::layout;
use crate::http::AppState;

/// The cookie holding the board session's token.
pub const COOKIE_NAME: &str = "tl_token";
/// Longest token the sign-in form takes (a JWT of the authenticator's own bound fits).
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// The token a board request carries (its cookie), if any.
fn token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE_NAME)
        .map(|(_, v)| v.to_string())
        .filter(|v| !v.is_empty())
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

/// The principal a page is for; without a valid session, the way to the sign-in form.
pub(super) async fn principal(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<Principal, Response> {
    match check(state, token(headers).as_deref()).await {
        Ok(p) => Ok(p),
        Err(_) => Err((StatusCode::SEE_OTHER, [(LOCATION, "/board/login")]).into_response()),
    }
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

pub(super) async fn login(State(state): State<Arc<AppState>>, body: axum::body::Bytes) -> Response {
    if body.len() > MAX_TOKEN_BYTES * 4 {
        return page(&state, Some("That is not a token."));
    }
    let field = token_field(&body);
    let t = field.trim();
    if t.is_empty() || t.len() > MAX_TOKEN_BYTES || !t.bytes().all(|b| b.is_ascii_graphic()) {
        return page(&state, Some("That is not a token."));
    }
    match check(&state, Some(t)).await {
        Err(why) => page(&state, Some(&format!("The token was not accepted: {why}"))),
        Ok(_) => {
            let mut r = (StatusCode::SEE_OTHER, [(LOCATION, "/")]).into_response();
            if let Ok(v) = HeaderValue::from_str(&format!(
                "{COOKIE_NAME}={t}; Path=/; HttpOnly; SameSite=Strict"
            )) {
                r.headers_mut().insert(SET_COOKIE, v);
            }
            r
        }
    }
}

pub(super) async fn logout() -> Response {
    let mut r = (StatusCode::SEE_OTHER, [(LOCATION, "/board/login")]).into_response();
    r.headers_mut().insert(
        SET_COOKIE,
        HeaderValue::from_static("tl_token=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_token_is_read_from_its_cookie_only() {
        let mut h = HeaderMap::new();
        h.insert(COOKIE, HeaderValue::from_static("a=1; tl_token=abc; b=2"));
        assert_eq!(token(&h).as_deref(), Some("abc"));
        let mut h = HeaderMap::new();
        h.insert(
            COOKIE,
            HeaderValue::from_static("tl_token_x=abc; tl_token="),
        );
        assert_eq!(token(&h), None);
        assert_eq!(token(&HeaderMap::new()), None);
    }
}
