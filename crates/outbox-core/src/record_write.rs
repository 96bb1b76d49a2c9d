//! The app's record writes as data (see [`crate::records`] for the rules that make and
//! apply them): what a replace (§4) carries beside the queue rows, and what the app's
//! `reconcile` port is asked about.

use crate::row::Row;
use serde_json::{Map, Value};

/// One write to an app store, as the app declared it.
#[derive(Clone, Debug, PartialEq)]
pub enum RecordWrite {
    /// Store `value`; under `key` when given (set at the store's key path, or as the
    /// out-of-line key), else under the key the value holds.
    Put {
        /// App store.
        store: String,
        /// The record.
        value: Value,
        /// Its key, when not (only) in the value.
        key: Option<Value>,
    },
    /// Remove the record under `key` (nothing if there is none).
    Delete {
        /// App store.
        store: String,
        /// Record key.
        key: Value,
    },
    /// Merge `set` into the record under `key`, if there is one.
    Patch {
        /// App store.
        store: String,
        /// Record key.
        key: Value,
        /// Fields to set.
        set: Map<String, Value>,
    },
    /// Move the record under `from` to `to` with `set` merged in, if there is one.
    Rekey {
        /// App store.
        store: String,
        /// Current key.
        from: Value,
        /// New key.
        to: Value,
        /// Fields to set.
        set: Map<String, Value>,
    },
}

impl RecordWrite {
    /// The store written.
    #[must_use]
    pub fn store(&self) -> &str {
        match self {
            RecordWrite::Put { store, .. }
            | RecordWrite::Delete { store, .. }
            | RecordWrite::Patch { store, .. }
            | RecordWrite::Rekey { store, .. } => store,
        }
    }
}

/// How an attempt ended for good, as the app's `reconcile` port sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// The server applied it (or replayed the stored answer).
    Success {
        /// The server's receipt.
        receipt: Value,
        /// The gate replayed a stored answer.
        replayed: bool,
    },
    /// Refused for good: the row is quarantined for the user (`retryBlocked`/`discard`).
    Blocked {
        /// Why.
        code: String,
    },
    /// A revision conflict: a successor with the server's revision was queued (§9).
    Conflict {
        /// The server's current revision.
        actual_revision: Value,
    },
}

/// What the `reconcile` port is asked about: the row as it was claimed, and its answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Reconcile {
    /// The row the answer is for.
    pub row: Row,
    /// The answer.
    pub answer: Answer,
}
