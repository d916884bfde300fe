//! The admin API's connections: an accept loop that serves at most `--admin-connections-max` at once — one
//! more is answered 503 and closed at once, never queued — over HTTP/1.1, closing a connection that sends no
//! whole request head within `--admin-idle-timeout-s` of opening or of its previous answer (idle keep-alive
//! connections, clients that send slowly). On shutdown it stops accepting, lets the requests in progress
//! finish, closes idle connections, and returns once every connection has ended.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

/// Pause after a failed accept (out of file descriptors, say) before the next.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// The admin API's connection bounds.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Connections served at once.
    pub connections_max: usize,
    /// Longest wait for a whole request head.
    pub idle_timeout: Duration,
}

/// Serves `app` on `listener` until `stop` changes; returns once every connection has ended.
pub async fn serve(listener: TcpListener, app: Router, limits: ConnectionLimits, mut stop: watch::Receiver<bool>) {
    let permits = Arc::new(Semaphore::new(limits.connections_max));
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!("admin accept failed: {e}");
                    tokio::time::sleep(ACCEPT_RETRY).await;
                    continue;
                }
            },
            _ = stop.changed() => break,
        };
        match permits.clone().try_acquire_owned() {
            Ok(permit) => {
                tokio::spawn(serve_connection(stream, app.clone(), limits.idle_timeout, stop.clone(), permit));
            }
            Err(_) => refuse(&stream, limits.connections_max),
        }
    }
    drop(listener);
    // Each connection gives its permit back when it ends: all of them back means every connection has ended.
    let all = u32::try_from(limits.connections_max).expect("--admin-connections-max is checked at start-up");
    let _ = permits.acquire_many(all).await;
}

/// One connection, until the client closes it, it idles past the timeout, or shutdown has let its request in
/// progress finish. `_permit` is its place under the cap.
async fn serve_connection(
    stream: TcpStream,
    app: Router,
    idle_timeout: Duration,
    mut stop: watch::Receiver<bool>,
    _permit: OwnedSemaphorePermit,
) {
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(idle_timeout);
    let connection = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app));
    let mut connection = std::pin::pin!(connection);
    let mut stopping = false;
    loop {
        tokio::select! {
            ended = connection.as_mut() => {
                if let Err(e) = ended {
                    tracing::debug!("admin connection ended: {e}");
                }
                return;
            }
            _ = stop.changed(), if !stopping => {
                stopping = true;
                connection.as_mut().graceful_shutdown();
            }
        }
    }
}

/// A connection past the cap: a 503 if the socket takes it without waiting (a new socket's send buffer is
/// empty), then closed at once.
fn refuse(stream: &TcpStream, max: usize) {
    let body = serde_json::json!({"error": {
        "code": "too_many_connections",
        "message": format!("this node serves at most {max} admin connections at once (--admin-connections-max)"),
    }})
    .to_string();
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.try_write(answer.as_bytes());
    tracing::debug!(max, "refused an admin connection past the cap");
}
