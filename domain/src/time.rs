//! Timestamps: `google.protobuf.Timestamp` as RFC 3339 UTC text with a `Z`.
//! Kept to the nanosecond; status timestamps print milliseconds, timeline stamps nanoseconds.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

/// A point in time, UTC, nanosecond precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(OffsetDateTime);

impl Timestamp {
    pub fn now() -> Self {
        Self(OffsetDateTime::now_utc())
    }

    /// Nanoseconds since the Unix epoch (sortable storage form).
    pub fn unix_nanos(self) -> i64 {
        // i64 nanoseconds cover the years 1678–2262.
        self.0
            .unix_timestamp_nanos()
            .clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }

    pub fn unix_secs(self) -> i64 {
        self.0.unix_timestamp()
    }

    /// `google.protobuf.Timestamp`'s pair: whole seconds since the epoch and the nanoseconds
    /// into that second (always 0..1e9), over the full year range RFC 3339 can write.
    pub fn unix_secs_and_nanos(self) -> (i64, i32) {
        (self.0.unix_timestamp(), self.0.nanosecond() as i32)
    }

    pub fn from_unix_nanos(n: i64) -> Self {
        Self(
            OffsetDateTime::from_unix_timestamp_nanos(n as i128)
                .unwrap_or(OffsetDateTime::UNIX_EPOCH),
        )
    }

    /// Parses RFC 3339 with any offset, normalised to UTC.
    pub fn parse(s: &str) -> Result<Self, String> {
        OffsetDateTime::parse(s, &Rfc3339)
            .map(|t| Self(t.to_offset(UtcOffset::UTC)))
            .map_err(|e| format!("invalid RFC 3339 timestamp {s:?}: {e}"))
    }

    /// `2026-01-01T00:00:00.123Z`.
    pub fn to_rfc3339_millis(self) -> String {
        self.format(3)
    }

    /// `2026-01-01T00:00:00.123456789Z`.
    pub fn to_rfc3339_nanos(self) -> String {
        self.format(9)
    }

    /// The next representable instant (one nanosecond later).
    pub fn next_nano(self) -> Self {
        Self(self.0 + time::Duration::nanoseconds(1))
    }

    pub fn plus_millis(self, ms: i64) -> Self {
        Self(self.0 + time::Duration::milliseconds(ms))
    }

    fn format(self, digits: usize) -> String {
        let t = self.0;
        let frac = t.nanosecond() as u64;
        let frac = match digits {
            3 => format!("{:03}", frac / 1_000_000),
            _ => format!("{frac:09}"),
        };
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second(),
            frac
        )
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339_millis())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Timestamp::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Timestamps inside events and snapshots keep their nanoseconds.
pub mod nanos {
    use super::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&t.to_rfc3339_nanos())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let s = String::deserialize(d)?;
        Timestamp::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_utc_with_z_in_millis_and_nanos() {
        let t = Timestamp::parse("2026-03-04T05:06:07.123456789+02:00").unwrap();
        assert_eq!(t.to_rfc3339_millis(), "2026-03-04T03:06:07.123Z");
        assert_eq!(t.to_rfc3339_nanos(), "2026-03-04T03:06:07.123456789Z");
    }

    #[test]
    fn unix_nanos_round_trip_and_order() {
        let a = Timestamp::parse("2026-01-01T00:00:00Z").unwrap();
        let b = a.next_nano();
        assert!(b > a);
        assert_eq!(Timestamp::from_unix_nanos(b.unix_nanos()), b);
    }

    #[test]
    fn refuses_non_rfc3339() {
        assert!(Timestamp::parse("yesterday").is_err());
        assert!(Timestamp::parse("2026-01-01").is_err());
    }
}
