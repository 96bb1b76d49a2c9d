//! Enqueue: coalescing, successors, intents, merge into an unsent create, cancel (SPEC §7).
//!
//! # Bodies that are not objects
//!
//! A body may be any JSON value (§3): an object, or a JSON Patch array, a string, a
//! number. Coalescing by shallow merge (§7) is defined for objects only: the later field
//! wins, and for a full record or a partial one nothing is lost. For any other body the
//! library cannot know what combining two of them means (two JSON Patch documents must
//! both be applied, in order; a whole-value array replaces), and a wrong guess loses an
//! edit or creates a record from a patch. So a non-object body is **never merged, in
//! either direction**, and nothing is dropped either: the operations are sent one after
//! another, as they would have been online.
//!
//! - **Update over updates not in flight.** Updates whose bodies merge with the new one
//!   (both objects) are absorbed as usual. The last update that does not merge (either
//!   body not an object) stays, with every row before it, and the new row becomes its
//!   successor (`successorOf`), so the scope forms a chain sent strictly in order. Object
//!   updates that come after it still coalesce among themselves. A delete replaces
//!   everything not in flight whatever the bodies (the record is gone).
//! - **Update of a never-attempted or blocked create.** It is merged into the create only
//!   when the create's body, the body of every edit folded with it and the update's body
//!   are all objects. Otherwise the create is sent as created and the update follows it,
//!   exactly as when the create's outcome is unknown: an ordinary successor for an
//!   app-chosen target, an intent row (converted once the create's receipt is known) for a
//!   `pending:` target. A delete still cancels a never-sent create and all its edits.
//! - **Intents of one `pending:` target.** They coalesce by the same rule; an intent that
//!   cannot absorb the previous one waits behind it (`successorOf` the previous intent),
//!   and all the create's intents are converted, in that order, when its receipt arrives
//!   ([`crate::ack::pending_intents`]).
//!
//! # Operations that must never be merged (`noMerge`)
//!
//! A `noMerge` row (`merge: false`, §7) is stricter than a non-object body: it is a wall in
//! the scope's chain, whatever the bodies and kinds around it.
//!
//! - **A `noMerge` operation** absorbs, merges into and cancels nothing: it is written as
//!   given, the successor of the scope's latest row (greatest `(savedAt, id)`, in flight or
//!   not; for an edit of `pending:X` with no row left, the create X). "Latest" is in chain
//!   order ([`crate::row::chain_order`]): a row written by a tab whose clock is behind still counts as
//!   after the row it waits for, so two commands never wait for the same row.
//! - **An ordinary operation after a `noMerge` row** only looks at the rows after the last
//!   `noMerge` row of the scope: those coalesce as usual (an update over updates, a delete
//!   replacing them, merging into or cancelling a create among them), and when nothing of
//!   them is kept the new row becomes the successor of that `noMerge` row. So a delete
//!   after a `noMerge` update does not delete it, a delete never cancels a `noMerge` create
//!   (nor a create with a `noMerge` edit after it: cancelling would drop the edit), and an
//!   update is never merged into a `noMerge` create or intent.
//! - Rows before the last `noMerge` row stay as they are: they were coalesced among
//!   themselves when they were enqueued, and nothing moves across the wall.

use crate::accounts::in_scope_copied;
use crate::body_size;
use crate::codec::{decode, encode, refingerprint};
use crate::fingerprint::fingerprint;
use crate::inflight::may_be_on_the_wire;
use crate::input::NewOperation;
use crate::plan::{ReplacePlan, Scope};
use crate::reissue::{reissued, repoint};
use crate::row::{chain_order_rows, Kind, Row, RowState, PENDING_PREFIX};
use crate::tab::Tab;
use crate::time::Millis;
use serde_json::{Map, Value};

/// What an enqueue did with the scope.
#[derive(Clone, Debug, PartialEq)]
#[must_use]
pub struct EnqueuePlan {
    /// The one replace to carry out.
    pub plan: ReplacePlan,
    /// The row stored by it; `None` when the operation cancelled an unsent create.
    pub row: Option<Row>,
    /// Ids of earlier operations this one absorbed (coalesced, merged or cancelled).
    pub absorbed: Vec<String>,
}

/// The scope an operation lands in: its target, or `pending:<id>` for a create without one.
#[must_use]
pub fn enqueue_scope(op: &NewOperation, id: &str) -> Scope {
    Scope::target(&op.owner, &target_of(op, id))
}

pub use crate::input::target_of;

/// Shallow merge: `patch`'s fields over `base`'s when both are objects ([`mergeable`]),
/// else `patch`.
#[must_use]
pub fn shallow_merge(base: &Value, patch: &Value) -> Value {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            let mut out: Map<String, Value> = b.clone();
            for (k, v) in p {
                out.insert(k.clone(), v.clone());
            }
            Value::Object(out)
        }
        _ => patch.clone(),
    }
}

/// Plans the enqueue of `op` under the fresh id `id`. `scope_rows` are the rows of
/// [`enqueue_scope`] as read (rows outside it are ignored); `reissue_id` is a second fresh id, used only when the
/// operation merges into a blocked create (which is then re-issued, §7).
pub fn plan_enqueue(
    op: &NewOperation,
    id: &str,
    reissue_id: &str,
    scope_rows: &[Value],
    tab: &Tab,
    now: Millis,
) -> EnqueuePlan {
    let target = target_of(op, id);
    let scope = Scope::target(&op.owner, &target);
    // §11: another owner's rows of the same target are neither absorbed nor waited for.
    // Copied once: they are what the replace expects to find (`base.expected`).
    let scope_rows: Vec<Value> = in_scope_copied(&scope, scope_rows);
    // Chain order, not bare `(savedAt, id)`: the "latest row" a new one waits for and the
    // last `noMerge` row are the chain's, whatever the clocks of the tabs that wrote them.
    let mut decoded = Vec::new();
    for r in &scope_rows {
        if let Ok(row) = decode(r) {
            decoded.push(row);
        }
    }
    let rows = chain_order_rows(decoded);
    // A claim other tabs do not honour (its lease ends past the longest lease, §5) may
    // still be on the wire: a new row waits for it instead of absorbing it, so the older
    // request never lands after the newer one.
    let flying = |r: &Row| may_be_on_the_wire(r, now, tab.lease_ms);
    let base = ReplacePlan { scopes: vec![scope], expected: scope_rows, ..Default::default() };

    if op.no_merge {
        // §7: a command is never coalesced; it waits for whatever the scope holds last.
        let anchor = rows
            .last()
            .map(|r| r.id.clone())
            .or_else(|| target.strip_prefix(PENDING_PREFIX).filter(|_| op.kind != Kind::Create).map(str::to_owned));
        let row = new_row(op, id, &target, op.body.clone(), op.revision.clone(), anchor, now);
        let mut plan = base;
        plan.puts = vec![encode(&row)];
        return EnqueuePlan { plan, row: Some(row), absorbed: vec![] };
    }
    // §7: nothing coalesces across a `noMerge` row; only the rows after the last one are
    // open to the rules below, and that row is where the new one waits if none is kept.
    let (walled, rows) = rows.split_at(rows.iter().rposition(|r| r.no_merge).map_or(0, |i| i + 1));
    let wall = walled.last();

    if op.kind != Kind::Create {
        // The create rules are about the record's latest create and the edits after it. Rows
        // before it (a delete of an earlier life of the record, an app-chosen target
        // re-created) are left as they are, and an edit of it in flight makes the new row
        // that edit's successor instead (the table above): merged into the create, it would
        // reach the server before the older edit.
        if let Some(at) = rows.iter().rposition(|r| r.kind == Kind::Create) {
            let (create, edits) = (&rows[at], &rows[at + 1..]);
            let open = create.never_attempted() || create.state == RowState::Blocked;
            if open && !flying(create) && !edits.iter().any(flying) {
                let mut folded: Vec<&Row> = Vec::with_capacity(edits.len());
                for e in edits {
                    folded.push(e);
                }
                if folds_into_create(create, &folded, op) {
                    let body = folded_body(create, &folded, op);
                    // Folded, a body larger than a body may be is not: the edits stay rows.
                    if body.as_ref().is_none_or(body_size::fits) {
                        return merge_into_create(base, create, &folded, body, reissue_id);
                    }
                }
            }
        }
    }

    // Rows not in flight are absorbed by the new row (coalesced), except creates and, for an
    // update, every row up to the last update it cannot be merged with: that one stays and
    // the new row goes after it, so nothing of a non-object body is lost. An update never
    // absorbs a blocked row a later row of its chain overtook (§7): a field that later row
    // carried must not come back from the older one. It stays blocked, waited for by no one.
    let overtaken = |r: &Row| op.kind == Kind::Update && r.overtaken_at.is_some();
    let mut absorbable: Vec<&Row> = Vec::new();
    for r in rows {
        if !flying(r) && r.kind != Kind::Create && !overtaken(r) {
            absorbable.push(r);
        }
    }
    let barrier = match op.kind {
        Kind::Update => absorbable.iter().rposition(|r| r.kind == Kind::Update && !mergeable(&r.body, &op.body)),
        Kind::Create | Kind::Delete => None,
    };
    let mut split = barrier.map_or(0, |i| i + 1);
    let mut merged = (op.kind == Kind::Update).then(|| merged_update(&absorbable[split..], op));
    if merged.as_ref().is_some_and(|b| !body_size::fits(b)) {
        // Merged, the body would be larger than a body may be: nothing is absorbed, the new
        // row waits after every row it would have absorbed.
        split = absorbable.len();
        merged = Some(merged_update(&[], op));
    }
    let (kept, removed) = absorbable.split_at(split);

    // The row the new one must wait for: the in-flight row sent last, else a create whose
    // outcome is unknown, else (an edit of `pending:X`) the create X, even if vanished. A
    // row kept above comes after those unless an in-flight row is later still in the chain
    // (by its place in `rows`, not by `savedAt`: a successor written by a tab whose clock
    // is behind carries an earlier `savedAt` than the row it waits for). The wall is before
    // every row of `rows`.
    // Of two with the greatest `(sentAt, savedAt)`, the later in `rows` (as `max_by_key`).
    let mut last_flying: Option<&Row> = None;
    for r in rows {
        if flying(r) && last_flying.is_none_or(|l| (r.sent_at, r.saved_at) >= (l.sent_at, l.saved_at)) {
            last_flying = Some(r);
        }
    }
    let place = |r: &Row| rows.iter().position(|x| x.id == r.id);
    let anchor = match kept.last().copied().or(wall) {
        Some(last_kept) => Some(last_flying.filter(|f| place(f) > place(last_kept)).unwrap_or(last_kept).id.clone()),
        None => last_flying
            .or_else(|| rows.iter().find(|r| r.kind == Kind::Create))
            .map(|r| r.id.clone())
            .or_else(|| target.strip_prefix(PENDING_PREFIX).filter(|_| op.kind != Kind::Create).map(str::to_owned)),
    };

    let mut revision = op.revision.clone();
    if op.kind == Kind::Update {
        for r in removed {
            if op.revision.is_none() && r.revision.is_some() {
                revision = r.revision.clone();
            }
        }
    }
    let body = merged.unwrap_or_else(|| op.body.clone());
    let row = new_row(op, id, &target, body, revision, anchor, now);
    let mut plan = base;
    for r in removed {
        plan.deletes.push(r.id.clone());
    }
    plan.puts = vec![encode(&row)];
    let absorbed = plan.deletes.clone();
    EnqueuePlan { plan, row: Some(row), absorbed }
}

/// The body of an update `op` that absorbs `removed` (in order): their update bodies
/// shallow-merged, from the last delete on, then `op`'s over them.
fn merged_update(removed: &[&Row], op: &NewOperation) -> Value {
    let mut carried = Value::Object(Map::new());
    for r in removed {
        match r.kind {
            Kind::Update => carried = shallow_merge(&carried, &r.body),
            _ => carried = Value::Object(Map::new()),
        }
    }
    shallow_merge(&carried, &op.body)
}

/// True when two bodies may be merged (§7 shallow merge): both are JSON objects. A body of
/// any other shape (a JSON Patch array, a string, a number...) means something the library
/// cannot know how to combine, so it is never merged nor merged into.
#[must_use]
pub fn mergeable(earlier: &Value, later: &Value) -> bool {
    earlier.is_object() && later.is_object()
}

/// True when `op` may be folded, after the create's waiting edits `folded` (in order), into
/// the never-attempted or blocked `create`: a delete anywhere cancels it whatever the
/// bodies; otherwise every body involved must be an object.
fn folds_into_create(create: &Row, folded: &[&Row], op: &NewOperation) -> bool {
    let edits = edits(folded, op);
    if edits.iter().any(|(kind, _)| *kind == Kind::Delete) {
        return true; // cancels the create and every edit of it: nothing is merged
    }
    edits.iter().all(|(kind, body)| *kind != Kind::Update || mergeable(&create.body, body))
}

/// The kind and body of each of the create's waiting edits `folded` (in order), then `op`'s.
fn edits<'a>(folded: &[&'a Row], op: &'a NewOperation) -> Vec<(Kind, &'a Value)> {
    let mut edits = Vec::with_capacity(folded.len() + 1);
    for r in folded {
        edits.push((r.kind, &r.body));
    }
    edits.push((op.kind, &op.body));
    edits
}

fn new_row(
    op: &NewOperation,
    id: &str,
    target: &str,
    body: Value,
    revision: Option<Value>,
    successor_of: Option<String>,
    now: Millis,
) -> Row {
    Row {
        id: id.to_owned(),
        owner: op.owner.clone(),
        target: target.to_owned(),
        kind: op.kind,
        fingerprint: fingerprint(op.kind, target, &body, revision.as_ref()),
        body,
        revision,
        saved_at: now,
        state: RowState::Queued,
        sent_at: None,
        deferred_at: None,
        held_at: None,
        blocked_at: None,
        next_attempt_at: None,
        blocked_code: None,
        overtaken_at: None,
        claim: None,
        evidence: None,
        writer: None,
        successor_of,
        conflict: None,
        no_merge: op.no_merge,
        extra: Map::new(),
    }
}

/// The create's body with its waiting edits (in order) and then `op` folded in; `None`
/// when a delete among them cancels the create.
fn folded_body(create: &Row, folded: &[&Row], op: &NewOperation) -> Option<Value> {
    let mut body = create.body.clone();
    for kind_body in edits(folded, op) {
        match kind_body {
            (Kind::Update, b) => body = shallow_merge(&body, b),
            (Kind::Delete, _) => return None,
            (Kind::Create, _) => {}
        }
    }
    Some(body)
}

/// Folds the create's waiting edits and `op` into the create: its body becomes `body`
/// ([`folded_body`]); `None` (a delete among them) cancels the create and writes nothing.
fn merge_into_create(
    mut plan: ReplacePlan,
    create: &Row,
    folded: &[&Row],
    body: Option<Value>,
    reissue_id: &str,
) -> EnqueuePlan {
    let mut absorbed: Vec<String> = Vec::with_capacity(folded.len() + 1);
    for r in folded {
        absorbed.push(r.id.clone());
    }
    plan.deletes = absorbed.clone();
    let Some(body) = body else {
        plan.deletes.push(create.id.clone());
        absorbed.push(create.id.clone());
        return EnqueuePlan { plan, row: None, absorbed };
    };
    let mut merged = create.clone();
    merged.body = body;
    if create.state == RowState::Blocked {
        merged = reissued(&merged, reissue_id);
        plan.deletes.push(create.id.clone());
        let mut skip: Vec<&str> = Vec::with_capacity(folded.len());
        for r in folded {
            skip.push(r.id.as_str());
        }
        // `plan.expected`: the scope's rows as read.
        plan.puts = repoint(&plan.expected, &create.id, reissue_id, &skip);
    } else {
        refingerprint(&mut merged);
    }
    plan.puts.push(encode(&merged));
    EnqueuePlan { plan, row: Some(merged), absorbed }
}
