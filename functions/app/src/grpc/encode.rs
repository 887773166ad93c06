//! ProtoJSON (`serde_json::Value`) → protobuf binary, driven by the message's plan (`plan`):
//! the reply path of the transcoding. The bytes are what tonic sends: the same bytes prost
//! writes for the message (its field order, proto3 defaults left out, map entries as prost
//! writes them; tests compare byte for byte), in one pass over the JSON into one buffer (a
//! nested message is written in place behind a one-byte length that grows when it must).
//!
//! Covers what the proto uses: strings, bools, 32/64-bit integers, enums (by name or number),
//! bytes (base64), doubles and floats, nested and repeated messages, `map<string, …>`, and the
//! well-known `Struct`, `Value`, `ListValue`, `Timestamp` and `Empty`. Members the proto does
//! not define and `null`s are skipped, as ProtoJSON reads them.

use base64::Engine;
use serde_json::{Map, Value};
use taskledger_domain::time::Timestamp;

use super::plan::{FieldPlan, Plans, Shape, Special, Ty};

/// Why a value does not fit its field (an internal error: the domain only emits proto shapes).
pub type EncodeError = String;

pub(super) const VARINT: u32 = 0;
pub(super) const FIXED64: u32 = 1;
pub(super) const LEN: u32 = 2;
pub(super) const FIXED32: u32 = 5;

pub(super) fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(super) fn key(number: u32, wire: u32, out: &mut Vec<u8>) {
    varint((u64::from(number) << 3) | u64::from(wire), out);
}

pub(super) fn len_delimited(number: u32, bytes: &[u8], out: &mut Vec<u8>) {
    key(number, LEN, out);
    varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

/// A nested message (or packed list) under `number`: written in place after a one-byte length,
/// which becomes a longer varint (the content moved up) only when the content is 128 bytes or
/// more.
fn nested(
    number: u32,
    out: &mut Vec<u8>,
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    key(number, LEN, out);
    let at = out.len();
    out.push(0);
    write(out)?;
    let len = out.len() - at - 1;
    if len < 0x80 {
        out[at] = len as u8;
    } else {
        let mut prefix = Vec::with_capacity(10);
        varint(len as u64, &mut prefix);
        out.splice(at..=at, prefix);
    }
    Ok(())
}

/// Encodes the ProtoJSON `value` of message `index` of `plans`.
pub fn message(
    plans: &Plans,
    index: usize,
    value: &Value,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    let plan = &plans.messages[index];
    match plan.special {
        Special::Struct => return struct_fields(as_object(value, &plan.full_name)?, out),
        Special::Value => return json_value(value, out),
        Special::ListValue => return list_values(as_array(value, &plan.full_name)?, out),
        Special::Timestamp => return timestamp(value, out),
        Special::Empty => return Ok(()),
        Special::None => {}
    }
    let members = as_object(value, &plan.full_name)?;
    for field in &plan.fields {
        let member = members
            .get(&field.json_name)
            .or_else(|| field.proto_name.as_ref().and_then(|name| members.get(name)));
        let Some(member) = member else { continue };
        if member.is_null() && !field.null_is_value {
            continue;
        }
        match &field.shape {
            Shape::Single => single(plans, field, &field.ty, field.implicit, member, out)?,
            Shape::List { packed } => {
                let Value::Array(items) = member else {
                    return Err(format!("{}: expected an array", field.full_name));
                };
                let items = items.iter().filter(|i| !i.is_null());
                if *packed {
                    packed_list(field, items, out)?;
                } else {
                    for item in items {
                        single(plans, field, &field.ty, false, item, out)?;
                    }
                }
            }
            Shape::Map { value } => map(plans, field, value, member, out)?,
        }
    }
    Ok(())
}

fn as_object<'a>(value: &'a Value, name: &str) -> Result<&'a Map<String, Value>, EncodeError> {
    value
        .as_object()
        .ok_or_else(|| format!("{name}: expected an object, got {value}"))
}

fn as_array<'a>(value: &'a Value, name: &str) -> Result<&'a Vec<Value>, EncodeError> {
    value
        .as_array()
        .ok_or_else(|| format!("{name}: expected an array, got {value}"))
}

/// `map<string, V>`: one entry message per member, key and value left out when they are the
/// default (an empty key, a default scalar, an empty message), as prost writes them.
fn map(
    plans: &Plans,
    field: &FieldPlan,
    value_ty: &Ty,
    member: &Value,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    let Value::Object(members) = member else {
        return Err(format!("{}: expected an object", field.full_name));
    };
    for (k, v) in members {
        nested(field.number, out, |entry| {
            if !k.is_empty() {
                len_delimited(1, k.as_bytes(), entry);
            }
            if v.is_null()
                && !matches!(value_ty, Ty::Message(i) if plans.messages[*i].special == Special::Value)
            {
                return Ok(());
            }
            let mark = entry.len();
            single(plans, field, value_ty, true, v, entry)?;
            if matches!(value_ty, Ty::Message(_)) && entry.len() == mark + 2 {
                entry.truncate(mark);
            }
            Ok(())
        })?;
    }
    Ok(())
}

fn int(field: &FieldPlan, value: &Value) -> Result<i64, EncodeError> {
    match value {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_u64().map(|u| u as i64))
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
    .ok_or_else(|| format!("{}: not an integer: {value}", field.full_name))
}

fn float(field: &FieldPlan, value: &Value) -> Result<f64, EncodeError> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
    .ok_or_else(|| format!("{}: not a number: {value}", field.full_name))
}

/// A number as its wire type and raw bits; `None` for the types that are not numbers.
fn number(field: &FieldPlan, ty: &Ty, value: &Value) -> Result<Option<(u32, u64)>, EncodeError> {
    let wrong = || format!("{}: unexpected {value}", field.full_name);
    Ok(Some(match ty {
        Ty::Bool => (VARINT, u64::from(value.as_bool().ok_or_else(wrong)?)),
        Ty::Varint => (VARINT, int(field, value)? as u64),
        Ty::Zigzag => {
            let v = int(field, value)?;
            (VARINT, ((v << 1) ^ (v >> 63)) as u64)
        }
        Ty::Fixed32 => (FIXED32, u64::from(int(field, value)? as u32)),
        Ty::Fixed64 => (FIXED64, int(field, value)? as u64),
        Ty::Double => (FIXED64, float(field, value)?.to_bits()),
        // A default (0.0, -0.0) is left out below, as prost compares with `!= 0.0`.
        Ty::Float => (FIXED32, u64::from((float(field, value)? as f32).to_bits())),
        Ty::Enum(values) => {
            let n = match value {
                Value::String(name) => values.iter().find(|(n, _)| n == name).map(|(_, v)| *v),
                Value::Number(n) => n.as_i64().map(|n| n as i32),
                _ => None,
            }
            .ok_or_else(wrong)?;
            (VARINT, n as i64 as u64)
        }
        Ty::String | Ty::Bytes | Ty::Message(_) => return Ok(None),
    }))
}

pub(super) fn is_zero(ty: &Ty, bits: u64) -> bool {
    match ty {
        Ty::Double => f64::from_bits(bits) == 0.0,
        Ty::Float => f32::from_bits(bits as u32) == 0.0,
        _ => bits == 0,
    }
}

pub(super) fn raw(wire: u32, bits: u64, out: &mut Vec<u8>) {
    match wire {
        VARINT => varint(bits, out),
        FIXED32 => out.extend_from_slice(&(bits as u32).to_le_bytes()),
        _ => out.extend_from_slice(&bits.to_le_bytes()),
    }
}

/// One value of type `ty` under the field's number; with `implicit`, a default is left out.
fn single(
    plans: &Plans,
    field: &FieldPlan,
    ty: &Ty,
    implicit: bool,
    value: &Value,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    let tag = if matches!(field.shape, Shape::Map { .. }) {
        2
    } else {
        field.number
    };
    let wrong = || format!("{}: unexpected {value}", field.full_name);
    match ty {
        Ty::String => {
            let s = value.as_str().ok_or_else(wrong)?;
            if !(implicit && s.is_empty()) {
                len_delimited(tag, s.as_bytes(), out);
            }
        }
        Ty::Bytes => {
            let text = value.as_str().ok_or_else(wrong)?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| format!("{}: {e}", field.full_name))?;
            if !(implicit && bytes.is_empty()) {
                len_delimited(tag, &bytes, out);
            }
        }
        Ty::Message(index) => nested(tag, out, |inner| message(plans, *index, value, inner))?,
        _ => {
            if let Some((wire, bits)) = number(field, ty, value)? {
                if !(implicit && is_zero(ty, bits)) {
                    key(tag, wire, out);
                    raw(wire, bits, out);
                }
            }
        }
    }
    Ok(())
}

/// A packed repeated number field (prost packs proto3's repeated scalars); none when empty.
fn packed_list<'a>(
    field: &FieldPlan,
    items: impl Iterator<Item = &'a Value>,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    let mut body = Vec::new();
    for item in items {
        if let Some((wire, bits)) = number(field, &field.ty, item)? {
            raw(wire, bits, &mut body);
        }
    }
    if !body.is_empty() {
        len_delimited(field.number, &body, out);
    }
    Ok(())
}

/// `google.protobuf.Struct`: `map<string, Value> fields = 1` (an empty key left out).
fn struct_fields(members: &Map<String, Value>, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    for (k, v) in members {
        nested(1, out, |entry| {
            if !k.is_empty() {
                len_delimited(1, k.as_bytes(), entry);
            }
            nested(2, entry, |inner| json_value(v, inner))
        })?;
    }
    Ok(())
}

/// `google.protobuf.ListValue`: `repeated Value values = 1`.
fn list_values(items: &[Value], out: &mut Vec<u8>) -> Result<(), EncodeError> {
    for item in items {
        nested(1, out, |inner| json_value(item, inner))?;
    }
    Ok(())
}

/// `google.protobuf.Value`: one member of its `kind` oneof, always written (even `null` and
/// `0`: presence is the oneof's).
fn json_value(value: &Value, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    match value {
        Value::Null => {
            key(1, VARINT, out);
            varint(0, out);
        }
        Value::Number(n) => {
            key(2, FIXED64, out);
            out.extend_from_slice(&n.as_f64().unwrap_or(0.0).to_le_bytes());
        }
        Value::String(s) => len_delimited(3, s.as_bytes(), out),
        Value::Bool(b) => {
            key(4, VARINT, out);
            varint(u64::from(*b), out);
        }
        Value::Object(members) => nested(5, out, |inner| struct_fields(members, inner))?,
        Value::Array(items) => nested(6, out, |inner| list_values(items, inner))?,
    }
    Ok(())
}

/// `google.protobuf.Timestamp` from RFC 3339: `int64 seconds = 1`, `int32 nanos = 2`.
fn timestamp(value: &Value, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    let text = value
        .as_str()
        .ok_or_else(|| format!("google.protobuf.Timestamp: expected a string, got {value}"))?;
    let (secs, frac) = Timestamp::parse(text)?.unix_secs_and_nanos();
    if secs != 0 {
        key(1, VARINT, out);
        varint(secs as u64, out);
    }
    if frac != 0 {
        key(2, VARINT, out);
        varint(frac as i64 as u64, out);
    }
    Ok(())
}
