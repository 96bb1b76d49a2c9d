//! The IndexedDB binding of the outbox and the JS API of its npm package (SPEC §15).
//!
//! Every rule lives in `outbox_core`; this crate carries out its plans against IndexedDB
//! (one readwrite transaction per replace, SPEC §4), calls the app's `send` and ports
//! between transactions, injects the clock, tab id and random source, and announces
//! changes to other tabs.
#![forbid(unsafe_code)]
#![allow(clippy::large_enum_variant)]

mod admin;
mod args;
mod clock;
mod commands;
pub mod convert;
mod driver;
pub mod error;
pub mod idb;
mod ids;
mod inner;
mod js;
mod notify;
mod ops;
mod outbox;
pub mod panic;
mod pure;
mod turn;
mod types;

pub use outbox::Outbox;
pub use pure::{classify_http_js, is_row_in_flight_js, select_sendable_js};

/// The heap: talc instead of the std's dlmalloc (issue 35: −2.7 KB gzip). It frees and
/// reuses memory like dlmalloc (binned free lists, O(1) free, a long-lived page does not
/// grow), in a quarter of the code.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();
