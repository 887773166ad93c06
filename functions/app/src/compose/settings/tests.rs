//! Given flags (the environment is the same arguments by other names: clap reads each `env`
//! when its flag is absent), when the settings are read, then each value and default is the
//! one written on its field, and a bad one names its flag.

use clap::Parser;

use super::*;
use crate::compose::AgentChoice;

#[derive(Debug, Parser)]
#[command(no_binary_name = true)]
struct Given {
    #[command(flatten)]
    settings: Settings,
    #[command(flatten)]
    lambda: LambdaSettings,
}

fn given(args: &[&str]) -> Result<Given, clap::Error> {
    let command = <Given as clap::CommandFactory>::command().mut_args(|a| a.env(None::<&str>));
    let matches = command.try_get_matches_from(args)?;
    <Given as clap::FromArgMatches>::from_arg_matches(&matches)
}

#[test]
fn every_default_is_the_one_written_on_its_field() {
    let s = Settings::defaults();
    assert_eq!(s.table_prefix, DEFAULT_TABLE_PREFIX);
    assert_eq!(s.llm_model, DEFAULT_LLM_MODEL);
    assert_eq!(s.index_shards, 1);
    assert_eq!(s.agent_follow_secs, DEFAULT_AGENT_FOLLOW_SECS);
    assert!(s.push_enabled);
    assert!(s.streaming_enabled);
    assert!(!s.conformance_scenarios);
    assert_eq!(
        s.stream_keep_alive(),
        Duration::from_millis(DEFAULT_STREAM_KEEP_ALIVE_MS)
    );
    assert_eq!(s.stream_poll(), crate::service::DEFAULT_STREAM_POLL);
    assert_eq!(
        s.stall_deadline().unwrap(),
        Some(crate::runners::DEFAULT_STALL_DEADLINE_SECS)
    );
    assert!(!s.retention().unwrap().is_forever());
    let l = given(&[]).unwrap().lambda;
    assert_eq!(l.auth, ApiAuth::Gateway);
    assert!(!l.response_streaming);
    assert_eq!(l.turn_margin(), crate::agent::DEFAULT_TURN_MARGIN);
    assert_eq!(
        l.metrics_namespace,
        crate::telemetry::emf::DEFAULT_NAMESPACE
    );
}

#[test]
fn the_defaults_that_differ_by_deployment_differ_in_one_place() {
    let s = Settings::defaults();
    assert_eq!(
        s.blocking_timeout(Deployment::Local),
        Duration::from_secs(LOCAL_BLOCKING_TIMEOUT_SECS)
    );
    assert_eq!(
        s.blocking_timeout(Deployment::Lambda),
        Duration::from_secs(LAMBDA_BLOCKING_TIMEOUT_SECS)
    );
    // Loopback webhooks for development locally, none on AWS; an empty list refuses it locally.
    let loopback: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    assert!(s
        .address_policy(Deployment::Local)
        .unwrap()
        .permits(loopback)
        .is_ok());
    assert!(s
        .address_policy(Deployment::Lambda)
        .unwrap()
        .permits(loopback)
        .is_err());
    let refused = given(&["--push-allowlist", ""]).unwrap().settings;
    assert!(refused
        .address_policy(Deployment::Local)
        .unwrap()
        .permits(loopback)
        .is_err());
    let set = given(&["--blocking-timeout-secs", "7"]).unwrap().settings;
    assert_eq!(
        set.blocking_timeout(Deployment::Lambda),
        Duration::from_secs(7)
    );
}

#[test]
fn index_shards_are_taken_from_one_to_the_most_and_refused_past_it() {
    assert_eq!(
        given(&["--index-shards", "1"])
            .unwrap()
            .settings
            .index_shards,
        1
    );
    let most = MAX_INDEX_SHARDS.to_string();
    assert_eq!(
        given(&["--index-shards", &most])
            .unwrap()
            .settings
            .index_shards,
        MAX_INDEX_SHARDS
    );
    let past = (MAX_INDEX_SHARDS + 1).to_string();
    let e = given(&["--index-shards", &past]).unwrap_err().to_string();
    assert!(e.contains("--index-shards"), "{e}");
    assert!(given(&["--index-shards", "0"]).is_err());
}

#[test]
fn a_bad_value_names_its_setting() {
    let e = given(&["--error-table", "2.0"]).unwrap_err().to_string();
    assert!(e.contains("--error-table"), "{e}");
    let bad = given(&["--retention", "ninety days"]).unwrap().settings;
    assert!(bad
        .retention()
        .unwrap_err()
        .to_string()
        .contains("--retention"));
    let bad = given(&["--push-allowlist", "not-a-network"])
        .unwrap()
        .settings;
    let e = bad
        .address_policy(Deployment::Local)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--push-allowlist"), "{e}");
    let e = given(&["--auth", "cookie"]).unwrap_err().to_string();
    assert!(e.contains("--auth"), "{e}");
}

#[test]
fn a_secret_is_read_from_its_text_before_its_file_and_a_missing_file_is_named() {
    let s = given(&["--push-signing-key-file", "/nonexistent/key.pem"])
        .unwrap()
        .settings;
    let e = s.signing_key_pem().unwrap_err().to_string();
    assert!(e.contains("/nonexistent/key.pem"), "{e}");
    let s = given(&[
        "--push-signing-key",
        "PEM",
        "--push-signing-key-file",
        "/nonexistent",
    ])
    .unwrap()
    .settings;
    assert_eq!(s.signing_key_pem().unwrap().as_deref(), Some("PEM"));
    assert_eq!(Settings::defaults().signing_key_pem().unwrap(), None);
}

#[test]
fn the_agent_is_chosen_by_one_rule() {
    let none = |_: &str| None;
    let d = Deployment::Local;
    let scenario = given(&["--conformance-scenarios"]).unwrap().settings;
    assert!(matches!(
        scenario.agent(d, none).unwrap(),
        AgentChoice::Scenario { conformance: true }
    ));
    let model = given(&[
        "--llm-base-url",
        "http://127.0.0.1:9/v1",
        "--bedrock-model",
        "m",
    ])
    .unwrap()
    .settings;
    assert!(matches!(
        model.agent(d, none).unwrap(),
        AgentChoice::OpenAi { .. }
    ));
    let bedrock = given(&["--bedrock-model", "m"]).unwrap().settings;
    assert!(matches!(
        bedrock.agent(d, none).unwrap(),
        AgentChoice::Bedrock { .. }
    ));
    let upstream = given(&["--agent-url", "http://127.0.0.1:9", "--custom-agent", "x"])
        .unwrap()
        .settings;
    assert!(matches!(
        upstream.agent(d, none).unwrap(),
        AgentChoice::Upstream(_)
    ));
    let unknown = given(&["--custom-agent", "nobody"]).unwrap().settings;
    let e = unknown.agent(d, none).unwrap_err().to_string();
    assert!(e.contains("--custom-agent") && e.contains("nobody"), "{e}");
}

#[test]
fn mcp_servers_are_parsed_under_the_deployments_policy() {
    let s = given(&[
        "--mcp-server",
        "docs=http://127.0.0.1:3001/mcp,web=http://127.0.0.1:3002/mcp",
    ])
    .unwrap()
    .settings;
    let specs = s.mcp_servers(Deployment::Local).unwrap();
    assert_eq!(specs.len(), 2);
    assert_eq!(specs[0].name, "docs");
    assert!(specs.iter().all(|s| s.token.is_none()));
    let twice = given(&[
        "--mcp-server",
        "a=http://127.0.0.1:1/,a=http://127.0.0.1:2/",
    ])
    .unwrap()
    .settings;
    assert!(twice.mcp_servers(Deployment::Local).is_err());
}

#[test]
fn a_lambda_reads_the_environment_the_template_writes() {
    // The only test here that reads the process's environment (the others parse flags with
    // every `env` cleared), so nothing else races its variables.
    let vars = [
        ("TASKLEDGER_PUSH_ALLOWLIST", ""),
        ("TASKLEDGER_LLM_BASE_URL", ""),
        ("TASKLEDGER_INDEX_SHARDS", "4"),
        ("TASKLEDGER_CONFORMANCE_SCENARIOS", "false"),
        ("TASKLEDGER_PUSH_ENABLED", "true"),
        ("TASKLEDGER_RESPONSE_STREAMING", "1"),
        ("TASKLEDGER_AUTH", "iam"),
        ("TASKLEDGER_BLOCKING_TIMEOUT_SECS", "25"),
    ];
    for (k, v) in vars {
        std::env::set_var(k, v);
    }
    let s = Settings::from_env();
    let l = LambdaSettings::from_env();
    for (k, _) in vars {
        std::env::remove_var(k);
    }
    let (s, l) = (s.unwrap(), l.unwrap());
    assert_eq!(s.index_shards, 4);
    assert!(s.push_enabled && !s.conformance_scenarios);
    assert!(s.llm_base_url.as_deref().unwrap_or_default().is_empty());
    let loopback: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    assert!(s
        .address_policy(Deployment::Lambda)
        .unwrap()
        .permits(loopback)
        .is_err());
    assert_eq!(
        s.blocking_timeout(Deployment::Lambda),
        Duration::from_secs(25)
    );
    assert!(l.response_streaming);
    assert_eq!(l.auth, ApiAuth::Iam);
}

#[test]
fn mcp_tokens_come_by_server_name_and_name_only_servers_configured() {
    let servers = "docs=http://127.0.0.1:3001/mcp,web=http://127.0.0.1:3002/mcp";
    let with = |tokens: &str| {
        given(&["--mcp-server", servers, "--mcp-tokens", tokens])
            .unwrap()
            .settings
            .mcp_servers(Deployment::Local)
    };
    let specs = with(r#"{"docs": "d-s3cret"}"#).unwrap();
    assert_eq!(
        specs[0].token.as_ref().map(|t| t.secret()),
        Some("d-s3cret")
    );
    assert!(specs[1].token.is_none());
    let e = with(r#"{"nobody": "x"}"#).unwrap_err().to_string();
    assert!(
        e.contains("\"nobody\"") && e.contains("no --mcp-server"),
        "{e}"
    );
    for bad in [
        r#"["d-s3cret"]"#,
        "d-s3cret",
        r#"{"docs": " "}"#,
        r#"{"docs": 7}"#,
    ] {
        let e = with(bad).unwrap_err().to_string();
        assert!(e.contains("TASKLEDGER_MCP_TOKENS"), "{e}");
        assert!(!e.contains("s3cret"), "the error shows the secret: {e}");
    }
}
