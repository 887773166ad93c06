//! Counts DynamoDB calls per operation through an SDK interceptor: round-trip budgets are
//! tested against real calls, not estimates.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;

/// Shared call counts, keyed by operation name (`GetItem`, `TransactWriteItems`, …).
#[derive(Debug, Clone, Default)]
pub struct CallCounter {
    calls: Arc<Mutex<BTreeMap<String, u64>>>,
}

impl CallCounter {
    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    pub fn total(&self) -> u64 {
        self.snapshot().values().sum()
    }

    pub fn reset(&self) {
        if let Ok(mut c) = self.calls.lock() {
            c.clear();
        }
    }
}

tokio::task_local! {
    /// Calls made by the current task (not by tasks it spawned), when counting is scoped.
    static SCOPED: CallCounter;
}

/// Runs `f` and returns the DynamoDB calls it made itself, per operation. Work that `f` hands
/// to other tasks (the agent) is not counted, so a budget measures one operation exactly.
pub async fn calls_made_by<F: Future>(f: F) -> (F::Output, BTreeMap<String, u64>) {
    let counter = CallCounter::default();
    let out = SCOPED.scope(counter.clone(), f).await;
    (out, counter.snapshot())
}

impl CallCounter {
    fn add(&self, op: &str) {
        if let Ok(mut c) = self.calls.lock() {
            *c.entry(op.to_string()).or_default() += 1;
        }
    }
}

impl Intercept for CallCounter {
    fn name(&self) -> &'static str {
        "CallCounter"
    }

    /// Runs once per HTTP attempt, so SDK retries count as the round trips they are.
    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let op = context
            .request()
            .headers()
            .get("x-amz-target")
            .and_then(|t| t.rsplit('.').next())
            .unwrap_or("unknown")
            .to_string();
        self.add(&op);
        let _ = SCOPED.try_with(|scoped| scoped.add(&op));
        Ok(())
    }
}
