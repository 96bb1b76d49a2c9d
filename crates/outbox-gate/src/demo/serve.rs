//! The demo server's accept loop: HTTP/1.1 with a header read timeout (a connection that
//! sends no complete request head in time is closed, idle keep-alive ones too) and a body
//! deadline (a request whose body does not arrive in time is answered `408`, nothing
//! applied). `axum::serve` sets neither: 1,000 half-open connections were still held after
//! 40 s, and with 256 file descriptors, legitimate clients were locked out.

use crate::answer::error;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use axum::Router;
use http_body::{Frame, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpListener;

/// How long the server waits for what a client sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// From the moment the server waits for a request (a new connection, or the next
    /// request on a kept-alive one) to the end of its head: the connection is closed
    /// after it. Default 10 s.
    pub header: Duration,
    /// From the end of the head to the end of the body: `408 REQUEST_TIMEOUT` after it,
    /// the connection closed and nothing applied. Default 20 s (the demo's bodies are at
    /// most 64 KiB).
    pub body: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts { header: Duration::from_secs(10), body: Duration::from_secs(20) }
    }
}

/// How many header lines hyper parses; more are answered `431` by hyper itself (with an
/// empty body). The demo refuses more than [`super::edge::MAX_HEADERS`] with a JSON `431`
/// first, so that a client sees the coded answer in every case but an absurd one.
const PARSED_HEADERS: usize = 2 * super::edge::MAX_HEADERS;

/// Serves `app` on `listener` until `shutdown` resolves, then lets the open connections
/// finish their requests (at most 10 s).
///
/// # Errors
/// None yet: accept failures (out of file descriptors) are logged and waited out.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    timeouts: Timeouts,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let app = app.layer(axum::middleware::from_fn_with_state(timeouts.body, body_deadline));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(timeouts.header).max_headers(PARSED_HEADERS);
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // EMFILE and the like: wait for connections to close instead of spinning.
                    eprintln!("outbox-gate: accept: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let connection = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let mut stopping = stopping.clone();
        connections.spawn(async move {
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                _ = stopping.changed() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
        while connections.try_join_next().is_some() {}
    }
    let _ = stop.send(true);
    let _ =
        tokio::time::timeout(Duration::from_secs(10), async { while connections.join_next().await.is_some() {} }).await;
    Ok(())
}

/// Gives the body [`Timeouts::body`] to arrive; a request whose body did not is answered
/// `408` (whatever the handler made of the cut body: the gate's extractor refuses it before
/// anything is reserved) and its connection closed.
async fn body_deadline(State(limit): State<Duration>, req: Request, next: Next) -> Response {
    let timed_out = Arc::new(AtomicBool::new(false));
    let (parts, body) = req.into_parts();
    let body = Deadline { inner: body, sleep: Box::pin(tokio::time::sleep(limit)), timed_out: timed_out.clone() };
    let response = next.run(Request::from_parts(parts, Body::new(body))).await;
    if !timed_out.load(Ordering::SeqCst) {
        return response;
    }
    let mut late =
        error(StatusCode::REQUEST_TIMEOUT, "REQUEST_TIMEOUT", "the body did not arrive in time; nothing was applied");
    late.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    late
}

/// A body that fails once its deadline passes before its end.
struct Deadline {
    inner: Body,
    sleep: Pin<Box<tokio::time::Sleep>>,
    timed_out: Arc<AtomicBool>,
}

impl http_body::Body for Deadline {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame);
        }
        if this.sleep.as_mut().poll(cx).is_ready() {
            this.timed_out.store(true, Ordering::SeqCst);
            return Poll::Ready(Some(Err(axum::Error::new("the request body did not arrive in time"))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
