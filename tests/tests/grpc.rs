//! The gRPC binding over a real socket, with a tonic client from the generated stubs: every
//! RPC, its errors (status code from the error table, ErrorInfo reason), the metadata rules,
//! authentication, TLS, and parity with JSON-RPC on the same server.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::json;
use taskledger_app::grpc::convert::to_protojson;
use taskledger_app::grpc::TlsPem;
use taskledger_domain::ids::Principal;
use taskledger_local::{Config, GrpcSettings};
use taskledger_tests::grpc::{
    code_and_reason, draft_message, pb, raw_unary, send_request, state, user_message, GrpcServer,
};
use taskledger_tests::{error_code, fast_timings};
use tonic::metadata::MetadataValue;
use tonic::{Code, Request};

fn suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

// ------------------------------------------------------------------ card

#[tokio::test]
async fn the_card_lists_a_grpc_interface_only_when_grpc_is_served() {
    let s = GrpcServer::start().await;
    let card = s.http.card().await;
    let grpc: Vec<_> = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["protocolBinding"] == "GRPC")
        .collect();
    // once for 1.0, once for the 1.1 draft and once for 0.3, at the same address
    assert_eq!(grpc.len(), 3, "{card}");
    assert_eq!(grpc[0]["url"], format!("127.0.0.1:{}", s.grpc.port()));
    assert_eq!(grpc[0]["protocolVersion"], "1.0");
    assert_eq!(grpc[1]["url"], grpc[0]["url"]);
    assert_eq!(grpc[1]["protocolVersion"], "1.1");
    assert_eq!(grpc[2]["url"], grpc[0]["url"]);
    assert_eq!(grpc[2]["protocolVersion"], "0.3");
    assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");

    let plain = taskledger_tests::Server::start().await;
    let card = plain.card().await;
    assert!(
        card["supportedInterfaces"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["protocolBinding"] != "GRPC"),
        "{card}"
    );

    let mut config = Config::in_memory().with_conformance_scenarios();
    config.grpc = Some(GrpcSettings {
        public_addr: Some("grpc.example.com:443".into()),
        ..GrpcSettings::loopback()
    });
    let s = GrpcServer::start_with(config).await;
    let card = s.http.card().await;
    let grpc = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["protocolBinding"] == "GRPC")
        .cloned()
        .unwrap_or_default();
    assert_eq!(grpc["url"], "grpc.example.com:443", "{card}");
}

// ------------------------------------------------------------------ send, get, list, cancel

#[tokio::test]
async fn a_blocking_send_returns_the_settled_task() {
    let s = GrpcServer::start().await;
    let task = s
        .send_task(&format!("tck-artifact-text-{}", suffix()), "hello")
        .await;
    assert_eq!(state(&task), pb::TaskState::Completed);
    assert!(!task.id.is_empty() && !task.context_id.is_empty());
    assert!(!task.artifacts.is_empty(), "{task:?}");
    let waiting = s
        .send_task(&format!("tck-input-required-{}", suffix()), "more?")
        .await;
    assert_eq!(state(&waiting), pb::TaskState::InputRequired);
}

#[tokio::test]
async fn a_send_with_return_immediately_answers_before_the_task_settles() {
    let s = GrpcServer::start().await;
    let r = s
        .client
        .clone()
        .send_message(s.req(send_request(
            &format!("tck-delayed-complete-{}", suffix()),
            "slowly",
            true,
        )))
        .await
        .unwrap()
        .into_inner();
    let Some(pb::send_message_response::Payload::Task(task)) = r.payload else {
        panic!("expected a task: {r:?}");
    };
    assert!(
        matches!(
            state(&task),
            pb::TaskState::Submitted | pb::TaskState::Working
        ),
        "{task:?}"
    );
    for _ in 0..200 {
        if state(&s.get_task(&task.id, None).await) == pb::TaskState::Completed {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{} never completed", task.id);
}

#[tokio::test]
async fn a_direct_message_reply_keeps_its_oneof() {
    let s = GrpcServer::start().await;
    let r = s
        .client
        .clone()
        .send_message(s.req(send_request(
            &format!("tck-message-response-{}", suffix()),
            "hi",
            false,
        )))
        .await
        .unwrap()
        .into_inner();
    let Some(pb::send_message_response::Payload::Message(m)) = r.payload else {
        panic!("expected a message: {r:?}");
    };
    assert_eq!(m.role, pb::Role::Agent as i32);
}

#[tokio::test]
async fn get_task_honours_history_length() {
    let s = GrpcServer::start().await;
    let task = s
        .send_task(&format!("tck-input-required-{}", suffix()), "question")
        .await;
    let all = s.get_task(&task.id, None).await;
    assert!(!all.history.is_empty(), "{all:?}");
    assert!(s.get_task(&task.id, Some(0)).await.history.is_empty());
    assert_eq!(s.get_task(&task.id, Some(1)).await.history.len(), 1);
    let first = &all.history[0];
    assert_eq!(first.role, pb::Role::User as i32);
}

#[tokio::test]
async fn list_tasks_filters_and_pages() {
    let s = GrpcServer::start().await;
    let done = s
        .send_task(&format!("tck-artifact-text-{}", suffix()), "one")
        .await;
    let waiting = s
        .send_task(&format!("tck-input-required-{}", suffix()), "two")
        .await;
    // a second task in the first one's context
    let mut follow = send_request(&format!("tck-complete-task-{}", suffix()), "three", false);
    follow.message.as_mut().unwrap().context_id = done.context_id.clone();
    s.client
        .clone()
        .send_message(s.req(follow))
        .await
        .expect("follow-up in the same context");

    let list = |r: pb::ListTasksRequest| {
        let s = &s;
        async move {
            s.client
                .clone()
                .list_tasks(s.req(r))
                .await
                .unwrap_or_else(|e| panic!("ListTasks: {e:?}"))
                .into_inner()
        }
    };
    let everything = list(pb::ListTasksRequest::default()).await;
    assert_eq!(everything.total_size, 3);
    assert_eq!(everything.tasks.len(), 3);
    assert_eq!(everything.next_page_token, "");
    assert_eq!(everything.page_size, 50);
    assert!(
        everything.tasks.iter().all(|t| t.artifacts.is_empty()),
        "artifacts only when asked for"
    );

    let in_context = list(pb::ListTasksRequest {
        context_id: done.context_id.clone(),
        ..Default::default()
    })
    .await;
    assert_eq!(in_context.total_size, 2);
    assert!(in_context
        .tasks
        .iter()
        .all(|t| t.context_id == done.context_id));

    let interrupted = list(pb::ListTasksRequest {
        status: pb::TaskState::InputRequired as i32,
        ..Default::default()
    })
    .await;
    assert_eq!(
        interrupted.tasks.iter().map(|t| &t.id).collect::<Vec<_>>(),
        vec![&waiting.id]
    );

    let with_artifacts = list(pb::ListTasksRequest {
        context_id: done.context_id.clone(),
        include_artifacts: Some(true),
        ..Default::default()
    })
    .await;
    let first = with_artifacts
        .tasks
        .iter()
        .find(|t| t.id == done.id)
        .unwrap();
    assert!(!first.artifacts.is_empty());

    let none_later = list(pb::ListTasksRequest {
        status_timestamp_after: Some(prost_types::Timestamp {
            seconds: 4_102_444_800, // 2100-01-01
            nanos: 0,
        }),
        ..Default::default()
    })
    .await;
    assert_eq!(none_later.total_size, 0);

    let mut seen = Vec::new();
    let mut token = String::new();
    for _ in 0..5 {
        let page = list(pb::ListTasksRequest {
            page_size: Some(1),
            page_token: token.clone(),
            history_length: Some(0),
            ..Default::default()
        })
        .await;
        assert_eq!(page.tasks.len(), 1);
        assert_eq!(page.page_size, 1);
        assert_eq!(page.total_size, 3);
        assert!(page.tasks[0].history.is_empty());
        seen.push(page.tasks[0].id.clone());
        token = page.next_page_token;
        if token.is_empty() {
            break;
        }
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 3, "every task once across the pages");
}

#[tokio::test]
async fn cancel_cancels_an_open_task_and_refuses_a_finished_one() {
    let s = GrpcServer::start().await;
    let waiting = s
        .send_task(&format!("tck-input-required-{}", suffix()), "wait")
        .await;
    let canceled = s
        .client
        .clone()
        .cancel_task(s.req(pb::CancelTaskRequest {
            id: waiting.id.clone(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(canceled.id, waiting.id);
    assert_eq!(state(&canceled), pb::TaskState::Canceled);
    assert_eq!(
        state(&s.get_task(&waiting.id, None).await),
        pb::TaskState::Canceled
    );

    let done = s
        .send_task(&format!("tck-complete-task-{}", suffix()), "done")
        .await;
    let e = s
        .client
        .clone()
        .cancel_task(s.req(pb::CancelTaskRequest {
            id: done.id.clone(),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(
        code_and_reason(&e),
        (Code::FailedPrecondition, "TASK_NOT_CANCELABLE".into())
    );
}

// ------------------------------------------------------------------ push notification configs

#[tokio::test]
async fn the_four_push_config_rpcs() {
    let s = GrpcServer::start().await;
    let task = s
        .send_task(&format!("tck-complete-task-{}", suffix()), "push")
        .await;
    let mut client = s.client.clone();
    let wanted = pb::TaskPushNotificationConfig {
        id: "cfg-1".into(),
        task_id: task.id.clone(),
        url: "https://example.com/hook".into(),
        token: "opaque".into(),
        authentication: Some(pb::AuthenticationInfo {
            scheme: "Bearer".into(),
            credentials: "s3cret".into(),
        }),
        ..Default::default()
    };
    let created = client
        .create_task_push_notification_config(s.req(wanted.clone()))
        .await
        .unwrap()
        .into_inner();
    // the credentials never leave the server (ADR 022)
    let mut shown = wanted.clone();
    shown.authentication = Some(pb::AuthenticationInfo {
        scheme: "Bearer".into(),
        credentials: String::new(),
    });
    assert_eq!(created, shown);
    let other = client
        .create_task_push_notification_config(s.req(pb::TaskPushNotificationConfig {
            task_id: task.id.clone(),
            url: "https://example.com/other".into(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(!other.id.is_empty() && other.id != "cfg-1");

    let got = client
        .get_task_push_notification_config(s.req(pb::GetTaskPushNotificationConfigRequest {
            task_id: task.id.clone(),
            id: "cfg-1".into(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(got, shown);

    let list = |client: &mut pb::a2a_service_client::A2aServiceClient<_>| {
        let req = s.req(pb::ListTaskPushNotificationConfigsRequest {
            task_id: task.id.clone(),
            ..Default::default()
        });
        let mut c = client.clone();
        async move {
            c.list_task_push_notification_configs(req)
                .await
                .unwrap()
                .into_inner()
        }
    };
    let all = list(&mut client).await;
    assert_eq!(all.configs.len(), 2);
    assert_eq!(all.next_page_token, "");

    let delete = pb::DeleteTaskPushNotificationConfigRequest {
        task_id: task.id.clone(),
        id: "cfg-1".into(),
        ..Default::default()
    };
    client
        .delete_task_push_notification_config(s.req(delete.clone()))
        .await
        .expect("deleted");
    client
        .delete_task_push_notification_config(s.req(delete))
        .await
        .expect("deleting again succeeds (idempotent)");
    let e = client
        .get_task_push_notification_config(s.req(pb::GetTaskPushNotificationConfigRequest {
            task_id: task.id.clone(),
            id: "cfg-1".into(),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(
        code_and_reason(&e),
        (Code::NotFound, "TASK_NOT_FOUND".into())
    );
    let left = list(&mut client).await;
    assert_eq!(
        left.configs.iter().map(|c| &c.id).collect::<Vec<_>>(),
        vec![&other.id]
    );
}

// ------------------------------------------------------------------ errors

#[tokio::test]
async fn an_unknown_task_is_not_found_with_error_info() {
    let s = GrpcServer::start().await;
    let mut client = s.client.clone();
    let e = client
        .get_task(s.req(pb::GetTaskRequest {
            id: "no-such-task".into(),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(
        code_and_reason(&e),
        (Code::NotFound, "TASK_NOT_FOUND".into())
    );
    assert_eq!(e.message(), "task no-such-task not found");
    let info = tonic_types::StatusExt::get_details_error_info(&e).unwrap();
    assert_eq!(info.metadata["taskId"], "no-such-task");

    let e = client
        .cancel_task(s.req(pb::CancelTaskRequest {
            id: "no-such-task".into(),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(code_and_reason(&e).1, "TASK_NOT_FOUND");
    let mut to_unknown = send_request("m-unknown", "hi", false);
    to_unknown.message.as_mut().unwrap().task_id = "no-such-task".into();
    let e = client.send_message(s.req(to_unknown)).await.unwrap_err();
    assert_eq!(code_and_reason(&e).1, "TASK_NOT_FOUND");
}

/// Every RPC with a required field left out: INVALID_ARGUMENT / INVALID_PARAMS naming the
/// field, and nothing stored.
#[tokio::test]
async fn missing_required_fields_are_invalid_arguments_and_change_nothing() {
    let s = GrpcServer::start().await;
    let task = s
        .send_task(&format!("tck-complete-task-{}", suffix()), "the one task")
        .await;
    let c = || s.client.clone();
    let part_without_content = pb::Message {
        parts: vec![pb::Part::default()],
        ..user_message("m-2", "x")
    };
    let cases: Vec<(&str, tonic::Status, &str)> = vec![
        (
            "SendMessage without a message",
            c().send_message(s.req(pb::SendMessageRequest::default()))
                .await
                .unwrap_err(),
            "message",
        ),
        (
            "SendMessage without a message id",
            c().send_message(s.req(pb::SendMessageRequest {
                message: Some(user_message("", "x")),
                ..Default::default()
            }))
            .await
            .unwrap_err(),
            "message.messageId",
        ),
        (
            "SendMessage without parts",
            c().send_message(s.req(pb::SendMessageRequest {
                message: Some(pb::Message {
                    parts: vec![],
                    ..user_message("m-1", "x")
                }),
                ..Default::default()
            }))
            .await
            .unwrap_err(),
            "message.parts",
        ),
        (
            "SendMessage without a role",
            c().send_message(s.req(pb::SendMessageRequest {
                message: Some(pb::Message {
                    role: pb::Role::Unspecified as i32,
                    ..user_message("m-3", "x")
                }),
                ..Default::default()
            }))
            .await
            .unwrap_err(),
            "message.role",
        ),
        (
            "SendMessage with a part without content",
            c().send_message(s.req(pb::SendMessageRequest {
                message: Some(part_without_content),
                ..Default::default()
            }))
            .await
            .unwrap_err(),
            "exactly one of text, raw, url, data",
        ),
        (
            "GetTask without an id",
            c().get_task(s.req(pb::GetTaskRequest::default()))
                .await
                .unwrap_err(),
            "`id`",
        ),
        (
            "CancelTask without an id",
            c().cancel_task(s.req(pb::CancelTaskRequest::default()))
                .await
                .unwrap_err(),
            "`id`",
        ),
        (
            "CreateTaskPushNotificationConfig without a task id",
            c().create_task_push_notification_config(s.req(pb::TaskPushNotificationConfig {
                url: "https://example.com/h".into(),
                ..Default::default()
            }))
            .await
            .unwrap_err(),
            "taskId",
        ),
        (
            "CreateTaskPushNotificationConfig without a url",
            c().create_task_push_notification_config(s.req(pb::TaskPushNotificationConfig {
                task_id: task.id.clone(),
                ..Default::default()
            }))
            .await
            .unwrap_err(),
            "url",
        ),
        (
            "GetTaskPushNotificationConfig without an id",
            c().get_task_push_notification_config(s.req(
                pb::GetTaskPushNotificationConfigRequest {
                    task_id: task.id.clone(),
                    ..Default::default()
                },
            ))
            .await
            .unwrap_err(),
            "`id`",
        ),
        (
            "GetTaskPushNotificationConfig without a task id",
            c().get_task_push_notification_config(s.req(
                pb::GetTaskPushNotificationConfigRequest {
                    id: "cfg".into(),
                    ..Default::default()
                },
            ))
            .await
            .unwrap_err(),
            "`taskId`",
        ),
        (
            "ListTaskPushNotificationConfigs without a task id",
            c().list_task_push_notification_configs(
                s.req(pb::ListTaskPushNotificationConfigsRequest::default()),
            )
            .await
            .unwrap_err(),
            "`taskId`",
        ),
        (
            "DeleteTaskPushNotificationConfig without an id",
            c().delete_task_push_notification_config(s.req(
                pb::DeleteTaskPushNotificationConfigRequest {
                    task_id: task.id.clone(),
                    ..Default::default()
                },
            ))
            .await
            .unwrap_err(),
            "`id`",
        ),
        (
            "ListTasks with a page size over 100",
            c().list_tasks(s.req(pb::ListTasksRequest {
                page_size: Some(101),
                ..Default::default()
            }))
            .await
            .unwrap_err(),
            "pageSize",
        ),
    ];
    for (name, status, names) in &cases {
        assert_eq!(
            code_and_reason(status),
            (Code::InvalidArgument, "INVALID_PARAMS".into()),
            "{name}: {status:?}"
        );
        assert!(
            status.message().contains(names),
            "{name}: {:?} should name {names}",
            status.message()
        );
    }
    let everything = s
        .client
        .clone()
        .list_tasks(s.req(pb::ListTasksRequest::default()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(everything.total_size, 1, "no task was created");
    let configs = s
        .client
        .clone()
        .list_task_push_notification_configs(s.req(pb::ListTaskPushNotificationConfigsRequest {
            task_id: task.id.clone(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(configs.configs.is_empty(), "no config was stored");
    let after = s.get_task(&task.id, None).await;
    assert_eq!(after, s.get_task(&task.id, None).await);
    assert_eq!(state(&after), pb::TaskState::Completed);
}

#[tokio::test]
async fn versions_other_than_1_x_are_refused() {
    let s = GrpcServer::start().await;
    let with_version = |v: Option<&'static str>| {
        let mut r = Request::new(pb::ListTasksRequest::default());
        if let Some(v) = v {
            r.metadata_mut()
                .insert("a2a-version", MetadataValue::from_static(v));
        }
        r
    };
    for v in [None, Some("99.0"), Some("0.3"), Some("")] {
        let e = s
            .client
            .clone()
            .list_tasks(with_version(v))
            .await
            .unwrap_err();
        assert_eq!(
            code_and_reason(&e),
            (Code::FailedPrecondition, "VERSION_NOT_SUPPORTED".into()),
            "{v:?}"
        );
    }
    let e = s
        .client
        .clone()
        .list_tasks(with_version(None))
        .await
        .unwrap_err();
    let info = tonic_types::StatusExt::get_details_error_info(&e).unwrap();
    assert_eq!(info.metadata["requestedVersion"], "0.3");
    for v in ["1.0", "1.1", " 1.0 "] {
        s.client
            .clone()
            .list_tasks(with_version(Some(v)))
            .await
            .unwrap_or_else(|e| panic!("{v:?} is served: {e:?}"));
    }
}

#[tokio::test]
async fn unknown_extensions_are_ignored() {
    let s = GrpcServer::start().await;
    let mut r = s.req(pb::ListTasksRequest::default());
    r.metadata_mut().insert(
        "a2a-extensions",
        MetadataValue::from_static("urn:example:unknown, https://example.com/ext/v9"),
    );
    s.client.clone().list_tasks(r).await.expect("served");
}

#[tokio::test]
async fn bearer_tokens_are_required_when_configured_and_tenants_stay_apart() {
    let mut config = Config::in_memory().with_conformance_scenarios();
    config.timings = fast_timings();
    config.tokens = HashMap::from([
        (
            "alice-token".to_string(),
            Principal::new("acme", "alice").unwrap(),
        ),
        (
            "bob-token".to_string(),
            Principal::new("acme", "bob").unwrap(),
        ),
    ]);
    let s = GrpcServer::start_with(config).await;
    for token in [None, Some("Bearer wrong"), Some("Basic abc")] {
        let mut r = Request::new(pb::ListTasksRequest::default());
        r.metadata_mut()
            .insert("a2a-version", MetadataValue::from_static("1.0"));
        if let Some(t) = token {
            r.metadata_mut().insert("authorization", t.parse().unwrap());
        }
        let e = s.client.clone().list_tasks(r).await.unwrap_err();
        assert_eq!(
            code_and_reason(&e),
            (Code::Unauthenticated, "UNAUTHENTICATED".into()),
            "{token:?}"
        );
    }
    let alice = s.as_user("alice-token");
    let bob = s.as_user("bob-token");
    let task = alice
        .send_task(&format!("tck-complete-task-{}", suffix()), "mine")
        .await;
    assert_eq!(alice.get_task(&task.id, None).await.id, task.id);
    let e = bob
        .client
        .clone()
        .get_task(bob.req(pb::GetTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(
        code_and_reason(&e).1,
        "TASK_NOT_FOUND",
        "not visible to bob"
    );
    // the same task over JSON-RPC with the same token
    let v = alice.http.ok("GetTask", json!({"id": task.id})).await;
    assert_eq!(v["id"], task.id);
}

#[tokio::test]
async fn streams_are_server_streaming_and_the_extended_card_is_refused() {
    use pb::stream_response::Payload;
    let s = GrpcServer::start().await;
    let mut client = s.client.clone();
    let mut stream = client
        .send_streaming_message(s.req(send_request(
            &format!("tck-stream-artifact-chunked-{}", suffix()),
            "stream",
            false,
        )))
        .await
        .unwrap()
        .into_inner();
    let mut kinds = Vec::new();
    while let Some(item) = stream.message().await.unwrap() {
        kinds.push(match item.payload.unwrap() {
            Payload::Task(t) => format!("task {}", t.status.unwrap().state),
            Payload::StatusUpdate(u) => format!("status {}", u.status.unwrap().state),
            Payload::ArtifactUpdate(a) => format!("artifact {} {}", a.append, a.last_chunk),
            Payload::Message(_) => "message".into(),
        });
    }
    let (submitted, working, completed) = (
        pb::TaskState::Submitted as i32,
        pb::TaskState::Working as i32,
        pb::TaskState::Completed as i32,
    );
    assert_eq!(
        kinds,
        [
            format!("task {submitted}"),
            format!("status {working}"),
            "artifact false false".into(),
            "artifact true true".into(),
            format!("status {completed}"),
        ]
    );
    let e = client
        .subscribe_to_task(s.req(pb::SubscribeToTaskRequest {
            id: "x".into(),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(
        code_and_reason(&e),
        (Code::NotFound, "TASK_NOT_FOUND".into())
    );
    let e = client
        .get_extended_agent_card(s.req(pb::GetExtendedAgentCardRequest::default()))
        .await
        .unwrap_err();
    assert_eq!(
        code_and_reason(&e),
        (Code::FailedPrecondition, "UNSUPPORTED_OPERATION".into())
    );
}

#[tokio::test]
async fn an_idempotency_key_makes_task_creation_safe_to_retry() {
    let s = GrpcServer::start().await;
    let with_key = |r: pb::SendMessageRequest| {
        let mut r = s.req(r);
        r.metadata_mut()
            .insert("idempotency-key", MetadataValue::from_static("k-1"));
        r
    };
    let mut client = s.client.clone();
    let a = client
        .send_message(with_key(send_request("m-i", "once", true)))
        .await
        .unwrap()
        .into_inner();
    let b = client
        .send_message(with_key(send_request("m-i", "once", true)))
        .await
        .unwrap()
        .into_inner();
    let id = |r: &pb::SendMessageResponse| match &r.payload {
        Some(pb::send_message_response::Payload::Task(t)) => t.id.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(id(&a), id(&b));
    let e = client
        .send_message(with_key(send_request("m-i", "different", true)))
        .await
        .unwrap_err();
    assert_eq!(code_and_reason(&e).1, "INVALID_PARAMS");
}

// ------------------------------------------------------------------ the 1.1 draft's own numbers

/// The 1.1 draft's timeline as the draft's text numbers it (a2aproject/A2A#2129 at b5fe6101:
/// `oneof entry { Message message = 1; TaskStatus status = 2; } int64 generation = 3;`): a
/// client built from the draft reads every entry of our answer as the status or message it is,
/// the same entries JSON-RPC shows a 1.1 caller.
#[tokio::test]
async fn a_client_built_from_the_draft_reads_the_1_1_timeline() {
    use prost::Message as _;
    let s = GrpcServer::start().await;
    let task = s
        .send_task(&format!("tck-input-required-{}", suffix()), "go")
        .await;
    let request = pb::GetTaskRequest {
        id: task.id.clone(),
        ..Default::default()
    }
    .encode_to_vec();
    let bytes = raw_unary(s.grpc, "GetTask", request, "1.1")
        .await
        .unwrap_or_else(|e| panic!("GetTask over gRPC, 1.1: {e:?}"));
    let draft = draft_message("a2a-1.1-draft-timeline.proto", "draft.lf.a2a.v1.Task");
    let read = prost_reflect::DynamicMessage::decode(draft, bytes.as_slice())
        .unwrap_or_else(|e| panic!("the draft's Task cannot read our answer: {e}"));
    let v = serde_json::to_value(&read).unwrap();
    let entries = |t: &serde_json::Value| -> Vec<(String, String)> {
        t["timeline"]
            .as_array()
            .unwrap_or_else(|| panic!("a timeline: {t}"))
            .iter()
            .map(|e| {
                let what = match (e.get("status"), e.get("message")) {
                    (Some(s), None) => s["state"].as_str().unwrap_or("?").to_string(),
                    (None, Some(m)) => format!("message {}", m["parts"][0]["text"]),
                    _ => panic!("an entry is a status or a message: {e}"),
                };
                (e["generation"].as_str().unwrap_or("0").to_string(), what)
            })
            .collect()
    };
    let read = entries(&v);
    assert_eq!(
        read[..2],
        [
            ("1".to_string(), "TASK_STATE_SUBMITTED".to_string()),
            ("1".to_string(), "message \"go\"".to_string()),
        ],
        "{v}"
    );
    assert_eq!(
        read.last().map(|e| e.1.as_str()),
        Some("TASK_STATE_INPUT_REQUIRED"),
        "{v}"
    );
    let over_jsonrpc = s
        .http
        .call_with("GetTask", json!({"id": task.id}), &[("A2A-Version", "1.1")])
        .await;
    assert_eq!(read, entries(&over_jsonrpc["result"]), "{over_jsonrpc}");
}

/// The 1.1 draft's elicitations as the draft's text numbers them (a2aproject/A2A#2149 at
/// 1fe50314: `Task.elicitations = 9`, `TaskStatus.elicitations = 4`, `Message.elicitation_ids
/// = 9`, `Elicitation{elicitation_id = 1, state = 2, metadata = 3}`): a client built from the
/// draft reads a help request's elicitation in our 1.1 answer, and none in our 1.0 one.
#[tokio::test]
async fn a_client_built_from_the_draft_reads_the_1_1_elicitations() {
    use prost::Message as _;
    let s = GrpcServer::start().await;
    let message = json!({"messageId": "th-ask-bob", "role": "ROLE_USER", "parts": [
        {"text": "Deploy it"},
        {"data": {"name": "Release", "goal": "Ship 1.0", "participants": [
            {"id": "ann", "kind": "human", "role": "admin"},
            {"id": "bob", "kind": "human", "role": "assignee"}]},
         "mediaType": "application/vnd.tiny-harness.task+json"}],
        "metadata": {"participant_id": "ann"}});
    let sent = s
        .http
        .call_with(
            "SendMessage",
            json!({"message": message}),
            &[("A2A-Version", "1.1")],
        )
        .await;
    let id = sent["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{sent}"));
    let draft = draft_message(
        "a2a-1.1-draft-elicitations.proto",
        "draft2149.lf.a2a.v1.Task",
    );
    let read = |version: &'static str| {
        let draft = draft.clone();
        let request = pb::GetTaskRequest {
            id: id.to_string(),
            ..Default::default()
        }
        .encode_to_vec();
        async move {
            let bytes = raw_unary(s.grpc, "GetTask", request, version)
                .await
                .unwrap_or_else(|e| panic!("GetTask over gRPC, {version}: {e:?}"));
            let read = prost_reflect::DynamicMessage::decode(draft, bytes.as_slice())
                .unwrap_or_else(|e| panic!("the draft's Task cannot read our answer: {e}"));
            serde_json::to_value(&read).unwrap()
        }
    };
    let v = read("1.1").await;
    let asked = &v["elicitations"][0];
    assert_eq!(asked["state"], "ELICITATION_STATE_BLOCKED", "{v}");
    assert_eq!(asked["metadata"]["kind"], "help-request", "{v}");
    assert_eq!(v["status"]["elicitations"][0], *asked, "{v}");
    assert_eq!(
        sent["result"]["task"]["elicitations"][0]["elicitationId"],
        asked["elicitationId"]
    );
    let v = read("1.0").await;
    assert!(v.get("elicitations").is_none(), "{v}");
    assert!(v["status"].get("elicitations").is_none(), "{v}");
}

// ------------------------------------------------------------------ parity with JSON-RPC

#[tokio::test]
async fn both_bindings_answer_alike() {
    let s = GrpcServer::start().await;
    let task = s
        .send_task(&format!("tck-artifact-text-{}", suffix()), "same")
        .await;
    let over_grpc = to_protojson(&s.get_task(&task.id, None).await).unwrap();
    let over_jsonrpc = s.http.ok("GetTask", json!({"id": task.id})).await;
    assert_eq!(over_grpc, over_jsonrpc);

    // the same refusals, with the JSON-RPC code of the same table row
    let e = s
        .client
        .clone()
        .get_task(s.req(pb::GetTaskRequest {
            id: "nope".into(),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    let v = s.http.call("GetTask", json!({"id": "nope"})).await;
    assert_eq!(error_code(&v), -32001);
    assert_eq!(v["error"]["message"], e.message());
    assert_eq!(v["error"]["data"][0]["reason"], code_and_reason(&e).1);

    let e = s
        .client
        .clone()
        .send_message(s.req(pb::SendMessageRequest {
            message: Some(pb::Message {
                parts: vec![],
                ..user_message("m-p", "x")
            }),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    let v = s
        .http
        .call(
            "SendMessage",
            json!({"message": {"messageId": "m-p", "role": "ROLE_USER", "parts": []}}),
        )
        .await;
    assert_eq!(error_code(&v), -32602);
    assert_eq!(v["error"]["message"], e.message());
}

// ------------------------------------------------------------------ TLS

#[tokio::test]
async fn tls_serves_with_the_configured_certificate() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let pem = TlsPem {
        cert: cert.cert.pem(),
        key: cert.signing_key.serialize_pem(),
    };
    let mut config = Config::in_memory().with_conformance_scenarios();
    config.grpc = Some(GrpcSettings {
        tls: Some(pem.clone()),
        ..GrpcSettings::loopback()
    });
    let s = GrpcServer::start_with(config).await;
    let tls = tonic::transport::ClientTlsConfig::new()
        .ca_certificate(tonic::transport::Certificate::from_pem(&pem.cert))
        .domain_name("localhost");
    let channel =
        tonic::transport::Channel::from_shared(format!("https://localhost:{}", s.grpc.port()))
            .unwrap()
            .tls_config(tls)
            .unwrap()
            .connect()
            .await
            .expect("TLS handshake");
    let mut client = pb::a2a_service_client::A2aServiceClient::new(channel);
    let mut r = Request::new(pb::ListTasksRequest::default());
    r.metadata_mut()
        .insert("a2a-version", MetadataValue::from_static("1.0"));
    let page = client
        .list_tasks(r)
        .await
        .expect("served over TLS")
        .into_inner();
    assert_eq!(page.total_size, 0);

    // a plaintext client gets no answer from the TLS port
    let plain =
        tonic::transport::Channel::from_shared(format!("http://127.0.0.1:{}", s.grpc.port()))
            .unwrap()
            .connect_timeout(Duration::from_secs(2))
            .timeout(Duration::from_secs(2))
            .connect()
            .await;
    if let Ok(channel) = plain {
        let mut client = pb::a2a_service_client::A2aServiceClient::new(channel);
        let mut r = Request::new(pb::ListTasksRequest::default());
        r.metadata_mut()
            .insert("a2a-version", MetadataValue::from_static("1.0"));
        assert!(client.list_tasks(r).await.is_err());
    }
}

#[tokio::test]
async fn a_bad_certificate_stops_the_start() {
    let mut config = Config::in_memory().with_conformance_scenarios();
    config.grpc = Some(GrpcSettings {
        tls: Some(TlsPem {
            cert: "not a certificate".into(),
            key: "not a key".into(),
        }),
        ..GrpcSettings::loopback()
    });
    let e = taskledger_local::start(config).await.unwrap_err();
    assert!(e.to_string().contains("TLS"), "{e}");
}

#[tokio::test]
async fn the_reflection_service_lists_the_a2a_service() {
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    use tonic_reflection::pb::v1::ServerReflectionRequest;
    let s = GrpcServer::start().await;
    let channel = tonic::transport::Channel::from_shared(format!("http://{}", s.grpc))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let ask = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut answers = ServerReflectionClient::new(channel)
        .server_reflection_info(tonic::codegen::tokio_stream::iter(vec![ask]))
        .await
        .expect("reflection answers")
        .into_inner();
    let first = answers.message().await.unwrap().expect("one answer");
    let Some(MessageResponse::ListServicesResponse(list)) = first.message_response else {
        panic!("{first:?}");
    };
    let names: Vec<_> = list.service.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"lf.a2a.v1.A2AService"), "{names:?}");
    assert!(
        names.contains(&"a2a.v1.A2AService"),
        "A2A 0.3's too: {names:?}"
    );
}

/// A2A 0.3's service on the same port (ADR 031): a 0.3 client's calls, in 0.3 messages,
/// reach the same tasks as 1.0's.
#[tokio::test]
async fn the_0_3_service_serves_the_same_tasks_on_the_same_port() {
    use taskledger_app::grpc::proto03::{self as p03, a2a_service_client::A2aServiceClient};
    let s = GrpcServer::start().await;
    let channel = tonic::transport::Channel::from_shared(format!("http://{}", s.grpc))
        .unwrap()
        .connect_lazy();
    let mut client = A2aServiceClient::new(channel);
    let message = p03::Message {
        message_id: "tck-input-required-g03".into(),
        role: p03::Role::User as i32,
        content: vec![p03::Part {
            part: Some(p03::part::Part::Text("hello over 0.3".into())),
            metadata: None,
        }],
        ..Default::default()
    };
    let mut send = tonic::Request::new(p03::SendMessageRequest {
        request: Some(message),
        configuration: Some(p03::SendMessageConfiguration {
            blocking: true,
            ..Default::default()
        }),
        metadata: None,
    });
    send.metadata_mut().insert(
        "x-a2a-extensions",
        "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/task/v1"
            .parse()
            .unwrap(),
    );
    let reply = client.send_message(send).await.expect("0.3 SendMessage");
    assert_eq!(
        reply
            .metadata()
            .get("x-a2a-extensions")
            .and_then(|v| v.to_str().ok()),
        Some("https://madarauchiha-314.github.io/tiny-harness/a2a/ext/task/v1"),
        "echoed under 0.3's key"
    );
    let Some(p03::send_message_response::Payload::Task(task)) = reply.into_inner().payload else {
        panic!("a task");
    };
    assert_eq!(
        task.status.as_ref().map(|s| s.state),
        Some(p03::TaskState::InputRequired as i32)
    );
    // 1.0 reads what 0.3 made, and 0.3 reads it back by resource name.
    let one = s
        .http
        .ok("GetTask", serde_json::json!({"id": task.id}))
        .await;
    assert_eq!(one["history"][0]["parts"][0]["text"], "hello over 0.3");
    let got = client
        .get_task(p03::GetTaskRequest {
            name: format!("tasks/{}", task.id),
            history_length: 0,
        })
        .await
        .expect("0.3 GetTask")
        .into_inner();
    assert_eq!(got.id, task.id);
    let bad = client
        .get_task(p03::GetTaskRequest {
            name: task.id.clone(),
            history_length: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(
        bad.code(),
        tonic::Code::InvalidArgument,
        "not a resource name: {bad:?}"
    );
    let canceled = client
        .cancel_task(p03::CancelTaskRequest {
            name: format!("tasks/{}", task.id),
        })
        .await
        .expect("0.3 CancelTask")
        .into_inner();
    assert_eq!(
        canceled.status.map(|s| s.state),
        Some(p03::TaskState::Cancelled as i32)
    );
    // The 0.3 card: the public one, where no caller authenticates.
    let card = client
        .get_agent_card(p03::GetAgentCardRequest {})
        .await
        .expect("0.3 GetAgentCard")
        .into_inner();
    assert!(card.protocol_version.starts_with("0.3"), "{card:?}");
    assert!(card.url.ends_with("/a2a"), "{card:?}");
    // A 1.x version on the 0.3 service is refused.
    let mut mixed = tonic::Request::new(p03::GetTaskRequest {
        name: format!("tasks/{}", task.id),
        history_length: 0,
    });
    mixed
        .metadata_mut()
        .insert("a2a-version", "1.0".parse().unwrap());
    let e = client.get_task(mixed).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::FailedPrecondition, "{e:?}");
}
