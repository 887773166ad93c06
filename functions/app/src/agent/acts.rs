//! The ACTS test-agent contract (A2A Conformance Test Specification, a2aproject/A2A#1882 §11,
//! as the official SDKs' test agents play it — a2a-python `itk/acts_behaviors.py`, a2a-go,
//! a2a-java, a2a-rs): the **first text part** of a message names a behaviour (`tck-complete-task
//! hello`), and the behaviour belongs to the task, so a continuation without one (`done`) is
//! read against the task's first message. The name is read greedily (`tck-` and hyphen-joined
//! lowercase words), so the longest name wins (`tck-artifact-file-url`, not
//! `tck-artifact-file`), and a `tck-` name the contract does not have fails the task saying so,
//! rather than passing for something else.

use std::time::Duration;

use serde_json::json;
use taskledger_domain::ids::TaskId;
use taskledger_domain::task::TaskCommand;
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{Artifact, Message, Part, PartContent, TaskState};

use super::steps::{agent_message, Step};

/// What every behaviour's name starts with.
pub const PREFIX: &str = "tck-";
/// The word a multi-turn conversation ends on (the corpus sends exactly this).
pub const MULTI_TURN_DONE: &str = "done";

/// The behaviours of §11.2, as the SDKs' test agents play them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Behavior {
    CompleteTask,
    TaskFailure,
    RejectTask,
    InputRequired,
    AuthRequired,
    MessageResponse,
    ArtifactText,
    ArtifactData,
    ArtifactFile,
    ArtifactFileUrl,
    LongRunning,
    MultiTurn,
    Cancel,
    StreamBasic,
    StreamChunked,
    /// ACTS §10's client tests, as the a2a-itk runner reaches a client: the message's data part
    /// holds `{operation, wire_payload}`, and the task's artifact is what our A2A client (the
    /// upstream forwarder's) made of that payload served to it (`ClientProbe`).
    ClientParse,
    /// A `tck-` name this contract does not have.
    Unknown(String),
}

impl Behavior {
    /// Whether the behaviour ends the task otherwise than by doing its work (failed, rejected,
    /// held until canceled, an unknown name failing it): only a sender who may end the task
    /// (`TaskHead::may_end_for`) steers it there.
    pub fn ends_task(&self) -> bool {
        matches!(
            self,
            Self::TaskFailure | Self::RejectTask | Self::Cancel | Self::Unknown(_)
        )
    }
}

const NAMES: [(&str, Behavior); 16] = [
    ("tck-complete-task", Behavior::CompleteTask),
    ("tck-task-failure", Behavior::TaskFailure),
    ("tck-reject-task", Behavior::RejectTask),
    ("tck-input-required", Behavior::InputRequired),
    ("tck-auth-required", Behavior::AuthRequired),
    ("tck-message-response", Behavior::MessageResponse),
    ("tck-artifact-text", Behavior::ArtifactText),
    ("tck-artifact-data", Behavior::ArtifactData),
    ("tck-artifact-file", Behavior::ArtifactFile),
    ("tck-artifact-file-url", Behavior::ArtifactFileUrl),
    ("tck-long-running", Behavior::LongRunning),
    ("tck-multi-turn", Behavior::MultiTurn),
    ("tck-cancel", Behavior::Cancel),
    ("tck-stream-basic", Behavior::StreamBasic),
    ("tck-stream-chunked", Behavior::StreamChunked),
    ("tck-client-parse", Behavior::ClientParse),
];

/// The A2A client `tck-client-parse` asks to parse a canned answer: it serves `wire_payload`
/// to our client as the answer to `operation` and says what the client made of it — the
/// parsed object, or `{"error": …}` (implemented by the upstream forwarder's client, handed in
/// by the composition: an agent sees no adapter).
#[async_trait::async_trait]
pub trait ClientProbe: Send + Sync {
    async fn parse(&self, operation: &str, wire_payload: serde_json::Value) -> serde_json::Value;
}

/// `tck-client-parse`'s request: the `{operation, wire_payload}` of the message's first data
/// part that names an operation.
pub fn client_request(m: &Message) -> Option<(String, serde_json::Value)> {
    m.parts.iter().find_map(|p| match &p.content {
        PartContent::Data(d) => d.get("operation").and_then(|o| o.as_str()).map(|op| {
            (
                op.to_string(),
                d.get("wire_payload").cloned().unwrap_or_default(),
            )
        }),
        _ => None,
    })
}

/// `tck-client-parse`'s steps once the client has parsed (`Ok`: its result, as the data part
/// of the task's one artifact) or could not be asked (`Err`: the task fails saying why).
pub fn client_parse_steps(parsed: Result<serde_json::Value, String>) -> Vec<Step> {
    let now = Timestamp::now;
    let working = TaskCommand::ChangeStatus {
        state: TaskState::Working,
        message: None,
        at: now(),
    };
    match parsed {
        Ok(value) => vec![Step::Commit(vec![
            working,
            TaskCommand::AddArtifact {
                artifact: Artifact {
                    artifact_id: "client-parse".into(),
                    name: Some("client-parse".into()),
                    description: None,
                    parts: vec![Part {
                        content: PartContent::Data(value),
                        metadata: None,
                        filename: None,
                        media_type: Some("application/json".into()),
                    }],
                    metadata: None,
                    extensions: vec![],
                    start_generation: None,
                    end_generation: None,
                },
                append: false,
                last_chunk: true,
                at: now(),
            },
            TaskCommand::ChangeStatus {
                state: TaskState::Completed,
                message: Some(agent_message("tck-client-parse ok")),
                at: now(),
            },
        ])],
        Err(why) => vec![Step::Commit(vec![
            working,
            TaskCommand::ChangeStatus {
                state: TaskState::Failed,
                message: Some(agent_message(&why)),
                at: now(),
            },
        ])],
    }
}

/// The first text part of `m`, if it has one.
pub fn first_text(m: &Message) -> Option<&str> {
    m.parts.iter().find_map(Part::as_text)
}

/// The behaviour `text` names: `tck-` and one or more hyphen-joined words of `a-z0-9`, read to
/// the first character that cannot be in a name; `None` when it names none.
pub fn named(text: &str) -> Option<Behavior> {
    let text = text.trim_start();
    if !text.starts_with(PREFIX) {
        return None;
    }
    let end = text
        .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
        .unwrap_or(text.len());
    let name = text[..end].trim_end_matches('-');
    if name.len() <= PREFIX.len() || name.contains("--") {
        return None;
    }
    Some(
        NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map_or_else(|| Behavior::Unknown(name.to_string()), |(_, b)| b.clone()),
    )
}

/// The behaviour a message names by its first text part.
pub fn of(m: &Message) -> Option<Behavior> {
    first_text(m).and_then(named)
}

/// How long the timed behaviours take.
#[derive(Debug, Clone, Copy)]
pub struct ActsTimings {
    /// `tck-long-running`: how long the task stays WORKING (the corpus polls every 2 s, so it
    /// must be seen non-terminal, and finish well within its 15 polls).
    pub long_running: Duration,
    /// `tck-cancel`: how long the task waits WORKING for a cancel before it fails saying so.
    pub cancel_hold: Duration,
}

impl Default for ActsTimings {
    fn default() -> Self {
        Self {
            long_running: Duration::from_secs(1),
            cancel_hold: Duration::from_secs(300),
        }
    }
}

/// `tck-message-response`: the direct reply to a message that starts no task.
pub fn direct_reply(message: &Message) -> Message {
    let mut reply = agent_message("tck message response");
    reply.context_id = Some(
        message
            .context_id
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
    );
    reply
}

/// The steps that play `behavior` on task `task_id` for `input` (the message that asked for
/// the turn); `None` for a direct reply sent to an existing task, which has no steps here.
pub fn steps(
    behavior: &Behavior,
    task_id: &TaskId,
    input: Option<&Message>,
    timings: ActsTimings,
) -> Option<Vec<Step>> {
    let now = Timestamp::now;
    let status = |state: TaskState, text: Option<&str>| TaskCommand::ChangeStatus {
        state,
        message: text.map(agent_message),
        at: now(),
    };
    let working = || status(TaskState::Working, None);
    let ends = |state: TaskState, text: &str| status(state, Some(text));
    let artifact =
        |id: &str, name: &str, part: Part, append: bool, last: bool| TaskCommand::AddArtifact {
            artifact: Artifact {
                artifact_id: id.into(),
                name: Some(name.into()),
                description: None,
                parts: vec![part],
                metadata: None,
                extensions: vec![],
                start_generation: None,
                end_generation: None,
            },
            append,
            last_chunk: last,
            at: now(),
        };
    let file = |content: PartContent| Part {
        content,
        metadata: None,
        filename: Some("document.txt".into()),
        media_type: Some("text/plain".into()),
    };
    let with_artifact = |name: &str, part: Part| {
        vec![Step::Commit(vec![
            working(),
            artifact(name, name, part, false, true),
            ends(TaskState::Completed, &format!("{name} ok")),
        ])]
    };
    let settle = |state: TaskState, name: &str| {
        vec![Step::Commit(vec![
            working(),
            ends(state, &format!("{name} ok")),
        ])]
    };
    Some(match behavior {
        Behavior::MessageResponse => return None,
        Behavior::CompleteTask => settle(TaskState::Completed, "tck-complete-task"),
        Behavior::TaskFailure => settle(TaskState::Failed, "tck-task-failure"),
        Behavior::RejectTask => settle(TaskState::Rejected, "tck-reject-task"),
        Behavior::InputRequired => settle(TaskState::InputRequired, "tck-input-required"),
        Behavior::AuthRequired => settle(TaskState::AuthRequired, "tck-auth-required"),
        Behavior::ArtifactText => {
            with_artifact("tck-artifact-text", Part::text("generated text content"))
        }
        Behavior::ArtifactData => with_artifact(
            "tck-artifact-data",
            Part {
                content: PartContent::Data(json!({"key": "value", "count": 1})),
                metadata: None,
                filename: None,
                media_type: Some("application/json".into()),
            },
        ),
        Behavior::ArtifactFile => with_artifact(
            "tck-artifact-file",
            file(PartContent::Raw(b"file bytes".to_vec())),
        ),
        Behavior::ArtifactFileUrl => with_artifact(
            "tck-artifact-file-url",
            file(PartContent::Url("https://example.com/document.txt".into())),
        ),
        Behavior::LongRunning => vec![
            Step::Commit(vec![working()]),
            Step::Pause(timings.long_running),
            Step::Commit(vec![
                artifact(
                    "long-running",
                    "long-running",
                    Part::text("long running result"),
                    false,
                    true,
                ),
                ends(TaskState::Completed, "long running work finished"),
            ]),
        ],
        Behavior::MultiTurn => {
            let said = input
                .and_then(first_text)
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase();
            let (state, text) = if said.starts_with(MULTI_TURN_DONE) {
                (TaskState::Completed, "multi-turn complete")
            } else {
                (TaskState::InputRequired, "more input please")
            };
            vec![Step::Commit(vec![working(), ends(state, text)])]
        }
        Behavior::Cancel => vec![
            Step::Commit(vec![working()]),
            Step::HoldUntilTerminal(timings.cancel_hold),
            Step::Commit(vec![ends(
                TaskState::Failed,
                "tck-cancel: no cancel arrived while the task waited for one",
            )]),
        ],
        Behavior::StreamBasic => vec![
            Step::Commit(vec![status(TaskState::Working, Some("streaming started"))]),
            Step::Commit(vec![artifact(
                "streamed",
                "streamed",
                Part::text("streamed content"),
                false,
                true,
            )]),
            Step::Commit(vec![ends(TaskState::Completed, "tck-stream-basic ok")]),
        ],
        Behavior::StreamChunked => {
            let id = format!("{task_id}-chunked");
            let chunks = ["chunk one ", "chunk two ", "chunk three"];
            let mut steps = vec![Step::Commit(vec![status(
                TaskState::Working,
                Some("streaming started"),
            )])];
            for (i, chunk) in chunks.iter().enumerate() {
                steps.push(Step::Commit(vec![artifact(
                    &id,
                    "chunked",
                    Part::text(*chunk),
                    i > 0,
                    i == chunks.len() - 1,
                )]));
            }
            steps.push(Step::Commit(vec![ends(
                TaskState::Completed,
                "tck-stream-chunked ok",
            )]));
            steps
        }
        // Played by the scenario agent, which holds the client (`client_parse_steps`).
        Behavior::ClientParse => return None,
        Behavior::Unknown(name) => vec![Step::Commit(vec![ends(
            TaskState::Failed,
            &format!("unimplemented ACTS behaviour {name:?}"),
        )])],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_name_wins_and_the_name_ends_where_a_name_cannot_go_on() {
        assert_eq!(
            named("tck-artifact-file-url doc"),
            Some(Behavior::ArtifactFileUrl)
        );
        assert_eq!(named("tck-artifact-file doc"), Some(Behavior::ArtifactFile));
        assert_eq!(
            named("tck-complete-task hello world"),
            Some(Behavior::CompleteTask)
        );
        assert_eq!(named("  tck-cancel- now"), Some(Behavior::Cancel));
        assert_eq!(named("tck-cancel."), Some(Behavior::Cancel));
        assert_eq!(
            named("tck-complet-task"),
            Some(Behavior::Unknown("tck-complet-task".into()))
        );
        assert_eq!(named("tck-client-parse"), Some(Behavior::ClientParse));
        for none in ["hello", "", "tck-", "tck-- x", "TCK-cancel", "a tck-cancel"] {
            assert_eq!(named(none), None, "{none:?}");
        }
    }

    #[test]
    fn every_standard_name_is_read_as_itself() {
        for (name, behavior) in NAMES {
            assert_eq!(
                named(&format!("{name} x")),
                Some(behavior.clone()),
                "{name}"
            );
            assert_eq!(named(name), Some(behavior), "{name}");
        }
    }

    #[test]
    fn a_message_names_a_behaviour_by_its_first_text_part() {
        let mut m = Message::user_text("m", "tck-long-running start");
        assert_eq!(of(&m), Some(Behavior::LongRunning));
        m.parts.insert(0, Part::data(json!({"x": 1})));
        assert_eq!(
            of(&m),
            Some(Behavior::LongRunning),
            "data parts are not text"
        );
        m.parts.insert(0, Part::text("plain"));
        assert_eq!(of(&m), None, "only the first text part counts");
    }

    #[test]
    fn multi_turn_asks_until_done() {
        let t = TaskId::parse("t").unwrap();
        let at = |text: &str| {
            let m = Message::user_text("m", text);
            let steps = steps(&Behavior::MultiTurn, &t, Some(&m), ActsTimings::default()).unwrap();
            match &steps[..] {
                [Step::Commit(c)] => match c.last() {
                    Some(TaskCommand::ChangeStatus { state, .. }) => *state,
                    other => panic!("{other:?}"),
                },
                _ => panic!("one commit"),
            }
        };
        assert_eq!(at("tck-multi-turn start"), TaskState::InputRequired);
        assert_eq!(at("here is more input"), TaskState::InputRequired);
        assert_eq!(at("  Done, thanks"), TaskState::Completed);
    }
}
