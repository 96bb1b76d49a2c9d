//! IndexedDB: schema and opening (bounded in time), request futures, the store and its
//! replace.

mod connection;
mod open;
pub mod request;
pub mod schema;
pub mod store;

pub use store::{Durability, Store};
