//! Where a claim batch's rows are in the owner's queue, so that its transaction re-reads
//! them as a few stretches of the `[owner, savedAt]` index ([`Scope::Span`]) instead of
//! one request per row (issue 35: a request costs more than the row it returns).
//!
//! A stretch is read as "the first `count` rows from `savedAt` `from` to `to`": the rows the
//! round found there, counted from the first one with that `savedAt` (rows saved in the same
//! millisecond before it included). A row whose `savedAt` is unchanged is found there unless
//! rows were saved into the stretch since the round (another tab's clock behind this one's)
//! or the driver's read left a row of the index out: they push the last ones out. A row not
//! found is stale, as it would be if changed or gone, so a stretch never claims on rows a
//! read by key would not have; but it may leave one unclaimed that was there unchanged. So
//! such a miss has the queue read again before the flush ends, and the row's next claim in
//! the flush reads it by key (`Memory::by_id`): it is sent in the same flush.

use crate::plan::Scope;
use serde_json::Value;

/// Rows between two of a batch's rows (in the round's order) read with them rather than
/// starting another stretch: each stretch is one request, each row in it a row's copy.
const GAP: usize = 4;

/// A row's place in the round's read of the owner's queue (the index's order).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Place {
    /// Its position in the round's rows.
    pub(super) at: usize,
    /// Rows before it in the round with the same `savedAt`.
    pub(super) ties: usize,
    /// Its `savedAt`, as stored (a decodable row's may have a fraction).
    pub(super) saved_at: f64,
}

/// The place of the round's row `at` (`None` if its `savedAt` is not a number: not in the
/// index). Its ties are counted up to `GAP` + 1: more and it leads no stretch anyway.
pub(super) fn place(rows: &[Value], at: usize) -> Option<Place> {
    let saved_at = rows[at].get("savedAt")?.as_f64()?;
    let mut ties = 0;
    while ties <= GAP && ties < at && rows[at - ties - 1].get("savedAt").and_then(Value::as_f64) == Some(saved_at) {
        ties += 1;
    }
    Some(Place { at, ties, saved_at })
}

/// The scopes that re-read `rows` (each a row's id and its place in the round, if known),
/// in their order: a [`Scope::Span`] per stretch of rows each at most [`GAP`] places after
/// the one before; by id a row whose place is not known, or that would start a stretch
/// behind more than [`GAP`] rows of its millisecond (a stretch would read mostly rows it
/// does not need). A batch takes its rows in the round's order, so a stretch breaks where
/// the order goes round, or back to a predecessor.
pub(super) fn stretches(owner: &str, rows: &[(&String, Option<Place>)]) -> Vec<Scope> {
    let mut scopes = Vec::new();
    // The stretch being gathered: its first and last place.
    let mut run: Option<(Place, Place)> = None;
    for (id, place) in rows {
        match (place, &mut run) {
            (Some(p), Some((_, last))) if last.at <= p.at && p.at <= last.at + GAP => *last = *p,
            (Some(p), _) if p.ties <= GAP => {
                end_stretch(owner, run.take(), &mut scopes);
                run = Some((*p, *p));
            }
            _ => push_id(&mut scopes, id),
        }
    }
    end_stretch(owner, run, &mut scopes);
    scopes
}

/// The scope of a stretch: at most `GAP` ties, then at most `GAP` places from a row to the
/// next.
fn end_stretch(owner: &str, run: Option<(Place, Place)>, scopes: &mut Vec<Scope>) {
    if let Some((first, last)) = run {
        let count = (last.at - first.at + 1 + first.ties) as u32;
        scopes.push(Scope::Span { owner: owner.to_owned(), from: first.saved_at, to: last.saved_at, count });
    }
}

fn push_id(scopes: &mut Vec<Scope>, id: &str) {
    let s = Scope::Id(id.to_owned());
    if !scopes.contains(&s) {
        scopes.push(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memstore::MemStore;
    use serde_json::json;

    /// The owner's queue: one row per `savedAt` given, ids `r0`, `r1`, … in that order.
    fn queue(saved: &[f64]) -> (Vec<Value>, Vec<String>) {
        let mut rows = Vec::new();
        let mut ids = Vec::new();
        for (i, t) in saved.iter().enumerate() {
            ids.push(format!("r{i:02}"));
            rows.push(json!({"id": ids[i], "owner": "o", "target": format!("w:{i}"), "savedAt": t}));
        }
        (rows, ids)
    }

    fn span(from: f64, to: f64, count: u32) -> Scope {
        Scope::Span { owner: "o".into(), from, to, count }
    }

    /// The scopes for the rows at `picked` of the queue, and the ids they read in it.
    fn read(saved: &[f64], picked: &[usize]) -> (Vec<Scope>, Vec<String>) {
        let (rows, ids) = queue(saved);
        let asked: Vec<(&String, Option<Place>)> = picked.iter().map(|&i| (&ids[i], place(&rows, i))).collect();
        let scopes = stretches("o", &asked);
        let mut store = MemStore::new();
        for r in &rows {
            store.seed(r.clone());
        }
        let mut got: Vec<String> = store.read(&scopes).iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect();
        got.sort();
        (scopes, got)
    }

    #[test]
    fn rows_near_each_other_are_read_as_one_stretch_and_far_ones_as_another() {
        let saved: Vec<f64> = (0..20).map(|i| f64::from(100 + i)).collect();
        // r01, r03 and r06 (up to `GAP` − 1 rows between), then r11 (4 rows after r06).
        let (scopes, got) = read(&saved, &[1, 3, 6, 11]);
        assert_eq!(scopes, [span(101.0, 106.0, 6), span(111.0, 111.0, 1)]);
        assert_eq!(got, ["r01", "r02", "r03", "r04", "r05", "r06", "r11"]);
        // A row just within reach joins: r06 and r10; r11 does not.
        assert_eq!(read(&saved, &[6, 10]).0, [span(106.0, 110.0, 5)]);
        assert_eq!(read(&saved, &[6, 11]).0, [span(106.0, 106.0, 1), span(111.0, 111.0, 1)]);
        // A row before the stretch's last one starts another (the order went round).
        assert_eq!(read(&saved, &[10, 6]).0, [span(110.0, 110.0, 1), span(106.0, 106.0, 1)]);
        assert_eq!(read(&saved, &[6, 10, 11]).0, [span(106.0, 111.0, 6)]);
        // The same row twice is read once.
        assert_eq!(read(&saved, &[4, 4]).0, [span(104.0, 104.0, 1)]);
    }

    #[test]
    fn a_stretch_counts_the_rows_saved_in_its_first_millisecond_before_it() {
        // r00..r03 share a millisecond; r04 is the next.
        let saved = [7.0, 7.0, 7.0, 7.0, 8.0, 9.5];
        let (scopes, got) = read(&saved, &[2, 4]);
        assert_eq!(scopes, [span(7.0, 8.0, 5)], "r00 and r01 come first in the index: counted");
        assert_eq!(got, ["r00", "r01", "r02", "r03", "r04"]);
        // The rows after the last one in its millisecond are not read.
        assert_eq!(read(&saved, &[1]).1, ["r00", "r01"]);
        // A `savedAt` with a fraction bounds the stretch as stored.
        assert_eq!(read(&saved, &[4, 5]), (vec![span(8.0, 9.5, 2)], vec!["r04".to_owned(), "r05".to_owned()]));
    }

    #[test]
    fn a_row_behind_many_of_its_millisecond_is_read_by_id_unless_a_stretch_reaches_it() {
        let mut saved = vec![5.0; GAP + 3];
        saved.push(6.0);
        // r(GAP + 1) has `GAP` + 1 rows before it at 5: alone, by id.
        let last_tie = GAP + 1;
        let (scopes, got) = read(&saved, &[last_tie]);
        assert_eq!(scopes, [Scope::Id(format!("r{last_tie:02}"))]);
        assert_eq!(got.len(), 1);
        // One before it within reach leads the stretch: r(GAP) has `GAP` ties.
        assert_eq!(read(&saved, &[GAP, last_tie]).0, [span(5.0, 5.0, (GAP + 2) as u32)]);
        // Nor after a row behind it.
        let (scopes, _) = read(&saved, &[GAP + 3, last_tie]);
        assert_eq!(scopes, [Scope::Id(format!("r{last_tie:02}")), span(6.0, 6.0, 1)]);
    }

    #[test]
    fn a_row_the_round_did_not_place_is_read_by_id() {
        let id = "p".to_owned();
        assert_eq!(stretches("o", &[(&id, None), (&id, None)]), [Scope::Id("p".into())]);
        // A `savedAt` that is no number gives no place; ties are equal numbers, as the
        // index compares them.
        let rows = [json!({"savedAt": 3}), json!({"savedAt": 3.0}), json!({"savedAt": 3.5}), json!({"savedAt": "3"})];
        assert_eq!(place(&rows, 0), Some(Place { at: 0, ties: 0, saved_at: 3.0 }));
        assert_eq!(place(&rows, 1), Some(Place { at: 1, ties: 1, saved_at: 3.0 }));
        assert_eq!(place(&rows, 2), Some(Place { at: 2, ties: 0, saved_at: 3.5 }));
        assert_eq!(place(&rows, 3), None);
        // Ties are counted up to one more than a stretch's first row may have.
        let many = vec![json!({"savedAt": 1}); GAP + 5];
        assert_eq!(place(&many, GAP + 4).map(|p| p.ties), Some(GAP + 1));
        assert_eq!(place(&many, GAP).map(|p| p.ties), Some(GAP));
    }
}
