//! Enqueue: coalescing, successors, intents, merge into an unsent create, cancel (SPEC §7).

use crate::codec::{encode, refingerprint, Stored};
use crate::fingerprint::fingerprint;
use crate::inflight::in_flight;
use crate::input::NewOperation;
use crate::plan::{ReplacePlan, Scope};
use crate::reissue::{reissued, repoint};
use crate::row::{send_order, Kind, Row, RowState, PENDING_PREFIX};
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

fn target_of(op: &NewOperation, id: &str) -> String {
    op.target.clone().unwrap_or_else(|| format!("{PENDING_PREFIX}{id}"))
}

/// Shallow merge: `patch`'s fields over `base`'s when both are objects, else `patch`.
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
/// [`enqueue_scope`] as read; `reissue_id` is a second fresh id, used only when the
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
    let mut rows: Vec<Row> = scope_rows.iter().filter_map(|r| Stored::from_value(r).row().cloned()).collect();
    rows.sort_by(send_order);
    let flying = |r: &Row| in_flight(r, now, tab.lease_ms).is_in_flight();
    let base = ReplacePlan { scopes: vec![scope], expected: scope_rows.to_vec(), deletes: vec![], puts: vec![] };

    let mergeable = rows
        .iter()
        .find(|r| r.kind == Kind::Create && !flying(r) && (r.never_attempted() || r.state == RowState::Blocked));
    if let (Some(create), false) = (mergeable, op.kind == Kind::Create) {
        let folded: Vec<&Row> = rows.iter().filter(|r| r.id != create.id && !flying(r)).collect();
        return merge_into_create(base, create, &folded, op, reissue_id, scope_rows);
    }

    // The row the new one must wait for: the in-flight row sent last, else a create whose
    // outcome is unknown, else (an edit of `pending:X`) the create X, even if vanished.
    let anchor = rows
        .iter()
        .filter(|r| flying(r))
        .max_by_key(|r| (r.sent_at, r.saved_at))
        .or_else(|| rows.iter().find(|r| r.kind == Kind::Create))
        .map(|r| r.id.clone())
        .or_else(|| target.strip_prefix(PENDING_PREFIX).filter(|_| op.kind != Kind::Create).map(str::to_owned));
    let removed: Vec<&Row> = rows.iter().filter(|r| !flying(r) && r.kind != Kind::Create).collect();

    let mut body = op.body.clone();
    let mut revision = op.revision.clone();
    if op.kind == Kind::Update {
        let mut carried = Value::Object(Map::new());
        for r in &removed {
            match r.kind {
                Kind::Update => carried = shallow_merge(&carried, &r.body),
                _ => carried = Value::Object(Map::new()),
            }
            if op.revision.is_none() && r.revision.is_some() {
                revision = r.revision.clone();
            }
        }
        body = shallow_merge(&carried, &op.body);
    }
    let row = new_row(op, id, &target, body, revision, anchor, now);
    let mut plan = base;
    plan.deletes = removed.iter().map(|r| r.id.clone()).collect();
    plan.puts = vec![encode(&row)];
    EnqueuePlan { plan, row: Some(row), absorbed: removed.iter().map(|r| r.id.clone()).collect() }
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
        claim: None,
        evidence: None,
        writer: None,
        successor_of,
        conflict: None,
        extra: Map::new(),
    }
}

/// Folds the create's waiting edits (in `savedAt` order) and then `op` into the create's
/// body; a delete anywhere cancels the create and writes nothing.
fn merge_into_create(
    mut plan: ReplacePlan,
    create: &Row,
    folded: &[&Row],
    op: &NewOperation,
    reissue_id: &str,
    scope_rows: &[Value],
) -> EnqueuePlan {
    let mut body = create.body.clone();
    let mut cancelled = false;
    for kind_body in folded.iter().map(|r| (r.kind, &r.body)).chain([(op.kind, &op.body)]) {
        match kind_body {
            (Kind::Update, b) => body = shallow_merge(&body, b),
            (Kind::Delete, _) => cancelled = true,
            (Kind::Create, _) => {}
        }
    }
    let mut absorbed: Vec<String> = folded.iter().map(|r| r.id.clone()).collect();
    plan.deletes = absorbed.clone();
    if cancelled {
        plan.deletes.push(create.id.clone());
        absorbed.push(create.id.clone());
        return EnqueuePlan { plan, row: None, absorbed };
    }
    let mut merged = create.clone();
    merged.body = body;
    if create.state == RowState::Blocked {
        merged = reissued(&merged, reissue_id);
        plan.deletes.push(create.id.clone());
        let skip: Vec<&str> = folded.iter().map(|r| r.id.as_str()).collect();
        plan.puts = repoint(scope_rows, &create.id, reissue_id, &skip);
    } else {
        refingerprint(&mut merged);
    }
    plan.puts.push(encode(&merged));
    EnqueuePlan { plan, row: Some(merged), absorbed }
}
