//! The events API's wire types (taskledger's extension `urn:taskledger:ext:events:v1`, proto
//! `taskledger.events.v1`): a page of a task's log and the request for one, in ProtoJSON as
//! the A2A types are (camelCase out, both cases in, int64 as decimal strings, unset fields
//! left out).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `taskledger.events.v1.ListTaskEventsRequest`: the events of task `id` after event `after`
/// (or where `pageToken`, a continuation cursor of this task, says), at most `limit` (0 or
/// unset: the default page).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskEventsRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub id: String,
    #[serde(
        default,
        with = "super::proto::int64",
        skip_serializing_if = "Option::is_none"
    )]
    pub after: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i32>,
    #[serde(alias = "page_token", default, skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
}

/// `taskledger.events.v1.ListTaskEventsResponse`: the events in order, and the cursor that
/// reads on after the last one scanned (also when the page is the end of the log: polled
/// later, it reads what came since).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskEventsResponse {
    #[serde(default)]
    pub events: Vec<TaskEventRecord>,
    #[serde(alias = "next_page_token", default)]
    pub next_page_token: String,
    /// Whether the log holds events past this page.
    #[serde(
        alias = "has_more",
        default,
        skip_serializing_if = "super::proto::is_false"
    )]
    pub has_more: bool,
}

/// `taskledger.events.v1.TaskEvent`: one event as a reader sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskEventRecord {
    /// Its sequence number in the task's log (1 is the creation).
    #[serde(with = "super::proto::int64_required")]
    pub seq: u64,
    /// The event's type (`StatusChanged`, `MessageAppended`, …).
    #[serde(rename = "type")]
    pub event_type: String,
    /// The version of its payload's shape.
    #[serde(alias = "event_version")]
    pub event_version: String,
    /// The task's generation after it (draft A2A 1.1).
    #[serde(with = "super::proto::int64_required")]
    pub generation: u64,
    /// When it was recorded (RFC 3339, nanoseconds).
    #[serde(alias = "recorded_time")]
    pub recorded_time: String,
    /// The payload as the export format writes it (externally tagged), less what the reader
    /// may not see.
    pub payload: Value,
}
