//! Drives the planner's flush machine (`outbox_core::flush`) against IndexedDB and the
//! app's callbacks. This module holds no contract rule: it carries out the requests the
//! machine asks for — reads, one-transaction writes, sends, port calls — and hands back
//! their results. Sends and ports are awaited between transactions, never inside one.

use crate::convert::{from_js, outcome_from_js, prepared_from_js, row_to_js, to_js};
use crate::error::{ErrorCode, OutboxError, Result};
use crate::idb::records::AppStores;
use crate::idb::replace::{Planner, ReconcileFn, RecordPort};
use crate::idb::store::Read;
use crate::idb::{Durability, Store};
use crate::inner::Inner;
use jobs::Jobs;
use js_sys::{Function, Promise};
use outbox_core::records::{answer_records, parse_writes, Answer, Reconcile, RecordWrite};
use outbox_core::{encode, Flush, FlushReport, Outcome, ReplaceOutcome, Request, Scope, Token};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

mod jobs;

/// The app's callbacks for one flush or ACK.
#[derive(Clone, Default)]
pub struct Ports {
    pub send: Option<Function>,
    pub prepare_successor: Option<Function>,
    pub find_create_receipt: Option<Function>,
    /// Maps an answer to the app's record writes, in the ACK's transaction.
    pub reconcile: Option<Function>,
}

impl Ports {
    /// Reads `prepareSuccessor` / `findCreateReceipt` (and `send` when `with_send`).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when one is given but is not a function.
    pub fn parse(obj: &JsValue, with_send: bool) -> Result<Ports> {
        // Read as `Outbox.open` reads `now` and `random`; none of a value that is no object
        // (a function with ports as properties included).
        let f = |key: &str| if obj.is_object() { crate::inner::optional_fn(obj, key) } else { Ok(None) };
        let ports = Ports {
            send: if with_send { f("send")? } else { None },
            prepare_successor: f("prepareSuccessor")?,
            find_create_receipt: f("findCreateReceipt")?,
            reconcile: f("reconcile")?,
        };
        if with_send && ports.send.is_none() {
            return Err(OutboxError::invalid("flush needs `send`, a function (op) => Outcome"));
        }
        Ok(ports)
    }
}

/// Calls the app's `reconcile` port synchronously (inside the ACK's transaction) with
/// `{row, answer}` and reads the record writes it returns.
fn call_reconcile(f: &Function, r: &Reconcile) -> std::result::Result<Vec<RecordWrite>, String> {
    // Set key by key (as `JSON.parse` of `{"type": …, …}` would make it), not built as JSON
    // first: no map and no text of its own to build.
    let answer = js_sys::Object::new();
    let set = |o: &js_sys::Object, k: &str, v: &JsValue| crate::js::set(o, k, v);
    match &r.answer {
        Answer::Success { receipt, replayed } => {
            set(&answer, "type", &"success".into());
            set(&answer, "receipt", &to_js(receipt));
            set(&answer, "replayed", &(*replayed).into());
        }
        Answer::Blocked { code } => {
            set(&answer, "type", &"blocked".into());
            set(&answer, "code", &code.into());
        }
        Answer::Conflict { actual_revision } => {
            set(&answer, "type", &"conflict".into());
            set(&answer, "actualRevision", &to_js(actual_revision));
        }
    }
    let arg = js_sys::Object::new();
    set(&arg, "row", &row_to_js(&encode(&r.row)));
    set(&arg, "answer", &answer);
    let ret = f.call1(&JsValue::NULL, &arg).map_err(|_| "reconcile threw".to_owned())?;
    if ret.is_instance_of::<Promise>() {
        return Err("reconcile returned a promise: it must return the writes themselves".into());
    }
    let writes = from_js(&ret, "reconcile()").map_err(|e| e.message)?;
    let inputs = parse_writes(&writes, "reconcile()").map_err(|e| e.0)?;
    Ok(answer_records(&inputs, r))
}

/// Calls an app function with one argument: its result as a promise (awaited by the
/// caller: no future of its own, issue 35).
fn call(f: &Function, arg: &JsValue) -> std::result::Result<Promise, JsValue> {
    crate::js::own_promise(&f.call1(&JsValue::NULL, arg)?)
}

/// A flush that failed part way, and what it had done until then: the answers it applied
/// stay applied, and their receipts are in `report`.
pub struct Failed {
    pub error: OutboxError,
    pub report: FlushReport,
}

impl From<Failed> for JsValue {
    /// The error, with the report on it as `report`.
    fn from(f: Failed) -> JsValue {
        let e = JsValue::from(f.error);
        crate::js::set(&e, "report", &crate::convert::report_to_js(&f.report));
        e
    }
}

/// Runs `flush` to its end. Whatever happens, the records it held in the tab's
/// [`outbox_core::Outstanding`] are freed when it stops.
///
/// # Errors
/// `STORAGE` / `CLOSED` when IndexedDB fails, with the report so far; sends still
/// outstanding are then abandoned (their rows stay claimed until the lease ends, then any
/// tab resends them).
pub async fn drive(inner: &Rc<Inner>, flush: Flush, ports: &Ports) -> std::result::Result<FlushReport, Failed> {
    let id = flush.id();
    let flush = RefCell::new(flush);
    // The flush's loop, in this body itself (no future of its own, issue 35); its jobs are
    // dropped at the end of this block, before the flush's records are freed.
    let result = {
        let owner = flush.borrow().owner().to_owned();
        let mut running = Jobs::default();
        // Writes asked for while the flush's transaction runs wait for it and then go together
        // in the next one (group commit): a transaction per moment, not per answer, however the
        // answers of real sends trickle in. IndexedDB runs one readwrite transaction on the
        // store at a time anyway, so waiting costs nothing.
        let mut waiting: Vec<(Token, Vec<Scope>)> = Vec::new();
        // A write transaction (or the microtask before it) is under way.
        let mut writing = false;
        let mut ticked = false;
        loop {
            let mut sent = false;
            while let Some(req) = flush.borrow_mut().poll_request() {
                match req {
                    Request::Write { token, scopes } => waiting.push((token, scopes)),
                    other => {
                        sent |= matches!(other, Request::Send { .. });
                        running.push(false, Box::pin(execute(inner, &flush, ports, other)));
                    }
                }
            }
            if !writing && !waiting.is_empty() {
                writing = true;
                if sent && !ticked {
                    // Sends just made may answer at once (a `send` that answers from memory, a
                    // cache): one microtask later their answers' writes share this transaction
                    // rather than wait for the next.
                    // (Made when first polled, after those sends: its microtask comes after theirs.)
                    ticked = true;
                    running.push(true, Box::pin(tick()));
                } else {
                    ticked = false;
                    let writes = std::mem::take(&mut waiting);
                    running.push(true, Box::pin(write_together(inner, &flush, ports, &owner, writes)));
                }
            }
            // Done: a wait still out (`Request::Wait`) is not waited for.
            if running.is_empty() || flush.borrow().is_done() {
                break Ok(());
            }
            // Every result that is in by now, so that the writes they ask for share one
            // transaction (answers of one claim batch tend to arrive together).
            match std::future::poll_fn(|cx| running.poll_woken(cx)).await {
                Ok(ended) => writing &= !ended,
                Err(e) => break Err(e),
            }
        }
    };
    inner.outstanding.with(|o| o.end(id));
    let report = flush.borrow().report().clone();
    match result {
        Ok(()) => Ok(report),
        Err(error) => Err(Failed { error, report }),
    }
}

/// One microtask: the jobs made before it that answer at once have answered.
async fn tick() -> Result<()> {
    let _ = JsFuture::from(Promise::resolve(&JsValue::UNDEFINED)).await;
    Ok(())
}

/// Carries out the write requests asked at the same moment in one readwrite transaction:
/// each is planned (synchronously, inside it) on the rows as left by the ones before it and
/// commits or is stale on its own, exactly as if each had its own transaction.
///
/// A record write that IndexedDB refuses only when it runs it (a unique index of an app
/// store that an answer's `reconcile` writes break) aborts the whole transaction, and with
/// it the writes sharing it: they are then carried out again one transaction each, so that
/// only the culprit fails. In a flush of the queue the culprit is left unapplied, as if its
/// port had thrown (the row stays claimed and is sent again after its lease) and the flush
/// goes on; an `ack` rejects with the error.
///
/// Each transaction that changed something is announced to the other tabs as soon as it
/// commits, so a long flush shows its progress (and nothing is lost if it fails later).
async fn write_together(
    inner: &Inner,
    flush: &RefCell<Flush>,
    ports: &Ports,
    owner: &str,
    writes: Vec<(Token, Vec<Scope>)>,
) -> Result<()> {
    let mut results = Vec::with_capacity(writes.len());
    let mut alone = false;
    let mut failed = None;
    let reconcile = ports.reconcile.as_ref().map(|f| move |r: &Reconcile| call_reconcile(f, r));
    let port = RecordPort {
        stores: if reconcile.is_some() { AppStores::All } else { AppStores::None },
        reconcile: reconcile.as_ref().map(|f| f as &ReconcileFn<'_>),
    };
    while results.len() < writes.len() {
        let part = if alone { &writes[results.len()..=results.len()] } else { &writes[..] };
        // One readwrite transaction over `part`, awaited here (no future of its own, issue
        // 35), announced if it changed something.
        let items = planners(inner, flush, part);
        match inner.store.transact_records(items, Durability::Default, &port, &[]).await {
            Ok(done) => {
                if done.outcomes.contains(&Some(ReplaceOutcome::Committed)) {
                    inner.notifier.changed_records("flush", Some(owner), &done.changed);
                }
                results.extend(done.outcomes);
            }
            Err(e) if e.code == ErrorCode::InvalidArgument && part.len() > 1 => alone = true,
            Err(e) if e.code == ErrorCode::InvalidArgument && !flush.borrow().is_one_answer() => {
                crate::idb::replace::warn_reconcile_failed(&e.message);
                results.push(Some(ReplaceOutcome::Stale));
            }
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    // The writes that committed before a failure count too: their rows are gone and their
    // receipts belong in the report the failed flush rejects with.
    let written = |f: &RefCell<Flush>| {
        let c = f.borrow().report().counters;
        (c.conflicts, c.permanent_failures)
    };
    let before = written(flush);
    // Committed by now (§8 deadline: a claim committed after it sends nothing).
    let now = inner.now();
    for ((token, _), result) in writes.iter().zip(results) {
        inner.outstanding.with(|o| flush.borrow_mut().handle_written(*token, result, now, o));
    }
    // Conflict successors and blocked rows count when they are written (§12).
    let after = written(flush);
    let mut counters = inner.counters.borrow_mut();
    counters.conflicts += after.0 - before.0;
    counters.permanent_failures += after.1 - before.1;
    failed.map_or(Ok(()), Err)
}

/// The planners of `writes`, for one readwrite transaction (see [`write_together`]).
fn planners<'a>(
    inner: &'a Inner,
    flush: &'a RefCell<Flush>,
    writes: &[(Token, Vec<Scope>)],
) -> Vec<(Vec<Scope>, Planner<'a>)> {
    let now = inner.now();
    // A loop, not a `collect`: no extend code of its own for this iterator (issue 35).
    let mut items: Vec<(Vec<Scope>, Planner<'_>)> = Vec::with_capacity(writes.len());
    for (token, scopes) in writes {
        let token = *token;
        let planner: Planner<'_> =
            Box::new(move |current: &[serde_json::Value]| flush.borrow_mut().plan(token, current, now, &mut &*inner));
        items.push((scopes.clone(), planner));
    }
    items
}

/// Which port a request calls, and its token: what handling the answer needs.
enum PortCall {
    Send(Token),
    Prepare(Token),
    Find(Token),
}

async fn execute(inner: &Inner, flush: &RefCell<Flush>, ports: &Ports, req: Request) -> Result<()> {
    // The port calls share one await (one state of this future, not three).
    let keys = matches!(req, Request::ReadIds { .. });
    let (call_of, port, arg): (_, _, JsValue) = match req {
        // Both reads share one await too.
        Request::ReadOwner { token, owner } | Request::ReadIds { token, owner } => {
            let read = inner.store.read_one(&AppStores::None, Read::Queue { owner: &owner, keys }).await?;
            if keys {
                let ids = Store::ids_of(read);
                inner.outstanding.with(|o| flush.borrow_mut().handle_ids(token, &ids, &mut &*inner, o));
            } else {
                let rows = Store::rows_of(read)?;
                let now = inner.now();
                inner.outstanding.with(|o| flush.borrow_mut().handle_rows(token, &rows, now, &mut &*inner, o));
            }
            return Ok(());
        }
        // §8 answers written together: the longest they wait for company.
        Request::Wait { token, ms } => {
            let _ = JsFuture::from(crate::turn::sleep(ms)).await;
            flush.borrow_mut().handle_waited(token);
            return Ok(());
        }
        // `drive` gathers the writes for its one transaction at a time (`write_together`):
        // none comes here, and the future of every other request stays small.
        Request::Write { .. } => unreachable!("drive gathers the writes"),
        Request::Send { token, op } => (PortCall::Send(token), &ports.send, crate::convert::send_op_to_js(&op)),
        Request::Prepare { token, intent, predecessor, receipt } => {
            let arg = js_sys::Object::new();
            crate::js::set(&arg, "intent", &row_to_js(&encode(&intent)));
            let pred = predecessor.as_ref().map_or(JsValue::NULL, |p| row_to_js(&encode(p)));
            crate::js::set(&arg, "predecessor", &pred);
            crate::js::set(&arg, "receipt", &to_js(&receipt));
            (PortCall::Prepare(token), &ports.prepare_successor, arg.into())
        }
        Request::FindReceipt { token, owner, operation_id } => {
            let arg = js_sys::Object::new();
            crate::js::set(&arg, "owner", &owner.into());
            crate::js::set(&arg, "operationId", &operation_id.into());
            (PortCall::Find(token), &ports.find_create_receipt, arg.into())
        }
    };
    // `None`: the app gave no such port.
    let answer = match port {
        Some(f) => Some(match call(f, &arg) {
            Ok(p) => JsFuture::from(p).await,
            Err(e) => Err(e),
        }),
        None => None,
    };
    match call_of {
        PortCall::Send(token) => {
            let outcome = match answer {
                // Checked as JSON (SPEC §3 rule 4): a receipt or an `actualRevision` is
                // reported and may be stored, never silently changed.
                Some(Ok(v)) => outcome_from_js(&v).unwrap_or_else(|e| {
                    let _ = crate::js::console_warn_text(&outbox_core::text::concat(&[
                        "outbox: send returned no Outcome (",
                        &e.message,
                        "); retrying later",
                    ]));
                    Outcome::transient("BAD_OUTCOME")
                }),
                Some(Err(_)) => Outcome::transient("SEND_FAILED"),
                None => Outcome::transient("NO_SEND"),
            };
            // The tab's counters follow each answer (§12), not only the end of the flush.
            inner.counters.borrow_mut().record(&outcome);
            let now = inner.now();
            inner.outstanding.with(|o| flush.borrow_mut().handle_sent(token, outcome, now, o));
        }
        PortCall::Prepare(token) => {
            let result = match answer {
                // Not JSON: the intent is quarantined as for a port that throws (§7).
                Some(Ok(v)) => prepared_from_js(&v).map_err(|e| {
                    let _ = crate::js::console_warn_text(&outbox_core::text::concat(&[
                        "outbox: prepareSuccessor: ",
                        &e.message,
                    ]));
                    e.message
                }),
                Some(Err(_)) => Err("prepareSuccessor threw".to_owned()),
                None => Err("no prepareSuccessor".to_owned()),
            };
            inner.outstanding.with(|o| flush.borrow_mut().handle_prepared(token, result, o));
        }
        PortCall::Find(token) => {
            let result = match answer {
                Some(Ok(v)) if v.is_null() || v.is_undefined() => Ok(None),
                Some(Ok(v)) => from_js(&v, "receipt").map(Some).map_err(|e| e.message),
                Some(Err(_)) => Err("findCreateReceipt threw".to_owned()),
                None => Ok(None),
            };
            inner.outstanding.with(|o| flush.borrow_mut().handle_found(token, result, o));
        }
    }
    Ok(())
}
