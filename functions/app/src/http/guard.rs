//! Where a request says it comes from, and what the server believes of it:
//!
//! - **The base URL** a response names (the card's interfaces, its signature's `jku`, a page's
//!   own origin): `--public-url` when configured; otherwise the request's `Host`, with
//!   `X-Forwarded-Proto`/`X-Forwarded-Host` believed only from a trusted proxy (`Proxies`). A
//!   base is *configured* when it is the public URL or its host is on `allowed_hosts`: only then
//!   is the card signed (`card.rs`).
//! - **The guard of a server that takes no credentials** (`guard`): a request whose `Host` is
//!   not a loopback name, the public URL's host or an allowed host is refused (a DNS-rebinding
//!   page would otherwise read the answers), and so is a cross-site one (`Origin` not the
//!   server's own, or `Sec-Fetch-Site: cross-site`/`same-site`): a web page the developer
//!   visits cannot drive the API. The agent card and key set stay public documents.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request};
use axum::http::header::{HOST, ORIGIN};
use axum::http::request::Parts;
use axum::http::{Extensions, HeaderMap};
use axum::middleware::Next;
use axum::response::Response;
use taskledger_domain::error::ErrorKind;

use super::{AppState, HttpSettings};
use crate::error::AppError;

/// Whose `X-Forwarded-Proto`/`X-Forwarded-Host` the server believes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Proxies {
    /// Nobody's: the headers are ignored (the local server's default).
    #[default]
    None,
    /// A proxy connecting from one of these networks (`--trusted-proxies`).
    From(Vec<ipnet::IpNet>),
    /// Every request's: only a gateway can reach the server (API Gateway in front of Lambda).
    Gateway,
}

impl Proxies {
    /// A comma-separated list of networks or addresses; empty: `None`.
    pub fn parse(list: &str) -> Result<Self, String> {
        let nets = taskledger_domain::push::parse_networks(list)?;
        Ok(if nets.is_empty() {
            Self::None
        } else {
            Self::From(nets)
        })
    }

    /// Which forwarded headers of a request are believed: (`X-Forwarded-Proto`,
    /// `X-Forwarded-Host`). A gateway sets the scheme but passes a client's
    /// `X-Forwarded-Host` through, so only a proxy of one's own is believed on the host.
    fn trusts(&self, extensions: &Extensions) -> (bool, bool) {
        match self {
            Self::None => (false, false),
            Self::Gateway => (true, false),
            Self::From(nets) => {
                let ok = extensions
                    .get::<ConnectInfo<SocketAddr>>()
                    .is_some_and(|ConnectInfo(peer)| nets.iter().any(|n| n.contains(&peer.ip())));
                (ok, ok)
            }
        }
    }
}

/// The host names (`a2a.example.com`, or `host:port` for one port only) a server answers to
/// besides loopback names and its public URL's host, lower-cased; each a plain DNS name or an
/// IP address.
pub fn parse_allowed_hosts(list: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let lower = item.to_ascii_lowercase();
        let (host, port) = split_port(&lower);
        let name_ok = !host.is_empty()
            && (host.parse::<IpAddr>().is_ok()
                || host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<std::net::Ipv6Addr>()
                    .is_ok()
                || host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.'));
        let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok());
        if !name_ok || !port_ok {
            return Err(format!(
                "{item:?} is not a host name, or host:port, such as a2a.example.com"
            ));
        }
        out.push(lower);
    }
    Ok(out)
}

/// `host:port` → (`host`, `port`); `[::1]:8080` → (`[::1]`, `8080`); no port: `None`.
fn split_port(authority: &str) -> (&str, Option<&str>) {
    match authority.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() && (!h.contains(':') || h.ends_with(']')) => (h, Some(p)),
        _ => (authority, None),
    }
}

/// Whether `host` (a `Host` header's value) names this machine's loopback interface.
fn is_loopback(host: &str) -> bool {
    let (name, _) = split_port(host);
    let name = name.trim_end_matches('.');
    name == "localhost"
        || name.ends_with(".localhost")
        || name == "[::1]"
        || name
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Whether `host` is the public URL's host or on the allowed list (an entry without a port
/// allows every port), or arrived through a gateway (which routes only its own domains here).
fn is_configured(settings: &HttpSettings, host: &str) -> bool {
    if settings.proxies == Proxies::Gateway {
        return true;
    }
    let host = host.to_ascii_lowercase();
    let (name, _) = split_port(&host);
    let public = settings
        .public_url
        .as_deref()
        .and_then(|u| url::Url::parse(u).ok())
        .and_then(|u| u.host_str().map(|h| h.to_ascii_lowercase()));
    let bracketed = |h: &str| {
        if h.contains(':') && !h.starts_with('[') {
            format!("[{h}]")
        } else {
            h.to_string()
        }
    };
    public.is_some_and(|p| bracketed(&p) == name)
        || settings
            .allowed_hosts
            .iter()
            .any(|a| *a == host || (split_port(a).1.is_none() && a == name))
}

/// Whether the base URL `url` (`scheme://host[:port]…`) is configured: the public URL's host,
/// or an allowed one.
pub fn is_configured_url(settings: &HttpSettings, url: &str) -> bool {
    url::Url::parse(url).is_ok_and(|u| {
        let host = match (u.host_str(), u.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            _ => return false,
        };
        is_configured(settings, &host)
    })
}

/// The base URL a request is answered from, and whether it is configured rather than taken
/// from what the request says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Base {
    /// `scheme://host[:port][/prefix]`, no trailing slash.
    pub url: String,
    /// The public URL, or a host on the allowed list: the card may be signed for it.
    pub configured: bool,
    /// Taken from the request's headers (responses naming it vary with them).
    pub from_request: bool,
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// The scheme and host a request reached the server at (`http`, `Host`, or a trusted proxy's
/// forwarded values).
fn seen_at(
    settings: &HttpSettings,
    headers: &HeaderMap,
    extensions: &Extensions,
) -> (String, String) {
    let (proto, host) = settings.proxies.trusts(extensions);
    let forwarded = |trusted: bool, name| trusted.then(|| header(headers, name)).flatten();
    let scheme = forwarded(proto, "x-forwarded-proto")
        .and_then(|p| p.split(',').next())
        .map(str::trim)
        .filter(|p| matches!(*p, "http" | "https"))
        .unwrap_or("http")
        .to_string();
    let host = forwarded(host, "x-forwarded-host")
        .and_then(|h| h.split(',').next())
        .map(str::trim)
        .or_else(|| header(headers, HOST.as_str()))
        .unwrap_or("127.0.0.1")
        .to_string();
    (scheme, host)
}

/// The base URL of a request with `headers` (and connection `extensions`).
pub fn base(settings: &HttpSettings, headers: &HeaderMap, extensions: &Extensions) -> Base {
    if let Some(u) = &settings.public_url {
        return Base {
            url: u.trim_end_matches('/').to_string(),
            configured: true,
            from_request: false,
        };
    }
    let (scheme, host) = seen_at(settings, headers, extensions);
    let prefix = settings
        .path_prefix
        .as_deref()
        .map(|p| p.trim_matches('/'))
        .filter(|p| !p.is_empty())
        .map(|p| format!("/{p}"))
        .unwrap_or_default();
    let configured = is_configured(settings, &host);
    Base {
        url: format!("{scheme}://{host}{prefix}"),
        configured,
        from_request: true,
    }
}

/// Whether a request comes from the server's own pages (or from no browser page at all): its
/// `Origin`, when sent, is the origin the request reached; `Sec-Fetch-Site`, when sent, is
/// `same-origin` or `none`.
pub fn same_origin(settings: &HttpSettings, parts: &Parts) -> Result<(), String> {
    if let Some(site) = header(&parts.headers, "sec-fetch-site") {
        if !matches!(site, "same-origin" | "none") {
            return Err(format!("a {site} request (Sec-Fetch-Site)"));
        }
    }
    let Some(origin) = header(&parts.headers, ORIGIN.as_str()) else {
        return Ok(());
    };
    let (scheme, host) = seen_at(settings, &parts.headers, &parts.extensions);
    let own = format!("{scheme}://{host}").to_ascii_lowercase();
    let public = settings
        .public_url
        .as_deref()
        .and_then(|u| url::Url::parse(u).ok())
        .map(|u| u.origin().ascii_serialization());
    let origin_lower = origin.to_ascii_lowercase();
    if origin_lower == own || public.is_some_and(|p| p == origin_lower) {
        Ok(())
    } else {
        Err(format!("a request from another origin ({origin})"))
    }
}

/// The checks of a server that takes no credentials, before anything else reads the request.
pub(super) async fn guard(state: Arc<AppState>, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    let public_document =
        parts.method == axum::http::Method::GET && parts.uri.path().contains("/.well-known/");
    if !public_document {
        if let Err(why) = check(&state.settings, &parts) {
            let e = AppError::protocol(ErrorKind::Forbidden, why);
            return super::common::refusal(&parts, &e, state.settings.error_table);
        }
    }
    next.run(Request::from_parts(parts, body)).await
}

fn check(settings: &HttpSettings, parts: &Parts) -> Result<(), String> {
    let (_, host) = seen_at(settings, &parts.headers, &parts.extensions);
    if !is_loopback(&host) && !is_configured(settings, &host) {
        return Err(format!(
            "this server takes no credentials and answers only to its own host names; {host:?} \
             is not one (name it with --allowed-hosts or --public-url, or configure tokens)"
        ));
    }
    same_origin(settings, parts).map_err(|why| {
        format!("{why} is refused: this server takes no credentials, so only its own pages and non-browser clients may call it")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_are_recognised_with_any_port() {
        for h in [
            "localhost",
            "localhost:8080",
            "app.localhost:1",
            "127.0.0.1:80",
            "127.9.9.9",
            "[::1]:8080",
            "[::1]",
        ] {
            assert!(is_loopback(h), "{h}");
        }
        for h in [
            "evil.example",
            "localhost.evil.example",
            "10.0.0.1:8080",
            "[::2]:80",
            "0.0.0.0:8080",
            "127.0.0.1.evil.example",
        ] {
            assert!(!is_loopback(h), "{h}");
        }
    }

    #[test]
    fn allowed_hosts_are_names_or_addresses_with_an_optional_port() {
        assert_eq!(
            parse_allowed_hosts("A2A.example.com, 10.0.0.5:8080,[::1]:9").unwrap(),
            ["a2a.example.com", "10.0.0.5:8080", "[::1]:9"]
        );
        for bad in ["http://x", "x/y", "host:port", "a b", "x:99999"] {
            assert!(parse_allowed_hosts(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn proxies_are_networks() {
        assert_eq!(Proxies::parse("").unwrap(), Proxies::None);
        assert!(
            matches!(Proxies::parse("10.0.0.0/8, 127.0.0.1").unwrap(), Proxies::From(n) if n.len() == 2)
        );
        assert!(Proxies::parse("proxy.local").is_err());
    }
}
