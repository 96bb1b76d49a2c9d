//! Property tests: random interleavings of three tabs (enqueues, flushes stepped request by
//! request, answers of every class, lost and late answers, lease expiries, sends that
//! outlive their lease, tabs dying mid-flight, auth answers while a claim batch is being
//! written, two overlapping flushes in one tab, rows of one target without `successorOf`
//! as an older writer leaves them, number and string revisions), with the contract's
//! invariants checked after every step.
//!
//! Cases: `PROPTEST_CASES` (default 3000 here).

mod sim;

use outbox_core::codec::{decode, Stored};
use outbox_core::select::select_sendable;
use outbox_core::{Millis, Outcome, Request, RowState, SendOp};
use proptest::prelude::*;
use serde_json::{json, Value};
use sim::*;
use std::collections::{HashMap, HashSet};

const OWNERS: [&str; 2] = ["alice", "bob"];
/// Sim tabs: 0, 1 and 2 are three tabs; 3 is a second flush of tab 0 (same tab id, same
/// clock), so that two flushes of one tab overlap.
const TABS: usize = 4;
const TWIN: (usize, usize) = (0, 3);

/// The sim tabs that are one real tab with `tab`.
fn same_tab(tab: usize) -> Vec<usize> {
    match tab {
        t if t == TWIN.0 || t == TWIN.1 => vec![TWIN.0, TWIN.1],
        t => vec![t],
    }
}

#[derive(Clone, Debug)]
enum Act {
    Enqueue {
        tab: usize,
        owner: usize,
        target: usize,
        kind: u8,
        with_revision: bool,
        /// `merge: false` (§7): a command that must reach the server once, in order.
        no_merge: bool,
    },
    /// Rows an older writer left: no `successorOf`, maybe one it is sending right now.
    SeedOlder {
        tab: usize,
        owner: usize,
        target: usize,
        sending: bool,
    },
    /// `limits`: none, or (maxRows, concurrency) drawn small. `deadline`: none, or that
    /// many ms after the flush starts (§8: no claim from then on).
    Flush {
        tab: usize,
        owner: usize,
        limits: Option<(u64, usize)>,
        deadline: Option<i64>,
    },
    Step {
        tab: usize,
        pick: usize,
        answer: u8,
    },
    Deliver {
        tab: usize,
        pick: usize,
    },
    Advance {
        tab: usize,
        ms: i64,
    },
    Kill {
        tab: usize,
    },
    ResumeHeld {
        owner: usize,
    },
}

fn act() -> impl Strategy<Value = Act> {
    let tab = 0..TABS;
    prop_oneof![
        3 => (tab.clone(), 0..2usize, 0..5usize, 0..3u8, any::<bool>(), proptest::bool::weighted(0.3))
            .prop_map(|(tab, owner, target, kind, with_revision, no_merge)| {
                Act::Enqueue { tab, owner, target, kind, with_revision, no_merge }
            }),
        2 => (
            tab.clone(),
            0..2usize,
            proptest::option::of((1..5u64, 1..4usize)),
            proptest::option::weighted(0.3, prop_oneof![Just(0i64), Just(1_000), Just(1_001), Just(2_500)])
        )
            .prop_map(|(tab, owner, limits, deadline)| Act::Flush { tab, owner, limits, deadline }),
        8 => (tab.clone(), any::<usize>(), any::<u8>()).prop_map(|(tab, pick, answer)| Act::Step { tab, pick, answer }),
        3 => (tab.clone(), any::<usize>()).prop_map(|(tab, pick)| Act::Deliver { tab, pick }),
        2 => (tab.clone(), prop_oneof![Just(1_000i64), Just(LEASE), Just(LEASE + 1), Just(400_000)])
            .prop_map(|(tab, ms)| Act::Advance { tab, ms }),
        1 => tab.clone().prop_map(|tab| Act::Kill { tab }),
        1 => (0..2usize).prop_map(|owner| Act::ResumeHeld { owner }),
        1 => (tab.clone(), 0..2usize, 0..3usize, any::<bool>())
            .prop_map(|(tab, owner, target, sending)| Act::SeedOlder { tab, owner, target, sending }),
    ]
}

/// How the server treats one request (drawn per send).
fn answer_for(code: u8) -> impl FnMut(&mut Server, &SendOp) -> Outcome {
    move |s: &mut Server, op: &SendOp| match code % 16 {
        0..=7 => s.handle(op),
        8 | 9 => {
            s.handle(op); // committed, answer lost
            Outcome::transient("NETWORK")
        }
        10 => Outcome::transient("NETWORK"),
        11 => Outcome::Transient { code: Some("HTTP_503".into()), retry_after_ms: Some(3_000) },
        12 => Outcome::Auth,
        13 => Outcome::Permanent { code: "INVALID".into() },
        14 => Outcome::transient("IN_PROGRESS"),
        _ => {
            let out = s.handle(op); // applied; answered late is modelled by Deliver order
            out
        }
    }
}

/// What the test knows about every operation it enqueued.
#[derive(Default)]
struct Ledger {
    ops: Vec<String>,
    /// id → the row that carries it on (None: cancelled and reported so).
    lineage: HashMap<String, Option<String>>,
    fences: HashMap<String, u64>,
    pendings: Vec<(usize, String)>,
    /// `noMerge` operations in enqueue order: (owner, target as enqueued, id).
    commands: Vec<(String, String, String)>,
    /// Scopes an older writer seeded rows into: it knows neither `successorOf` nor
    /// `noMerge`, so it may break a chain there (the docs' caveat, §7).
    seeded: HashSet<(String, String)>,
}

impl Ledger {
    fn alive(&self, w: &World, id: &str, depth: usize) -> bool {
        if w.store.get(id).is_some() || w.server.ledger.contains_key(id) {
            return true;
        }
        match self.lineage.get(id) {
            Some(None) => true,
            Some(Some(next)) if depth < 64 => self.alive(w, next, depth + 1),
            _ => false,
        }
    }

    fn note_conflict_successors(&mut self, w: &World) {
        for v in w.store.all() {
            if let Some(prev) = v.pointer("/conflict/previousId").and_then(Value::as_str) {
                let id = v["id"].as_str().unwrap().to_owned();
                self.lineage.entry(prev.to_owned()).or_insert(Some(id));
            }
        }
    }
}

fn check_invariants(w: &World, l: &mut Ledger) -> Result<(), TestCaseError> {
    for v in w.store.all() {
        let id = v["id"].as_str().unwrap().to_owned();
        match v.pointer("/claim/fence").and_then(Value::as_u64) {
            Some(f) => {
                let seen = l.fences.entry(id.clone()).or_insert(0);
                prop_assert!(f >= *seen, "fence of {id} went down from {seen} to {f}");
                *seen = f;
            }
            // §6: the fence is expired, never removed, while the row lives.
            None => prop_assert!(!l.fences.contains_key(&id), "the claim of {id} was removed"),
        }
    }
    l.note_conflict_successors(w);
    for id in &l.ops {
        prop_assert!(l.alive(w, id, 0), "operation {id} was lost");
    }
    Ok(())
}

fn run(acts: Vec<Act>) -> Result<(), TestCaseError> {
    run_with(acts, false)
}

/// `portless`: the last tab's app gives neither `prepareSuccessor` nor `findCreateReceipt`.
fn run_with(acts: Vec<Act>, portless: bool) -> Result<(), TestCaseError> {
    let mut w = World::new(TABS);
    w.tabs[TWIN.1].tab = w.tabs[TWIN.0].tab.clone();
    if portless {
        w.tabs[TABS - 1].ports = Ports { prepare: false, find: false };
    }
    for t in ["w:0", "w:1", "w:2"] {
        w.server.seed_record(t, 1);
    }
    let mut l = Ledger::default();
    let mut flush_owner: Vec<Option<String>> = vec![None; TABS];
    // Per sim tab, the sends in the air (same order as its `air`): (owner, target).
    let mut in_air: Vec<Vec<(String, String)>> = vec![vec![]; TABS];
    // Per sim tab, the running flush's (maxRows, concurrency).
    let mut flush_limits: Vec<(u64, usize)> = vec![(u64::MAX, outbox_core::flush::DEFAULT_CONCURRENCY); TABS];
    // Per sim tab, the running flush's deadline.
    let mut flush_deadline: Vec<Option<Millis>> = vec![None; TABS];
    let mut older = 0;
    let mut reports_seen = [0usize; TABS];
    for a in acts {
        match a {
            Act::Enqueue { tab, owner, target, kind, with_revision, no_merge } => {
                let owner_s = OWNERS[owner];
                let pendings: Vec<&String> = l.pendings.iter().filter(|(o, _)| *o == owner).map(|(_, t)| t).collect();
                let op = match (kind, target) {
                    (0, _) => create(owner_s, json!({"n": target})),
                    (k, t) => {
                        let tgt = if t >= 3 && !pendings.is_empty() {
                            pendings[t % pendings.len()].clone()
                        } else {
                            format!("w:{}", t % 3)
                        };
                        let mut op = if k == 1 {
                            update(owner_s, &tgt, json!({format!("f{t}"): t}))
                        } else {
                            delete(owner_s, &tgt)
                        };
                        if with_revision {
                            // A number, or an opaque string (an ETag) the server compares as text.
                            op["revision"] = if t % 2 == 0 { json!(1) } else { json!("1") };
                        }
                        op
                    }
                };
                let mut op = op;
                if no_merge {
                    op["merge"] = json!(false);
                }
                let p = w.enqueue(tab, op);
                for d in &p.plan.deletes {
                    // §7: a command is never absorbed, replaced or cancelled.
                    prop_assert!(!l.commands.iter().any(|(_, _, c)| c == d), "noMerge row {d} was absorbed");
                    l.lineage.insert(d.clone(), p.row.as_ref().map(|r| r.id.clone()));
                }
                if let Some(r) = &p.row {
                    if !l.ops.contains(&r.id) {
                        l.ops.push(r.id.clone());
                    }
                    if r.kind == outbox_core::Kind::Create {
                        l.pendings.push((owner, r.target.clone()));
                    }
                    if no_merge {
                        prop_assert!(r.no_merge && p.absorbed.is_empty(), "a command absorbed {:?}", p.absorbed);
                        l.commands.push((r.owner.clone(), r.target.clone(), r.id.clone()));
                    }
                    // Invariant: a stored edit of a record in flight waits for it.
                    for other in w.store.read(&[r.scope()]) {
                        let o = decode(&other).unwrap();
                        if o.id != r.id && outbox_core::inflight::is_row_in_flight(&o, w.tabs[tab].now, LEASE) {
                            prop_assert!(
                                r.successor_of.is_some(),
                                "edit over in-flight {} written without successorOf",
                                o.id
                            );
                        }
                    }
                }
            }
            Act::Flush { tab, owner, limits, deadline } => {
                if !w.flushing(tab) && w.tabs[tab].air.is_empty() {
                    flush_deadline[tab] = deadline.map(|d| w.tabs[tab].now.plus(d));
                    w.start_flush_with(tab, OWNERS[owner], |o| {
                        if let Some((max, concurrency)) = limits {
                            o.max_rows = Some(max);
                            o.concurrency = concurrency;
                        }
                        o.deadline = flush_deadline[tab];
                    });
                    flush_owner[tab] = Some(OWNERS[owner].to_owned());
                    flush_limits[tab] = limits.unwrap_or((u64::MAX, outbox_core::flush::DEFAULT_CONCURRENCY));
                }
            }
            Act::Step { tab, pick, answer } => {
                let n = w.tabs[tab].inbox.len();
                if n == 0 {
                    continue;
                }
                let idx = pick % n;
                let req = w.tabs[tab].inbox[idx].clone();
                let me = flush_owner[tab].clone().unwrap_or_default();
                let others_before: Vec<Value> =
                    w.store.all().filter(|v| v.get("owner").and_then(Value::as_str) != Some(&me)).cloned().collect();
                let mut stale_guard = None;
                match &req {
                    Request::Write { token, .. } => {
                        if let Some((row_id, fence)) = w.tabs[tab].tickets.get(token).cloned() {
                            let raw = w.raw(&row_id);
                            let mine = raw.as_ref().and_then(|v| v.get("claim")).is_some_and(|c| {
                                c["tabId"] == json!(w.tabs[tab].tab.tab_id) && c["fence"] == json!(fence)
                            });
                            if !mine {
                                stale_guard = Some((row_id, raw));
                            }
                        }
                    }
                    Request::Send { op, .. } => {
                        prop_assert!(op.owner == me, "sent another owner's row");
                        // §8: one tab never has two attempts of a row, or two rows of a
                        // target, outstanding — across its overlapping flushes too.
                        for u in same_tab(tab) {
                            prop_assert!(
                                !in_air[u].contains(&(op.owner.clone(), op.target.clone())),
                                "{} sent {} while a send of {} was outstanding in the same tab",
                                w.tabs[tab].tab.tab_id,
                                op.id,
                                op.target
                            );
                        }
                        // §8: never more sends outstanding than the flush's concurrency.
                        prop_assert!(
                            in_air[tab].len() < flush_limits[tab].1,
                            "more than {} sends outstanding",
                            flush_limits[tab].1
                        );
                        in_air[tab].push((op.owner.clone(), op.target.clone()));
                        prop_assert!(!op.target.starts_with("pending:") || op.kind == "create", "an intent was sent");
                        // The row may be gone or re-claimed meanwhile (this send was delayed);
                        // while the claim is still this tab's, its predecessor must be gone.
                        let Some(row) = w.row(&op.id) else {
                            let mut ans = answer_for(answer);
                            w.step(tab, idx, &mut ans);
                            check_invariants(&w, &mut l)?;
                            continue;
                        };
                        // The revision is sent exactly as stored (a number or a string).
                        prop_assert_eq!(&op.revision, row.revision.as_ref().unwrap_or(&Value::Null));
                        if row.claim.as_ref().unwrap().tab_id == w.tabs[tab].tab.tab_id {
                            if let Some(p) = &row.successor_of {
                                let pred_blocked = w.row(p).map(|r| r.state == RowState::Blocked);
                                prop_assert!(pred_blocked != Some(false), "successor {} sent while {p} waits", op.id);
                            }
                        }
                    }
                    _ => {}
                }
                let mut ans = answer_for(answer);
                let fences_before: HashMap<String, (Option<Value>, Value)> = w
                    .store
                    .all()
                    .map(|v| (v["id"].as_str().unwrap_or("").to_owned(), (v.get("claim").cloned(), v.clone())))
                    .collect();
                let now = w.tabs[tab].now;
                w.step(tab, idx, &mut ans);
                if let Some((row_id, raw)) = stale_guard {
                    prop_assert_eq!(w.raw(&row_id), raw, "a stale ticket changed {}", row_id);
                }
                let others_after: Vec<Value> =
                    w.store.all().filter(|v| v.get("owner").and_then(Value::as_str) != Some(&me)).cloned().collect();
                prop_assert_eq!(others_before, others_after, "another owner's rows changed");
                // §8 deadline: a flush claims nothing at or after it (a claim made by this
                // step: the row is sending under this tab with a `sentAt` it did not have).
                if let Some(deadline) = flush_deadline[tab] {
                    for v in w.store.all() {
                        let before = fences_before.get(v["id"].as_str().unwrap_or(""));
                        let claimed_now = v["state"] == "sending"
                            && v["claim"]["tabId"] == json!(w.tabs[tab].tab.tab_id)
                            && before.is_none_or(|(_, old)| old.get("sentAt") != v.get("sentAt"));
                        prop_assert!(
                            !claimed_now || now < deadline,
                            "{} claimed at {now}, deadline {deadline}",
                            v["id"]
                        );
                    }
                }
                // A new claim only replaces a claim that was no longer live.
                for v in w.store.all() {
                    let id = v["id"].as_str().unwrap_or("");
                    if let (Some((Some(old), old_raw)), Some(new)) = (fences_before.get(id), v.get("claim")) {
                        // A new claim (the row sent again: a new `sentAt`) always has a greater
                        // fence than every earlier claim of the row.
                        let claimed_now = v["state"] == "sending" && v.get("sentAt") != old_raw.get("sentAt");

                        if claimed_now {
                            prop_assert!(
                                new["fence"].as_u64() > old["fence"].as_u64(),
                                "{id} claimed again with fence {} after fence {}",
                                new["fence"],
                                old["fence"]
                            );
                        }
                        if old["fence"] != new["fence"] {
                            let old_row = decode(old_raw).unwrap();
                            prop_assert!(
                                !outbox_core::inflight::is_row_in_flight(&old_row, now, LEASE),
                                "claimed {id} while its claim was live"
                            );
                        }
                    }
                }
            }
            Act::Deliver { tab, pick } => {
                let n = w.tabs[tab].air.len();
                if n > 0 {
                    in_air[tab].remove(pick % n);
                    w.deliver(tab, pick % n);
                }
            }
            Act::Advance { tab, ms } => {
                for t in same_tab(tab) {
                    w.advance(t, ms);
                }
            }
            Act::Kill { tab } => {
                for t in same_tab(tab) {
                    w.kill(t);
                    in_air[t].clear();
                }
            }
            Act::SeedOlder { tab, owner, target, sending } => {
                older += 1;
                let id = format!("old-{older}");
                let now = w.tabs[tab].now.0;
                let mut raw = json!({"id": id, "owner": OWNERS[owner], "target": format!("w:{target}"),
                                     "kind": "update", "body": {"old": older}, "savedAt": now, "state": "queued"});
                if sending {
                    raw["state"] = json!("sending");
                    raw["sentAt"] = json!(now);
                }
                w.store.seed(raw);
                l.ops.push(id);
                l.seeded.insert((OWNERS[owner].to_owned(), format!("w:{target}")));
            }
            Act::ResumeHeld { owner } => {
                let rows = w.store.read_owner(OWNERS[owner]);
                if let Some((plan, _)) = outbox_core::admin::plan_resume_held(OWNERS[owner], &rows) {
                    w.store.replace(&plan);
                }
            }
        }
        check_invariants(&w, &mut l)?;
        // A success that was not applied must really not have been this tab's to apply:
        // the row is gone or carries another claim than the one this tab sent it under.
        for (t, tab) in w.tabs.iter().enumerate() {
            if tab.reports.len() > reports_seen[t] {
                reports_seen[t] = tab.reports.len();
                // §8 maxRows: a flush never sends more rows than it was allowed.
                let claimed = tab.reports.last().unwrap().claimed;
                prop_assert!(claimed <= flush_limits[t].0, "{claimed} sends over maxRows {}", flush_limits[t].0);
                for r in tab.reports.last().unwrap().receipts.iter().filter(|r| !r.applied) {
                    let my_fence = tab.tickets.values().filter(|(id, _)| *id == r.id).map(|(_, f)| *f).max();
                    if let (Some(row), Some(fence)) = (w.row(&r.id), my_fence) {
                        let c = row.claim.unwrap();
                        prop_assert!(
                            !(c.tab_id == tab.tab.tab_id && c.fence == fence),
                            "{} reported a success for {} as not applied while its claim was still its own",
                            tab.tab.tab_id,
                            r.id
                        );
                    }
                }
            }
        }
    }
    // Heal: every tab restarts, time passes, logins come back, the server answers truly.
    for t in 0..TABS {
        w.kill(t);
    }
    w.advance_all(10_000_000);
    for _ in 0..6 {
        for owner in OWNERS {
            let rows = w.store.read_owner(owner);
            if let Some((plan, _)) = outbox_core::admin::plan_resume_held(owner, &rows) {
                w.store.replace(&plan);
            }
            w.start_flush(0, owner);
            while w.flushing(0) {
                if w.tabs[0].inbox.is_empty() {
                    w.deliver(0, 0);
                } else {
                    w.step(0, 0, &mut truthful);
                }
                check_invariants(&w, &mut l)?;
            }
        }
    }
    // Liveness: nothing sendable is left behind; what remains is quarantined or waits for a
    // quarantined row, directly or along a chain of rows that wait too (§7: the intents
    // behind a `noMerge` intent of a blocked create wait for the app's decision on it).
    let stored: Vec<Stored> = w.store.all().map(Stored::from_value).collect();
    let sendable = select_sendable(&stored, "tab-0", w.tabs[0].now, LEASE, None);
    prop_assert!(sendable.is_empty(), "rows left sendable: {:?}", sendable.iter().map(|r| &r.id).collect::<Vec<_>>());
    let blocked: HashSet<String> =
        stored.iter().filter_map(Stored::row).filter(|r| r.state == RowState::Blocked).map(|r| r.id.clone()).collect();
    let by_id: HashMap<&str, &outbox_core::Row> =
        stored.iter().filter_map(Stored::row).map(|r| (r.id.as_str(), r)).collect();
    for r in stored.iter().filter_map(Stored::row) {
        let mut waits_for_blocked = false;
        let mut p = r.successor_of.as_deref();
        for _ in 0..64 {
            let Some(id) = p else { break };
            if blocked.contains(id) {
                waits_for_blocked = true;
                break;
            }
            p = by_id.get(id).and_then(|q| q.successor_of.as_deref());
        }
        prop_assert!(
            r.state == RowState::Blocked || waits_for_blocked,
            "row {} left {:?} after healing",
            r.id,
            r.state
        );
    }
    check_commands(&w, &mut l)
}

/// §7: every `noMerge` operation whose lineage was not stopped by a permanent answer (its
/// last row is still stored: blocked, or waiting for a blocked row) reached the server
/// exactly once in effect, under its id or its conflict successor's (§9); and the commands
/// of one owner and target took effect in the order they were enqueued.
fn check_commands(w: &World, l: &mut Ledger) -> Result<(), TestCaseError> {
    l.note_conflict_successors(w);
    let mut positions: HashMap<(String, String), Vec<(String, usize)>> = HashMap::new();
    for (owner, target, id) in &l.commands {
        let mut lineage = vec![id.clone()];
        while let Some(Some(next)) = l.lineage.get(lineage.last().unwrap()) {
            prop_assert!(lineage.len() < 64, "lineage of {id} loops");
            lineage.push(next.clone());
        }
        if w.store.get(lineage.last().unwrap()).is_some() {
            continue; // blocked for good: legitimately never applied
        }
        let times: usize = lineage.iter().map(|i| w.server.times_applied(i)).sum();
        prop_assert_eq!(times, 1, "command {} (lineage {:?}) applied {} times", id, lineage, times);
        let at = w.server.applied.iter().position(|a| lineage.contains(a)).unwrap();
        positions.entry((owner.clone(), target.clone())).or_default().push((id.clone(), at));
    }
    for (scope, applied) in positions {
        if l.seeded.contains(&scope) {
            continue;
        }
        for pair in applied.windows(2) {
            prop_assert!(pair[0].1 < pair[1].1, "commands of {:?} applied out of order: {:?}", scope, applied);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(3000),
        max_shrink_iters: 2000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn invariants_hold_under_random_interleavings_of_three_tabs(
        acts in proptest::collection::vec(act(), 1..80),
        portless in any::<bool>(),
    ) {
        run_with(acts, portless)?;
    }

    #[test]
    fn decoder_never_panics_on_arbitrary_json(v in arb_json()) {
        let _ = Stored::from_value(&v);
        if let Ok(row) = decode(&v) {
            // Re-encoding keeps every field this version does not know.
            let back = outbox_core::encode(&row);
            for (k, x) in v.as_object().unwrap() {
                if !outbox_core::codec::KNOWN_FIELDS.contains(&k.as_str()) {
                    prop_assert_eq!(back.get(k), Some(x));
                }
            }
        }
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        prop_oneof![Just("queued".to_owned()), Just("update".to_owned()), Just("create".to_owned()), ".{0,6}"]
            .prop_map(Value::from),
    ];
    let tree = leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("id".to_owned()),
                    Just("owner".to_owned()),
                    Just("target".to_owned()),
                    Just("kind".to_owned()),
                    Just("state".to_owned()),
                    Just("savedAt".to_owned()),
                    Just("body".to_owned()),
                    Just("claim".to_owned()),
                    Just("fence".to_owned()),
                    Just("tabId".to_owned()),
                    Just("noMerge".to_owned()),
                    "[a-z]{1,5}"
                ],
                inner,
                0..8
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    // Often a nearly valid row, so decoding goes deep.
    (tree, any::<bool>()).prop_map(|(t, base)| {
        if !base {
            return t;
        }
        let mut row = json!({"id": "r", "owner": "o", "target": "t", "kind": "update", "state": "queued",
                             "savedAt": 1, "body": {}});
        if let Value::Object(m) = t {
            for (k, v) in m {
                row[k] = v;
            }
        }
        row
    })
}

#[test]
fn regression_bob_update_survives_later_create() {
    let acts = vec![
        Act::Enqueue { tab: 0, owner: 0, target: 0, kind: 0, with_revision: false, no_merge: false },
        Act::Enqueue { tab: 0, owner: 0, target: 0, kind: 1, with_revision: false, no_merge: false },
        Act::Enqueue { tab: 0, owner: 1, target: 3, kind: 1, with_revision: true, no_merge: false },
        Act::Enqueue { tab: 0, owner: 0, target: 0, kind: 0, with_revision: false, no_merge: false },
    ];
    run(acts).unwrap();
}

/// A claim batch found stale starts a new read of the queue; an auth answer then ends the
/// flush before the read is back. The flush is not done until the read is handed back.
#[test]
fn regression_auth_while_a_reread_is_outstanding() {
    let acts = vec![
        Act::Enqueue { tab: 0, owner: 1, target: 0, kind: 1, with_revision: false, no_merge: false },
        Act::Enqueue { tab: 0, owner: 1, target: 1, kind: 0, with_revision: false, no_merge: false },
        Act::Flush { tab: 3, owner: 1, limits: None, deadline: None },
        Act::Step { tab: 3, pick: 0, answer: 0 },
        Act::Enqueue { tab: 0, owner: 1, target: 0, kind: 1, with_revision: false, no_merge: false },
        Act::Step { tab: 3, pick: 0, answer: 0 },
        Act::Step { tab: 3, pick: 4284519928819982071, answer: 236 },
        Act::Deliver { tab: 3, pick: 0 },
        Act::Step { tab: 3, pick: 6046092471835080613, answer: 0 },
        Act::Step { tab: 3, pick: 0, answer: 0 }, // the read is handed back: now it is done
    ];
    run(acts).unwrap();
}
