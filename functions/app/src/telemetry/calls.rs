//! Calls the process makes to another party on a task's behalf — an upstream A2A agent, an MCP
//! server (ADR 034): how many, by outcome, and how long they took.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::histogram::{Histogram, HistogramSnapshot};

/// How one call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    Ok,
    /// Refused, unreachable, or answered with an error.
    Error,
    Timeout,
}

impl CallOutcome {
    pub const ALL: [CallOutcome; 3] = [Self::Ok, Self::Error, Self::Timeout];

    pub fn label(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Timeout => "timeout",
        }
    }
}

/// One kind of call's counters and latency.
#[derive(Default)]
pub struct Calls {
    counts: [AtomicU64; CallOutcome::ALL.len()],
    latency: Histogram,
}

/// A reading of `Calls`.
#[derive(Debug, Clone)]
pub struct CallsSnapshot {
    pub counts: [(CallOutcome, u64); 3],
    pub latency: HistogramSnapshot,
    /// The latencies since the last reading, in seconds (kept only for EMF reports).
    pub samples: Vec<f64>,
}

impl Calls {
    pub fn record(&self, outcome: CallOutcome, took: Duration, samples: bool) {
        self.counts[outcome as usize].fetch_add(1, Ordering::Relaxed);
        self.latency.observe(took, samples);
    }

    /// The counts and latency; with `samples`, the latency samples taken since the last one.
    pub fn snapshot(&self, samples: bool) -> CallsSnapshot {
        CallsSnapshot {
            counts: CallOutcome::ALL.map(|o| (o, self.counts[o as usize].load(Ordering::Relaxed))),
            latency: self.latency.snapshot(),
            samples: if samples {
                self.latency.take_samples()
            } else {
                Vec::new()
            },
        }
    }
}
