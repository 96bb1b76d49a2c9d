//! The reference server-side idempotency gate of the outbox (SPEC §14).
//!
//! - [`ledger::Ledger`]: the ledger trait (atomic reservation, completion with the domain
//!   write in one transaction, replay, receipts, retention);
//! - [`sqlite::SqliteLedger`]: its SQLite implementation (the default);
//! - [`http`]: the HTTP routes; [`serve`] adds the static files (the demo app and the
//!   built npm package).
#![forbid(unsafe_code)]

pub mod http;
pub mod ledger;
pub mod sqlite;

use std::path::PathBuf;
use std::sync::Arc;
use tower_http::services::ServeDir;

/// Everything the gate serves: the API, `/pkg` (the built package) and `/` (the demo app).
pub fn app(gate: Arc<http::Gate>, www: Option<PathBuf>, pkg: Option<PathBuf>) -> axum::Router {
    let mut router = http::api(gate);
    if let Some(pkg) = pkg {
        router = router.nest_service("/pkg", ServeDir::new(pkg));
    }
    if let Some(www) = www {
        router = router.fallback_service(ServeDir::new(www));
    }
    router
}
