//! One row's way through a flush: claim → send → answer (→ convert intents) → done, and the
//! vanished-predecessor path of an orphan intent.

use super::batch::ClaimBatch;
use super::intent_action::{intent_scopes, plan_intent, IntentAction};
use super::phase::Memory;
use super::report::{FlushReport, ReceiptReport};
use super::request::{Draws, FlushOptions, Request, SendOp, Token};
use crate::ack::{ack_scopes, plan_ack, AckDecision, AckDraws};
use crate::input::Prepared;
use crate::intent::{PREDECESSOR_RECEIPT_UNKNOWN, SUCCESSOR_UNPREPARED};
use crate::outcome::Outcome;
use crate::plan::{ReplaceOutcome, ReplacePlan};
use crate::release::{plan_release, release_scopes, Unsent};
use crate::row::{Evidence, Row, Ticket};
use crate::time::Millis;
use serde_json::Value;
use std::collections::VecDeque;

/// How many times one answer is planned again before the flush gives up on it. An answer is
/// planned again when its write found the scope changed (another tab wrote between the
/// read and the write) or when a success finds intents still to convert (another tab
/// queued one meanwhile). Each pass makes progress unless another tab keeps writing the
/// same record; the bound keeps a flush from chasing it forever. Giving up is safe: the
/// row keeps its claim, is resent after the lease and the server replays the receipt.
const ANSWER_PASSES: u8 = 4;

/// An answer being applied.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Answer {
    row: Row,
    ticket: Ticket,
    outcome: Outcome,
    passes: u8,
    decided: Option<AckDecision>,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Task {
    /// Claim sendable rows (each expected as read in the round).
    Claim(ClaimBatch),
    /// Claimed: send it. `before` is the row's evidence before the claim (restored if the
    /// row is released unsent).
    Sending { row: Row, ticket: Ticket, before: Option<Evidence> },
    /// Claimed but not to be sent (§6 auth ended the flush): hand the claims back.
    Release(Vec<Unsent>),
    /// Apply the answer (§6, §9).
    Answer(Answer),
    /// Convert the create's intents before its ACK-delete (§7).
    Convert { answer: Answer, intent: Row, raw: Value, rest: VecDeque<(Row, Value)>, action: IntentAction },
    /// An intent whose create row is gone (§7 vanished predecessor).
    /// `create`: the create the intent's chain waits for ([`crate::intent::awaited_create`]),
    /// whose receipt is looked up.
    Orphan { intent: Row, raw: Value, create: String, step: OrphanStep },
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum OrphanStep {
    Find,
    Prepare(Value),
    Write(IntentAction),
}

/// What a task waits for next.
pub(super) enum Wait {
    On(Task),
    /// The task became several (a claimed batch: one send each, or one release). The ids
    /// are the batch's rows that were not claimed (found changed, or not claimable): this
    /// flush may try them again after its next read.
    Spawn(Vec<Task>, Vec<String>),
    Done {
        progress: bool,
    },
}

const DONE: Wait = Wait::Done { progress: false };

impl Task {
    pub(super) fn orphan(raw: Value, intent: Row, create: String, opts: &FlushOptions) -> Task {
        let step = if opts.has_find {
            OrphanStep::Find
        } else {
            OrphanStep::Write(IntentAction::Block(PREDECESSOR_RECEIPT_UNKNOWN))
        };
        Task::Orphan { intent, raw, create, step }
    }

    /// Places the task takes among the rows claimed and not answered yet (see
    /// `Flush::claim_batch`): a claim batch's rows, a row being sent or waiting to be.
    pub(super) fn slots(&self) -> usize {
        match self {
            Task::Claim(batch) => batch.want,
            Task::Sending { .. } => 1,
            _ => 0,
        }
    }

    /// An answer as a send brought it, before any of its writes: the one kind a flush parks
    /// (§8). One that comes back after converting its intents or after a stale write goes
    /// at once: the create's intents are converted and the create not ACKed yet until it is.
    pub(super) fn is_fresh_answer(&self) -> bool {
        matches!(self, Task::Answer(a) if a.passes == 0)
    }

    /// The targets a task made from a claim holds.
    pub(super) fn targets(&self) -> Vec<String> {
        match self {
            Task::Sending { row, .. } => vec![row.target.clone()],
            Task::Release(rows) => {
                let mut targets = Vec::with_capacity(rows.len());
                for u in rows {
                    targets.push(u.target.clone());
                }
                targets
            }
            _ => vec![],
        }
    }

    pub(super) fn request(&self, token: Token, opts: &FlushOptions) -> Option<Request> {
        let write = |scopes| Some(Request::Write { token, scopes });
        match self {
            Task::Claim(batch) => write(batch.scopes(&opts.owner)),
            Task::Release(rows) => write(release_scopes(rows)),
            Task::Sending { row, .. } => Some(Request::Send { token, op: SendOp::of(row) }),
            Task::Answer(a) => write(ack_scopes(&a.row)),
            Task::Convert { answer, intent, action, .. } => match action {
                IntentAction::Ask if opts.has_prepare => {
                    prepare(token, intent, Some(&answer.row), receipt_of(&answer.outcome))
                }
                _ => write(intent_scopes(intent, Some(&answer.row.id), action)),
            },
            Task::Orphan { intent, create, step, .. } => match step {
                OrphanStep::Find => {
                    Some(Request::FindReceipt { token, owner: intent.owner.clone(), operation_id: create.clone() })
                }
                OrphanStep::Prepare(receipt) => prepare(token, intent, None, receipt.clone()),
                OrphanStep::Write(action) => write(intent_scopes(intent, None, action)),
            },
        }
    }

    pub(super) fn plan(
        &mut self,
        opts: &FlushOptions,
        current: &[Value],
        now: Millis,
        draws: &mut dyn Draws,
    ) -> Option<ReplacePlan> {
        match self {
            Task::Claim(batch) => batch.plan(opts, current, now),
            Task::Release(rows) => plan_release(rows, current, now),
            Task::Sending { .. } => None,
            Task::Answer(a) => {
                let new_id = if matches!(a.outcome, Outcome::Conflict { .. }) { draws.new_id() } else { String::new() };
                let ad = AckDraws { random: draws.unit(), new_id };
                let mut decision =
                    plan_ack(&opts.owner, &a.row.id, current, &a.ticket, &a.outcome, now, &opts.backoff, &ad);
                // The plan is moved out, not cloned: what `answered` reads of the decision
                // later is its successor (issue 35: no clone of a plan's rows).
                let plan = match &mut decision {
                    AckDecision::Apply { plan, .. } => Some(std::mem::take(plan)),
                    _ => None,
                };
                a.decided = Some(decision);
                plan
            }
            Task::Convert { answer, raw, action, .. } => {
                plan_intent(raw, Some((&answer.row.id, &answer.ticket)), current, action, now)
            }
            Task::Orphan { raw, step, .. } => match step {
                OrphanStep::Write(action) => plan_intent(raw, None, current, action, now),
                _ => None,
            },
        }
    }

    pub(super) fn written(
        self,
        result: Option<ReplaceOutcome>,
        report: &mut FlushReport,
        memory: &mut Memory,
        may_send: bool,
    ) -> Wait {
        let committed = result == Some(ReplaceOutcome::Committed);
        match self {
            Task::Claim(batch) => {
                report.stale += batch.stale;
                report.skipped += batch.skipped;
                let claimed = match result {
                    Some(ReplaceOutcome::Committed) => batch.planned,
                    Some(ReplaceOutcome::Stale) => {
                        report.stale += batch.planned.len() as u64;
                        vec![]
                    }
                    None => vec![],
                };
                let mut unclaimed: Vec<String> = Vec::new();
                for c in &batch.items {
                    if !claimed.iter().any(|(row, _, _)| row.id == c.id) {
                        unclaimed.push(c.id.clone());
                    }
                }
                if !may_send && !claimed.is_empty() {
                    let mut unsent = Vec::with_capacity(claimed.len());
                    for (row, ticket, before) in &claimed {
                        unsent.push(Unsent::of(row, ticket.clone(), before.clone()));
                    }
                    return Wait::Spawn(vec![Task::Release(unsent)], unclaimed);
                }
                let mut sends = Vec::with_capacity(claimed.len());
                for (row, ticket, before) in claimed {
                    sends.push(Task::Sending { row, ticket, before });
                }
                Wait::Spawn(sends, unclaimed)
            }
            Task::Release(rows) => {
                if committed {
                    report.released += rows.len() as u64;
                }
                DONE
            }
            Task::Sending { .. } => DONE,
            Task::Answer(a) => answered(a, result, report, memory),
            Task::Convert { mut answer, rest, action, .. } => {
                if committed {
                    match action {
                        IntentAction::Convert(_) => report.converted += 1,
                        _ => report.blocked += 1,
                    }
                }
                if result.is_none() && matches!(action, IntentAction::Convert(_)) {
                    // Skipped: the create is no longer mine, or the intent was replaced by
                    // a newer edit; re-planning the answer sorts out which.
                    return Wait::On(Task::Answer(answer));
                }
                answer.decided = None;
                next_intent(answer, rest)
            }
            Task::Orphan { step, .. } => {
                if committed {
                    match step {
                        OrphanStep::Write(IntentAction::Convert(_)) => report.converted += 1,
                        _ => report.blocked += 1,
                    }
                }
                Wait::Done { progress: committed }
            }
        }
    }

    pub(super) fn sent(self, outcome: Outcome) -> Wait {
        match self {
            Task::Sending { row, ticket, .. } => {
                Wait::On(Task::Answer(Answer { row, ticket, outcome, passes: 0, decided: None }))
            }
            _ => DONE,
        }
    }

    pub(super) fn prepared(self, prepared: Result<Prepared, String>) -> Wait {
        let action = match prepared {
            Ok(p) if p.is_valid() => IntentAction::Convert(p),
            _ => IntentAction::Block(SUCCESSOR_UNPREPARED),
        };
        match self {
            Task::Convert { answer, intent, raw, rest, .. } => {
                Wait::On(Task::Convert { answer, intent, raw, rest, action })
            }
            Task::Orphan { intent, raw, create, .. } => {
                Wait::On(Task::Orphan { intent, raw, create, step: OrphanStep::Write(action) })
            }
            _ => DONE,
        }
    }

    pub(super) fn found(self, found: Result<Option<Value>, String>, opts: &FlushOptions) -> Wait {
        let Task::Orphan { intent, raw, create, .. } = self else {
            return DONE;
        };
        let step = match found {
            Err(_) => return DONE, // the port failed (network, auth): leave the row unchanged
            Ok(None) => OrphanStep::Write(IntentAction::Block(PREDECESSOR_RECEIPT_UNKNOWN)),
            Ok(Some(receipt)) if opts.has_prepare => OrphanStep::Prepare(receipt),
            Ok(Some(_)) => OrphanStep::Write(IntentAction::Block(SUCCESSOR_UNPREPARED)),
        };
        Wait::On(Task::Orphan { intent, raw, create, step })
    }
}

/// The port call that prepares `intent`'s real request: one copy for a converting answer
/// and an orphan (issue 35).
fn prepare(token: Token, intent: &Row, predecessor: Option<&Row>, receipt: Value) -> Option<Request> {
    Some(Request::Prepare { token, intent: intent.clone(), predecessor: predecessor.cloned(), receipt })
}

fn next_intent(answer: Answer, mut rest: VecDeque<(Row, Value)>) -> Wait {
    match rest.pop_front() {
        Some((intent, raw)) => Wait::On(Task::Convert { answer, intent, raw, rest, action: IntentAction::Ask }),
        None => Wait::On(Task::Answer(answer)),
    }
}

fn answered(mut a: Answer, result: Option<ReplaceOutcome>, report: &mut FlushReport, memory: &mut Memory) -> Wait {
    let decided = a.decided.take();
    let receipt = |report: &mut FlushReport, applied: bool| {
        if let Outcome::Success { receipt, replayed } = &a.outcome {
            report.receipts.push(ReceiptReport {
                id: a.row.id.clone(),
                target: a.row.target.clone(),
                receipt: receipt.clone(),
                replayed: *replayed,
                applied,
            });
        }
    };
    match (decided, result) {
        (Some(AckDecision::Apply { successor, .. }), Some(ReplaceOutcome::Committed)) => {
            receipt(report, true);
            report.applied += 1;
            let progress = match &a.outcome {
                Outcome::Success { .. } => {
                    report.succeeded += 1;
                    true
                }
                Outcome::Transient { .. } => {
                    report.deferred += 1;
                    false
                }
                Outcome::Auth => {
                    report.held += 1;
                    false
                }
                // A blocked row may release its successor (§8 rule 3): read again.
                Outcome::Permanent { .. } => {
                    report.blocked += 1;
                    report.counters.permanent_failures += 1;
                    true
                }
                Outcome::Conflict { .. } => match successor {
                    Some(s) => {
                        report.conflicts += 1;
                        report.counters.conflicts += 1;
                        // §9: a successor that conflicts again writes its own successor, which
                        // this flush leaves for the next one (as if attempted): no loop.
                        if memory.conflict_born.contains(&a.row.id) {
                            memory.attempted.insert(s.id);
                            false
                        } else {
                            memory.conflict_born.insert(s.id);
                            true
                        }
                    }
                    // No usable actual revision: the row was blocked `REVISION_UNKNOWN` (§9).
                    None => {
                        report.blocked += 1;
                        report.counters.permanent_failures += 1;
                        true
                    }
                },
            };
            Wait::Done { progress }
        }
        (Some(AckDecision::ConvertFirst(intents)), _) if a.passes < ANSWER_PASSES => {
            a.passes += 1;
            next_intent(a, intents.into())
        }
        (Some(AckDecision::Apply { .. }), Some(ReplaceOutcome::Stale)) if a.passes < ANSWER_PASSES => {
            a.passes += 1;
            Wait::On(Task::Answer(a))
        }
        _ => {
            // Not mine (or gave up): change nothing, but the server did apply a success.
            receipt(report, false);
            report.skipped += 1;
            DONE
        }
    }
}

fn receipt_of(outcome: &Outcome) -> Value {
    match outcome {
        Outcome::Success { receipt, .. } => receipt.clone(),
        _ => Value::Null,
    }
}
