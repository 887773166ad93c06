//! The agent card for 0.3 clients: the 0.3 fields merged into the one public card (what a 0.3
//! client reads first: `url`, `preferredTransport`, `protocolVersion`, `additionalInterfaces`,
//! flat `securitySchemes` and `security`, …) without changing any 1.0 field, and the pure 0.3
//! card the 0.3 extended-card calls answer with. Both are projections of the 1.0 card, whose
//! `supportedInterfaces` (`domain::card::interfaces`) is the one list of what is served: the
//! 0.3 fields name only its `0.3` interfaces.

use serde_json::{json, Map, Value};
use taskledger_domain::card::signature::{jcs, without_empty};
use taskledger_domain::card::V03_PROTOCOL_VERSION;
use taskledger_domain::wire::AgentCard;

/// What 0.3 cards say their version is.
pub const CARD_PROTOCOL_VERSION: &str = "0.3.0";

/// A 1.0 security scheme (`{"httpAuthSecurityScheme": {…}}`) in 0.3's flat OpenAPI form.
fn scheme_out(s: &Value) -> Value {
    let Some((kind, body)) = s.as_object().and_then(|o| o.iter().next()) else {
        return s.clone();
    };
    let mut out = body.as_object().cloned().unwrap_or_default();
    let kind = match kind.as_str() {
        "httpAuthSecurityScheme" => "http",
        "apiKeySecurityScheme" => {
            if let Some(l) = out.remove("location") {
                out.insert("in".into(), l);
            }
            "apiKey"
        }
        "oauth2SecurityScheme" => "oauth2",
        "openIdConnectSecurityScheme" => "openIdConnect",
        "mtlsSecurityScheme" => "mutualTLS",
        _ => return s.clone(),
    };
    out.insert("type".into(), kind.into());
    Value::Object(out)
}

/// 1.0 `securityRequirements` (`[{schemes: {name: {list: […]}}}]`) as 0.3 `security`
/// (`[{name: […]}]`).
fn security_out(reqs: Option<&Value>) -> Option<Value> {
    let reqs = reqs?.as_array()?;
    Some(Value::Array(
        reqs.iter()
            .map(|r| {
                let schemes = r.get("schemes").and_then(Value::as_object);
                Value::Object(
                    schemes
                        .into_iter()
                        .flatten()
                        .map(|(name, l)| {
                            (name.clone(), l.get("list").cloned().unwrap_or(json!([])))
                        })
                        .collect(),
                )
            })
            .collect(),
    ))
}

/// The pure 0.3 card of a 1.0 card (its ProtoJSON), naming its 0.3 interfaces only.
pub fn projection(card: &Value) -> Value {
    let get = |k: &str| card.get(k).cloned();
    let v03: Vec<&Value> = card
        .get("supportedInterfaces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|i| i.get("protocolVersion").and_then(Value::as_str) == Some(V03_PROTOCOL_VERSION))
        .collect();
    let mut out = Map::new();
    out.insert("protocolVersion".into(), CARD_PROTOCOL_VERSION.into());
    for k in [
        "name",
        "description",
        "version",
        "provider",
        "iconUrl",
        "documentationUrl",
    ] {
        if let Some(v) = get(k) {
            out.insert(k.into(), v);
        }
    }
    if let Some(primary) = v03.first() {
        out.insert(
            "url".into(),
            primary.get("url").cloned().unwrap_or_default(),
        );
        out.insert(
            "preferredTransport".into(),
            primary.get("protocolBinding").cloned().unwrap_or_default(),
        );
    }
    // The 0.3 spec lists every interface here, the preferred one included.
    out.insert(
        "additionalInterfaces".into(),
        v03.iter()
            .map(|i| json!({"url": i.get("url"), "transport": i.get("protocolBinding")}))
            .collect(),
    );
    let caps = card.get("capabilities").cloned().unwrap_or(json!({}));
    let mut capabilities = Map::new();
    for k in ["streaming", "pushNotifications", "extensions"] {
        if let Some(v) = caps.get(k) {
            capabilities.insert(k.into(), v.clone());
        }
    }
    out.insert("capabilities".into(), Value::Object(capabilities));
    if caps.get("extendedAgentCard") == Some(&Value::Bool(true)) {
        out.insert("supportsAuthenticatedExtendedCard".into(), true.into());
    }
    if let Some(Value::Object(schemes)) = card.get("securitySchemes") {
        out.insert(
            "securitySchemes".into(),
            Value::Object(
                schemes
                    .iter()
                    .map(|(k, s)| (k.clone(), scheme_out(s)))
                    .collect(),
            ),
        );
    }
    if let Some(s) = security_out(card.get("securityRequirements")) {
        out.insert("security".into(), s);
    }
    for k in ["defaultInputModes", "defaultOutputModes"] {
        out.insert(k.into(), get(k).unwrap_or(json!([])));
    }
    let skills: Vec<Value> = card
        .get("skills")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| {
            let mut skill = s.as_object().cloned().unwrap_or_default();
            skill.entry("tags").or_insert(json!([]));
            if let Some(sec) = security_out(skill.remove("securityRequirements").as_ref()) {
                skill.insert("security".into(), sec);
            }
            Value::Object(skill)
        })
        .collect();
    out.insert("skills".into(), Value::Array(skills));
    if let Some(sig) = get("signatures") {
        out.insert("signatures".into(), sig);
    }
    Value::Object(out)
}

/// What a2a-sdk 0.3 verifies a card's signatures over (`canonicalize_agent_card`): the merged
/// card read as its 0.3 model — 0.3 members only, those equal to the model's defaults left out
/// (`protocolVersion` 0.3.0, `preferredTransport` JSONRPC, each scheme's `type`), empty values
/// dropped — sorted and compact. None of the 1.0 members, so a signature over the 1.0 card can
/// never verify there: `crate::card` signs this form too. (@a2a-js/sdk 0.3 verifies nothing.)
pub fn sdk_payload(card: &AgentCard) -> String {
    let m = merged(card);
    let pick = |v: Option<&Value>, keys: &[&str]| -> Option<Value> {
        let o = v?.as_object()?;
        Some(Value::Object(
            keys.iter()
                .filter_map(|k| o.get(*k).map(|x| (k.to_string(), x.clone())))
                .collect(),
        ))
    };
    let picked_list = |v: Option<&Value>, keys: &[&str]| -> Option<Value> {
        Some(Value::Array(
            v?.as_array()?
                .iter()
                .filter_map(|x| pick(Some(x), keys))
                .collect(),
        ))
    };
    let mut out = Map::new();
    for k in [
        "defaultInputModes",
        "defaultOutputModes",
        "description",
        "documentationUrl",
        "iconUrl",
        "name",
        "security",
        "supportsAuthenticatedExtendedCard",
        "url",
        "version",
    ] {
        if let Some(v) = m.get(k) {
            out.insert(k.into(), v.clone());
        }
    }
    for (k, default) in [
        ("protocolVersion", CARD_PROTOCOL_VERSION),
        ("preferredTransport", "JSONRPC"),
    ] {
        if let Some(v) = m.get(k).filter(|v| v.as_str() != Some(default)) {
            out.insert(k.into(), v.clone());
        }
    }
    if let Some(v) = picked_list(m.get("additionalInterfaces"), &["transport", "url"]) {
        out.insert("additionalInterfaces".into(), v);
    }
    if let Some(v) = pick(m.get("provider"), &["organization", "url"]) {
        out.insert("provider".into(), v);
    }
    if let Some(mut caps) = pick(
        m.get("capabilities"),
        &[
            "extensions",
            "pushNotifications",
            "stateTransitionHistory",
            "streaming",
        ],
    ) {
        if let Some(ext) = picked_list(
            caps.get("extensions"),
            &["description", "params", "required", "uri"],
        ) {
            caps["extensions"] = ext;
        }
        out.insert("capabilities".into(), caps);
    }
    if let Some(Value::Object(schemes)) = m.get("securitySchemes") {
        let flat = schemes.iter().map(|(name, s)| {
            let keys: &[&str] = match s.get("type").and_then(Value::as_str) {
                Some("http") => &["bearerFormat", "description", "scheme"],
                Some("apiKey") => &["description", "in", "name"],
                Some("oauth2") => &["description", "flows", "oauth2MetadataUrl"],
                Some("openIdConnect") => &["description", "openIdConnectUrl"],
                _ => &["description"],
            };
            (name.clone(), pick(Some(s), keys).unwrap_or_default())
        });
        out.insert("securitySchemes".into(), Value::Object(flat.collect()));
    }
    let skill_keys = [
        "description",
        "examples",
        "id",
        "inputModes",
        "name",
        "outputModes",
        "security",
        "tags",
    ];
    if let Some(v) = picked_list(m.get("skills"), &skill_keys) {
        out.insert("skills".into(), v);
    }
    without_empty(Value::Object(out)).map_or_else(|| "{}".to_string(), |v| jcs(&v))
}

/// The pure 0.3 card of `card` (the 0.3 extended-card calls).
pub fn pure(card: &AgentCard) -> Value {
    projection(&serde_json::to_value(card).unwrap_or_default())
}

/// Adds what `from` has and `into` lacks, recursing into objects and, element by element,
/// into lists; never replaces a value `into` has.
fn merge(into: &mut Value, from: &Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(k) {
                    None => {
                        a.insert(k.clone(), v.clone());
                    }
                    Some(existing) => merge(existing, v),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (x, y) in a.iter_mut().zip(b) {
                if x.is_object() && y.is_object() {
                    merge(x, y);
                }
            }
        }
        _ => {}
    }
}

/// The public card as served: the 1.0 card (signed as it is: the signature covers the 1.0
/// fields, which every verifier reads back) with the 0.3 fields added beside them.
pub fn merged(card: &AgentCard) -> Value {
    let mut v = serde_json::to_value(card).unwrap_or_default();
    let projection = projection(&v);
    merge(&mut v, &projection);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskledger_domain::card::{agent_card, CardAuth, CardSettings};

    fn card(auth: CardAuth, grpc: bool) -> AgentCard {
        agent_card(&CardSettings {
            public_url: "http://h:1".into(),
            name: "n".into(),
            description: "d".into(),
            version: "1".into(),
            auth,
            served: taskledger_domain::card::Served::all(),
            grpc_url: grpc.then(|| "h:2".into()),
            extended_card: auth != CardAuth::None,
        })
    }

    #[test]
    fn the_merged_card_adds_the_0_3_fields_and_changes_no_1_0_field() {
        let c = card(CardAuth::Bearer, true);
        let one = serde_json::to_value(&c).unwrap();
        let m = merged(&c);
        assert_eq!(m["url"], "http://h:1/a2a");
        assert_eq!(m["preferredTransport"], "JSONRPC");
        assert_eq!(m["protocolVersion"], "0.3.0");
        assert_eq!(
            m["additionalInterfaces"],
            json!([{"url": "http://h:1/a2a", "transport": "JSONRPC"},
                   {"url": "http://h:1/a2a/rest", "transport": "HTTP+JSON"},
                   {"url": "h:2", "transport": "GRPC"}])
        );
        assert_eq!(m["supportsAuthenticatedExtendedCard"], true);
        assert_eq!(m["securitySchemes"]["bearer"]["type"], "http");
        assert_eq!(m["securitySchemes"]["bearer"]["scheme"], "Bearer");
        assert!(m["securitySchemes"]["bearer"]
            .get("httpAuthSecurityScheme")
            .is_some());
        assert_eq!(m["security"], json!([{"bearer": []}]));
        // every 1.0 member is as it was
        for (k, v) in one.as_object().unwrap() {
            let mut kept = m[k].clone();
            if k == "securitySchemes" {
                kept["bearer"]
                    .as_object_mut()
                    .unwrap()
                    .retain(|k, _| k == "httpAuthSecurityScheme");
            }
            if k == "capabilities" {
                assert_eq!(kept, *v, "{k}");
                continue;
            }
            if k != "skills" {
                assert_eq!(kept, *v, "{k}");
            }
        }
        // a card without credentials says nothing of an extended card
        let open = merged(&card(CardAuth::None, false));
        assert!(open.get("supportsAuthenticatedExtendedCard").is_none());
        assert!(open.get("security").is_none() || open["security"] == json!([]));
    }

    #[test]
    fn the_pure_0_3_card_has_every_field_0_3_requires() {
        let p = pure(&card(CardAuth::Jwt, false));
        for k in [
            "protocolVersion",
            "name",
            "description",
            "url",
            "version",
            "capabilities",
            "defaultInputModes",
            "defaultOutputModes",
            "skills",
        ] {
            assert!(p.get(k).is_some(), "{k}");
        }
        assert!(p.get("supportedInterfaces").is_none());
        assert!(p["skills"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s.get("tags").is_some()));
        assert_eq!(p["securitySchemes"]["bearer"]["bearerFormat"], "JWT");
    }
}
