//! The flush orchestration, sans-IO (SPEC §8 drain, §5 claim, §6 ACK, §7 intents, §9).
//!
//! [`Flush`] is a state machine. Its driver (the IndexedDB binding, or the tests' in-memory
//! harness) calls the methods in this order, until [`Flush::is_done`]:
//!
//! 1. [`Flush::poll_request`] returns the next [`Request`] to carry out (several may be
//!    outstanding at once; each carries its own [`Token`]);
//! 2. the driver carries it out and hands the result back with the matching `handle_*`:
//!    - [`Request::ReadOwner`]: read every row of the owner → [`Flush::handle_rows`];
//!    - [`Request::Write`]: open **one** readwrite transaction, read the rows of `scopes`,
//!      call [`Flush::plan`] synchronously, carry out the returned plan (compare its
//!      `expected` with the rows of its scopes as just read; apply all or nothing) and
//!      commit → [`Flush::handle_written`];
//!    - [`Request::Send`] → app `send` → [`Flush::handle_sent`];
//!    - [`Request::Prepare`] → app `prepareSuccessor` → [`Flush::handle_prepared`];
//!    - [`Request::FindReceipt`] → app `findCreateReceipt` → [`Flush::handle_found`].
//!
//! Ports and sends are awaited between transactions, never inside one. Time and random
//! draws come in as arguments.

mod batch;
mod report;
mod task;

pub use report::{FlushReport, ReceiptReport};

use crate::codec::Stored;
use crate::intent::is_orphan_intent;
use crate::intent::Prepared;
use crate::outcome::Outcome;
use crate::plan::{ReplaceOutcome, ReplacePlan, Scope};
use crate::retry::Backoff;
use crate::row::{Row, Ticket};
use crate::select::{blocked_index, select_sendable};
use crate::tab::Tab;
use crate::time::Millis;
use batch::{Candidate, ClaimBatch};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use task::{Task, Wait};

/// Identifies one outstanding request of a flush.
pub type Token = u64;

/// Random inputs, drawn by the driver when the machine asks.
pub trait Draws {
    /// A draw in `[0, 1)` (backoff jitter, claim order).
    fn unit(&mut self) -> f64;
    /// A fresh operation id (UUID v4) for a conflict successor.
    fn new_id(&mut self) -> String;
}

/// The request `send(op)` receives (§15).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SendOp {
    /// Operation id: the `Idempotency-Key`.
    pub id: String,
    /// create / update / delete.
    pub kind: &'static str,
    /// Record key.
    pub target: String,
    /// Body as stored.
    pub body: Value,
    /// Base revision (`null` when none).
    pub revision: Value,
    /// Request fingerprint.
    pub fingerprint: String,
    /// Attempt number, from 1.
    pub attempt: u64,
    /// Account (for the app's own checks; the transport uses the current session).
    pub owner: String,
}

impl SendOp {
    fn of(row: &Row) -> SendOp {
        SendOp {
            id: row.id.clone(),
            kind: row.kind.as_str(),
            target: row.target.clone(),
            body: row.body.clone(),
            revision: row.revision.clone().unwrap_or(Value::Null),
            fingerprint: row.fingerprint.clone(),
            attempt: row.evidence.as_ref().map_or(1, |e| e.attempt_count),
            owner: row.owner.clone(),
        }
    }
}

/// Something the machine needs its driver to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// Read every stored row of `owner` (index `[owner, savedAt]`).
    ReadOwner {
        /// Hand the rows back with this token.
        token: Token,
        /// The owner.
        owner: String,
    },
    /// One readwrite transaction over `scopes`, planned by [`Flush::plan`] inside it.
    Write {
        /// Token for `plan` and `handle_written`.
        token: Token,
        /// Scopes to read inside the transaction.
        scopes: Vec<Scope>,
    },
    /// Send one attempt with the app's transport.
    Send {
        /// Token for `handle_sent`.
        token: Token,
        /// The request.
        op: SendOp,
    },
    /// Ask the app's `prepareSuccessor` port.
    Prepare {
        /// Token for `handle_prepared`.
        token: Token,
        /// The intent row.
        intent: Row,
        /// The create row (`None` on the vanished-predecessor path).
        predecessor: Option<Row>,
        /// The create's receipt.
        receipt: Value,
    },
    /// Ask the app's `findCreateReceipt` port.
    FindReceipt {
        /// Token for `handle_found`.
        token: Token,
        /// Account.
        owner: String,
        /// The vanished create's id.
        operation_id: String,
    },
}

/// Options of one flush.
#[derive(Clone, Debug, PartialEq)]
pub struct FlushOptions {
    /// The only owner whose rows are read, claimed and changed.
    pub owner: String,
    /// This tab.
    pub tab: Tab,
    /// Retry backoff.
    pub backoff: Backoff,
    /// Stop claiming after this many sends.
    pub max_rows: Option<u64>,
    /// Rows of different targets sent at once (at least 1).
    pub concurrency: usize,
    /// The app gave `prepareSuccessor`.
    pub has_prepare: bool,
    /// The app gave `findCreateReceipt`.
    pub has_find: bool,
}

impl FlushOptions {
    /// Defaults: no row limit, 4 concurrent sends, no ports.
    #[must_use]
    pub fn new(owner: impl Into<String>, tab: Tab) -> FlushOptions {
        FlushOptions {
            owner: owner.into(),
            tab,
            backoff: Backoff::default(),
            max_rows: None,
            concurrency: 4,
            has_prepare: false,
            has_find: false,
        }
    }
}

/// One flush of one owner's rows by one tab. See the module docs for the call order.
#[derive(Debug)]
pub struct Flush {
    opts: FlushOptions,
    requests: VecDeque<Request>,
    tasks: BTreeMap<Token, Task>,
    next_token: Token,
    reading: Option<Token>,
    candidates: VecDeque<Candidate>,
    attempted: HashSet<String>,
    orphans_tried: HashSet<String>,
    busy_targets: HashMap<String, Token>,
    conflict_born: HashSet<String>,
    progress: bool,
    stopped: bool,
    standalone: bool,
    sends: u64,
    report: FlushReport,
}

impl Flush {
    /// A flush that starts by reading the owner's rows.
    #[must_use]
    pub fn new(opts: FlushOptions) -> Flush {
        let mut f = Flush::empty(opts, false);
        f.start_round();
        f
    }

    /// Applies one answer the app obtained itself (`ack(owner, rowId, ticket, outcome)`):
    /// the same steps a flush takes after `send`, and nothing else.
    #[must_use]
    pub fn for_answer(opts: FlushOptions, row: Row, ticket: Ticket, outcome: Outcome) -> Flush {
        let mut f = Flush::empty(opts, true);
        let token = f.token();
        f.busy_targets.insert(row.target.clone(), token);
        f.tasks.insert(token, Task::Sending { row, ticket });
        f.handle_sent(token, outcome);
        f
    }

    fn empty(opts: FlushOptions, standalone: bool) -> Flush {
        Flush {
            opts,
            requests: VecDeque::new(),
            tasks: BTreeMap::new(),
            next_token: 1,
            reading: None,
            candidates: VecDeque::new(),
            attempted: HashSet::new(),
            orphans_tried: HashSet::new(),
            busy_targets: HashMap::new(),
            conflict_born: HashSet::new(),
            progress: false,
            stopped: false,
            standalone,
            sends: 0,
            report: FlushReport::default(),
        }
    }

    fn token(&mut self) -> Token {
        self.next_token += 1;
        self.next_token
    }

    fn start_round(&mut self) {
        let token = self.token();
        self.reading = Some(token);
        self.progress = false;
        self.requests.push_back(Request::ReadOwner { token, owner: self.opts.owner.clone() });
    }

    /// The next request to carry out, if any.
    pub fn poll_request(&mut self) -> Option<Request> {
        self.requests.pop_front()
    }

    /// True when nothing is outstanding and nothing more will be asked.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.requests.is_empty() && self.tasks.is_empty() && self.reading.is_none() && self.candidates.is_empty()
    }

    /// What the flush did so far.
    #[must_use]
    pub fn report(&self) -> &FlushReport {
        &self.report
    }

    /// The owner's rows, read for a round: select what is sendable now (§8) and the orphan
    /// intents (§7), then start claiming.
    pub fn handle_rows(&mut self, token: Token, rows: &[Value], now: Millis, draws: &mut dyn Draws) {
        if self.reading != Some(token) {
            return;
        }
        self.reading = None;
        let owner = self.opts.owner.clone();
        // Another owner's rows are never considered, whatever the driver read (§11).
        let (stored, raws): (Vec<Stored>, Vec<&Value>) = rows
            .iter()
            .map(|raw| (Stored::from_value(raw), raw))
            .filter(|(s, _)| s.row().is_none_or(|r| r.owner == owner))
            .unzip();
        let by_id: HashMap<&str, &Value> =
            stored.iter().zip(&raws).filter_map(|(s, raw)| s.row().map(|r| (r.id.as_str(), *raw))).collect();
        let exists = blocked_index(&stored);
        let tab = &self.opts.tab;
        let picked: Vec<Candidate> = select_sendable(&stored, &tab.tab_id, now, tab.lease_ms)
            .into_iter()
            .filter(|r| !self.attempted.contains(&r.id))
            .filter_map(|r| {
                let pred = r.successor_of.as_deref().and_then(|p| by_id.get(p)).map(|v| (*v).clone());
                Candidate::new(by_id[r.id.as_str()].clone(), pred)
            })
            .collect();
        // Start at a random place (rows of one target are chained by `successorOf`, so only
        // the cross-target order changes): tabs draining one queue then rarely collide.
        let mut picked = VecDeque::from(picked);
        if !picked.is_empty() {
            let offset = ((draws.unit().clamp(0.0, 0.999_999) * picked.len() as f64) as usize) % picked.len();
            picked.rotate_left(offset);
        }
        self.candidates = picked;
        let orphans: Vec<Value> = stored
            .iter()
            .filter_map(Stored::row)
            .filter(|r| {
                let pred = r.successor_of.as_deref().is_some_and(|p| exists.contains_key(p));
                is_orphan_intent(r, pred) && !self.orphans_tried.contains(&r.id)
            })
            .map(|r| by_id[r.id.as_str()].clone())
            .collect();
        for raw in orphans {
            let id = raw["id"].as_str().unwrap_or_default().to_owned();
            self.orphans_tried.insert(id);
            let token = self.token();
            let intent = Stored::from_value(&raw).row().cloned().expect("decoded above");
            let task = Task::orphan(raw, intent, &self.opts);
            self.emit(token, &task);
            self.tasks.insert(token, task);
        }
        self.pump();
    }

    /// Plans the write of request `token` inside its transaction. `current` are the rows of
    /// the request's scopes as just read. `None`: write nothing.
    pub fn plan(&mut self, token: Token, current: &[Value], now: Millis, draws: &mut dyn Draws) -> Option<ReplacePlan> {
        let task = self.tasks.get_mut(&token)?;
        task.plan(&self.opts, current, now, draws)
    }

    /// The result of a [`Request::Write`]: `None` when [`Flush::plan`] planned nothing.
    pub fn handle_written(&mut self, token: Token, result: Option<ReplaceOutcome>) {
        let Some(task) = self.tasks.remove(&token) else {
            return;
        };
        let stale_before = self.report.stale;
        let next = task.written(result, &mut self.report, &mut self.conflict_born);
        if self.report.stale > stale_before && self.reading.is_none() && !self.standalone {
            // Another tab is claiming from the same queue: the list read for this round is
            // out of date. Read the queue again now (rows it claimed are in flight there and
            // drop out) and go on from a new random place, instead of meeting its rows one
            // by one.
            self.candidates.clear();
            self.start_round();
        }
        self.after(token, next);
    }

    /// The app's transport answered (or threw, mapped by the driver to a transient outcome).
    pub fn handle_sent(&mut self, token: Token, outcome: Outcome) {
        let Some(task) = self.tasks.remove(&token) else {
            return;
        };
        self.report.counters.record(&outcome);
        if matches!(outcome, Outcome::Auth) {
            // §6: an auth answer ends the flush for this owner.
            self.stopped = true;
            self.candidates.clear();
        }
        let next = task.sent(outcome);
        self.after(token, next);
    }

    /// `prepareSuccessor` answered (`Err` when it threw or returned something unusable).
    pub fn handle_prepared(&mut self, token: Token, prepared: Result<Prepared, String>) {
        let Some(task) = self.tasks.remove(&token) else {
            return;
        };
        let next = task.prepared(prepared);
        self.after(token, next);
    }

    /// `findCreateReceipt` answered (`Err` when it threw: the row is left unchanged).
    pub fn handle_found(&mut self, token: Token, found: Result<Option<Value>, String>) {
        let Some(task) = self.tasks.remove(&token) else {
            return;
        };
        let next = task.found(found, &self.opts);
        self.after(token, next);
    }

    fn after(&mut self, token: Token, next: Wait) {
        match next {
            Wait::Done { progress } => {
                self.progress |= progress;
                self.busy_targets.retain(|_, t| *t != token);
            }
            Wait::On(task) => {
                self.emit(token, &task);
                self.tasks.insert(token, task);
            }
            Wait::Spawn(tasks, returned) => {
                self.busy_targets.retain(|_, t| *t != token);
                for c in returned.into_iter().rev() {
                    self.attempted.remove(&c.id);
                    self.candidates.push_front(c);
                }
                for task in tasks {
                    let t = self.token();
                    if let Task::Sending { row, .. } = &task {
                        self.busy_targets.insert(row.target.clone(), t);
                    }
                    self.emit(t, &task);
                    self.tasks.insert(t, task);
                }
            }
        }
        self.pump();
    }

    fn emit(&mut self, token: Token, task: &Task) {
        if let Some(req) = task.request(token, &self.opts) {
            if matches!(req, Request::Send { .. }) {
                self.sends += 1;
            }
            self.requests.push_back(req);
        }
    }

    fn used_slots(&self) -> usize {
        self.tasks.values().map(Task::slots).sum()
    }

    /// Starts a claim batch while there is room, then decides whether the drain goes on.
    fn pump(&mut self) {
        let limit = self.opts.concurrency.max(1);
        let room = limit.saturating_sub(self.used_slots());
        let allowed = self
            .opts
            .max_rows
            .map_or(usize::MAX, |m| m.saturating_sub(self.sends + self.claims_in_progress()) as usize);
        // Claim in batches: wait until half the slots are free (or nothing runs), so one
        // transaction claims several rows.
        let busy = self.used_slots() > 0;
        let want = if busy && room < limit.div_ceil(2) { 0 } else { room.min(allowed) };
        let look = want;
        let mut batch = ClaimBatch { want, ..ClaimBatch::default() };
        let mut postponed = false;
        let mut targets: Vec<String> = Vec::new();
        while want > 0 && batch.items.len() < look && !self.stopped {
            let Some(c) = self.candidates.pop_front() else { break };
            if self.busy_targets.contains_key(&c.target) || targets.contains(&c.target) {
                postponed = true; // §8: one target strictly one after another; next round
                continue;
            }
            self.attempted.insert(c.id.clone());
            targets.push(c.target.clone());
            batch.items.push(c);
        }
        if !batch.items.is_empty() {
            let token = self.token();
            for t in targets {
                self.busy_targets.insert(t, token);
            }
            let task = Task::Claim(batch);
            self.emit(token, &task);
            self.tasks.insert(token, task);
        }
        if postponed {
            self.progress = true;
        }
        if self.stopped || self.at_max() {
            self.candidates.clear();
        }
        let idle = self.tasks.is_empty() && self.candidates.is_empty() && self.reading.is_none();
        if idle && self.requests.is_empty() && self.progress && !self.stopped && !self.standalone && !self.at_max() {
            self.start_round();
        }
    }

    fn at_max(&self) -> bool {
        self.opts.max_rows.is_some_and(|m| self.sends + self.claims_in_progress() >= m)
    }

    fn claims_in_progress(&self) -> u64 {
        self.tasks.values().map(|t| if let Task::Claim(b) = t { b.want as u64 } else { 0 }).sum()
    }
}
