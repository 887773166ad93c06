//! ProtoJSON transcoding between protobuf and the domain's wire types.
//!
//! The server reads a request's bytes into a `DynamicMessage` of the RPC's input type and
//! serialises it as ProtoJSON (`serde_json::Value`, camelCase, enum names, defaults omitted),
//! which becomes the same `taskledger_domain::wire` type, through the same decoder
//! (`request::decode`), as a JSON-RPC `params` object; a result's ProtoJSON is written as the
//! output type's bytes by `encode`. Both bindings therefore share one set of serde types and one
//! validation, and a field the domain can read on JSON-RPC is readable on gRPC by
//! construction. The functions on generated types (`to_protojson`, `from_protojson`, `request`,
//! `response`) are the same transcoding for clients and tests.

use std::sync::OnceLock;

use prost::bytes::Buf;
use prost_reflect::{DescriptorPool, DeserializeOptions, DynamicMessage, MessageDescriptor};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use taskledger_domain::error::ErrorKind;

use super::{encode, plan, serialize};
use crate::error::AppError;
use crate::request;

/// The encoded `FileDescriptorSet` of `a2a.proto` and its imports (built by build.rs).
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/a2a_descriptor.bin"));

/// Name of the request object in an InvalidParams field path (`request.message.parts`).
pub const REQUEST_ROOT: &str = "request";

/// The message a Task result is written as.
pub const TASK_MESSAGE: &str = "lf.a2a.v1.Task";

pub(super) fn pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(|| {
        DescriptorPool::decode(FILE_DESCRIPTOR_SET)
            .expect("the descriptor set built from a2a.proto decodes")
    })
}

fn internal(what: &str, e: impl std::fmt::Display) -> AppError {
    AppError::protocol(ErrorKind::Internal, format!("{what}: {e}"))
}

fn descriptor<M: prost::Name>() -> Result<MessageDescriptor, AppError> {
    descriptor_of(&M::full_name())
}

/// The descriptor of the message named `full_name` (`lf.a2a.v1.Task`).
pub fn descriptor_of(full_name: &str) -> Result<MessageDescriptor, AppError> {
    pool()
        .get_message_by_name(full_name)
        .ok_or_else(|| internal("no descriptor", full_name))
}

/// Largest magnitude up to which every whole number is exact in a double (2^53).
const EXACT_IN_DOUBLE: f64 = 9_007_199_254_740_992.0;

/// `google.protobuf.Value` numbers are doubles, so `{"n": 3}` in a Struct arrives as `3.0`.
/// JSON has one number type and JSON-RPC keeps `3` as written: a whole double within 2^53
/// becomes an integer again, so metadata reads the same on either binding. (The proto has no
/// double or float field of its own; every other number is an integer already.)
fn integral_numbers(v: &mut Value) {
    match v {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if f.fract() == 0.0 && f.abs() <= EXACT_IN_DOUBLE {
                *v = if f < 0.0 {
                    Value::from(f as i64)
                } else {
                    Value::from(f as u64)
                };
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_numbers),
        Value::Object(members) => members.values_mut().for_each(integral_numbers),
        _ => {}
    }
}

fn dynamic_to_json(dynamic: &DynamicMessage) -> Result<Value, AppError> {
    let mut value =
        serde_json::to_value(dynamic).map_err(|e| internal("cannot transcode the request", e))?;
    integral_numbers(&mut value);
    Ok(value)
}

/// The ProtoJSON form of a protobuf message (whole numbers in Struct values as integers).
pub fn to_protojson<M: prost::Message + prost::Name>(message: &M) -> Result<Value, AppError> {
    let mut dynamic = DynamicMessage::new(descriptor::<M>()?);
    dynamic
        .transcode_from(message)
        .map_err(|e| internal("cannot read the request", e))?;
    dynamic_to_json(&dynamic)
}

/// The ProtoJSON form of the encoded message `bytes` of type `desc` (the server's request
/// path); `Err` is the decode error, as prost reports it.
pub fn bytes_to_protojson(
    desc: &MessageDescriptor,
    bytes: impl Buf,
) -> Result<Result<Value, AppError>, prost::DecodeError> {
    let dynamic = DynamicMessage::decode(desc.clone(), bytes)?;
    Ok(dynamic_to_json(&dynamic))
}

/// The reply plans and the index of message `full_name` among them.
fn reply_plan(full_name: &str) -> Result<(&'static plan::Plans, usize), AppError> {
    let plans = plan::plans(pool());
    let index = plans
        .index_of(full_name)
        .ok_or_else(|| internal("no descriptor", full_name))?;
    Ok((plans, index))
}

/// The encoded message of type `full_name` whose ProtoJSON is `value` (the server's reply
/// path). Members the proto does not define are dropped: the domain's types only emit proto
/// fields, and a stray one must not fail a reply.
pub fn protojson_to_bytes(full_name: &str, value: &Value) -> Result<Vec<u8>, AppError> {
    let (plans, index) = reply_plan(full_name)?;
    let mut bytes = Vec::with_capacity(512);
    encode::message(plans, index, value, &mut bytes)
        .map_err(|e| internal("cannot transcode the result", e))?;
    Ok(bytes)
}

/// The encoded message of type `full_name` that `reply` serialises as (the server's reply
/// path, straight from the typed reply: `serialize`); the same bytes as `protojson_to_bytes`
/// of the reply's ProtoJSON but for the order of fields.
pub fn reply_to_bytes<T: Serialize + ?Sized>(
    full_name: &str,
    reply: &T,
) -> Result<Vec<u8>, AppError> {
    let (plans, index) = reply_plan(full_name)?;
    let mut bytes = Vec::with_capacity(512);
    serialize::message_bytes(plans, index, reply, &mut bytes)
        .map_err(|e| internal("cannot encode the result", e))?;
    Ok(bytes)
}

/// A protobuf message from its ProtoJSON form: `protojson_to_bytes`, decoded into the
/// generated type.
pub fn from_protojson<M>(value: Value) -> Result<M, AppError>
where
    M: prost::Message + prost::Name + Default,
{
    let bytes = protojson_to_bytes(&M::full_name(), &value)?;
    M::decode(bytes.as_slice()).map_err(|e| internal("cannot encode the result", e))
}

/// The same through `DynamicMessage` (prost-reflect's ProtoJSON reader): the reference the
/// descriptor-driven encoder is tested against.
pub fn from_protojson_dynamic<M>(value: Value) -> Result<M, AppError>
where
    M: prost::Message + prost::Name + Default,
{
    let options = DeserializeOptions::new().deny_unknown_fields(false);
    let dynamic = DynamicMessage::deserialize_with_options(descriptor::<M>()?, value, &options)
        .map_err(|e| internal("cannot transcode the result", e))?;
    dynamic
        .transcode_to::<M>()
        .map_err(|e| internal("cannot encode the result", e))
}

/// A gRPC request as the domain's typed request (validated like JSON-RPC `params`), with its
/// ProtoJSON form (the idempotency fingerprint is taken of it).
pub fn request<M, T>(message: &M) -> Result<(T, Value), AppError>
where
    M: prost::Message + prost::Name,
    T: DeserializeOwned,
{
    let value = to_protojson(message)?;
    let typed = request::decode(value.clone(), REQUEST_ROOT)?;
    Ok((typed, value))
}

/// A domain result as its gRPC response message.
pub fn response<T, M>(result: &T) -> Result<M, AppError>
where
    T: Serialize,
    M: prost::Message + prost::Name + Default,
{
    let value =
        serde_json::to_value(result).map_err(|e| internal("cannot serialise the result", e))?;
    from_protojson(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grpc::proto;
    use prost::Message as _;
    use serde_json::json;
    use taskledger_domain::wire;

    #[test]
    fn every_service_message_has_a_descriptor() {
        let service = pool()
            .get_service_by_name("lf.a2a.v1.A2AService")
            .expect("service");
        assert_eq!(service.methods().count(), 11);
        assert!(descriptor::<proto::Task>().is_ok());
        assert!(descriptor::<proto::ListTaskPushNotificationConfigsRequest>().is_ok());
    }

    #[test]
    fn a_request_reads_as_its_protojson_and_the_domain_type() {
        let m = proto::SendMessageRequest {
            message: Some(proto::Message {
                message_id: "m1".into(),
                role: proto::Role::User as i32,
                parts: vec![proto::Part {
                    content: Some(proto::part::Content::Raw(b"hi".to_vec())),
                    media_type: "text/plain".into(),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            configuration: Some(proto::SendMessageConfiguration {
                history_length: Some(0),
                return_immediately: true,
                ..Default::default()
            }),
            ..Default::default()
        };
        let (typed, value): (wire::SendMessageRequest, Value) = request(&m).unwrap();
        assert_eq!(
            value,
            json!({
                "message": {"messageId": "m1", "role": "ROLE_USER",
                            "parts": [{"raw": "aGk=", "mediaType": "text/plain"}]},
                "configuration": {"historyLength": 0, "returnImmediately": true}
            })
        );
        assert_eq!(typed.message.role, wire::Role::User);
        assert_eq!(
            typed.message.parts[0].content,
            wire::PartContent::Raw(b"hi".to_vec())
        );
        assert_eq!(typed.configuration.unwrap().history_length, Some(0));
    }

    #[test]
    fn a_missing_required_field_is_invalid_params_naming_it() {
        let e = request::<_, wire::SendMessageRequest>(&proto::SendMessageRequest::default())
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidParams);
        assert_eq!(e.metadata()["field"], "request");
        assert!(e.to_string().contains("message"), "{e}");
        let e = request::<_, wire::GetTaskRequest>(&proto::GetTaskRequest::default()).unwrap_err();
        assert!(e.to_string().contains("missing field `id`"), "{e}");
    }

    #[test]
    fn a_task_comes_back_with_every_member() {
        let task: wire::Task = serde_json::from_value(json!({
            "id": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-02T03:04:05.678Z",
                       "message": {"messageId": "a", "role": "ROLE_AGENT", "parts": [{"text": "done"}]}},
            "artifacts": [{"artifactId": "x", "parts": [{"data": {"k": [1.5, "two", null]}}]}],
            "history": [{"messageId": "m", "role": "ROLE_USER", "parts": [{"url": "https://e/x"}],
                         "metadata": {"n": 1.5}}],
            "metadata": {"a": {"b": true}}
        }))
        .unwrap();
        let p: proto::Task = response(&task).unwrap();
        assert_eq!(
            p.status.as_ref().unwrap().state,
            proto::TaskState::Completed as i32
        );
        assert_eq!(
            p.status.as_ref().unwrap().timestamp.unwrap().nanos,
            678_000_000
        );
        let back: wire::Task = serde_json::from_value(to_protojson(&p).unwrap()).unwrap();
        assert_eq!(back, task);
    }

    #[test]
    fn whole_numbers_in_struct_values_read_as_integers() {
        let m: wire::Message = serde_json::from_value(json!({
            "messageId": "m", "role": "ROLE_USER", "parts": [{"data": [3, -2, 1.5, 1e300]}],
            "metadata": {"budget": 3, "big": 1e17}
        }))
        .unwrap();
        let p: proto::Message = response(&m).unwrap();
        let v = to_protojson(&p).unwrap();
        assert_eq!(v["metadata"]["budget"], json!(3));
        assert!(v["metadata"]["budget"].is_u64());
        assert!(
            v["metadata"]["big"].is_f64(),
            "past 2^53 a double stays one"
        );
        assert_eq!(v["parts"][0]["data"], json!([3, -2, 1.5, 1e300]));
    }

    /// A task with every member the proto has, and some it does not.
    fn task_json() -> Value {
        json!({
            "id": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "1969-12-31T23:59:59.5Z",
                       "message": {"messageId": "a", "role": "ROLE_AGENT", "parts": [{"text": "?"}]}},
            "artifacts": [{"artifactId": "x", "name": "n", "extensions": ["urn:e"],
                           "parts": [{"data": null}, {"data": {"k": [1, "two", null, true, {"d": -2.5}]}},
                                     {"raw": "aGk=", "filename": "f", "mediaType": "text/plain"},
                                     {"url": "https://e/x"}, {"data": 0}, {"data": ""}]}],
            "history": [{"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}],
                         "referenceTaskIds": ["t0"], "metadata": {"n": {"deep": {"er": [[]]}}}}],
            "metadata": {"a": {"b": true}, "unknown": null},
            "notAProtoField": 1
        })
    }

    fn card_json() -> Value {
        serde_json::to_value(taskledger_domain::card::agent_card(
            &taskledger_domain::card::CardSettings {
                public_url: "https://a.example".into(),
                name: "n".into(),
                description: "d".into(),
                version: "1".into(),
                auth: taskledger_domain::card::CardAuth::Bearer,
                served: taskledger_domain::card::Served::all(),
                grpc_url: Some("a.example:443".into()),
                extended_card: true,
            },
        ))
        .unwrap()
    }

    /// The typed reply serializer (`reply_to_bytes`) and the ProtoJSON encoder write the same
    /// message for every reply shape, as prost decodes it (fields may come in another order).
    #[test]
    fn the_typed_reply_serializer_matches_the_protojson_encoder() {
        fn same<T, M>(v: Value)
        where
            T: DeserializeOwned + Serialize,
            M: prost::Message + prost::Name + Default + PartialEq + std::fmt::Debug,
        {
            let typed: T = serde_json::from_value(v.clone()).unwrap();
            let json = serde_json::to_value(&typed).unwrap();
            let via_json = protojson_to_bytes(&M::full_name(), &json).unwrap();
            let direct = reply_to_bytes(&M::full_name(), &typed).unwrap();
            let direct = M::decode(direct.as_slice()).unwrap();
            assert_eq!(direct, M::decode(via_json.as_slice()).unwrap(), "{v}");
            assert_eq!(direct, from_protojson::<M>(json).unwrap());
        }
        let mut task = task_json();
        // A part with no content is refused by the domain type: a null inside data instead.
        task["artifacts"][0]["parts"][0] = json!({"data": {"n": null}});
        same::<wire::Task, proto::Task>(task.clone());
        // Long enough that lengths take two and three bytes (the content moved up).
        let mut long = task.clone();
        let message = long["history"][0].clone();
        long["history"] = Value::Array(vec![message; 2_000]);
        long["metadata"]["text"] = json!("x".repeat(200));
        same::<wire::Task, proto::Task>(long.clone());
        same::<wire::SendMessageResponse, proto::SendMessageResponse>(json!({"task": task}));
        same::<wire::SendMessageResponse, proto::SendMessageResponse>(json!({"message":
            {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}}));
        same::<wire::ListTasksResponse, proto::ListTasksResponse>(json!({"tasks": [task, long],
            "nextPageToken": "n", "pageSize": 50, "totalSize": 2}));
        same::<wire::ListTasksResponse, proto::ListTasksResponse>(json!({"tasks": [],
            "nextPageToken": "", "pageSize": 0, "totalSize": 0}));
        let config = json!({"id": "c", "taskId": "t", "url": "https://e/h", "token": "x",
            "authentication": {"scheme": "Bearer", "credentials": "s"}});
        same::<wire::TaskPushNotificationConfig, proto::TaskPushNotificationConfig>(config.clone());
        same::<
            wire::ListTaskPushNotificationConfigsResponse,
            proto::ListTaskPushNotificationConfigsResponse,
        >(json!({"configs": [config], "nextPageToken": "p"}));
        same::<wire::StreamResponse, proto::StreamResponse>(json!({"statusUpdate": {
            "taskId": "t1", "contextId": "c1", "generation": "7",
            "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-01-02T03:04:05Z"}}}));
        same::<wire::StreamResponse, proto::StreamResponse>(json!({"artifactUpdate": {
            "taskId": "t1", "contextId": "c1", "append": true,
            "artifact": {"artifactId": "a", "parts": [{"text": "chunk"}]}}}));
        same::<wire::AgentCard, proto::AgentCard>(card_json());
    }

    /// The outcomes without a message of their own: `Empty` is the empty message, and a
    /// stream is an internal error, not a reply.
    #[test]
    fn an_empty_outcome_is_empty_and_a_stream_has_no_single_reply() {
        use crate::operations::Outcome;
        assert_eq!(
            reply_to_bytes("google.protobuf.Empty", &Outcome::Empty).unwrap(),
            Vec::<u8>::new()
        );
        let stream = Outcome::Stream(Box::pin(futures_util::stream::empty()));
        let e = reply_to_bytes("lf.a2a.v1.Task", &stream).unwrap_err();
        assert!(
            e.to_string().contains("a stream has no single result"),
            "{e}"
        );
        // A reply that does not fit its message is an internal error, not a panic.
        let e =
            reply_to_bytes("lf.a2a.v1.Task", &json!({"id": ["not", "a", "string"]})).unwrap_err();
        assert!(e.to_string().contains("lf.a2a.v1.Task.id"), "{e}");
        let e = reply_to_bytes("lf.a2a.v1.Task", &json!({"status": {"timestamp": "noon"}}))
            .unwrap_err();
        assert!(e.to_string().contains("Timestamp"), "{e}");
    }

    /// The descriptor-driven encoder and prost-reflect agree on every reply shape.
    #[test]
    fn the_reply_encoder_matches_dynamic_message() {
        fn same<M>(v: Value)
        where
            M: prost::Message + prost::Name + Default + PartialEq + std::fmt::Debug,
        {
            let ours: M = from_protojson(v.clone()).unwrap();
            let reference: M = from_protojson_dynamic(v.clone()).unwrap();
            assert_eq!(ours, reference, "{v}");
            // What the server sends is what prost writes for the message, byte for byte
            // (prost's own maps are HashMaps, in no fixed order: the card is compared above).
            if M::full_name() != "lf.a2a.v1.AgentCard" {
                let bytes = protojson_to_bytes(&M::full_name(), &v).unwrap();
                assert_eq!(bytes, reference.encode_to_vec(), "{v}");
            }
        }
        let task = task_json();
        same::<proto::Task>(task.clone());
        for far in [
            "2999-12-31T23:59:59.999999999Z",
            "1600-01-01T00:00:00.000000001Z",
        ] {
            let mut t = task.clone();
            t["status"]["timestamp"] = json!(far);
            same::<proto::Task>(t);
        }
        same::<proto::SendMessageResponse>(json!({"task": task}));
        same::<proto::SendMessageResponse>(json!({"message": {"messageId": "m", "role": 2,
            "parts": [{"text": "hi"}]}}));
        same::<proto::ListTasksResponse>(json!({"tasks": [task], "nextPageToken": "n",
            "pageSize": 50, "totalSize": -1}));
        same::<proto::ListTasksResponse>(json!({"tasks": [], "nextPageToken": "", "pageSize": 0,
            "totalSize": 0}));
        same::<proto::ListTaskPushNotificationConfigsResponse>(json!({"configs": [
            {"id": "c", "taskId": "t", "url": "https://e/h", "token": "x",
             "authentication": {"scheme": "Bearer", "credentials": "s"}}], "nextPageToken": ""}));
        same::<proto::StreamResponse>(json!({"task": task}));
        same::<proto::StreamResponse>(json!({"statusUpdate": {"taskId": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-01-02T03:04:05Z"},
            "metadata": {"generation": 7}}}));
        same::<proto::StreamResponse>(json!({"artifactUpdate": {"taskId": "t1", "contextId": "c1",
            "artifact": {"artifactId": "a", "parts": [{"text": "chunk"}]}, "append": true,
            "lastChunk": false}}));
        let card = card_json();
        same::<proto::AgentCard>(card);
    }

    /// The server reads a request's bytes as `to_protojson` reads the decoded message, and a
    /// malformed message fails with prost's decode error.
    #[test]
    fn request_bytes_read_as_the_generated_message_does() {
        let m = proto::SendMessageRequest {
            message: Some(proto::Message {
                message_id: "m1".into(),
                role: proto::Role::User as i32,
                parts: vec![proto::Part {
                    content: Some(proto::part::Content::Data(prost_types::Value {
                        kind: Some(prost_types::value::Kind::NumberValue(3.0)),
                    })),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            configuration: Some(proto::SendMessageConfiguration {
                history_length: Some(0),
                ..Default::default()
            }),
            ..Default::default()
        };
        let desc = descriptor::<proto::SendMessageRequest>().unwrap();
        let mut bytes = m.encode_to_vec();
        // A default written explicitly (return_immediately = false) reads as absent.
        let mut config = proto::SendMessageConfiguration::default().encode_to_vec();
        config.extend_from_slice(&[0x20, 0x00]);
        bytes.push(0x12);
        bytes.push(config.len() as u8);
        bytes.extend_from_slice(&config);
        let ours = bytes_to_protojson(&desc, bytes.as_slice())
            .unwrap()
            .unwrap();
        let generated = proto::SendMessageRequest::decode(bytes.as_slice()).unwrap();
        assert_eq!(ours, to_protojson(&generated).unwrap());
        assert_eq!(ours["message"]["parts"][0]["data"], json!(3));

        let bad = [0x0a, 0x03, 0x0a, 0x01, 0xff]; // message.messageId: not UTF-8
        let e = bytes_to_protojson(&desc, &bad[..]).unwrap_err();
        let typed = proto::SendMessageRequest::decode(&bad[..]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("failed to decode Protobuf message"),
            "{e}"
        );
        assert!(
            typed
                .to_string()
                .starts_with("failed to decode Protobuf message"),
            "{typed}"
        );
    }

    #[test]
    fn a_send_result_keeps_its_oneof() {
        let r = wire::SendMessageResponse::Message(wire::Message::agent_text("m", "hi"));
        let p: proto::SendMessageResponse = response(&r).unwrap();
        assert!(matches!(
            p.payload,
            Some(proto::send_message_response::Payload::Message(_))
        ));
    }
}
