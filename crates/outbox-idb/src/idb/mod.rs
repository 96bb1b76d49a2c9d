//! IndexedDB: schema and opening (bounded in time), request futures, the store and its
//! replace.

pub mod app_schema;
mod connection;
mod open;
mod reads;
pub mod records;
pub mod replace;
pub mod request;
pub mod schema;
mod schema_mismatch;
pub mod store;
pub(crate) mod transaction;
mod view;

pub use store::Store;
pub use transaction::Durability;
