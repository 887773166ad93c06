//! The extensions a task speaks beyond core A2A: the tiny-harness task envelope (`harness`:
//! goal, plan, participants and roles, sub-tasks), A2UI surfaces (`a2ui`), kagent's
//! human-in-the-loop (`hitl`) and token usage (`usage`), and DMP's work/v1 handoffs (`dmp`).
//! They name the wire types and nothing of the task: the aggregate names them.

pub mod a2ui;
pub mod dmp;
pub mod harness;
pub mod hitl;
pub mod usage;

#[cfg(test)]
mod harness_tests;
#[cfg(test)]
mod usage_tests;
