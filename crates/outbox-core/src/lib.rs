//! The pure planner of a crash-safe, multi-tab offline outbox.
//!
//! Every rule of the contract (`docs/contract.md` §3–§12) lives here, with no I/O, no clock
//! and no randomness of its own: callers pass `now` ([`Millis`]) and random draws in, and
//! carry out the plans ([`ReplacePlan`]) this crate returns.
//!
//! The modules stand in layers, each using only its own layer and the ones below
//! (`layers.txt`, checked by `scripts/layers.mjs`; drawn in `docs/architecture.md`):
//!
//! | layer | modules |
//! |---|---|
//! | base | [`time`], [`sort`], `sha256`, [`body_size`], [`names`] |
//! | data: rows, plans and answers as data | [`kind`], [`scope`], [`row`], [`codec`], [`fingerprint`], [`input`], [`plan`], [`outcome`], [`tab`], [`accounts`], [`json`], [`record_write`] |
//! | rules: one module per section of the contract | [`inflight`], [`select`], [`claim`], [`ack`], [`enqueue`], [`intent`], [`conflict`], [`reissue`], [`retry`], [`classify`], [`release`], [`admin`], [`records`], [`metrics`] |
//! | machine: the flush, sequencing the rules | [`flush`], [`memstore`] |
//!
//! By section:
//!
//! | SPEC | module |
//! |---|---|
//! | §2 fingerprint | [`fingerprint`] |
//! | §3 row format | [`row`], [`kind`], [`codec`], [`input`] |
//! | §4 replace | [`plan`], [`scope`], [`memstore`] |
//! | §5 claim, in flight | [`claim`], [`inflight`] |
//! | §6 ACK; a claim released unsent | [`ack`], [`release`] |
//! | §9 revision conflicts | [`conflict`], [`reissue`] |
//! | §7 enqueue, intents | [`enqueue`], [`intent`] |
//! | §8 selection, send order | [`select`], [`row::send_order`] |
//! | §10 failures, backoff | [`outcome`], [`classify`], [`retry`] |
//! | §11 accounts (the owner filter) | [`accounts`] |
//! | §12 metrics | [`metrics`] |
//! | §8 drain, as a sans-IO state machine | [`flush`] |
//! | the app's records, committed with the queue | [`record_write`], [`records`] |
//! | `resumeHeld`, `retryBlocked`, `discard`, `purgeOwner` | [`admin`] |
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(unreachable_pub)]
// Rows and plans move by value through small enums; boxing them would only add noise.
#![allow(clippy::large_enum_variant)]

pub mod accounts;
pub mod ack;
pub mod admin;
pub mod body_size;
pub mod claim;
pub mod classify;
pub mod codec;
pub mod conflict;
pub mod enqueue;
pub mod fingerprint;
pub mod flush;
pub mod inflight;
pub mod input;
pub mod intent;
pub mod json;
pub mod kind;
pub mod memstore;
pub mod metrics;
pub mod names;
pub mod outcome;
pub mod plan;
pub mod record_write;
pub mod records;
pub mod reissue;
pub mod release;
pub mod retry;
pub mod row;
pub mod scope;
pub mod select;
mod sha256;
pub mod sort;
pub mod tab;
pub mod text;
pub mod time;

pub use codec::{decode, encode, DecodeError, Stored, Undecodable};
pub use flush::{Draws, Flush, FlushOptions, FlushReport, Outstanding, Request, SendOp, SharedOutstanding, Token};
pub use outcome::Outcome;
pub use plan::{ReplaceOutcome, ReplacePlan, Scope};
pub use row::{Kind, Row, RowState, Ticket};
pub use tab::Tab;
pub use time::Millis;
