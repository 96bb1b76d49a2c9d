//! "The server ends at your last write" (docs/guarantees.md), checked field by field on the
//! value the server holds, not on the chain's shape (SPEC §7, §8, issue 32 item 1).
//!
//! One record, two tabs, partial updates (each edit writes some fields, every value being
//! the edit's number), answers of every class drawn per send, tabs dying. The server merges
//! each applied update into the record and remembers, per field, the edit whose value it
//! holds. Checked:
//!
//! - **never older**: no applied request sets a field to an older edit's value than the
//!   one the server already holds (a field a later row carried never comes back from an
//!   older one);
//! - **nothing left behind**: once every row that can go has gone, each field holds its
//!   last edit's value, or that value waits in a blocked row for the user to retry.
//!
//! Time moves only while no request is outstanding (a transport that aborts before its
//! lease ends, which the contract asks for); sends that outlive their lease are the
//! business of `properties.rs`.
//!
//! Cases: `PROPTEST_CASES` (default 2000 here).

mod sim;

use outbox_core::{Outcome, RowState, SendOp};
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use sim::*;
use std::collections::{HashMap, HashSet};

const FIELDS: [&str; 2] = ["a", "b"];
const TARGET: &str = "w:1";

#[derive(Clone, Debug)]
enum Act {
    /// An edit writing the fields of `mask` (bit i: `FIELDS[i]`).
    Edit {
        tab: usize,
        mask: u8,
    },
    Flush {
        tab: usize,
    },
    /// Carries out a pending request; a send's answer class is drawn from `answer`.
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
        ms: i64,
    },
    Kill {
        tab: usize,
    },
}

fn act() -> impl Strategy<Value = Act> {
    let tab = 0..2usize;
    prop_oneof![
        3 => (tab.clone(), 1..4u8).prop_map(|(tab, mask)| Act::Edit { tab, mask }),
        2 => tab.clone().prop_map(|tab| Act::Flush { tab }),
        8 => (tab.clone(), any::<usize>(), any::<u8>()).prop_map(|(tab, pick, answer)| Act::Step { tab, pick, answer }),
        4 => (tab.clone(), any::<usize>()).prop_map(|(tab, pick)| Act::Deliver { tab, pick }),
        2 => prop_oneof![Just(1_000i64), Just(LEASE + 1), Just(400_000)].prop_map(|ms| Act::Advance { ms }),
        1 => tab.prop_map(|tab| Act::Kill { tab }),
    ]
}

/// The record as the server holds it: per field, the number of the edit whose value it is.
#[derive(Default)]
struct FieldServer {
    fields: HashMap<String, i64>,
    /// Operation ids applied (the gate's ledger: a resend changes nothing).
    applied: HashSet<String>,
    /// Every field a request tried to move backwards: (field, held, sent).
    older: Vec<(String, i64, i64)>,
}

impl FieldServer {
    fn apply(&mut self, op: &SendOp) {
        if !self.applied.insert(op.id.clone()) {
            return;
        }
        for (k, v) in op.body.as_object().into_iter().flatten() {
            let sent = v.as_i64().expect("edit numbers");
            let held = self.fields.get(k).copied().unwrap_or(0);
            if sent < held {
                self.older.push((k.clone(), held, sent));
            }
            self.fields.insert(k.clone(), sent);
        }
    }

    /// How the server answers one request: applied, refused, or not reached.
    fn answer(&mut self, op: &SendOp, code: u8) -> Outcome {
        match code % 8 {
            0..=3 => {
                self.apply(op);
                Outcome::success(json!({"serverId": op.target}))
            }
            4 | 5 => Outcome::Permanent { code: "INVALID".into() },
            6 => Outcome::transient("NETWORK"),
            _ => {
                self.apply(op); // applied, answer lost on the way back
                Outcome::transient("NETWORK")
            }
        }
    }
}

fn outstanding(w: &World) -> bool {
    w.tabs.iter().any(|t| !t.air.is_empty() || t.inbox.iter().any(is_send))
}

fn run(acts: Vec<Act>) -> Result<(), TestCaseError> {
    let mut w = World::new(2);
    let mut server = FieldServer::default();
    let mut last: HashMap<String, i64> = HashMap::new();
    let mut edit = 0i64;
    for a in acts {
        match a {
            Act::Edit { tab, mask } => {
                edit += 1;
                let mut body = Map::new();
                for (i, f) in FIELDS.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0) {
                    body.insert((*f).to_owned(), json!(edit));
                    last.insert(FIELDS[i].to_owned(), edit);
                }
                let _ = w.enqueue(tab, update("alice", TARGET, Value::Object(body)));
            }
            Act::Flush { tab } if !w.flushing(tab) => w.start_flush(tab, "alice"),
            Act::Flush { .. } => {}
            Act::Step { tab, pick, answer } if !w.tabs[tab].inbox.is_empty() => {
                let idx = pick % w.tabs[tab].inbox.len();
                w.step(tab, idx, &mut |_, op| server.answer(op, answer));
            }
            Act::Step { .. } => {}
            Act::Deliver { tab, pick } if !w.tabs[tab].air.is_empty() => {
                let idx = pick % w.tabs[tab].air.len();
                w.deliver(tab, idx);
            }
            Act::Deliver { .. } => {}
            Act::Advance { ms } if !outstanding(&w) => w.advance_all(ms),
            Act::Advance { .. } => {}
            Act::Kill { tab } => w.kill(tab),
        }
        prop_assert!(server.older.is_empty(), "a field went back to an older edit: {:?}", server.older);
    }
    // Quiesce: every tab ends (answers delivered), then flushes with a server that applies
    // everything, until nothing more goes out.
    for tab in 0..2 {
        w.drain_with(tab, &mut |_, op| {
            server.apply(op);
            Outcome::success(json!({"serverId": op.target}))
        });
    }
    for _ in 0..8 {
        w.advance_all(400_000);
        for tab in 0..2 {
            w.start_flush(tab, "alice");
            w.drain_with(tab, &mut |_, op| {
                server.apply(op);
                Outcome::success(json!({"serverId": op.target}))
            });
        }
    }
    prop_assert!(server.older.is_empty(), "a field went back to an older edit: {:?}", server.older);
    let parked: Vec<Value> =
        w.store.all().filter(|v| v["state"] == json!(RowState::Blocked.as_str())).map(|v| v["body"].clone()).collect();
    for (field, at) in &last {
        let held = server.fields.get(field).copied().unwrap_or(0);
        let waits = parked.iter().any(|b| b.get(field) == Some(&json!(at)));
        prop_assert!(
            held == *at || waits,
            "field {field}: the server holds edit {held}, the last write was edit {at} and no blocked row holds it"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(2000),
        ..ProptestConfig::default()
    })]

    #[test]
    fn s7_the_server_ends_at_the_last_write_field_by_field(acts in proptest::collection::vec(act(), 1..60)) {
        run(acts)?;
    }
}

/// The review's case (issue 32 item 1): R1 refused and blocked, its successor R2 applied,
/// then U3 edits another field. R1's title must not come back over R2's.
#[test]
fn s7_an_edit_after_an_overtaken_blocked_row_does_not_bring_its_fields_back() {
    for r2_still_in_flight in [false, true] {
        let mut w = World::new(1);
        let mut server = FieldServer::default();
        let r1 = w.enqueue(0, update("alice", TARGET, json!({"a": 1}))).row.unwrap().id;
        w.start_flush(0, "alice");
        run_until_sent(&mut w, 0, &mut |_, op| server.answer(op, 4)); // R1 on the wire, refused
        let r2 = w.enqueue(0, update("alice", TARGET, json!({"a": 2}))).row.unwrap().id;
        assert_eq!(w.row(&r2).unwrap().successor_of.as_deref(), Some(r1.as_str()));
        w.deliver(0, 0);
        if r2_still_in_flight {
            run_until_sent(&mut w, 0, &mut |_, op| server.answer(op, 0));
        } else {
            w.drain_with(0, &mut |_, op| server.answer(op, 0));
        }
        let r1_row = w.row(&r1).expect("R1 stays, blocked");
        assert_eq!(r1_row.state, RowState::Blocked);
        assert!(r1_row.overtaken_at.is_some(), "R2's claim marks R1 overtaken");
        let u3 = w.enqueue(0, update("alice", TARGET, json!({"b": 3})));
        assert!(u3.absorbed.is_empty(), "U3 absorbs nothing: {:?}", u3.absorbed);
        assert_eq!(u3.row.unwrap().body, json!({"b": 3}));
        w.drain_with(0, &mut |_, op| server.answer(op, 0));
        w.start_flush(0, "alice");
        w.drain_with(0, &mut |_, op| server.answer(op, 0));
        assert_eq!(server.fields, HashMap::from([("a".into(), 2), ("b".into(), 3)]), "in flight: {r2_still_in_flight}");
        assert!(server.older.is_empty());
    }
}
