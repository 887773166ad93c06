//! The agent card (cached: Cache-Control, ETag, Last-Modified, 304) and the JWK Set of the key
//! that signs push deliveries.

use std::sync::Arc;

use crate::card::PublicCard;

use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH, LAST_MODIFIED, VARY};
use axum::http::{Extensions, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use sha2::{Digest, Sha256};
use taskledger_domain::card::{agent_card, CardAuth, CardSettings, Served};

use super::guard::{self, Base};
use super::{AppState, GrpcAddress, HttpSettings, CARD_MAX_AGE_SECS};

/// The public keys push deliveries are signed with (JWK Set, RFC 7517).
pub(super) async fn jwks(State(state): State<Arc<AppState>>) -> Response {
    match &state.settings.jwks {
        Some(keys) => (
            [
                (CONTENT_TYPE, "application/jwk-set+json"),
                (CACHE_CONTROL, "public, max-age=300"),
            ],
            keys.to_string(),
        )
            .into_response(),
        None => (
            StatusCode::NOT_FOUND,
            [(CONTENT_TYPE, "application/json")],
            json!({"error": "push deliveries are not signed on this server"}).to_string(),
        )
            .into_response(),
    }
}

/// The host (no port) of a base URL: `https://h:8443/x` → `h`, `http://[::1]:8080` → `[::1]`.
fn host_of(base: &str) -> &str {
    let rest = base.split_once("://").map_or(base, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    authority
        .rsplit_once(':')
        .filter(|(_, port)| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
        .map_or(authority, |(host, _)| host)
}

fn grpc_url(grpc: Option<&GrpcAddress>, base: &str) -> Option<String> {
    match grpc? {
        GrpcAddress::Fixed(addr) => Some(addr.clone()),
        GrpcAddress::Port(port) => Some(format!("{}:{port}", host_of(base))),
    }
}

/// The public card as a request reaches it (its URLs from `--public-url`, else the request's
/// host: `guard::base`). Callers who authenticate also get an extended card.
pub(super) fn public_card(
    state: &AppState,
    headers: &HeaderMap,
    extensions: &Extensions,
) -> (PublicCard, Base) {
    let base = guard::base(&state.settings, headers, extensions);
    let card = card_advertising(
        &state.settings,
        state.auth.card_auth(),
        state.service.served(),
        base.url.clone(),
        base.configured,
        state.service.agent().advertised().as_ref(),
    );
    (card, base)
}

/// The public card of a server with `settings` reached at `base`, signed when a key is
/// configured and `base` is a configured one (`--public-url`, an allowed host): a card naming
/// a host a request made up is never signed (`crate::card`).
pub fn card_at(
    settings: &HttpSettings,
    auth: CardAuth,
    served: Served,
    base: String,
    configured: bool,
) -> PublicCard {
    card_advertising(settings, auth, served, base, configured, None)
}

/// `card_at`, advertising what the agent says of itself besides (an upstream agent's skills
/// and modes: `Agent::advertised`) — our interfaces, extensions and security stay ours.
fn card_advertising(
    settings: &HttpSettings,
    auth: CardAuth,
    served: Served,
    base: String,
    configured: bool,
    advertised: Option<&taskledger_domain::agent::upstream::Advertised>,
) -> PublicCard {
    let mut card = agent_card(&CardSettings {
        grpc_url: grpc_url(settings.grpc.as_ref(), &base),
        public_url: base.clone(),
        name: settings.name.clone(),
        description: settings.description.clone(),
        version: settings.version.clone(),
        auth,
        served,
        extended_card: auth != CardAuth::None,
    });
    if let Some(a) = advertised {
        taskledger_domain::card::advertise(&mut card, a);
    }
    let signer = settings.card_signer.clone().filter(|_| configured);
    PublicCard::new(card, signer, &base)
}

/// What every card varies with: the version a client asks for (ADR 031).
const VARY_VERSION: &str = "A2A-Version";
/// What a card taken from the request's headers also varies with, for caches in front.
const VARY_ON: &str = "A2A-Version, Host, X-Forwarded-Proto, X-Forwarded-Host";

/// The public card at `/.well-known/agent-card.json` and at 0.3-era callers' legacy
/// `/.well-known/agent.json`, alike: the merged card to a request without a version (or a
/// `0.x` one), the 1.0 card as it is to one that says `1.x`, VersionNotSupported otherwise.
pub(super) async fn card(
    State(state): State<Arc<AppState>>,
    request: axum::extract::Request,
) -> Response {
    let (parts, _) = request.into_parts();
    let headers = &parts.headers;
    let shape = match crate::request::card_shape(
        crate::request::requested_version(headers, parts.uri.query()).as_deref(),
    ) {
        Ok(shape) => shape,
        Err(e) => {
            super::common::log_refusal(&e);
            return super::common::status_error(&e, state.settings.error_table);
        }
    };
    let (card, base) = public_card(&state, headers, &parts.extensions);
    let body = serde_json::to_vec(&crate::call::card_body(shape, &card.card)).unwrap_or_default();
    let digest = Sha256::digest(&body);
    let etag = format!(
        "\"{}\"",
        digest[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
    let mut h = HeaderMap::new();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Ok(v) = HeaderValue::from_str(&format!("public, max-age={CARD_MAX_AGE_SECS}")) {
        h.insert(CACHE_CONTROL, v);
    }
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&httpdate::fmt_http_date(state.started)) {
        h.insert(LAST_MODIFIED, v);
    }
    let vary = if base.from_request {
        VARY_ON
    } else {
        VARY_VERSION
    };
    h.insert(VARY, HeaderValue::from_static(vary));
    let not_modified = headers
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    if not_modified {
        return (StatusCode::NOT_MODIFIED, h).into_response();
    }
    (StatusCode::OK, h, body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grpc_url_is_the_card_host_with_the_grpc_port() {
        let port = Some(GrpcAddress::Port(50051));
        for (base, want) in [
            ("http://127.0.0.1:8080", "127.0.0.1:50051"),
            ("https://a2a.example.com", "a2a.example.com:50051"),
            (
                "https://a2a.example.com:8443/prefix",
                "a2a.example.com:50051",
            ),
            ("http://[::1]:8080", "[::1]:50051"),
            ("http://[::1]", "[::1]:50051"),
        ] {
            assert_eq!(
                grpc_url(port.as_ref(), base).as_deref(),
                Some(want),
                "{base}"
            );
        }
        let fixed = GrpcAddress::Fixed("grpc.example.com:443".into());
        assert_eq!(
            grpc_url(Some(&fixed), "http://x").as_deref(),
            Some("grpc.example.com:443")
        );
        assert_eq!(grpc_url(None, "http://x"), None);
    }
}
