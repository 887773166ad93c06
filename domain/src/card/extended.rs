//! The extended agent card (GetExtendedAgentCard): the public card, for one authenticated
//! caller, with the skills only a signed-in principal uses and the limits that apply to it.

use serde_json::{json, Value};

use crate::ids::Principal;
use crate::wire::{AgentCard, AgentExtension, AgentSkill, Metadata};

/// The card extension whose `params` state the caller and its limits.
pub const LIMITS_URI: &str = "urn:taskledger:ext:caller-limits:v1";

/// The limits a caller works within (none: not limited by this server).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallerLimits {
    /// Sustained requests a second, and the burst above it.
    pub requests_per_second: Option<(f64, u32)>,
    /// New tasks a minute.
    pub tasks_per_minute: Option<u32>,
    /// Streams open at once.
    pub open_streams: Option<usize>,
}

/// The extended card for `caller`: `public` plus the shared-tasks skill and the caller's limits.
pub fn extended_card(
    mut public: AgentCard,
    caller: &Principal,
    limits: &CallerLimits,
) -> AgentCard {
    // The public card's signatures do not cover what is added here.
    public.signatures.clear();
    public.skills.push(AgentSkill {
        id: "shared-tasks".into(),
        name: "Tasks shared with you".into(),
        description: format!(
            "Tasks whose participants name you ({caller}) are yours to see and work on as your \
             role allows: ListTasks with scope \"shared\" lists them; watchers read, assignees \
             and reporters send, admins manage participants, decide gates and cancel."
        ),
        tags: vec!["tasks".into(), "sharing".into()],
        examples: vec!["What is waiting for my answer?".into()],
        input_modes: Vec::new(),
        output_modes: Vec::new(),
        security_requirements: Vec::new(),
    });
    let mut params = Metadata::new();
    params.insert("principal".into(), json!(caller.to_string()));
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            params.insert(k.into(), v);
        }
    };
    put(
        "requestsPerSecond",
        limits.requests_per_second.map(|(r, _)| json!(r)),
    );
    put(
        "requestBurst",
        limits.requests_per_second.map(|(_, b)| json!(b)),
    );
    put("tasksPerMinute", limits.tasks_per_minute.map(|n| json!(n)));
    put("openStreams", limits.open_streams.map(|n| json!(n)));
    put(
        "partsPerMessage",
        Some(json!(crate::task::intake::MAX_PARTS_PER_MESSAGE)),
    );
    put(
        "historyMessages",
        Some(json!(crate::task::MAX_HISTORY_MESSAGES)),
    );
    put("historyBytes", Some(json!(crate::task::MAX_HISTORY_BYTES)));
    put(
        "defaultHistoryLength",
        Some(json!(crate::ids::DEFAULT_HISTORY_LENGTH)),
    );
    put(
        "maxHistoryLength",
        Some(json!(crate::ids::MAX_HISTORY_LENGTH)),
    );
    put(
        "participantsPerTask",
        Some(json!(crate::extensions::harness::MAX_PARTICIPANTS)),
    );
    put(
        "pushConfigsPerPrincipal",
        Some(json!(crate::push::MAX_PUSH_CONFIGS_PER_PRINCIPAL)),
    );
    put("pageSizeMax", Some(json!(crate::ids::PAGE_SIZE_MAX)));
    public.capabilities.extensions.push(AgentExtension {
        uri: LIMITS_URI.into(),
        description: Some("Who you are to this server and the limits you work within".into()),
        required: false,
        params: Some(params),
    });
    public
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::card::{agent_card, CardAuth, CardSettings};

    #[test]
    fn the_extended_card_adds_the_callers_skill_and_limits_to_the_public_card() {
        let public = agent_card(&CardSettings {
            public_url: "http://127.0.0.1:8080".into(),
            name: "n".into(),
            description: "d".into(),
            version: "1".into(),
            auth: CardAuth::Bearer,
            served: crate::card::Served::all(),
            grpc_url: None,
            extended_card: true,
        });
        let bob = Principal::new("acme", "bob").unwrap();
        let limits = CallerLimits {
            requests_per_second: Some((5.0, 10)),
            tasks_per_minute: None,
            open_streams: Some(4),
        };
        let card = extended_card(public.clone(), &bob, &limits);
        assert_eq!(card.skills.len(), public.skills.len() + 1);
        assert!(card.skills.last().unwrap().description.contains("acme/bob"));
        let ext = card.capabilities.extensions.last().unwrap();
        assert_eq!(ext.uri, LIMITS_URI);
        let p = ext.params.as_ref().unwrap();
        assert_eq!(p["principal"], "acme/bob");
        assert_eq!(p["requestsPerSecond"], 5.0);
        assert_eq!(p["requestBurst"], 10);
        assert_eq!(p["openStreams"], 4);
        assert!(p.get("tasksPerMinute").is_none(), "no limit: not stated");
        assert_eq!(
            p["partsPerMessage"],
            crate::task::intake::MAX_PARTS_PER_MESSAGE
        );
        // everything else is the public card's
        assert_eq!(card.name, public.name);
        assert_eq!(card.supported_interfaces, public.supported_interfaces);
        assert_eq!(card.capabilities.extended_agent_card, Some(true));
    }
}
