//! What an agent card signature signs (spec §8.4, the AgentCard `signatures`): the card without
//! its `signatures`, empty members dropped, in the JSON Canonicalization Scheme (RFC 8785: keys
//! sorted, no whitespace) — the payload of a JWS with a detached payload. The official SDKs
//! canonicalize the same way, so their verifiers accept our signatures.

use serde_json::Value;

use crate::wire::AgentCard;

/// The bytes a signature of `card` covers.
pub fn canonical_payload(card: &AgentCard) -> String {
    let mut v = serde_json::to_value(card).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.remove("signatures");
    }
    let mut out = String::new();
    match cleaned(v) {
        Some(v) => write_canonical(&v, &mut out),
        None => out.push_str("{}"),
    }
    out
}

/// The value without empty strings, empty lists, empty objects and nulls (at any depth).
fn cleaned(v: Value) -> Option<Value> {
    match v {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::Array(a) => {
            let a: Vec<Value> = a.into_iter().filter_map(cleaned).collect();
            (!a.is_empty()).then_some(Value::Array(a))
        }
        Value::Object(o) => {
            let o: serde_json::Map<String, Value> = o
                .into_iter()
                .filter_map(|(k, v)| cleaned(v).map(|v| (k, v)))
                .collect();
            (!o.is_empty()).then_some(Value::Object(o))
        }
        other => Some(other),
    }
}

/// RFC 8785 output: object members sorted by key (UTF-16 code units), strings and numbers as
/// ECMAScript's `JSON.stringify` writes them.
fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(&o[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(x, out);
            }
            out.push(']');
        }
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (_, Some(u), _) => out.push_str(&u.to_string()),
            // an integral float is written as an integer, as JSON.stringify does
            (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 1e21 => {
                out.push_str(&format!("{f:.0}"))
            }
            _ => out.push_str(&n.to_string()),
        },
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::card::{agent_card, CardAuth, CardSettings};
    use crate::wire::AgentCardSignature;

    fn card() -> AgentCard {
        agent_card(&CardSettings {
            public_url: "http://127.0.0.1:8080".into(),
            name: "n".into(),
            description: "d".into(),
            version: "1".into(),
            auth: CardAuth::Bearer,
            push_notifications: false,
            grpc_url: None,
            extended_card: false,
        })
    }

    #[test]
    fn the_payload_is_sorted_compact_and_leaves_out_signatures_and_empty_members() {
        let mut c = card();
        let unsigned = canonical_payload(&c);
        c.signatures.push(AgentCardSignature {
            protected: "p".into(),
            signature: "s".into(),
            header: None,
        });
        assert_eq!(canonical_payload(&c), unsigned, "signatures are not signed");
        assert!(!unsigned.contains("signatures"));
        assert!(
            !unsigned.contains("\": ") && !unsigned.contains(",\n"),
            "compact"
        );
        // members in key order at every level
        let v: Value = serde_json::from_str(&unsigned).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert!(unsigned.starts_with(r#"{"capabilities":{"#), "{unsigned}");
        // false stays (it is a value), empty lists do not
        assert!(unsigned.contains(r#""pushNotifications":false"#));
        assert!(!unsigned.contains("[]") && !unsigned.contains("\"\""));
    }

    #[test]
    fn canonical_text_follows_rfc_8785_for_keys_strings_and_numbers() {
        let v = serde_json::json!({"b": 1.0, "a": "é\n\"", "c": [true, {"z": 2, "y": 1e-7}], "€": 0, "\u{10000}": 1});
        let mut out = String::new();
        write_canonical(&v, &mut out);
        // by UTF-16 code units € (0x20AC) sorts before U+10000 (0xD800 0xDC00)
        assert_eq!(out, "{\"a\":\"é\\n\\\"\",\"b\":1,\"c\":[true,{\"y\":1e-7,\"z\":2}],\"€\":0,\"\u{10000}\":1}");
    }
}
