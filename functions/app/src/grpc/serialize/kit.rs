//! The parts of the reply serializer (`serialize`) that do not recurse: its error, the
//! length-delimited frame a nested message is written in, the scalar view of serde's
//! primitive calls and the macros that forward them, and the map-key serializer.

use std::fmt;

use serde::ser::{self, Impossible, Serialize};

use crate::grpc::encode::{key, varint, LEN};

/// Why a reply does not fit its message (an internal error: the domain only emits proto
/// shapes).
#[derive(Debug)]
pub struct SerError(pub String);

impl fmt::Display for SerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SerError {}

impl ser::Error for SerError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self(msg.to_string())
    }
}

pub(super) type Done = Result<(), SerError>;

/// A length-delimited field being written: its key and a one-byte length, grown to a longer
/// varint (the content moved up) when the content turns out 128 bytes or more.
pub(super) struct Frame {
    start: usize,
    at: usize,
}

impl Frame {
    pub(super) fn open(tag: u32, out: &mut Vec<u8>) -> Self {
        let start = out.len();
        key(tag, LEN, out);
        let at = out.len();
        out.push(0);
        Self { start, at }
    }

    pub(super) fn close(self, out: &mut Vec<u8>) {
        let len = out.len() - self.at - 1;
        if len < 0x80 {
            out[self.at] = len as u8;
        } else {
            let mut prefix = Vec::with_capacity(10);
            varint(len as u64, &mut prefix);
            out.splice(self.at..=self.at, prefix);
        }
    }

    /// Closes the field, or takes it back when nothing was written inside (an empty packed
    /// list).
    pub(super) fn close_or_drop(self, out: &mut Vec<u8>) {
        if out.len() == self.at + 1 {
            out.truncate(self.start);
        } else {
            self.close(out);
        }
    }
}

pub(super) fn frame(tag: Option<u32>, out: &mut Vec<u8>) -> Option<Frame> {
    tag.map(|t| Frame::open(t, out))
}

pub(super) fn close(frame: Option<Frame>, out: &mut Vec<u8>) {
    if let Some(f) = frame {
        f.close(out);
    }
}

/// What serde hands a serializer for a value without members.
#[derive(Debug, Clone, Copy)]
pub(super) enum Scalar<'x> {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(&'x str),
    Bytes(&'x [u8]),
}

/// The scalar methods of `ser::Serializer`, each through `self.scalar`; an `Option`'s value
/// and a newtype's inner value are serialised as themselves.
macro_rules! scalars {
    () => {
        fn serialize_bool(self, v: bool) -> Result<Self::Ok, SerError> {
            self.scalar(Scalar::Bool(v))
        }
        fn serialize_i8(self, v: i8) -> Result<Self::Ok, SerError> {
            self.scalar(Scalar::I64(v.into()))
        }
        fn serialize_i16(self, v: i16) -> Result<Self::Ok, SerError> {
            self.scalar(Scalar::I64(v.into()))
        }
        fn serialize_i32(self, v: i32) -> Result<Self::Ok, SerError> {
            self.scalar(Scalar::I64(v.into()))
        }
        fn serialize_i64(self, v: i64) -> Result<Self::Ok, SerError> {
            self.scalar(Scalar::I64(v))
        }
        fn serialize_u8(self, v: u8) -> Result<Self::Ok, SerError> {
            self.scalar(Scalar::U64(v.into()))
        }
        fn serialize_u16(self, v: u16) -> Result<Self::Ok, SerError> {
            self.scalar(Scalar::U64(v.into()))
        }
        fn serialize_u32(self, v: u32) -> Result<Self::Ok, SerError> {
            self.scalar(Scalar::U64(v.into()))
        }
        fn serialize_u64(self, v: u64) -> Result<Self::Ok, SerError> {
            self.scalar(Scalar::U64(v))
        }
        fn serialize_f32(self, v: f32) -> Result<Self::Ok, SerError> {
            self.scalar(Scalar::F64(v.into()))
        }
        fn serialize_f64(self, v: f64) -> Result<Self::Ok, SerError> {
            self.scalar(Scalar::F64(v))
        }
        fn serialize_char(self, v: char) -> Result<Self::Ok, SerError> {
            self.scalar(Scalar::Str(v.encode_utf8(&mut [0; 4])))
        }
        fn serialize_str(self, v: &str) -> Result<Self::Ok, SerError> {
            self.scalar(Scalar::Str(v))
        }
        fn serialize_bytes(self, v: &[u8]) -> Result<Self::Ok, SerError> {
            self.scalar(Scalar::Bytes(v))
        }
        fn serialize_none(self) -> Result<Self::Ok, SerError> {
            self.scalar(Scalar::Null)
        }
        fn serialize_unit(self) -> Result<Self::Ok, SerError> {
            self.scalar(Scalar::Null)
        }
        fn serialize_unit_struct(self, _: &'static str) -> Result<Self::Ok, SerError> {
            self.scalar(Scalar::Null)
        }
        fn serialize_unit_variant(
            self,
            _: &'static str,
            _: u32,
            variant: &'static str,
        ) -> Result<Self::Ok, SerError> {
            self.scalar(Scalar::Str(variant))
        }
        fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<Self::Ok, SerError> {
            v.serialize(self)
        }
        fn serialize_newtype_struct<T: Serialize + ?Sized>(
            self,
            _: &'static str,
            v: &T,
        ) -> Result<Self::Ok, SerError> {
            v.serialize(self)
        }
    };
}
pub(super) use scalars;

/// Tuples and struct variants, which no proto shape has.
macro_rules! no_tuples {
    () => {
        type SerializeTuple = Impossible<Self::Ok, SerError>;
        type SerializeTupleStruct = Impossible<Self::Ok, SerError>;
        type SerializeTupleVariant = Impossible<Self::Ok, SerError>;
        type SerializeStructVariant = Impossible<Self::Ok, SerError>;
        fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, SerError> {
            Err(self.unexpected("a tuple"))
        }
        fn serialize_tuple_struct(
            self,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleStruct, SerError> {
            Err(self.unexpected("a tuple"))
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleVariant, SerError> {
            Err(self.unexpected("a tuple"))
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeStructVariant, SerError> {
            Err(self.unexpected("a struct variant"))
        }
    };
}
pub(super) use no_tuples;

macro_rules! no_seq {
    () => {
        type SerializeSeq = Impossible<Self::Ok, SerError>;
        fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, SerError> {
            Err(self.unexpected("a list"))
        }
    };
}
pub(super) use no_seq;

macro_rules! no_members {
    () => {
        type SerializeMap = Impossible<Self::Ok, SerError>;
        type SerializeStruct = Impossible<Self::Ok, SerError>;
        fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, SerError> {
            Err(self.unexpected("an object"))
        }
        fn serialize_struct(
            self,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeStruct, SerError> {
            Err(self.unexpected("an object"))
        }
        fn serialize_newtype_variant<T: Serialize + ?Sized>(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: &T,
        ) -> Result<Self::Ok, SerError> {
            Err(self.unexpected("an object"))
        }
    };
}
pub(super) use no_members;

/// A map key (a string: ProtoJSON's maps are `map<string, …>`).
pub(super) struct KeySer;

impl KeySer {
    fn scalar(self, s: Scalar) -> Result<String, SerError> {
        match s {
            Scalar::Str(k) => Ok(k.to_string()),
            _ => Err(self.unexpected(&format!("{s:?}"))),
        }
    }
    fn unexpected(&self, what: &str) -> SerError {
        SerError(format!("a map key must be a string, got {what}"))
    }
}

impl ser::Serializer for KeySer {
    type Ok = String;
    type Error = SerError;
    scalars!();
    no_tuples!();
    no_seq!();
    no_members!();
}

/// `SerializeMap` and `SerializeStruct` for `$ty`, each member handed to `self.$member(name,
/// value)` (a map's key kept in `self.key` until its value comes) and `self.finish()` at the
/// end.
macro_rules! members_by_name {
    ($ty:ident, $member:ident) => {
        impl SerializeMap for $ty<'_> {
            type Ok = ();
            type Error = SerError;
            fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Done {
                self.key = Some(k.serialize(KeySer)?);
                Ok(())
            }
            fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Done {
                let name = self.key.take().unwrap_or_default();
                self.$member(&name, v)
            }
            fn end(self) -> Done {
                self.finish()
            }
        }

        impl SerializeStruct for $ty<'_> {
            type Ok = ();
            type Error = SerError;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                name: &'static str,
                v: &T,
            ) -> Done {
                self.$member(name, v)
            }
            fn end(self) -> Done {
                self.finish()
            }
        }
    };
}
pub(super) use members_by_name;
