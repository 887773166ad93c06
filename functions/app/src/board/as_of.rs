//! A task page's timeline slider: "as of" any event of the task's log, the page drawn again
//! from the log folded up to it (`Service::task_at_event`), read-only; "now" goes back to the
//! live page. A plain GET form (`?at=<seq>`): the script submits it as the slider moves, and
//! without the script its button does.

use maud::{html, Markup};

/// Where the page stands: the event it shows the task after, and the task's last event.
#[derive(Debug, Clone, Copy)]
pub(super) struct AsOf {
    pub at: u64,
    pub last: u64,
}

/// The slider over events 1 to `last`, at `at` (the last when the page is live), and, on a
/// past page, what it shows and the way back.
pub(super) fn slider(task_id: &str, at: Option<u64>, last: u64, generation: Option<u64>) -> Markup {
    let path = format!(
        "/board/tasks/{}",
        percent_encoding::utf8_percent_encode(task_id, percent_encoding::NON_ALPHANUMERIC)
    );
    let value = at.unwrap_or(last);
    html! {
        form.as-of method="get" action=(path) aria-label="As of an event" {
            label {
                "As of event "
                input type="range" name="at" min="1" max=(last) value=(value) data-as-of-slider;
                " " output { "#" (value) " of " (last) }
            }
            " "
            button type="submit" { "Show" }
            @if at.is_some() {
                " "
                a.now href=(path) { "Now" }
                p.past role="status" {
                    "This is the task as it was after event #" (value)
                    @if let Some(g) = generation { " (generation " (g) ")" }
                    "; nothing can be done from a past state."
                }
            }
        }
    }
}
