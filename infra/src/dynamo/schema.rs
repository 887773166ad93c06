//! The DynamoDB table and its key format, in one place: `create_tables` builds the table (a test
//! checks `template.yaml` declares the same), and every key of every item is made and read here.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
    TimeToLiveSpecification,
};
use aws_sdk_dynamodb::Client;
use taskledger_domain::ids::{ContextId, IdempotencyKey, MessageId, Principal};
use taskledger_domain::wire::TaskState;

/// A global secondary index: partition key, sort key, and the non-key attributes it carries
/// (`None`: keys only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexDef {
    pub name: &'static str,
    pub pk: &'static str,
    pub sk: &'static str,
    pub include: Option<&'static [&'static str]>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableDef {
    /// Logical id of the table in `template.yaml`.
    pub logical_id: &'static str,
    /// Table name = prefix + suffix.
    pub suffix: &'static str,
    pub pk: &'static str,
    pub sk: &'static str,
    /// Every key attribute (all strings).
    pub attributes: &'static [&'static str],
    pub indexes: &'static [IndexDef],
    /// Stream view type (`NEW_IMAGE`): the relay reads committed events from the stream.
    pub stream: &'static str,
}

/// Attribute of every item of a finished task: when it expires (epoch seconds), read by the
/// table's TTL.
pub const EXPIRES_ATTR: &str = "expires";
/// Event attribute: the trace of the commit that appended it (work requests and pushed
/// updates only; `TraceContext::to_stored`).
pub const TRACE_ATTR: &str = "tp";

/// Index names.
pub const BY_OWNER: &str = "by-owner";
pub const BY_CONTEXT: &str = "by-context";
pub const BY_STATE: &str = "by-state";
pub const BY_SHARD: &str = "by-shard";
pub const AT_WORK: &str = "at-work";

/// Attributes the list indexes carry besides their keys: the chunk counts of the task's
/// artifacts, so one BatchGetItem reads a page's heads and chunks (ADR 019). Small index items
/// keep a counting Query cheap, and an index is written only when its keys or these change.
const LIST_ATTRS: &[&str] = &[CHUNK_COUNTS_ATTR];
/// The owner and context indexes also carry the state key: `contextId` and `status` together
/// are one Query on the context index with a filter (a filter can only read attributes the
/// index projects), and a finished task past its expiry is told apart as either is read.
const STATE_LIST_ATTRS: &[&str] = &[CHUNK_COUNTS_ATTR, "g3pk"];
/// Head attribute: the chunk count of each of the task's artifacts, comma-separated, in order.
pub const CHUNK_COUNTS_ATTR: &str = "ach";

/// One table holds every item of every task (see ADR 007).
pub const TASKS: TableDef = TableDef {
    logical_id: "TasksTable",
    suffix: "tasks",
    pk: "pk",
    sk: "sk",
    attributes: &["pk", "sk", "g1pk", "g1sk", "g2pk", "g3pk", "shard", "g4pk"],
    indexes: &[
        IndexDef {
            name: BY_OWNER,
            pk: "g1pk",
            sk: "g1sk",
            include: Some(STATE_LIST_ATTRS),
        },
        IndexDef {
            name: BY_CONTEXT,
            pk: "g2pk",
            sk: "g1sk",
            include: Some(STATE_LIST_ATTRS),
        },
        IndexDef {
            name: BY_STATE,
            pk: "g3pk",
            sk: "g1sk",
            include: Some(LIST_ATTRS),
        },
        IndexDef {
            name: BY_SHARD,
            pk: "shard",
            sk: "pk",
            include: None,
        },
        // Sparse: only the heads of tasks at work carry `g4pk` (the deadline reaper's walk).
        IndexDef {
            name: AT_WORK,
            pk: "g4pk",
            sk: "g1sk",
            include: None,
        },
    ],
    stream: "NEW_IMAGE",
};

pub const TABLES: &[TableDef] = &[TASKS];

pub fn table_name(prefix: &str, def: &TableDef) -> String {
    format!("{prefix}{}", def.suffix)
}

// Keys. Items of task `t` share the partition `T#t`: `HEAD` (snapshot + list-index keys),
// `E#seq` (events), `B#pos` (history), `C#ord#chunk` (artifact chunks), `K#messageId␟digest`
// (message keys). Idempotency keys live in their own partitions (`I#tenant␟owner␟key`, `IDEM`).
// Numbers in sort keys are zero-padded, so that they sort as numbers.

/// Separator inside composite keys; ids cannot contain control characters.
pub const SEP: char = '\u{1f}';
/// Shards of the `by-shard` index that lets rebuilds walk every task without a Scan.
pub const SHARDS: u32 = 16;

/// Sort key of a task's head item.
pub const HEAD_SK: &str = "HEAD";
/// Sort key of an idempotency item.
pub const IDEMPOTENCY_SK: &str = "IDEM";
/// Attributes of an event item a stream reads: the generation after the event, and for a
/// status update the state it reports and the rendered update.
pub const GENERATION_ATTR: &str = "gen";
pub const STATUS_STATE_ATTR: &str = "sst";
pub const STATUS_UPDATE_ATTR: &str = "su";
/// Bounds of a task's event and chunk sort keys (`EVENTS_START` is also their common prefix),
/// and the upper bound of its history sort keys.
pub const EVENTS_START: &str = "E#";
pub const EVENTS_END: &str = "E#~";
pub const HISTORY_END: &str = "B#~";
pub const CHUNKS_START: &str = "C#";
pub const CHUNKS_END: &str = "C#~";

fn padded(n: u64) -> String {
    format!("{n:020}")
}

/// Partition key of every item of a task.
pub fn task_pk(task_id: &str) -> String {
    format!("T#{task_id}")
}

/// The task id of a task partition key; `None` for other partitions.
pub fn parse_task_pk(pk: &str) -> Option<&str> {
    pk.strip_prefix("T#")
}

/// Sort key of a task's event `seq`.
pub fn event_sk(seq: u64) -> String {
    format!("E#{}", padded(seq))
}

/// The sequence of an event sort key; `None` for other sort keys.
pub fn parse_event_sk(sk: &str) -> Option<u64> {
    sk.strip_prefix(EVENTS_START)?.parse().ok()
}

/// Task id and sequence of an event item's keys; `None` for any other item.
pub fn parse_event_key<'a>(pk: &'a str, sk: &str) -> Option<(&'a str, u64)> {
    Some((parse_task_pk(pk)?, parse_event_sk(sk)?))
}

/// Sort key of the history message at `pos`.
pub fn history_sk(pos: u64) -> String {
    format!("B#{}", padded(pos))
}

pub fn is_history_sk(sk: &str) -> bool {
    sk.starts_with("B#")
}

/// The history position of a history item's sort key.
pub fn parse_history_sk(sk: &str) -> Option<u64> {
    sk.strip_prefix("B#")?.parse().ok()
}

/// Sort key of chunk `chunk` of the artifact at `ord`.
pub fn chunk_sk(ord: u32, chunk: u32) -> String {
    format!("C#{ord:010}#{chunk:010}")
}

pub fn is_chunk_sk(sk: &str) -> bool {
    sk.starts_with("C#")
}

/// `(ord, chunk)` of a chunk sort key; `None` for other sort keys.
pub fn parse_chunk_sk(sk: &str) -> Option<(u32, u32)> {
    sk.strip_prefix("C#")?
        .split_once('#')
        .and_then(|(o, c)| Some((o.parse().ok()?, c.parse().ok()?)))
}

/// Sort key of a message key item: a message id with the digest of its content.
pub fn message_key_sk(message_id: &MessageId, fingerprint: &str) -> String {
    format!("K#{message_id}{SEP}{fingerprint}")
}

/// Partition key of an idempotency item: the key, scoped to its owner.
pub fn idempotency_pk(owner: &Principal, key: &IdempotencyKey) -> String {
    format!("I#{}{SEP}{key}", owner_key(owner))
}

/// Partition key of the `by-owner` index (`g1pk`): tenant and subject.
/// Sort key of a task's list-index entry for a principal it is shared with (ADR 021).
pub fn member_sk(member: &Principal) -> String {
    format!("{MEMBER_SK_PREFIX}{}", owner_key(member))
}

/// What every member entry's sort key starts with (a list filters owned or shared by it).
pub const MEMBER_SK_PREFIX: &str = "M#";

pub fn owner_key(owner: &Principal) -> String {
    format!("{}{SEP}{}", owner.tenant, owner.subject)
}

/// Partition key of the `by-context` index (`g2pk`): owner and context.
pub fn context_key(owner: &Principal, context_id: &ContextId) -> String {
    format!("{}{SEP}{context_id}", owner_key(owner))
}

/// Partition key of the `by-state` index (`g3pk`): owner and task state.
pub fn state_key(owner: &Principal, state: TaskState) -> String {
    format!("{}{SEP}{}", owner_key(owner), state.as_str())
}

/// Sort key of the list indexes (`g1sk`): status time, then task id, so that a page read
/// backwards is newest first.
pub fn list_sort_key(status_nanos: i64, task_id: &str) -> String {
    format!("{}#{task_id}", padded(status_nanos.max(0) as u64))
}

/// The least list sort key of a task whose status time is `status_nanos` or later.
pub fn list_sort_floor(status_nanos: i64) -> String {
    format!("{}#", padded(status_nanos.max(0) as u64))
}

/// The status time (digits, unparsed) and task id of a list sort key.
pub fn split_list_sort_key(sk: &str) -> Option<(&str, &str)> {
    sk.split_once('#')
}

/// `counts` as the head's chunk-counts attribute (`None`: no artifacts).
pub fn chunk_counts(counts: impl Iterator<Item = u32>) -> Option<String> {
    let v: Vec<String> = counts.map(|c| c.to_string()).collect();
    (!v.is_empty()).then(|| v.join(","))
}

pub fn parse_chunk_counts(v: &str) -> Option<Vec<u32>> {
    v.split(',').map(|c| c.parse().ok()).collect()
}

/// A list index partition key, written-sharded when the store has more than one index shard:
/// the task's shard is appended, so one owner's writes spread over `shards` partitions.
pub fn index_key(base: &str, shard: u32, shards: u32) -> String {
    if shards <= 1 {
        base.to_string()
    } else {
        format!("{base}{SEP}{shard}")
    }
}

/// The index shard of a task when the list indexes have `shards` shards.
pub fn index_shard_of(task_id: &str, shards: u32) -> u32 {
    fnv(task_id) % shards.max(1)
}

fn fnv(s: &str) -> u32 {
    // FNV-1a: stable across processes and versions.
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The `by-shard` shard of a task.
pub fn shard_of(task_id: &str) -> u32 {
    fnv(task_id) % SHARDS
}

/// Partition key of the sparse `at-work` index (`g4pk`) for a task of `shard` in `state`:
/// only SUBMITTED and WORKING tasks have one.
pub fn at_work_key(shard: u32, state: TaskState) -> Option<String> {
    matches!(state, TaskState::Submitted | TaskState::Working).then(|| format!("W{SEP}{shard}"))
}

/// Partition key of the `by-shard` index.
pub fn shard_key(shard: u32) -> String {
    shard.to_string()
}

#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("invalid table definition: {0}")]
    Build(#[from] aws_sdk_dynamodb::error::BuildError),
    #[error("cannot create table {table}: {message}")]
    Create { table: String, message: String },
}

fn key(name: &str, kind: KeyType) -> Result<KeySchemaElement, SchemaError> {
    Ok(KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()?)
}

/// Creates the tables that do not exist yet (idempotent).
pub async fn create_tables(client: &Client, prefix: &str) -> Result<Vec<String>, SchemaError> {
    let mut created = Vec::new();
    for def in TABLES {
        let name = table_name(prefix, def);
        let mut req = client
            .create_table()
            .table_name(&name)
            .billing_mode(BillingMode::PayPerRequest)
            .key_schema(key(def.pk, KeyType::Hash)?)
            .key_schema(key(def.sk, KeyType::Range)?)
            .stream_specification(
                StreamSpecification::builder()
                    .stream_enabled(true)
                    .stream_view_type(StreamViewType::from(def.stream))
                    .build()?,
            );
        for a in def.attributes {
            req = req.attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name(*a)
                    .attribute_type(ScalarAttributeType::S)
                    .build()?,
            );
        }
        for ix in def.indexes {
            let projection = match ix.include {
                Some(attrs) => attrs
                    .iter()
                    .fold(
                        Projection::builder().projection_type(ProjectionType::Include),
                        |b, a| b.non_key_attributes(*a),
                    )
                    .build(),
                None => Projection::builder()
                    .projection_type(ProjectionType::KeysOnly)
                    .build(),
            };
            req = req.global_secondary_indexes(
                GlobalSecondaryIndex::builder()
                    .index_name(ix.name)
                    .key_schema(key(ix.pk, KeyType::Hash)?)
                    .key_schema(key(ix.sk, KeyType::Range)?)
                    .projection(projection)
                    .build()?,
            );
        }
        match req.send().await {
            Ok(_) => {
                // Finished tasks' items expire by their `expires` attribute.
                client
                    .update_time_to_live()
                    .table_name(&name)
                    .time_to_live_specification(
                        TimeToLiveSpecification::builder()
                            .attribute_name(EXPIRES_ATTR)
                            .enabled(true)
                            .build()?,
                    )
                    .send()
                    .await
                    .map_err(|e| SchemaError::Create {
                        table: name.clone(),
                        message: aws_sdk_dynamodb::error::DisplayErrorContext(&e).to_string(),
                    })?;
                created.push(name)
            }
            Err(e) => {
                let svc = e.into_service_error();
                if svc.is_resource_in_use_exception() {
                    continue;
                }
                return Err(SchemaError::Create {
                    table: name,
                    message: aws_sdk_dynamodb::error::DisplayErrorContext(&svc).to_string(),
                });
            }
        }
    }
    Ok(created)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_yaml::Value;

    /// The stored key format, spelled out: changing any of these strands existing tables.
    #[test]
    fn keys_keep_their_stored_format() {
        let alice = Principal::new("acme", "alice").unwrap();
        assert_eq!(task_pk("abc.1"), "T#abc.1");
        assert_eq!(parse_task_pk("T#abc.1"), Some("abc.1"));
        assert_eq!(parse_task_pk("I#x"), None);
        assert_eq!(event_sk(7), "E#00000000000000000007");
        assert_eq!(parse_event_sk("E#00000000000000000007"), Some(7));
        assert_eq!(parse_event_sk(HEAD_SK), None);
        assert_eq!(
            parse_event_key("T#abc.1", "E#00000000000000000007"),
            Some(("abc.1", 7))
        );
        assert_eq!(parse_event_key("T#abc", "HEAD"), None);
        assert_eq!((HEAD_SK, IDEMPOTENCY_SK), ("HEAD", "IDEM"));
        assert_eq!(history_sk(3), "B#00000000000000000003");
        assert!(is_history_sk(&history_sk(3)) && !is_history_sk(&chunk_sk(0, 0)));
        assert_eq!(chunk_sk(2, 5), "C#0000000002#0000000005");
        assert!(is_chunk_sk(&chunk_sk(2, 5)));
        assert_eq!(parse_chunk_sk(&chunk_sk(2, 5)), Some((2, 5)));
        assert_eq!(parse_chunk_sk("C#x"), None);
        assert_eq!(
            (
                EVENTS_START,
                EVENTS_END,
                HISTORY_END,
                CHUNKS_START,
                CHUNKS_END
            ),
            ("E#", "E#~", "B#~", "C#", "C#~")
        );
        assert_eq!(
            message_key_sk(&MessageId::parse("m-1").unwrap(), "fp"),
            "K#m-1\u{1f}fp"
        );
        assert_eq!(
            idempotency_pk(&alice, &IdempotencyKey::parse("k-1").unwrap()),
            "I#acme\u{1f}alice\u{1f}k-1"
        );
        assert_eq!(owner_key(&alice), "acme\u{1f}alice");
        assert_eq!(
            context_key(&alice, &ContextId::parse("ctx").unwrap()),
            "acme\u{1f}alice\u{1f}ctx"
        );
        assert_eq!(
            state_key(&alice, TaskState::Working),
            "acme\u{1f}alice\u{1f}TASK_STATE_WORKING"
        );
        assert_eq!(list_sort_key(5, "t"), "00000000000000000005#t");
        assert_eq!(list_sort_key(-1, "t"), "00000000000000000000#t");
        assert_eq!(list_sort_floor(5), "00000000000000000005#");
        assert_eq!(
            split_list_sort_key("00000000000000000005#t"),
            Some(("00000000000000000005", "t"))
        );
        assert_eq!((shard_of("t-1"), shard_of("abc.1"), SHARDS), (1, 10, 16));
        assert_eq!(shard_key(3), "3");
    }

    fn get<'a>(v: &'a Value, k: &str) -> &'a Value {
        v.get(k).unwrap_or_else(|| panic!("template has no {k}"))
    }

    fn key_names(schema: &Value) -> Vec<(String, String)> {
        schema
            .as_sequence()
            .expect("KeySchema list")
            .iter()
            .map(|k| {
                (
                    get(k, "AttributeName").as_str().unwrap().to_string(),
                    get(k, "KeyType").as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    /// `template.yaml` declares exactly the tables `create_tables` makes.
    #[test]
    fn the_sam_template_declares_the_same_tables() {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml"))
                .expect("template.yaml");
        let doc: Value = serde_yaml::from_str(&text).expect("valid YAML");
        let resources = get(&doc, "Resources");
        for def in TABLES {
            let props = get(get(resources, def.logical_id), "Properties");
            assert_eq!(
                key_names(get(props, "KeySchema")),
                vec![
                    (def.pk.to_string(), "HASH".to_string()),
                    (def.sk.to_string(), "RANGE".to_string())
                ]
            );
            let mut attrs: Vec<(String, String)> = get(props, "AttributeDefinitions")
                .as_sequence()
                .unwrap()
                .iter()
                .map(|a| {
                    (
                        get(a, "AttributeName").as_str().unwrap().to_string(),
                        get(a, "AttributeType").as_str().unwrap().to_string(),
                    )
                })
                .collect();
            attrs.sort();
            let mut want: Vec<(String, String)> = def
                .attributes
                .iter()
                .map(|a| (a.to_string(), "S".to_string()))
                .collect();
            want.sort();
            assert_eq!(attrs, want, "{}: attribute definitions", def.logical_id);
            assert_eq!(get(props, "BillingMode").as_str(), Some("PAY_PER_REQUEST"));
            let stream = get(props, "StreamSpecification");
            assert_eq!(get(stream, "StreamViewType").as_str(), Some(def.stream));
            let gsis = get(props, "GlobalSecondaryIndexes").as_sequence().unwrap();
            assert_eq!(
                gsis.len(),
                def.indexes.len(),
                "{}: index count",
                def.logical_id
            );
            for ix in def.indexes {
                let g = gsis
                    .iter()
                    .find(|g| get(g, "IndexName").as_str() == Some(ix.name))
                    .unwrap_or_else(|| panic!("index {} missing from the template", ix.name));
                assert_eq!(
                    key_names(get(g, "KeySchema")),
                    vec![
                        (ix.pk.to_string(), "HASH".to_string()),
                        (ix.sk.to_string(), "RANGE".to_string())
                    ],
                    "index {}",
                    ix.name
                );
                let p = get(g, "Projection");
                match ix.include {
                    None => assert_eq!(get(p, "ProjectionType").as_str(), Some("KEYS_ONLY")),
                    Some(attrs) => {
                        assert_eq!(get(p, "ProjectionType").as_str(), Some("INCLUDE"));
                        let got: Vec<&str> = get(p, "NonKeyAttributes")
                            .as_sequence()
                            .unwrap()
                            .iter()
                            .map(|v| v.as_str().unwrap())
                            .collect();
                        assert_eq!(got, attrs, "index {} attributes", ix.name);
                    }
                }
            }
        }
    }
}
