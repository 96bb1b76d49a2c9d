//! Errors thrown to JavaScript: real `Error` objects with a stable `code` the app can match
//! (SPEC §15: `INVALID_ARGUMENT`, `STORAGE`, `CLOSED`, and `BLOCKED`, `QUOTA` for the two
//! storage failures an app handles on its own: other tabs to close, a full disk;
//! `INTERNAL` for a bug).

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
    /// The database could not be opened in time: another tab holds an older version of it
    /// open (or is upgrading it). Nothing was written; closing or reloading the other tabs
    /// of the app, then calling again, succeeds.
    Blocked,
    /// The browser refused to store more for this site (`QuotaExceededError`). Nothing of
    /// the failed call was written.
    Quota,
    /// The database holds the app stores of a newer app version (`records.version`) than
    /// this page declares: another tab runs a newer app. Nothing was opened or changed;
    /// reloading this page with the newer app opens it.
    SchemaNewer,
    /// The app's declaration (`records`) does not match the database: a store's key
    /// (`keyPath`, `autoIncrement`) changed, which IndexedDB cannot do to a store, or the
    /// stores or indexes changed without raising `records.version`. Nothing was opened or
    /// changed; the message names the store and what to do.
    SchemaMismatch,
    /// A bug in the module (a panic): the call that met it rejects with this and writes
    /// nothing; other calls go on. The message is worth reporting.
    Internal,
}

impl ErrorCode {
    /// The stable string on `error.code`.
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::Storage => "STORAGE",
            ErrorCode::Closed => "CLOSED",
            ErrorCode::Blocked => "BLOCKED",
            ErrorCode::Quota => "QUOTA",
            ErrorCode::SchemaNewer => "SCHEMA_NEWER",
            ErrorCode::SchemaMismatch => "SCHEMA_MISMATCH",
            ErrorCode::Internal => "INTERNAL",
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
    /// A `SCHEMA_NEWER` error: the database is at app schema `have`, the page declares
    /// `declared`.
    pub fn schema_newer(have: u32, declared: u32) -> OutboxError {
        OutboxError {
            code: ErrorCode::SchemaNewer,
            message: {
                let mut m = String::from("the database holds app records at schema version ");
                crate::js::push_decimal(&mut m, have as usize);
                m.push_str(", newer than this page's ");
                crate::js::push_decimal(&mut m, declared as usize);
                m.push_str(": another tab runs a newer version of the app; reload this page");
                m
            },
        }
    }

    /// A `SCHEMA_MISMATCH` error with its message.
    pub fn schema_mismatch(message: String) -> OutboxError {
        OutboxError { code: ErrorCode::SchemaMismatch, message }
    }

    /// An `INVALID_ARGUMENT` error.
    pub fn invalid(message: impl Into<String>) -> OutboxError {
        OutboxError { code: ErrorCode::InvalidArgument, message: message.into() }
    }

    /// An `INVALID_ARGUMENT` error naming the argument or option `key` first: "`key`" then
    /// `rest`. One builder of these messages, not the pieces laid out at each (issue 35).
    #[inline(never)]
    pub fn invalid_key(key: &str, rest: &str) -> OutboxError {
        OutboxError::invalid(outbox_core::text::concat(&["`", key, rest]))
    }

    /// What IndexedDB said, as a `STORAGE` error — or `QUOTA` when it is the browser's
    /// `QuotaExceededError` (a full disk or the origin's quota), which the app handles
    /// differently (tell the person, free space) from a failing database.
    pub fn storage(context: &str, cause: &JsValue) -> OutboxError {
        let detail = detail(cause);
        if dom_name(cause).as_deref() == Some("QuotaExceededError") {
            let message = outbox_core::text::concat(&[
                context,
                ": the browser's storage for this site is full; free space and retry (",
                &detail,
                ")",
            ]);
            return OutboxError { code: ErrorCode::Quota, message };
        }
        OutboxError { code: ErrorCode::Storage, message: outbox_core::text::concat(&[context, ": ", &detail]) }
    }

    /// The `BLOCKED` error of an open that did not complete within `timeout_ms`;
    /// `saw_blocked` when IndexedDB said another connection does not close.
    pub fn blocked(saw_blocked: bool, timeout_ms: u32) -> OutboxError {
        let message = if saw_blocked {
            "another tab of this app holds an older version of the database open; close it or reload it".to_owned()
        } else {
            let mut m = String::from("the database did not open within ");
            crate::js::push_decimal(&mut m, timeout_ms as usize);
            m.push_str(
                " ms: another tab of this app is upgrading it or holds an older version of it open; close or reload \
                 the other tabs",
            );
            m
        };
        OutboxError { code: ErrorCode::Blocked, message }
    }

    /// An `INTERNAL` error: a panic, with its message.
    pub fn internal(message: String) -> OutboxError {
        OutboxError { code: ErrorCode::Internal, message }
    }

    /// The `CLOSED` error.
    pub fn closed() -> OutboxError {
        OutboxError { code: ErrorCode::Closed, message: "the outbox is closed; open it again".into() }
    }
}

/// What `cause` (an exception) says: its `message`, or `String(cause)` (a fixed text when
/// neither can be read).
pub(crate) fn detail(cause: &JsValue) -> String {
    crate::js::get(cause, "message").as_string().unwrap_or_else(|| crate::js::text_of(cause))
}

/// The `name` of a `DOMException` (or any error object), e.g. `"QuotaExceededError"`.
pub(crate) fn dom_name(cause: &JsValue) -> Option<String> {
    crate::js::get(cause, "name").as_string()
}

impl fmt::Display for OutboxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl From<InputError> for OutboxError {
    fn from(e: InputError) -> OutboxError {
        OutboxError::invalid(e.message())
    }
}

impl From<OutboxError> for JsValue {
    fn from(e: OutboxError) -> JsValue {
        let err = js_sys::Error::new(&e.message);
        err.set_name("OutboxError");
        crate::js::set(&err, "code", &e.code.as_str().into());
        err.into()
    }
}

/// Result of an API call.
pub type Result<T> = std::result::Result<T, OutboxError>;
