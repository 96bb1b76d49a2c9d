//! The app's own records, written in the same transaction as the queue rows (docs/guide.md,
//! "Local records").
//!
//! An offline-first app shows an edit at once from its local store and sends it later. The
//! invariant it needs: **a pending record visible locally has an operation that sends it,
//! and an operation has the record it sends** — so the record and the queue row commit
//! together or not at all, and so do the answer's effect on the record and the row's ACK.
//!
//! The rules, all carried out by the one replace (§4) of the operation they go with:
//!
//! - **Enqueue.** The app's record writes commit with the enqueue whatever it planned: a
//!   new row, one merged into an earlier row, or a create cancelled by a delete (the record
//!   the user deleted is deleted all the same). A put `atTarget` is keyed by the
//!   operation's target, so a create without a target writes its record under its
//!   `pending:` key. See [`with_records`].
//! - **Answer.** An answer that ends an attempt for good — a success, a refusal (blocked),
//!   a revision conflict — is handed to the app's `reconcile` port as a [`Reconcile`],
//!   and the writes it returns commit in the ACK's transaction, **only when the ACK
//!   commits** (the claim is still this tab's, §6). A stale answer changes neither the row
//!   nor the records. A transient or auth answer keeps the row queued: nothing to
//!   reconcile ([`reconcile_for`]).
//! - **Never resurrect.** Besides `put` and `delete`, a write may `patch` a record (merge
//!   fields into it) or `rekey` it (move it to a new key, e.g. from `pending:X` to the id
//!   the server gave): both change a record **only if it exists**, so an answer arriving
//!   after the user deleted the record locally — late, or replayed after a crash — never
//!   brings it back ([`patched`], [`rekeyed`]).
//! - **Forwarding.** A rekey leaves a small stub at the old key (`{"$outboxMovedTo": to}`,
//!   with the old key at the key path). A write that names the old key afterwards — an edit
//!   the app made against the `pending:` key while another tab's answer re-keyed the record
//!   — changes the record at its new key ([`forward`]); without it that edit would reach
//!   the server (its queue row is converted like any intent) but never the local record.
//!   Stubs carry no other field, so an index on the app's fields does not list them.
//! - **Replay.** A crash after the server committed leaves the row `sending`; it is sent
//!   again after the lease, the gate replays the same receipt, and the same port maps it
//!   to the same writes. The first ACK and its record writes commit together, so there is
//!   no state in which one happened without the other.

use crate::input::{target_of, NewOperation};
use crate::outcome::Outcome;
use crate::outcome::{usable_actual_revision, REVISION_UNKNOWN};
use crate::row::Row;
use serde_json::{Map, Value};
use std::fmt;

pub use crate::record_write::{Answer, Reconcile, RecordWrite};

/// The object store of the queue itself: never a record store.
pub const QUEUE_STORE: &str = "outbox";

/// At most this many record writes per enqueue or answer.
pub const MAX_WRITES: usize = 1_000;

/// Why record writes were refused (nothing is written).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WritesError(pub String);

impl fmt::Display for WritesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WritesError {}

/// A record write as given, before its `atTarget` key is known.
#[derive(Clone, Debug, PartialEq)]
pub struct WriteInput {
    write: RecordWrite,
    at_target: bool,
}

/// True for a JSON value IndexedDB accepts as a key: a string, a finite number, or a
/// non-empty-or-empty array of keys (nested at most 8 deep).
#[must_use]
pub fn is_key(v: &Value) -> bool {
    fn depth(v: &Value, d: usize) -> bool {
        match v {
            Value::String(_) => true,
            Value::Number(n) => n.as_f64().is_some_and(f64::is_finite),
            Value::Array(a) => d < 8 && a.iter().all(|x| depth(x, d + 1)),
            _ => false,
        }
    }
    depth(v, 0)
}

/// An error message: a backquote, then `pieces` (the first is the write's `at`). One
/// out-of-line builder for every message of this module, not a `format!` at each (issue 35).
#[cold]
#[inline(never)]
fn bad(pieces: &[&str]) -> WritesError {
    let mut s = String::from("`");
    for p in pieces {
        s.push_str(p);
    }
    WritesError(s)
}

fn key_of(obj: &Map<String, Value>, field: &str, at: &str) -> Result<Value, WritesError> {
    match obj.get(field) {
        Some(k) if is_key(k) => Ok(k.clone()),
        _ => Err(bad(&[at, ".", field, "` must be a key: a string, a number or an array of them"])),
    }
}

/// A record may not carry the stub field: it would read as a stub and vanish. `field`
/// (`.put`, `.set`) follows `at` in the message.
fn reserved(v: &Value, at: &str, field: &str) -> Result<(), WritesError> {
    if v.get(MOVED_TO).is_some() {
        return Err(bad(&[at, field, "` uses the reserved field `", MOVED_TO, "`"]));
    }
    Ok(())
}

fn set_of(obj: &Map<String, Value>, at: &str, required: bool) -> Result<Map<String, Value>, WritesError> {
    match obj.get("set") {
        Some(v @ Value::Object(m)) => {
            reserved(v, at, ".set")?;
            Ok(m.clone())
        }
        None | Some(Value::Null) if !required => Ok(Map::new()),
        _ => Err(bad(&[at, ".set` must be an object of fields to set"])),
    }
}

/// Reads the app's record writes (`writes` of `enqueue`, or what `reconcile` returned):
/// `null`/absent is none; otherwise an array of `{store, put, key?, atTarget?}`,
/// `{store, delete}`, `{store, patch, set}` or `{store, rekey, to, set?}`. `at` names the
/// argument in errors.
///
/// # Errors
/// [`WritesError`] naming the first bad write: not an object, no store or the queue's own
/// store, not exactly one of `put`/`delete`/`patch`/`rekey`, a key IndexedDB would refuse,
/// a `set` that is not an object, `atTarget` where `put` is not used, more than
/// [`MAX_WRITES`].
pub fn parse_writes(v: &Value, at: &str) -> Result<Vec<WriteInput>, WritesError> {
    let list = match v {
        Value::Null => return Ok(vec![]),
        Value::Array(a) => a,
        _ => return Err(bad(&[at, "` must be an array of record writes"])),
    };
    if list.len() > MAX_WRITES {
        // MAX_WRITES written out (checked by a test): no integer formatting here.
        return Err(bad(&[at, "` holds more than 1000 record writes"]));
    }
    let mut writes = Vec::with_capacity(list.len());
    for (i, w) in list.iter().enumerate() {
        let mut here = crate::text::concat(&[at, "["]);
        crate::text::push_decimal(&mut here, i);
        here.push(']');
        writes.push(parse_one(w, &here)?);
    }
    Ok(writes)
}

fn parse_one(v: &Value, at: &str) -> Result<WriteInput, WritesError> {
    let Some(obj) = v.as_object() else { return Err(bad(&[at, "` must be an object"])) };
    let store = match obj.get("store") {
        Some(Value::String(s)) if !s.is_empty() && s != QUEUE_STORE => s.clone(),
        Some(Value::String(s)) if s == QUEUE_STORE => {
            return Err(bad(&[at, ".store` is the queue's own store; name an app store"]))
        }
        _ => return Err(bad(&[at, ".store` must be the name of an app store"])),
    };
    let mut actions: Vec<&str> = Vec::new();
    for a in ["put", "delete", "patch", "rekey"] {
        if obj.contains_key(a) {
            actions.push(a);
        }
    }
    let [action] = actions.as_slice() else {
        return Err(bad(&[at, "` must have exactly one of put, delete, patch, rekey"]));
    };
    let at_target = match obj.get("atTarget") {
        None | Some(Value::Null | Value::Bool(false)) => false,
        Some(Value::Bool(true)) if *action == "put" => true,
        Some(Value::Bool(true)) => return Err(bad(&[at, ".atTarget` goes only with put"])),
        Some(_) => return Err(bad(&[at, ".atTarget` must be a boolean"])),
    };
    let write = match *action {
        "put" => {
            let key = match obj.get("key") {
                None | Some(Value::Null) => None,
                Some(_) => Some(key_of(obj, "key", at)?),
            };
            if at_target && key.is_some() {
                return Err(bad(&[at, "` has both `key` and `atTarget`"]));
            }
            reserved(&obj["put"], at, ".put")?;
            RecordWrite::Put { store, value: obj["put"].clone(), key }
        }
        "delete" => RecordWrite::Delete { store, key: key_of(obj, "delete", at)? },
        "patch" => RecordWrite::Patch { store, key: key_of(obj, "patch", at)?, set: set_of(obj, at, true)? },
        _ => RecordWrite::Rekey {
            store,
            from: key_of(obj, "rekey", at)?,
            to: key_of(obj, "to", at)?,
            set: set_of(obj, at, false)?,
        },
    };
    Ok(WriteInput { write, at_target })
}

/// The writes that commit with the enqueue of `op` under the fresh id `id`, whatever the
/// enqueue planned (a new row, a merge, a cancelled create): every write as given, a put
/// `atTarget` keyed by the operation's target (for a create without one, `pending:<id>`).
#[must_use]
pub fn enqueue_records(op: &NewOperation, id: &str, inputs: &[WriteInput]) -> Vec<RecordWrite> {
    resolve(inputs, &target_of(op, id))
}

/// The writes the `reconcile` port gave for `r`, a put `atTarget` keyed by the row's target.
#[must_use]
pub fn answer_records(inputs: &[WriteInput], r: &Reconcile) -> Vec<RecordWrite> {
    resolve(inputs, &r.row.target)
}

/// The writes given with a change of an existing row (`retryBlocked`, `discard`), which
/// commit only if that change does; a put `atTarget` keyed by the row's `target`.
#[must_use]
pub fn row_records(inputs: &[WriteInput], target: &str) -> Vec<RecordWrite> {
    resolve(inputs, target)
}

fn resolve(inputs: &[WriteInput], target: &str) -> Vec<RecordWrite> {
    let mut writes = Vec::with_capacity(inputs.len());
    for i in inputs {
        writes.push(match (&i.write, i.at_target) {
            (RecordWrite::Put { store, value, .. }, true) => RecordWrite::Put {
                store: store.clone(),
                value: value.clone(),
                key: Some(Value::String(target.to_owned())),
            },
            (w, _) => w.clone(),
        });
    }
    writes
}

/// The reconciliation an answer calls for, if the ACK of `row` commits: a success, a
/// permanent refusal, a conflict (blocked when the server gave no usable revision, §9).
/// Transient and auth answers leave the row queued and the record as it is: `None`.
#[must_use]
pub fn reconcile_for(row: &Row, outcome: &Outcome) -> Option<Reconcile> {
    let answer = match outcome {
        Outcome::Success { receipt, replayed } => Answer::Success { receipt: receipt.clone(), replayed: *replayed },
        Outcome::Permanent { code } => Answer::Blocked { code: code.clone() },
        Outcome::Conflict { actual_revision } if !usable_actual_revision(actual_revision) => {
            Answer::Blocked { code: REVISION_UNKNOWN.to_owned() }
        }
        Outcome::Conflict { actual_revision } => Answer::Conflict { actual_revision: actual_revision.clone() },
        Outcome::Transient { .. } | Outcome::Auth => return None,
    };
    Some(Reconcile { row: row.clone(), answer })
}

/// The field of a forwarding stub: the key its record moved to.
pub const MOVED_TO: &str = "$outboxMovedTo";

/// The keys a write naming a record has passed on its way to where the record is: the key it
/// names, then each key a forwarding stub there sends it on to ([`forward`]).
///
/// A write follows stubs until it finds a record or nothing, however many: a record re-keyed
/// again and again leaves one stub per rekey, and a write naming its first key must still
/// land on it (a fixed number of hops made a patch past them skip silently). The stubs the
/// library writes never form a cycle — a stub is left at a key whose record moves to `to`,
/// which holds that record (not a stub) from then until a later rekey moves it on — so a
/// chain ends. A cycle can only be written from outside the library: a write stops at the
/// stub that turns back, which is no record (a patch or rekey changes nothing; a put or
/// delete replaces that stub, which ends the cycle). Refusing the write instead would leave
/// an answer whose `reconcile` meets one unapplied, its row sent again after every lease.
#[derive(Debug)]
pub struct Landing {
    keys: Vec<Value>,
}

impl Landing {
    /// Starts at `key`, the key the write names.
    #[must_use]
    pub fn new(key: Value) -> Self {
        Self { keys: vec![key] }
    }

    /// The key reached so far: where the write lands once its value is no stub.
    #[must_use]
    pub fn key(&self) -> &Value {
        self.keys.last().expect("a landing starts with a key")
    }

    /// Goes on to `to`, where the stub at [`Landing::key`] forwards; `false` (staying where
    /// it is) when `to` is a key already passed: the stubs form a cycle.
    #[must_use]
    pub fn follow(&mut self, to: Value) -> bool {
        let new = !self.keys.contains(&to);
        if new {
            self.keys.push(to);
        }
        new
    }
}

/// The stub left at `from` when its record moved to `to` (`from` at the key path, if any).
#[must_use]
pub fn stub(key_path: &Value, from: &Value, to: &Value) -> Value {
    let mut v = Value::Object(Map::new());
    v[MOVED_TO] = to.clone();
    set_key(&mut v, key_path, from);
    v
}

/// Sets `key` at the store's key path in `value`: a dotted path (a string), or one path per
/// component of a compound key (an array of strings, `key` an array as long). `false` when
/// the key does not fit the path; `true` (nothing set) for out-of-line keys (`null`).
pub fn set_key(value: &mut Value, key_path: &Value, key: &Value) -> bool {
    match (key_path, key) {
        (Value::Null, _) => true,
        (Value::String(p), _) => {
            set_at_path(value, p, key.clone());
            true
        }
        (Value::Array(ps), Value::Array(ks)) if ps.len() == ks.len() => {
            for (p, k) in ps.iter().zip(ks) {
                set_at_path(value, p.as_str().unwrap_or_default(), k.clone());
            }
            true
        }
        _ => false,
    }
}

/// Where a write naming a key holding `stored` goes instead: the key of the record the stub
/// forwards to, or `None` when `stored` is not a stub.
#[must_use]
pub fn forward(stored: Option<&Value>) -> Option<&Value> {
    stored?.get(MOVED_TO).filter(|k| is_key(k))
}

/// `current` with `set` merged in (shallow: each field of `set` replaces the record's);
/// `None` when there is no record — a patch never creates one.
#[must_use]
pub fn patched(current: Option<&Value>, set: &Map<String, Value>) -> Option<Value> {
    let mut obj = current.filter(|c| forward(Some(c)).is_none())?.as_object()?.clone();
    for (k, v) in set {
        obj.insert(k.clone(), v.clone());
    }
    Some(Value::Object(obj))
}

/// The record moved to `to`: `current` patched with `set`, with `to` at the key path
/// `key_path` (a dotted path; `None` for a store with out-of-line keys). `None` when there
/// is no record — a rekey never creates one.
#[must_use]
pub fn rekeyed(current: Option<&Value>, key_path: Option<&str>, to: &Value, set: &Map<String, Value>) -> Option<Value> {
    let mut value = patched(current, set)?;
    if let Some(path) = key_path {
        set_at_path(&mut value, path, to.clone());
    }
    Some(value)
}

/// Sets `v` at the dotted `path` of `obj`, creating objects on the way (as IndexedDB's key
/// generator does for an inline key path).
pub fn set_at_path(obj: &mut Value, path: &str, v: Value) {
    let mut cur = obj;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let map = cur.as_object_mut().expect("made an object above");
        if parts.peek().is_none() {
            map.insert(part.to_owned(), v);
            return;
        }
        cur = map.entry(part.to_owned()).or_insert_with(|| Value::Object(Map::new()));
    }
}
