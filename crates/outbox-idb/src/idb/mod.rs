//! IndexedDB: schema and opening, request futures, the store and its replace.

pub mod request;
pub mod schema;
pub mod store;

pub use store::{Durability, Store};
