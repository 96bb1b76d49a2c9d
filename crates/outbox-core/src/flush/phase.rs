//! Where a flush is, why it stopped claiming, and what it remembers across its rounds
//! (the diagram is in [`super`]'s docs).

use super::request::Token;
use crate::names::Names;

/// Where a flush is (see the diagram in the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
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
pub(super) enum Ending {
    /// An auth answer ends the flush for its owner (§6); rows claimed but not sent yet are
    /// released back to `queued`.
    Auth,
    /// `maxRows` sends were made (§8).
    MaxRows,
    /// The deadline passed (§8): seen when a round's rows were read, a write was planned or
    /// committed, or an answer arrived.
    Deadline,
    /// The flush was told the network is down (§8 offline): it never started.
    Offline,
}

/// What a flush remembers across its rounds, so that one flush never repeats itself.
#[derive(Debug, Default)]
pub(super) struct Memory {
    /// Rows this flush claimed (one attempt per row per flush; a row whose claim did not
    /// commit may be tried again after the next read), and the successors of conflict
    /// successors that conflicted again, left for the next flush (§9).
    pub(super) attempted: Names,
    /// Orphan intents whose receipt this flush looked up (once per flush, but see
    /// `orphans_waiting`).
    pub(super) orphans_tried: Names,
    /// Orphan intents whose conversion was not written (the intent it waits for was still
    /// one: its lookup answered later). Tried again once an orphan conversion commits.
    pub(super) orphans_waiting: Vec<String>,
    /// Conflict successors this flush wrote: one that conflicts again waits for the next
    /// flush, so two writers racing on one record cannot loop.
    pub(super) conflict_born: Names,
    /// Rows a claim batch did not claim: their next claim reads them (and their
    /// predecessors) by id, not as a stretch of the queue ([`super::stretch`]), so a row
    /// a stretch keeps missing cannot start round after round.
    pub(super) by_id: Names,
}
