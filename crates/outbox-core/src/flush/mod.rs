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
//!      commit → [`Flush::handle_written`] (with the time of the commit);
//!    - [`Request::Send`] → app `send` → [`Flush::handle_sent`];
//!    - [`Request::Prepare`] → app `prepareSuccessor` → [`Flush::handle_prepared`];
//!    - [`Request::FindReceipt`] → app `findCreateReceipt` → [`Flush::handle_found`];
//!    - [`Request::Wait`] → a timer of `ms` → [`Flush::handle_waited`] (a driver whose
//!      flush is done need not wait for it);
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
//! The flush's own states ([`Flush`] holds one `Phase`, see `phase.rs`) are drawn in
//! `docs/architecture.md` ("The flush machine"), with the layers this module sits on.
//!
//! Each row on its way (claim → send → answer → intents converted) is a task; see `task.rs`.

mod batch;
mod intent_action;
pub mod outstanding;
mod phase;
mod report;
mod request;
mod round;
mod spread;
mod stretch;
mod task;
mod tasks;

pub use outstanding::{plan_app_claim, FlushId, Outstanding, SharedOutstanding};
pub use report::{FlushReport, ReceiptReport};
pub use request::{Draws, FlushOptions, Request, SendOp, Token, ACK_WAIT_MS, DEFAULT_CONCURRENCY};

use crate::input::Prepared;
use crate::names::Numbered;
use crate::outcome::Outcome;
use crate::plan::{ReplaceOutcome, ReplacePlan};
use crate::release::Unsent;
use crate::row::{Row, Ticket};
use crate::time::Millis;
use batch::{Candidate, ClaimBatch};
use intent_action::IntentAction;
use phase::{Ending, Memory, Phase};
use serde_json::Value;
use std::collections::VecDeque;
use task::{OrphanStep, Task, Wait};
use tasks::Tasks;

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
    held: Numbered,
    /// The token of a [`Request::ReadIds`] asked for after meeting another tab's claims:
    /// no claims until it is back.
    refreshing: Option<Token>,
    memory: Memory,
    /// Sends asked for and not answered yet: at most `concurrency`.
    in_flight: usize,
    /// Rows claimed ahead of their send (each a [`Task::Sending`] whose request is not made
    /// yet), in claim order: the next one goes out as soon as a send answers, without
    /// waiting for a transaction (see `round.rs`).
    ready: VecDeque<Token>,
    /// The instant of the latest answer: a row claimed ahead goes out only while half of
    /// its lease is left then (see [`Flush::send_ready`]).
    send_ready_at: Millis,
    report: FlushReport,
    /// Answers whose write waits to share a transaction (§8, see [`Flush::park`]), oldest
    /// first, and the token of the [`Request::Wait`] that bounds their wait, while one is out.
    parked: Vec<Token>,
    parked_wait: Option<Token>,
    /// The tab's auth answers for this owner when this flush last looked (§6): one more,
    /// received by any flush of the tab, stops this one too.
    auth_answers: u64,
}

impl Flush {
    /// A flush that starts by reading the owner's rows; offline (§8), one that is done at
    /// once, having asked for nothing.
    #[must_use]
    pub fn new(opts: FlushOptions, out: &mut Outstanding) -> Flush {
        if opts.offline {
            let mut f = Flush::empty(opts, out, Phase::Ending { why: Ending::Offline, reading: None });
            f.report.offline = true;
            return f;
        }
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
        f.answered(token, outcome, None, out);
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
            held: Numbered::default(),
            refreshing: None,
            memory: Memory::default(),
            in_flight: 0,
            ready: VecDeque::new(),
            send_ready_at: Millis(i64::MIN),
            report: FlushReport::default(),
            parked: Vec::new(),
            parked_wait: None,
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
        matches!(self.phase, Phase::Answering)
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
            && self.ready.is_empty()
            && !matches!(self.phase, Phase::Reading { .. } | Phase::Ending { reading: Some(_), .. })
    }

    /// What the flush did so far.
    #[must_use]
    pub fn report(&self) -> &FlushReport {
        &self.report
    }

    /// Plans the write of request `token` inside its transaction. `current` are the rows of
    /// the request's scopes as just read. `None`: write nothing.
    pub fn plan(&mut self, token: Token, current: &[Value], now: Millis, draws: &mut dyn Draws) -> Option<ReplacePlan> {
        let is_claim = matches!(self.tasks.get(&token)?, Task::Claim(_));
        let draining = matches!(self.phase, Phase::Reading { .. } | Phase::Draining { .. });
        if self.past_deadline(now) && (is_claim || draining) {
            // §8 deadline: a batch asked for before it and written after it claims nothing;
            // its rows stay queued for the next flush (`handle_written` gets `None`). Rows
            // claimed ahead and not sent yet are released at the flush's next step
            // (`send_ready`), never sent.
            if draining {
                self.stopped_while_draining(now);
            }
            self.end(Ending::Deadline);
            if is_claim {
                return None;
            }
        }
        let task = self.tasks.get_mut(&token)?;
        task.plan(&self.opts, current, now, draws)
    }

    fn past_deadline(&self, now: Millis) -> bool {
        self.opts.deadline.is_some_and(|d| now >= d)
    }

    /// §8 when to flush next: stopped at its deadline before a read of the queue found
    /// nothing more to send, the flush leaves rows that may be sendable at once (the ones
    /// it did not reach, those it claimed ahead and released, those enqueued meanwhile), so
    /// `nextDueAt` is at most `now`: a service worker's `sync` then fails, to be fired again,
    /// instead of ending with them queued.
    fn stopped_while_draining(&mut self, now: Millis) {
        self.report.next_due_at = Some(self.report.next_due_at.map_or(now.0, |at| at.min(now.0)));
    }

    /// §8 deadline, met while draining: no more rows go out, not even those claimed ahead
    /// or asked to be sent and not taken yet (they are released, [`Flush::end`]).
    fn stop_at_deadline(&mut self, now: Millis) {
        if !self.past_deadline(now) {
            return;
        }
        match self.phase {
            Phase::Reading { .. } | Phase::Draining { .. } => {
                self.stopped_while_draining(now);
                self.end(Ending::Deadline);
            }
            // Stopped by `maxRows` in the step that asked for its last send: that send, not
            // taken yet, does not go out (its `nextDueAt` stays its last read's, §8).
            Phase::Ending { why: Ending::MaxRows, .. } => self.end(Ending::Deadline),
            _ => {}
        }
    }

    /// The result of a [`Request::Write`], committed by `now`: `None` when [`Flush::plan`]
    /// planned nothing.
    pub fn handle_written(&mut self, token: Token, result: Option<ReplaceOutcome>, now: Millis, out: &mut Outstanding) {
        let Some(task) = self.tasks.remove(&token) else {
            return;
        };
        // §8 deadline: a claim planned before it and committed after it sends nothing (its
        // rows are released, below).
        self.stop_at_deadline(now);
        if let (Task::Claim(ClaimBatch { missed: true, .. }), Phase::Draining { progress }) = (&task, &mut self.phase) {
            // A row its stretch did not hold may be there unchanged (rows saved into the
            // stretch since pushed it out): the queue is read again before the flush ends,
            // and that row's next claim reads it by id.
            *progress = true;
        }
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
        // §6: after an auth answer, rows whose claim commits now are not sent; §8: nor after
        // the deadline (rows claimed ahead are released by `send_ready`, at the pump below).
        let may_send = !matches!(self.phase, Phase::Ending { why: Ending::Auth | Ending::Deadline, .. });
        let next = task.written(result, &mut self.report, &mut self.memory, may_send);
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

    /// The app's transport answered (or threw, mapped by the driver to a transient outcome)
    /// at `now`.
    pub fn handle_sent(&mut self, token: Token, outcome: Outcome, now: Millis, out: &mut Outstanding) {
        self.answered(token, outcome, Some(now), out);
    }

    fn answered(&mut self, token: Token, outcome: Outcome, now: Option<Millis>, out: &mut Outstanding) {
        let Some(task) = self.tasks.remove(&token) else {
            return;
        };
        if matches!(task, Task::Sending { .. }) {
            self.in_flight = self.in_flight.saturating_sub(1);
        }
        if let Some(now) = now {
            self.send_ready_at = now;
            self.stop_at_deadline(now);
        }
        self.report.counters.record(&outcome);
        self.time_passed();
        if matches!(outcome, Outcome::Auth) {
            // The session is expired for every flush of this owner in the tab (§6).
            out.note_auth_answer(&self.opts.owner);
        }
        self.stop_if_session_expired(out);
        let next = task.sent(outcome);
        self.after(token, next, out);
    }

    /// §8 drain: a send or a port call took time, and rows enqueued meanwhile (of other
    /// records) may be sendable now, whatever the answer: the round ends with a read, not a
    /// stop.
    fn time_passed(&mut self) {
        if let Phase::Reading { progress, .. } | Phase::Draining { progress } = &mut self.phase {
            *progress = true;
        }
    }

    /// §6: an auth answer, received by this flush or by any other flush (or `ack`) of the
    /// owner in this tab since this one last looked, ends this flush's claiming.
    fn stop_if_session_expired(&mut self, out: &mut Outstanding) {
        let seen = out.auth_answers(&self.opts.owner);
        if seen > self.auth_answers {
            self.auth_answers = seen;
            // (Stopped by `maxRows` too: its last send may not be taken yet.)
            if matches!(
                self.phase,
                Phase::Reading { .. } | Phase::Draining { .. } | Phase::Ending { why: Ending::MaxRows, .. }
            ) {
                self.end(Ending::Auth);
                self.release_ready(out);
            }
        }
    }

    /// Rows claimed ahead whose send did not go out (and those `end` took back): released
    /// (claim expired, fence kept, evidence as before the claim), as a claim that commits
    /// after an auth answer.
    fn release_ready(&mut self, out: &mut Outstanding) {
        // Taken all at once: releasing one pumps the flush, whose `send_ready` would
        // otherwise send the next one (§8: at the deadline nothing more goes out).
        for token in std::mem::take(&mut self.ready) {
            self.release_claimed(token, out);
        }
    }

    fn release_claimed(&mut self, token: Token, out: &mut Outstanding) {
        if let Some(Task::Sending { row, ticket, before }) = self.tasks.remove(&token) {
            self.after(token, Wait::On(Task::Release(vec![Unsent::of(&row, ticket, before)])), out);
        }
    }

    /// Stops claiming and sending. §6: an auth answer ends the flush for this owner, and rows
    /// whose claim is being written are released when it commits (see `handle_written`).
    /// §8: at the deadline the flush takes no more rows. Sends already made are answered as
    /// usual; a send asked for but not taken by the driver yet (several steps may run before
    /// it looks) does not go out: its row waits with those claimed ahead, to be released.
    fn end(&mut self, why: Ending) {
        let reading = match self.phase {
            Phase::Reading { token, .. } | Phase::Ending { reading: Some(token), .. } => Some(token),
            _ => None,
        };
        self.phase = Phase::Ending { why, reading };
        self.candidates.clear();
        // Taken out one by one (no `drain`: one more copy of its code in the module).
        let mut requests = std::mem::take(&mut self.requests);
        while let Some(req) = requests.pop_front() {
            match req {
                Request::Send { token, .. } => {
                    self.in_flight = self.in_flight.saturating_sub(1);
                    self.report.claimed = self.report.claimed.saturating_sub(1);
                    self.ready.push_back(token);
                }
                other => self.requests.push_back(other),
            }
        }
    }

    /// §8 answers written together: an answer ([`Flush::emit`] parks them all) waits while
    /// other sends are out, until the flush asks for another write (a claim batch, as room
    /// among the sends frees: the answers go with it, into the driver's one transaction of
    /// the moment), until no send is out, or until the [`Request::Wait`] asked for when the
    /// first of them was parked is back: at most [`ACK_WAIT_MS`]. (Not as soon as a claim
    /// batch asked for earlier is being written: answers that arrive meanwhile would then
    /// take the next transaction by themselves, 247 transactions per 1,000 trickling
    /// answers instead of 153, measured before the waits were made each group's own.)
    fn park(&mut self) {
        if self.parked.is_empty() {
            return;
        }
        let writing = self.requests.iter().any(|r| matches!(r, Request::Write { .. }));
        if writing || self.in_flight == 0 {
            self.unpark();
        } else if self.parked_wait.is_none() {
            let token = self.token();
            self.parked_wait = Some(token);
            self.requests.push_back(Request::Wait { token, ms: ACK_WAIT_MS });
        }
    }

    /// Asks for the writes of every parked answer. The wait asked for with them is theirs
    /// alone: back later, it releases nothing (answers parked since have a wait of their
    /// own), or it would cut a later batch's answers short, each time it fires, into a
    /// transaction of their own.
    fn unpark(&mut self) {
        self.parked_wait = None;
        for token in std::mem::take(&mut self.parked) {
            if let Some(req) = self.tasks.get(&token).and_then(|t| t.request(token, &self.opts)) {
                self.requests.push_back(req);
            }
        }
    }

    /// The [`Request::Wait`] is back: the answers parked write now.
    pub fn handle_waited(&mut self, token: Token) {
        if self.parked_wait == Some(token) {
            self.unpark();
        }
    }

    /// `prepareSuccessor` answered (`Err` when it threw or returned something unusable).
    pub fn handle_prepared(&mut self, token: Token, prepared: Result<Prepared, String>, out: &mut Outstanding) {
        let Some(task) = self.tasks.remove(&token) else {
            return;
        };
        self.time_passed();
        let next = task.prepared(prepared);
        self.after(token, next, out);
    }

    /// `findCreateReceipt` answered (`Err` when it threw: the row is left unchanged).
    pub fn handle_found(&mut self, token: Token, found: Result<Option<Value>, String>, out: &mut Outstanding) {
        let Some(task) = self.tasks.remove(&token) else {
            return;
        };
        self.time_passed();
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
                for id in unclaimed {
                    self.memory.attempted.remove(&id);
                    self.memory.by_id.insert(id);
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
        self.held.retain(&mut |target, t| {
            if t == token {
                out.release(id, owner, target);
            }
            t != token
        });
    }

    fn emit(&mut self, token: Token, task: &Task) {
        if task.is_fresh_answer() {
            // §8: written with what comes next, or at once when no send is out (`park`).
            self.parked.push(token);
            return;
        }
        if let Some(req) = task.request(token, &self.opts) {
            if matches!(req, Request::Send { .. }) {
                if self.in_flight >= self.opts.concurrency.max(1) || !self.ready.is_empty() {
                    // §8 limit: it waits, claimed, for a send to answer.
                    self.ready.push_back(token);
                    return;
                }
                self.in_flight += 1;
                self.count_send();
            }
            self.requests.push_back(req);
        }
    }

    /// A send request made: the report's `claimed` counts the rows claimed **and sent**
    /// (a row claimed ahead and released unsent is `released` only), and `maxRows` counts
    /// the same sends.
    fn count_send(&mut self) {
        self.report.claimed += 1;
    }

    /// Sends the rows claimed ahead while fewer than `concurrency` sends are out. One that
    /// waited so long (sends slower than half a lease) that less than half of its lease is
    /// left is released instead: sent now, it could outlive its claim and another tab could
    /// send it again.
    pub(super) fn send_ready(&mut self, out: &mut Outstanding) {
        if matches!(self.phase, Phase::Ending { why: Ending::Deadline, .. }) {
            // §8: stopped by its deadline — wherever that was seen (an answer, a plan, a
            // commit, a read) — the flush sends nothing more: the rows go back. (An auth
            // answer's ending releases them where it is seen: no claim makes more.)
            self.release_ready(out);
            return;
        }
        while self.in_flight < self.opts.concurrency.max(1) {
            let Some(token) = self.ready.pop_front() else { break };
            let Some(task @ Task::Sending { row, .. }) = self.tasks.get(&token) else { continue };
            let left = row.claim.as_ref().map_or(0, |c| c.expires_at.0.saturating_sub(self.send_ready_at.0));
            if left < self.opts.tab.lease_ms / 2 {
                self.release_claimed(token, out);
                continue;
            }
            if let Some(req) = task.request(token, &self.opts) {
                self.in_flight += 1;
                self.count_send();
                self.requests.push_back(req);
            }
        }
    }
}
