//! The drain's rounds (SPEC §8): read the owner's queue, select what is sendable, claim it
//! in batches as slots free up, and read again while a round changed something.

use super::batch::{Candidate, ClaimBatch};
use super::outstanding::{Outstanding, Taken};
use super::phase::{Ending, Phase};
use super::request::{Draws, Request, Token};
use super::spread::{go_on_elsewhere, start_anywhere};
use super::stretch::place;
use super::task::Task;
use super::Flush;
use crate::accounts::stored_is_owned;
use crate::codec::{decode, Stored};
use crate::intent::{awaited_create, is_orphan_intent};
use crate::names::Lookup;
use crate::select::{select, stored_index};
use crate::time::Millis;
use serde_json::Value;

impl Flush {
    pub(super) fn start_round(&mut self) {
        let token = self.token();
        self.phase = Phase::Reading { token, progress: false };
        self.requests.push_back(Request::ReadOwner { token, owner: self.opts.owner.clone() });
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
        let owner = self.opts.owner.clone();
        // Another owner's rows are never considered, whatever the driver read (§11).
        // Each kept row's place in the read as the driver gave it (the index's order): a
        // stretch counts every row of the index, also those not kept here.
        let (mut stored, mut raws, mut read_at): (Vec<Stored>, Vec<&Value>, Vec<usize>) = Default::default();
        for (i, raw) in rows.iter().enumerate() {
            if stored_is_owned(&owner, raw) {
                stored.push(Stored::from_value(raw));
                raws.push(raw);
                read_at.push(i);
            }
        }
        let tab = &self.opts.tab;
        let selection = select(&stored, &tab.tab_id, now, tab.lease_ms, self.opts.online_since);
        // §8 when to flush next: as of this read, the last one of the flush so far.
        self.report.next_due_at = selection.next_due_at.map(|at| at.0);
        self.phase = Phase::Draining { progress };
        if self.past_deadline(now) {
            // No claims and no port calls for orphans once the deadline has passed.
            if !selection.sendable.is_empty() {
                self.stopped_while_draining(now);
            }
            self.end(Ending::Deadline);
            // A send the end took back may have nothing else under way to release it.
            self.release_ready(out);
            return;
        }
        // The decoded rows by id, as places in `stored` and `raws` (of two with one id, the
        // later one).
        let by_id = Lookup::new(stored.iter().map(|s| s.row().map(|r| r.id.as_str())));
        let exists = stored_index(&stored);
        let mut picked: Vec<Candidate> = Vec::new();
        for r in selection.sendable {
            // Every sendable row is a decoded row of `stored`: it has its place.
            let Some(at) = by_id.get(&r.id) else { continue };
            if self.memory.attempted.contains(&r.id) {
                continue;
            }
            let pred_at = r.successor_of.as_deref().and_then(|p| by_id.get(p));
            let pred = pred_at.map(|p| raws[p].clone());
            // The row at `at` decoded (it is keyed by its id): the candidate takes its fields
            // from it rather than decoding its value again.
            if let Some(row) = stored[at].row() {
                let mut c = Candidate::of(row, raws[at].clone(), pred);
                if !self.memory.by_id.contains(&r.id) {
                    c.places = (place(rows, read_at[at]), pred_at.and_then(|p| place(rows, read_at[p])));
                }
                picked.push(c);
            }
        }
        self.candidates = start_anywhere(picked, draws.unit());
        let mut orphans: Vec<(Value, String)> = Vec::new();
        for r in stored.iter().filter_map(Stored::row) {
            // §7 vanished predecessor: what an intent waits for is its create's receipt,
            // also when it is chained behind earlier intents (a `noMerge` one, or one it
            // could not absorb), so the test is on the create that chain leads to, and
            // that create's receipt is the one looked up.
            let create = awaited_create(r, |id| by_id.get(id).and_then(|p| stored[p].row()));
            let Some(at) = by_id.get(&r.id) else { continue };
            if is_orphan_intent(r, create.is_some_and(|c| exists.contains_key(c)))
                && !self.memory.orphans_tried.contains(&r.id)
            {
                orphans.push((raws[at].clone(), create.unwrap_or_default().to_owned()));
            }
        }
        for (raw, create) in orphans {
            let id = raw["id"].as_str().unwrap_or_default().to_owned();
            self.memory.orphans_tried.insert(id);
            let token = self.token();
            let intent = decode(&raw).expect("decoded above");
            let task = Task::orphan(raw, intent, create, &self.opts);
            self.emit(token, &task);
            self.tasks.insert(token, task);
        }
        self.pump(out);
    }

    /// The ids of the owner's rows now, asked for after meeting another tab's claims: the
    /// round's candidates that are gone are dropped, and claiming goes on in the middle of
    /// the longest stretch of rows still there (see [`super::spread::go_on_elsewhere`]).
    pub fn handle_ids(&mut self, token: Token, ids: &[String], draws: &mut dyn Draws, out: &mut Outstanding) {
        if self.refreshing != Some(token) {
            return;
        }
        self.refreshing = None;
        let there = Lookup::new(ids.iter().map(|id| Some(id.as_str())));
        let mut list = Vec::with_capacity(self.candidates.len());
        while let Some(c) = self.candidates.pop_front() {
            list.push(c);
        }
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

    pub(super) fn used_slots(&self) -> usize {
        let mut slots = 0;
        for t in self.tasks.values() {
            slots += t.slots();
        }
        slots
    }

    /// Starts a claim batch while there is room, then decides whether the drain goes on.
    pub(super) fn pump(&mut self, out: &mut Outstanding) {
        self.stop_if_session_expired(out);
        self.send_ready(out);
        if let (Phase::Draining { .. }, None) = (self.phase, self.refreshing) {
            self.claim_batch(out);
            if self.opts.max_rows.is_some_and(|m| self.report.claimed >= m) {
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
        if idle && matches!(self.phase, Phase::Draining { progress: true }) {
            self.start_round();
        }
        self.park();
    }

    /// Takes candidates into one claim batch, as many as there is room for and sends left
    /// (`maxRows`), one per record.
    ///
    /// Rows are claimed ahead of their sends: up to `concurrency` sends are out (§8 limit)
    /// and up to as many rows more wait, claimed, for one of them to answer
    /// ([`Flush::emit`]), so a send that answers is followed by the next one at once rather
    /// than after a claim transaction, and the claim of the rows after them is written
    /// while sends are on the wire. A row counts from its claim to its answer: the write of
    /// the answer holds its record (one attempt at a time per record), not a send's place.
    pub(super) fn claim_batch(&mut self, out: &mut Outstanding) {
        let sends = self.opts.concurrency.max(1);
        let limit = sends.saturating_mul(2);
        let room = limit.saturating_sub(self.used_slots());
        let allowed = self.opts.max_rows.map_or(usize::MAX, |m| {
            // Not `as usize`: on wasm32 a bound of 2^32 or more would keep its low bits.
            let coming = self.report.claimed + self.claims_in_progress() + self.ready.len() as u64;
            usize::try_from(m.saturating_sub(coming)).unwrap_or(usize::MAX)
        });
        // Claim in batches: wait until room for half the sends is free (when nothing runs,
        // all of it is), so one transaction claims several rows.
        let want = if room < sends.div_ceil(2) { 0 } else { room.min(allowed) };
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

    pub(super) fn claims_in_progress(&self) -> u64 {
        let mut want = 0;
        for t in self.tasks.values() {
            if let Task::Claim(b) = t {
                want += b.want as u64;
            }
        }
        want
    }
}
