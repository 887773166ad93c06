//! The HTTP API Lambda: the shared A2A router served by lambda_http, wired by
//! `compose::lambda_api` from the environment. Behind API Gateway's HTTP API (principals from
//! the claims its authorizer verified) replies are buffered, so a stream returns when it ends,
//! below the gateway's timeout; with `TASKLEDGER_RESPONSE_STREAMING=1`, behind a Function URL in
//! RESPONSE_STREAM mode (principals from the SigV4-verified IAM identity), each event streams
//! as it is committed. Agent work goes to the worker through the table's stream, the relay and
//! the turn queue (ADR 016).

use lambda_http::{run, run_with_streaming_response, Error};
use taskledger_app::compose::{self, ResponseMode};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (settings, lambda) = compose::init_lambda()?;
    // The upstream agent when the deployment names one (our cancel reaches its task, the card
    // advertises its skills), else the scenario agent (direct replies); turns run in the worker.
    let agent = compose::api_agent(&settings).await?;
    let api = compose::lambda_api(agent, &settings, &lambda).await?;
    tracing::info!(mode = ?api.mode, "serving");
    match api.mode {
        ResponseMode::Buffered => run(api.router).await,
        ResponseMode::Streaming => run_with_streaming_response(api.router).await,
    }
}
