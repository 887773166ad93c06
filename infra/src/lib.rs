//! Adapters behind the domain's ports. Today: the embedded default store on SQLite.

#[cfg(any(test, feature = "contract"))]
pub mod contract;
pub mod sqlite;

pub use sqlite::SqliteStore;
