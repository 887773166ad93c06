//! A task stream as Server-Sent Events: one event per `StreamResponse`, its position as the
//! SSE `id:` (what `Last-Event-ID` resumes after), and a comment every keep-alive interval so
//! proxies and clients keep an idle stream open. On Lambda, `bound_streams` also ends every
//! stream between two events before the invocation's deadline and before the response outgrows
//! what Lambda returns: the client resumes after the last `id:` it received.

use std::convert::Infallible;
use std::time::{Duration, SystemTime};

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::header::CONTENT_TYPE;
use axum::middleware::Next;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures_util::{Stream, StreamExt};
use tokio::time::Instant;

use crate::service::streams::{StreamEvent, TaskStream};

/// `HttpSettings::stream_keep_alive` unless configured.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

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

/// A stream of one event (`data`), then closed: how a streaming method of A2A 0.3 answers an
/// error (its clients read the error from the stream).
pub fn one_event(data: String) -> Response {
    let events =
        futures_util::stream::once(async move { Ok::<_, Infallible>(Event::default().data(data)) });
    Sse::new(events).into_response()
}

/// Bounds on a stream's response besides `ServiceSettings::stream_max` (a Lambda's: ADR 016).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamBounds {
    /// End the stream this long before the invocation's deadline (the Lambda context's), so it
    /// ends cleanly rather than being cut by the timeout.
    pub deadline_margin: Duration,
    /// End it before the event that would take the response past this many bytes (at least one
    /// event is always sent). `None`: no limit.
    pub max_bytes: Option<usize>,
}

/// The router with `bounds` on every SSE response.
pub fn bound_streams(router: Router, bounds: StreamBounds) -> Router {
    router.layer(axum::middleware::from_fn(
        move |req: Request, next: Next| bounded(bounds, req, next),
    ))
}

async fn bounded(bounds: StreamBounds, req: Request, next: Next) -> Response {
    let deadline = req
        .extensions()
        .get::<lambda_http::Context>()
        .and_then(|c| stream_deadline(c.deadline(), SystemTime::now(), bounds.deadline_margin));
    let response = next.run(req).await;
    let is_sse = response
        .headers()
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !is_sse {
        return response;
    }
    let (parts, body) = response.into_parts();
    let frames = cut(body.into_data_stream(), deadline, bounds.max_bytes);
    Response::from_parts(parts, Body::from_stream(frames))
}

/// When a stream of an invocation due at `deadline` ends: `margin` before it. A deadline that
/// has passed already is not a live invocation's (an emulator's placeholder): no bound.
fn stream_deadline(deadline: SystemTime, now: SystemTime, margin: Duration) -> Option<Instant> {
    let left = deadline.duration_since(now).ok()?;
    Some(Instant::now() + left.saturating_sub(margin))
}

/// The body's frames (one SSE event or keep-alive comment each, as axum writes them) until
/// `deadline` or until the next would take it past `max_bytes`.
fn cut<S>(
    frames: S,
    deadline: Option<Instant>,
    max_bytes: Option<usize>,
) -> impl Stream<Item = Result<Bytes, axum::Error>> + Send
where
    S: Stream<Item = Result<Bytes, axum::Error>> + Send + Unpin,
{
    futures_util::stream::unfold((frames, 0usize), move |(mut frames, sent)| async move {
        let next = match deadline {
            None => frames.next().await,
            Some(at) => match tokio::time::timeout_at(at, frames.next()).await {
                Ok(next) => next,
                Err(_) => {
                    tracing::debug!(
                        sent,
                        "stream ended before the invocation's deadline: resumable"
                    );
                    return None;
                }
            },
        }?;
        let len = next.as_ref().map_or(0, Bytes::len);
        if max_bytes.is_some_and(|max| sent > 0 && sent + len > max) {
            tracing::debug!(sent, "stream ended at its response size bound: resumable");
            return None;
        }
        Some((next, (frames, sent + len)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(sizes: &[usize]) -> impl Stream<Item = Result<Bytes, axum::Error>> + Send + Unpin {
        let items: Vec<_> = sizes
            .iter()
            .map(|n| Ok(Bytes::from(vec![b'x'; *n])))
            .collect();
        futures_util::stream::iter(items)
    }

    async fn lengths(s: impl Stream<Item = Result<Bytes, axum::Error>>) -> Vec<usize> {
        s.map(|f| f.unwrap().len()).collect().await
    }

    #[tokio::test]
    async fn a_stream_ends_before_the_event_that_would_outgrow_the_bound() {
        assert_eq!(
            lengths(cut(frames(&[4, 4, 4]), None, Some(8))).await,
            [4, 4]
        );
        assert_eq!(
            lengths(cut(frames(&[4, 4, 4]), None, None)).await,
            [4, 4, 4]
        );
        // The first event always goes out, however large.
        assert_eq!(lengths(cut(frames(&[20, 1]), None, Some(8))).await, [20]);
    }

    #[tokio::test]
    async fn a_stream_ends_at_its_deadline_between_events() {
        // Two events, then one that never comes: the deadline ends the stream after the two.
        let two = futures_util::stream::iter(["id: 0\n\n", "id: 1\n\n"])
            .map(|e| Ok(Bytes::from_static(e.as_bytes())))
            .chain(futures_util::stream::pending());
        let started = Instant::now();
        let at = started + Duration::from_millis(200);
        let got: Vec<_> = cut(Box::pin(two), Some(at), None)
            .map(|f| f.unwrap())
            .collect()
            .await;
        assert_eq!(got, ["id: 0\n\n", "id: 1\n\n"]);
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[tokio::test]
    async fn a_lambda_stream_ends_before_its_invocations_deadline() {
        use lambda_http::RequestExt;
        use tower::ServiceExt;
        let app = Router::new().route(
            "/sse",
            axum::routing::get(|| async {
                let one = Event::default().id("1").data("x");
                let events = futures_util::stream::iter([Ok::<_, Infallible>(one)])
                    .chain(futures_util::stream::pending());
                Sse::new(events)
            }),
        );
        let bounds = StreamBounds {
            deadline_margin: Duration::from_secs(3),
            max_bytes: None,
        };
        let app = bound_streams(app, bounds);
        // The invocation is due in 3.3 s: the stream ends 3 s before, after its one event.
        let mut context = lambda_http::Context::default();
        let due = SystemTime::now() + Duration::from_millis(3300);
        context.deadline = due
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let req = axum::http::Request::get("/sse")
            .body(Body::empty())
            .unwrap()
            .with_lambda_context(context);
        let started = Instant::now();
        let resp = app.oneshot(req).await.unwrap();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        assert_eq!(&bytes[..], b"id: 1\ndata: x\n\n");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn the_deadline_is_the_invocations_less_the_margin_and_a_past_one_is_none() {
        let now = SystemTime::now();
        let margin = Duration::from_secs(3);
        let at = stream_deadline(now + Duration::from_secs(10), now, margin).unwrap();
        let left = at - Instant::now();
        assert!(
            left <= Duration::from_secs(7) && left > Duration::from_secs(6),
            "{left:?}"
        );
        let soon = stream_deadline(now + Duration::from_secs(1), now, margin).unwrap();
        assert!(soon <= Instant::now());
        // cargo lambda's emulator sends a fixed 600000 ms (1970): not a deadline.
        let placeholder = SystemTime::UNIX_EPOCH + Duration::from_millis(600_000);
        assert_eq!(stream_deadline(placeholder, now, margin), None);
    }

    #[tokio::test]
    async fn only_event_streams_are_bounded() {
        use tower::ServiceExt;
        let app = Router::new()
            .route(
                "/sse",
                axum::routing::get(|| async {
                    let events = futures_util::stream::iter((0..3).map(|i| {
                        Ok::<_, Infallible>(Event::default().id(i.to_string()).data("x"))
                    }));
                    Sse::new(events)
                }),
            )
            .route("/json", axum::routing::get(|| async { "y".repeat(100) }));
        let bounds = StreamBounds {
            deadline_margin: Duration::from_secs(1),
            max_bytes: Some(20),
        };
        let app = bound_streams(app, bounds);
        let body = |uri: &'static str| {
            let app = app.clone();
            async move {
                let req = axum::http::Request::get(uri).body(Body::empty()).unwrap();
                let resp = app.oneshot(req).await.unwrap();
                let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
                    .await
                    .unwrap();
                String::from_utf8(bytes.to_vec()).unwrap()
            }
        };
        assert_eq!(body("/sse").await, "id: 0\ndata: x\n\n");
        assert_eq!(body("/json").await.len(), 100);
    }
}
