//! A task stream as Server-Sent Events: one event per `StreamResponse`, its position as the
//! SSE `id:` (what `Last-Event-ID` resumes after), and a comment every keep-alive interval so
//! proxies and clients keep an idle stream open.

use std::convert::Infallible;
use std::time::Duration;

use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;

use crate::service::streams::{StreamEvent, TaskStream, LAST_EVENT_ID};

/// `HttpSettings::stream_keep_alive` unless configured.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The `Last-Event-ID` header, as sent (it is checked against the task when the stream opens).
pub fn last_event_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get(LAST_EVENT_ID)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// The stream as an SSE response whose `data:` lines are `wrap(event)`.
pub fn respond<F>(stream: TaskStream, keep_alive: Duration, wrap: F) -> Response
where
    F: Fn(&StreamEvent) -> String + Send + 'static,
{
    let events = stream.map(move |event| {
        let sse = Event::default().data(wrap(&event));
        Ok::<_, Infallible>(match event.id {
            Some(id) => sse.id(id.to_string()),
            None => sse,
        })
    });
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(keep_alive).text("keep-alive"))
        .into_response();
    // Proxies (nginx, API Gateway) pass each event on as it is written.
    response.headers_mut().insert(
        "x-accel-buffering",
        axum::http::HeaderValue::from_static("no"),
    );
    response
}
