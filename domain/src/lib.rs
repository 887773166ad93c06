//! taskledger's pure core: A2A 1.0 wire types, the Task aggregate, validation, projections into
//! the read model, and the ports the adapters implement. No AWS, no network, no I/O.

pub mod agent;
pub mod archive;
pub mod card;
pub mod cursor;
pub mod error;
pub mod extensions;
pub mod ids;
pub mod ports;
pub mod projection;
pub mod push;
pub mod retention;
pub mod task;
pub mod time;
pub mod trace;
pub mod wire;

#[cfg(test)]
mod ids_tests;
#[cfg(test)]
mod props_tests;
#[cfg(test)]
mod push_tests;
#[cfg(test)]
mod stored_data_tests;
#[cfg(test)]
mod task_tests;

pub use error::{DomainError, ErrorKind};
pub use ids::*;
pub use task::{TaskAggregate, TaskCommand, TaskEvent};
pub use time::Timestamp;
