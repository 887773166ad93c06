//! taskledger's application layer, shared by the Lambda functions and the local server: the
//! command service with its one commit path (`service`), the agents behind a small port
//! (`agent`), the A2A bindings (`http`), the loops that drive the service (`runners`), who is
//! calling (`identity`), and the composition the binaries share (`compose`).
//!
//! Rooms depend downwards only: `http` and `runners` → `service` → `agent` (the port), all on
//! the leaf `locks` and `error`; `compose` may name everything, infra's adapters included.

pub mod agent;
pub mod compose;
pub mod error;
pub mod http;
pub mod identity;
mod per_task;
pub mod runners;
pub mod service;

pub use error::AppError;
pub use http::{router, AppState, HttpSettings};
pub use service::{Dispatch, Service, ServiceSettings};
