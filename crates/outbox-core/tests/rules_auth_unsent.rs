//! §6: after an auth answer, nothing more goes out on the expired session, also a row whose
//! claim had committed and whose send the driver had not taken yet (found by a review of
//! the planner, 2026-12-03).

use outbox_core::memstore::MemStore;
use outbox_core::{decode, Draws, Flush, FlushOptions, Millis, Outcome, Outstanding, Request, RowState, Tab, Token};
use serde_json::{json, Value};

const T0: i64 = 1_700_000_000_000;

struct Fixed(f64, u64);

impl Draws for Fixed {
    fn unit(&mut self) -> f64 {
        self.0
    }
    fn new_id(&mut self) -> String {
        self.1 += 1;
        format!("new-{}", self.1)
    }
}

fn queued(id: &str, target: &str, saved: i64) -> Value {
    json!({"id": id, "owner": "alice", "target": target, "kind": "update", "body": {"v": id},
           "savedAt": saved, "state": "queued"})
}

/// A driver that carries out one request at a time, by hand.
struct Drive {
    store: MemStore,
    out: Outstanding,
    flush: Flush,
    draws: Fixed,
    now: Millis,
}

impl Drive {
    fn new(store: MemStore, edit: impl FnOnce(&mut FlushOptions)) -> Drive {
        let mut out = Outstanding::new();
        let mut opts = FlushOptions::new("alice", Tab::new("tab-a"));
        edit(&mut opts);
        let flush = Flush::new(opts, &mut out);
        Drive { store, out, flush, draws: Fixed(0.0, 0), now: Millis(T0) }
    }

    /// Carries out a read, a write or a wait (never a send).
    fn run(&mut self, req: Request) {
        match req {
            Request::ReadOwner { token, owner } => {
                let rows = self.store.read_owner(&owner);
                self.flush.handle_rows(token, &rows, self.now, &mut self.draws, &mut self.out);
            }
            Request::ReadIds { token, owner } => {
                let ids: Vec<String> =
                    self.store.read_owner(&owner).iter().filter_map(|r| r["id"].as_str().map(str::to_owned)).collect();
                self.flush.handle_ids(token, &ids, &mut self.draws, &mut self.out);
            }
            Request::Write { token, scopes } => {
                let (flush, draws, now) = (&mut self.flush, &mut self.draws, self.now);
                let r = self.store.transact(&scopes, |cur| flush.plan(token, cur, now, draws));
                self.flush.handle_written(token, r, now, &mut self.out);
            }
            Request::Wait { token, .. } => self.flush.handle_waited(token),
            other => panic!("not a storage request: {other:?}"),
        }
    }

    /// Polls every request now asked for, carrying out storage ones at once and returning
    /// the sends (dispatched: the driver will hand their answers back later).
    fn pump_storage(&mut self) -> Vec<(Token, String)> {
        let mut sends = Vec::new();
        while let Some(req) = self.flush.poll_request() {
            match req {
                Request::Send { token, op } => sends.push((token, op.id)),
                other => self.run(other),
            }
        }
        sends
    }
}

fn state(store: &MemStore, id: &str) -> RowState {
    decode(store.get(id).unwrap()).unwrap().state
}

/// §6 "An auth answer ends the flush for that owner: the other rows stay as they are
/// (queued, not held)"; contract: "nothing more goes out on the expired session".
///
/// Sequence (concurrency 2, three rows of three records): the first batch claims r0, r1
/// and, ahead of its send, r2; it sends r0 and r1. r0 succeeds, which lets r2 go out: the
/// machine now has `Send(r2)` queued, after r0's ACK. Before the driver polls it, r1's
/// answer (401) is handed in — exactly what the IndexedDB driver does when the transaction
/// and the fetch resolve together (it takes every ready result, `now_or_never`, before
/// polling again). r2 is not sent: it is released back to queued (before the fix,
/// `Send(r2)` was still handed out, so r2 went out on the expired session and ended `held`).
#[test]
fn s6_auth_answer_must_stop_a_send_already_queued_but_not_yet_polled() {
    let mut store = MemStore::new();
    for i in 0..3 {
        store.seed(queued(&format!("r{i}"), &format!("w:{i}"), T0 - 100 + i));
    }
    let mut d = Drive::new(store, |o| o.concurrency = 2);
    let first = d.pump_storage();
    assert_eq!(first.len(), 2, "first batch: two sends");
    assert_eq!(state(&d.store, "r2"), RowState::Sending, "r2 claimed ahead of its send");
    let (t_ok, _) = first[0].clone();
    let (t_auth, _) = first[1].clone();
    // r0 (whichever came first) succeeds: r2's send is asked for, r0's ACK waits for company.
    d.flush.handle_sent(t_ok, Outcome::success(json!({})), d.now, &mut d.out);
    // r1's answer (401) is handed in before the driver polls the queued Send.
    d.flush.handle_sent(t_auth, Outcome::Auth, d.now, &mut d.out);
    let mut sent_after_auth = Vec::new();
    while let Some(req) = d.flush.poll_request() {
        match req {
            Request::Send { op, .. } => sent_after_auth.push(op.id),
            other => d.run(other),
        }
    }
    assert!(
        sent_after_auth.is_empty(),
        "sent after the auth answer ended the flush (expired session): {sent_after_auth:?}"
    );
    assert_eq!(state(&d.store, "r2"), RowState::Queued, "claimed but unsent: released to queued");
    // The report counts each row once: r0 and r1 went out (`claimed`), r2 did not
    // (`released`), although its send had been asked for before the auth answer.
    let rep = d.flush.report();
    assert_eq!((rep.claimed, rep.released, rep.succeeded, rep.held), (2, 1, 1, 1), "{rep:?}");
}
