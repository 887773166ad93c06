//! The DynamoDB table definition, in one place: `create_tables` builds it, and a test checks that
//! `template.yaml` declares the same keys, indexes and stream.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
};
use aws_sdk_dynamodb::Client;

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

/// Index names.
pub const BY_OWNER: &str = "by-owner";
pub const BY_CONTEXT: &str = "by-context";
pub const BY_STATE: &str = "by-state";
pub const BY_SHARD: &str = "by-shard";

/// Attributes the list indexes carry besides their keys.
const LIST_ATTRS: &[&str] = &["snap", "schema"];
/// The context index also carries the state key, so `contextId` and `status` together are one
/// Query on it with a filter (a filter can only read attributes the index projects).
const CONTEXT_LIST_ATTRS: &[&str] = &["snap", "schema", "g3pk"];

/// One table holds every item of every task (see ADR 007).
pub const TASKS: TableDef = TableDef {
    logical_id: "TasksTable",
    suffix: "tasks",
    pk: "pk",
    sk: "sk",
    attributes: &["pk", "sk", "g1pk", "g1sk", "g2pk", "g3pk", "shard"],
    indexes: &[
        IndexDef {
            name: BY_OWNER,
            pk: "g1pk",
            sk: "g1sk",
            include: Some(LIST_ATTRS),
        },
        IndexDef {
            name: BY_CONTEXT,
            pk: "g2pk",
            sk: "g1sk",
            include: Some(CONTEXT_LIST_ATTRS),
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
    ],
    stream: "NEW_IMAGE",
};

pub const TABLES: &[TableDef] = &[TASKS];

pub fn table_name(prefix: &str, def: &TableDef) -> String {
    format!("{prefix}{}", def.suffix)
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
            Ok(_) => created.push(name),
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
