//! A2A 0.3, served beside 1.0 by translation at the edge (ADR 031): a 0.3 request becomes the
//! 1.0 request object the operations layer already decodes and runs, and the 1.0 answer and
//! stream events become 0.3 shapes again. Validation, the domain, the store and the error table
//! stay single; only shapes live here.
//!
//! How a request is known to be 0.3, per binding: JSON-RPC by its method name (`message/send`,
//! …: `jsonrpc`), HTTP+JSON by its `/v1/` path (`rest`), gRPC by its service (`a2a.v1`). Its
//! version header must then be absent or `0.x` (`request::check_v03_version`).
//!
//! - `objects`: the 0.3 JSON-RPC object shapes (`kind`, lowercase states, …) ↔ 1.0 ProtoJSON.
//! - `jsonrpc`: the ten 0.3 methods, their params and results.
//! - `card`: the 0.3 fields merged into the public card, and the pure 0.3 extended card.
//! - `push`: what a webhook registered over 0.3 receives (the Task, 0.3 JSON).
//! - `rest`: the `/v1/…` paths of HTTP+JSON, their request objects, answers and events.
//!
//! Only the front door (`crate::call`: `Line`, `Entry`) reaches this module (a layout test
//! checks it): bindings ask the line, never the 0.3 shapes.

pub mod answers;
pub mod card;
pub mod grpc;
pub mod jsonrpc;
pub mod objects;
pub mod proto_json;
pub mod push;
pub mod rest;
