//! Given/when/then for push notification configs, the updates a commit pushes, the address
//! policy and the retry policy.

use std::net::IpAddr;
use std::time::Duration;

use crate::error::DomainError;
use crate::ids::{ContextId, Principal, TaskId};
use crate::ports::commit_for;
use crate::projection::push::updates;
use crate::push::*;
use crate::task::{CreateTask, TaskAggregate, TaskCommand, TaskEvent};
use crate::time::Timestamp;
use crate::wire::{AuthenticationInfo, Message, TaskPushNotificationConfig, TaskState};

fn wire(id: Option<&str>, url: &str) -> TaskPushNotificationConfig {
    TaskPushNotificationConfig {
        tenant: None,
        id: id.map(str::to_string),
        task_id: None,
        url: url.into(),
        token: None,
        authentication: None,
        protocol: Default::default(),
    }
}

fn spec(id: &str) -> PushConfigSpec {
    PushConfigSpec::parse(
        &wire(Some(id), "https://hooks.example.com/a2a"),
        "generated",
        &AddressPolicy::strict(),
        "",
    )
    .unwrap()
}

fn refused(url: &str, policy: &AddressPolicy) -> String {
    match PushConfigSpec::parse(&wire(None, url), "g", policy, "params") {
        Err(DomainError::InvalidParams { field, reason }) => format!("{field}: {reason}"),
        other => panic!("expected a refusal for {url}, got {other:?}"),
    }
}

/// A created task at version 1.
fn task() -> TaskAggregate {
    let mut s = TaskAggregate::default();
    let events = s
        .decide(TaskCommand::CreateTask(CreateTask {
            task_id: TaskId::parse("t-1").unwrap(),
            context_id: ContextId::parse("c-1").unwrap(),
            owner: Principal::anonymous(),
            message: Message::user_text("m-1", "hello"),
            at: Timestamp::now(),
            extension: None,
            awaiting_assignee: None,
        }))
        .unwrap();
    for e in &events {
        s.apply_event(e);
    }
    s
}

fn run(s: &mut TaskAggregate, cmd: TaskCommand) -> Vec<TaskEvent> {
    let events = s.decide(cmd).unwrap();
    for e in &events {
        s.apply_event(e);
    }
    events
}

fn set(id: &str) -> TaskCommand {
    TaskCommand::SetPushConfig {
        config: spec(id),
        at: Timestamp::now(),
        by: None,
    }
}

fn status(state: TaskState) -> TaskCommand {
    TaskCommand::ChangeStatus {
        state,
        message: None,
        at: Timestamp::now(),
    }
}

// ------------------------------------------------------------------ configs

#[test]
fn a_client_given_id_is_kept_and_a_missing_one_is_generated() {
    let kept = PushConfigSpec::parse(
        &wire(Some("cfg-1"), "https://a.example/h"),
        "gen-1",
        &AddressPolicy::strict(),
        "",
    )
    .unwrap();
    assert_eq!(kept.id, "cfg-1");
    let generated = PushConfigSpec::parse(
        &wire(None, "https://a.example/h"),
        "gen-1",
        &AddressPolicy::strict(),
        "",
    )
    .unwrap();
    assert_eq!(generated.id, "gen-1");
}

#[test]
fn urls_must_be_http_with_a_host_and_no_user_info() {
    let p = AddressPolicy::strict();
    assert!(refused("ftp://a.example/x", &p).contains("http or https"));
    assert!(refused("not a url", &p).starts_with("params.url: is not a URL"));
    assert!(refused("", &p).contains("required"));
    assert!(refused("https://user:pw@a.example/", &p).contains("user info"));
}

#[test]
fn the_url_limit_is_inclusive() {
    let p = AddressPolicy::strict();
    let base = "https://a.example/";
    let at_limit = format!("{base}{}", "x".repeat(MAX_PUSH_URL_BYTES - base.len()));
    assert!(PushConfigSpec::parse(&wire(None, &at_limit), "g", &p, "").is_ok());
    let over = format!("{at_limit}x");
    assert!(refused(&over, &p).contains("the limit is 2048"));
}

#[test]
fn literal_internal_addresses_are_refused_at_creation() {
    let p = AddressPolicy::strict();
    assert!(refused("http://169.254.169.254/latest/meta-data", &p).contains("metadata"));
    assert!(refused("http://10.0.0.1/hook", &p).contains("private"));
    assert!(refused("http://127.0.0.1:8080/hook", &p).contains("loopback"));
    assert!(refused("http://[fd00:ec2::254]/", &p).contains("metadata"));
    assert!(refused("http://[::ffff:10.0.0.1]/", &p).contains("private"));
    assert!(refused("http://100.64.1.1/", &p).contains("carrier-grade"));
    assert!(refused("http://[fe80::1]/", &p).contains("link-local"));
    assert!(refused("http://[fd12::1]/", &p).contains("unique-local"));
    assert!(refused("http://0.0.0.0/", &p).contains("unspecified"));
    // Hostnames are checked when the sender connects (their addresses can change).
    assert!(PushConfigSpec::parse(&wire(None, "http://localhost:9/h"), "g", &p, "").is_ok());
    assert!(PushConfigSpec::parse(&wire(None, "https://93.184.215.14/h"), "g", &p, "").is_ok());
}

#[test]
fn an_allowlist_lets_named_networks_through() {
    let dev = AddressPolicy::allow_loopback();
    assert!(dev.permits("127.0.0.1".parse().unwrap()).is_ok());
    assert!(dev.permits("::1".parse().unwrap()).is_ok());
    assert!(dev.permits("10.0.0.1".parse().unwrap()).is_err());
    let p = AddressPolicy::parse_allowlist("10.1.0.0/16, 192.168.1.7").unwrap();
    assert!(p.permits("10.1.2.3".parse().unwrap()).is_ok());
    assert!(p.permits("10.2.0.1".parse().unwrap()).is_err());
    assert!(p.permits("192.168.1.7".parse().unwrap()).is_ok());
    assert!(p.permits("192.168.1.8".parse().unwrap()).is_err());
    assert!(AddressPolicy::parse_allowlist("10.0.0.0/33").is_err());
    let public: IpAddr = "8.8.8.8".parse().unwrap();
    assert!(AddressPolicy::strict().permits(public).is_ok());
}

#[test]
fn header_values_are_bounded_and_free_of_control_characters() {
    let p = AddressPolicy::strict();
    let mut w = wire(None, "https://a.example/h");
    w.token = Some("t".repeat(MAX_PUSH_TOKEN_BYTES));
    assert!(PushConfigSpec::parse(&w, "g", &p, "").is_ok());
    w.token = Some("t".repeat(MAX_PUSH_TOKEN_BYTES + 1));
    assert!(PushConfigSpec::parse(&w, "g", &p, "").is_err());
    w.token = Some("a\r\nInjected: yes".into());
    assert!(PushConfigSpec::parse(&w, "g", &p, "").is_err());
    w.token = None;
    w.authentication = Some(AuthenticationInfo {
        scheme: "Bearer".into(),
        credentials: Some("c".repeat(MAX_PUSH_CREDENTIALS_BYTES)),
    });
    let ok = PushConfigSpec::parse(&w, "g", &p, "").unwrap();
    assert_eq!(
        ok.clone().subscribe(1).authorization().unwrap().len(),
        7 + MAX_PUSH_CREDENTIALS_BYTES
    );
    w.authentication = Some(AuthenticationInfo {
        scheme: "Bearer".into(),
        credentials: Some("c".repeat(MAX_PUSH_CREDENTIALS_BYTES + 1)),
    });
    assert!(PushConfigSpec::parse(&w, "g", &p, "").is_err());
    w.authentication = Some(AuthenticationInfo {
        scheme: " ".into(),
        credentials: None,
    });
    assert!(PushConfigSpec::parse(&w, "g", &p, "")
        .unwrap_err()
        .to_string()
        .contains("scheme"));
    w.id = Some("i".repeat(MAX_PUSH_CONFIG_ID_BYTES + 1));
    w.authentication = None;
    assert!(PushConfigSpec::parse(&w, "g", &p, "").is_err());
}

#[test]
fn configs_are_allowed_on_terminal_tasks_and_registered_at_their_event() {
    let mut s = task();
    run(&mut s, status(TaskState::Completed));
    let events = run(&mut s, set("cfg-1"));
    assert!(matches!(events[..], [TaskEvent::PushConfigSet { .. }]));
    let head = s.head.as_ref().unwrap();
    assert_eq!(head.push.len(), 1);
    assert_eq!(head.push[0].from_seq, s.version);
}

#[test]
fn the_same_id_replaces_and_the_count_is_limited() {
    let mut s = task();
    for i in 0..MAX_PUSH_CONFIGS_PER_PRINCIPAL {
        run(&mut s, set(&format!("cfg-{i}")));
    }
    // Replacing an existing id is not a new config.
    run(&mut s, set("cfg-0"));
    assert_eq!(
        s.head.as_ref().unwrap().push.len(),
        MAX_PUSH_CONFIGS_PER_PRINCIPAL
    );
    let err = s.decide(set("one-more")).unwrap_err();
    assert!(err.to_string().contains("limit"), "{err}");
}

#[test]
fn deleting_is_idempotent() {
    let mut s = task();
    run(&mut s, set("cfg-1"));
    let events = run(
        &mut s,
        TaskCommand::DeletePushConfig {
            id: "cfg-1".into(),
            at: Timestamp::now(),
            by: None,
        },
    );
    assert_eq!(events.len(), 1);
    assert!(s.head.as_ref().unwrap().push.is_empty());
    let again = run(
        &mut s,
        TaskCommand::DeletePushConfig {
            id: "cfg-1".into(),
            at: Timestamp::now(),
            by: None,
        },
    );
    assert!(again.is_empty(), "a second delete changes nothing");
}

// ------------------------------------------------------------------ updates

#[test]
fn without_subscribers_a_commit_pushes_nothing() {
    let s = task();
    let events = s.decide(status(TaskState::Working)).unwrap();
    assert!(updates(&s, &events).is_empty());
}

#[test]
fn status_and_artifact_events_push_stream_responses() {
    let mut s = task();
    run(&mut s, set("cfg-1"));
    let events = s.decide(status(TaskState::Working)).unwrap();
    let u = updates(&s, &events);
    assert_eq!(u.len(), 1);
    assert_eq!(u[0].seq, s.version + 1);
    let body: serde_json::Value = serde_json::from_str(&u[0].body).unwrap();
    assert_eq!(body["statusUpdate"]["taskId"], "t-1");
    assert_eq!(body["statusUpdate"]["contextId"], "c-1");
    assert_eq!(
        body["statusUpdate"]["status"]["state"],
        "TASK_STATE_WORKING"
    );
    run(&mut s, status(TaskState::Working));

    let artifact = crate::wire::Artifact {
        artifact_id: "a-1".into(),
        name: Some("answer".into()),
        description: None,
        parts: vec![crate::wire::Part::text("42")],
        metadata: None,
        extensions: vec![],
        end_generation: Default::default(),
        start_generation: Default::default(),
    };
    let events = s
        .decide(TaskCommand::AddArtifact {
            artifact,
            append: false,
            last_chunk: true,
            at: Timestamp::now(),
        })
        .unwrap();
    let u = updates(&s, &events);
    let body: serde_json::Value = serde_json::from_str(&u[0].body).unwrap();
    assert_eq!(body["artifactUpdate"]["artifact"]["artifactId"], "a-1");
    assert_eq!(body["artifactUpdate"]["lastChunk"], true);
    // The body is exactly what a commit carries.
    let commit = commit_for(TaskId::parse("t-1").unwrap(), &s, &events, Timestamp::now());
    assert_eq!(commit.pushes, u);
}

#[test]
fn a_config_registered_mid_task_receives_only_later_events() {
    let mut s = task();
    run(&mut s, set("early"));
    run(&mut s, status(TaskState::Working));
    let working_seq = s.version;
    run(&mut s, set("late"));
    let subs = s.head.as_ref().unwrap().push.clone();
    let body = "{}";
    let before = deliveries(
        "t-1",
        &s.head.as_ref().unwrap().owner.clone(),
        &subs,
        working_seq,
        body,
    );
    assert_eq!(
        before
            .iter()
            .map(|d| d.config.id.as_str())
            .collect::<Vec<_>>(),
        ["early"]
    );
    let after = deliveries(
        "t-1",
        &s.head.as_ref().unwrap().owner.clone(),
        &subs,
        s.version + 1,
        body,
    );
    assert_eq!(after.len(), 2);
    // One group per (task, config); ids stable and within queue limits.
    assert_ne!(after[0].group(), after[1].group());
    assert_eq!(after[0].dedup_id().len(), 64);
    assert_eq!(
        after[0].delivery_id(),
        format!("t-1:{}:early", s.version + 1)
    );
}

#[test]
fn a_config_and_a_status_change_in_one_commit_push_the_change() {
    let s = task();
    let mut scratch = s.clone();
    let mut events = run(&mut scratch, set("inline"));
    events.extend(run(&mut scratch, status(TaskState::InputRequired)));
    let u = updates(&s, &events);
    assert_eq!(u.len(), 1);
    assert_eq!(
        u[0].seq,
        s.version + 2,
        "the status change after the config"
    );
}

// ------------------------------------------------------------------ retries

#[test]
fn statuses_are_classified() {
    assert_eq!(classify_status(204, None), AttemptResult::Delivered);
    for s in [408, 429, 500, 503] {
        assert!(matches!(
            classify_status(s, None),
            AttemptResult::Transient { .. }
        ));
    }
    for s in [301, 400, 401, 404, 410] {
        assert!(matches!(
            classify_status(s, None),
            AttemptResult::Permanent { .. }
        ));
    }
}

#[test]
fn transient_failures_back_off_exponentially_with_jitter_until_the_horizon() {
    let p = RetryPolicy {
        base: Duration::from_secs(1),
        cap: Duration::from_secs(60),
        horizon: Duration::from_secs(300),
    };
    let t = AttemptResult::Transient {
        reason: "HTTP 503".into(),
        retry_after: None,
    };
    let pause = |n, j| match p.next(&t, n, Duration::ZERO, j) {
        NextStep::RetryIn(d) => d,
        other => panic!("{other:?}"),
    };
    assert_eq!(pause(1, 0.0), Duration::from_millis(500));
    assert!(pause(1, 0.999_999) < Duration::from_secs(1));
    assert_eq!(pause(3, 0.0), Duration::from_secs(2));
    assert_eq!(pause(30, 1.0), Duration::from_secs(60), "capped");
    match p.next(&t, 9, Duration::from_secs(299), 0.0) {
        NextStep::DeadLetter(reason) => {
            assert!(reason.contains("9 attempts") && reason.contains("HTTP 503"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn retry_after_is_honoured_and_permanent_failures_dead_letter_at_once() {
    let p = RetryPolicy::default();
    let t = AttemptResult::Transient {
        reason: "HTTP 429".into(),
        retry_after: Some(Duration::from_secs(30)),
    };
    assert_eq!(
        p.next(&t, 1, Duration::ZERO, 0.5),
        NextStep::RetryIn(Duration::from_secs(30))
    );
    let perm = AttemptResult::Permanent {
        reason: "the receiver answered HTTP 400".into(),
    };
    assert!(matches!(
        p.next(&perm, 1, Duration::ZERO, 0.5),
        NextStep::DeadLetter(r) if r.contains("HTTP 400")
    ));
    assert_eq!(
        p.next(&AttemptResult::Delivered, 3, Duration::ZERO, 0.5),
        NextStep::Done
    );
}

#[test]
fn retry_after_takes_seconds_or_an_http_date() {
    assert_eq!(parse_retry_after("120", 0), Some(Duration::from_secs(120)));
    let now = 1_445_412_480; // Wed, 21 Oct 2015 07:28:00 GMT
    assert_eq!(
        parse_retry_after("Wed, 21 Oct 2015 07:29:00 GMT", now),
        Some(Duration::from_secs(60))
    );
    assert_eq!(parse_retry_after("soon", now), None);
}

#[test]
fn ipv6_forms_that_carry_an_ipv4_address_are_judged_by_it() {
    let p = AddressPolicy::strict();
    let judged = |ip: &str| p.permits(ip.parse().unwrap());
    for (ip, class) in [
        ("::127.0.0.1", "loopback"),
        ("::10.0.0.1", "private"),
        ("::169.254.169.254", "metadata"),
        ("::ffff:0:127.0.0.1", "loopback"),
        ("::ffff:0:192.168.0.1", "private"),
        ("64:ff9b::10.1.2.3", "private"),
        ("2002:7f00:1::", "loopback"),
        ("2002:a9fe:a9fe::1", "metadata"),
        ("2002:c0a8:0101:1::1", "private"),
        ("64:ff9b:1::a00:1", "NAT64 local-use"),
        ("64:ff9b:1:abcd::7f00:1", "NAT64 local-use"),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
        ("100::1", "discard-only"),
    ] {
        let e = judged(ip).expect_err(ip);
        assert!(e.contains(class), "{ip}: {e}");
    }
    // Public addresses in the same forms pass; IPv6's own :: and ::1 keep their classes.
    for ip in [
        "::8.8.8.8",
        "64:ff9b::8.8.8.8",
        "2002:0808:0808::1",
        "2606:4700::1111",
    ] {
        assert!(judged(ip).is_ok(), "{ip}");
    }
    assert!(judged("::1").unwrap_err().contains("loopback"));
    assert!(judged("::").unwrap_err().contains("unspecified"));
    // The allowlist sees the IPv4 address too.
    let dev = AddressPolicy::allow_loopback();
    assert!(dev.permits("2002:7f00:1::".parse().unwrap()).is_ok());
}

#[test]
fn a_failure_reason_never_carries_a_url_and_is_bounded() {
    use crate::push::{failure_reason, MAX_FAILURE_REASON_BYTES};
    let r = failure_reason(
        "error sending request for url (https://hooks.example.com/x?secret=s3cr3t): \
         connection refused",
    );
    assert_eq!(
        r,
        "error sending request for url (<url>): connection refused"
    );
    assert!(!failure_reason("see http://10.0.0.1:8080/a?token=abc.").contains("token"));
    assert_eq!(failure_reason("HTTP 500"), "HTTP 500");
    assert_eq!(
        failure_reason("x".repeat(MAX_FAILURE_REASON_BYTES + 1).as_str()).len(),
        MAX_FAILURE_REASON_BYTES
    );
    assert_eq!(
        failure_reason(&"é".repeat(MAX_FAILURE_REASON_BYTES)).len(),
        MAX_FAILURE_REASON_BYTES
    );
}

#[test]
fn each_principal_has_its_own_config_ids_and_room() {
    let mut s = task();
    let bob = crate::ids::Principal::new("acme", "bob").unwrap();
    let as_bob = |id: &str| TaskCommand::SetPushConfig {
        config: spec(id),
        at: Timestamp::now(),
        by: Some(bob.clone()),
    };
    // bob fills his room and takes the id the owner's 0.3 default would use...
    for i in 0..MAX_PUSH_CONFIGS_PER_PRINCIPAL - 1 {
        run(&mut s, as_bob(&format!("b-{i}")));
    }
    run(&mut s, as_bob("t-1"));
    assert!(s.decide(as_bob("one-more")).is_err(), "bob is at his limit");
    // ...and the owner still registers, sees and deletes its own, the same id included.
    run(&mut s, set("t-1"));
    run(&mut s, set("cfg-owner"));
    let head = s.head.as_ref().unwrap();
    let owners: Vec<_> = head
        .push
        .iter()
        .filter(|p| p.belongs_to(&head.owner, &head.owner))
        .map(|p| p.id.as_str())
        .collect();
    assert_eq!(owners, ["t-1", "cfg-owner"]);
    let events = run(
        &mut s,
        TaskCommand::DeletePushConfig {
            id: "t-1".into(),
            at: Timestamp::now(),
            by: None,
        },
    );
    assert!(
        matches!(&events[..], [TaskEvent::PushConfigDeleted { key: Some(k), .. }] if k == "t-1")
    );
    let head = s.head.as_ref().unwrap();
    assert_eq!(
        head.push.len(),
        MAX_PUSH_CONFIGS_PER_PRINCIPAL + 1,
        "bob's t-1 stays"
    );
    assert!(head.push.iter().any(|p| p.id == "t-1" && p.owner.is_some()));
    // Their deliveries are two groups and two de-duplication ids.
    let bobs = head.push.iter().find(|p| p.id == "t-1").unwrap().clone();
    let mut owners_t1 = bobs.clone();
    owners_t1.owner = None;
    let d = |c: crate::push::Subscription| crate::push::PushDelivery {
        task_id: "t".into(),
        seq: 9,
        config: c,
        body: String::new(),
        trace: None,
        to: None,
    };
    assert_ne!(d(bobs.clone()).group(), d(owners_t1.clone()).group());
    assert_ne!(d(bobs).dedup_id(), d(owners_t1).dedup_id());
}
