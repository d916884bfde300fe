//! The admin API's one authentication layer: every route but `GET /v1/health` needs
//! `Authorization: Bearer <token>` matching `--admin-token-file`. Anything else is answered 401, with
//! `WWW-Authenticate: Bearer`, before a handler runs; a node without a token answers 401 to everything but
//! the liveness check.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ApiError;
use crate::auth::AdminToken;

/// The middleware: passes the request on only with the right token.
pub(super) async fn require_token(State(token): State<Option<AdminToken>>, request: Request, next: Next) -> Response {
    match check(token.as_ref(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refused) => refused.into_response(),
    }
}

fn unauthorized(message: &str) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
}

/// Whether `headers` carry the node's token (what lets a connection leave the unauthenticated slots).
pub(super) fn carries_token(expected: Option<&AdminToken>, headers: &HeaderMap) -> bool {
    check(expected, headers).is_ok()
}

/// Whether `headers` carry the node's token.
fn check(expected: Option<&AdminToken>, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(expected) = expected else {
        return Err(unauthorized(
            "this node has no admin token (--admin-token-file): every admin call but GET /v1/health is refused",
        ));
    };
    let offered =
        headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    match offered {
        None => Err(unauthorized("missing 'Authorization: Bearer <token>' header")),
        Some(t) if expected.matches(t.trim()) => Ok(()),
        Some(_) => Err(unauthorized("wrong admin token")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "unit-test-admin-token-0123";

    fn token() -> AdminToken {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), TOKEN).unwrap();
        AdminToken::from_file(file.path()).unwrap()
    }

    fn headers(authorization: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(value) = authorization {
            headers.insert(header::AUTHORIZATION, value.parse().unwrap());
        }
        headers
    }

    fn refusal(expected: Option<&AdminToken>, authorization: Option<&str>) -> String {
        let refused = check(expected, &headers(authorization)).expect_err("refused");
        assert_eq!((refused.status, refused.code), (StatusCode::UNAUTHORIZED, "unauthorized"));
        refused.message
    }

    #[test]
    fn the_right_bearer_token_passes() {
        assert!(check(Some(&token()), &headers(Some(&format!("Bearer {TOKEN}")))).is_ok());
    }

    #[test]
    fn a_missing_or_wrong_token_or_another_scheme_is_refused_saying_which() {
        let token = token();
        assert!(refusal(Some(&token), None).contains("missing"));
        assert!(refusal(Some(&token), Some(&format!("Basic {TOKEN}"))).contains("missing"));
        assert!(refusal(Some(&token), Some("Bearer not-the-token-at-all")).contains("wrong"));
    }

    #[test]
    fn a_node_without_a_token_refuses_every_call_naming_the_flag_and_the_health_route() {
        let message = refusal(None, Some(&format!("Bearer {TOKEN}")));
        assert!(message.contains("--admin-token-file") && message.contains("/v1/health"), "{message}");
    }
}
