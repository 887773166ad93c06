//! An upstream A2A agent as it describes itself (ADR 034): its card read once, whichever
//! version wrote it — 1.0 (`supportedInterfaces`) or 0.3 (`url`, `preferredTransport`,
//! `additionalInterfaces`) — into the one interface we speak to it on (JSON-RPC, 1.0 preferred
//! over 0.3), whether it streams, and what our own card advertises of it (skills and modes).

use serde_json::Value;

use crate::wire::AgentSkill;

/// The largest upstream card read.
pub const MAX_UPSTREAM_CARD_BYTES: usize = 256 * 1024;
/// Skills of an upstream our card advertises at most.
pub const MAX_ADVERTISED_SKILLS: usize = 64;
/// Input or output modes of an upstream our card advertises at most.
pub const MAX_ADVERTISED_MODES: usize = 32;
/// Where a card is looked for, in order (the second is the 0.2 path 0.3 servers still serve).
pub const CARD_PATHS: [&str; 2] = ["/.well-known/agent-card.json", "/.well-known/agent.json"];

/// The protocol version an interface speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamProtocol {
    /// A2A 1.x: PascalCase methods, ProtoJSON, `A2A-Version: 1.0`.
    V1,
    /// A2A 0.3: `message/send`, `kind` discriminators, lowercase states.
    V03,
}

impl UpstreamProtocol {
    pub fn label(self) -> &'static str {
        match self {
            Self::V1 => "1.0",
            Self::V03 => "0.3",
        }
    }
}

/// The interface taskledger speaks to the upstream on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamInterface {
    pub url: String,
    pub protocol: UpstreamProtocol,
}

impl UpstreamInterface {
    /// How a task records the interface it was linked through.
    pub fn describe(&self) -> String {
        format!("JSONRPC {} {}", self.protocol.label(), self.url)
    }
}

/// What our card advertises of the upstream.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Advertised {
    pub skills: Vec<AgentSkill>,
    pub input_modes: Vec<String>,
    pub output_modes: Vec<String>,
}

/// An upstream's card, read.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamCard {
    pub name: String,
    pub interface: UpstreamInterface,
    /// Every JSON-RPC interface the card offers: a task linked through one the card no longer
    /// offers cannot go on.
    pub offered: Vec<UpstreamInterface>,
    pub streaming: bool,
    /// The capabilities the card declares, as read (unreadable ones: none declared).
    pub capabilities: crate::wire::AgentCapabilities,
    pub advertised: Advertised,
}

impl UpstreamCard {
    /// The interface a task was linked through (`UpstreamInterface::describe`), if the card
    /// still offers it.
    pub fn still_offers(&self, interface: &str) -> Option<&UpstreamInterface> {
        self.offered.iter().find(|o| o.describe() == interface)
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

fn http_url(url: &str) -> Result<String, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("interface URL {url:.200}: {e}"))?;
    match parsed.scheme() {
        "http" | "https" if parsed.host_str().is_some() => Ok(url.to_string()),
        other => Err(format!(
            "interface URL {url:.200}: scheme {other} (only http and https are spoken)"
        )),
    }
}

fn protocol_of(version: Option<&str>) -> Option<UpstreamProtocol> {
    match version.map(str::trim) {
        Some(v) if v.starts_with("1.") || v == "1" => Some(UpstreamProtocol::V1),
        Some(v) if v.starts_with("0.3") => Some(UpstreamProtocol::V03),
        _ => None,
    }
}

/// The JSON-RPC interfaces a card offers, in its order of preference.
fn interfaces(card: &Value) -> Result<Vec<UpstreamInterface>, String> {
    let mut out = Vec::new();
    if let Some(list) = card.get("supportedInterfaces").and_then(Value::as_array) {
        for i in list {
            let binding = str_of(i, "protocolBinding").unwrap_or_default();
            let Some(protocol) = protocol_of(str_of(i, "protocolVersion")) else {
                continue;
            };
            if binding.eq_ignore_ascii_case("JSONRPC") {
                if let Some(url) = str_of(i, "url") {
                    out.push(UpstreamInterface {
                        url: http_url(url)?,
                        protocol,
                    });
                }
            }
        }
    }
    // 0.3: the main `url` on the preferred transport (JSON-RPC by default), then the others.
    let v03 = protocol_of(str_of(card, "protocolVersion")).unwrap_or(UpstreamProtocol::V03);
    if v03 == UpstreamProtocol::V03 {
        let preferred = str_of(card, "preferredTransport").unwrap_or("JSONRPC");
        if let (Some(url), true) = (
            str_of(card, "url"),
            preferred.eq_ignore_ascii_case("JSONRPC"),
        ) {
            out.push(UpstreamInterface {
                url: http_url(url)?,
                protocol: UpstreamProtocol::V03,
            });
        }
        for i in card
            .get("additionalInterfaces")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if str_of(i, "transport").is_some_and(|t| t.eq_ignore_ascii_case("JSONRPC")) {
                if let Some(url) = str_of(i, "url") {
                    out.push(UpstreamInterface {
                        url: http_url(url)?,
                        protocol: UpstreamProtocol::V03,
                    });
                }
            }
        }
    }
    out.sort_by_key(|i| i.protocol != UpstreamProtocol::V1);
    out.dedup();
    Ok(out)
}

fn modes(card: &Value, key: &str) -> Vec<String> {
    card.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|m| !m.is_empty() && m.len() <= 255)
        .take(MAX_ADVERTISED_MODES)
        .map(str::to_string)
        .collect()
}

/// Reads an upstream's card (either version); why not, if it cannot be used.
pub fn read_card(card: &Value) -> Result<UpstreamCard, String> {
    if !card.is_object() {
        return Err("the agent card is not a JSON object".into());
    }
    let offered = interfaces(card)?;
    let Some(interface) = offered.first().cloned() else {
        return Err(
            "the agent card offers no JSON-RPC interface of A2A 1.x or 0.3 (the only binding \
             taskledger speaks to an upstream)"
                .into(),
        );
    };
    let skills = card
        .get("skills")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| serde_json::from_value::<AgentSkill>(s.clone()).ok())
        .filter(|s| !s.id.is_empty() && !s.name.is_empty())
        .take(MAX_ADVERTISED_SKILLS)
        .collect();
    Ok(UpstreamCard {
        name: str_of(card, "name")
            .unwrap_or("upstream")
            .chars()
            .take(200)
            .collect(),
        interface,
        offered,
        streaming: card
            .pointer("/capabilities/streaming")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        capabilities: card
            .get("capabilities")
            .and_then(|c| serde_json::from_value(c.clone()).ok())
            .unwrap_or_default(),
        advertised: Advertised {
            skills,
            input_modes: modes(card, "defaultInputModes"),
            output_modes: modes(card, "defaultOutputModes"),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_1_0_card_is_spoken_to_on_its_json_rpc_interface() {
        let card = read_card(&json!({
            "name": "a", "capabilities": {"streaming": true},
            "supportedInterfaces": [
                {"url": "http://h:1/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
                {"url": "http://h:1/v03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
                {"url": "http://h:1/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "skills": [{"id": "s", "name": "S", "description": "d", "tags": []}],
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"]
        }))
        .unwrap();
        assert_eq!(card.interface.url, "http://h:1/");
        assert_eq!(card.interface.protocol, UpstreamProtocol::V1);
        assert!(card.streaming);
        assert_eq!(card.advertised.skills.len(), 1);
        assert!(card.still_offers("JSONRPC 0.3 http://h:1/v03").is_some());
        assert!(card.still_offers("JSONRPC 1.0 http://h:2/").is_none());
    }

    #[test]
    fn a_0_3_card_is_spoken_to_on_its_url_or_a_json_rpc_additional_interface() {
        let card =
            read_card(&json!({"name": "b", "url": "http://h:2/", "protocolVersion": "0.3.0"}))
                .unwrap();
        assert_eq!(card.interface.protocol, UpstreamProtocol::V03);
        assert!(!card.streaming);
        let card = read_card(
            &json!({"name": "b", "url": "http://h:2/rest", "preferredTransport": "HTTP+JSON",
            "additionalInterfaces": [{"url": "http://h:2/rpc", "transport": "JSONRPC"}]}),
        )
        .unwrap();
        assert_eq!(card.interface.url, "http://h:2/rpc");
    }

    #[test]
    fn a_card_without_a_json_rpc_interface_or_with_another_scheme_is_refused() {
        let none = read_card(&json!({"name": "c", "supportedInterfaces": [
            {"url": "h:1", "protocolBinding": "GRPC", "protocolVersion": "1.0"}]}));
        assert!(none.unwrap_err().contains("no JSON-RPC interface"));
        let file = read_card(&json!({"url": "file:///etc/passwd", "protocolVersion": "0.3.0"}));
        assert!(file.unwrap_err().contains("only http and https"));
        assert!(read_card(&json!([1])).is_err());
    }

    #[test]
    fn advertised_skills_are_bounded_at_their_limit() {
        let skills = |n: usize| {
            (0..n)
                .map(
                    |i| json!({"id": format!("s{i}"), "name": "n", "description": "d", "tags": []}),
                )
                .collect::<Vec<_>>()
        };
        let card = |n| json!({"url": "http://h/", "protocolVersion": "0.3.0", "skills": skills(n)});
        let at = read_card(&card(MAX_ADVERTISED_SKILLS)).unwrap();
        assert_eq!(at.advertised.skills.len(), MAX_ADVERTISED_SKILLS);
        let past = read_card(&card(MAX_ADVERTISED_SKILLS + 1)).unwrap();
        assert_eq!(past.advertised.skills.len(), MAX_ADVERTISED_SKILLS);
    }
}
