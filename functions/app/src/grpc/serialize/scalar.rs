//! The reply serializer's leaves: a scalar field's value, a packed list's numbers, and a
//! `google.protobuf.Timestamp` from its RFC 3339 text.

use std::borrow::Cow;

use base64::Engine;
use serde::ser::{self, Impossible, Serialize};
use taskledger_domain::time::Timestamp;

use super::kit::{close, frame, no_members, no_seq, no_tuples, scalars, Done, Scalar, SerError};
use crate::grpc::encode::{is_zero, key, len_delimited, raw, varint, FIXED32, FIXED64, VARINT};
use crate::grpc::plan::{FieldPlan, Ty};

/// A scalar field's value (string, bytes, number, bool or enum).
pub(super) struct ScalarSer<'a> {
    pub(super) field: &'a FieldPlan,
    pub(super) ty: &'a Ty,
    pub(super) tag: u32,
    pub(super) implicit: bool,
    pub(super) out: &'a mut Vec<u8>,
}

impl ScalarSer<'_> {
    fn unexpected(&self, what: &str) -> SerError {
        SerError(format!("{}: unexpected {what}", self.field.full_name))
    }

    fn scalar(self, s: Scalar) -> Done {
        let bytes = match (self.ty, s) {
            (_, Scalar::Null) => return Ok(()),
            (Ty::String, Scalar::Str(text)) => Cow::Borrowed(text.as_bytes()),
            (Ty::Bytes, Scalar::Bytes(b)) => Cow::Borrowed(b),
            (Ty::Bytes, Scalar::Str(text)) => base64::engine::general_purpose::STANDARD
                .decode(text)
                .map(Cow::Owned)
                .map_err(|e| SerError(format!("{}: {e}", self.field.full_name)))?,
            (Ty::String | Ty::Bytes, _) => return Err(self.unexpected(&format!("{s:?}"))),
            (ty, s) => {
                let (wire, bits) = number(self.field, ty, s)?;
                if !(self.implicit && is_zero(ty, bits)) {
                    key(self.tag, wire, self.out);
                    raw(wire, bits, self.out);
                }
                return Ok(());
            }
        };
        if !(self.implicit && bytes.is_empty()) {
            len_delimited(self.tag, &bytes, self.out);
        }
        Ok(())
    }
}

impl ser::Serializer for ScalarSer<'_> {
    type Ok = ();
    type Error = SerError;
    scalars!();
    no_tuples!();
    no_seq!();
    no_members!();
}

fn int(s: Scalar) -> Option<i64> {
    match s {
        Scalar::I64(v) => Some(v),
        Scalar::U64(v) => Some(v as i64),
        Scalar::F64(f) if f.fract() == 0.0 => Some(f as i64),
        Scalar::Str(text) => text.parse().ok(),
        _ => None,
    }
}

pub(super) fn float(s: Scalar) -> Option<f64> {
    match s {
        Scalar::F64(f) => Some(f),
        Scalar::I64(v) => Some(v as f64),
        Scalar::U64(v) => Some(v as f64),
        Scalar::Str(text) => text.parse().ok(),
        _ => None,
    }
}

/// A number (bool, enum) as its wire type and raw bits.
fn number(field: &FieldPlan, ty: &Ty, s: Scalar) -> Result<(u32, u64), SerError> {
    let wrong = || SerError(format!("{}: unexpected {s:?}", field.full_name));
    Ok(match ty {
        Ty::Bool => match s {
            Scalar::Bool(b) => (VARINT, u64::from(b)),
            _ => return Err(wrong()),
        },
        Ty::Varint => (VARINT, int(s).ok_or_else(wrong)? as u64),
        Ty::Zigzag => {
            let v = int(s).ok_or_else(wrong)?;
            (VARINT, ((v << 1) ^ (v >> 63)) as u64)
        }
        Ty::Fixed32 => (FIXED32, u64::from(int(s).ok_or_else(wrong)? as u32)),
        Ty::Fixed64 => (FIXED64, int(s).ok_or_else(wrong)? as u64),
        Ty::Double => (FIXED64, float(s).ok_or_else(wrong)?.to_bits()),
        Ty::Float => (
            FIXED32,
            u64::from((float(s).ok_or_else(wrong)? as f32).to_bits()),
        ),
        Ty::Enum(values) => {
            let n = match s {
                Scalar::Str(name) => values.iter().find(|(n, _)| n == name).map(|(_, v)| *v),
                Scalar::I64(n) => Some(n as i32),
                Scalar::U64(n) => Some(n as i32),
                _ => None,
            }
            .ok_or_else(wrong)?;
            (VARINT, n as i64 as u64)
        }
        Ty::String | Ty::Bytes | Ty::Message(_) => return Err(wrong()),
    })
}

/// One number of a packed list: its raw bits, no key.
pub(super) struct PackedSer<'a> {
    pub(super) field: &'a FieldPlan,
    pub(super) out: &'a mut Vec<u8>,
}

impl PackedSer<'_> {
    fn scalar(self, s: Scalar) -> Done {
        if !matches!(s, Scalar::Null) {
            let (wire, bits) = number(self.field, &self.field.ty, s)?;
            raw(wire, bits, self.out);
        }
        Ok(())
    }
    fn unexpected(&self, what: &str) -> SerError {
        SerError(format!("{}: unexpected {what}", self.field.full_name))
    }
}

impl ser::Serializer for PackedSer<'_> {
    type Ok = ();
    type Error = SerError;
    scalars!();
    no_tuples!();
    no_seq!();
    no_members!();
}

/// `google.protobuf.Timestamp` from RFC 3339: `int64 seconds = 1`, `int32 nanos = 2`.
pub(super) struct TimestampSer<'a> {
    pub(super) tag: Option<u32>,
    pub(super) out: &'a mut Vec<u8>,
}

impl TimestampSer<'_> {
    fn unexpected(&self, what: &str) -> SerError {
        SerError(format!(
            "google.protobuf.Timestamp: expected a string, got {what}"
        ))
    }

    fn scalar(self, s: Scalar) -> Done {
        let text = match s {
            Scalar::Null => return Ok(()),
            Scalar::Str(text) => text,
            _ => return Err(self.unexpected(&format!("{s:?}"))),
        };
        let (secs, frac) = Timestamp::parse(text)
            .map_err(|e| SerError(format!("google.protobuf.Timestamp: {e}")))?
            .unix_secs_and_nanos();
        let outer = frame(self.tag, self.out);
        if secs != 0 {
            key(1, VARINT, self.out);
            varint(secs as u64, self.out);
        }
        if frac != 0 {
            key(2, VARINT, self.out);
            varint(frac as i64 as u64, self.out);
        }
        close(outer, self.out);
        Ok(())
    }
}

impl ser::Serializer for TimestampSer<'_> {
    type Ok = ();
    type Error = SerError;
    scalars!();
    no_tuples!();
    no_seq!();
    no_members!();
}
