//! Intent rows (SPEC §7): converting an edit of a not-yet-created record into the real
//! request once the create's receipt is known, or quarantining it.

use crate::accounts::in_scope;
use crate::codec::{decode, encode, refingerprint};
use crate::plan::{ReplacePlan, Scope};
use crate::row::claim_is_mine;
use crate::row::{chain_order_rows, find_stored, Row, RowState, Ticket};
use crate::time::Millis;
use serde_json::Value;

/// Quarantine code: the app's `prepareSuccessor` port is missing or failed.
pub const SUCCESSOR_UNPREPARED: &str = "SUCCESSOR_UNPREPARED";
/// Quarantine code: the create row vanished and its receipt could not be found.
pub const PREDECESSOR_RECEIPT_UNKNOWN: &str = "PREDECESSOR_RECEIPT_UNKNOWN";

pub use crate::input::Prepared;

/// The intent turned into its real request: same id, kind, `savedAt` and `successorOf`;
/// new target, body, revision and fingerprint; queued.
#[must_use]
pub fn converted(intent: &Row, prepared: &Prepared) -> Row {
    let mut r = intent.clone();
    r.target = prepared.target.clone();
    r.body = prepared.body.clone();
    r.revision = prepared.revision.clone().filter(|v| !v.is_null());
    r.state = RowState::Queued;
    r.blocked_at = None;
    r.blocked_code = None;
    r.next_attempt_at = None;
    refingerprint(&mut r);
    r
}

/// Why a conversion or quarantine was not planned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IntentSkip {
    /// The intent changed or vanished since it was read (coalesced by a newer edit).
    IntentChanged,
    /// The create's claim is no longer this tab's: its new holder converts.
    CreateNotMine,
    /// The row the intent waits for is an intent not converted yet (blocked, or converting
    /// in another task): the intent goes after it, so it is converted after it.
    Waits,
    /// The prepared request is not usable ([`Prepared::is_valid`]); quarantine the intent
    /// with [`SUCCESSOR_UNPREPARED`] instead.
    Unusable,
}

/// Plans the conversion of `intent` (as read before the port was asked) given the rows
/// re-read for [`convert_scopes`]. With `create` (`Some((id, ticket))`), the create row
/// must still carry this tab's claim (§7: the tab holding the create's claim converts).
///
/// # Errors
/// [`IntentSkip`] when the conversion must not be written.
pub fn plan_convert(
    intent_raw: &Value,
    create: Option<(&str, &Ticket)>,
    current: &[Value],
    prepared: &Prepared,
) -> Result<ReplacePlan, IntentSkip> {
    if !prepared.is_valid() {
        return Err(IntentSkip::Unusable);
    }
    let read = decode(intent_raw).map_err(|_| IntentSkip::IntentChanged)?;
    let now_raw = find_stored(current, &read.id).ok_or(IntentSkip::IntentChanged)?;
    // The conversion of the link before it may have re-pointed it since it was read (below):
    // that is still the intent as read.
    if !same_but_successor_of(now_raw, intent_raw) {
        return Err(IntentSkip::IntentChanged);
    }
    let intent = decode(now_raw).map_err(|_| IntentSkip::IntentChanged)?;
    let mut scopes = vec![Scope::Id(intent.id.clone())];
    let mut expected = vec![now_raw.clone()];
    if let Some((create_id, ticket)) = create {
        let raw = find_stored(current, create_id).ok_or(IntentSkip::CreateNotMine)?;
        let row = decode(raw).map_err(|_| IntentSkip::CreateNotMine)?;
        if !claim_is_mine(&row, ticket) {
            return Err(IntentSkip::CreateNotMine);
        }
        scopes.push(Scope::Id(create_id.to_owned()));
        expected.push(raw.clone());
    }
    // §7/§8: a chain of intents is converted in its order, never past a link that is still
    // an intent (an orphan whose lookup answered later, say), nor past a blocked one that
    // holds it (see [`holds_intent`]).
    let pending = Scope::target(&intent.owner, &intent.target);
    let in_pending = in_scope(&pending, current);
    let waits_for = |id: &str| {
        for raw in &in_pending {
            match decode(raw) {
                Ok(r) if r.id == id => return Some(r),
                _ => {}
            }
        }
        None
    };
    if intent.successor_of.as_deref().and_then(waits_for).is_some_and(|p| holds_intent(&p, &intent)) {
        return Err(IntentSkip::Waits);
    }
    // The intents that wait for this one wait for what it waited for once it leaves the
    // `pending:` scope: the chain's next link is then a head of its own (converted, or
    // found by the vanished-predecessor path, after this one in the record's scope).
    let mut puts = Vec::new();
    let mut others: Vec<Value> = Vec::new();
    for raw in &in_pending {
        if !expected.contains(raw) {
            others.push((*raw).clone());
        }
    }
    for raw in &others {
        let Ok(mut next) = decode(raw) else { continue };
        if next.successor_of.as_deref() == Some(intent.id.as_str()) && next.is_intent() {
            next.successor_of = intent.successor_of.clone();
            puts.push(encode(&next));
        }
    }
    // The replace compares every row of the scopes it names (§4).
    expected.extend(others);
    let mut row = converted(&intent, prepared);
    // §7/§8: the real request joins its record's scope, where rows may already wait (an
    // edit converted earlier and deferred, or one made with the server id by a tab that
    // had the receipt). It goes after them, never past them: it waits for the scope's last
    // row in chain order. With nothing there it keeps waiting for its create.
    let target = Scope::target(&intent.owner, &prepared.target);
    let mut in_target: Vec<Value> = Vec::new();
    let mut waiting = Vec::new();
    for raw in in_scope(&target, current) {
        if expected.contains(raw) {
            continue;
        }
        in_target.push(raw.clone());
        let Ok(r) = decode(raw) else { continue };
        if r.successor_of.as_deref() != Some(intent.id.as_str()) {
            waiting.push(r);
        }
    }
    if let Some(last) = chain_order_rows(waiting).last() {
        row.successor_of = Some(last.id.clone());
    }
    scopes.push(target);
    scopes.push(pending);
    expected.extend(in_target);
    puts.insert(0, encode(&row));
    Ok(ReplacePlan { scopes, expected, puts, ..Default::default() })
}

/// Whether `pred`, the row `intent` waits for, keeps it from being converted: an intent not
/// converted yet, unless it is blocked — a blocked row holds its successor only in a chain
/// of commands (either of them `noMerge`), as for sending (§8).
#[must_use]
pub fn holds_intent(pred: &Row, intent: &Row) -> bool {
    pred.is_intent() && (pred.state != RowState::Blocked || pred.no_merge || intent.no_merge)
}

/// Whether two stored rows are equal but for `successorOf`.
fn same_but_successor_of(a: &Value, b: &Value) -> bool {
    const FIELD: &str = "successorOf";
    let others = |m: &serde_json::Map<String, Value>| m.len() - usize::from(m.contains_key(FIELD));
    a.as_object()
        .zip(b.as_object())
        .is_some_and(|(a, b)| others(a) == others(b) && a.iter().all(|(k, v)| k == FIELD || b.get(k) == Some(v)))
}

/// The scopes a conversion re-reads: the intent, its create row if given, the scope of
/// the record the prepared request targets, and the intent's own `pending:` scope (the
/// intent it waits for, the intents that wait for it).
#[must_use]
pub fn convert_scopes(intent: &Row, create_id: Option<&str>, prepared: &Prepared) -> Vec<Scope> {
    let mut s = vec![Scope::Id(intent.id.clone())];
    if let Some(c) = create_id {
        s.push(Scope::Id(c.to_owned()));
    }
    s.push(Scope::target(&intent.owner, &prepared.target));
    s.push(Scope::target(&intent.owner, &intent.target));
    s
}

/// The scope a quarantine re-reads: the intent alone.
#[must_use]
pub fn block_scopes(intent: &Row) -> Vec<Scope> {
    vec![Scope::Id(intent.id.clone())]
}

/// Plans quarantining `intent` with `code` (kept as it is otherwise). `None` when it
/// changed since it was read, or already carries that code.
#[must_use]
pub fn plan_block_intent(intent_raw: &Value, current: &[Value], code: &str, now: Millis) -> Option<ReplacePlan> {
    let mut intent = decode(intent_raw).ok()?;
    if find_stored(current, &intent.id)? != intent_raw {
        return None;
    }
    if intent.state == RowState::Blocked && intent.blocked_code.as_deref() == Some(code) {
        return None;
    }
    intent.state = RowState::Blocked;
    intent.blocked_at = Some(now);
    intent.blocked_code = Some(code.to_owned());
    Some(crate::plan::rewrite(&intent, intent_raw))
}

/// The create row an intent waits for: its `successorOf`, followed past the earlier
/// intents of its target it is chained behind (§7: an intent that could not absorb the one
/// before it, or a `noMerge` one, waits for it). `row` looks a stored row up by id. `None`
/// for a row without `successorOf`. A re-issued create keeps its `pending:` target under a
/// new id, so the target alone does not name it; the chain does.
#[must_use]
pub fn awaited_create<'a>(intent: &'a Row, row: impl Fn(&str) -> Option<&'a Row>) -> Option<&'a str> {
    let mut awaited = intent.successor_of.as_deref()?;
    // Bounded: a cycle, which no planner writes, ends the walk.
    for _ in 0..1024 {
        match row(awaited) {
            Some(earlier) if earlier.is_intent() && earlier.target == intent.target => {
                match earlier.successor_of.as_deref() {
                    Some(p) => awaited = p,
                    None => break,
                }
            }
            _ => break,
        }
    }
    Some(awaited)
}

/// True for an intent the flush must resolve through the vanished-predecessor path: its
/// create row is gone, and it is not quarantined for another reason.
#[must_use]
pub fn is_orphan_intent(row: &Row, create_exists: bool) -> bool {
    row.is_intent()
        && !create_exists
        && match row.state {
            RowState::Blocked => row.blocked_code.as_deref() == Some(PREDECESSOR_RECEIPT_UNKNOWN),
            RowState::Held => false,
            RowState::Queued | RowState::Sending => true,
        }
}

#[cfg(test)]
mod awaited_tests {
    use super::*;
    use crate::codec::decode;
    use serde_json::json;

    fn row(v: serde_json::Value) -> Row {
        decode(&v).unwrap()
    }

    #[test]
    fn s7_the_awaited_create_is_found_past_earlier_intents_and_no_further() {
        let base = |id: &str, kind: &str, target: &str, after: Option<&str>| {
            let mut v = json!({"id": id, "owner": "o", "target": target, "kind": kind, "body": [], "savedAt": 1,
                               "state": "queued"});
            if let Some(a) = after {
                v["successorOf"] = json!(a);
            }
            row(v)
        };
        // A create that itself waits for something else (as an older writer may leave it).
        let rows = [
            base("c", "create", "pending:c", Some("z")),
            base("i1", "update", "pending:c", Some("c")),
            base("i2", "update", "pending:c", Some("i1")),
            base("other", "update", "pending:q", Some("c")),
        ];
        let find = |id: &str| rows.iter().find(|r| r.id == id);
        assert_eq!(awaited_create(&rows[2], find), Some("c"), "past i1, stops at the create");
        assert_eq!(awaited_create(&rows[1], find), Some("c"));
        // An intent of another target in between is not followed.
        let odd = base("i3", "update", "pending:c", Some("other"));
        assert_eq!(awaited_create(&odd, find), Some("other"));
        assert_eq!(awaited_create(&base("n", "update", "pending:c", None), find), None);
    }

    fn intent(id: &str, after: &str, state: &str, no_merge: bool) -> serde_json::Value {
        json!({"id": id, "owner": "o", "target": "pending:c", "kind": "update", "body": {"n": id}, "savedAt": 1,
               "state": state, "successorOf": after, "noMerge": no_merge})
    }

    #[test]
    fn s7_a_blocked_intent_holds_the_next_one_only_in_a_chain_of_commands() {
        let next = |no_merge| row(intent("i2", "i1", "queued", no_merge));
        for (pred_state, pred_cmd, next_cmd, holds) in [
            ("queued", false, false, true),
            ("blocked", false, false, false),
            ("blocked", true, false, true),
            ("blocked", false, true, true),
            ("blocked", true, true, true),
        ] {
            let pred = row(intent("i1", "c", pred_state, pred_cmd));
            assert_eq!(holds_intent(&pred, &next(next_cmd)), holds, "{pred_state} {pred_cmd} {next_cmd}");
        }
        let converted = row(json!({"id": "i1", "owner": "o", "target": "rec:1", "kind": "update", "body": {},
                                   "savedAt": 1, "state": "queued"}));
        assert!(!holds_intent(&converted, &next(true)), "a converted row is no intent");
    }

    #[test]
    fn s7_an_intent_changed_since_it_was_read_is_not_converted_but_one_re_pointed_is() {
        let prepared = Prepared { target: "rec:1".into(), body: json!({"n": 1}), revision: None };
        let read = intent("i2", "i1", "queued", false);
        let mut edited = read.clone();
        edited["body"] = json!({"n": "newer"});
        assert_eq!(plan_convert(&read, None, &[edited], &prepared), Err(IntentSkip::IntentChanged));
        let mut re_pointed = read.clone();
        re_pointed["successorOf"] = json!("c");
        let plan = plan_convert(&read, None, &[re_pointed.clone()], &prepared).expect("still the intent as read");
        assert_eq!(plan.expected, vec![re_pointed.clone()]);
        assert_eq!(plan.puts[0]["successorOf"], json!("c"));
        // Read without a predecessor, re-pointed to one since.
        let mut alone = read.clone();
        alone.as_object_mut().unwrap().shift_remove("successorOf");
        assert!(plan_convert(&alone, None, &[re_pointed], &prepared).is_ok());
        let mut more = read.clone();
        more["note"] = json!(1);
        assert_eq!(plan_convert(&read, None, &[more], &prepared), Err(IntentSkip::IntentChanged), "a field added");
    }
}
