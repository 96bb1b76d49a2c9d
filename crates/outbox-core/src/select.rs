//! Which rows are sendable now (SPEC §8, `selectSendable`).

use crate::accounts::owns;
use crate::codec::Stored;
use crate::inflight::{in_flight, in_flight_until};
use crate::names::Lookup;
use crate::retry::waits_until;
use crate::row::{send_order, Row, RowState};
use crate::time::Millis;

/// Why a row is not sendable now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unsendable {
    /// `blocked` or `held`.
    Parked,
    /// `nextAttemptAt` is later than now, and the network's return does not make it due
    /// ([`waits_until`]).
    NotYet(Millis),
    /// In flight by another tab, or by an older writer.
    InFlightElsewhere,
    /// Its predecessor still exists and holds it: not blocked, or a blocked link of a
    /// `noMerge` chain.
    WaitsFor(String),
    /// An intent row: converted when its create's receipt arrives, never sent as it is.
    Intent,
}

/// Checks one row against §8 rules 1–4. `holds` answers whether a row id is stored and,
/// if so, whether that row holds its successors ([`holds_successors`]). `online_since`: when
/// the network last came back (§10), if the caller knows.
pub fn check_sendable(
    row: &Row,
    tab_id: &str,
    now: Millis,
    lease_ms: i64,
    online_since: Option<Millis>,
    holds: impl Fn(&str) -> Option<bool>,
) -> Result<(), Unsendable> {
    if matches!(row.state, RowState::Blocked | RowState::Held) {
        return Err(Unsendable::Parked);
    }
    if let Some(at) = waits_until(row, now, online_since) {
        return Err(Unsendable::NotYet(at));
    }
    if in_flight(row, now, lease_ms).by_other_than(tab_id) {
        return Err(Unsendable::InFlightElsewhere);
    }
    if let Some(pred) = &row.successor_of {
        // §8 rule 3. A blocked ordinary row lets its successor go (the newer state does not
        // need the rejected one), but a `noMerge` chain is sent strictly in order: a failed
        // link holds the rest of its scope until the user retries or discards it (§7).
        if holds(pred).is_some_and(|held| held || row.no_merge) {
            return Err(Unsendable::WaitsFor(pred.clone()));
        }
    }
    if row.is_intent() {
        return Err(Unsendable::Intent);
    }
    Ok(())
}

/// The sendable rows of `stored`, in `(savedAt, id)` order ([`select`]).
#[must_use]
pub fn select_sendable<'a>(
    stored: &'a [Stored],
    tab_id: &str,
    now: Millis,
    lease_ms: i64,
    online_since: Option<Millis>,
) -> Vec<&'a Row> {
    select(stored, tab_id, now, lease_ms, online_since).sendable
}

/// What [`select`] finds among one owner's rows at `now`.
#[derive(Clone, Debug, PartialEq)]
pub struct Selection<'a> {
    /// The rows sendable now, in `(savedAt, id)` order.
    pub sendable: Vec<&'a Row>,
    /// The earliest instant after `now` at which a row not sendable now may become
    /// sendable (§8 "when to flush next"): a row's `nextAttemptAt`, the end of another
    /// tab's lease. Rows that wait for something other than time (parked, intents,
    /// successors held back) do not count.
    pub next_due_at: Option<Millis>,
}

/// Sorts `stored` (one owner's rows) by §8: what is sendable now, and when to look again.
/// A predecessor is judged by [`predecessor_holds`], as the claim judges it.
#[must_use]
pub fn select<'a>(
    stored: &'a [Stored],
    tab_id: &str,
    now: Millis,
    lease_ms: i64,
    online_since: Option<Millis>,
) -> Selection<'a> {
    let index = stored_index(stored);
    let mut sendable = Vec::new();
    let mut next_due_at = None;
    for r in stored.iter().filter_map(Stored::row) {
        let holds = |id: &str| index.get(id).and_then(|p| predecessor_holds(&r.owner, p));
        let due = match check_sendable(r, tab_id, now, lease_ms, online_since, holds) {
            Ok(()) => {
                sendable.push(r);
                None
            }
            Err(Unsendable::NotYet(at)) => Some(at),
            Err(Unsendable::InFlightElsewhere) => in_flight_until(r, now, lease_ms),
            Err(_) => None,
        };
        if let Some(due) = due {
            next_due_at = Some(next_due_at.map_or(due, |n: Millis| n.min(due)));
        }
    }
    sort_rows(&mut sendable);
    Selection { sendable, next_due_at }
}

/// Whether a stored predecessor holds its successors back (§8 rule 3): every row does
/// except a blocked one, and a blocked `noMerge` row still does (its chain keeps order).
#[must_use]
pub fn holds_successors(pred: &Row) -> bool {
    pred.state != RowState::Blocked || pred.no_merge
}

/// The one rule for a successor of `owner` meeting its stored predecessor `pred` (§8 rule
/// 3), used by selection and by the claim alike: `None` when `pred` is no predecessor of
/// this owner's (§11: a row whose owner does not read as this owner, decodable or not, is
/// invisible: the owner's reads never list it, so selection could not see it either),
/// else whether it holds the successor. An undecodable value of this owner holds it: what
/// cannot be read is never overtaken (§3).
#[must_use]
pub fn predecessor_holds(owner: &str, pred: &Stored) -> Option<bool> {
    match pred {
        Stored::Row(p) => owns(owner, p).then(|| holds_successors(p)),
        Stored::Undecodable(u) => (u.owner.as_deref() == Some(owner)).then_some(true),
    }
}

/// Every stored value by its id, for [`predecessor_holds`]: a [`Lookup`] (a list sorted by
/// id and searched by halves, `O(log n)` a look-up), not a hash map. The planner uses one
/// kind of collection where it can: each hash map type was its own copy of the hash table's
/// code in the wasm module (issue 35).
#[derive(Clone, Debug)]
pub struct StoredIndex<'a> {
    stored: &'a [Stored],
    by_id: Lookup<'a>,
}

impl<'a> StoredIndex<'a> {
    /// The stored value with this id; the last one listed when two share it (as a map
    /// built from the list in order keeps).
    #[must_use]
    pub fn get(&self, id: &str) -> Option<&'a Stored> {
        self.by_id.get(id).map(|at| &self.stored[at])
    }

    /// True when some stored value has this id.
    #[must_use]
    pub fn contains_key(&self, id: &str) -> bool {
        self.get(id).is_some()
    }
}

/// Indexes every stored value by its id, for [`predecessor_holds`].
#[must_use]
pub fn stored_index(stored: &[Stored]) -> StoredIndex<'_> {
    let by_id = Lookup::new(stored.iter().map(|s| match s {
        Stored::Row(r) => Some(r.id.as_str()),
        Stored::Undecodable(u) => u.id.as_deref(),
    }));
    StoredIndex { stored, by_id }
}

/// Sorts rows by `(savedAt, id)` ([`crate::row::send_order`]).
pub fn sort_rows(rows: &mut [&Row]) {
    crate::sort::stable_by(rows, |a, b| send_order(a, b));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_index_finds_every_id_and_keeps_the_last_of_two() {
        let raw = |id: &str, n: i64| json!({"id": id, "owner": "o", "n": n});
        let stored: Vec<Stored> = [raw("b", 1), raw("a", 2), raw("c", 3), raw("a", 4), json!({"owner": "o"})]
            .iter()
            .map(Stored::from_value)
            .collect();
        let index = stored_index(&stored);
        let n = |id: &str| match index.get(id) {
            Some(Stored::Undecodable(u)) => u.raw["n"].as_i64(),
            _ => None,
        };
        assert_eq!((n("a"), n("b"), n("c")), (Some(4), Some(1), Some(3)));
        assert!(!index.contains_key("d") && !index.contains_key("") && index.contains_key("c"));
    }
}
