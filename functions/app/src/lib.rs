//! taskledger's application layer, shared by the Lambda functions and the local server: the
//! command service with its one commit path (`service`), the agents behind a small port
//! (`agent`), the A2A bindings (`http`; `grpc` with the `grpc` feature) and the request rules
//! they share (`request`), the loops that drive the service (`runners`), who is calling
//! (`identity`) and how often it may (`limits`), the A2A 0.3 shapes the bindings translate at
//! their edge (`v03`), an upstream A2A agent as the worker (`upstream`, an `Agent` beside
//! the built-in ones), every task an MCP task too (`mcp_tasks`, the MCP endpoint, with the
//! `mcp-server` feature), and the composition the binaries share (`compose`).
//!
//! Rooms depend downwards only (no circle: checked): the bindings (`http`, `grpc`) → `call`
//! (the front door: a request read once, its protocol line deciding what varies by line) →
//! `v03` (the 0.3 edge, which translates to and from `operations`' requests and results) →
//! `operations` (a request typed and run) → `service` → `agent` (the port); `card` → `v03`,
//! `operations` (which names the served card by its trait, `operations::ServedCard`);
//! `runners` → `service`; all on the leaves `request`, `per_task`, `telemetry` and `error`.
//! `compose` may name everything, infra's adapters included.

pub mod agent;
pub mod archive;
#[cfg(feature = "board")]
pub mod board;
pub mod call;
pub mod card;
pub mod compose;
pub mod error;
#[cfg(feature = "grpc")]
pub mod grpc;
pub mod http;
pub mod identity;
pub mod limits;
#[cfg(feature = "mcp-server")]
pub mod mcp_tasks;
pub mod operations;
mod per_task;
pub mod request;
pub mod runners;
pub mod service;
pub mod telemetry;
pub mod upstream;
pub mod v03;

pub use compose::settings;
pub use error::AppError;
pub use http::{router, router_with, AppState, GrpcAddress, HttpSettings};
pub use service::{Dispatch, Service, ServiceSettings};
