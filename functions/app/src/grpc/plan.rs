//! What the reply encoder (`encode`) needs to know of every message of the descriptor pool,
//! worked out once: its fields in the order prost writes them (by number, a oneof at its
//! lowest number), each with its JSON name, number, type, shape, and whether proto3
//! leaves its default value out. Nested message types are indices into the same table, so
//! encoding a reply looks nothing up by name.

use std::collections::HashMap;
use std::sync::OnceLock;

use prost_reflect::{DescriptorPool, FieldDescriptor, Kind, MessageDescriptor};

/// The well-known types the encoder writes by hand, from their ProtoJSON forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Special {
    None,
    Struct,
    Value,
    ListValue,
    Timestamp,
    Empty,
}

/// How a field's values are written.
#[derive(Debug)]
pub(super) enum Ty {
    String,
    Bytes,
    Bool,
    /// int32, int64, uint32, uint64: a varint of the two's complement.
    Varint,
    /// sint32, sint64: zigzag.
    Zigzag,
    Fixed32,
    Fixed64,
    Double,
    Float,
    /// An enum: its values by name.
    Enum(Vec<(String, i32)>),
    /// A message: its index in `Plans::messages`.
    Message(usize),
}

#[derive(Debug)]
pub(super) enum Shape {
    Single,
    List {
        packed: bool,
    },
    /// `map<string, V>`: entries of key 1, value 2.
    Map {
        value: Ty,
    },
}

#[derive(Debug)]
pub(super) struct FieldPlan {
    pub full_name: String,
    pub json_name: String,
    /// The proto name, when it differs from the JSON name (ProtoJSON readers accept both).
    pub proto_name: Option<String>,
    pub number: u32,
    pub ty: Ty,
    pub shape: Shape,
    /// Proto3 without presence: a default value (`""`, `0`, `false`, the zero enum) is not
    /// written, as prost leaves it out.
    pub implicit: bool,
    /// A `google.protobuf.Value` field, where `null` is a value (NullValue), not "unset".
    pub null_is_value: bool,
}

#[derive(Debug)]
pub(super) struct MessagePlan {
    pub full_name: String,
    pub special: Special,
    pub fields: Vec<FieldPlan>,
}

#[derive(Debug)]
pub(super) struct Plans {
    pub messages: Vec<MessagePlan>,
    by_name: HashMap<String, usize>,
}

impl Plans {
    /// The plans of every message in `pool`.
    pub fn of(pool: &DescriptorPool) -> Self {
        let descriptors: Vec<MessageDescriptor> = pool.all_messages().collect();
        let by_name: HashMap<String, usize> = descriptors
            .iter()
            .enumerate()
            .map(|(i, d)| (d.full_name().to_string(), i))
            .collect();
        let messages = descriptors
            .iter()
            .map(|d| MessagePlan {
                full_name: d.full_name().to_string(),
                special: special(d.full_name()),
                fields: in_prost_order(d)
                    .iter()
                    .map(|f| field_plan(f, &by_name))
                    .collect(),
            })
            .collect();
        Self { messages, by_name }
    }

    pub fn index_of(&self, full_name: &str) -> Option<usize> {
        self.by_name.get(full_name).copied()
    }
}

/// The plans of the crate's descriptor pool.
pub(super) fn plans(pool: &DescriptorPool) -> &'static Plans {
    static PLANS: OnceLock<Plans> = OnceLock::new();
    PLANS.get_or_init(|| Plans::of(pool))
}

fn special(full_name: &str) -> Special {
    match full_name {
        "google.protobuf.Struct" => Special::Struct,
        "google.protobuf.Value" => Special::Value,
        "google.protobuf.ListValue" => Special::ListValue,
        "google.protobuf.Timestamp" => Special::Timestamp,
        "google.protobuf.Empty" => Special::Empty,
        _ => Special::None,
    }
}

/// Prost's order: fields by number, a oneof's members (one of which is set) at the place of
/// the oneof's lowest number (proto3 `optional` fields are fields of their own).
fn in_prost_order(desc: &MessageDescriptor) -> Vec<FieldDescriptor> {
    let place = |f: &FieldDescriptor| match f.containing_oneof().filter(|o| !o.is_synthetic()) {
        Some(oneof) => oneof
            .fields()
            .map(|m| m.number())
            .min()
            .unwrap_or(f.number()),
        None => f.number(),
    };
    let mut fields: Vec<FieldDescriptor> = desc.fields().collect();
    fields.sort_by_key(|f| (place(f), f.number()));
    fields
}

fn ty(kind: &Kind, by_name: &HashMap<String, usize>) -> Ty {
    match kind {
        Kind::String => Ty::String,
        Kind::Bytes => Ty::Bytes,
        Kind::Bool => Ty::Bool,
        Kind::Int32 | Kind::Int64 | Kind::Uint32 | Kind::Uint64 => Ty::Varint,
        Kind::Sint32 | Kind::Sint64 => Ty::Zigzag,
        Kind::Fixed32 | Kind::Sfixed32 => Ty::Fixed32,
        Kind::Fixed64 | Kind::Sfixed64 => Ty::Fixed64,
        Kind::Double => Ty::Double,
        Kind::Float => Ty::Float,
        Kind::Enum(e) => Ty::Enum(
            e.values()
                .map(|v| (v.name().to_string(), v.number()))
                .collect(),
        ),
        Kind::Message(m) => Ty::Message(by_name[m.full_name()]),
    }
}

fn field_plan(f: &FieldDescriptor, by_name: &HashMap<String, usize>) -> FieldPlan {
    let kind = f.kind();
    let shape = if f.is_map() {
        let Kind::Message(entry) = &kind else {
            unreachable!("a map field's type is its entry message")
        };
        Shape::Map {
            value: ty(&entry.map_entry_value_field().kind(), by_name),
        }
    } else if f.is_list() {
        Shape::List {
            packed: f.is_packed(),
        }
    } else {
        Shape::Single
    };
    FieldPlan {
        full_name: f.full_name().to_string(),
        json_name: f.json_name().to_string(),
        proto_name: (f.name() != f.json_name()).then(|| f.name().to_string()),
        number: f.number(),
        null_is_value: matches!(&kind, Kind::Message(m) if m.full_name() == "google.protobuf.Value"),
        ty: ty(&kind, by_name),
        shape,
        implicit: !f.supports_presence(),
    }
}
