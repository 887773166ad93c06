//! What an agent card signature signs (spec §8.4, the AgentCard `signatures`): the card as
//! served, without its `signatures`, in the JSON Canonicalization Scheme exactly (RFC 8785:
//! members sorted by UTF-16 code units, no whitespace, strings as literal UTF-8 outside the
//! mandatory escapes, numbers as ECMAScript writes them, nothing dropped) — the payload of a JWS
//! with a detached payload. Where the official SDKs canonicalize otherwise (a2a-python drops
//! empty values and defaults and escapes non-ASCII), the README says which verifier fails on
//! what. Checked against the a2a-jcs-v01 vectors (`domain/fixtures`).

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::wire::AgentCard;

/// The member a signature cannot cover: the one that carries it.
pub const SIGNATURES_MEMBER: &str = "signatures";

/// The bytes a signature of `card` covers.
pub fn canonical_payload(card: &AgentCard) -> String {
    let mut v = serde_json::to_value(card).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.remove(SIGNATURES_MEMBER);
    }
    jcs(&v)
}

/// What the official 1.x SDKs check instead (a2a-python 1.3's `_canonicalize_agent_card`,
/// @a2a-js/sdk 1.3's `canonicalizeAgentCard`): the card with empty strings, lists and objects
/// and nulls dropped at any depth, then sorted — not RFC 8785 (it leaves out members the card
/// has, such as an empty scope list), so a card carrying any is signed over this form too
/// (`crate::card` callers: a second signature), and every verifier finds one it accepts.
pub fn sdk_payload(card: &AgentCard) -> String {
    let mut v = serde_json::to_value(card).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.remove(SIGNATURES_MEMBER);
    }
    without_empty(v).map_or_else(|| "{}".to_string(), |v| jcs(&v))
}

/// The value without empty strings, empty lists, empty objects and nulls (at any depth), as
/// the official SDKs clean a card before canonicalizing it.
pub fn without_empty(v: Value) -> Option<Value> {
    match v {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::Array(a) => {
            let a: Vec<Value> = a.into_iter().filter_map(without_empty).collect();
            (!a.is_empty()).then_some(Value::Array(a))
        }
        Value::Object(o) => {
            let o: Map<String, Value> = o
                .into_iter()
                .filter_map(|(k, v)| without_empty(v).map(|v| (k, v)))
                .collect();
            (!o.is_empty()).then_some(Value::Object(o))
        }
        other => Some(other),
    }
}

/// Why a JSON text has no canonical form, or is not a card's signed payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CanonicalError {
    /// Not I-JSON: malformed, a lone surrogate, a non-finite number, a member named twice.
    NotJson(String),
    /// Offered as a card's signed payload while still carrying `signatures` (§8.4.1).
    CarriesSignatures,
    /// Offered as canonical, but not its own canonical form.
    NotCanonical,
}

impl fmt::Display for CanonicalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotJson(why) => write!(f, "not canonicalizable JSON: {why}"),
            Self::CarriesSignatures => f.write_str("a signed card payload carries `signatures`"),
            Self::NotCanonical => f.write_str("the payload is not in RFC 8785 canonical form"),
        }
    }
}

/// The RFC 8785 form of a JSON text, read strictly (a member named twice, a lone surrogate or
/// anything that is not JSON has none).
pub fn canonicalize(text: &str) -> Result<String, CanonicalError> {
    Ok(jcs(&strict(text)?))
}

/// A payload a verifier is handed as a card's canonical form: it must be an object, carry no
/// `signatures`, and be its own canonical form.
pub fn check_signed_payload(text: &str) -> Result<(), CanonicalError> {
    let v = strict(text)?;
    if v.get(SIGNATURES_MEMBER).is_some() {
        return Err(CanonicalError::CarriesSignatures);
    }
    if !v.is_object() || jcs(&v) != text {
        return Err(CanonicalError::NotCanonical);
    }
    Ok(())
}

/// The RFC 8785 form of a value.
pub fn jcs(v: &Value) -> String {
    let mut out = String::new();
    write_jcs(v, &mut out);
    out
}

fn strict(text: &str) -> Result<Value, CanonicalError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let v = Strict::deserialize(&mut de).map_err(|e| CanonicalError::NotJson(e.to_string()))?;
    de.end()
        .map_err(|e| CanonicalError::NotJson(e.to_string()))?;
    Ok(v.0)
}

/// A JSON value read with every member name checked for repeats (serde_json keeps the last).
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Value, E> {
        Number::from_f64(n)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number that is not finite"))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let Strict(v) = map.next_value()?;
            if members.insert(key.clone(), v).is_some() {
                return Err(de::Error::custom(format!("member {key:?} is named twice")));
            }
        }
        Ok(Value::Object(members))
    }
}

fn write_jcs(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&es_number(n.as_f64().unwrap_or(0.0))),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_jcs(x, out);
            }
            out.push(']');
        }
        Value::Object(members) => {
            let mut keys: Vec<&String> = members.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                write_jcs(&members[k], out);
            }
            out.push('}');
        }
    }
}

/// RFC 8785 §3.2.2.2: only `"`, `\` and the C0 controls are escaped (the short forms where
/// JSON has them, else `\u00xx` in lower case); everything else is literal UTF-8.
fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// ECMAScript's Number::toString (ECMA-262 §6.1.6.1.20) of a finite double, which RFC 8785
/// §3.2.2.3 prescribes: the shortest digits that read back as the same double (Rust's `{:e}`
/// gives exactly those), written plain from 1e-6 up to below 1e21 and with an exponent
/// outside; `-0` is `0`.
pub fn es_number(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return "0".into();
    }
    let shortest = format!("{:e}", f.abs());
    let (mantissa, exp) = shortest.split_once('e').unwrap_or((&shortest, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i32;
    let n = exp + 1;
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n as usize);
        format!("{int}.{frac}")
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let sign = if e < 0 { '-' } else { '+' };
        let m = if k == 1 {
            digits
        } else {
            format!("{}.{}", &digits[..1], &digits[1..])
        };
        format!("{m}e{sign}{}", e.abs())
    };
    if f < 0.0 {
        format!("-{body}")
    } else {
        body
    }
}

#[cfg(test)]
#[path = "signature_tests.rs"]
mod tests;
