//! Is a row being sent right now? (SPEC §5, `isRowInFlight`)

use crate::row::{Row, RowState};
use crate::time::Millis;

/// Default lease: 10 000 ms.
pub const DEFAULT_LEASE_MS: i64 = 10_000;

/// Who is sending a row, as far as the stored fields tell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InFlight {
    /// Nobody: the row may be claimed (if otherwise sendable).
    No,
    /// A claim of this format, unexpired, by this tab.
    ByTab(String),
    /// An older writer (no `writer`/`claim`) sent it less than a lease ago.
    ByOlderWriter,
}

impl InFlight {
    /// True unless [`InFlight::No`].
    #[must_use]
    pub fn is_in_flight(&self) -> bool {
        !matches!(self, InFlight::No)
    }

    /// True if in flight by any tab other than `tab_id` (older writers count as other).
    #[must_use]
    pub fn by_other_than(&self, tab_id: &str) -> bool {
        match self {
            InFlight::No => false,
            InFlight::ByTab(t) => t != tab_id,
            InFlight::ByOlderWriter => true,
        }
    }
}

/// Applies §5: a live claim of this format first, then the older writers' `sentAt` rule
/// measured with the reading tab's own `lease_ms`.
#[must_use]
pub fn in_flight(row: &Row, now: Millis, lease_ms: i64) -> InFlight {
    if let (Some(_), Some(claim)) = (&row.writer, &row.claim) {
        if claim.expires_at > now {
            return InFlight::ByTab(claim.tab_id.clone());
        }
    }
    if row.state == RowState::Sending {
        if let Some(sent) = row.sent_at {
            if now.since(sent) < lease_ms {
                return InFlight::ByOlderWriter;
            }
        }
    }
    InFlight::No
}

/// `isRowInFlight(row, now, lease)`.
#[must_use]
pub fn is_row_in_flight(row: &Row, now: Millis, lease_ms: i64) -> bool {
    in_flight(row, now, lease_ms).is_in_flight()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::decode;
    use serde_json::json;

    #[test]
    fn is_row_in_flight_answers_for_claims_and_older_writers() {
        let claimed = decode(&json!({"id": "r", "owner": "o", "target": "t", "kind": "update", "body": {},
            "savedAt": 1, "state": "sending", "sentAt": 10, "claim": {"tabId": "a", "expiresAt": 100, "fence": 1},
            "writer": {"bundle": "b", "at": 10}}))
        .unwrap();
        assert!(is_row_in_flight(&claimed, Millis(99), 50));
        assert!(!is_row_in_flight(&claimed, Millis(100), 50));
        let older = decode(&json!({"id": "r", "owner": "o", "target": "t", "kind": "update", "body": {},
            "savedAt": 1, "state": "sending", "sentAt": 10}))
        .unwrap();
        assert!(is_row_in_flight(&older, Millis(59), 50));
        assert!(!is_row_in_flight(&older, Millis(60), 50));
    }
}
