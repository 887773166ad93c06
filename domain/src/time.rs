//! Timestamps: `google.protobuf.Timestamp` as RFC 3339 UTC text with a `Z`.
//! Kept to the nanosecond; status timestamps print milliseconds, timeline stamps nanoseconds.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

/// A point in time, UTC, nanosecond precision, within the years RFC 3339 writes (0000–9999).
/// No arithmetic on it panics, whatever a stored value holds: it saturates at `MIN` and `MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(OffsetDateTime);

impl Timestamp {
    /// The first instant a timestamp can hold: 0000-01-01T00:00:00Z.
    pub const MIN: Timestamp = Timestamp(time::macros::datetime!(0000-01-01 0:00 UTC));
    /// The last instant a timestamp can hold: 9999-12-31T23:59:59.999999999Z.
    pub const MAX: Timestamp =
        Timestamp(time::macros::datetime!(9999-12-31 23:59:59.999_999_999 UTC));

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

    /// Parses RFC 3339 with any offset, normalised to UTC; an instant that falls outside the
    /// years 0000–9999 once in UTC (`9999-12-31T23:00:00-05:00`) is refused.
    pub fn parse(s: &str) -> Result<Self, String> {
        let t = OffsetDateTime::parse(s, &Rfc3339)
            .map_err(|e| format!("invalid RFC 3339 timestamp {s:?}: {e}"))?;
        t.checked_to_offset(UtcOffset::UTC)
            .map(Self)
            .filter(|t| (Self::MIN..=Self::MAX).contains(t))
            .ok_or_else(|| format!("timestamp {s:?} is outside the years 0000 to 9999 in UTC"))
    }

    /// `2026-01-01T00:00:00.123Z`.
    pub fn to_rfc3339_millis(self) -> String {
        self.format(3)
    }

    /// `2026-01-01T00:00:00.123456789Z`.
    pub fn to_rfc3339_nanos(self) -> String {
        self.format(9)
    }

    /// The next representable instant (one nanosecond later; `MAX` stays `MAX`).
    pub fn next_nano(self) -> Self {
        self.plus(time::Duration::nanoseconds(1))
    }

    /// `ms` milliseconds later (earlier when negative), saturating at `MIN` and `MAX`.
    pub fn plus_millis(self, ms: i64) -> Self {
        self.plus(time::Duration::milliseconds(ms))
    }

    /// `secs` seconds later (earlier when negative), saturating at `MIN` and `MAX`.
    pub fn plus_secs(self, secs: i64) -> Self {
        self.plus(time::Duration::seconds(secs))
    }

    /// `secs` seconds earlier, saturating at `MIN` (whatever `secs` is).
    pub fn minus_secs(self, secs: u64) -> Self {
        self.plus_secs(-(i64::try_from(secs).unwrap_or(i64::MAX)))
    }

    fn plus(self, d: time::Duration) -> Self {
        match self.0.checked_add(d) {
            Some(t) if t > Self::MAX.0 => Self::MAX,
            Some(t) if t < Self::MIN.0 => Self::MIN,
            Some(t) => Self(t),
            None if d.is_negative() => Self::MIN,
            None => Self::MAX,
        }
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
    fn arithmetic_saturates_at_the_ends_of_the_range_instead_of_panicking() {
        assert_eq!(Timestamp::MAX.next_nano(), Timestamp::MAX);
        assert_eq!(Timestamp::MAX.plus_millis(i64::MAX), Timestamp::MAX);
        assert_eq!(Timestamp::MIN.plus_millis(i64::MIN), Timestamp::MIN);
        assert_eq!(Timestamp::MIN.minus_secs(u64::MAX), Timestamp::MIN);
        let late = Timestamp::parse("9999-12-31T00:00:00Z").unwrap();
        assert_eq!(late.plus_secs(86_400 * 90), Timestamp::MAX);
        assert_eq!(
            late.plus_secs(-86_400).to_rfc3339_millis(),
            "9999-12-30T00:00:00.000Z"
        );
        assert_eq!(
            Timestamp::MAX.to_rfc3339_nanos(),
            "9999-12-31T23:59:59.999999999Z"
        );
        assert_eq!(
            Timestamp::MIN.to_rfc3339_millis(),
            "0000-01-01T00:00:00.000Z"
        );
    }

    #[test]
    fn an_offset_that_carries_the_instant_past_9999_is_refused_not_a_panic() {
        assert!(Timestamp::parse("9999-12-31T23:59:59-05:00").is_err());
        assert!(Timestamp::parse("0000-01-01T00:00:00+01:00").is_err());
        assert_eq!(
            Timestamp::parse("9999-12-31T18:59:59-05:00"),
            Ok(Timestamp::parse("9999-12-31T23:59:59Z").unwrap())
        );
    }

    #[test]
    fn refuses_non_rfc3339() {
        assert!(Timestamp::parse("yesterday").is_err());
        assert!(Timestamp::parse("2026-01-01").is_err());
    }
}
