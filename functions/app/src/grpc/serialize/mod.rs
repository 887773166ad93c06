//! A typed reply → protobuf binary, straight from the domain's `Serialize` impls: the encoding
//! of `encode`, driven by the same plans (`plan`), with no ProtoJSON tree built on the way.
//! Building a GetTask reply's `serde_json::Value` and dropping it cost about as much as
//! encoding it; here serde hands each member to the field it names and the bytes are written
//! as it goes (a nested message in place behind a length, as in `encode`).
//!
//! Fields come out in the order the domain type serialises them rather than by number:
//! protobuf readers take fields in any order, and the tests compare what prost decodes with
//! what `encode` writes for the same reply's ProtoJSON. `encode` stays for what arrives as
//! JSON (the stored stream events).

use serde::ser::{self, Impossible, Serialize, SerializeMap, SerializeSeq, SerializeStruct};

use super::encode::len_delimited;
use super::plan::{FieldPlan, Plans, Shape, Special, Ty};
use json::{Json, JsonKind};
use kit::{
    close, frame, members_by_name, no_members, no_seq, no_tuples, scalars, Done, Frame, KeySer,
    Scalar,
};
use scalar::{PackedSer, ScalarSer, TimestampSer};

mod json;
mod kit;
mod scalar;

pub use kit::SerError;

/// Writes `value` as the fields of message `index` of `plans` into `out`.
pub fn message_bytes<T: Serialize + ?Sized>(
    plans: &Plans,
    index: usize,
    value: &T,
    out: &mut Vec<u8>,
) -> Done {
    message(plans, index, None, value, out)
}

/// Message `index` (a well-known type by its own rules) under `tag`, or as the whole output.
fn message<T: Serialize + ?Sized>(
    plans: &Plans,
    index: usize,
    tag: Option<u32>,
    value: &T,
    out: &mut Vec<u8>,
) -> Done {
    match plans.messages[index].special {
        Special::None | Special::Empty => value.serialize(MessageSer {
            plans,
            index,
            tag,
            out,
        }),
        Special::Struct => value.serialize(Json {
            kind: JsonKind::Struct,
            tag,
            out,
        }),
        Special::Value => value.serialize(Json {
            kind: JsonKind::Value,
            tag,
            out,
        }),
        Special::ListValue => value.serialize(Json {
            kind: JsonKind::List,
            tag,
            out,
        }),
        Special::Timestamp => value.serialize(TimestampSer { tag, out }),
    }
}

/// One value of `field` of type `ty` under `tag`; with `implicit`, a default is left out.
fn single<T: Serialize + ?Sized>(
    plans: &Plans,
    field: &FieldPlan,
    ty: &Ty,
    tag: u32,
    implicit: bool,
    value: &T,
    out: &mut Vec<u8>,
) -> Done {
    match ty {
        Ty::Message(index) => message(plans, *index, Some(tag), value, out),
        _ => value.serialize(ScalarSer {
            field,
            ty,
            tag,
            implicit,
            out,
        }),
    }
}

/// A message's members, each to the field it names (members the proto does not define are
/// left out, as ProtoJSON readers skip them).
struct MessageSer<'a> {
    plans: &'a Plans,
    index: usize,
    tag: Option<u32>,
    out: &'a mut Vec<u8>,
}

impl<'a> MessageSer<'a> {
    fn scalar(self, s: Scalar) -> Done {
        match s {
            Scalar::Null => Ok(()),
            _ => Err(self.unexpected(&format!("{s:?}"))),
        }
    }

    fn unexpected(&self, what: &str) -> SerError {
        let name = &self.plans.messages[self.index].full_name;
        SerError(format!("{name}: expected an object, got {what}"))
    }

    fn begin(self) -> Members<'a> {
        let frame = frame(self.tag, self.out);
        Members {
            plans: self.plans,
            index: self.index,
            frame,
            out: self.out,
            key: None,
        }
    }
}

impl<'a> ser::Serializer for MessageSer<'a> {
    type Ok = ();
    type Error = SerError;
    type SerializeMap = Members<'a>;
    type SerializeStruct = Members<'a>;
    scalars!();
    no_tuples!();
    no_seq!();

    fn serialize_map(self, _: Option<usize>) -> Result<Members<'a>, SerError> {
        Ok(self.begin())
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Members<'a>, SerError> {
        Ok(self.begin())
    }

    /// An externally tagged enum (`{"task": …}`): the variant names the member.
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Done {
        let mut members = self.begin();
        members.member(variant, value)?;
        members.finish()
    }
}

struct Members<'a> {
    plans: &'a Plans,
    index: usize,
    frame: Option<Frame>,
    out: &'a mut Vec<u8>,
    key: Option<String>,
}

impl Members<'_> {
    fn member<T: Serialize + ?Sized>(&mut self, name: &str, value: &T) -> Done {
        let plans = self.plans;
        let found = plans.messages[self.index]
            .fields
            .iter()
            .find(|f| f.json_name == name || f.proto_name.as_deref() == Some(name));
        let Some(field) = found else { return Ok(()) };
        let out = &mut *self.out;
        match &field.shape {
            Shape::Single => single(
                plans,
                field,
                &field.ty,
                field.number,
                field.implicit,
                value,
                out,
            ),
            Shape::List { packed } => value.serialize(ListSer {
                plans,
                field,
                packed: *packed,
                out,
            }),
            Shape::Map { value: value_ty } => value.serialize(MapSer {
                plans,
                field,
                value_ty,
                out,
            }),
        }
    }

    fn finish(self) -> Done {
        close(self.frame, self.out);
        Ok(())
    }
}

/// A repeated field: each item under the field's number, or (a packed list of numbers) all
/// behind one key and length, none when the list is empty.
struct ListSer<'a> {
    plans: &'a Plans,
    field: &'a FieldPlan,
    packed: bool,
    out: &'a mut Vec<u8>,
}

impl<'a> ListSer<'a> {
    fn scalar(self, s: Scalar) -> Done {
        match s {
            Scalar::Null => Ok(()),
            _ => Err(self.unexpected(&format!("{s:?}"))),
        }
    }
    fn unexpected(&self, what: &str) -> SerError {
        SerError(format!(
            "{}: expected a list, got {what}",
            self.field.full_name
        ))
    }
}

impl<'a> ser::Serializer for ListSer<'a> {
    type Ok = ();
    type Error = SerError;
    type SerializeSeq = ListItems<'a>;
    scalars!();
    no_tuples!();
    no_members!();

    fn serialize_seq(self, _: Option<usize>) -> Result<ListItems<'a>, SerError> {
        let frame = self
            .packed
            .then(|| Frame::open(self.field.number, self.out));
        Ok(ListItems {
            plans: self.plans,
            field: self.field,
            frame,
            out: self.out,
        })
    }
}

struct ListItems<'a> {
    plans: &'a Plans,
    field: &'a FieldPlan,
    /// A packed list's key and length.
    frame: Option<Frame>,
    out: &'a mut Vec<u8>,
}

impl SerializeSeq for ListItems<'_> {
    type Ok = ();
    type Error = SerError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, item: &T) -> Done {
        let field = self.field;
        if self.frame.is_some() {
            item.serialize(PackedSer {
                field,
                out: self.out,
            })
        } else {
            single(
                self.plans,
                field,
                &field.ty,
                field.number,
                false,
                item,
                self.out,
            )
        }
    }
    fn end(self) -> Done {
        if let Some(f) = self.frame {
            f.close_or_drop(self.out);
        }
        Ok(())
    }
}

/// `map<string, V>`: one entry message per member, an empty key and a default value left
/// out, as prost writes them.
struct MapSer<'a> {
    plans: &'a Plans,
    field: &'a FieldPlan,
    value_ty: &'a Ty,
    out: &'a mut Vec<u8>,
}

impl<'a> MapSer<'a> {
    fn scalar(self, s: Scalar) -> Done {
        match s {
            Scalar::Null => Ok(()),
            _ => Err(self.unexpected(&format!("{s:?}"))),
        }
    }
    fn unexpected(&self, what: &str) -> SerError {
        SerError(format!(
            "{}: expected an object, got {what}",
            self.field.full_name
        ))
    }
    fn entries(self) -> MapEntries<'a> {
        MapEntries {
            plans: self.plans,
            field: self.field,
            value_ty: self.value_ty,
            out: self.out,
            key: None,
        }
    }
}

impl<'a> ser::Serializer for MapSer<'a> {
    type Ok = ();
    type Error = SerError;
    type SerializeMap = MapEntries<'a>;
    type SerializeStruct = MapEntries<'a>;
    scalars!();
    no_tuples!();
    no_seq!();

    fn serialize_map(self, _: Option<usize>) -> Result<MapEntries<'a>, SerError> {
        Ok(self.entries())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<MapEntries<'a>, SerError> {
        Ok(self.entries())
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Done {
        self.entries().entry(variant, value)
    }
}

struct MapEntries<'a> {
    plans: &'a Plans,
    field: &'a FieldPlan,
    value_ty: &'a Ty,
    out: &'a mut Vec<u8>,
    key: Option<String>,
}

impl MapEntries<'_> {
    fn entry<T: Serialize + ?Sized>(&mut self, k: &str, v: &T) -> Done {
        let out = &mut *self.out;
        let entry = Frame::open(self.field.number, out);
        if !k.is_empty() {
            len_delimited(1, k.as_bytes(), out);
        }
        let mark = out.len();
        single(self.plans, self.field, self.value_ty, 2, true, v, out)?;
        if matches!(self.value_ty, Ty::Message(_)) && out.len() == mark + 2 {
            out.truncate(mark);
        }
        entry.close(out);
        Ok(())
    }

    fn finish(self) -> Done {
        Ok(())
    }
}

members_by_name!(Members, member);
members_by_name!(MapEntries, entry);
