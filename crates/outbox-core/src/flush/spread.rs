//! Where a tab claims in the round's list, so that tabs draining one queue rarely meet
//! (§8 speed: several tabs must not mostly collide on the same rows). Records are moved,
//! never rows: the rows of one record keep their `(savedAt, id)` order, also when they do
//! not name each other in `successorOf` (an older writer's rows), so a record's edits are
//! never sent out of order.

use super::batch::Candidate;
use crate::names::{Lookup, Numbered};
use std::collections::VecDeque;

/// The round's candidates from a random place (`unit` in `[0, 1)`).
pub(super) fn start_anywhere(picked: Vec<Candidate>, unit: f64) -> VecDeque<Candidate> {
    let records = by_record(picked);
    // Below `records.len()` (`unit` < 1), and `flatten` goes round from it anyway.
    let offset = (unit.clamp(0.0, 0.999_999) * records.len() as f64) as usize;
    flatten(records, offset)
}

/// After meeting another tab's claims: the candidates still `there`, from a place in the
/// middle of the longest stretch of them. Every tab walks forward from where it started, so
/// each stretch of rows still there has a tab (maybe) at its start, walking into it: its
/// middle is the place farthest from all of them, and splitting it leaves that tab and this
/// one the same share. `unit` places the start within the stretch's middle half, so two
/// tabs choosing at once rarely pick the same row.
pub(super) fn go_on_elsewhere(list: Vec<Candidate>, there: &Lookup, unit: f64) -> VecDeque<Candidate> {
    // The longest run of consecutive candidates still there, in walking order.
    let (mut best, mut run_start, mut run): ((usize, usize), usize, usize) = ((0, 0), 0, 0);
    for (i, c) in list.iter().enumerate() {
        if there.contains(&c.id) {
            if run == 0 {
                run_start = i;
            }
            run += 1;
            if run > best.1 {
                best = (run_start, run);
            }
        } else {
            run = 0;
        }
    }
    let (start, len) = best;
    let into = (len as f64 * (0.25 + 0.5 * unit.clamp(0.0, 0.999_999))) as usize;
    let first = list.get(start + into.min(len.saturating_sub(1))).map(|c| c.target.clone());
    let mut left = Vec::new();
    for c in list {
        if there.contains(&c.id) {
            left.push(c);
        }
    }
    let records = by_record(left);
    let at = first.and_then(|t| records.iter().position(|r| r[0].target == t));
    flatten(records, at.unwrap_or(0))
}

/// The records' candidates one after another, from record `from` on, then those before it
/// (as `rotate_left(from)` would put them, without its code in the module).
fn flatten(mut records: Vec<Vec<Candidate>>, from: usize) -> VecDeque<Candidate> {
    let n = records.len();
    let mut out = Vec::new();
    for k in 0..n {
        out.append(&mut records[(from + k) % n]);
    }
    out.into()
}

/// The candidates grouped by record, in the order each record first appears.
fn by_record(picked: Vec<Candidate>) -> Vec<Vec<Candidate>> {
    let mut records: Vec<Vec<Candidate>> = Vec::new();
    let mut index = Numbered::default();
    for c in picked {
        match index.get(&c.target) {
            Some(i) => records[i as usize].push(c),
            None => {
                index.insert(c.target.clone(), records.len() as u64);
                records.push(vec![c]);
            }
        }
    }
    records
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list(n: usize) -> Vec<Candidate> {
        (0..n)
            .map(|i| {
                let raw = json!({"id": format!("r{i}"), "owner": "alice", "target": format!("w:{i}"),
                                 "kind": "update", "body": {}, "savedAt": i, "state": "queued"});
                Candidate::new(raw, None).unwrap()
            })
            .collect()
    }

    fn ids(c: &VecDeque<Candidate>) -> Vec<&str> {
        c.iter().map(|c| c.id.as_str()).collect()
    }

    #[test]
    fn s8_after_meeting_another_tab_it_goes_on_in_the_middle_of_the_longest_stretch_left() {
        // r0..r2 and r5 are gone (other tabs sent them); r3, r4 and r6..r9 are left.
        let there = Lookup::new(["r3", "r4", "r6", "r7", "r8", "r9"].into_iter().map(Some));
        // The middle half of r6..r9 is r7..r8: the draw places the start in it.
        assert_eq!(ids(&go_on_elsewhere(list(10), &there, 0.0)), ["r7", "r8", "r9", "r3", "r4", "r6"]);
        assert_eq!(ids(&go_on_elsewhere(list(10), &there, 0.5)), ["r8", "r9", "r3", "r4", "r6", "r7"]);
        assert_eq!(ids(&go_on_elsewhere(list(10), &there, 1.0)), ["r8", "r9", "r3", "r4", "r6", "r7"]);
        assert!(go_on_elsewhere(list(10), &Lookup::default(), 0.5).is_empty(), "nothing left");
        // Of two stretches as long, the first in walking order (the nearer one).
        let there = Lookup::new(["r0", "r1", "r3", "r4"].into_iter().map(Some));
        assert_eq!(ids(&go_on_elsewhere(list(5), &there, 0.0)), ["r0", "r1", "r3", "r4"]);
    }

    #[test]
    fn s8_a_round_starts_at_a_random_record_and_goes_round() {
        assert_eq!(ids(&start_anywhere(list(4), 0.0)), ["r0", "r1", "r2", "r3"]);
        assert_eq!(ids(&start_anywhere(list(4), 0.5)), ["r2", "r3", "r0", "r1"]);
        assert_eq!(ids(&start_anywhere(list(4), 0.99)), ["r3", "r0", "r1", "r2"]);
        assert_eq!(ids(&start_anywhere(list(4), 1.0)), ["r3", "r0", "r1", "r2"]);
        assert!(start_anywhere(Vec::new(), 0.5).is_empty());
    }

    #[test]
    fn s8_a_record_moves_whole_its_rows_in_order() {
        // Two rows of w:1 that do not name each other; the stretch's middle is w:1's second row.
        let mut l = list(4);
        l[2] = Candidate::new(
            json!({"id": "r2", "owner": "alice", "target": "w:1", "kind": "update", "body": {}, "savedAt": 2, "state": "queued"}),
            None,
        )
        .unwrap();
        let there = Lookup::new(["r0", "r1", "r2", "r3"].into_iter().map(Some));
        assert_eq!(ids(&go_on_elsewhere(l, &there, 0.5)), ["r1", "r2", "r3", "r0"]);
    }
}
