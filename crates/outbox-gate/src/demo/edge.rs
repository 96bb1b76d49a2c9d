//! What the demo answers below the gate: requests that never reach a handler (an unknown
//! route, a method a route does not take, too many or too large headers) get a JSON error
//! `{code, message}` like every other answer, and static files never include dotfiles.

use crate::answer::error;
use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

/// The most header lines the demo takes (`431 HEADERS_TOO_LARGE` beyond).
pub const MAX_HEADERS: usize = 100;

/// The most bytes of header names and values the demo takes (`431 HEADERS_TOO_LARGE`
/// beyond). Hyper answers heads past about 400 KB (or past twice [`MAX_HEADERS`] lines)
/// itself, with an empty `431`, and closes the connection.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// Refuses a request with more than [`MAX_HEADERS`] header lines or [`MAX_HEADER_BYTES`]
/// of headers, before any handler runs.
pub(super) async fn bounded_headers(req: Request, next: Next) -> Response {
    let headers = req.headers();
    let bytes: usize = headers.iter().map(|(name, value)| name.as_str().len() + value.len()).sum();
    if headers.len() > MAX_HEADERS || bytes > MAX_HEADER_BYTES {
        return error(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "HEADERS_TOO_LARGE",
            "at most 100 header lines and 32 KiB of headers",
        );
    }
    next.run(req).await
}

/// Gives an error answer without a body of its own (axum's `404` for an unknown route and
/// `405`, a static file not found) the JSON body every other error has; its other headers
/// (`Allow`) stay.
pub(super) async fn json_errors(req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    let status = response.status();
    let json =
        response.headers().get(header::CONTENT_TYPE).is_some_and(|t| t.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || json {
        return response;
    }
    let (mut parts, _) = response.into_parts();
    let (code, message) = match status {
        StatusCode::NOT_FOUND => ("NOT_FOUND", "not found"),
        StatusCode::METHOD_NOT_ALLOWED => ("METHOD_NOT_ALLOWED", "this route does not take this method"),
        StatusCode::BAD_REQUEST => ("INVALID", "the request could not be read"),
        StatusCode::PAYLOAD_TOO_LARGE => ("PAYLOAD_TOO_LARGE", "the body is larger than this endpoint accepts"),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ("UNSUPPORTED_MEDIA_TYPE", "send JSON"),
        s if s.is_server_error() => ("INTERNAL", "the request failed; nothing was applied"),
        _ => ("HTTP_ERROR", "the request was refused"),
    };
    let (json_parts, body) = error(status, code, message).into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.extend(json_parts.headers);
    Response::from_parts(parts, body)
}

/// Answers `404` for any path with a segment starting with a dot (`.git`, `.env`, also
/// percent-encoded), before the static files are looked up. Only in front of the static
/// files: an operation id may start with a dot, and its receipt is an API route.
pub(super) async fn no_dotfiles(req: Request, next: Next) -> Response {
    let path = req.uri().path().to_ascii_lowercase();
    if path.split('/').any(|s| s.starts_with('.') || s.starts_with("%2e")) {
        return error(StatusCode::NOT_FOUND, "NOT_FOUND", "not found");
    }
    next.run(req).await
}
