//! What a flush did, as returned to the app (SPEC §15 flush report).

use crate::metrics::Counters;
use serde::Serialize;
use serde_json::Value;

/// One success receipt, reported whether or not the row was still this tab's claim.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceiptReport {
    /// The operation id.
    pub id: String,
    /// The target the request was sent to.
    pub target: String,
    /// The server's receipt.
    pub receipt: Value,
    /// The gate replayed it from its ledger.
    pub replayed: bool,
    /// True if this tab deleted the row; false if the claim was no longer its own.
    pub applied: bool,
}

/// Counts of one flush.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FlushReport {
    /// Rows claimed and sent.
    pub claimed: u64,
    /// Rows claimed but not sent, handed back to `queued`: an auth answer ended the flush
    /// (§6) or the deadline passed (§8) before they went out — rows claimed ahead of their
    /// sends, rows whose claim was being written, a send asked for and not taken yet — or
    /// less than half of a row's lease was left at its turn (§8).
    pub released: u64,
    /// Rows deleted after a success.
    pub succeeded: u64,
    /// Rows deferred by a transient failure.
    pub deferred: u64,
    /// Rows held by an auth answer.
    pub held: u64,
    /// Rows quarantined (permanent rejection or unconvertible intent).
    pub blocked: u64,
    /// Conflict successors written.
    pub conflicts: u64,
    /// Claims that found the row changed by another tab (or, read in a stretch of the queue,
    /// pushed out of it: read again by id, [`super::stretch`]).
    pub stale: u64,
    /// Candidates not claimed (in flight, no longer sendable) or answers that were not mine.
    pub skipped: u64,
    /// Intents converted into their real request.
    pub converted: u64,
    /// Answers applied (the claim was still this tab's); the others count in `skipped`.
    pub applied: u64,
    /// Every success receipt received.
    pub receipts: Vec<ReceiptReport>,
    /// This flush's attempts by class (added to the tab's counters).
    pub counters: Counters,
    /// The flush was told the network is down, and did nothing (§8 offline).
    pub offline: bool,
    /// The earliest instant after the flush's last read of the queue at which a row not
    /// sendable then may become sendable (§8 "when to flush next"), in ms; at most the
    /// instant the deadline stopped the flush before a read found nothing more to send
    /// (rows may be left); `None` (`null`): none.
    pub next_due_at: Option<i64>,
}
