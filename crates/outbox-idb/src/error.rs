//! Errors thrown to JavaScript: real `Error` objects with a stable `code` the app can match.

use outbox_core::input::InputError;
use std::fmt;
use wasm_bindgen::prelude::*;

/// What went wrong, as the app sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorCode {
    /// An argument is missing or malformed; nothing was written.
    InvalidArgument,
    /// IndexedDB refused or failed a request.
    Storage,
    /// The outbox was closed with `close()`.
    Closed,
}

impl ErrorCode {
    /// The stable string on `error.code`.
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::Storage => "STORAGE",
            ErrorCode::Closed => "CLOSED",
        }
    }
}

/// An error of one API call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutboxError {
    /// Its kind.
    pub code: ErrorCode,
    /// What a person can act on.
    pub message: String,
}

impl OutboxError {
    /// An `INVALID_ARGUMENT` error.
    pub fn invalid(message: impl Into<String>) -> OutboxError {
        OutboxError { code: ErrorCode::InvalidArgument, message: message.into() }
    }

    /// A `STORAGE` error, with what IndexedDB said.
    pub fn storage(context: &str, cause: &JsValue) -> OutboxError {
        let detail = js_sys::Reflect::get(cause, &"message".into())
            .ok()
            .and_then(|m| m.as_string())
            .or_else(|| cause.as_string())
            .unwrap_or_else(|| format!("{cause:?}"));
        OutboxError { code: ErrorCode::Storage, message: format!("{context}: {detail}") }
    }

    /// The `CLOSED` error.
    pub fn closed() -> OutboxError {
        OutboxError { code: ErrorCode::Closed, message: "the outbox is closed; open it again".into() }
    }
}

impl fmt::Display for OutboxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl From<InputError> for OutboxError {
    fn from(e: InputError) -> OutboxError {
        OutboxError::invalid(e.to_string())
    }
}

impl From<OutboxError> for JsValue {
    fn from(e: OutboxError) -> JsValue {
        let err = js_sys::Error::new(&e.message);
        err.set_name("OutboxError");
        let _ = js_sys::Reflect::set(&err, &"code".into(), &e.code.as_str().into());
        err.into()
    }
}

/// Result of an API call.
pub type Result<T> = std::result::Result<T, OutboxError>;
