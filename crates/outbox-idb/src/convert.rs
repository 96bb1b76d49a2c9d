//! Values across the boundary.
//!
//! - What the app gives (bodies, operations, outcomes, receipts, tickets) must be JSON:
//!   anything JSON cannot hold is refused with `INVALID_ARGUMENT` naming where it is
//!   (SPEC §3 rule 4), never silently changed.
//! - What is stored is read whatever it holds: values JSON cannot hold (another writer's
//!   `Date` or `Blob` in a field this version does not know) are carried through as stored
//!   (SPEC §3 rule 2), see [`kept`].
//! - Nothing given or stored can take the module down: every walk is bounded in depth and
//!   work and stops at cycles, see [`walk`].
//!
//! Objects go out as plain objects (not `Map`s), so that IndexedDB key paths work.

mod foreign;
mod json;
mod kept;
mod parse;
mod path;
mod walk;

use crate::error::{OutboxError, Result};
use outbox_core::intent::Prepared;
use outbox_core::Outcome;
use serde_json::Value;
use walk::{FieldsRefusal, Refusal};
use wasm_bindgen::prelude::*;

pub use foreign::OPAQUE_KEY;
pub use json::{metrics_to_js, report_to_js, send_op_to_js, ticket_to_js, to_js};
pub use kept::unsendable_reason;
pub use walk::{MAX_APP_DEPTH, MAX_NODES};

fn refused(r: Refusal) -> OutboxError {
    let tail = if r.path == "body" || r.path.starts_with("body.") || r.path.starts_with("body[") {
        "only JSON values can be queued"
    } else {
        "only JSON values are accepted"
    };
    let mut e = OutboxError::invalid_key(&r.path, "` ");
    e.message.push_str(&r.problem);
    e.message.push_str("; ");
    e.message.push_str(tail);
    e
}

/// A value the app gave, as JSON; `root` names it in errors (`body` → "`body.at` is a
/// Date; only JSON values can be queued").
///
/// # Errors
/// `INVALID_ARGUMENT` naming the first value JSON cannot hold: `undefined`, `NaN`,
/// `±Infinity`, a `BigInt`, symbol or function, a string with an unpaired surrogate, any
/// object but an array or a plain object (`Date`, `Blob`, `Map`, typed arrays, class
/// instances…), an object using the reserved key `$outboxOpaque`, a cycle, or nesting
/// deeper than [`MAX_APP_DEPTH`].
pub fn from_js(v: &JsValue, root: &str) -> Result<Value> {
    walk::given(v, root).map_err(refused)
}

/// An argument object of the app (an operation, an outcome, a ticket): its own fields as
/// JSON, where a field set to `undefined` is absent (as for any optional argument in JS).
/// `root` prefixes the paths in errors (`""` for none).
///
/// # Errors
/// `INVALID_ARGUMENT` when `v` is not an object or a field is not JSON (see [`from_js`]).
pub fn fields_from_js(v: &JsValue, root: &str) -> Result<Value> {
    walk::given_fields(v, root).map_err(|r| match r {
        FieldsRefusal::Whole(problem) if root.is_empty() => {
            OutboxError::invalid(outbox_core::text::concat(&["the value ", &problem]))
        }
        FieldsRefusal::Whole(problem) => {
            let mut e = OutboxError::invalid_key(root, "` ");
            e.message.push_str(&problem);
            e
        }
        FieldsRefusal::Unreadable(k) => OutboxError::invalid_key(&k, "` cannot be read"),
        FieldsRefusal::Value(r) => refused(r),
    })
}

/// A stored value as the planner's JSON. Never fails: values JSON cannot hold become
/// markers whose originals are kept for writing the row back ([`stored_to_js`]) and for
/// showing it to the app ([`row_to_js`]); a row with one in a known field reads as
/// undecodable (SPEC §3 rule 3).
pub fn stored_from_js(v: &JsValue) -> Value {
    kept::read(v, true)
}

/// A row the app hands back (to `selectSendable`, `isRowInFlight`), read as a stored row
/// but without keeping anything.
pub fn row_from_app(v: &JsValue) -> Value {
    kept::read(v, false)
}

/// A row to write (`put`), with the stored values its markers stand for.
///
/// # Errors
/// A marker whose original is unknown: nothing of this transaction may be written then.
pub fn stored_to_js(id: &str, row: &Value) -> std::result::Result<JsValue, JsValue> {
    kept::to_store(id, row)
}

/// A stored row for the app, with the values JSON cannot hold as they are stored.
pub fn row_to_js(row: &Value) -> JsValue {
    kept::to_app(row)
}

/// An `Outcome` the app gives (returned by `send`, or passed to `ack`).
///
/// # Errors
/// `INVALID_ARGUMENT` when it is not JSON (a `Date` as `actualRevision` would otherwise be
/// stored as a revision) or not an `Outcome`.
pub fn outcome_from_js(v: &JsValue) -> Result<Outcome> {
    Outcome::from_json(&fields_from_js(v, "outcome")?)
        .map_err(|e| OutboxError::invalid(outbox_core::text::concat(&["`outcome` is not an Outcome: ", &e])))
}

/// What `prepareSuccessor` returned: `{target, body, revision}`, all JSON.
///
/// # Errors
/// `INVALID_ARGUMENT` when it is not JSON or lacks a `target`.
pub fn prepared_from_js(v: &JsValue) -> Result<Prepared> {
    Prepared::from_json(&fields_from_js(v, "")?).map_err(|e| {
        OutboxError::invalid(outbox_core::text::concat(&[
            "prepareSuccessor must return {target, body, revision?}: ",
            &e,
        ]))
    })
}

/// `{id, owner, undecodable: true, error, raw}`; `raw` is the value as stored, including
/// what JSON cannot hold (SPEC §3 rule 3).
pub(crate) fn undecodable_entry(u: &outbox_core::Undecodable) -> JsValue {
    let error = unsendable_reason(&u.raw).unwrap_or_else(|| u.error.message());
    // Set key by key (in this order), not through a JSON text: no `json!` map to build.
    let text = |s: &Option<String>| s.as_deref().map_or(JsValue::NULL, JsValue::from);
    let entry: JsValue = js_sys::Object::new().into();
    for (key, value) in [
        ("id", text(&u.id)),
        ("owner", text(&u.owner)),
        ("undecodable", JsValue::TRUE),
        ("error", JsValue::from(error)),
        ("raw", row_to_js(&u.raw)),
    ] {
        crate::js::set(&entry, key, &value);
    }
    entry
}
