//! A DynamoDB Streams poller for the local server: reads the task table's stream shard by shard
//! and hands each record's new image to the relay, as the stream trigger does for the relay
//! Lambda. It starts at the oldest record still in the stream (at least once: the relay's
//! queues de-duplicate, and the worker ignores turns already done), and a record that cannot be
//! relayed is tried again before the shard moves on.
//!
//! An iterator chain can go quiet while its shard still receives records (moto leaves every open
//! iterator on an orphaned copy of the table whenever a transaction is canceled; a real stream's
//! iterators expire after 15 minutes unused). So a shard that has read nothing for a while is
//! read again through a fresh iterator at the last relayed record (`cursor`), and the poller
//! warns whenever it re-reads a record, finds records the old iterator missed, or loses some.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodbstreams::types::{AttributeValue, ShardIteratorType};
use base64::Engine;
use serde_json::{json, Map, Value};

pub mod cursor;
use cursor::{digest, Admit, Position, ShardCursor};

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
            // Binary travels in base64, as in the Lambda event (a commit's events, ADR 036).
            AttributeValue::B(b) => {
                json!({ "B": base64::engine::general_purpose::STANDARD.encode(b.as_ref()) })
            }
            _ => continue,
        };
        out.insert(k.clone(), j);
    }
    Value::Object(out)
}

/// Where the records go: the relay, or anything else that takes a new image.
#[async_trait]
pub trait RecordSink: Send + Sync {
    async fn relay(&self, image: &Value) -> Result<(), String>;
}

/// What the poller has noticed (each count but `relayed` is also a warning in the log).
#[derive(Debug, Default)]
pub struct PollerStats {
    /// Records relayed.
    pub relayed: AtomicU64,
    /// Records at or before the last relayed one on a healthy iterator, skipped.
    pub re_reads: AtomicU64,
    /// Times the shard was found not to hold what was relayed, and read again.
    pub diverged: AtomicU64,
    /// Records relayed while reading again after a divergence (the old iterator missed them).
    pub recovered: AtomicU64,
    /// Times records were trimmed from the stream before they were read.
    pub trimmed: AtomicU64,
}

impl PollerStats {
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

struct Shard {
    iterator: Option<String>,
    cursor: ShardCursor,
}

pub struct StreamPoller {
    client: aws_sdk_dynamodbstreams::Client,
    stream_arn: String,
    idle: Duration,
    stats: Arc<PollerStats>,
}

fn err<E: std::error::Error + Send + Sync + 'static>(
    e: &aws_sdk_dynamodbstreams::error::SdkError<E>,
) -> String {
    aws_sdk_dynamodbstreams::error::DisplayErrorContext(e).to_string()
}

/// How a shard read ended.
enum Read {
    Records(aws_sdk_dynamodbstreams::operation::get_records::GetRecordsOutput),
    /// The iterator expired or is unknown: renew it at the last relayed record.
    Expired(String),
    /// The records after our position were trimmed away: start again at the oldest kept.
    Trimmed(String),
    Failed(String),
}

impl StreamPoller {
    /// The poller of `table`'s stream (the table must have one), endpoint from the environment.
    pub async fn for_table(
        ddb: &aws_sdk_dynamodb::Client,
        table: &str,
        idle: Duration,
    ) -> Result<Self, String> {
        Self::for_table_at(ddb, table, idle, None).await
    }

    /// Same, with the streams endpoint given (tests on a second emulator).
    pub async fn for_table_at(
        ddb: &aws_sdk_dynamodb::Client,
        table: &str,
        idle: Duration,
        endpoint: Option<&str>,
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
        let mut config = aws_config::from_env();
        if let Some(e) = endpoint {
            config = config.endpoint_url(e);
        }
        let config = config.load().await;
        Ok(Self {
            client: aws_sdk_dynamodbstreams::Client::new(&config),
            stream_arn,
            idle,
            stats: Arc::default(),
        })
    }

    pub fn stats(&self) -> Arc<PollerStats> {
        self.stats.clone()
    }

    async fn iterator(&self, shard_id: &str, at: &Position) -> Result<Option<String>, String> {
        let req = self
            .client
            .get_shard_iterator()
            .stream_arn(&self.stream_arn)
            .shard_id(shard_id);
        let req = match at {
            Position::At(seq) => req
                .shard_iterator_type(ShardIteratorType::AtSequenceNumber)
                .sequence_number(seq),
            Position::Horizon => req.shard_iterator_type(ShardIteratorType::TrimHorizon),
        };
        Ok(req
            .send()
            .await
            .map_err(|e| err(&e))?
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
            .map_err(|e| err(&e))?;
        let listed = out
            .stream_description()
            .map(|d| d.shards().to_vec())
            .unwrap_or_default();
        for s in listed {
            let Some(id) = s.shard_id() else { continue };
            if shards.contains_key(id) || finished.iter().any(|f| f == id) {
                continue;
            }
            let iterator = self.iterator(id, &Position::Horizon).await?;
            shards.insert(
                id.to_string(),
                Shard {
                    iterator,
                    cursor: ShardCursor::default(),
                },
            );
        }
        Ok(())
    }

    async fn read(&self, iterator: &str) -> Read {
        match self
            .client
            .get_records()
            .shard_iterator(iterator)
            .limit(RECORDS_PER_CALL)
            .send()
            .await
        {
            Ok(o) => Read::Records(o),
            Err(e) => {
                let text = err(&e);
                match e.into_service_error() {
                    s if s.is_expired_iterator_exception() => Read::Expired(text),
                    s if s.is_trimmed_data_access_exception() => Read::Trimmed(text),
                    _ => Read::Failed(text),
                }
            }
        }
    }

    /// Moves the shard's iterator to `at`; the old one stays when none can be had.
    async fn reposition(&self, id: &str, shard: &mut Shard, at: Position) {
        match self.iterator(id, &at).await {
            Ok(Some(i)) => shard.iterator = Some(i),
            Ok(None) => {}
            Err(e) => tracing::warn!(shard = id, error = %e, "cannot renew the stream iterator"),
        }
    }

    /// Reads one shard once; returns whether records were relayed.
    async fn poll_shard(&self, id: &str, shard: &mut Shard, sink: &dyn RecordSink) -> bool {
        let Some(it) = shard.iterator.clone() else {
            return false;
        };
        let last = shard.cursor.last_seq().map(str::to_string);
        let out = match self.read(&it).await {
            Read::Records(o) => o,
            Read::Expired(e) => {
                tracing::warn!(shard = id, last = ?last, error = %e, "stream iterator expired; renewing it at the last relayed record");
                let at = shard.cursor.renew();
                self.reposition(id, shard, at).await;
                return false;
            }
            Read::Trimmed(e) => {
                bump(&self.stats.trimmed);
                tracing::warn!(shard = id, last = ?last, error = %e, "stream records were trimmed before they were read; continuing at the oldest record kept");
                let at = shard.cursor.trimmed();
                self.reposition(id, shard, at).await;
                return false;
            }
            Read::Failed(e) => {
                tracing::warn!(shard = id, last = ?last, error = %e, "stream read failed; renewing the iterator at the last relayed record");
                let at = shard.cursor.renew();
                self.reposition(id, shard, at).await;
                return false;
            }
        };
        if out.records().is_empty() {
            shard.iterator = out.next_shard_iterator().map(str::to_string);
            if let Some(at) = shard.cursor.empty_read() {
                self.note_divergence(id, &shard.cursor, &at, last.as_deref());
                self.reposition(id, shard, at).await;
            }
            return false;
        }
        let mut relayed = false;
        for r in out.records() {
            let Some(d) = r.dynamodb() else { continue };
            let seq = d.sequence_number().unwrap_or_default();
            let image = d.new_image().map(image_json);
            let digest = digest(image.as_ref());
            let resyncing = shard.cursor.resynchronising();
            match shard.cursor.admit(seq, digest) {
                Admit::Known => continue,
                Admit::ReRead => {
                    bump(&self.stats.re_reads);
                    tracing::warn!(shard = id, seq, last = ?shard.cursor.last_seq(), "stream record read again; skipped");
                    continue;
                }
                Admit::Diverged(at) => {
                    self.note_divergence(id, &shard.cursor, &at, last.as_deref());
                    self.reposition(id, shard, at).await;
                    return relayed;
                }
                Admit::Relay => {}
            }
            if let Some(image) = &image {
                if let Err(e) = sink.relay(image).await {
                    tracing::warn!(shard = id, seq, error = %e, "relay failed; retrying from this record");
                    let at = shard.cursor.renew();
                    self.reposition(id, shard, at).await;
                    return relayed;
                }
            }
            if resyncing {
                bump(&self.stats.recovered);
                tracing::warn!(
                    shard = id,
                    seq,
                    "relayed a record the old stream iterator had not returned"
                );
            }
            bump(&self.stats.relayed);
            shard.cursor.relayed(seq, digest);
            relayed = true;
        }
        shard.iterator = out.next_shard_iterator().map(str::to_string);
        relayed
    }

    fn note_divergence(&self, id: &str, cursor: &ShardCursor, at: &Position, last: Option<&str>) {
        if cursor.resynchronising() || (matches!(at, Position::Horizon) && last.is_some()) {
            bump(&self.stats.diverged);
            tracing::warn!(shard = id, last = ?last, from = ?at, "the shard no longer holds the records relayed last (an emulator that rolled back its stream?); reading it again from an earlier record");
        }
    }

    /// Polls until the process ends.
    pub async fn run(self, sink: impl RecordSink) {
        let mut shards: HashMap<String, Shard> = HashMap::new();
        let mut finished: Vec<String> = Vec::new();
        let mut polls = 0u32;
        loop {
            if polls.is_multiple_of(SHARD_REFRESH_POLLS) {
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
                if shard.iterator.is_none() {
                    // A closed shard, read to its end: its children are listed by `refresh`.
                    shards.remove(&id);
                    finished.push(id);
                    continue;
                }
                busy |= self.poll_shard(&id, shard, &sink).await;
            }
            if !busy {
                tokio::time::sleep(self.idle).await;
            }
        }
    }
}

/// Against the emulator (`AWS_ENDPOINT_URL`): moto replaces its table object whenever a
/// transaction is canceled, which silenced the old poller for good.
#[cfg(test)]
mod emulator_tests {
    use std::sync::Mutex;

    use taskledger_domain::ports::{commit_for, restore, EventStore, StoreError};
    use taskledger_domain::task::{AppendUserMessage, TaskCommand};
    use taskledger_domain::time::Timestamp;

    use super::*;
    use crate::contract::{create_task, user_message};
    use crate::dynamo::store::tests::fresh_store;
    use cursor::REANCHOR_AFTER_EMPTY_READS;

    /// The events relayed, and the records (items: task and last sequence number) they came in.
    #[derive(Clone, Default)]
    struct Collect(
        Arc<Mutex<Vec<(String, u64)>>>,
        Arc<Mutex<Vec<(String, u64)>>>,
    );

    #[async_trait]
    impl RecordSink for Collect {
        async fn relay(&self, image: &Value) -> Result<(), String> {
            let events = crate::relay::streamed(image);
            if let Some(last) = events.last() {
                self.1
                    .lock()
                    .map_err(|e| e.to_string())?
                    .push((last.task_id.to_string(), last.seq));
            }
            for e in events {
                self.0
                    .lock()
                    .map_err(|e| e.to_string())?
                    .push((e.task_id.to_string(), e.seq));
            }
            Ok(())
        }
    }

    /// The store and poller on a fresh table: on the emulator named by
    /// `TASKLEDGER_STOCK_MOTO_URL` (moto with its own transactions, which roll back by swapping
    /// the table) when set, else on `AWS_ENDPOINT_URL`.
    async fn fresh() -> Option<(crate::dynamo::DynamoStore, StreamPoller, bool)> {
        let stock = std::env::var("TASKLEDGER_STOCK_MOTO_URL").ok();
        let Some(url) = stock else {
            let store = fresh_store().await?;
            let poller = StreamPoller::for_table(store.client(), store.table(), IDLE)
                .await
                .expect("poller");
            return Some((store, poller, false));
        };
        let client = crate::dynamo::client_for_endpoint(&url).await;
        let prefix = format!("tl-stream-{}-", uuid::Uuid::new_v4().simple());
        crate::dynamo::schema::create_tables(&client, &prefix)
            .await
            .expect("create test table");
        let store = crate::dynamo::DynamoStore::new(client, &prefix);
        let poller = StreamPoller::for_table_at(store.client(), store.table(), IDLE, Some(&url))
            .await
            .expect("poller");
        Some((store, poller, true))
    }

    const IDLE: Duration = Duration::from_millis(20);

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_record_is_relayed_once_across_a_canceled_transaction() {
        let Some((store, poller, stock_moto)) = fresh().await else {
            return;
        };
        let stats = poller.stats();
        let sink = Collect::default();
        tokio::spawn(poller.run(sink.clone()));
        let mut ids = Vec::new();
        for i in 0..4 {
            ids.push(create_task(&store, &format!("t-s-{i}"), "c").await);
        }
        // A stale append: the store's transaction is canceled, nothing is written.
        let loaded = store.load(&ids[0]).await.expect("load").expect("task");
        let mut stale = restore(&loaded).expect("restore").expect("snapshot");
        stale.version -= 1;
        let events = stale
            .decide(TaskCommand::AppendUserMessage(AppendUserMessage {
                message: user_message("m-stale", "late"),
                at: Timestamp::now(),
                caller: None,
            }))
            .expect("decide");
        let err = store
            .append(&commit_for(
                ids[0].clone(),
                &stale,
                &events,
                Timestamp::now(),
            ))
            .await
            .expect_err("stale");
        assert!(matches!(err, StoreError::Conflict(_)), "{err}");
        // Quiet long enough for the poller to look again, then more commits.
        tokio::time::sleep(IDLE * REANCHOR_AFTER_EMPTY_READS * 3).await;
        for i in 4..8 {
            ids.push(create_task(&store, &format!("t-s-{i}"), "c").await);
        }
        let committed: Vec<(String, u64)> = ids
            .iter()
            .flat_map(|id| (1..=3).map(move |seq| (id.to_string(), seq)))
            .collect();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let seen = sink.0.lock().expect("lock").clone();
            if committed.iter().all(|e| seen.contains(e)) {
                // Each record (an item: a commit's events) once. Stock moto streams the write of
                // a transaction it rolled back: that record holds events of sequence numbers a
                // committed record holds too (the turn handler tells them apart, by the log).
                let records = sink.1.lock().expect("lock").clone();
                let mut unique = records.clone();
                unique.sort();
                unique.dedup();
                assert_eq!(unique.len(), records.len(), "each record once: {records:?}");
                if !stock_moto {
                    assert_eq!(
                        seen.len(),
                        committed.len(),
                        "only what was committed: {seen:?}"
                    );
                }
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "records missing after 30 s: relayed {seen:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if stock_moto {
            assert!(
                PollerStats::get(&stats.diverged) >= 1,
                "moto orphaned the iterator; the poller should have said so"
            );
        }
    }
}
