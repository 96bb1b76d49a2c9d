//! Observability (SPEC §12): counts by state from stored rows, and this tab's counters.

use crate::accounts::stored_owner;
use crate::codec::decode;
use crate::outcome::{Outcome, OutcomeClass};
use crate::row::RowState;
use crate::time::Millis;
use serde::Serialize;
use serde_json::Value;

/// Attempts of this tab since it opened, by outcome class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Attempts {
    /// Successes (replays included).
    pub success: u64,
    /// Transient failures.
    pub transient: u64,
    /// Auth answers.
    pub auth: u64,
    /// Permanent rejections.
    pub permanent: u64,
    /// Revision conflicts.
    pub conflict: u64,
}

/// This tab's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counters {
    /// Attempts by class.
    pub attempts: Attempts,
    /// Successes the gate replayed from its ledger.
    pub replays: u64,
    /// Conflict successors written.
    pub conflicts: u64,
    /// Rows this tab's answers quarantined (`blocked`): a permanent answer, or a conflict
    /// without a usable revision (§9), counted when the row is written blocked — not an
    /// answer that came too late to change its row.
    pub permanent_failures: u64,
}

impl Counters {
    /// Counts one answered attempt.
    pub fn record(&mut self, outcome: &Outcome) {
        let a = &mut self.attempts;
        match outcome.class() {
            OutcomeClass::Success => a.success += 1,
            OutcomeClass::Transient => a.transient += 1,
            OutcomeClass::Auth => a.auth += 1,
            OutcomeClass::Permanent => a.permanent += 1,
            OutcomeClass::Conflict => a.conflict += 1,
        }
        if matches!(outcome, Outcome::Success { replayed: true, .. }) {
            self.replays += 1;
        }
    }
}

/// Decodable rows by stored state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ByState {
    /// `queued`.
    pub queued: u64,
    /// `sending`.
    pub sending: u64,
    /// `held`.
    pub held: u64,
    /// `blocked`.
    pub blocked: u64,
}

/// `metrics(owner?)`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Metrics {
    /// Decodable rows.
    pub total: u64,
    /// Decodable rows by state.
    pub by_state: ByState,
    /// Age of the oldest queued row at `now`, ms (`null` when none).
    pub oldest_queued_age_ms: Option<i64>,
    /// Undecodable rows.
    pub undecodable: u64,
    /// This tab's attempts by class.
    pub attempts: Attempts,
    /// Replayed successes.
    pub replays: u64,
    /// Conflict successors written.
    pub conflicts: u64,
    /// Permanent rejections.
    pub permanent_failures: u64,
}

/// Computes metrics over `rows` (every stored value, or one owner's), for `owner` if given.
/// Without an owner, undecodable rows whose owner cannot be read count too.
#[must_use]
pub fn compute(rows: &[Value], owner: Option<&str>, counters: &Counters, now: Millis) -> Metrics {
    let mut m = Metrics {
        attempts: counters.attempts,
        replays: counters.replays,
        conflicts: counters.conflicts,
        permanent_failures: counters.permanent_failures,
        ..Metrics::default()
    };
    let mut oldest: Option<Millis> = None;
    for raw in rows {
        match decode(raw) {
            Ok(r) => {
                if owner.is_some_and(|o| o != r.owner) {
                    continue;
                }
                m.total += 1;
                let s = &mut m.by_state;
                match r.state {
                    RowState::Queued => {
                        s.queued += 1;
                        oldest = Some(oldest.map_or(r.saved_at, |o| o.min(r.saved_at)));
                    }
                    RowState::Sending => s.sending += 1,
                    RowState::Held => s.held += 1,
                    RowState::Blocked => s.blocked += 1,
                }
            }
            Err(_) => {
                if owner.is_none() || owner == stored_owner(raw) {
                    m.undecodable += 1;
                }
            }
        }
    }
    m.oldest_queued_age_ms = oldest.map(|o| now.since(o).max(0));
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn s12_each_answer_counts_once_in_its_class() {
        let mut c = Counters::default();
        let answers = [
            Outcome::success(json!({})),
            Outcome::Success { receipt: json!({}), replayed: true },
            Outcome::transient("NETWORK"),
            Outcome::transient("NETWORK"),
            Outcome::Auth,
            Outcome::Permanent { code: "INVALID".into() },
            Outcome::Conflict { actual_revision: json!(3) },
        ];
        for a in &answers {
            c.record(a);
        }
        let a = c.attempts;
        assert_eq!((a.success, a.transient, a.auth, a.permanent, a.conflict), (2, 2, 1, 1, 1));
        assert_eq!(c.replays, 1);
        assert_eq!((c.conflicts, c.permanent_failures), (0, 0), "rows count when written, not when answered");
    }

    #[test]
    fn s12_metrics_count_rows_by_state_and_undecodable_ones_by_owner() {
        let row = |id: &str, owner: &str, state: &str, saved: i64| json!({"id": id, "owner": owner, "target": "t", "kind": "update", "body": {}, "savedAt": saved, "state": state});
        let rows = vec![
            row("q1", "alice", "queued", 1_000),
            row("q2", "alice", "queued", 400),
            row("s", "alice", "sending", 10),
            row("h", "alice", "held", 10),
            row("b", "alice", "blocked", 10),
            row("bob", "bob", "queued", 5),
            json!({"id": "u1", "owner": "alice", "kind": "???"}),
            json!({"id": "u2", "owner": "bob", "kind": "???"}),
            json!({"id": "u3"}),
        ];
        let mut c = Counters::default();
        c.record(&Outcome::Auth);
        c.record(&Outcome::Success { receipt: json!({}), replayed: true });
        c.record(&Outcome::Permanent { code: "INVALID".into() });
        (c.conflicts, c.permanent_failures) = (2, 1);
        let m = compute(&rows, Some("alice"), &c, Millis(2_000));
        assert_eq!((m.replays, m.conflicts, m.permanent_failures), (1, 2, 1), "this tab's counters");
        assert_eq!(m.total, 5);
        let s = m.by_state;
        assert_eq!((s.queued, s.sending, s.held, s.blocked), (2, 1, 1, 1));
        assert_eq!(m.undecodable, 1, "alice's own undecodable row");
        assert_eq!(m.oldest_queued_age_ms, Some(1_600));
        assert_eq!(m.attempts.auth, 1);
        let all = compute(&rows, None, &c, Millis(2_000));
        assert_eq!((all.total, all.undecodable), (6, 3), "every owner, and rows whose owner cannot be read");
        assert_eq!(all.oldest_queued_age_ms, Some(1_995));
    }
}
