//! Answers: what a handler returns (stored for replay) and the gate's own errors, all JSON.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::time::Duration;

/// An HTTP answer with a JSON body. A handler's final answer (`2xx`, and `4xx` but `401`,
/// `408`, `429`, `409 IN_PROGRESS`) is stored with the completed record and replayed as is
/// (`Idempotent-Replayed: true`) for a resend of the same request; any other is given once,
/// unstored, its writes rolled back (see [`crate::Gate::run`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    /// HTTP status.
    pub status: StatusCode,
    /// JSON body.
    pub body: Value,
    /// True when served from the ledger.
    pub replayed: bool,
}

impl Answer {
    /// A fresh answer.
    pub fn new(status: StatusCode, body: Value) -> Answer {
        Answer { status, body, replayed: false }
    }

    /// An error answer `{code, message}`, the shape of every error the gate gives.
    pub fn error(status: StatusCode, code: &str, message: &str) -> Answer {
        Answer::new(status, json!({"code": code, "message": message}))
    }
}

impl IntoResponse for Answer {
    fn into_response(self) -> Response {
        let mut resp = (self.status, Json(self.body)).into_response();
        if self.replayed {
            resp.headers_mut().insert("idempotent-replayed", HeaderValue::from_static("true"));
        }
        resp
    }
}

/// An error response `{code, message}`.
pub fn error(status: StatusCode, code: &str, message: &str) -> Response {
    Answer::error(status, code, message).into_response()
}

/// An error response with `Retry-After` (whole seconds, at least one).
pub fn retry_later(status: StatusCode, code: &str, message: &str, after: Duration) -> Response {
    let mut resp = error(status, code, message);
    let secs = after.as_millis().div_ceil(1000).max(1);
    resp.headers_mut().insert("retry-after", HeaderValue::from(u64::try_from(secs).unwrap_or(u64::MAX)));
    resp
}
