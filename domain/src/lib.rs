//! taskledger's pure core: A2A 1.0 wire types, the Task aggregate, validation, projections into
//! the read model, and the ports the adapters implement. No AWS, no network, no I/O.

pub mod a2ui;
pub mod archive;
pub mod card;
pub mod card_extended;
pub mod card_signature;
pub mod cursor;
pub mod dmp;
pub mod error;
pub mod events;
pub mod ext;
pub mod hitl;
pub mod ids;
pub mod intake;
pub mod llm;
pub mod ports;
pub mod projection;
pub mod push;
pub mod retention;
pub mod scripted;
pub mod skills;
pub mod task;
pub mod time;
pub mod tools;
pub mod trace;
pub mod turns;
pub mod wire;

#[cfg(test)]
mod ext_tests;
#[cfg(test)]
mod ids_tests;
#[cfg(test)]
mod props_tests;
#[cfg(test)]
mod push_tests;
#[cfg(test)]
mod task_tests;
#[cfg(test)]
mod usage_tests;

pub use error::{DomainError, ErrorKind};
pub use ids::*;
pub use task::{TaskAggregate, TaskCommand, TaskEvent};
pub use time::Timestamp;
