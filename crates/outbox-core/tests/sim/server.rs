//! A model server with an idempotency ledger (SPEC §14), enough to judge "exactly once in
//! effect": every operation id is applied at most once; resends replay the receipt.

use outbox_core::{Outcome, SendOp};
use serde_json::{json, Value};
use std::collections::HashMap;

#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub revision: i64,
    pub deleted: bool,
    pub body: Value,
}

#[derive(Clone, Debug, Default)]
pub struct Server {
    /// operation id → (fingerprint, receipt)
    pub ledger: HashMap<String, (String, Value)>,
    pub records: HashMap<String, Record>,
    /// Operation ids in the order their effect was applied.
    pub applied: Vec<String>,
    /// Every request received: (id, target, kind).
    pub received: Vec<(String, String, String)>,
    next_id: u64,
}

impl Server {
    pub fn seed_record(&mut self, target: &str, revision: i64) {
        self.records.insert(target.into(), Record { revision, deleted: false, body: json!({}) });
    }

    pub fn receipt_of(&self, id: &str) -> Option<Value> {
        self.ledger.get(id).map(|(_, r)| r.clone())
    }

    pub fn times_applied(&self, id: &str) -> usize {
        self.applied.iter().filter(|a| *a == id).count()
    }

    /// Handles one request as the gate would; the caller decides whether the answer arrives.
    pub fn handle(&mut self, op: &SendOp) -> Outcome {
        self.received.push((op.id.clone(), op.target.clone(), op.kind.to_owned()));
        if let Some((fp, receipt)) = self.ledger.get(&op.id) {
            if *fp != op.fingerprint {
                return Outcome::Permanent { code: "PAYLOAD_CONFLICT".into() };
            }
            return Outcome::Success { receipt: receipt.clone(), replayed: true };
        }
        let receipt = match op.kind {
            "create" => {
                let target = if op.target.starts_with("pending:") {
                    self.next_id += 1;
                    format!("rec:{}", self.next_id)
                } else {
                    op.target.clone()
                };
                self.records.insert(target.clone(), Record { revision: 1, deleted: false, body: op.body.clone() });
                json!({"serverId": target, "revision": 1})
            }
            _ => {
                let Some(rec) = self.records.get_mut(&op.target).filter(|r| !r.deleted) else {
                    return Outcome::Permanent { code: "NOT_FOUND".into() };
                };
                // A base revision is a number or an opaque string (an ETag): the conflict
                // answer carries the actual revision in the same form.
                match &op.revision {
                    Value::Number(n) if n.as_i64() != Some(rec.revision) => {
                        return Outcome::Conflict { actual_revision: json!(rec.revision) };
                    }
                    Value::String(s) if *s != rec.revision.to_string() => {
                        return Outcome::Conflict { actual_revision: json!(rec.revision.to_string()) };
                    }
                    _ => {}
                }
                rec.revision += 1;
                if op.kind == "delete" {
                    rec.deleted = true;
                } else {
                    rec.body = op.body.clone();
                }
                json!({"serverId": op.target, "revision": rec.revision})
            }
        };
        self.ledger.insert(op.id.clone(), (op.fingerprint.clone(), receipt.clone()));
        self.applied.push(op.id.clone());
        Outcome::success(receipt)
    }
}
