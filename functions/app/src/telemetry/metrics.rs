//! The process's metrics: a fixed set, each with units and bounded labels (a method of eleven,
//! a binding of three, an outcome of "ok" or one of the error table's reasons; turn, delivery
//! and token kinds from short enums), recorded with relaxed atomics where the requests are.
//! Rendered as Prometheus text (`prometheus.rs`, the local `/metrics`) and as CloudWatch
//! embedded-metric-format lines (`emf.rs`, on Lambda).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use super::histogram::Histogram;
use crate::request::Method;

/// The binding a request came over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Binding {
    JsonRpc,
    HttpJson,
    Grpc,
    /// taskledger's MCP endpoint (`/mcp`, every task an MCP task too).
    Mcp,
}

impl Binding {
    pub const ALL: [Binding; 4] = [
        Binding::JsonRpc,
        Binding::HttpJson,
        Binding::Grpc,
        Binding::Mcp,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Self::JsonRpc => "jsonrpc",
            Self::HttpJson => "http_json",
            Self::Grpc => "grpc",
            Self::Mcp => "mcp",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// How an agent turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnOutcome {
    /// The agent ran and stopped (the task done, waiting, or moved on).
    Ran,
    /// Its budget ran out: a continuation turn goes on.
    Continued,
    /// It failed; another attempt may follow.
    Failed,
    /// Given up (attempts spent, or dead-lettered): its task failed, saying so.
    GivenUp,
}

impl TurnOutcome {
    pub const ALL: [TurnOutcome; 4] = [Self::Ran, Self::Continued, Self::Failed, Self::GivenUp];

    pub fn label(self) -> &'static str {
        match self {
            Self::Ran => "ran",
            Self::Continued => "continued",
            Self::Failed => "failed",
            Self::GivenUp => "given_up",
        }
    }
}

/// How one webhook delivery attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushOutcome {
    Delivered,
    /// It failed and will be tried again.
    Retried,
    DeadLettered,
}

impl PushOutcome {
    pub const ALL: [PushOutcome; 3] = [Self::Delivered, Self::Retried, Self::DeadLettered];

    pub fn label(self) -> &'static str {
        match self {
            Self::Delivered => "delivered",
            Self::Retried => "retried",
            Self::DeadLettered => "dead_lettered",
        }
    }
}

/// Tokens a model call reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    Input,
    Output,
}

impl TokenKind {
    pub const ALL: [TokenKind; 2] = [Self::Input, Self::Output];

    pub fn label(self) -> &'static str {
        match self {
            Self::Input => "input",
            Self::Output => "output",
        }
    }
}

const METHODS: usize = Method::ALL.len();
const BINDINGS: usize = Binding::ALL.len();

pub struct Metrics {
    /// Latency samples are kept for EMF reports (Lambda) — off for a long-lived server.
    samples: AtomicBool,
    ok: [[AtomicU64; BINDINGS]; METHODS],
    /// Refused and failed requests by (method, binding, reason): rare, so behind a lock.
    errors: Mutex<BTreeMap<(usize, usize, &'static str), u64>>,
    latency: [[Histogram; BINDINGS]; METHODS],
    commits: AtomicU64,
    conflicts: AtomicU64,
    turns: [AtomicU64; TurnOutcome::ALL.len()],
    turn_duration: Histogram,
    tokens: [AtomicU64; TokenKind::ALL.len()],
    pushes: [AtomicU64; PushOutcome::ALL.len()],
    push_latency: Histogram,
    open_streams: AtomicI64,
    spans_dropped: AtomicU64,
    upstream: super::calls::Calls,
    mcp: super::calls::Calls,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

/// The process's metrics (one server or one Lambda function a process).
pub fn metrics() -> &'static Metrics {
    &METRICS
}

impl Metrics {
    pub(crate) fn new() -> Self {
        Self {
            samples: AtomicBool::new(false),
            ok: Default::default(),
            errors: Mutex::new(BTreeMap::new()),
            latency: Default::default(),
            commits: AtomicU64::new(0),
            conflicts: AtomicU64::new(0),
            turns: Default::default(),
            turn_duration: Histogram::default(),
            tokens: Default::default(),
            pushes: Default::default(),
            push_latency: Histogram::default(),
            open_streams: AtomicI64::new(0),
            spans_dropped: AtomicU64::new(0),
            upstream: Default::default(),
            mcp: Default::default(),
        }
    }

    /// Keep latency samples for embedded-metric-format reports (Lambda).
    pub fn keep_samples(&self) {
        self.samples.store(true, Ordering::Relaxed);
    }

    fn sampling(&self) -> bool {
        self.samples.load(Ordering::Relaxed)
    }

    /// One A2A request answered: `reason` is `None` when it succeeded, else its error reason.
    pub fn request(
        &self,
        method: Method,
        binding: Binding,
        reason: Option<&'static str>,
        took: Duration,
    ) {
        let (m, b) = (method.index(), binding.index());
        match reason {
            None => {
                self.ok[m][b].fetch_add(1, Ordering::Relaxed);
            }
            Some(r) => {
                if let Ok(mut e) = self.errors.lock() {
                    *e.entry((m, b, r)).or_insert(0) += 1;
                }
            }
        }
        self.latency[m][b].observe(took, self.sampling());
    }

    pub fn commit(&self) {
        self.commits.fetch_add(1, Ordering::Relaxed);
    }

    /// A commit lost an optimistic-concurrency race (it is decided again).
    pub fn conflict(&self) {
        self.conflicts.fetch_add(1, Ordering::Relaxed);
    }

    pub fn turn(&self, outcome: TurnOutcome, took: Option<Duration>) {
        self.turns[outcome as usize].fetch_add(1, Ordering::Relaxed);
        if let Some(t) = took {
            self.turn_duration.observe(t, self.sampling());
        }
    }

    pub fn tokens(&self, kind: TokenKind, n: u64) {
        self.tokens[kind as usize].fetch_add(n, Ordering::Relaxed);
    }

    pub fn push(&self, outcome: PushOutcome, took: Duration) {
        self.pushes[outcome as usize].fetch_add(1, Ordering::Relaxed);
        self.push_latency.observe(took, self.sampling());
    }

    /// A call to the upstream A2A agent (ADR 034).
    pub fn upstream(&self, outcome: super::calls::CallOutcome, took: Duration) {
        self.upstream.record(outcome, took, self.sampling());
    }

    /// A call to an MCP server's tool (ADR 034).
    pub fn mcp(&self, outcome: super::calls::CallOutcome, took: Duration) {
        self.mcp.record(outcome, took, self.sampling());
    }

    /// A stream opened; the guard counts it until dropped.
    pub fn stream_opened(&'static self) -> OpenStream {
        self.open_streams.fetch_add(1, Ordering::Relaxed);
        OpenStream(self)
    }

    /// Spans the trace exporter dropped (its queue full, or the collector away).
    pub fn spans_dropped(&self, n: u64) {
        self.spans_dropped.fetch_add(n, Ordering::Relaxed);
    }

    /// Everything, as one reading.
    pub fn snapshot(&self) -> Snapshot {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut requests = Vec::new();
        let mut latency = Vec::new();
        for (mi, method) in Method::ALL.iter().enumerate() {
            for (bi, binding) in Binding::ALL.iter().enumerate() {
                let ok = load(&self.ok[mi][bi]);
                if ok > 0 {
                    requests.push((*method, *binding, "ok", ok));
                }
                let h = &self.latency[mi][bi];
                if h.count() > 0 {
                    latency.push(LatencySeries {
                        method: *method,
                        binding: *binding,
                        histogram: h.snapshot(),
                        samples: if self.sampling() {
                            h.take_samples()
                        } else {
                            Vec::new()
                        },
                    });
                }
            }
        }
        if let Ok(e) = self.errors.lock() {
            for (&(m, b, r), &n) in e.iter() {
                requests.push((Method::ALL[m], Binding::ALL[b], r, n));
            }
        }
        Snapshot {
            requests,
            latency,
            commits: load(&self.commits),
            conflicts: load(&self.conflicts),
            turns: TurnOutcome::ALL.map(|o| (o, load(&self.turns[o as usize]))),
            turn_duration: self.turn_duration.snapshot(),
            turn_samples: self.take_if_sampling(&self.turn_duration),
            tokens: TokenKind::ALL.map(|k| (k, load(&self.tokens[k as usize]))),
            pushes: PushOutcome::ALL.map(|o| (o, load(&self.pushes[o as usize]))),
            push_latency: self.push_latency.snapshot(),
            push_samples: self.take_if_sampling(&self.push_latency),
            open_streams: self.open_streams.load(Ordering::Relaxed).max(0) as u64,
            spans_dropped: load(&self.spans_dropped),
            upstream: self.upstream.snapshot(self.sampling()),
            mcp: self.mcp.snapshot(self.sampling()),
        }
    }

    fn take_if_sampling(&self, h: &Histogram) -> Vec<f64> {
        if self.sampling() {
            h.take_samples()
        } else {
            Vec::new()
        }
    }
}

/// An open stream, counted until dropped.
pub struct OpenStream(&'static Metrics);

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.open_streams.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One method and binding's latency.
#[derive(Debug, Clone)]
pub struct LatencySeries {
    pub method: Method,
    pub binding: Binding,
    pub histogram: super::histogram::HistogramSnapshot,
    /// Seconds, since the last reading (EMF only).
    pub samples: Vec<f64>,
}

/// The metrics at one reading (counters are totals since the process started).
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// (method, binding, "ok" or an error reason, count).
    pub requests: Vec<(Method, Binding, &'static str, u64)>,
    pub latency: Vec<LatencySeries>,
    pub commits: u64,
    pub conflicts: u64,
    pub turns: [(TurnOutcome, u64); 4],
    pub turn_duration: super::histogram::HistogramSnapshot,
    pub turn_samples: Vec<f64>,
    pub tokens: [(TokenKind, u64); 2],
    pub pushes: [(PushOutcome, u64); 3],
    pub push_latency: super::histogram::HistogramSnapshot,
    pub push_samples: Vec<f64>,
    pub open_streams: u64,
    pub spans_dropped: u64,
    pub upstream: super::calls::CallsSnapshot,
    pub mcp: super::calls::CallsSnapshot,
}
