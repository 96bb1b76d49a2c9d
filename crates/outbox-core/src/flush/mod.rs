//! The flush orchestration, sans-IO (SPEC §8 drain, §5 claim, §6 ACK, §7 intents, §9).
//!
//! [`Flush`] is a state machine. Its driver (the IndexedDB binding, or the tests' in-memory
//! harness) calls the methods in this order, until [`Flush::is_done`]:
//!
//! 1. [`Flush::poll_request`] returns the next [`Request`] to carry out (several may be
//!    outstanding at once; each carries its own [`Token`]);
//! 2. the driver carries it out and hands the result back with the matching `handle_*`:
//!    - [`Request::ReadOwner`]: read every row of the owner → [`Flush::handle_rows`];
//!    - [`Request::ReadIds`]: read the ids of the owner's rows (keys only) →
//!      [`Flush::handle_ids`];
//!    - [`Request::Write`]: open **one** readwrite transaction, read the rows of `scopes`,
//!      call [`Flush::plan`] synchronously, carry out the returned plan (compare its
//!      `expected` with the rows of its scopes as just read; apply all or nothing) and
//!      commit → [`Flush::handle_written`];
//!    - [`Request::Send`] → app `send` → [`Flush::handle_sent`];
//!    - [`Request::Prepare`] → app `prepareSuccessor` → [`Flush::handle_prepared`];
//!    - [`Request::FindReceipt`] → app `findCreateReceipt` → [`Flush::handle_found`];
//! 3. when it stops driving the flush — at its end, or because a request failed — it calls
//!    [`Outstanding::end`] with [`Flush::id`].
//!
//! Every `handle_*` takes the tab's [`Outstanding`]: the records the tab's flushes are
//! working on, shared by all of them (one tab never has two attempts of a row, or of a
//! target, outstanding; see [`outstanding`]).
//!
//! Ports and sends are awaited between transactions, never inside one. Time and random
//! draws come in as arguments.
//!
//! The flush's own states ([`Flush`] holds one `Phase`):
//!
//! ```text
//!   new() ──▶ Reading ──rows──▶ Draining ──idle, something changed──▶ Reading (next round)
//!                ▲                 │  │ ▲
//!                └─ a claim found ─┘  │ └─ ids back: the list keeps the rows still there
//!                   another tab's     │    and goes on from another random place
//!                   row, nothing left └──▶ a claim found another tab's row, rows left:
//!                   (or no row left       ReadIds (keys only), no claims until back
//!                   after ReadIds)
//!                                     └──idle, nothing changed──▶ done
//!
//!   Reading / Draining ──auth answer (§6), maxRows sends or the deadline (§8)──▶ Ending ──tasks end──▶ done
//!   for_answer() ──▶ Answering ──tasks end──▶ done
//! ```
//!
//! Each row on its way (claim → send → answer → intents converted) is a task; see `task.rs`.

mod batch;
pub mod outstanding;
mod report;
mod request;
mod spread;
mod task;
mod tasks;

pub use outstanding::{FlushId, Outstanding, SharedOutstanding};
pub use report::{FlushReport, ReceiptReport};
pub use request::{Draws, FlushOptions, Request, SendOp, Token, DEFAULT_CONCURRENCY};

use crate::accounts::owned_stored;
use crate::codec::Stored;
use crate::intent::Prepared;
use crate::intent::{awaited_create, is_orphan_intent};
use crate::outcome::Outcome;
use crate::plan::{ReplaceOutcome, ReplacePlan};
use crate::release::Unsent;
use crate::row::{Row, Ticket};
use crate::select::{select_sendable, stored_index};
use crate::time::Millis;
use batch::{Candidate, ClaimBatch};
use outstanding::Taken;
use serde_json::Value;
use spread::{go_on_elsewhere, start_anywhere};
use std::collections::{HashMap, HashSet, VecDeque};
use task::{IntentAction, OrphanStep, Task, Wait};
use tasks::Tasks;

/// Where a flush is (see the diagram in the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The owner's queue is being read for a round; tasks of the round before may still run.
    Reading {
        /// The read's token.
        token: Token,
        /// Something changed in this round that may make more rows sendable.
        progress: bool,
    },
    /// Claiming and sending the round's candidates.
    Draining {
        /// Something changed in this round that may make more rows sendable.
        progress: bool,
    },
    /// No more claims; the tasks under way finish (and a read asked for before is awaited,
    /// then ignored).
    Ending {
        /// Why claiming stopped.
        why: Ending,
        /// The token of a read of the queue still outstanding.
        reading: Option<Token>,
    },
    /// One answer obtained by the app (`ack`): no rounds, no claims.
    Answering,
}

/// Why a flush stopped claiming.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    /// An auth answer ends the flush for its owner (§6); rows claimed but not sent yet are
    /// released back to `queued`.
    Auth,
    /// `maxRows` sends were made (§8).
    MaxRows,
    /// The deadline passed (§8): seen when a round's rows were read or a claim was planned.
    Deadline,
}

/// What a flush remembers across its rounds, so that one flush never repeats itself.
#[derive(Debug, Default)]
struct Memory {
    /// Rows this flush claimed (one attempt per row per flush; a row whose claim did not
    /// commit may be tried again after the next read).
    attempted: HashSet<String>,
    /// Orphan intents whose receipt this flush looked up (once per flush, but see
    /// `orphans_waiting`).
    orphans_tried: HashSet<String>,
    /// Orphan intents whose conversion was not written (the intent it waits for was still
    /// one: its lookup answered later). Tried again once an orphan conversion commits.
    orphans_waiting: Vec<String>,
    /// Conflict successors this flush wrote: one that conflicts again waits for the next
    /// flush, so two writers racing on one record cannot loop.
    conflict_born: HashSet<String>,
}

/// One flush of one owner's rows by one tab. See the module docs for the call order.
#[derive(Debug)]
pub struct Flush {
    opts: FlushOptions,
    id: FlushId,
    phase: Phase,
    requests: VecDeque<Request>,
    tasks: Tasks,
    next_token: Token,
    /// The round's sendable rows not claimed yet, in claim order.
    candidates: VecDeque<Candidate>,
    /// Targets this flush holds in the tab's [`Outstanding`], with the task holding each.
    held: HashMap<String, Token>,
    /// The token of a [`Request::ReadIds`] asked for after meeting another tab's claims:
    /// no claims until it is back.
    refreshing: Option<Token>,
    memory: Memory,
    sends: u64,
    report: FlushReport,
    /// The tab's auth answers for this owner when this flush last looked (§6): one more,
    /// received by any flush of the tab, stops this one too.
    auth_answers: u64,
}

impl Flush {
    /// A flush that starts by reading the owner's rows.
    #[must_use]
    pub fn new(opts: FlushOptions, out: &mut Outstanding) -> Flush {
        let mut f = Flush::empty(opts, out, Phase::Draining { progress: false });
        f.start_round();
        f
    }

    /// Applies one answer the app obtained itself (`ack(owner, rowId, ticket, outcome)`):
    /// the same steps a flush takes after `send`, and nothing else.
    #[must_use]
    pub fn for_answer(opts: FlushOptions, row: Row, ticket: Ticket, outcome: Outcome, out: &mut Outstanding) -> Flush {
        let mut f = Flush::empty(opts, out, Phase::Answering);
        if ticket.tab_id != f.opts.tab.tab_id {
            // §6: only this tab's own claim is answered here; another tab's ticket is not
            // mine, whatever the row carries.
            return f;
        }
        let token = f.token();
        f.tasks.insert(token, Task::Sending { row, ticket, before: None });
        f.handle_sent(token, outcome, out);
        f
    }

    fn empty(opts: FlushOptions, out: &mut Outstanding, phase: Phase) -> Flush {
        Flush {
            auth_answers: out.auth_answers(&opts.owner),
            opts,
            id: out.begin(),
            phase,
            requests: VecDeque::new(),
            tasks: Tasks::default(),
            next_token: 1,
            candidates: VecDeque::new(),
            held: HashMap::new(),
            refreshing: None,
            memory: Memory::default(),
            sends: 0,
            report: FlushReport::default(),
        }
    }

    /// This flush among the tab's flushes (for [`Outstanding::end`]).
    #[must_use]
    pub fn id(&self) -> FlushId {
        self.id
    }

    /// Whether this carries out one answer the app gave (`ack`, [`Flush::for_answer`])
    /// rather than draining the owner's queue.
    #[must_use]
    pub fn is_one_answer(&self) -> bool {
        self.phase == Phase::Answering
    }

    /// The owner whose rows this flush sends.
    #[must_use]
    pub fn owner(&self) -> &str {
        &self.opts.owner
    }

    fn token(&mut self) -> Token {
        self.next_token += 1;
        self.next_token
    }

    fn start_round(&mut self) {
        let token = self.token();
        self.phase = Phase::Reading { token, progress: false };
        self.requests.push_back(Request::ReadOwner { token, owner: self.opts.owner.clone() });
    }

    /// The next request to carry out, if any.
    pub fn poll_request(&mut self) -> Option<Request> {
        self.requests.pop_front()
    }

    /// True when nothing is outstanding and nothing more will be asked.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.requests.is_empty()
            && self.tasks.is_empty()
            && self.candidates.is_empty()
            && self.refreshing.is_none()
            && !matches!(self.phase, Phase::Reading { .. } | Phase::Ending { reading: Some(_), .. })
    }

    /// What the flush did so far.
    #[must_use]
    pub fn report(&self) -> &FlushReport {
        &self.report
    }

    /// The owner's rows, read for a round: select what is sendable now (§8) and the orphan
    /// intents (§7), then start claiming.
    pub fn handle_rows(
        &mut self,
        token: Token,
        rows: &[Value],
        now: Millis,
        draws: &mut dyn Draws,
        out: &mut Outstanding,
    ) {
        let progress = match self.phase {
            Phase::Reading { token: t, progress } if t == token => progress,
            Phase::Ending { why, reading: Some(t) } if t == token => {
                self.phase = Phase::Ending { why, reading: None };
                return;
            }
            _ => return,
        };
        if self.past_deadline(now) {
            // No claims and no port calls for orphans once the deadline has passed.
            self.phase = Phase::Ending { why: Ending::Deadline, reading: None };
            return;
        }
        self.phase = Phase::Draining { progress };
        let owner = self.opts.owner.clone();
        // Another owner's rows are never considered, whatever the driver read (§11).
        let (stored, raws): (Vec<Stored>, Vec<&Value>) =
            owned_stored(&owner, rows).map(|raw| (Stored::from_value(raw), raw)).unzip();
        let by_id: HashMap<&str, &Value> =
            stored.iter().zip(&raws).filter_map(|(s, raw)| s.row().map(|r| (r.id.as_str(), *raw))).collect();
        let exists = stored_index(&stored);
        let tab = &self.opts.tab;
        let picked: Vec<Candidate> = select_sendable(&stored, &tab.tab_id, now, tab.lease_ms)
            .into_iter()
            .filter(|r| !self.memory.attempted.contains(&r.id))
            .filter_map(|r| {
                let pred = r.successor_of.as_deref().and_then(|p| by_id.get(p)).map(|v| (*v).clone());
                Candidate::new(by_id[r.id.as_str()].clone(), pred)
            })
            .collect();
        self.candidates = start_anywhere(picked, draws.unit());
        let rows_by_id: HashMap<&str, &Row> =
            stored.iter().filter_map(Stored::row).map(|r| (r.id.as_str(), r)).collect();
        let orphans: Vec<(Value, String)> = stored
            .iter()
            .filter_map(Stored::row)
            .filter_map(|r| {
                // §7 vanished predecessor: what an intent waits for is its create's receipt,
                // also when it is chained behind earlier intents (a `noMerge` one, or one it
                // could not absorb), so the test is on the create that chain leads to, and
                // that create's receipt is the one looked up.
                let create = awaited_create(r, |id| rows_by_id.get(id).copied());
                let orphan = is_orphan_intent(r, create.is_some_and(|c| exists.contains_key(c)))
                    && !self.memory.orphans_tried.contains(&r.id);
                orphan.then(|| (by_id[r.id.as_str()].clone(), create.unwrap_or_default().to_owned()))
            })
            .collect();
        for (raw, create) in orphans {
            let id = raw["id"].as_str().unwrap_or_default().to_owned();
            self.memory.orphans_tried.insert(id);
            let token = self.token();
            let intent = Stored::from_value(&raw).row().cloned().expect("decoded above");
            let task = Task::orphan(raw, intent, create, &self.opts);
            self.emit(token, &task);
            self.tasks.insert(token, task);
        }
        self.pump(out);
    }

    /// The ids of the owner's rows now, asked for after meeting another tab's claims: the
    /// round's candidates that are gone are dropped, and claiming goes on in the middle of
    /// the longest stretch of rows still there (see [`spread::go_on_elsewhere`]).
    pub fn handle_ids(&mut self, token: Token, ids: &[String], draws: &mut dyn Draws, out: &mut Outstanding) {
        if self.refreshing != Some(token) {
            return;
        }
        self.refreshing = None;
        let there: HashSet<&str> = ids.iter().map(String::as_str).collect();
        let list: Vec<Candidate> = self.candidates.drain(..).collect();
        let left = go_on_elsewhere(list, &there, draws.unit());
        if left.is_empty() {
            // Nothing of the list is left: read the queue again, as at a stale claim at
            // the end of the list (rows other tabs made sendable are found there).
            if matches!(self.phase, Phase::Draining { .. }) {
                self.start_round();
            }
        } else {
            self.candidates = left;
        }
        self.pump(out);
    }

    /// Plans the write of request `token` inside its transaction. `current` are the rows of
    /// the request's scopes as just read. `None`: write nothing.
    pub fn plan(&mut self, token: Token, current: &[Value], now: Millis, draws: &mut dyn Draws) -> Option<ReplacePlan> {
        let is_claim = matches!(self.tasks.get(&token)?, Task::Claim(_));
        if is_claim && self.past_deadline(now) {
            // §8 deadline: a batch asked for before it and written after it claims nothing;
            // its rows stay queued for the next flush (`handle_written` gets `None`).
            self.end(Ending::Deadline);
            return None;
        }
        let task = self.tasks.get_mut(&token)?;
        task.plan(&self.opts, current, now, draws)
    }

    fn past_deadline(&self, now: Millis) -> bool {
        self.opts.deadline.is_some_and(|d| now >= d)
    }

    /// The result of a [`Request::Write`]: `None` when [`Flush::plan`] planned nothing.
    pub fn handle_written(&mut self, token: Token, result: Option<ReplaceOutcome>, out: &mut Outstanding) {
        let Some(task) = self.tasks.remove(&token) else {
            return;
        };
        if let Task::Orphan { intent, step: OrphanStep::Write(IntentAction::Convert(_)), .. } = &task {
            // §8 drain: an orphan converted in this flush lets the one that waited for it be
            // tried again in the next round (the commit counts as progress).
            match result {
                None => self.memory.orphans_waiting.push(intent.id.clone()),
                Some(ReplaceOutcome::Committed) => {
                    for id in std::mem::take(&mut self.memory.orphans_waiting) {
                        self.memory.orphans_tried.remove(&id);
                    }
                }
                Some(ReplaceOutcome::Stale) => {}
            }
        }
        let stale_before = self.report.stale;
        // §6: after an auth answer, rows whose claim commits now are not sent.
        let may_send = !matches!(self.phase, Phase::Ending { why: Ending::Auth, .. });
        let next = task.written(result, &mut self.report, &mut self.memory.conflict_born, may_send);
        if self.report.stale > stale_before && matches!(self.phase, Phase::Draining { .. }) {
            // Another tab is claiming from the same queue, here: the list read for this
            // round is out of date. With candidates left, ask which rows still exist (keys
            // only: the rows other tabs finished are gone) and go on from another random
            // place among them; rows in flight elsewhere are then met once each, in a batch.
            // Without, read the queue again (rows claimed since are in flight there and
            // drop out).
            if self.candidates.is_empty() {
                self.start_round();
            } else if self.refreshing.is_none() {
                let token = self.token();
                self.refreshing = Some(token);
                self.requests.push_back(Request::ReadIds { token, owner: self.opts.owner.clone() });
            }
        }
        self.after(token, next, out);
    }

    /// The app's transport answered (or threw, mapped by the driver to a transient outcome).
    pub fn handle_sent(&mut self, token: Token, outcome: Outcome, out: &mut Outstanding) {
        let Some(task) = self.tasks.remove(&token) else {
            return;
        };
        self.report.counters.record(&outcome);
        // §8 drain: time passed on the wire, and rows enqueued meanwhile (of other records)
        // may be sendable now, whatever the answer: the round ends with a read, not a stop.
        if let Phase::Reading { progress, .. } | Phase::Draining { progress } = &mut self.phase {
            *progress = true;
        }
        if matches!(outcome, Outcome::Auth) {
            // The session is expired for every flush of this owner in the tab (§6).
            out.note_auth_answer(&self.opts.owner);
        }
        self.stop_if_session_expired(out);
        let next = task.sent(outcome);
        self.after(token, next, out);
    }

    /// §6: an auth answer, received by this flush or by any other flush (or `ack`) of the
    /// owner in this tab since this one last looked, ends this flush's claiming.
    fn stop_if_session_expired(&mut self, out: &mut Outstanding) {
        let seen = out.auth_answers(&self.opts.owner);
        if seen > self.auth_answers {
            self.auth_answers = seen;
            if matches!(self.phase, Phase::Reading { .. } | Phase::Draining { .. }) {
                self.end(Ending::Auth);
                self.release_unsent(out);
            }
        }
    }

    /// §6: rows claimed whose send the driver has not taken yet do not go out on the
    /// expired session: each is released (claim expired, fence kept), as a claim that
    /// commits after the auth answer is.
    fn release_unsent(&mut self, out: &mut Outstanding) {
        let (unsent, rest): (Vec<Request>, Vec<Request>) =
            self.requests.drain(..).partition(|r| matches!(r, Request::Send { .. }));
        self.requests.extend(rest);
        for req in unsent {
            let Request::Send { token, .. } = req else { continue };
            if let Some(Task::Sending { row, ticket, before }) = self.tasks.remove(&token) {
                self.after(token, Wait::On(Task::Release(vec![Unsent::of(&row, ticket, before)])), out);
            }
        }
    }

    /// Stops claiming. §6: an auth answer ends the flush for this owner, and rows whose
    /// claim is being written are released when it commits (see `handle_written`). §8: at
    /// the deadline the flush takes no more rows. Sends already made are answered as usual.
    /// (A deadline may replace an auth ending: from the deadline on no claim commits, so no
    /// claim is left for the auth ending to release.)
    fn end(&mut self, why: Ending) {
        let reading = match self.phase {
            Phase::Reading { token, .. } | Phase::Ending { reading: Some(token), .. } => Some(token),
            _ => None,
        };
        self.phase = Phase::Ending { why, reading };
        self.candidates.clear();
    }

    /// `prepareSuccessor` answered (`Err` when it threw or returned something unusable).
    pub fn handle_prepared(&mut self, token: Token, prepared: Result<Prepared, String>, out: &mut Outstanding) {
        let Some(task) = self.tasks.remove(&token) else {
            return;
        };
        let next = task.prepared(prepared);
        self.after(token, next, out);
    }

    /// `findCreateReceipt` answered (`Err` when it threw: the row is left unchanged).
    pub fn handle_found(&mut self, token: Token, found: Result<Option<Value>, String>, out: &mut Outstanding) {
        let Some(task) = self.tasks.remove(&token) else {
            return;
        };
        let next = task.found(found, &self.opts);
        self.after(token, next, out);
    }

    fn after(&mut self, token: Token, next: Wait, out: &mut Outstanding) {
        match next {
            Wait::Done { progress } => {
                if let Phase::Reading { progress: p, .. } | Phase::Draining { progress: p } = &mut self.phase {
                    *p |= progress;
                }
                self.free(token, out);
            }
            Wait::On(task) => {
                self.emit(token, &task);
                self.tasks.insert(token, task);
            }
            Wait::Spawn(tasks, unclaimed) => {
                for id in &unclaimed {
                    self.memory.attempted.remove(id);
                }
                for task in tasks {
                    let t = self.token();
                    for target in task.targets() {
                        self.held.insert(target, t);
                    }
                    self.emit(t, &task);
                    self.tasks.insert(t, task);
                }
                self.free(token, out);
            }
        }
        self.pump(out);
    }

    /// Frees the records task `token` held, here and in the tab's [`Outstanding`].
    fn free(&mut self, token: Token, out: &mut Outstanding) {
        let owner = &self.opts.owner;
        let id = self.id;
        self.held.retain(|target, t| {
            if *t == token {
                out.release(id, owner, target);
            }
            *t != token
        });
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
    fn pump(&mut self, out: &mut Outstanding) {
        self.stop_if_session_expired(out);
        if let (Phase::Draining { .. }, None) = (self.phase, self.refreshing) {
            self.claim_batch(out);
            if self.opts.max_rows.is_some_and(|m| self.sends >= m) {
                self.phase = Phase::Ending { why: Ending::MaxRows, reading: None };
            }
        }
        if matches!(self.phase, Phase::Ending { .. }) {
            self.candidates.clear();
        }
        let idle = self.tasks.is_empty()
            && self.candidates.is_empty()
            && self.requests.is_empty()
            && self.refreshing.is_none();
        if idle && self.phase == (Phase::Draining { progress: true }) {
            self.start_round();
        }
    }

    /// Takes candidates into one claim batch, as many as there are free slots (§8 limit) and
    /// sends left (`maxRows`), one per record.
    fn claim_batch(&mut self, out: &mut Outstanding) {
        let limit = self.opts.concurrency.max(1);
        let room = limit.saturating_sub(self.used_slots());
        let allowed = self.opts.max_rows.map_or(usize::MAX, |m| {
            // Not `as usize`: on wasm32 a bound of 2^32 or more would keep its low bits.
            usize::try_from(m.saturating_sub(self.sends + self.claims_in_progress())).unwrap_or(usize::MAX)
        });
        // Claim in batches: wait until half the slots are free (when nothing runs, all are),
        // so one transaction claims several rows.
        let want = if room < limit.div_ceil(2) { 0 } else { room.min(allowed) };
        let token = self.token();
        let mut batch = ClaimBatch { want, ..ClaimBatch::default() };
        let mut postponed = false;
        while batch.items.len() < want {
            let Some(c) = self.candidates.pop_front() else { break };
            match out.reserve(self.id, &self.opts.owner, &c.target) {
                Ok(()) => {
                    self.held.insert(c.target.clone(), token);
                    self.memory.attempted.insert(c.id.clone());
                    batch.items.push(c);
                }
                // §8: rows of one target strictly one after another: this one waits for
                // the next round.
                Err(Taken::ByThisFlush) => postponed = true,
                // The record is on its way in another flush of this tab (maybe a send
                // that outlived its lease): that flush goes on with it.
                Err(Taken::ByOtherFlush) => self.report.skipped += 1,
            }
        }
        if !batch.items.is_empty() {
            let task = Task::Claim(batch);
            self.emit(token, &task);
            self.tasks.insert(token, task);
        }
        if let (true, Phase::Draining { progress }) = (postponed, &mut self.phase) {
            *progress = true;
        }
    }

    fn claims_in_progress(&self) -> u64 {
        self.tasks.values().map(|t| if let Task::Claim(b) = t { b.want as u64 } else { 0 }).sum()
    }
}
