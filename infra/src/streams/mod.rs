//! A DynamoDB Streams poller for the local server: reads the task table's stream shard by shard
//! and hands each record's new image to the relay, as the stream trigger does for the relay
//! Lambda. It starts at the oldest record still in the stream (at least once: the relay's
//! queues de-duplicate, and the worker ignores turns already done), and a record that cannot be
//! relayed is tried again before the shard moves on.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodbstreams::types::{AttributeValue, ShardIteratorType};
use serde_json::{json, Map, Value};

use crate::relay::Relay;

/// Records read per call.
const RECORDS_PER_CALL: i32 = 100;
/// Polls between two looks for new shards.
const SHARD_REFRESH_POLLS: u32 = 50;

/// Attribute-value JSON (`{"S": "…"}`) of a stream image, as the Lambda event carries it.
pub fn image_json(image: &HashMap<String, AttributeValue>) -> Value {
    let mut out = Map::new();
    for (k, v) in image {
        let j = match v {
            AttributeValue::S(s) => json!({ "S": s }),
            AttributeValue::N(n) => json!({ "N": n }),
            AttributeValue::Bool(b) => json!({ "BOOL": b }),
            _ => continue,
        };
        out.insert(k.clone(), j);
    }
    Value::Object(out)
}

struct Shard {
    iterator: Option<String>,
    /// Sequence number of the last record relayed.
    last: Option<String>,
}

pub struct StreamPoller {
    client: aws_sdk_dynamodbstreams::Client,
    stream_arn: String,
    idle: Duration,
}

fn err<E: std::error::Error + Send + Sync + 'static>(
    e: aws_sdk_dynamodbstreams::error::SdkError<E>,
) -> String {
    aws_sdk_dynamodbstreams::error::DisplayErrorContext(&e).to_string()
}

impl StreamPoller {
    /// The poller of `table`'s stream (the table must have one).
    pub async fn for_table(
        ddb: &aws_sdk_dynamodb::Client,
        table: &str,
        idle: Duration,
    ) -> Result<Self, String> {
        let out = ddb
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(|e| aws_sdk_dynamodb::error::DisplayErrorContext(&e).to_string())?;
        let stream_arn = out
            .table()
            .and_then(|t| t.latest_stream_arn())
            .ok_or_else(|| format!("table {table} has no stream"))?
            .to_string();
        let config = aws_config::load_from_env().await;
        Ok(Self {
            client: aws_sdk_dynamodbstreams::Client::new(&config),
            stream_arn,
            idle,
        })
    }

    async fn iterator(
        &self,
        shard_id: &str,
        after: Option<&str>,
    ) -> Result<Option<String>, String> {
        let mut req = self
            .client
            .get_shard_iterator()
            .stream_arn(&self.stream_arn)
            .shard_id(shard_id);
        req = match after {
            Some(seq) => req
                .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                .sequence_number(seq),
            None => req.shard_iterator_type(ShardIteratorType::TrimHorizon),
        };
        Ok(req
            .send()
            .await
            .map_err(err)?
            .shard_iterator()
            .map(str::to_string))
    }

    async fn refresh(
        &self,
        shards: &mut HashMap<String, Shard>,
        finished: &[String],
    ) -> Result<(), String> {
        let out = self
            .client
            .describe_stream()
            .stream_arn(&self.stream_arn)
            .send()
            .await
            .map_err(err)?;
        let listed = out
            .stream_description()
            .map(|d| d.shards().to_vec())
            .unwrap_or_default();
        for s in listed {
            let Some(id) = s.shard_id() else { continue };
            if shards.contains_key(id) || finished.iter().any(|f| f == id) {
                continue;
            }
            let iterator = self.iterator(id, None).await?;
            shards.insert(
                id.to_string(),
                Shard {
                    iterator,
                    last: None,
                },
            );
        }
        Ok(())
    }

    /// Polls until the process ends.
    pub async fn run(self, relay: Relay) {
        let mut shards: HashMap<String, Shard> = HashMap::new();
        let mut finished: Vec<String> = Vec::new();
        let mut polls = 0u32;
        loop {
            if polls % SHARD_REFRESH_POLLS == 0 {
                if let Err(e) = self.refresh(&mut shards, &finished).await {
                    tracing::warn!(error = %e, "stream poller cannot list shards");
                }
            }
            polls = polls.wrapping_add(1);
            let mut busy = false;
            let ids: Vec<String> = shards.keys().cloned().collect();
            for id in ids {
                let Some(shard) = shards.get_mut(&id) else {
                    continue;
                };
                let Some(it) = shard.iterator.clone() else {
                    shards.remove(&id);
                    finished.push(id);
                    continue;
                };
                let out = match self
                    .client
                    .get_records()
                    .shard_iterator(&it)
                    .limit(RECORDS_PER_CALL)
                    .send()
                    .await
                {
                    Ok(o) => o,
                    Err(e) => {
                        // Expired or invalid iterator: continue after the last relayed record.
                        tracing::debug!(error = %err(e), "stream read failed, renewing the iterator");
                        shard.iterator = self
                            .iterator(&id, shard.last.as_deref())
                            .await
                            .unwrap_or(shard.iterator.take());
                        continue;
                    }
                };
                let mut failed = false;
                for r in out.records() {
                    let Some(d) = r.dynamodb() else { continue };
                    if let Some(image) = d.new_image() {
                        if let Err(e) = relay.relay(&image_json(image)).await {
                            tracing::warn!(error = %e, "relay failed; retrying from this record");
                            failed = true;
                            break;
                        }
                    }
                    shard.last = d.sequence_number().map(str::to_string);
                    busy = true;
                }
                shard.iterator = if failed {
                    match self.iterator(&id, shard.last.as_deref()).await {
                        Ok(i) => i,
                        Err(_) => Some(it),
                    }
                } else {
                    out.next_shard_iterator().map(str::to_string)
                };
            }
            if !busy {
                tokio::time::sleep(self.idle).await;
            }
        }
    }
}
