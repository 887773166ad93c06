//! Capacity per operation, measured at the wire by an SDK interceptor (benches): every request
//! asks DynamoDB for `ReturnConsumedCapacity: TOTAL` and what it reports is summed; beside it
//! the units are computed from the bytes sent and received by DynamoDB's published rules
//! (reads: 4 KB units, half for eventually consistent reads; writes: 1 KB units, doubled in a
//! transaction; an index item written, deleted or replaced when the keys or attributes it
//! carries change), because an emulator reports placeholders (moto answers a constant).

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::config::interceptors::{
    AfterDeserializationInterceptorContextRef, BeforeTransmitInterceptorContextMut,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::config_bag::{Storable, StoreReplace};
use serde_json::{Map, Value};

use super::schema;

/// Units consumed by the calls of one label.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Units {
    pub calls: u64,
    /// Read and write units by the published rules.
    pub rcu: f64,
    pub wcu: f64,
    /// What DynamoDB answered in `ConsumedCapacity` (an emulator's placeholder).
    pub reported: f64,
}

#[derive(Debug, Default)]
struct State {
    by_label: BTreeMap<String, Units>,
    /// Items written per kind (the sort key's prefix): count and bytes.
    written: BTreeMap<String, (u64, u64)>,
    /// The index items each item (its partition and sort key: a head, or a member entry) last
    /// produced (index name → key, size), to price an index write only when it happens. Items
    /// without index keys (events, chunks, message keys) have no index items, and their puts
    /// change no one else's.
    index_items: HashMap<String, HashMap<&'static str, (String, usize)>>,
    /// Write units each index was charged (puts and deletes of its items).
    index_units: BTreeMap<&'static str, f64>,
}

/// Shared meter; add it to a client with `dynamo::metering_client_from_env`.
#[derive(Debug, Clone, Default)]
pub struct CapacityMeter {
    state: Arc<Mutex<State>>,
}

/// The label of calls not made inside `CapacityMeter::scope` (the agent, relays, pollers).
pub const UNSCOPED: &str = "(agent, relays)";

tokio::task_local! {
    static LABEL: String;
}

impl CapacityMeter {
    /// Runs `f` with its own calls labelled `label`.
    pub async fn scope<F: Future>(&self, label: &str, f: F) -> F::Output {
        LABEL.scope(label.to_string(), f).await
    }

    pub fn units(&self) -> BTreeMap<String, Units> {
        self.state
            .lock()
            .map(|s| s.by_label.clone())
            .unwrap_or_default()
    }

    /// Items written per kind (`HEAD`, `E` events, `B` history, `C` chunks, `K` message keys):
    /// how many, and their mean size in bytes.
    pub fn written(&self) -> BTreeMap<String, (u64, f64)> {
        self.state
            .lock()
            .map(|s| {
                s.written
                    .iter()
                    .map(|(k, (n, b))| (k.clone(), (*n, *b as f64 / (*n).max(1) as f64)))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Write units charged to each index (its items put, moved and deleted), since the last
    /// reset: where a commit's index writes go.
    pub fn index_units(&self) -> BTreeMap<&'static str, f64> {
        self.state
            .lock()
            .map(|s| s.index_units.clone())
            .unwrap_or_default()
    }

    pub fn reset(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.by_label.clear();
            s.written.clear();
            s.index_units.clear();
        }
    }

    fn add(&self, label: &str, f: impl FnOnce(&mut Units)) {
        if let Ok(mut s) = self.state.lock() {
            f(s.by_label.entry(label.to_string()).or_default());
        }
    }
}

/// What a request was, kept for its response.
#[derive(Debug, Clone)]
struct Pending {
    label: String,
    op: String,
    consistent: bool,
    index: bool,
}

impl Storable for Pending {
    type Storer = StoreReplace<Self>;
}

/// DynamoDB's size of an attribute value.
fn value_size(v: &Value) -> usize {
    let Some((kind, inner)) = v.as_object().and_then(|o| o.iter().next()) else {
        return 0;
    };
    match (kind.as_str(), inner) {
        ("S", Value::String(s)) => s.len(),
        // Binary travels as base64; DynamoDB counts its bytes.
        ("B", Value::String(b64)) => {
            (b64.len() / 4 * 3).saturating_sub(b64.bytes().rev().take_while(|c| *c == b'=').count())
        }
        ("N", Value::String(n)) => n.trim_start_matches('-').len().div_ceil(2) + 1,
        ("BOOL", _) | ("NULL", _) => 1,
        ("L", Value::Array(items)) => 3 + items.iter().map(|i| value_size(i) + 1).sum::<usize>(),
        ("M", Value::Object(m)) => 3 + item_size(m) + m.len(),
        ("SS", Value::Array(items)) | ("NS", Value::Array(items)) | ("BS", Value::Array(items)) => {
            items.iter().map(|i| i.as_str().map_or(0, str::len)).sum()
        }
        _ => 0,
    }
}

/// DynamoDB's size of an item: attribute names plus values.
fn item_size(item: &Map<String, Value>) -> usize {
    item.iter().map(|(k, v)| k.len() + value_size(v)).sum()
}

fn units(bytes: usize, unit: usize) -> f64 {
    bytes.div_ceil(unit).max(1) as f64
}

fn read_units(bytes: usize, consistent: bool) -> f64 {
    units(bytes, 4096) * if consistent { 1.0 } else { 0.5 }
}

impl CapacityMeter {
    /// Write units of a put of `item` (table and the list indexes it changes).
    fn put_units(&self, item: &Map<String, Value>, transactional: bool) -> f64 {
        let size = item_size(item);
        let table = units(size, 1024) * if transactional { 2.0 } else { 1.0 };
        let kind = item
            .get("sk")
            .and_then(|v| v.get("S"))
            .and_then(Value::as_str)
            .map(|sk| {
                if sk == schema::HEAD_SK {
                    "HEAD"
                } else {
                    &sk[..1]
                }
            })
            .unwrap_or("?")
            .to_string();
        if let Ok(mut s) = self.state.lock() {
            let e = s.written.entry(kind).or_default();
            e.0 += 1;
            e.1 += size as u64;
        }
        let key = |a: &str| item.get(a).and_then(|v| v.get("S")).and_then(Value::as_str);
        let (Some(pk), Some(sk)) = (key("pk"), key("sk")) else {
            return table;
        };
        let mut index_units = 0.0;
        let Ok(mut s) = self.state.lock() else {
            return table;
        };
        let mut charged: Vec<(&'static str, f64)> = Vec::new();
        let before = s
            .index_items
            .entry(format!("{pk}{}{sk}", schema::SEP))
            .or_default();
        for ix in schema::TASKS.indexes {
            let units_before = index_units;
            let key_of = |a: &str| item.get(a).map(|v| v.to_string());
            let now = match (key_of(ix.pk), key_of(ix.sk)) {
                (Some(p), Some(k)) => {
                    let mut size = [ix.pk, ix.sk, "pk", "sk"]
                        .iter()
                        .filter_map(|a| item.get(*a).map(|v| a.len() + value_size(v)))
                        .sum::<usize>();
                    let mut attrs = String::new();
                    for a in ix.include.unwrap_or_default() {
                        if let Some(v) = item.get(*a) {
                            size += a.len() + value_size(v);
                            attrs.push_str(&v.to_string());
                        }
                    }
                    Some((format!("{p}|{k}|{attrs}"), size, format!("{p}|{k}")))
                }
                _ => None,
            };
            match (before.get(ix.name).cloned(), now) {
                (None, Some((id, size, _))) => {
                    index_units += units(size, 1024);
                    before.insert(ix.name, (id, size));
                }
                (Some((old, old_size)), Some((id, size, key))) if old != id => {
                    // A key change is a delete and a put; an attribute change a put.
                    if !old.starts_with(&format!("{key}|")) {
                        index_units += units(old_size, 1024);
                    }
                    index_units += units(size, 1024);
                    before.insert(ix.name, (id, size));
                }
                (Some((_, old_size)), None) => {
                    index_units += units(old_size, 1024);
                    before.remove(ix.name);
                }
                _ => {}
            }
            charged.push((ix.name, index_units - units_before));
        }
        for (name, u) in charged {
            *s.index_units.entry(name).or_default() += u;
        }
        table + index_units
    }

    /// Write units of a request body (its reads are priced from the response).
    fn write_units(&self, op: &str, body: &Value) -> f64 {
        let obj = |v: &Value, k: &str| v.get(k).and_then(Value::as_object).cloned();
        match op {
            "PutItem" => obj(body, "Item").map_or(0.0, |i| self.put_units(&i, false)),
            "UpdateItem" | "DeleteItem" => 1.0,
            "TransactWriteItems" => body
                .get("TransactItems")
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .map(|t| match obj(t, "Put") {
                            Some(put) => obj(&Value::Object(put), "Item")
                                .map_or(2.0, |i| self.put_units(&i, true)),
                            None => 2.0,
                        })
                        .sum()
                })
                .unwrap_or(0.0),
            "BatchWriteItem" => body
                .get("RequestItems")
                .and_then(Value::as_object)
                .map(|t| {
                    t.values()
                        .flat_map(|v| v.as_array().cloned().unwrap_or_default())
                        .map(
                            |w| match w.pointer("/PutRequest/Item").and_then(Value::as_object) {
                                Some(i) => self.put_units(i, false),
                                None => 1.0,
                            },
                        )
                        .sum()
                })
                .unwrap_or(0.0),
            _ => 0.0,
        }
    }
}

/// Read units of a response body.
fn response_read_units(p: &Pending, body: &Value) -> f64 {
    let sizes = |items: &[Value]| -> usize {
        items
            .iter()
            .filter_map(Value::as_object)
            .map(item_size)
            .sum()
    };
    match p.op.as_str() {
        "GetItem" => read_units(
            body.get("Item")
                .and_then(Value::as_object)
                .map_or(0, item_size),
            p.consistent,
        ),
        "Query" | "Scan" => {
            let items = body
                .get("Items")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let mut bytes = sizes(&items);
            // Items a filter dropped were read too: scale by what was scanned.
            let count = body.get("Count").and_then(Value::as_u64).unwrap_or(0);
            let scanned = body
                .get("ScannedCount")
                .and_then(Value::as_u64)
                .unwrap_or(count);
            if count > 0 && scanned > count {
                bytes = bytes * scanned as usize / count as usize;
            }
            read_units(bytes, p.consistent && !p.index)
        }
        "BatchGetItem" => body
            .get("Responses")
            .and_then(Value::as_object)
            .map(|t| {
                t.values()
                    .flat_map(|v| v.as_array().cloned().unwrap_or_default())
                    .filter_map(|i| i.as_object().map(item_size))
                    .map(|s| read_units(s, p.consistent))
                    .sum()
            })
            .unwrap_or(0.0),
        _ => 0.0,
    }
}

fn reported(body: &Value) -> f64 {
    let one = |c: &Value| {
        c.get("CapacityUnits")
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
    };
    match body.get("ConsumedCapacity") {
        Some(Value::Array(all)) => all.iter().map(one).sum(),
        Some(c) => one(c),
        None => 0.0,
    }
}

impl Intercept for CapacityMeter {
    fn name(&self) -> &'static str {
        "CapacityMeter"
    }

    /// Asks for the consumed capacity and prices the writes the request makes.
    fn modify_before_signing(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let request = context.request_mut();
        let op = request
            .headers()
            .get("x-amz-target")
            .and_then(|t| t.rsplit('.').next())
            .unwrap_or("unknown")
            .to_string();
        let Some(mut body) = request
            .body()
            .bytes()
            .and_then(|b| serde_json::from_slice::<Value>(b).ok())
        else {
            return Ok(());
        };
        if let Some(o) = body.as_object_mut() {
            o.insert("ReturnConsumedCapacity".into(), Value::from("TOTAL"));
        }
        let label = LABEL
            .try_with(|l| l.clone())
            .unwrap_or_else(|_| UNSCOPED.to_string());
        let consistent = body.get("ConsistentRead").and_then(Value::as_bool) == Some(true)
            || body
                .get("RequestItems")
                .and_then(Value::as_object)
                .is_some_and(|t| {
                    t.values()
                        .any(|k| k.get("ConsistentRead").and_then(Value::as_bool) == Some(true))
                });
        let wcu = self.write_units(&op, &body);
        self.add(&label, |u| {
            u.calls += 1;
            u.wcu += wcu;
        });
        cfg.interceptor_state().store_put(Pending {
            label,
            op,
            consistent,
            index: body.get("IndexName").is_some(),
        });
        let bytes = serde_json::to_vec(&body)?;
        request
            .headers_mut()
            .insert("content-length", bytes.len().to_string());
        *request.body_mut() = SdkBody::from(bytes);
        Ok(())
    }

    /// Prices the reads from the items returned, and adds what DynamoDB reported.
    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(p) = cfg.load::<Pending>().cloned() else {
            return Ok(());
        };
        let Some(body) = context
            .response()
            .body()
            .bytes()
            .and_then(|b| serde_json::from_slice::<Value>(b).ok())
        else {
            return Ok(());
        };
        let rcu = response_read_units(&p, &body);
        let rep = reported(&body);
        self.add(&p.label, |u| {
            u.rcu += rcu;
            u.reported += rep;
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn sizes_follow_the_published_rules() {
        let item = json!({"pk": {"S": "T#abc"}, "n": {"N": "12345"}, "b": {"BOOL": true}});
        // "pk"+5, "n"+(5 digits → 3+1), "b"+1
        assert_eq!(item_size(item.as_object().unwrap()), 2 + 5 + 1 + 4 + 1 + 1);
        // binary: its bytes, not its base64 ("snapz" + 5 bytes; "b" + 4 bytes)
        let blob = json!({"snapz": {"B": "aGVsbG8="}, "b": {"B": "AAECAw=="}});
        assert_eq!(item_size(blob.as_object().unwrap()), 5 + 5 + 1 + 4);
        assert_eq!(read_units(4096, true), 1.0);
        assert_eq!(read_units(4097, true), 2.0);
        assert_eq!(read_units(10, false), 0.5);
        assert_eq!(units(1024, 1024), 1.0);
        assert_eq!(units(1025, 1024), 2.0);
    }

    #[test]
    fn an_index_item_is_priced_when_its_keys_or_attributes_change() {
        let meter = CapacityMeter::default();
        let head = |sk: &str, state: &str| {
            json!({"pk": {"S": "T#1"}, "sk": {"S": "HEAD"}, "snap": {"S": "x"},
                   "g1pk": {"S": "o"}, "g1sk": {"S": sk}, "g2pk": {"S": "c"},
                   "g3pk": {"S": state}, "shard": {"S": "3"}})
        };
        let put = |v: Value| meter.put_units(v.as_object().unwrap(), true);
        // New: table (2 × 1) + four index puts.
        assert_eq!(put(head("1#t", "W")), 2.0 + 4.0);
        // Nothing an index holds changed: the table only.
        assert_eq!(put(head("1#t", "W")), 2.0);
        // The sort key moved: by-owner, by-context, by-state each delete + put.
        assert_eq!(put(head("2#t", "W")), 2.0 + 6.0);
        // An event of the same task in the same transaction has no index keys: it changes no
        // index item, and the head's stay where they are.
        let event = json!({"pk": {"S": "T#1"}, "sk": {"S": "E#00000000000000000009"},
                           "type": {"S": "StatusChanged"}});
        assert_eq!(put(event), 2.0);
        assert_eq!(put(head("2#t", "W")), 2.0);
        assert_eq!(meter.index_units().values().sum::<f64>(), 4.0 + 6.0);
    }
}
