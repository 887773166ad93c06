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

    /// `YYYY-MM-DDTHH:MM:SS.` then `digits` (3 or 9) of the fraction and `Z`, written digit
    /// by digit: every event, snapshot and status carries a timestamp.
    fn format(self, digits: usize) -> String {
        let t = self.0;
        let (year, month, day) = t.to_calendar_date();
        let mut out = String::with_capacity(30);
        match u32::try_from(year) {
            Ok(y) if y <= 9999 => push_digits(&mut out, y, 4),
            // Outside RFC 3339's years (time's range reaches -9999).
            _ => out.push_str(&format!("{year:04}")),
        }
        for (sep, value) in [
            ('-', u8::from(month)),
            ('-', day),
            ('T', t.hour()),
            (':', t.minute()),
            (':', t.second()),
        ] {
            out.push(sep);
            push_digits(&mut out, u32::from(value), 2);
        }
        out.push('.');
        let nanos = t.nanosecond();
        match digits {
            3 => push_digits(&mut out, nanos / 1_000_000, 3),
            _ => push_digits(&mut out, nanos, 9),
        }
        out.push('Z');
        out
    }
}

/// `value`'s last `width` decimal digits, zero-padded.
fn push_digits(out: &mut String, value: u32, width: u32) {
    for place in (0..width).rev() {
        let digit = (value / 10u32.pow(place)) % 10;
        out.push(char::from(b'0' + digit as u8));
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

    /// What the digit-by-digit writer must print: the same as the standard formatter.
    fn formatted(t: Timestamp, digits: usize) -> String {
        let (year, month, day) = t.0.to_calendar_date();
        let frac = match digits {
            3 => format!("{:03}", t.0.nanosecond() / 1_000_000),
            _ => format!("{:09}", t.0.nanosecond()),
        };
        format!(
            "{year:04}-{:02}-{day:02}T{:02}:{:02}:{:02}.{frac}Z",
            u8::from(month),
            t.0.hour(),
            t.0.minute(),
            t.0.second()
        )
    }

    proptest::proptest! {
        #[test]
        fn prints_as_the_standard_formatter_at_any_instant(n in i64::MIN..i64::MAX) {
            let t = Timestamp::from_unix_nanos(n);
            proptest::prop_assert_eq!(t.to_rfc3339_millis(), formatted(t, 3));
            proptest::prop_assert_eq!(t.to_rfc3339_nanos(), formatted(t, 9));
            proptest::prop_assert_eq!(Timestamp::parse(&t.to_rfc3339_nanos()), Ok(t));
        }
    }

    #[test]
    fn prints_the_edges_of_the_range() {
        let first = Timestamp::from_unix_nanos(i64::MIN);
        assert_eq!(first.to_rfc3339_nanos(), "1677-09-21T00:12:43.145224192Z");
        assert_eq!(
            Timestamp::from_unix_nanos(0).to_rfc3339_millis(),
            "1970-01-01T00:00:00.000Z"
        );
        let last = Timestamp::from_unix_nanos(i64::MAX);
        assert_eq!(last.to_rfc3339_nanos(), "2262-04-11T23:47:16.854775807Z");
        let end_of_day = Timestamp::parse("9999-12-31T23:59:59.999999999Z").unwrap();
        assert_eq!(end_of_day.to_rfc3339_millis(), "9999-12-31T23:59:59.999Z");
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
