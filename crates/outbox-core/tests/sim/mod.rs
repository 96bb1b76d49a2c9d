//! Simulated tabs over one in-memory store, each with its own fake clock and draws, driving
//! the planner's flush machine request by request (SPEC §13 scenarios, property tests).
#![allow(dead_code)]

pub mod server;

use outbox_core::enqueue::{enqueue_scope, plan_enqueue, EnqueuePlan};
use outbox_core::input::NewOperation;
use outbox_core::intent::Prepared;
use outbox_core::memstore::MemStore;
use outbox_core::records::{enqueue_records, parse_writes, Reconcile, RecordWrite};
use outbox_core::{
    decode, Draws, Flush, FlushOptions, FlushReport, Millis, Outcome, Outstanding, ReplaceOutcome, Request, Row, Scope,
    Tab, Token,
};
use serde_json::{json, Value};
pub use server::Server;
use std::collections::HashMap;

/// Deterministic draws: a small LCG and numbered ids.
#[derive(Clone, Debug)]
pub struct SeqDraws {
    pub prefix: String,
    pub state: u64,
    pub n: u64,
}

impl Draws for SeqDraws {
    fn unit(&mut self) -> f64 {
        self.state = self.state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.state >> 11) as f64 / (1u64 << 53) as f64
    }
    fn new_id(&mut self) -> String {
        self.n += 1;
        format!("{}-{}", self.prefix, self.n)
    }
}

/// What the fake app answers from its ports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ports {
    pub prepare: bool,
    pub find: bool,
}

pub struct SimTab {
    pub tab: Tab,
    pub now: Millis,
    pub draws: SeqDraws,
    pub flush: Option<Flush>,
    /// Requests asked by the flush and not carried out yet.
    pub inbox: Vec<Request>,
    /// Sends carried out whose answer has not been delivered: (token, outcome).
    pub air: Vec<(Token, Outcome)>,
    pub ports: Ports,
    /// The owner of the running flush.
    pub flush_owner: String,
    pub reports: Vec<FlushReport>,
    /// token → (row id, fence) of claims this tab committed.
    pub tickets: HashMap<Token, (String, u64)>,
}

pub struct World {
    pub store: MemStore,
    pub server: Server,
    pub tabs: Vec<SimTab>,
    pub ids: u64,
    /// Each tab's in-memory record of what its flushes have outstanding, by tab id (two
    /// sim tabs given one tab id are two flushes of one tab and share it).
    pub outstanding: HashMap<String, Outstanding>,
    /// The app's `reconcile` port, called in the ACK's transaction when it commits.
    pub reconcile: fn(&Reconcile) -> Vec<RecordWrite>,
    /// Every answer the port was asked about, in order.
    pub reconciled: Vec<Reconcile>,
}

pub const LEASE: i64 = 10_000;
pub const T0: i64 = 1_700_000_000_000;

impl World {
    pub fn new(n_tabs: usize) -> World {
        let tabs = (0..n_tabs)
            .map(|i| SimTab {
                tab: Tab::new(format!("tab-{i}")).with_lease(LEASE),
                now: Millis(T0),
                draws: SeqDraws { prefix: format!("c{i}"), state: i as u64 + 1, n: 0 },
                flush: None,
                inbox: vec![],
                air: vec![],
                ports: Ports { prepare: true, find: true },
                flush_owner: String::new(),
                reports: vec![],
                tickets: HashMap::new(),
            })
            .collect();
        World {
            store: MemStore::new(),
            server: Server::default(),
            tabs,
            ids: 0,
            outstanding: HashMap::new(),
            reconcile: |_| Vec::new(),
            reconciled: Vec::new(),
        }
    }

    pub fn advance(&mut self, tab: usize, ms: i64) {
        self.tabs[tab].now = self.tabs[tab].now.plus(ms);
    }

    pub fn advance_all(&mut self, ms: i64) {
        for t in 0..self.tabs.len() {
            self.advance(t, ms);
        }
    }

    /// Enqueues as the binding does: one transaction over the operation's scope.
    pub fn enqueue(&mut self, tab: usize, op: Value) -> EnqueuePlan {
        self.enqueue_with(tab, op, Value::Null)
    }

    /// Enqueues with the app's record `writes`, committed in the same transaction.
    pub fn enqueue_with(&mut self, tab: usize, op: Value, writes: Value) -> EnqueuePlan {
        let writes = parse_writes(&writes, "writes").expect("valid writes");
        let op = NewOperation::from_json(&op).expect("valid operation");
        self.ids += 2;
        let (id, reissue) = (format!("op-{}", self.ids - 1), format!("op-{}", self.ids));
        let t = &self.tabs[tab];
        let scope = enqueue_scope(&op, &id);
        let mut out = None;
        let r = self.store.transact(&[scope], |rows| {
            let mut p = plan_enqueue(&op, &id, &reissue, rows, &t.tab, t.now);
            p.plan.records = enqueue_records(&op, &id, &writes);
            let plan = p.plan.clone();
            out = Some(p);
            Some(plan)
        });
        assert_eq!(r, Some(ReplaceOutcome::Committed));
        out.unwrap()
    }

    pub fn row(&self, id: &str) -> Option<Row> {
        self.store.get(id).map(|v| decode(v).expect("decodable"))
    }

    pub fn raw(&self, id: &str) -> Option<Value> {
        self.store.get(id).cloned()
    }

    pub fn start_flush(&mut self, tab: usize, owner: &str) {
        self.start_flush_with(tab, owner, |_| {});
    }

    /// Starts a flush with options changed by `edit` (limits, concurrency).
    pub fn start_flush_with(&mut self, tab: usize, owner: &str, edit: impl FnOnce(&mut FlushOptions)) {
        let t = &mut self.tabs[tab];
        let mut opts = FlushOptions::new(owner, t.tab.clone());
        opts.has_prepare = t.ports.prepare;
        opts.has_find = t.ports.find;
        edit(&mut opts);
        t.flush_owner = owner.to_owned();
        let out = self.outstanding.entry(t.tab.tab_id.clone()).or_default();
        t.flush = Some(Flush::new(opts, out));
        t.inbox.clear();
        self.collect(tab);
    }

    /// Moves the flush's new requests into the tab's inbox (after driving it by hand).
    pub fn collect(&mut self, tab: usize) {
        let t = &mut self.tabs[tab];
        if let Some(f) = t.flush.as_mut() {
            while let Some(r) = f.poll_request() {
                t.inbox.push(r);
            }
            // The machine is done exactly when nothing it asked for is left to carry out but
            // a wait (§8 answers written together), which a done flush need not have.
            let idle = t.inbox.iter().all(|r| matches!(r, Request::Wait { .. })) && t.air.is_empty();
            assert_eq!(f.is_done(), idle, "is_done disagrees with what is pending");
            assert_eq!(f.owner(), t.flush_owner, "the flush's owner");
            if f.is_done() && idle {
                t.inbox.clear();
                t.reports.push(f.report().clone());
                if let Some(out) = self.outstanding.get_mut(&t.tab.tab_id) {
                    out.end(f.id());
                }
                t.flush = None;
            }
        }
    }

    /// Calls `f` with the tab's flush and the tab's record of what it has outstanding (for
    /// tests that hand a result to the flush by hand).
    pub fn with_flush<R>(&mut self, tab: usize, f: impl FnOnce(&mut Flush, &mut Outstanding) -> R) -> R {
        let t = &mut self.tabs[tab];
        let out = self.outstanding.entry(t.tab.tab_id.clone()).or_default();
        f(t.flush.as_mut().expect("a flush is running"), out)
    }

    /// The tab's record of what its flushes have outstanding.
    pub fn outstanding(&mut self, tab: usize) -> &mut Outstanding {
        self.outstanding.entry(self.tabs[tab].tab.tab_id.clone()).or_default()
    }

    pub fn flushing(&self, tab: usize) -> bool {
        self.tabs[tab].flush.is_some()
    }

    /// Index of the first pending request matching `pred`.
    pub fn find(&self, tab: usize, pred: impl Fn(&Request) -> bool) -> Option<usize> {
        self.tabs[tab].inbox.iter().position(pred)
    }

    /// Carries out the write request `idx` of `tab` (planned and applied to the store) but
    /// hands its result to the flush only at [`World::written`]: the driver's window between
    /// a transaction's plan and its commit, in which answers still arrive.
    pub fn write_unhandled(&mut self, tab: usize, idx: usize) -> (Token, Option<ReplaceOutcome>) {
        let Request::Write { token, scopes } = self.tabs[tab].inbox.remove(idx) else { panic!("not a write") };
        let t = &mut self.tabs[tab];
        let (flush, now, draws) = (t.flush.as_mut().expect("a flush is running"), t.now, &mut t.draws);
        let r = self.store.transact(&scopes, |cur| flush.plan(token, cur, now, draws));
        (token, r)
    }

    /// Hands a write's result to the flush ([`World::write_unhandled`]).
    pub fn written(&mut self, tab: usize, token: Token, r: Option<ReplaceOutcome>) {
        let now = self.tabs[tab].now;
        self.with_flush(tab, |f, out| f.handle_written(token, r, now, out));
        self.collect(tab);
    }

    /// Carries out pending request `idx` of `tab`. Sends go to the server now; their answer
    /// waits in the air until [`World::deliver`]. `answer` decides what the tab hears.
    pub fn step(
        &mut self,
        tab: usize,
        idx: usize,
        answer: &mut dyn FnMut(&mut Server, &outbox_core::SendOp) -> Outcome,
    ) {
        let req = self.tabs[tab].inbox.remove(idx);
        let t = &mut self.tabs[tab];
        let Some(flush) = t.flush.as_mut() else {
            return;
        };
        let now = t.now;
        let out = self.outstanding.entry(t.tab.tab_id.clone()).or_default();
        match req {
            Request::ReadOwner { token, owner } => {
                let rows = self.store.read_owner(&owner);
                flush.handle_rows(token, &rows, now, &mut t.draws, out);
            }
            Request::ReadIds { token, owner } => {
                let ids: Vec<String> =
                    self.store.read_owner(&owner).iter().filter_map(|r| r["id"].as_str().map(str::to_owned)).collect();
                flush.handle_ids(token, &ids, &mut t.draws, out);
            }
            Request::Write { token, scopes } => {
                let draws = &mut t.draws;
                let (port, seen) = (self.reconcile, &mut self.reconciled);
                let r = self.store.transact_with(&scopes, |cur| flush.plan(token, cur, now, draws), &mut |r| {
                    seen.push(r.clone());
                    port(r)
                });
                flush.handle_written(token, r, now, out);
            }
            Request::Send { token, op } => {
                if let Some(claim) = self.store.get(&op.id).and_then(|v| v.get("claim")) {
                    t.tickets.insert(token, (op.id.clone(), claim["fence"].as_u64().unwrap()));
                }
                let out = answer(&mut self.server, &op);
                t.air.push((token, out));
            }
            Request::Prepare { token, intent, receipt, .. } => {
                let p = prepare(&intent, &receipt);
                flush.handle_prepared(token, p, out);
            }
            Request::FindReceipt { token, operation_id, .. } => {
                let r = Ok(self.server.receipt_of(&operation_id));
                flush.handle_found(token, r, out);
            }
            Request::Wait { token, .. } => flush.handle_waited(token),
        }
        self.collect(tab);
    }

    /// Carries out every pending request of `tab` but its claim batches (writes of rows
    /// read in a round: stretches or keys), the sends' answers staying in the air.
    pub fn step_all_but_claims(
        &mut self,
        tab: usize,
        answer: &mut dyn FnMut(&mut Server, &outbox_core::SendOp) -> Outcome,
    ) {
        while let Some(i) = self.find(tab, |r| !is_claim(r)) {
            self.step(tab, i, answer);
        }
    }

    /// Delivers the oldest answer and carries out the ACK it asks for, leaving every other
    /// pending request (a claim batch being written, the send of a row claimed ahead) where
    /// it is. §8: with other sends out the answer is parked; the wait that bounds it, carried
    /// out now, asks for its write.
    pub fn answer_one(&mut self, tab: usize) {
        self.deliver(tab, 0);
        if let Some(i) = self.find(tab, |r| matches!(r, Request::Wait { .. })) {
            self.step(tab, i, &mut |s, op| s.handle(op));
        }
        let ack = self
            .find(tab, |r| matches!(r, Request::Write { scopes, .. } if matches!(scopes[..], [Scope::Target { .. }])));
        self.step(tab, ack.expect("the answer asks for its ACK"), &mut |s, op| s.handle(op));
    }

    /// Delivers the answer of send `idx` in the air.
    pub fn deliver(&mut self, tab: usize, idx: usize) {
        let t = &mut self.tabs[tab];
        let (token, outcome) = t.air.remove(idx);
        if let Some(f) = t.flush.as_mut() {
            f.handle_sent(token, outcome, t.now, self.outstanding.entry(t.tab.tab_id.clone()).or_default());
        }
        self.collect(tab);
    }

    /// The tab dies: its flush, pending requests and answers in the air are gone (and with
    /// them what it held in the tab's memory).
    pub fn kill(&mut self, tab: usize) {
        let t = &mut self.tabs[tab];
        if let (Some(f), Some(out)) = (t.flush.as_ref(), self.outstanding.get_mut(&t.tab.tab_id)) {
            out.end(f.id());
        }
        t.flush = None;
        t.inbox.clear();
        t.air.clear();
    }

    /// Runs the tab's flush to its end, every request in order, answers delivered at once.
    pub fn drain(
        &mut self,
        tab: usize,
        answer: &mut dyn FnMut(&mut Server, &outbox_core::SendOp) -> Outcome,
    ) -> FlushReport {
        while self.flushing(tab) {
            if !self.tabs[tab].inbox.is_empty() {
                self.step(tab, 0, answer);
            } else if !self.tabs[tab].air.is_empty() {
                self.deliver(tab, 0);
            } else {
                panic!("flush stuck with nothing to do");
            }
        }
        self.tabs[tab].reports.last().cloned().unwrap()
    }

    /// Runs the tab's flush, if one is running, to its end (as [`World::drain`]).
    pub fn drain_with(&mut self, tab: usize, answer: &mut dyn FnMut(&mut Server, &outbox_core::SendOp) -> Outcome) {
        if self.flushing(tab) {
            let _ = self.drain(tab, answer);
        }
    }

    /// Starts and drains a flush with a server that answers every request truly.
    pub fn flush(&mut self, tab: usize, owner: &str) -> FlushReport {
        self.start_flush(tab, owner);
        self.drain(tab, &mut |s, op| s.handle(op))
    }
}

/// A claim batch's write: it reads rows of the round (stretches, keys), not records.
pub fn is_claim(r: &Request) -> bool {
    matches!(r, Request::Write { scopes, .. } if !scopes.iter().any(|s| matches!(s, Scope::Target { .. })))
}

/// The fake app's `prepareSuccessor`: the server id as target, the intent's body, the
/// receipt's revision as base revision.
pub fn prepare(intent: &Row, receipt: &Value) -> Result<Prepared, String> {
    let target = receipt.get("serverId").and_then(Value::as_str).ok_or("receipt without serverId")?;
    Ok(Prepared { target: target.to_owned(), body: intent.body.clone(), revision: receipt.get("revision").cloned() })
}

pub fn update(owner: &str, target: &str, body: Value) -> Value {
    json!({"owner": owner, "target": target, "kind": "update", "body": body})
}

pub fn create(owner: &str, body: Value) -> Value {
    json!({"owner": owner, "kind": "create", "body": body})
}

pub fn delete(owner: &str, target: &str) -> Value {
    json!({"owner": owner, "target": target, "kind": "delete"})
}

pub fn is_send(r: &Request) -> bool {
    matches!(r, Request::Send { .. })
}

pub fn truthful(s: &mut Server, op: &outbox_core::SendOp) -> Outcome {
    s.handle(op)
}

/// Steps `tab` until a send is in the air (or the flush ends).
pub fn run_until_sent(w: &mut World, tab: usize, answer: &mut dyn FnMut(&mut Server, &outbox_core::SendOp) -> Outcome) {
    while w.flushing(tab) && w.tabs[tab].air.is_empty() {
        if w.tabs[tab].inbox.is_empty() {
            break;
        }
        w.step(tab, 0, answer);
    }
}

/// An intent of `pending:<create>` waiting for `create`, as a tab wrote it before the create
/// row vanished (§7 vanished predecessor).
pub fn orphan_intent(id: &str, create: &str, now: i64) -> Value {
    json!({"id": id, "owner": "alice", "target": format!("pending:{create}"), "kind": "update",
           "body": {"w": 1}, "savedAt": now, "state": "queued", "successorOf": create})
}

/// The server applies create `id` of alice's, as an older tab would have sent it.
pub fn applied_create(server: &mut Server, id: &str) {
    let _ = server.handle(&outbox_core::SendOp {
        id: id.into(),
        kind: "create",
        target: format!("pending:{id}"),
        body: json!({}),
        revision: Value::Null,
        fingerprint: "f".into(),
        attempt: 1,
        owner: "alice".into(),
    });
}
