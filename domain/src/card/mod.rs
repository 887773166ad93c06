//! The agent card taskledger publishes: 1.0 shape, capabilities stated honestly.

pub mod extended;
pub mod signature;

use std::collections::BTreeMap;

use crate::wire::{
    AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentProvider, AgentSkill,
    HttpAuthSecurityScheme, SecurityRequirement, SecurityScheme, StringList,
};

/// The protocol version every interface speaks.
pub const PROTOCOL_VERSION: &str = "1.0";
/// The draft version each interface also speaks (task generations, a2aproject/A2A#1810),
/// listed after the 1.0 interfaces so a 1.0 client picks those.
pub const DRAFT_PROTOCOL_VERSION: &str = "1.1";
/// The earlier protocol line each binding also serves (A2A 0.3, translated at the edge),
/// listed last: a 0.3 client reads the 0.3 fields of the card, which name these.
pub const V03_PROTOCOL_VERSION: &str = "0.3";
/// Where the card is published (A2A 1.0 §8.2, the well-known URI).
pub const CARD_PATH: &str = "/.well-known/agent-card.json";
/// Where 0.3-era callers look for it (older a2a-sdk releases, Workato's A2A connector): the
/// same card, served alike.
pub const LEGACY_CARD_PATH: &str = "/.well-known/agent.json";
/// Path of the JSON-RPC endpoint (also answered with a trailing slash).
pub const JSONRPC_PATH: &str = "/a2a";
/// Base path of the HTTP+JSON binding (`/a2a/rest/message:send`, `/a2a/rest/tasks/{id}`, …).
pub const REST_PATH: &str = "/a2a/rest";

/// What varies between deployments.
#[derive(Debug, Clone)]
pub struct CardSettings {
    /// Base URL clients reach the server at, without a trailing slash.
    pub public_url: String,
    pub name: String,
    pub description: String,
    pub version: String,
    /// How callers authenticate (the card's security scheme).
    pub auth: CardAuth,
    /// Which capability-gated operations are served (`capabilities.streaming`,
    /// `capabilities.pushNotifications`).
    pub served: Served,
    /// `host:port` of the gRPC binding, when it is served (listed as a `GRPC` interface).
    pub grpc_url: Option<String>,
    /// Whether authenticated callers get an extended card (`capabilities.extendedAgentCard`):
    /// whenever callers authenticate.
    pub extended_card: bool,
}

/// The capability-gated operation groups a server serves (A2A §3.3.4): one it does not
/// declare answers with its specific error (UnsupportedOperation for streams,
/// PushNotificationNotSupported for push configs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Served {
    /// SendStreamingMessage and SubscribeToTask.
    pub streaming: bool,
    /// The four push-config operations and webhook deliveries.
    pub push_notifications: bool,
}

impl Served {
    /// Streams and push notifications both.
    pub const fn all() -> Self {
        Self {
            streaming: true,
            push_notifications: true,
        }
    }

    /// Streams, no push notifications.
    pub const fn without_push() -> Self {
        Self {
            streaming: true,
            push_notifications: false,
        }
    }
}

/// How callers authenticate, as the card states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardAuth {
    /// Nobody has to (the local server without tokens).
    None,
    /// `Authorization: Bearer <token>` (the local server's tokens, API Gateway's JWT authorizer).
    Bearer,
    /// `Authorization: Bearer <JWT>`, verified by the server against the configured issuer's keys.
    Jwt,
    /// AWS Signature Version 4 for the service `lambda` (a Function URL with `AuthType:
    /// AWS_IAM`): the `Authorization` header's scheme is `AWS4-HMAC-SHA256`.
    AwsSigV4,
}

/// The name of the SigV4 scheme in `securitySchemes`.
pub const SIGV4_SCHEME: &str = "awsSigV4";

/// The card's security schemes and requirements for `auth`.
fn security(auth: CardAuth) -> (BTreeMap<String, SecurityScheme>, Vec<SecurityRequirement>) {
    let (name, scheme, description) = match auth {
        CardAuth::None => return (BTreeMap::new(), Vec::new()),
        CardAuth::Bearer => ("bearer", "Bearer", "Bearer token issued by the operator"),
        CardAuth::Jwt => (
            "bearer",
            "Bearer",
            "JWT bearer token from the operator's identity provider (issuer and audience checked)",
        ),
        CardAuth::AwsSigV4 => (
            SIGV4_SCHEME,
            "AWS4-HMAC-SHA256",
            "AWS Signature Version 4 for the service lambda (the Function URL's AWS_IAM auth): \
             sign each request with credentials allowed lambda:InvokeFunctionUrl",
        ),
    };
    let schemes = BTreeMap::from([(
        name.to_string(),
        SecurityScheme::HttpAuthSecurityScheme(HttpAuthSecurityScheme {
            description: Some(description.into()),
            scheme: scheme.into(),
            bearer_format: (auth == CardAuth::Jwt).then(|| "JWT".into()),
        }),
    )]);
    let requirements = vec![SecurityRequirement {
        schemes: BTreeMap::from([(name.to_string(), StringList::default())]),
    }];
    (schemes, requirements)
}

/// JSON-RPC at `<base>/a2a` first (the binding every client has), HTTP+JSON at
/// `<base>/a2a/rest`, then gRPC when served; each for 1.0, then the 1.1 draft, then 0.3 (whose
/// HTTP+JSON paths are `/v1/…` below the same URL). The one list of what is served: the 0.3
/// fields of the card are made from its 0.3 entries.
fn interfaces(base: &str, grpc_url: Option<&str>) -> Vec<AgentInterface> {
    let mut bindings = vec![
        (format!("{base}{JSONRPC_PATH}"), "JSONRPC"),
        (format!("{base}{REST_PATH}"), "HTTP+JSON"),
    ];
    if let Some(url) = grpc_url {
        bindings.push((url.to_string(), "GRPC"));
    }
    [
        PROTOCOL_VERSION,
        DRAFT_PROTOCOL_VERSION,
        V03_PROTOCOL_VERSION,
    ]
    .into_iter()
    .flat_map(|version| {
        bindings.iter().map(move |(url, binding)| AgentInterface {
            url: url.clone(),
            protocol_binding: (*binding).into(),
            protocol_version: version.into(),
            tenant: None,
        })
    })
    .collect()
}

/// The extensions the card declares: the ones a client may activate. None is required.
pub fn extensions() -> Vec<AgentExtension> {
    vec![AgentExtension {
                uri: crate::extensions::harness::EXTENSION_URI.into(),
                description: Some(
                    "tiny-harness task extension v1: name, goal, participants and roles, plan, sub-tasks and help requests in Task.metadata".into(),
                ),
                required: false,
                params: None,
            }, AgentExtension {
                uri: crate::extensions::a2ui::EXTENSION_URI.into(),
                description: Some(
                    "A2UI 0.9.1 surfaces: emit_ui sends them as artifacts named a2ui, one application/a2ui+json data part per message".into(),
                ),
                required: false,
                params: Some(crate::extensions::a2ui::card_params()),
            }, AgentExtension {
                uri: crate::extensions::usage::USAGE_EXTENSION_URI.into(),
                description: Some("Task-lifetime token usage".into()),
                required: false,
                params: None,
            }, AgentExtension {
                uri: crate::extensions::dmp::WORK_URI.into(),
                description: Some(
                    "DMP work/v1: hand work over (skill handoff); it waits, AUTH_REQUIRED, for the owner's approval".into(),
                ),
                required: false,
                params: None,
            }, AgentExtension {
                uri: crate::extensions::dmp::GATE_URI.into(),
                description: Some(
                    "DMP gate/v1: the open gates of a task on status.message.metadata while it is AUTH_REQUIRED".into(),
                ),
                required: false,
                params: None,
            }, AgentExtension {
                uri: crate::task::ENVELOPE_URI.into(),
                description: Some(
                    "DMP envelope/v1: of it, answers (kind answer, replyTo a gate, choice) are read".into(),
                ),
                required: false,
                params: None,
            }, AgentExtension {
                uri: crate::extensions::hitl::HITL_URI.into(),
                description: Some("Human approval and user input".into()),
                required: false,
                params: None,
            }, AgentExtension {
                uri: crate::projection::log::EVENTS_URI.into(),
                description: Some(
                    "taskledger events: a task's log read in pages (ListTaskEvents; GET /tasks/{id}/events), GetTask asOfGeneration, SubscribeToTask after".into(),
                ),
                required: false,
                params: Some(crate::projection::log::card_params()),
            }]
}

/// The card advertising an upstream agent's skills and modes instead of the built-in agent's
/// (ADR 034); its interfaces, extensions and security stay ours. The task envelope's media
/// type stays accepted: the envelope is taskledger's, whoever works on the task.
pub fn advertise(card: &mut AgentCard, a: &crate::agent::upstream::Advertised) {
    if !a.skills.is_empty() {
        card.skills = a.skills.clone();
    }
    if !a.input_modes.is_empty() {
        card.default_input_modes = crate::task::intake::input_modes(&a.input_modes);
    }
    if !a.output_modes.is_empty() {
        card.default_output_modes = a.output_modes.clone();
    }
}

pub fn agent_card(s: &CardSettings) -> AgentCard {
    let base = s.public_url.trim_end_matches('/');
    let (security_schemes, security_requirements) = security(s.auth);
    AgentCard {
        name: s.name.clone(),
        description: s.description.clone(),
        supported_interfaces: interfaces(base, s.grpc_url.as_deref()),
        provider: Some(AgentProvider {
            organization: "taskledger".into(),
            url: "https://github.com/taskledger/taskledger".into(),
        }),
        version: s.version.clone(),
        documentation_url: None,
        capabilities: AgentCapabilities {
            streaming: Some(s.served.streaming),
            push_notifications: Some(s.served.push_notifications),
            extensions: extensions(),
            extended_agent_card: Some(s.extended_card),
        },
        security_schemes,
        security_requirements,
        default_input_modes: crate::task::intake::INPUT_MODES
            .iter()
            .map(|m| m.to_string())
            .collect(),
        default_output_modes: vec![
            "text/plain".into(),
            "application/json".into(),
            crate::extensions::a2ui::MEDIA_TYPE.into(),
        ],
        skills: vec![AgentSkill {
            id: "tasks".into(),
            name: "Durable tasks".into(),
            description:
                "Accepts messages, keeps every task as an event log and answers with its artifacts."
                    .into(),
            tags: vec!["tasks".into(), "event-sourcing".into()],
            examples: vec!["Summarise what I sent you".into()],
            input_modes: Vec::new(),
            output_modes: Vec::new(),
            security_requirements: Vec::new(),
        }, AgentSkill {
            id: "handoff".into(),
            name: "Hand work over".into(),
            description: "DMP work/v1: a message with metadata[work/v1] {skill: handoff, title, acceptance, writes, priority, labels} (extension active) opens a draft that waits, AUTH_REQUIRED, for the owner to approve or decline it."
                .into(),
            tags: vec!["dmp".into(), "handoff".into()],
            examples: Vec::new(),
            input_modes: Vec::new(),
            output_modes: Vec::new(),
            security_requirements: Vec::new(),
        }, AgentSkill {
            id: "status".into(),
            name: "State of my handoffs".into(),
            description: "DMP work/v1: a message with metadata[work/v1] {skill: status, task?} is answered at once with the work state of that handoff, or of the caller's newest."
                .into(),
            tags: vec!["dmp".into(), "status".into()],
            examples: Vec::new(),
            input_modes: Vec::new(),
            output_modes: Vec::new(),
            security_requirements: Vec::new(),
        }],
        signatures: Vec::new(),
        icon_url: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_card_has_the_required_members_and_no_legacy_ones() {
        let card = agent_card(&CardSettings {
            public_url: "http://127.0.0.1:8080/".into(),
            name: "n".into(),
            description: "d".into(),
            version: "1".into(),
            auth: CardAuth::Bearer,
            served: Served::without_push(),
            grpc_url: None,
            extended_card: false,
        });
        let v = serde_json::to_value(&card).unwrap();
        for k in [
            "name",
            "description",
            "supportedInterfaces",
            "version",
            "capabilities",
            "defaultInputModes",
            "defaultOutputModes",
            "skills",
        ] {
            assert!(v.get(k).is_some(), "missing {k}");
        }
        for k in [
            "url",
            "protocolVersion",
            "preferredTransport",
            "additionalInterfaces",
        ] {
            assert!(v.get(k).is_none(), "legacy {k}");
        }
        assert_eq!(
            v["supportedInterfaces"][0]["url"],
            "http://127.0.0.1:8080/a2a"
        );
        assert_eq!(
            v["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
            "Bearer"
        );
        let a2ui = v["capabilities"]["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["uri"] == crate::extensions::a2ui::EXTENSION_URI)
            .expect("the A2UI extension is declared");
        assert_eq!(a2ui["params"]["acceptsInlineCatalogs"], false);
        assert!(v["defaultOutputModes"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!(crate::extensions::a2ui::MEDIA_TYPE)));
    }

    #[test]
    fn the_capabilities_say_which_gated_operations_are_served() {
        let caps = |served| {
            serde_json::to_value(
                agent_card(&CardSettings {
                    public_url: "https://a2a.example.com".into(),
                    name: "n".into(),
                    description: "d".into(),
                    version: "1".into(),
                    auth: CardAuth::None,
                    served,
                    grpc_url: None,
                    extended_card: false,
                })
                .capabilities,
            )
            .unwrap()
        };
        let all = caps(Served::all());
        assert_eq!(all["streaming"], true);
        assert_eq!(all["pushNotifications"], true);
        let none = caps(Served {
            streaming: false,
            push_notifications: false,
        });
        // Declared false, not left out: a client reads an absent capability as unknown.
        assert_eq!(none["streaming"], false);
        assert_eq!(none["pushNotifications"], false);
        assert_eq!(none["extendedAgentCard"], false);
    }

    #[test]
    fn a_grpc_interface_is_listed_only_when_served() {
        let mut settings = CardSettings {
            public_url: "https://a2a.example.com".into(),
            name: "n".into(),
            description: "d".into(),
            version: "1".into(),
            auth: CardAuth::None,
            served: Served::without_push(),
            grpc_url: None,
            extended_card: false,
        };
        let bindings = |s: &CardSettings| {
            agent_card(s)
                .supported_interfaces
                .into_iter()
                .map(|i| (i.protocol_binding, i.url, i.protocol_version))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            bindings(&settings)
                .iter()
                .map(|b| format!("{} {}", b.0, b.2))
                .collect::<Vec<_>>(),
            [
                "JSONRPC 1.0",
                "HTTP+JSON 1.0",
                "JSONRPC 1.1",
                "HTTP+JSON 1.1",
                "JSONRPC 0.3",
                "HTTP+JSON 0.3"
            ]
        );
        settings.grpc_url = Some("a2a.example.com:50051".into());
        assert_eq!(
            bindings(&settings)[..3],
            vec![
                (
                    "JSONRPC".to_string(),
                    "https://a2a.example.com/a2a".to_string(),
                    "1.0".to_string()
                ),
                (
                    "HTTP+JSON".to_string(),
                    "https://a2a.example.com/a2a/rest".to_string(),
                    "1.0".to_string()
                ),
                (
                    "GRPC".to_string(),
                    "a2a.example.com:50051".to_string(),
                    "1.0".to_string()
                ),
            ]
        );
    }

    #[test]
    fn the_security_scheme_follows_how_callers_authenticate() {
        let card = |auth| {
            serde_json::to_value(agent_card(&CardSettings {
                public_url: "https://abc.lambda-url.eu-west-1.on.aws".into(),
                name: "n".into(),
                description: "d".into(),
                version: "1".into(),
                auth,
                served: Served::without_push(),
                grpc_url: None,
                extended_card: false,
            }))
            .unwrap()
        };
        let v = card(CardAuth::AwsSigV4);
        assert_eq!(
            v["securitySchemes"][SIGV4_SCHEME]["httpAuthSecurityScheme"]["scheme"],
            "AWS4-HMAC-SHA256"
        );
        assert!(v["securitySchemes"].get("bearer").is_none());
        assert_eq!(
            v["securityRequirements"][0]["schemes"][SIGV4_SCHEME],
            serde_json::json!({"list": []})
        );
        let v = card(CardAuth::None);
        assert!(v.get("securitySchemes").is_none());
        assert!(v.get("securityRequirements").is_none());
    }
}
