//! Fencing tokens kept by the node: a control plane sends, with every state-changing admin request, the fencing
//! token of the operation on whose behalf it acts (`X-Ferry-Fence: <scope>:<token>`, docs/node-api.md). The node
//! remembers the highest token it has seen per scope — durably, in `fences.json` in its data directory, written
//! whole before the request goes on — and refuses a change carrying a lower one with 409 `stale_fence`: an
//! instance that paused and woke after another took its cluster over (the next token) cannot change the node any
//! more, not even with a call it sent before it paused. Tokens of two scopes never compare. Reads (`GET`),
//! `POST /v1/wait-for-position` (a wait, it changes nothing) and requests without the header are not fenced:
//! operators' manual calls and control planes that send no token work as before.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ferry_core::binlog::intent;
use ferry_core::vfs::Fs;
use serde::{Deserialize, Serialize};

use super::ApiError;

/// The request header.
pub const HEADER: &str = "x-ferry-fence";
/// The file, in the data directory.
pub const FILE: &str = "fences.json";
/// Longest scope accepted.
pub const SCOPE_MAX: usize = 128;
/// Most scopes a node remembers (a new one beyond is refused).
pub const SCOPES_MAX: usize = 4096;

/// What the file holds: the highest token seen per scope.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Recorded {
    scopes: BTreeMap<String, u64>,
}

/// The node's fences: loaded at start, advanced (durably) by each fenced request carrying a higher token.
pub struct Fences {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    recorded: Mutex<Recorded>,
}

/// A parsed `X-Ferry-Fence` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    pub scope: String,
    pub token: u64,
}

impl Fences {
    /// The fences recorded in `dir` (none when the file does not exist).
    pub fn load(fs: Arc<dyn Fs>, dir: &Path) -> Result<Self, String> {
        let recorded: Option<Recorded> = intent::read(&*fs, &dir.join(FILE), "fences").map_err(|e| e.to_string())?;
        Ok(Fences { fs, dir: dir.to_path_buf(), recorded: Mutex::new(recorded.unwrap_or_default()) })
    }

    /// The highest token seen in `scope`.
    #[cfg(test)]
    pub fn highest(&self, scope: &str) -> Option<u64> {
        self.recorded.lock().expect("fences lock").scopes.get(scope).copied()
    }

    /// Admits a change carrying `fence`: refused when a higher token of its scope was seen; a higher token than
    /// any seen is recorded durably first.
    pub(super) fn admit(&self, fence: &Fence) -> Result<(), ApiError> {
        let mut recorded = self.recorded.lock().expect("fences lock");
        let seen = recorded.scopes.get(&fence.scope).copied();
        match seen {
            Some(highest) if fence.token < highest => {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "stale_fence",
                    format!(
                        "fencing token {} of scope '{}' is stale: this node has seen token {highest}; the \
                         operation that sent it no longer holds its cluster",
                        fence.token, fence.scope
                    ),
                ));
            }
            Some(highest) if fence.token == highest => return Ok(()),
            None if recorded.scopes.len() >= SCOPES_MAX => {
                return Err(ApiError::bad_request(format!(
                    "this node already keeps the fencing tokens of {SCOPES_MAX} scopes: a new scope is refused"
                )));
            }
            _ => {}
        }
        let mut next = recorded.clone();
        next.scopes.insert(fence.scope.clone(), fence.token);
        intent::write(&*self.fs, &self.dir, &self.dir.join(FILE), &next, None)
            .map_err(|e| ApiError::internal(format!("recording the fencing token: {e}")))?;
        *recorded = next;
        Ok(())
    }
}

/// The header's fence, if any; a malformed one is the caller's fault.
pub(super) fn parse(headers: &HeaderMap) -> Result<Option<Fence>, ApiError> {
    let Some(value) = headers.get(HEADER) else { return Ok(None) };
    let bad =
        |why: &str| ApiError::bad_request(format!("invalid X-Ferry-Fence header ({why}): expected '<scope>:<token>'"));
    let value = value.to_str().map_err(|_| bad("not ASCII"))?.trim();
    let (scope, token) = value.rsplit_once(':').ok_or_else(|| bad("no ':'"))?;
    if scope.is_empty() || scope.len() > SCOPE_MAX {
        return Err(bad(&format!("the scope must have 1 to {SCOPE_MAX} characters")));
    }
    if !scope.bytes().all(|b| b.is_ascii_alphanumeric() || b"._/-:".contains(&b)) {
        return Err(bad("the scope may hold letters, digits and . _ / - : only"));
    }
    if token.is_empty() || !token.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("the token must be a decimal integer"));
    }
    let token = token.parse::<u64>().map_err(|_| bad("the token is out of range"))?;
    Ok(Some(Fence { scope: scope.to_string(), token }))
}

/// `POST /v1/fence`: records the header's token (the middleware did, or refused a stale one) and changes nothing
/// else — a new holder raises the fence on every node of its cluster before it repairs any, so that a change sent
/// before by the holder it took over from is refused even on a node it has no change for.
pub(super) async fn raise(headers: HeaderMap) -> Result<axum::Json<super::bodies::Fenced>, ApiError> {
    match parse(&headers)? {
        Some(Fence { scope, token }) => Ok(axum::Json(super::bodies::Fenced { scope, token })),
        None => Err(ApiError::bad_request("POST /v1/fence needs an X-Ferry-Fence header ('<scope>:<token>')")),
    }
}

/// Whether a request changes the node (and is fenced when it carries the header).
fn changes(method: &Method, path: &str) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) && path != "/v1/wait-for-position"
}

/// The middleware: a state-changing request carrying a stale token is refused before its handler runs.
pub(super) async fn require_fresh(State(fences): State<Arc<Fences>>, request: Request, next: Next) -> Response {
    if !changes(request.method(), request.uri().path()) {
        return next.run(request).await;
    }
    let fence = match parse(request.headers()) {
        Ok(Some(fence)) => fence,
        Ok(None) => return next.run(request).await,
        Err(refused) => return refused.into_response(),
    };
    let admitted = tokio::task::spawn_blocking(move || fences.admit(&fence)).await.map_err(ApiError::internal);
    match admitted.and_then(|a| a) {
        Ok(()) => next.run(request).await,
        Err(refused) => refused.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fences(dir: &Path) -> Fences {
        Fences::load(ferry_core::vfs::real(), dir).unwrap()
    }

    fn fence(scope: &str, token: u64) -> Fence {
        Fence { scope: scope.into(), token }
    }

    fn header(value: &str) -> Result<Option<Fence>, ApiError> {
        let mut headers = HeaderMap::new();
        headers.insert(HEADER, value.parse().unwrap());
        parse(&headers)
    }

    #[test]
    fn a_lower_token_is_refused_after_a_higher_one_an_equal_one_admitted() {
        let dir = tempfile::tempdir().unwrap();
        let f = fences(dir.path());
        f.admit(&fence("c/1", 3)).unwrap();
        f.admit(&fence("c/1", 3)).unwrap();
        let refused = f.admit(&fence("c/1", 2)).unwrap_err();
        assert_eq!((refused.status, refused.code), (StatusCode::CONFLICT, "stale_fence"));
        assert!(refused.message.contains("seen token 3"), "{}", refused.message);
        f.admit(&fence("c/1", 4)).unwrap();
        assert_eq!(f.highest("c/1"), Some(4));
    }

    #[test]
    fn two_scopes_never_compare() {
        let dir = tempfile::tempdir().unwrap();
        let f = fences(dir.path());
        f.admit(&fence("a/1", 9)).unwrap();
        f.admit(&fence("a/2", 1)).unwrap();
        assert_eq!((f.highest("a/1"), f.highest("a/2")), (Some(9), Some(1)));
    }

    #[test]
    fn the_highest_token_survives_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        fences(dir.path()).admit(&fence("c/7", 5)).unwrap();
        let again = fences(dir.path());
        assert_eq!(again.highest("c/7"), Some(5));
        assert_eq!(again.admit(&fence("c/7", 4)).unwrap_err().code, "stale_fence");
    }

    #[test]
    fn headers_are_parsed_and_malformed_ones_refused() {
        assert_eq!(header("ferry:abc/cluster/3:12").unwrap(), Some(fence("ferry:abc/cluster/3", 12)));
        assert_eq!(parse(&HeaderMap::new()).unwrap(), None);
        for bad in ["12", ":3", "c/1:", "c/1:-1", "c/1:x", "c 1:2", "c/1:99999999999999999999999"] {
            let refused = header(bad).unwrap_err();
            assert_eq!((refused.status, refused.code), (StatusCode::BAD_REQUEST, "bad_request"), "{bad}");
        }
    }

    #[test]
    fn reads_and_waits_are_not_fenced() {
        assert!(!changes(&Method::GET, "/v1/status"));
        assert!(!changes(&Method::POST, "/v1/wait-for-position"));
        assert!(changes(&Method::POST, "/v1/read-only"));
        assert!(changes(&Method::DELETE, "/v1/replication/x"));
        assert!(changes(&Method::PATCH, "/v1/clone"));
    }
}
