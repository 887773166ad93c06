//! The deadline reaper Lambda (an EventBridge schedule): one pass of the app crate's reaper —
//! every task at work (SUBMITTED or WORKING) with no event for longer than
//! `TASKLEDGER_STALL_DEADLINE_SECS` fails, saying so, through the one commit path. A pass is
//! idempotent and safe against a racing turn (optimistic concurrency); a missed or repeated
//! invocation changes nothing the next one would not.

use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use serde_json::{json, Value};
use taskledger_app::compose;
use taskledger_domain::time::Timestamp;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (settings, _) = compose::init_lambda()?;
    let reaper = compose::lambda_reaper(&settings).await?;
    if reaper.is_none() {
        tracing::info!("TASKLEDGER_STALL_DEADLINE_SECS is 0: each pass does nothing");
    }
    let reaper = &reaper;
    run(service_fn(move |_: LambdaEvent<Value>| async move {
        let Some(reaper) = reaper else {
            return Ok::<_, Error>(json!({"looked": 0, "failed": 0}));
        };
        let report = reaper.pass(Timestamp::now()).await?;
        tracing::info!(
            looked = report.looked,
            failed = report.failed,
            "reaper pass"
        );
        taskledger_app::compose::report().await;
        Ok(json!({"looked": report.looked, "failed": report.failed}))
    }))
    .await
}
