//! The frame every board page shares: the document, the stylesheet (inline) and the script
//! (served by the server itself, no CDN), a header with who is signed in.

use maud::{html, Markup, PreEscaped, DOCTYPE};
use taskledger_domain::ids::Principal;

/// A whole page: `title`, the principal it is for (none: not signed in), and its content.
pub(super) fn page(title: &str, who: Option<&Principal>, content: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · taskledger" }
                // Inline (4 KiB): the first paint waits for no second request.
                style { (PreEscaped(super::STYLE)) }
                script src="/board/assets/board.js" defer {}
            }
            body {
                header.top {
                    a.brand href="/" { "taskledger" }
                    @if let Some(p) = who {
                        span.who data-principal=(p.to_string()) { "Signed in as " strong { (p.to_string()) } }
                        form.inline method="post" action="/board/logout" {
                            button type="submit" data-action="logout" { "Sign out" }
                        }
                    }
                }
                main { (content) }
            }
        }
    }
}

/// A task state's short name (`TASK_STATE_INPUT_REQUIRED` → `input-required`), for labels and
/// the colours the stylesheet gives them.
pub(super) fn state_label(state: &str) -> String {
    state
        .trim_start_matches("TASK_STATE_")
        .to_ascii_lowercase()
        .replace('_', "-")
}
