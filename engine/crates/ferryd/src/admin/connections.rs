//! The admin API's connections: an accept loop that serves at most `--admin-connections-max` authenticated
//! connections at once, and beside them at most `UNAUTHENTICATED_MAX` (or the cap, when lower) that have not made
//! an authenticated request yet — one more of those is answered 503 and closed at once, never queued — over
//! HTTP/1.1. A connection leaves the unauthenticated slots with its first request that carries the node's token;
//! one that has not within `AUTHENTICATE_WITHIN` of opening is closed, as is one that sends no whole request head
//! within `--admin-idle-timeout-s` of opening or of its previous answer (idle keep-alive connections, clients that
//! send slowly). So connections that never authenticate — slow headers, scans — cannot take the places of the
//! control plane's: its kept-alive authenticated connections are counted apart and never wait behind them.
//! On shutdown it stops accepting, lets the requests in progress finish, closes idle connections, and returns once
//! every connection has ended.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Request, Response, StatusCode};
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::{service_fn, Service};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use parking_lot::Mutex;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

use super::bearer;
use crate::auth::AdminToken;

/// Pause after a failed accept (out of file descriptors, say) before the next.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);
/// Connections not authenticated yet, held at once (at most `--admin-connections-max` when that is lower).
pub const UNAUTHENTICATED_MAX: usize = 64;
/// A connection that has made no authenticated request this long after opening is closed.
pub const AUTHENTICATE_WITHIN: Duration = Duration::from_secs(10);

/// The admin API's connection bounds.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Authenticated connections served at once.
    pub connections_max: usize,
    /// Longest wait for a whole request head.
    pub idle_timeout: Duration,
}

/// The two pools of places: connections not authenticated yet, and authenticated ones.
#[derive(Clone)]
struct Places {
    unauthenticated: Arc<Semaphore>,
    authenticated: Arc<Semaphore>,
    authenticated_max: usize,
}

/// A connection's place: unauthenticated until its first request with the token exchanges it for an
/// authenticated one.
enum Place {
    Unauthenticated(#[allow(dead_code)] OwnedSemaphorePermit),
    Authenticated(#[allow(dead_code)] OwnedSemaphorePermit),
}

/// Serves `app` on `listener` until `stop` changes; returns once every connection has ended.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    token: Option<AdminToken>,
    limits: ConnectionLimits,
    mut stop: watch::Receiver<bool>,
) {
    let unauthenticated_max = UNAUTHENTICATED_MAX.min(limits.connections_max);
    let places = Places {
        unauthenticated: Arc::new(Semaphore::new(unauthenticated_max)),
        authenticated: Arc::new(Semaphore::new(limits.connections_max)),
        authenticated_max: limits.connections_max,
    };
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
        match places.unauthenticated.clone().try_acquire_owned() {
            Ok(permit) => {
                let place = Arc::new(Mutex::new(Place::Unauthenticated(permit)));
                let connection = serve_connection(
                    stream,
                    app.clone(),
                    token.clone(),
                    places.clone(),
                    place,
                    limits.idle_timeout,
                    stop.clone(),
                );
                tokio::spawn(connection);
            }
            Err(_) => refuse(&stream, unauthenticated_max),
        }
    }
    drop(listener);
    // Each connection gives its place back when it ends: all of them back means every connection has ended.
    let all = u32::try_from(limits.connections_max).expect("--admin-connections-max is checked at start-up");
    let _ = places.authenticated.acquire_many(all).await;
    let _ = places.unauthenticated.acquire_many(unauthenticated_max as u32).await;
}

/// One connection, until the client closes it, it idles past the timeout, it has not authenticated in time, or
/// shutdown has let its request in progress finish. `place` is its place under the caps.
async fn serve_connection(
    stream: TcpStream,
    app: Router,
    token: Option<AdminToken>,
    places: Places,
    place: Arc<Mutex<Place>>,
    idle_timeout: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let routed = TowerToHyperService::new(app);
    let promoted = place.clone();
    let service = service_fn(move |request: Request<Incoming>| {
        let admitted = admit(&promoted, &places, token.as_ref(), &request);
        let answer = admitted.then(|| routed.call(request));
        let max = places.authenticated_max;
        async move {
            match answer {
                Some(answer) => answer.await,
                None => Ok::<_, Infallible>(too_many_authenticated(max)),
            }
        }
    });
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(idle_timeout);
    let connection = http.serve_connection(TokioIo::new(stream), service);
    let mut connection = std::pin::pin!(connection);
    let mut stopping = false;
    let deadline = tokio::time::sleep(AUTHENTICATE_WITHIN);
    let mut deadline = std::pin::pin!(deadline);
    let mut authenticated = false;
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
            _ = deadline.as_mut(), if !authenticated => {
                authenticated = matches!(*place.lock(), Place::Authenticated(_));
                if !authenticated {
                    tracing::debug!("closed an admin connection not authenticated within {AUTHENTICATE_WITHIN:?}");
                    return;
                }
            }
        }
    }
}

/// Whether a request may be served: always once its connection is authenticated; a first request with the
/// token moves the connection to an authenticated place (false when none is free); any other request is served
/// on the unauthenticated place (the routes then answer 401, or the liveness check).
fn admit(place: &Mutex<Place>, places: &Places, token: Option<&AdminToken>, request: &Request<Incoming>) -> bool {
    let mut place = place.lock();
    if matches!(*place, Place::Authenticated(_)) || !bearer::carries_token(token, request.headers()) {
        return true;
    }
    match places.authenticated.clone().try_acquire_owned() {
        Ok(permit) => {
            *place = Place::Authenticated(permit); // the unauthenticated place is given back
            true
        }
        Err(_) => false,
    }
}

fn error_body(max: usize, what: &str) -> String {
    serde_json::json!({"error": {
        "code": "too_many_connections",
        "message": format!("this node serves at most {max} {what} at once"),
    }})
    .to_string()
}

/// The answer to an authenticated request when every authenticated place is taken (the connection is closed).
fn too_many_authenticated(max: usize) -> Response<Body> {
    Response::builder()
        .status(StatusCode::SERVICE_UNAVAILABLE)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CONNECTION, "close")
        .body(Body::from(error_body(max, "authenticated admin connections (--admin-connections-max)")))
        .expect("a static response")
}

/// A connection past the unauthenticated cap: a 503 if the socket takes it without waiting (a new socket's send
/// buffer is empty), then closed at once.
fn refuse(stream: &TcpStream, max: usize) {
    let body = error_body(max, "admin connections not authenticated yet");
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.try_write(answer.as_bytes());
    tracing::debug!(max, "refused an admin connection past the unauthenticated cap");
}
