//! The one rule for every URL the board turns into something a browser follows or fetches: a
//! message's file part, an artifact's, an A2UI surface's Image, Video or AudioPlayer.
//!
//! - A **link** (`<a href>`) is drawn only for an absolute `http:` or `https:` URL; anything
//!   else (`javascript:`, `data:`, `vbscript:`, a relative or protocol-relative path) is shown
//!   as text.
//! - An **image** (`<img src>`, fetched by every viewer's browser without a click) is drawn only
//!   from the board's own origin (a path such as `/board/…`), from a `data:` URL of a raster
//!   image type, or from an origin the operator allowed (`--board-image-origins`); any other
//!   http(s) image is offered as a link, anything else as text. The page's
//!   Content-Security-Policy (`security.rs`) says the same, so a mistake here is still refused
//!   by the browser.

/// Image media types a `data:` image may have (no SVG: a picture, not a document).
pub const DATA_IMAGE_TYPES: [&str; 5] = [
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "image/avif",
];
/// Longest URL the board draws as a link or image (longer ones are shown as text; a `data:`
/// image is bounded by the A2UI budget and the part limits).
pub const MAX_LINK_BYTES: usize = 8 * 1024;

/// The href to draw for `raw`, if it may be a link: an absolute http(s) URL, normalised.
pub fn link(raw: &str) -> Option<String> {
    let raw = raw.trim();
    if raw.len() > MAX_LINK_BYTES {
        return None;
    }
    let url = url::Url::parse(raw).ok()?;
    matches!(url.scheme(), "http" | "https")
        .then(|| url.host_str().is_some_and(|h| !h.is_empty()))
        .filter(|ok| *ok)
        .map(|_| url.to_string())
}

/// How an image URL is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Image {
    /// Drawn: `<img src>`.
    Shown(String),
    /// Not fetched on its own: offered as a link to open.
    Link(String),
    /// Neither: shown as text.
    Text,
}

/// The origins (`https://cdn.example.com`, scheme, host and port as a browser writes them)
/// images may come from besides the board's own; parsed once from the operator's list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageOrigins(Vec<String>);

impl ImageOrigins {
    /// A comma-separated list of http(s) origins (no path, query or fragment).
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut out = Vec::new();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let url = url::Url::parse(item).map_err(|_| {
                format!("{item:?} is not an origin such as https://cdn.example.com")
            })?;
            if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
                return Err(format!(
                    "{item:?}: an image origin is http(s)://host[:port]"
                ));
            }
            if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
                return Err(format!(
                    "{item:?}: an image origin has no path, query or fragment"
                ));
            }
            out.push(url.origin().ascii_serialization());
        }
        Ok(Self(out))
    }

    /// The origins as the settings hold them (`BoardSettings::image_origins`).
    pub fn from_settings(origins: &[String]) -> Self {
        Self(origins.to_vec())
    }

    pub fn origins(&self) -> &[String] {
        &self.0
    }

    fn allows(&self, url: &url::Url) -> bool {
        let origin = url.origin().ascii_serialization();
        self.0.contains(&origin)
    }
}

/// How the image at `raw` is shown, under the operator's `allowed` origins.
pub fn image(raw: &str, allowed: &ImageOrigins) -> Image {
    let raw = raw.trim();
    if let Some(data) = raw.strip_prefix("data:") {
        let media = data
            .split([';', ','])
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let base64 = data
            .split(',')
            .next()
            .is_some_and(|h| h.ends_with(";base64"));
        return if DATA_IMAGE_TYPES.contains(&media.as_str()) && base64 {
            Image::Shown(raw.to_string())
        } else {
            Image::Text
        };
    }
    if raw.len() > MAX_LINK_BYTES {
        return Image::Text;
    }
    if own_path(raw) {
        return Image::Shown(raw.to_string());
    }
    let Some(href) = link(raw) else {
        return Image::Text;
    };
    match url::Url::parse(&href) {
        Ok(url) if allowed.allows(&url) => Image::Shown(href),
        _ => Image::Link(href),
    }
}

/// A path on the board's own origin: starts with one `/` (not `//`, which names another host)
/// and holds no backslash (which browsers read as `/`) or control character.
fn own_path(raw: &str) -> bool {
    raw.starts_with('/')
        && !raw.starts_with("//")
        && !raw.contains('\\')
        && !raw.chars().any(char::is_control)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_absolute_http_urls_become_links() {
        assert_eq!(
            link("https://example.com/r.pdf").as_deref(),
            Some("https://example.com/r.pdf")
        );
        assert_eq!(
            link(" http://h:8080/x?q=1 ").as_deref(),
            Some("http://h:8080/x?q=1")
        );
        for bad in [
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            " javascript:alert(1)",
            "java\tscript:alert(1)",
            "data:text/html,<script>alert(1)</script>",
            "vbscript:x",
            "file:///etc/passwd",
            "/relative",
            "//evil.example/x",
            "",
        ] {
            assert_eq!(link(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_link_at_the_length_bound_is_drawn_and_one_past_it_is_not() {
        let base = "https://example.com/";
        let at = format!("{base}{}", "a".repeat(MAX_LINK_BYTES - base.len()));
        assert_eq!(at.len(), MAX_LINK_BYTES);
        assert!(link(&at).is_some());
        assert!(link(&format!("{at}a")).is_none());
    }

    #[test]
    fn images_come_from_the_board_data_urls_or_allowed_origins() {
        let none = ImageOrigins::default();
        let cdn = ImageOrigins::parse("https://cdn.example.com, http://127.0.0.1:9000").unwrap();
        assert_eq!(
            image("/board/assets/x.png", &none),
            Image::Shown("/board/assets/x.png".into())
        );
        assert_eq!(
            image("data:image/png;base64,AA==", &none),
            Image::Shown("data:image/png;base64,AA==".into())
        );
        assert_eq!(image("data:image/svg+xml;base64,AA==", &none), Image::Text);
        assert_eq!(image("data:text/html;base64,AA==", &none), Image::Text);
        assert_eq!(image("data:image/png,AA", &none), Image::Text);
        assert_eq!(
            image("https://tracker.example/p.gif", &none),
            Image::Link("https://tracker.example/p.gif".into())
        );
        assert_eq!(
            image("https://cdn.example.com/p.gif", &cdn),
            Image::Shown("https://cdn.example.com/p.gif".into())
        );
        assert_eq!(
            image("http://127.0.0.1:9000/p.gif", &cdn),
            Image::Shown("http://127.0.0.1:9000/p.gif".into())
        );
        assert_eq!(
            image("http://127.0.0.1:9001/p.gif", &cdn),
            Image::Link("http://127.0.0.1:9001/p.gif".into())
        );
        for bad in [
            "javascript:alert(1)",
            "//evil.example/p.gif",
            "/\\evil.example/p.gif",
        ] {
            assert_eq!(image(bad, &cdn), Image::Text, "{bad:?}");
        }
    }

    #[test]
    fn image_origins_are_parsed_strictly() {
        assert_eq!(
            ImageOrigins::parse("https://CDN.example.com:443")
                .unwrap()
                .origins(),
            ["https://cdn.example.com"]
        );
        assert!(ImageOrigins::parse("").unwrap().origins().is_empty());
        for bad in [
            "cdn.example.com",
            "ftp://x",
            "https://x/path",
            "https://x/?q",
            "javascript:x",
        ] {
            assert!(ImageOrigins::parse(bad).is_err(), "{bad:?}");
        }
    }
}
