//! The server side of the outbox (SPEC §14): an idempotency gate an axum app mounts on its
//! own routes, with its own authentication, on SQLite or PostgreSQL.
//!
//! A handler of the app (the whole program: `examples/mount.rs`):
//!
//! ```text
//! async fn create_order(
//!     State(app): State<Arc<App>>,
//!     user: AuthUser,          // the app's own authentication, checked first
//!     req: Idempotent,         // Idempotency-Key + body + fingerprint (reads the body last)
//! ) -> Response {
//!     let Ok(Some(order)) = req.json::<Order>() else { return StatusCode::UNPROCESSABLE_ENTITY.into_response() };
//!     app.gate.run(&user.id, req, move |tx| Box::pin(async move {
//!         let id: i64 = sqlx::query_scalar("INSERT INTO orders (item) VALUES ($1) RETURNING id")
//!             .bind(order.item).fetch_one(&mut **tx).await?;
//!         Ok(Answer::new(StatusCode::CREATED, json!({ "id": id })))
//!     })).await
//! }
//! ```
//!
//! - [`Gate`]: reserve, run the handler in the ledger's transaction, complete in the same
//!   commit, replay, `422`/`409`/`503`; [`Config`]: lease and retention;
//! - [`Caller`]: who acts and in which scope (a tenant, a host): the ledger's key with the
//!   `Idempotency-Key`;
//! - [`Idempotent`]: the request extractor; [`Answer`]: what a handler returns;
//! - [`ledger::Engine`]: the ledger's statements, for [`sqlx::Sqlite`] and
//!   [`sqlx::Postgres`]; [`pools`]: pools with the settings the ledger relies on;
//! - [`demo`]: the demo app, one user of all this (with a stand-in login).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(unreachable_pub)]

pub mod answer;
pub mod caller;
pub mod demo;
pub mod fingerprint;
pub mod gate;
pub mod ledger;
pub mod pools;
pub mod request;

pub use answer::Answer;
pub use caller::Caller;
pub use gate::{Config, Gate, Tx};
pub use request::Idempotent;
