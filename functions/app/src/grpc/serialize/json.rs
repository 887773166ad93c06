//! The reply serializer for the JSON well-known types (`google.protobuf.Value`, `Struct`,
//! `ListValue`): any serde value, written as protobuf writes the JSON it would be.

use serde::ser::{self, Impossible, Serialize, SerializeMap, SerializeSeq, SerializeStruct};

use super::kit::{
    close, frame, members_by_name, no_tuples, scalars, Done, Frame, KeySer, Scalar, SerError,
};
use super::scalar::float;
use crate::grpc::encode::{key, len_delimited, FIXED64, VARINT};

/// Which of the JSON well-known types is being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum JsonKind {
    /// `google.protobuf.Value`: one member of its `kind` oneof, always written (even `null`
    /// and `0`: presence is the oneof's).
    Value,
    /// `google.protobuf.Struct`: `map<string, Value> fields = 1` (an empty key left out).
    Struct,
    /// `google.protobuf.ListValue`: `repeated Value values = 1`.
    List,
}

/// Any serde value as one of the JSON well-known types, under `tag` or as the whole output.
pub(super) struct Json<'a> {
    pub(super) kind: JsonKind,
    pub(super) tag: Option<u32>,
    pub(super) out: &'a mut Vec<u8>,
}

impl<'a> Json<'a> {
    fn unexpected(&self, what: &str) -> SerError {
        SerError(format!(
            "google.protobuf.{:?}: unexpected {what}",
            self.kind
        ))
    }

    fn scalar(self, s: Scalar) -> Done {
        if self.kind != JsonKind::Value {
            return match s {
                Scalar::Null => Ok(()),
                _ => Err(self.unexpected(&format!("{s:?}"))),
            };
        }
        let outer = frame(self.tag, self.out);
        let out = &mut *self.out;
        match s {
            Scalar::Null => {
                key(1, VARINT, out);
                out.push(0);
            }
            Scalar::Bool(b) => {
                key(4, VARINT, out);
                out.push(u8::from(b));
            }
            Scalar::I64(_) | Scalar::U64(_) | Scalar::F64(_) => {
                key(2, FIXED64, out);
                out.extend_from_slice(&float(s).unwrap_or(0.0).to_le_bytes());
            }
            Scalar::Str(text) => len_delimited(3, text.as_bytes(), out),
            Scalar::Bytes(_) => return Err(SerError("google.protobuf.Value: bytes".into())),
        }
        close(outer, out);
        Ok(())
    }

    /// The frames an object or a list is written in: the field's, and in a `Value`, its
    /// `struct_value` (5) or `list_value` (6).
    fn frames(self, member: u32) -> (Option<Frame>, Option<Frame>, &'a mut Vec<u8>) {
        let outer = frame(self.tag, self.out);
        let inner = (self.kind == JsonKind::Value).then(|| Frame::open(member, self.out));
        (outer, inner, self.out)
    }

    fn members(self) -> Result<JsonMembers<'a>, SerError> {
        if self.kind == JsonKind::List {
            return Err(self.unexpected("an object"));
        }
        let (outer, inner, out) = self.frames(5);
        Ok(JsonMembers {
            frames: [inner, outer],
            out,
            key: None,
        })
    }
}

impl<'a> ser::Serializer for Json<'a> {
    type Ok = ();
    type Error = SerError;
    type SerializeSeq = JsonItems<'a>;
    type SerializeMap = JsonMembers<'a>;
    type SerializeStruct = JsonMembers<'a>;
    scalars!();
    no_tuples!();

    fn serialize_seq(self, _: Option<usize>) -> Result<JsonItems<'a>, SerError> {
        if self.kind == JsonKind::Struct {
            return Err(self.unexpected("a list"));
        }
        let (outer, inner, out) = self.frames(6);
        Ok(JsonItems {
            frames: [inner, outer],
            out,
        })
    }
    fn serialize_map(self, _: Option<usize>) -> Result<JsonMembers<'a>, SerError> {
        self.members()
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<JsonMembers<'a>, SerError> {
        self.members()
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Done {
        let mut members = self.members()?;
        members.member(variant, value)?;
        SerializeMap::end(members)
    }
}

/// An object's members as `Struct` entries; `frames` closed innermost first.
pub(super) struct JsonMembers<'a> {
    frames: [Option<Frame>; 2],
    out: &'a mut Vec<u8>,
    key: Option<String>,
}

impl JsonMembers<'_> {
    fn member<T: Serialize + ?Sized>(&mut self, k: &str, v: &T) -> Done {
        let out = &mut *self.out;
        let entry = Frame::open(1, out);
        if !k.is_empty() {
            len_delimited(1, k.as_bytes(), out);
        }
        v.serialize(Json {
            kind: JsonKind::Value,
            tag: Some(2),
            out,
        })?;
        entry.close(out);
        Ok(())
    }

    fn finish(self) -> Done {
        let [inner, outer] = self.frames;
        close(inner, self.out);
        close(outer, self.out);
        Ok(())
    }
}

members_by_name!(JsonMembers, member);

/// A list's items as `ListValue` values.
pub(super) struct JsonItems<'a> {
    frames: [Option<Frame>; 2],
    out: &'a mut Vec<u8>,
}

impl SerializeSeq for JsonItems<'_> {
    type Ok = ();
    type Error = SerError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, item: &T) -> Done {
        item.serialize(Json {
            kind: JsonKind::Value,
            tag: Some(1),
            out: self.out,
        })
    }
    fn end(self) -> Done {
        let [inner, outer] = self.frames;
        close(inner, self.out);
        close(outer, self.out);
        Ok(())
    }
}
