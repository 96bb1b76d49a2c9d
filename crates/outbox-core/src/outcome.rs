//! What the app's transport answers for one attempt (SPEC §10, §15 `Outcome`).

use crate::row::is_revision;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The answer to one attempt, as `send` returns it or [`crate::classify::classify_http`] builds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Outcome {
    /// Done; the row is deleted. `replayed` when the gate answered from its ledger.
    Success {
        /// The server's stable answer, e.g. `{serverId, revision}`.
        #[serde(default)]
        receipt: Value,
        /// The gate replayed a stored answer (`Idempotent-Replayed: true`).
        #[serde(default)]
        replayed: bool,
    },
    /// Try again later (network error, 5xx, 408, 429, `IN_PROGRESS`).
    Transient {
        /// A short code recorded as `evidence.lastErrorCode`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        /// Not before this many ms from now (`Retry-After`). Read from any number
        /// ([`retry_after_from_number`]).
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "retry_after")]
        retry_after_ms: Option<i64>,
    },
    /// The session expired: hold until a new login.
    Auth,
    /// Rejected for good: quarantine with this code.
    Permanent {
        /// E.g. `INVALID`, `FORBIDDEN`, `PAYLOAD_CONFLICT`, `HTTP_418`.
        code: String,
    },
    /// The base revision is stale; the server's record is at `actual_revision` (§9).
    Conflict {
        /// The server's current revision: a number or a string. Anything else (`null`
        /// included) quarantines the row with `REVISION_UNKNOWN` ([`crate::conflict`]).
        actual_revision: Value,
    },
}

/// The class of an outcome, as counted by metrics (§12).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutcomeClass {
    /// Success.
    Success,
    /// Transient failure.
    Transient,
    /// Auth expired.
    Auth,
    /// Permanent rejection.
    Permanent,
    /// Revision conflict.
    Conflict,
}

impl Outcome {
    /// This outcome's class.
    #[must_use]
    pub fn class(&self) -> OutcomeClass {
        match self {
            Outcome::Success { .. } => OutcomeClass::Success,
            Outcome::Transient { .. } => OutcomeClass::Transient,
            Outcome::Auth => OutcomeClass::Auth,
            Outcome::Permanent { .. } => OutcomeClass::Permanent,
            Outcome::Conflict { .. } => OutcomeClass::Conflict,
        }
    }

    /// A transient outcome with a code and no `Retry-After`.
    #[must_use]
    pub fn transient(code: &str) -> Outcome {
        Outcome::Transient { code: Some(code.to_owned()), retry_after_ms: None }
    }

    /// A success with this receipt, not replayed.
    #[must_use]
    pub fn success(receipt: Value) -> Outcome {
        Outcome::Success { receipt, replayed: false }
    }
}

/// serde's reading of `retryAfterMs` (the hand-written reader in `json.rs` agrees with it).
fn retry_after<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.map(retry_after_from_number))
}

/// The longest `Retry-After` kept, in ms: the largest whole number a JS number holds
/// exactly (about 285,000 years), so that `classifyHttp`'s answer reads back as the same
/// Outcome (a larger `retryAfterMs` is read as this one: [`retry_after_from_number`]).
pub const MAX_RETRY_AFTER_MS: i64 = 9_007_199_254_740_991;

/// A `retryAfterMs` the app gave as a number: a whole number of ms, rounded up, never
/// negative, at most [`MAX_RETRY_AFTER_MS`] (a fraction or a huge value is still a floor
/// under the next attempt, not a malformed answer that loses it).
#[must_use]
pub fn retry_after_from_number(ms: f64) -> i64 {
    // `as` saturates, and turns NaN (never read from JSON) into 0.
    (ms.ceil().clamp(0.0, MAX_RETRY_AFTER_MS as f64)) as i64
}

/// Quarantine code: the server reported a revision conflict without a usable actual revision.
pub const REVISION_UNKNOWN: &str = "REVISION_UNKNOWN";

/// True if a conflict answer's `actualRevision` can become the successor's base revision.
#[must_use]
pub fn usable_actual_revision(actual_revision: &Value) -> bool {
    is_revision(actual_revision)
}
