//! The HTTP/1.1 connection loop: hyper's own, since `axum::serve` does not expose its header
//! read timeout or header size bound (ADR 020).

use std::future::Future;
use std::time::Duration;

use tokio::net::TcpListener;

/// The most a request's line and headers may take, in bytes: past it the answer is 431 (API
/// Gateway allows 10 KiB; a JWT of `MAX_TOKEN_BYTES` fits well within).
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// How long a request's headers may take to arrive before the connection is closed.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves HTTP/1.1 on `listener` until `shutdown` resolves (then lets open requests finish).
/// Each connection gets `TCP_NODELAY` — a stream writes each event as it happens, and without it
/// the kernel holds an event back until the client acknowledges the previous one (a delayed
/// ACK: ~40 ms a burst) — and must send a request's headers within `header_read_timeout`, so a
/// client that trickles headers cannot hold a connection (hyper closes it).
pub(crate) async fn serve_http(
    listener: TcpListener,
    app: axum::Router,
    header_read_timeout: Duration,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout)
        .max_header_size(MAX_HEADER_BYTES);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait, then accept again.
                    tracing::debug!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        // Each request knows the connection's peer (a trusted proxy's forwarded headers are
        // believed by its address: `guard::Proxies`).
        let app = tower::ServiceExt::map_request(
            app.clone(),
            move |mut req: axum::http::Request<hyper::body::Incoming>| {
                req.extensions_mut()
                    .insert(axum::extract::ConnectInfo(peer));
                req
            },
        );
        let conn = http.serve_connection(TokioIo::new(tcp), TowerToHyperService::new(app));
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended");
            }
        });
    }
    graceful.shutdown().await;
    Ok(())
}
