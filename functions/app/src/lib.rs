//! taskledger's application layer, shared by the Lambda functions and the local server:
//! the command service, the agent that works on tasks, identity, and the A2A HTTP router.

pub mod agent;
pub mod error;
pub mod http;
pub mod identity;
pub mod llm_agent;
pub mod push;
pub mod service;
pub mod worker;

pub use error::AppError;
pub use http::{router, AppState, HttpSettings};
pub use service::{Dispatch, Service, ServiceSettings};
