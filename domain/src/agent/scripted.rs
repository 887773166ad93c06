//! A deterministic language model for tests and the conformance scenarios: the newest user
//! message's `messageId` prefix picks a script, the results of its own tool calls the next step.

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::agent::llm::{
    ChatMessage, ChatRole, LanguageModel, LlmError, ModelRequest, ModelResponse, ToolCall,
};
use crate::extensions::usage::Usage;

/// The name the scripted model answers under (per-model usage is filed under it).
pub const SCRIPTED_MODEL_NAME: &str = "scripted";
/// What the conformance kit expects `tck-complete-task` to say.
pub const COMPLETE_TASK_TEXT: &str = "Hello from TCK";
/// What the kit expects in a text artifact.
pub const GENERATED_TEXT: &str = "Generated text content";
/// The parent's answer once its sub-tasks are resolved.
pub const SUB_TASKS_DONE_TEXT: &str = "All sub-tasks finished";
/// The question `th-ask-<participant>` asks, and its options.
pub const ASK_QUESTION: &str = "Which option should I take?";
pub const ASK_OPTIONS: [&str; 2] = ["a", "b"];
/// The surface `th-ui` opens.
pub const UI_SURFACE_ID: &str = "scripted";
/// The answer once a user's action closed the surface.
pub const UI_ACTION_TEXT: &str = "Action received; the surface is closed.";

/// What the newest user message asks for, by its `messageId` prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Script {
    /// `tck-complete-task`: answer "Hello from TCK".
    CompleteTask,
    /// `tck-artifact-text`, `tck-stream…`: answer "Generated text content".
    GeneratedText,
    /// `th-ask-<participant>`: ask that participant, with options.
    Ask(String),
    /// `th-subtask`: a local sub-task whose goal is the message. A message starting with
    /// [`SUBTASK_MARK`] does the same with the mark taken off the goal once, so a sub-task's
    /// goal can spawn the next level (`th-subtask: th-subtask: x` makes a tree three deep).
    SubTask,
    /// `th-participant-task-<participant>`: a task for that participant.
    ParticipantTask(String),
    /// `th-ui`: show a small A2UI surface with `emit_ui`.
    Ui,
    /// Anything else: answer with what was received.
    Echo,
}

/// The text prefix that makes a (sub-)task's goal spawn a sub-task of its own.
pub const SUBTASK_MARK: &str = "th-subtask: ";

/// The participant named after a prefix (`th-ask-bob` or `th-ask-bob:anything` → `bob`).
fn named(rest: &str) -> String {
    rest.split(':').next().unwrap_or(rest).to_string()
}

impl Script {
    /// Longer prefixes first where they overlap.
    pub fn of(message_id: &str) -> Self {
        if let Some(rest) = message_id.strip_prefix("th-ask-") {
            return Self::Ask(named(rest));
        }
        if let Some(rest) = message_id.strip_prefix("th-participant-task-") {
            return Self::ParticipantTask(named(rest));
        }
        if message_id.starts_with("th-subtask") {
            return Self::SubTask;
        }
        if message_id.starts_with("th-ui") {
            return Self::Ui;
        }
        if message_id.starts_with("tck-complete-task") {
            return Self::CompleteTask;
        }
        if message_id.starts_with("tck-artifact-text") || message_id.starts_with("tck-stream") {
            return Self::GeneratedText;
        }
        Self::Echo
    }
}

/// Answers from the conversation alone. It only calls tools it is offered, and it reports usage
/// counted in words, so the usage extension has something to show.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScriptedModel;

fn words(s: &str) -> u64 {
    s.split_whitespace().count() as u64
}

fn text(t: impl Into<String>) -> (Option<String>, Vec<ToolCall>) {
    (Some(t.into()), vec![])
}

impl ScriptedModel {
    /// The next step of the conversation: a final text, or tool calls.
    pub fn answer(&self, request: &ModelRequest) -> (Option<String>, Vec<ToolCall>) {
        let messages = &request.messages;
        let Some(last_user) = messages.iter().rposition(|m| m.role == ChatRole::User) else {
            return text("There is nothing to answer.");
        };
        let user = &messages[last_user];
        let since = &messages[last_user + 1..];
        // Results of calls made since that message: this execution goes on.
        if let Some(call_msg) = since.iter().rev().find(|m| !m.tool_calls.is_empty()) {
            return Self::after_tools(call_msg, since);
        }
        let offered = |name: &str| request.tools.iter().any(|t| t.name == name);
        let made = messages.iter().map(|m| m.tool_calls.len()).sum::<usize>();
        let call = |name: &str, arguments: Value| {
            (
                None,
                vec![ToolCall {
                    id: format!("scripted-{}", made + 1),
                    name: name.to_string(),
                    arguments,
                }],
            )
        };
        let echo = || text(format!("Received: {}", user.content));
        // A user's action on a surface: close that surface, then answer.
        if let Some(surface) = user
            .content
            .lines()
            .find_map(|l| l.strip_prefix("[A2UI action] "))
            .and_then(|rest| rest.split(" on surface ").nth(1))
            .and_then(|rest| rest.split(" from ").next())
        {
            if offered("emit_ui") {
                return call(
                    "emit_ui",
                    json!({"messages": [{"version": "v0.9", "deleteSurface": {"surfaceId": surface}}]}),
                );
            }
        }
        let (script, goal) = match (
            Script::of(user.message_id.as_deref().unwrap_or_default()),
            user.content.strip_prefix(SUBTASK_MARK),
        ) {
            (Script::SubTask, _) => (Script::SubTask, user.content.as_str()),
            (_, Some(rest)) => (Script::SubTask, rest),
            (script, None) => (script, user.content.as_str()),
        };
        match script {
            Script::CompleteTask => text(COMPLETE_TASK_TEXT),
            Script::GeneratedText => text(GENERATED_TEXT),
            Script::Ask(who) if offered("ask_participant") => call(
                "ask_participant",
                json!({"participant_id": who, "question": ASK_QUESTION, "options": ASK_OPTIONS}),
            ),
            Script::SubTask if offered("spawn_subtask") => {
                call("spawn_subtask", json!({"name": "Sub-task", "goal": goal}))
            }
            Script::ParticipantTask(who) if offered("create_task_for_participant") => call(
                "create_task_for_participant",
                json!({"participant_id": who, "name": "Task for a participant", "goal": user.content}),
            ),
            Script::Ui if offered("emit_ui") => call(
                "emit_ui",
                json!({"messages": [
                    {"version": "v0.9", "createSurface": {"surfaceId": UI_SURFACE_ID, "catalogId": crate::extensions::a2ui::BASIC_CATALOG_ID}},
                    {"version": "v0.9", "updateComponents": {"surfaceId": UI_SURFACE_ID, "components": [
                        {"id": "root", "component": "Column", "children": ["said", "name", "ok"]},
                        {"id": "said", "component": "Text", "text": {"path": "/said"}},
                        {"id": "name", "component": "TextField", "label": "Your name", "value": {"path": "/form/name"}},
                        {"id": "ok-label", "component": "Text", "text": "OK"},
                        {"id": "ok", "component": "Button", "child": "ok-label",
                         "action": {"event": {"name": "ok", "context": {"name": {"path": "/form/name"}}}}}
                    ]}},
                    {"version": "v0.9", "updateDataModel": {"surfaceId": UI_SURFACE_ID, "value": {"said": user.content, "form": {"name": ""}}}}
                ]}),
            ),
            // A script whose tool is not offered (a task without extension data) just answers.
            _ => echo(),
        }
    }

    /// The answer once the tools called in `call_msg` have their results (in `since`).
    fn after_tools(
        call_msg: &ChatMessage,
        since: &[ChatMessage],
    ) -> (Option<String>, Vec<ToolCall>) {
        let failed: Vec<String> = since
            .iter()
            .filter(|m| m.role == ChatRole::Tool)
            .filter(|m| {
                call_msg
                    .tool_calls
                    .iter()
                    .any(|c| Some(&c.id) == m.tool_call_id.as_ref())
            })
            .filter_map(|m| {
                let v: Value = serde_json::from_str(&m.content).ok()?;
                v.get("error").and_then(Value::as_str).map(str::to_string)
            })
            .collect();
        if !failed.is_empty() {
            return text(format!("I could not finish: {}", failed.join("; ")));
        }
        let called = |name: &str| call_msg.tool_calls.iter().any(|c| c.name == name);
        if called("spawn_subtask") || called("create_task_for_participant") {
            return text(SUB_TASKS_DONE_TEXT);
        }
        if called("emit_ui") {
            let closed = call_msg
                .tool_calls
                .iter()
                .any(|c| c.arguments.to_string().contains("deleteSurface"));
            return text(if closed {
                UI_ACTION_TEXT
            } else {
                "The surface is shown."
            });
        }
        text("Done.")
    }
}

#[async_trait]
impl LanguageModel for ScriptedModel {
    async fn complete(&self, request: ModelRequest) -> Result<ModelResponse, LlmError> {
        let (answer, tool_calls) = self.answer(&request);
        let input: u64 = request
            .messages
            .iter()
            .map(|m| {
                words(&m.content)
                    + m.tool_calls
                        .iter()
                        .map(|c| words(&c.arguments.to_string()))
                        .sum::<u64>()
            })
            .sum();
        let output = answer.as_deref().map_or(0, words)
            + tool_calls
                .iter()
                .map(|c| words(&c.arguments.to_string()))
                .sum::<u64>();
        Ok(ModelResponse {
            model: Some(SCRIPTED_MODEL_NAME.into()),
            text: answer,
            tool_calls,
            usage: Some(Usage::of_response(input, output, 0, 0, None)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::llm::ToolSpec;

    fn user(id: &str, text: &str) -> ChatMessage {
        let mut m = ChatMessage::text(ChatRole::User, text);
        m.message_id = Some(id.into());
        m
    }

    fn request(messages: Vec<ChatMessage>, with_tools: bool) -> ModelRequest {
        ModelRequest {
            model: None,
            reasoning_effort: None,
            messages,
            tools: if with_tools {
                crate::agent::tools::specs()
            } else {
                Vec::<ToolSpec>::new()
            },
            trace: None,
        }
    }

    fn answer(messages: Vec<ChatMessage>, with_tools: bool) -> (Option<String>, Vec<ToolCall>) {
        ScriptedModel.answer(&request(messages, with_tools))
    }

    #[test]
    fn prefixes_pick_scripts_longest_first() {
        assert_eq!(Script::of("tck-complete-task-1"), Script::CompleteTask);
        assert_eq!(Script::of("tck-artifact-text-1"), Script::GeneratedText);
        assert_eq!(Script::of("tck-stream-ordering-001"), Script::GeneratedText);
        assert_eq!(Script::of("th-ask-bob:7"), Script::Ask("bob".into()));
        assert_eq!(
            Script::of("th-participant-task-eve"),
            Script::ParticipantTask("eve".into())
        );
        assert_eq!(Script::of("th-subtask-1"), Script::SubTask);
        assert_eq!(Script::of("th-ui-1"), Script::Ui);
        assert_eq!(Script::of("m-1"), Script::Echo);
        assert_eq!(Script::of(""), Script::Echo);
    }

    #[test]
    fn the_newest_user_message_decides_and_the_answer_is_deterministic() {
        let convo = vec![
            ChatMessage::text(ChatRole::System, "You are the agent."),
            user("tck-input-required-1", "first"),
            ChatMessage::text(ChatRole::Assistant, "Please provide more input"),
            user("tck-complete-task-2", "second"),
        ];
        assert_eq!(answer(convo.clone(), false), text(COMPLETE_TASK_TEXT));
        assert_eq!(answer(convo.clone(), false), answer(convo, false));
        assert_eq!(
            answer(vec![user("m-1", "hello there")], false),
            text("Received: hello there")
        );
        assert_eq!(
            answer(vec![], false).0.as_deref(),
            Some("There is nothing to answer.")
        );
    }

    #[test]
    fn tool_scripts_call_offered_tools_with_valid_arguments() {
        for (id, tool) in [
            ("th-ask-bob", "ask_participant"),
            ("th-subtask", "spawn_subtask"),
            ("th-participant-task-bob", "create_task_for_participant"),
            ("th-ui", "emit_ui"),
        ] {
            let (t, calls) = answer(vec![user(id, "Review the draft")], true);
            assert_eq!(t, None, "{id}");
            assert_eq!(calls.len(), 1, "{id}");
            assert_eq!(calls[0].name, tool);
            // every call the script makes passes the tool's own checks
            assert!(
                crate::agent::tools::plan_call(&calls[0], None, crate::time::Timestamp::now())
                    .is_ok(),
                "{id}: {:?}",
                calls[0]
            );
        }
        // without tools on offer (no task extension data) it answers instead
        assert_eq!(
            answer(vec![user("th-subtask", "x")], false),
            text("Received: x")
        );
    }

    #[test]
    fn a_marked_goal_spawns_the_next_level_with_the_mark_taken_off_once() {
        let goal = |calls: Vec<ToolCall>| calls[0].arguments["goal"].clone();
        let (_, top) = answer(vec![user("th-subtask-1", "th-subtask: Sort")], true);
        assert_eq!(
            goal(top),
            json!("th-subtask: Sort"),
            "the first level keeps the mark"
        );
        let (_, child) = answer(vec![user("t.1:goal", "th-subtask: Sort")], true);
        assert_eq!(goal(child), json!("Sort"));
        assert_eq!(
            answer(vec![user("t.1.1:goal", "Sort")], true),
            text("Received: Sort"),
            "an unmarked goal just answers"
        );
    }

    #[test]
    fn results_of_its_calls_lead_to_the_final_answer() {
        let (_, calls) = answer(vec![user("th-subtask", "Collect")], true);
        let mut said = ChatMessage::text(ChatRole::Assistant, "");
        said.tool_calls = calls.clone();
        let result = |content: Value| ChatMessage {
            role: ChatRole::Tool,
            content: content.to_string(),
            tool_calls: vec![],
            tool_call_id: Some(calls[0].id.clone()),
            message_id: None,
        };
        let ok = vec![
            user("th-subtask", "Collect"),
            said.clone(),
            result(json!({"result": "sub-task t.1 started"})),
        ];
        assert_eq!(answer(ok, true), text(SUB_TASKS_DONE_TEXT));
        let failed = vec![
            user("th-subtask", "Collect"),
            said,
            result(json!({"error": "tool.invalid_arguments: goal: empty"})),
        ];
        assert_eq!(
            answer(failed, true).0.unwrap(),
            "I could not finish: tool.invalid_arguments: goal: empty"
        );
    }

    #[tokio::test]
    async fn usage_is_counted_in_words_under_the_scripted_name() {
        let r = ScriptedModel
            .complete(request(vec![user("m-1", "one two three")], false))
            .await
            .unwrap();
        assert_eq!(r.model.as_deref(), Some(SCRIPTED_MODEL_NAME));
        let u = r.usage.unwrap();
        assert_eq!(u.input_tokens, 3);
        assert_eq!(u.output_tokens, 4, "Received: one two three");
        assert_eq!(u.total_tokens, 7);
    }
}
