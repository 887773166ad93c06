//! What every board response tells the browser, so that a mistake elsewhere cannot become
//! script on the board's origin: a strict Content-Security-Policy (script only from the board's
//! own file, the one inline stylesheet by its hash, images from the board, `data:` or the
//! operator's origins, no frames, no plugins, forms and fetches to the board itself), no
//! MIME sniffing, no referrer leaving with a link to another origin (`same-origin`: with
//! `no-referrer` a browser sends `Origin: null` on the board's own forms, which the
//! cross-site check must then refuse), never framed, never cached.

use std::sync::OnceLock;

use axum::extract::{Request, State};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
    X_FRAME_OPTIONS,
};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use sha2::{Digest, Sha256};

use super::STYLE;

/// `'sha256-…'` of the inline stylesheet every page carries.
fn style_hash() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| {
        format!(
            "'sha256-{}'",
            STANDARD.encode(Sha256::digest(STYLE.as_bytes()))
        )
    })
}

/// The policy of a board page, images allowed from `image_origins` too.
pub fn content_security_policy(image_origins: &[String]) -> String {
    let mut img = String::from("'self' data:");
    for o in image_origins {
        img.push(' ');
        img.push_str(o);
    }
    format!(
        "default-src 'none'; script-src 'self'; style-src {}; img-src {img}; connect-src 'self'; \
         form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        style_hash()
    )
}

/// Adds the headers to every board response.
pub(super) async fn headers(
    State(policy): State<HeaderValue>,
    req: Request,
    next: Next,
) -> Response {
    let mut response = next.run(req).await;
    let h = response.headers_mut();
    h.insert(CONTENT_SECURITY_POLICY, policy);
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if !h.contains_key(CACHE_CONTROL) {
        h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_allows_no_inline_script_and_names_the_stylesheet_and_image_origins() {
        let p = content_security_policy(&["https://cdn.example.com".into()]);
        assert!(p.contains("script-src 'self';"), "{p}");
        assert!(
            !p.contains("unsafe-inline") && !p.contains("unsafe-eval"),
            "{p}"
        );
        assert!(p.contains("frame-ancestors 'none'"), "{p}");
        assert!(
            p.contains("img-src 'self' data: https://cdn.example.com;"),
            "{p}"
        );
        assert!(p.contains(style_hash()), "{p}");
        assert!(HeaderValue::from_str(&p).is_ok());
    }
}
