//! Property tests of every request validator: arbitrary input — JSON shaped like what each
//! validator reads, with the keys and media types it looks for — never panics, and a refused
//! command changes nothing (an error decides no events; a refused message's status update
//! leaves history as it was).

use proptest::prelude::*;
use serde_json::{json, Map, Value};

use crate::ids::{ContextId, HistoryLength, PageSize, ParticipantId, Principal, TaskId};
use crate::ports::ListScope;
use crate::push::{AddressPolicy, PushConfigSpec};
use crate::task::{
    AnswerGate, AnswerToolApproval, AppendUserMessage, CreateTask, TaskAggregate, TaskCommand,
    TaskEvent,
};
use crate::time::Timestamp;
use crate::wire::{Message, TaskPushNotificationConfig};

/// Strings a validator may trip on: empty, long, control characters, non-ASCII, lookalike ids.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-z0-9_./:-]{1,12}",
        "\\PC{0,40}",
        "[\\x00-\\x1f\\x7f]{1,4}",
        Just("a".repeat(300)),
        Just("bob".to_string()),
        Just("acme/bob".to_string()),
        Just("/model gpt-5".to_string()),
        Just("/effort high".to_string()),
        Just("gate-3".to_string()),
    ]
}

/// Keys the validators read, and some they do not.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("participant_id"),
        Just("participants"),
        Just("id"),
        Just("role"),
        Just("kind"),
        Just("name"),
        Just("goal"),
        Just("plan"),
        Just("steps"),
        Just("depends_on"),
        Just("text"),
        Just("data"),
        Just("url"),
        Just("raw"),
        Just("mediaType"),
        Just("type"),
        Just("approvals"),
        Just("decision"),
        Just("answers"),
        Just("replyTo"),
        Just("choice"),
        Just("skill"),
        Just("title"),
        Just("acceptance"),
        Just("writes"),
        Just("approve_tools"),
        Just("sub_tasks"),
        Just("parent_tasks"),
        Just("lifecycle"),
        Just(crate::extensions::hitl::HITL_URI),
        Just(crate::task::ENVELOPE_URI),
        Just(crate::extensions::dmp::work::WORK_URI),
        Just(crate::extensions::harness::METADATA_KEY),
        Just("other"),
    ]
    .prop_map(str::to_string)
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e9f64..1e9).prop_map(|f| json!(f)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn media_type() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        Just(Some(crate::extensions::harness::MEDIA_TYPE.to_string())),
        Just(Some(crate::extensions::a2ui::MEDIA_TYPE.to_string())),
        Just(Some("application/json".to_string())),
        text().prop_map(Some),
    ]
}

fn part() -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            text().prop_map(|t| json!({"text": t})),
            json_value().prop_map(|d| json!({"data": d})),
            text().prop_map(|u| json!({"url": u})),
            Just(json!({"raw": "aGVsbG8="})),
            Just(json!({})),
        ],
        media_type(),
    )
        .prop_map(|(mut p, m)| {
            if let Some(m) = m {
                p["mediaType"] = json!(m);
            }
            p
        })
}

/// A message as a client could send it (only well-formed JSON reaches the validators).
fn message() -> impl Strategy<Value = Message> {
    (
        text(),
        prop::collection::vec(part(), 0..4),
        prop::option::of(prop::collection::vec((key(), json_value()), 0..4)),
        prop::collection::vec(
            prop_oneof![Just(crate::extensions::hitl::HITL_URI.to_string()), text()],
            0..2,
        ),
    )
        .prop_filter_map("a message the wire types read", |(id, parts, meta, ext)| {
            let mut m =
                json!({"messageId": id, "role": "ROLE_USER", "parts": parts, "extensions": ext});
            if let Some(meta) = meta {
                m["metadata"] = Value::Object(meta.into_iter().collect());
            }
            serde_json::from_value(m).ok()
        })
}

/// Given a task of acme/alice shared with bob (assignee) and carol (watcher).
fn shared() -> TaskAggregate {
    let mut state = TaskAggregate::default();
    let data = serde_json::from_value(json!({
        "name": "n", "goal": "g",
        "participants": [
            {"id": "alice", "kind": "human", "role": "admin"},
            {"id": "bob", "kind": "human", "role": "assignee"},
            {"id": "carol", "kind": "human", "role": "watcher"}
        ]
    }))
    .unwrap();
    let events = state
        .decide(TaskCommand::CreateTask(CreateTask {
            task_id: TaskId::parse("t-p").unwrap(),
            context_id: ContextId::parse("c-p").unwrap(),
            owner: Principal::new("acme", "alice").unwrap(),
            message: Message::user_text("m-0", "start"),
            at: Timestamp::from_unix_nanos(1_000),
            extension: Some(Box::new(data)),
            awaiting_assignee: None,
        }))
        .unwrap();
    for e in &events {
        state.apply_event(e);
    }
    state
}

fn caller() -> impl Strategy<Value = Option<Principal>> {
    prop_oneof![
        Just(None),
        Just(Some(Principal::new("acme", "alice").unwrap())),
        Just(Some(Principal::new("acme", "bob").unwrap())),
        Just(Some(Principal::new("acme", "carol").unwrap())),
        Just(Some(Principal::new("acme", "mallory").unwrap())),
    ]
}

/// Decides `cmd` on `state`: never panics; a refusal decides nothing, and a refused message
/// (a `MessageRefused` status update) adds nothing to history.
fn decide_checked(state: &TaskAggregate, cmd: TaskCommand) {
    let before = state.head.as_ref().map(|h| h.history_len);
    match state.decide(cmd) {
        Err(_) => {}
        Ok(events) => {
            let mut after = state.clone();
            for e in &events {
                after.apply_event(e);
            }
            if let [TaskEvent::MessageRefused { .. }] = events.as_slice() {
                assert_eq!(after.head.as_ref().map(|h| h.history_len), before);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn message_validators_never_panic(m in message()) {
        let _ = crate::task::intake::validate_user_message(&m, "message");
        let _ = crate::task::intake::validate_agent_message(&m, "message");
        let _ = crate::extensions::harness::sender_of(&m, "message");
        let _ = crate::extensions::hitl::response_of(&m);
        let _ = crate::task::answer_of(&m);
        let _ = crate::extensions::a2ui::action_of(&m);
        let _ = crate::extensions::dmp::work::WorkRequest::from_metadata(m.metadata.as_ref());
        if let Some(raw) = crate::extensions::harness::envelope_of(&m) {
            let _ = crate::extensions::harness::validate_envelope(raw);
        }
    }

    #[test]
    fn envelopes_never_panic(raw in json_value()) {
        let _ = crate::extensions::harness::validate_envelope(&raw);
    }

    #[test]
    fn a_message_to_a_shared_task_from_anyone_is_decided_or_refused_without_panic(
        m in message(), caller in caller()
    ) {
        let state = shared();
        decide_checked(&state, TaskCommand::AppendUserMessage(AppendUserMessage {
            message: m.clone(),
            at: Timestamp::from_unix_nanos(2_000),
            caller: caller.clone(),
        }));
        decide_checked(&state, TaskCommand::AnswerGate(Box::new(AnswerGate {
            gate_id: "gate-1".into(),
            choice: Some("approve".into()),
            by: crate::extensions::harness::sender_of(&m, "message").ok().flatten(),
            message: m.clone(),
            at: Timestamp::from_unix_nanos(2_000),
            caller: caller.clone(),
        })));
        if let Some(Ok(crate::extensions::hitl::Response::ToolApproval(approvals))) = crate::extensions::hitl::response_of(&m) {
            decide_checked(&state, TaskCommand::AnswerToolApproval(Box::new(AnswerToolApproval {
                approvals,
                by: None,
                message: m.clone(),
                at: Timestamp::from_unix_nanos(2_000),
                caller,
            })));
        }
    }

    #[test]
    fn a_new_task_from_any_message_is_created_or_refused_without_panic(m in message()) {
        let _ = TaskAggregate::default().decide(TaskCommand::CreateTask(CreateTask {
            task_id: TaskId::parse("t-new").unwrap(),
            context_id: ContextId::parse("c-new").unwrap(),
            owner: Principal::new("acme", "alice").unwrap(),
            message: m,
            at: Timestamp::from_unix_nanos(1),
            extension: None,
            awaiting_assignee: None,
        }));
    }

    #[test]
    fn push_configs_are_parsed_or_refused_without_panic(raw in json_value(), url in text()) {
        let mut v = raw;
        if let Some(o) = v.as_object_mut() {
            o.insert("url".into(), json!(format!("https://{url}")));
        }
        if let Ok(wire) = serde_json::from_value::<TaskPushNotificationConfig>(v) {
            for policy in [AddressPolicy::strict(), AddressPolicy::allow_loopback()] {
                let _ = PushConfigSpec::parse(&wire, "generated", &policy, "params");
            }
        }
    }

    #[test]
    fn ids_and_bounds_parse_or_refuse_without_panic(s in text(), n in any::<i32>()) {
        if let Ok(id) = TaskId::parse(s.clone()) {
            prop_assert_eq!(id.as_str(), s.as_str());
        }
        let _ = ParticipantId::parse(s.clone());
        let _ = ContextId::parse(s.clone());
        let _ = Principal::new(&s, &s);
        let _ = ListScope::parse(Some(&s));
        let _ = HistoryLength::parse(Some(n));
        let _ = PageSize::parse(Some(n));
        let owner = Principal::new("acme", "alice").unwrap();
        if let Some(p) = crate::task::principal_of(&owner, &s) {
            prop_assert_eq!(p.tenant, owner.tenant);
        }
    }
}
