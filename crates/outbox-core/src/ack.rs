//! Applying the answer, only while the claim is still mine (SPEC §6). A revision conflict
//! (§9) is planned by [`crate::conflict`].

use crate::accounts::{in_scope, in_scope_copied, owns};
use crate::codec::decode;
use crate::intent::holds_intent;
use crate::outcome::Outcome;
use crate::outcome::{usable_actual_revision, REVISION_UNKNOWN};
use crate::plan::{ReplacePlan, Scope};
use crate::records::reconcile_for;
use crate::retry::Backoff;
use crate::row::{chain_order_rows, find_stored, Row, RowState, Ticket};
use crate::time::Millis;
use serde_json::Value;

/// Kept at its old path for callers written before [`crate::conflict`] existed.
pub use crate::conflict::conflict_successor;

/// The random inputs an ACK may need.
#[derive(Clone, Debug, PartialEq)]
pub struct AckDraws {
    /// Jitter draw in `[0, 1)` for the backoff.
    pub random: f64,
    /// A fresh operation id for a conflict successor.
    pub new_id: String,
}

/// What applying an answer comes to.
#[derive(Clone, Debug, PartialEq)]
#[must_use]
pub enum AckDecision {
    /// The claim is mine: carry out this replace.
    Apply {
        /// The replace.
        plan: ReplacePlan,
        /// The conflict successor written, for a conflict answer.
        successor: Option<Row>,
    },
    /// Row gone, claimed by another tab, older fence or no claim: change nothing.
    NotMine,
    /// A success for a create whose intents are not converted yet (§7): convert them first.
    ConvertFirst(Vec<(Row, Value)>),
}

/// The scopes an ACK of `row` reads: its target (for successors and intents), which holds
/// the row itself while it exists. A claimed row's target never changes (only unsent
/// intents are moved to another target, §7), so the row is found there or is gone: one
/// index read per answer, not a read by id beside it (issue 12: 5 requests per row → 4).
#[must_use]
pub fn ack_scopes(row: &Row) -> Vec<Scope> {
    vec![row.scope()]
}

pub use crate::row::claim_is_mine;

/// Intents of `create` still waiting for conversion (not blocked), each with its stored
/// value, in the order they are converted: an intent after the intent it waits for (an
/// intent that could not be merged waits behind the previous one, [`crate::enqueue`]),
/// otherwise in `(savedAt, id)` order.
///
/// They are the intent rows of the create's own `(owner, target)` scope among
/// `scope_rows` (§11: never another account's rows, whatever `scope_rows` holds). Every
/// intent of a `pending:` target belongs to its one create, also when it waits behind
/// another intent, or behind one already converted in an earlier pass of the same ACK.
#[must_use]
pub fn pending_intents(create: &Row, scope_rows: &[Value]) -> Vec<(Row, Value)> {
    // Only rows of the create's own target are looked at, and an intent's target is a
    // `pending:` one (`Row::is_intent`): under any other target there is none to decode for.
    if create.pending_create_id().is_none() {
        return Vec::new();
    }
    let scoped = in_scope(&create.scope(), scope_rows);
    let mut waiting: Vec<Row> = Vec::new();
    for raw in &scoped {
        let Ok(r) = decode(raw) else { continue };
        if r.is_intent() {
            waiting.push(r);
        }
    }
    // Each intent after the one it waits for. A blocked one is not converted, nor is one it
    // holds (`holds_intent`), nor one after that: they are converted after it (§7). The
    // rows alone are ordered, and each finds its stored value again by its id (the store's
    // key): the enqueue's and the conversion's copy of the chain order, not one more for
    // rows paired with values (issue 35).
    let mut left: Vec<Row> = Vec::new();
    let mut out = Vec::new();
    for r in chain_order_rows(waiting) {
        let Some(raw) = scoped.iter().find(|v| v.get("id").and_then(Value::as_str) == Some(&r.id)) else {
            continue;
        };
        let raw = (*raw).clone();
        let pred = r.successor_of.as_deref().and_then(|p| left.iter().find(|l| l.id == p));
        if pred.is_some_and(|p| holds_intent(p, &r)) || r.state == RowState::Blocked {
            left.push(r);
        } else {
            out.push((r, raw));
        }
    }
    out
}

/// Plans the ACK of `owner`'s row `row_id` with `outcome`. `scope_rows` are the rows read
/// for [`ack_scopes`] (any superset works; only the row and its target scope are used). A
/// row of another owner is [`AckDecision::NotMine`] whatever its claim (§11): the planner
/// does not count on its caller to have checked.
#[allow(clippy::too_many_arguments)] // the answer's four parts, its time, policy and draws
pub fn plan_ack(
    owner: &str,
    row_id: &str,
    scope_rows: &[Value],
    ticket: &Ticket,
    outcome: &Outcome,
    now: Millis,
    backoff: &Backoff,
    draws: &AckDraws,
) -> AckDecision {
    let Some(raw) = find_stored(scope_rows, row_id) else {
        return AckDecision::NotMine;
    };
    let Ok(mut row) = decode(raw) else {
        return AckDecision::NotMine;
    };
    if !owns(owner, &row) || !claim_is_mine(&row, ticket) {
        return AckDecision::NotMine;
    }
    let attempt = row.evidence.as_ref().map_or(1, |e| e.attempt_count.max(1));
    // The app's records follow an answer that ends the attempt, in the ACK's own replace.
    let reconcile = reconcile_for(&row, outcome);
    let mut plan = match outcome {
        Outcome::Success { .. } => {
            let intents = pending_intents(&row, scope_rows);
            if !intents.is_empty() {
                return AckDecision::ConvertFirst(intents);
            }
            let scope = row.scope();
            ReplacePlan {
                expected: in_scope_copied(&scope, scope_rows),
                scopes: vec![Scope::Id(row_id.to_owned()), scope],
                deletes: vec![row.id.clone()],
                ..Default::default()
            }
        }
        Outcome::Conflict { actual_revision } if usable_actual_revision(actual_revision) => {
            let successor = conflict_successor(&row, actual_revision, now, &draws.new_id);
            let mut plan = crate::reissue::reissue_plan(&row, scope_rows, &successor);
            plan.reconcile = reconcile;
            return AckDecision::Apply { plan, successor: Some(successor) };
        }
        // A failure rewrites the row alone; only a success deletes it (above, with its
        // scope). One replace written for every failure (issue 35: one copy of it).
        failure => {
            match failure {
                Outcome::Transient { code, retry_after_ms } => {
                    row.state = RowState::Queued;
                    row.sent_at = None;
                    row.deferred_at = Some(now);
                    row.next_attempt_at = Some(backoff.next_attempt_at(now, attempt, draws.random, *retry_after_ms));
                    set_error(&mut row, code.clone());
                    expire(&mut row, now);
                }
                Outcome::Auth => {
                    row.state = RowState::Held;
                    row.sent_at = None;
                    row.held_at = Some(now);
                    row.deferred_at = Some(now);
                    set_error(&mut row, Some("AUTH".into()));
                    expire(&mut row, now);
                }
                Outcome::Permanent { code } => block(&mut row, code, now),
                // §9 needs the server's revision: without it a successor would be a blind write.
                _ => block(&mut row, REVISION_UNKNOWN, now),
            }
            crate::plan::rewrite(&row, raw)
        }
    };
    plan.reconcile = reconcile;
    AckDecision::Apply { plan, successor: None }
}

/// Quarantines the row with `code` (§6 permanent rejection).
fn block(row: &mut Row, code: &str, now: Millis) {
    row.state = RowState::Blocked;
    row.sent_at = None;
    row.blocked_at = Some(now);
    row.blocked_code = Some(code.to_owned());
    set_error(row, Some(code.to_owned()));
    expire(row, now);
}

/// Records the code of this answer as `evidence.lastErrorCode` (§6). An answer without a
/// code clears it: the code describes the latest failure, and keeping an older one would
/// report a failure that is no longer the current one.
fn set_error(row: &mut Row, code: Option<String>) {
    if let Some(ev) = row.evidence.as_mut() {
        ev.last_error_code = code;
        crate::names::remove_in_order(&mut ev.extra, "lastErrorCode"); // a stored code of a shape not read as one
    }
}

/// Expires the claim (`expiresAt = now`) and keeps its fence: the fence only grows (§6).
fn expire(row: &mut Row, now: Millis) {
    if let Some(c) = row.claim.as_mut() {
        c.expires_at = now;
    }
}
