//! Is a row being sent right now? (SPEC §5, `isRowInFlight`)

use crate::row::{Row, RowState};
use crate::time::Millis;

pub use crate::tab::{DEFAULT_LEASE_MS, MAX_LEASE_MS};

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
/// measured with the reading tab's own `lease_ms`. A lease end (or a `sentAt`) further than
/// [`MAX_LEASE_MS`] past the reader's own `now` was written by a tab whose clock is ahead:
/// it is not honoured, so such a tab cannot keep rows from the others for as long as its
/// clock is wrong.
#[must_use]
pub fn in_flight(row: &Row, now: Millis, lease_ms: i64) -> InFlight {
    judged(row, now, lease_ms, Some(MAX_LEASE_MS))
}

/// [`in_flight`] with every lease end believed: the row's request may be on the wire. What
/// a later edit waits for rather than absorbs (§7), even when the claim is not honoured for
/// claiming (§5): the older request must never land after the newer one.
#[must_use]
pub fn may_be_on_the_wire(row: &Row, now: Millis, lease_ms: i64) -> bool {
    judged(row, now, lease_ms, None).is_in_flight()
}

/// When the claim that keeps `row` in flight at `now`, as [`in_flight`] judges it, ends:
/// the claim's `expiresAt`, or an older writer's `sentAt` + `lease_ms` (§5). `None` when
/// the row is not in flight.
#[must_use]
pub fn in_flight_until(row: &Row, now: Millis, lease_ms: i64) -> Option<Millis> {
    lease_end(row, now, lease_ms, Some(MAX_LEASE_MS)).map(|(_, end)| end)
}

/// §5 with lease ends believed up to `bound` ms past `now` (`None`: all of them).
fn judged(row: &Row, now: Millis, lease_ms: i64, bound: Option<i64>) -> InFlight {
    lease_end(row, now, lease_ms, bound).map_or(InFlight::No, |(who, _)| who)
}

/// [`judged`], with the instant the lease that keeps the row in flight ends.
fn lease_end(row: &Row, now: Millis, lease_ms: i64, bound: Option<i64>) -> Option<(InFlight, Millis)> {
    let believable = |at: Millis| bound.is_none_or(|b| at.since(now) <= b);
    if let (Some(_), Some(claim)) = (&row.writer, &row.claim) {
        if claim.expires_at > now && believable(claim.expires_at) {
            return Some((InFlight::ByTab(claim.tab_id.clone()), claim.expires_at));
        }
    }
    if row.state == RowState::Sending {
        if let Some(sent) = row.sent_at.filter(|s| believable(*s)) {
            if now.since(sent) < lease_ms {
                return Some((InFlight::ByOlderWriter, sent.plus(lease_ms)));
            }
        }
    }
    None
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

    #[test]
    fn s5_a_lease_end_past_the_readers_clock_plus_the_longest_lease_is_not_honoured() {
        // Issue 32: a tab whose clock is a day ahead wrote leases the others honoured for a day.
        let claim_ending = |end: i64, sent: i64| {
            decode(&json!({"id": "r", "owner": "o", "target": "t", "kind": "update", "body": {},
                "savedAt": 1, "state": "sending", "sentAt": sent, "claim": {"tabId": "a", "expiresAt": end, "fence": 1},
                "writer": {"bundle": "b", "at": sent}}))
            .unwrap()
        };
        let now = Millis(1_000_000_000);
        let long_ago = now.0 - 1_000; // the older writers' rule (lease 50) says no
        assert!(is_row_in_flight(&claim_ending(now.0 + MAX_LEASE_MS, long_ago), now, 50), "the longest honest lease");
        assert!(!is_row_in_flight(&claim_ending(now.0 + MAX_LEASE_MS + 1, long_ago), now, 50));
        let day = 86_400_000;
        assert!(!is_row_in_flight(&claim_ending(now.0 + day + 10_000, now.0 + day), now, 50), "a day ahead");
        // An older writer's `sentAt` a day ahead neither.
        let older = |sent: i64| {
            decode(&json!({"id": "r", "owner": "o", "target": "t", "kind": "update", "body": {},
                "savedAt": 1, "state": "sending", "sentAt": sent}))
            .unwrap()
        };
        assert!(is_row_in_flight(&older(now.0 + MAX_LEASE_MS), now, 50));
        assert!(!is_row_in_flight(&older(now.0 + MAX_LEASE_MS + 1), now, 50));
    }
}
