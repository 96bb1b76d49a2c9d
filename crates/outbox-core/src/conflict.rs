//! Revision conflicts (SPEC §9).
//!
//! The server answered "your base revision is stale, the record is at R". While the claim
//! is still this tab's, one replace removes the original row and writes a successor under
//! a **new** operation id with revision R, a new fingerprint and a
//! `conflict: {previousId, actualRevision, at}` note, and re-points the rows that waited for
//! the original to the successor ([`crate::reissue::reissue_plan`]). The old id cannot be
//! reused: the gate's ledger would refuse it with a different fingerprint (§14).
//!
//! R is opaque, like every revision (§3): a JSON number or a string such as an ETag, and
//! the successor stores, fingerprints and sends exactly that value.
//!
//! **A conflict without a usable actual revision** (`actualRevision` missing, `null`, or an
//! object, array or boolean) never becomes a successor: a successor without a base
//! revision would be a blind write over the very change the server just reported. The
//! original row is quarantined instead, as for a permanent answer (§6): `state: "blocked"`,
//! `blockedCode: "REVISION_UNKNOWN"` ([`REVISION_UNKNOWN`]), its own revision kept, claim
//! expired and fence kept. The app decides (re-read the record, then `retryBlocked` with
//! a new body, or `discard`). The default classifier (§10) already turns such a `412` into
//! this permanent code; [`crate::ack::plan_ack`] does the same for an app-built
//! `Outcome::Conflict` whose revision is unusable.

use crate::reissue::reissued;
use crate::row::{is_revision, Row};
use crate::time::Millis;
use serde_json::{Map, Value};

pub use crate::outcome::{usable_actual_revision, REVISION_UNKNOWN};

/// §9: the original under a new id, with the server's revision and a `conflict` note.
/// `actual_revision` must be usable ([`usable_actual_revision`]); callers block the row
/// with [`REVISION_UNKNOWN`] otherwise, as [`crate::ack::plan_ack`] does.
#[must_use]
pub fn conflict_successor(row: &Row, actual_revision: &Value, now: Millis, new_id: &str) -> Row {
    let mut with_rev = row.clone();
    with_rev.revision = Some(actual_revision.clone()).filter(is_revision);
    let mut s = reissued(&with_rev, new_id);
    s.conflict = Some(conflict_note(&row.id, actual_revision, now));
    s
}

/// The `conflict` note: `{previousId, actualRevision, at}`, in that order. Built as a map,
/// not with `json!`, whose fallible `to_value` links serde_json's error texts and
/// formatting into the wasm (2.1 KB gzip).
fn conflict_note(previous_id: &str, actual_revision: &Value, now: Millis) -> Value {
    let mut note = Map::new();
    note.insert("previousId".into(), Value::from(previous_id));
    note.insert("actualRevision".into(), actual_revision.clone());
    note.insert("at".into(), Value::from(now.0));
    Value::Object(note)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::decode;
    use serde_json::json;

    #[test]
    fn the_note_names_the_original_the_servers_revision_and_the_time_in_that_order() {
        let row = decode(&json!({"id": "r1", "owner": "o", "target": "t", "kind": "update", "body": {},
            "savedAt": 1, "state": "sending", "revision": 1}))
        .unwrap();
        let s = conflict_successor(&row, &json!("W/\"e7\""), Millis(1234), "r2");
        let text = serde_json::to_string(s.conflict.as_ref().unwrap()).unwrap();
        assert_eq!(text, r#"{"previousId":"r1","actualRevision":"W/\"e7\"","at":1234}"#);
        assert_eq!((s.id.as_str(), s.revision), ("r2", Some(json!("W/\"e7\""))));
    }
}
