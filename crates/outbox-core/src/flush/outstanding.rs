//! What one tab has outstanding across all of its flushes (SPEC §8).
//!
//! A claim's lease protects a row from *other* tabs. Inside one tab it is not enough: two
//! `flush` calls may overlap, and a send may outlive its lease, after which the row is
//! claimable again — by the same tab too. So a tab keeps, in memory, the records it is
//! working on: a flush reserves a record (`[owner, target]`) before it claims a row of it
//! and frees it when that row's answer is applied. While a record is reserved, no other
//! flush of the tab claims any of its rows. That gives both rules of §8 inside a tab:
//!
//! - a tab never has two attempts of one row outstanding (a row's target is fixed while it
//!   is sendable), even when the send outlives the lease;
//! - rows of one target are sent strictly one after another, also when they do not name
//!   each other in `successorOf` (rows of an older writer, or left by a crash).
//!
//! The lease still lets other tabs take over a tab that died or froze: this record lives
//! only as long as the tab's memory.

use crate::claim::{plan_claim, ClaimPlan, ClaimSkip};
use crate::names::Numbered;
use crate::tab::Tab;
use crate::time::Millis;
use serde_json::Value;
use std::cell::{Cell, RefCell};

/// Identifies one flush among the flushes of a tab.
pub type FlushId = u64;

/// The records a tab's flushes are working on. One per tab, shared by all of its flushes;
/// the driver passes it to every `handle_*` call of [`super::Flush`].
#[derive(Clone, Debug, Default)]
pub struct Outstanding {
    next: FlushId,
    /// The records held ([`record`] keys), each with the flush holding it.
    held: Numbered,
    /// The app's own claims (`claim`), each holding its record like a flush until the
    /// app's `ack` of that ticket: (the hold, owner, row id, the claim's fence). A few at
    /// most: a list, not another map type in the wasm module.
    app: Vec<(FlushId, String, String, u64)>,
    /// Per owner, the auth answers this tab's flushes have had (§6): a flush that started
    /// before the latest one stops claiming.
    auth_answers: Vec<(String, u64)>,
}

/// Why a record could not be reserved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Taken {
    /// This flush holds it already (a row of the target is on its way).
    ByThisFlush,
    /// Another flush of this tab holds it.
    ByOtherFlush,
}

impl Outstanding {
    /// Nothing outstanding.
    #[must_use]
    pub fn new() -> Outstanding {
        Outstanding::default()
    }

    /// A fresh id for a flush that starts.
    pub(super) fn begin(&mut self) -> FlushId {
        self.next += 1;
        self.next
    }

    /// Reserves `(owner, target)` for `flush`.
    pub(super) fn reserve(&mut self, flush: FlushId, owner: &str, target: &str) -> Result<(), Taken> {
        let key = record(owner, target);
        match self.held.get(&key) {
            Some(f) if f == flush => Err(Taken::ByThisFlush),
            Some(_) => Err(Taken::ByOtherFlush),
            None => {
                self.held.insert(key, flush);
                Ok(())
            }
        }
    }

    /// Frees `(owner, target)` if `flush` holds it.
    pub(super) fn release(&mut self, flush: FlushId, owner: &str, target: &str) {
        let key = record(owner, target);
        if self.held.get(&key) == Some(flush) {
            self.held.remove(&key);
        }
    }

    /// Frees everything `flush` still holds. The driver calls it when it stops driving a
    /// flush, whether it ended or failed (a storage error, a killed driver): its sends are
    /// abandoned and their rows are taken over after the lease, by any tab.
    pub fn end(&mut self, flush: FlushId) {
        self.held.retain(&mut |_, f| f != flush);
        self.app.retain(|(hold, ..)| *hold != flush);
    }

    /// Holds `(owner, target)` for the app's own claim of row `row_id` at fence `fence`
    /// (§8: within one tab, never two attempts outstanding, whoever made the first).
    /// Returns the hold, to [`Outstanding::end`] if the claim does not commit; `None` when a
    /// flush of this tab, or another claim of the app's, holds the record.
    pub fn hold_app_claim(&mut self, owner: &str, target: &str, row_id: &str, fence: u64) -> Option<FlushId> {
        let hold = self.begin();
        self.reserve(hold, owner, target).ok()?;
        self.app.push((hold, owner.to_owned(), row_id.to_owned(), fence));
        Some(hold)
    }

    /// The app answered its claim of row `row_id` at fence `fence` (`ack`), whatever came
    /// of it (the row may be gone): the record is free again in this tab. Nothing happens
    /// for another fence (an older claim's late answer).
    pub fn end_app_claim(&mut self, owner: &str, row_id: &str, fence: u64) {
        let found = self.app.iter().find(|(_, o, r, f)| o == owner && r == row_id && *f == fence);
        if let Some(&(hold, ..)) = found {
            self.end(hold);
        }
    }

    /// How many auth answers flushes of this tab have had for `owner` (§6).
    #[must_use]
    pub fn auth_answers(&self, owner: &str) -> u64 {
        self.auth_answers.iter().find(|(o, _)| o == owner).map_or(0, |(_, n)| *n)
    }

    /// An auth answer for `owner`: every flush of the owner running in this tab stops
    /// claiming (§6: nothing more goes out on the expired session).
    pub fn note_auth_answer(&mut self, owner: &str) {
        match self.auth_answers.iter_mut().find(|(o, _)| o == owner) {
            Some((_, n)) => *n += 1,
            None => self.auth_answers.push((owner.to_owned(), 1)),
        }
    }

    /// Whether `(owner, target)` is reserved by some flush of this tab.
    #[must_use]
    pub fn holds(&self, owner: &str, target: &str) -> bool {
        self.held.get(&record(owner, target)).is_some()
    }

    /// Number of records reserved.
    #[must_use]
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// True when no flush of the tab holds anything.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

/// The key of record `(owner, target)` in [`Outstanding`]'s map: the owner's length in
/// decimal digits, `:`, the owner, the target. One string per pair and one pair per string
/// (the digits end at the `:`, the length says where the owner ends).
fn record(owner: &str, target: &str) -> String {
    let mut digits = Vec::new();
    let mut len = owner.len();
    loop {
        digits.push(b'0' + (len % 10) as u8);
        len /= 10;
        if len == 0 {
            break;
        }
    }
    let mut key = String::with_capacity(digits.len() + 1 + owner.len() + target.len());
    for &d in digits.iter().rev() {
        key.push(char::from(d));
    }
    key.push(':');
    key.push_str(owner);
    key.push_str(target);
    key
}

/// [`plan_claim`] for the app's own `claim(owner, rowId)`: also refused for a record a
/// flush of this tab (or another claim of the app's) holds in `out`. Planned, the claim
/// holds its record in `out` until the app's `ack` of its ticket
/// ([`Outstanding::end_app_claim`]), so no flush of this tab sends the row again meanwhile,
/// even after the lease (§8). The returned hold is to be [`Outstanding::end`]ed if the
/// claim does not commit.
///
/// # Errors
/// As [`plan_claim`]; [`ClaimSkip::SentByThisTab`].
pub fn plan_app_claim(
    owner: &str,
    raw: Option<&Value>,
    predecessor: Option<&Value>,
    tab: &Tab,
    now: Millis,
    out: &mut Outstanding,
) -> Result<(ClaimPlan, FlushId), ClaimSkip> {
    let cp = plan_claim(owner, raw, predecessor, tab, now, None)?;
    let hold =
        out.hold_app_claim(owner, &cp.row.target, &cp.row.id, cp.ticket.fence).ok_or(ClaimSkip::SentByThisTab)?;
    Ok((cp, hold))
}

/// A tab's [`Outstanding`] as its flushes share it, which a panic (a bug) inside one use
/// cannot leave unusable. In wasm a panic aborts: nothing unwinds, so a `RefCell` borrowed
/// at that moment stays borrowed for good, and every later flush of the tab would fail. Here
/// each use takes the value out and puts it back; after a use that never came back, the
/// next one starts from nothing (what the flushes held is forgotten, as if the tab had
/// reloaded; leases still guard every row) with flush ids that go on from the last.
#[derive(Debug, Default)]
pub struct SharedOutstanding {
    cell: RefCell<Outstanding>,
    /// The id after the last use that came back.
    next: Cell<FlushId>,
}

impl SharedOutstanding {
    /// Runs `f` on the tab's [`Outstanding`]. `f` must not use this one again (it would
    /// see an empty one).
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(&mut Outstanding) -> R) -> R {
        let mut out = self.take();
        let r = f(&mut out);
        self.put_back(out);
        r
    }

    // Out of line: `with` is built once per caller, these once.
    #[inline(never)]
    fn take(&self) -> Outstanding {
        let out = self.cell.take();
        if out.next < self.next.get() {
            return Outstanding { next: self.next.get(), ..Outstanding::default() };
        }
        out
    }

    #[inline(never)]
    fn put_back(&self, out: Outstanding) {
        self.next.set(out.next);
        self.cell.replace(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_use_that_never_comes_back_leaves_the_shared_record_usable() {
        let shared = SharedOutstanding::default();
        let first = shared.with(|o| {
            let f = o.begin();
            o.reserve(f, "alice", "w:1").unwrap();
            f
        });
        assert!(shared.with(|o| o.holds("alice", "w:1")));
        let hurt = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            shared.with(|o| {
                o.begin();
                panic!("a bug in a flush");
            })
        }));
        assert!(hurt.is_err());
        let after = shared.with(|o| {
            assert!(o.is_empty(), "what the flushes held is forgotten");
            o.begin()
        });
        assert!(after > first, "flush ids go on: {after} after {first}");
        shared.with(|o| o.reserve(after, "alice", "w:1")).unwrap();
    }

    #[test]
    fn one_key_per_record_and_one_record_per_key() {
        assert_eq!(record("alice", "w:1"), "5:alicew:1");
        assert_eq!(record("", ""), "0:");
        assert_eq!(record(&"o".repeat(1203), "t"), format!("1203:{}t", "o".repeat(1203)));
        // Where the owner ends is in the key: these two pairs read the same run together.
        let mut out = Outstanding::new();
        let a = out.begin();
        assert_eq!(out.reserve(a, "ab", "c"), Ok(()));
        assert!(!out.holds("a", "bc") && !out.holds("abc", "") && out.holds("ab", "c"));
        assert_eq!(out.reserve(a, "a", "bc"), Ok(()));
    }

    #[test]
    fn a_record_is_held_by_one_flush_at_a_time() {
        let mut out = Outstanding::new();
        let (a, b) = (out.begin(), out.begin());
        assert_ne!(a, b);
        assert_eq!(out.reserve(a, "alice", "w:1"), Ok(()));
        assert_eq!(out.reserve(a, "alice", "w:1"), Err(Taken::ByThisFlush));
        assert_eq!(out.reserve(b, "alice", "w:1"), Err(Taken::ByOtherFlush));
        // Another owner's record of the same name is another record (§11).
        assert_eq!(out.reserve(b, "bob", "w:1"), Ok(()));
        assert_eq!(out.len(), 2);
        assert!(!out.is_empty());
        out.release(b, "alice", "w:1"); // not b's: nothing happens
        assert!(out.holds("alice", "w:1"));
        out.release(a, "alice", "w:1");
        assert!(!out.holds("alice", "w:1"));
        assert_eq!(out.len(), 1);
        out.end(b);
        assert!(out.is_empty());
    }

    #[test]
    fn s8_the_apps_own_claim_skips_a_record_a_flush_of_its_tab_is_sending() {
        let raw = serde_json::json!({"id": "r", "owner": "alice", "target": "doc:1", "kind": "update",
                                     "body": {}, "savedAt": 1, "state": "queued"});
        let tab = crate::Tab::new("tab-a");
        let mut out = Outstanding::new();
        let claim = |out: &mut Outstanding| plan_app_claim("alice", Some(&raw), None, &tab, crate::Millis(5), out);
        let (_, hold) = claim(&mut out).unwrap();
        out.end(hold); // not committed
        assert!(out.is_empty());
        let f = out.begin();
        out.reserve(f, "alice", "doc:2").unwrap();
        let (_, hold) = claim(&mut out).expect("another record");
        out.end(hold);
        out.reserve(f, "alice", "doc:1").unwrap();
        assert_eq!(claim(&mut out).err(), Some(ClaimSkip::SentByThisTab));
        out.end(f);
        assert!(claim(&mut out).is_ok());
    }

    #[test]
    fn s6_auth_answers_are_counted_per_owner_each_one() {
        // A flush started after the first 401 of an owner is stopped by the second (§6),
        // and another owner's 401 stops none of them (found by cargo-mutants).
        let mut out = Outstanding::new();
        assert_eq!(out.auth_answers("alice"), 0);
        out.note_auth_answer("alice");
        out.note_auth_answer("bob");
        out.note_auth_answer("alice");
        let counts = ["alice", "bob", "carol"].map(|o| out.auth_answers(o));
        assert_eq!(counts, [2, 1, 0]);
    }

    #[test]
    fn s8_the_apps_own_claim_holds_its_record_until_the_app_answers_that_ticket() {
        let mut out = Outstanding::new();
        let hold = out.hold_app_claim("alice", "doc:1", "r", 3).expect("free");
        assert!(out.holds("alice", "doc:1"));
        assert_eq!(out.hold_app_claim("alice", "doc:1", "r2", 1), None, "one claim of a record at a time");
        let f = out.begin();
        assert_eq!(out.reserve(f, "alice", "doc:1"), Err(Taken::ByOtherFlush), "no flush of the tab claims it");
        out.end_app_claim("alice", "r", 2); // an older fence's answer: still held
        out.end_app_claim("bob", "r", 3); // another owner's: still held
        assert!(out.holds("alice", "doc:1"));
        out.end_app_claim("alice", "r", 3);
        assert!(out.is_empty(), "freed by the answer of its own ticket");
        out.end(hold); // ending it again changes nothing
        assert_eq!(out.reserve(f, "alice", "doc:1"), Ok(()));
    }
}
