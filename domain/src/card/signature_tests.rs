use serde_json::Value;

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
        served: crate::card::Served::without_push(),
        grpc_url: None,
        extended_card: false,
    })
}

#[test]
fn the_payload_is_the_card_as_served_without_signatures_sorted_and_compact() {
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
    // Exactly the served JSON, reordered: nothing dropped (the empty scope list stays).
    let served = serde_json::to_value(card()).unwrap();
    let read: Value = serde_json::from_str(&unsigned).unwrap();
    assert_eq!(read, served);
    assert!(unsigned.contains(r#""bearer":{"list":[]}"#), "{unsigned}");
    assert!(unsigned.starts_with(r#"{"capabilities":{"#), "{unsigned}");
}

#[test]
fn numbers_are_written_as_ecmascript_writes_them() {
    for (f, want) in [
        (0.000001, "0.000001"),
        (0.0000001, "1e-7"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (-0.0, "0"),
        (0.1 + 0.2, "0.30000000000000004"),
        (-123.456, "-123.456"),
        (100.0, "100"),
        (1.5e-300, "1.5e-300"),
        (123456789012345680000.0, "123456789012345680000"),
        (9007199254740993.0, "9007199254740992"),
    ] {
        assert_eq!(es_number(f), want, "{f:e}");
    }
}

#[test]
fn a_member_named_twice_or_a_lone_surrogate_has_no_canonical_form() {
    assert!(matches!(
        canonicalize(r#"{"a":1,"a":2}"#),
        Err(CanonicalError::NotJson(_))
    ));
    assert!(canonicalize(r#"{"a":"\ud800"}"#).is_err());
    assert!(canonicalize(r#"{"a":1} x"#).is_err());
    assert_eq!(
        canonicalize(r#"{"b": [1, {"d":0,"c":null}], "a": 1E1}"#).unwrap(),
        r#"{"a":10,"b":[1,{"c":null,"d":0}]}"#
    );
}

/// The a2a-jcs-v01 corpus offered to the conformance kit (a2a-tck PR #227): 47 inputs and the
/// bytes both RFC 8785 oracles agree on, 10 inputs a conformant canonicalizer refuses.
#[test]
fn the_a2a_jcs_v01_vectors_pass() {
    let corpus: Value =
        serde_json::from_str(include_str!("../../fixtures/a2a-jcs-v01.json")).unwrap();
    let vectors = corpus["vectors"].as_array().unwrap();
    let (mut accepted, mut refused) = (0, 0);
    for v in vectors {
        let id = v["id"].as_str().unwrap();
        let raw = v["input_raw"].as_str().unwrap();
        match v["disposition"].as_str().unwrap() {
            "MUST-ACCEPT" => {
                // A2's inputs are cards: the signatures member is left out first (§8.4.1).
                let text = if id.starts_with("A2-") {
                    let mut card: Value = serde_json::from_str(raw).unwrap();
                    card.as_object_mut().unwrap().remove(SIGNATURES_MEMBER);
                    jcs(&card)
                } else {
                    canonicalize(raw).unwrap_or_else(|e| panic!("{id}: {e}"))
                };
                let want = v["expected_utf8_hex"].as_str().unwrap();
                let got: String = text.bytes().map(|b| format!("{b:02x}")).collect();
                assert_eq!(got, want, "{id}: {text}");
                accepted += 1;
            }
            "MUST-REJECT" => {
                let outcome = match v["rejects"].as_str().unwrap() {
                    "signed-payload" => check_signed_payload(raw),
                    _ => canonicalize(raw).map(|_| ()),
                };
                assert!(outcome.is_err(), "{id} must be refused: {raw}");
                refused += 1;
            }
            other => panic!("{id}: {other}"),
        }
    }
    assert_eq!((accepted, refused), (47, 10));
}

#[test]
fn a_signed_payload_is_canonical_and_carries_no_signatures() {
    let c = card();
    assert_eq!(check_signed_payload(&canonical_payload(&c)), Ok(()));
    assert_eq!(
        check_signed_payload(r#"{"b":1,"a":2}"#),
        Err(CanonicalError::NotCanonical)
    );
    assert_eq!(
        check_signed_payload(r#"{"name":"x","signatures":[]}"#),
        Err(CanonicalError::CarriesSignatures)
    );
}

#[test]
fn the_sdk_form_drops_what_the_official_sdks_drop_and_is_the_same_when_nothing_is_empty() {
    let with_auth = card();
    let sdk = sdk_payload(&with_auth);
    assert!(!sdk.contains("securityRequirements"), "{sdk}");
    assert_ne!(sdk, canonical_payload(&with_auth));
    let open = agent_card(&CardSettings {
        auth: CardAuth::None,
        ..CardSettings {
            public_url: "http://127.0.0.1:8080".into(),
            name: "n".into(),
            description: "d".into(),
            version: "1".into(),
            auth: CardAuth::None,
            served: crate::card::Served::without_push(),
            grpc_url: None,
            extended_card: false,
        }
    });
    assert_eq!(sdk_payload(&open), canonical_payload(&open));
}
