//! A task's work on its page: the agent turns its events record and how each ended, and — to
//! the owner, on the embedded store — the webhook deliveries its outbox still holds: waiting
//! for a retry (attempts so far, the last failure) or dead-lettered with the reason. A
//! delivery that went through leaves the outbox, so the list is what still needs attention.

use maud::{html, Markup};
use taskledger_domain::ports::OutboxRecord;
use taskledger_domain::projection::tool_calls::{tool_calls, CallEnd};
use taskledger_domain::projection::work::{turns, TurnEnd};
use taskledger_domain::task::stored::StoredEvent;
use taskledger_domain::time::Timestamp;

fn when(t: Timestamp) -> Markup {
    html! { time datetime=(t.to_rfc3339_millis()) { (t.to_rfc3339_millis()) } }
}

fn outcome(end: &TurnEnd) -> (&'static str, String) {
    match end {
        TurnEnd::Open => ("open", "queued or running".into()),
        TurnEnd::Finished => ("finished", "finished".into()),
        TurnEnd::Folded { into } => ("folded", format!("taken on by the turn of #{into}")),
        TurnEnd::GivenUp => ("given-up", "given up: the task failed".into()),
        TurnEnd::Ended(state) => (
            "ended",
            format!(
                "ended the task ({})",
                super::layout::state_label(state.as_str())
            ),
        ),
    }
}

fn call_outcome(end: &CallEnd) -> (&'static str, String) {
    match end {
        CallEnd::Pending => (
            "pending",
            "no result yet (running, or waiting for approval)".into(),
        ),
        CallEnd::Ok => ("ok", "answered".into()),
        CallEnd::Error(e) => ("error", format!("error: {e}")),
    }
}

/// The section: turns from `events` (the page's window of the log), deliveries when given.
pub(super) fn section(events: &[StoredEvent], deliveries: Option<&[OutboxRecord]>) -> Markup {
    let decoded: Vec<_> = events
        .iter()
        .filter_map(|e| e.decode().ok().map(|d| (e.seq, d, e.recorded_at)))
        .collect();
    let turns = turns(&decoded);
    let calls = tool_calls(&decoded);
    html! {
        section.work {
            h2 { "Agent turns" }
            @if turns.is_empty() {
                p { "No agent turn yet." }
            } @else {
                table.turns {
                    thead { tr { th { "work request" } th { "asked" } th { "why" } th { "outcome" } th { "ended" } } }
                    tbody {
                        @for t in turns.iter().rev() {
                            @let (key, text) = outcome(&t.end);
                            tr data-turn=(t.work_seq) data-outcome=(key) {
                                td { "#" (t.work_seq) }
                                td { (when(t.requested_at)) }
                                td { (t.reason) }
                                td { (text) }
                                td { @if let Some(at) = t.ended_at { (when(at)) } }
                            }
                        }
                    }
                }
            }
            @if !calls.is_empty() {
                h2 { "Tool calls" }
                table.tool-calls {
                    thead { tr { th { "event" } th { "called" } th { "tool" } th { "MCP server" } th { "outcome" } } }
                    tbody {
                        @for c in calls.iter().rev() {
                            @let (key, text) = call_outcome(&c.end);
                            tr data-call=(c.name) data-outcome=(key) {
                                td { "#" (c.seq) }
                                td { (when(c.at)) }
                                td { code { (c.name) } }
                                td { @if let Some(s) = &c.server { (s) } @else { "built in" } }
                                td { (text) }
                            }
                        }
                    }
                }
            }
            @if let Some(list) = deliveries {
                h2 { "Webhook deliveries" }
                @if list.is_empty() {
                    p { "None waiting: every update so far has been delivered (a delivery leaves the outbox once it is through)." }
                } @else {
                    table.deliveries {
                        thead { tr { th { "update" } th { "webhook" } th { "attempts" } th { "state" } th { "last failure" } } }
                        tbody {
                            @for d in list {
                                tr data-delivery=(d.delivery.delivery_id()) data-state=(if d.dead { "dead-lettered" } else { "retrying" }) {
                                    td { "#" (d.delivery.seq) }
                                    td { code { (d.delivery.config.id) } }
                                    td { (d.attempts) }
                                    td {
                                        @if d.dead { "dead-lettered" }
                                        @else if d.attempts == 0 { "queued" }
                                        @else { "retrying at " (when(Timestamp::from_unix_nanos(d.due_ms.saturating_mul(1_000_000)))) }
                                    }
                                    td { (d.reason) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
