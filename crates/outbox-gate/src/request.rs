//! [`Idempotent`]: the extractor that reads `Idempotency-Key` and the body and fingerprints
//! the request. It consumes the body, so axum runs it after the app's own extractors —
//! authentication (a `FromRequestParts` extractor) is checked before the body is read.

// Helpers return the `Response` to send on failure, as axum's rejections are; boxing it
// would only add noise.
#![allow(clippy::result_large_err)]

use crate::answer::error;
use axum::body::Bytes;
use axum::extract::{FromRequest, OriginalUri, Request};
use axum::http::StatusCode;
use axum::response::Response;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

/// The longest `Idempotency-Key` and actor the gate accepts, in bytes (keys are ASCII).
pub const MAX_KEY_LEN: usize = 255;

/// The longest request target (path and query) the gate accepts, in bytes: `414` beyond,
/// before anything is read or stored. 8 KiB, the request-line limit of common proxies.
pub const MAX_TARGET_LEN: usize = 8 * 1024;

/// The longest operation text stored with a record, in bytes: a longer one keeps its start
/// and the SHA-256 of the whole (see [`Idempotent::operation`]).
pub const MAX_OPERATION_LEN: usize = 255;

/// A request to carry out at most once: its `Idempotency-Key`, fingerprint and body.
/// Rejects a missing, empty or over-long key (`400`), a URL over [`MAX_TARGET_LEN`]
/// (`414`), and a body over the router's `DefaultBodyLimit` (`413`), with JSON bodies.
#[derive(Clone, Debug)]
pub struct Idempotent {
    key: String,
    operation: String,
    fingerprint: String,
    body: Bytes,
}

impl Idempotent {
    /// Builds one from its parts (for apps that read the request themselves), with at most
    /// one `If-Match` line ([`Idempotent::with_lines`] for several).
    ///
    /// # Errors
    /// The key is empty, longer than [`MAX_KEY_LEN`] or not visible ASCII: a `400` answer;
    /// `path` (with its query) is longer than [`MAX_TARGET_LEN`]: `414`.
    pub fn new(
        key: &str,
        method: &str,
        path: &str,
        if_match: Option<&str>,
        body: Bytes,
    ) -> Result<Idempotent, Response> {
        Idempotent::with_lines(key, method, path, if_match.as_slice(), body)
    }

    /// [`Idempotent::new`] with every `If-Match` line of the request, in the order received.
    ///
    /// # Errors
    /// As [`Idempotent::new`].
    pub fn with_lines(
        key: &str,
        method: &str,
        path: &str,
        if_match: &[&str],
        body: Bytes,
    ) -> Result<Idempotent, Response> {
        if key.is_empty() {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "MISSING_IDEMPOTENCY_KEY",
                "send the operation id in Idempotency-Key",
            ));
        }
        if key.len() > MAX_KEY_LEN || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "INVALID_IDEMPOTENCY_KEY",
                "Idempotency-Key must be 1 to 255 visible ASCII characters",
            ));
        }
        if path.len() > MAX_TARGET_LEN {
            return Err(error(
                StatusCode::URI_TOO_LONG,
                "URI_TOO_LONG",
                "the URL (path and query) is longer than 8192 bytes",
            ));
        }
        Ok(Idempotent {
            key: key.to_owned(),
            operation: operation_text(method, path),
            fingerprint: crate::fingerprint::fingerprint_lines(method, path, if_match, &body),
            body,
        })
    }

    /// The `Idempotency-Key`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Method and target (path and query), as stored with the record for operators: as
    /// sent when at most [`MAX_OPERATION_LEN`] bytes, else its start, `…` and the SHA-256 of
    /// the whole target. The fingerprint covers the whole target either way; this text only
    /// bounds what one request stores (the full text kept a 60 KB query for 30 days).
    pub fn operation(&self) -> &str {
        &self.operation
    }

    /// The request's fingerprint (see [`fingerprint`]).
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The raw body.
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// The body parsed as JSON; an empty body is `None`.
    ///
    /// # Errors
    /// The body is not JSON of that shape: a `400 INVALID` answer.
    pub fn json<T: DeserializeOwned>(&self) -> Result<Option<T>, Response> {
        if self.body.is_empty() {
            return Ok(None);
        }
        serde_json::from_slice(&self.body)
            .map(Some)
            .map_err(|_| error(StatusCode::BAD_REQUEST, "INVALID", "body is not valid JSON for this request"))
    }
}

fn operation_text(method: &str, path: &str) -> String {
    let text = format!("{method} {path}");
    if text.len() <= MAX_OPERATION_LEN {
        return text;
    }
    let digest: String = Sha256::digest(path.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    let suffix = format!("… sha256:{digest}");
    let mut end = MAX_OPERATION_LEN - suffix.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{suffix}", &text[..end])
}

/// The gate's fingerprint of a request: see [`crate::fingerprint`].
pub use crate::fingerprint::fingerprint;

impl<S: Send + Sync> FromRequest<S> for Idempotent {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Idempotent, Response> {
        let (key, if_match) = {
            // Each byte as the Latin-1 character it is (HTTP's obs-text): two headers that
            // differ give two texts, so two fingerprints.
            let text = |v: &axum::http::HeaderValue| v.as_bytes().iter().map(|&b| char::from(b)).collect::<String>();
            let key = req.headers().get("idempotency-key").map(text).unwrap_or_default();
            // Every `If-Match` line: a second one is part of the request, not noise after
            // the first (it was ignored).
            let if_match: Vec<String> = req.headers().get_all("if-match").iter().map(text).collect();
            (key, if_match)
        };
        let method = req.method().as_str().to_owned();
        // The URI the client sent: inside a nested router (`Router::nest("/t/{tenant}", api)`)
        // `req.uri()` has lost the prefix, and two tenants' requests under one key would
        // share a fingerprint (the second answered with the first's receipt, never applied).
        let uri = req.extensions().get::<OriginalUri>().map_or_else(|| req.uri().clone(), |o| o.0.clone());
        let path = uri.path_and_query().map_or_else(|| uri.path().to_owned(), |p| p.as_str().to_owned());
        // Refuse a bad key before reading the body.
        Idempotent::new(&key, &method, &path, None, Bytes::new())?;
        let body = Bytes::from_request(req, state).await.map_err(|rejection| {
            let status = rejection.status();
            if status == StatusCode::PAYLOAD_TOO_LARGE {
                error(status, "PAYLOAD_TOO_LARGE", "the body is larger than this endpoint accepts")
            } else {
                error(status, "INVALID", "the body could not be read")
            }
        })?;
        let if_match: Vec<&str> = if_match.iter().map(String::as_str).collect();
        Idempotent::with_lines(&key, &method, &path, &if_match, body)
    }
}
