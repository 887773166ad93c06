//! Tools from MCP servers for the model agent (issue 52, ADR 034): the port an MCP client
//! implements (`ToolServer`), and the rules of the catalog the model is offered — each tool as
//! `NAME__tool` with its JSON schema, a name that is not a valid function name or that collides
//! refused at listing (with the reason, for a log line), which calls wait for a person's approval
//! (`NAME__tool` or `NAME__*` in the approval list, and any tool annotated `destructiveHint: true`
//! unless the deployment trusts it), and the bound on what a call gives back to the model.

use async_trait::async_trait;
use serde_json::Value;

use super::llm::ToolSpec;

/// Separates a server's name from its tool's in what the model is offered.
pub const SEPARATOR: &str = "__";
/// The longest function name a model API takes (OpenAI's limit; Bedrock's is the same).
pub const MAX_FUNCTION_NAME_CHARS: usize = 64;
/// What one tool call gives back to the model at most: a longer result is an error the model
/// reads instead.
pub const MAX_TOOL_RESULT_BYTES: usize = 64 * 1024;
/// Tools one server may offer the model.
pub const MAX_TOOLS_PER_SERVER: usize = 128;
/// The largest input schema of one tool offered.
pub const MAX_TOOL_SCHEMA_BYTES: usize = 32 * 1024;

/// A tool as an MCP server lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// `annotations.destructiveHint` (MCP: a hint; absent is false here).
    pub destructive: bool,
}

/// What a call gave back: its text (content blocks in order; non-text blocks as JSON) and
/// whether the server says it is an error.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    pub text: String,
    pub is_error: bool,
}

/// An MCP server's tools, reached by a client (an adapter: Streamable HTTP, or stdio locally).
#[async_trait]
pub trait ToolServer: Send + Sync {
    /// The deployment's name for the server (`NAME` in `NAME__tool`).
    fn name(&self) -> &str;
    /// Its tools, as listed now (again after `notifications/tools/list_changed`).
    async fn tools(&self) -> Result<Vec<ListedTool>, String>;
    /// Calls `tool` with `arguments`, within the adapter's timeout and output bound; `trace`
    /// is the calling span's context, passed on in the request's `_meta` (SEP-414).
    async fn call(
        &self,
        tool: &str,
        arguments: Value,
        trace: Option<&crate::trace::TraceContext>,
    ) -> Result<CallResult, String>;
}

/// Whether `name` is a function name every model API takes: ASCII letters, digits, `_` and
/// `-`, 1 to `MAX_FUNCTION_NAME_CHARS` characters.
pub fn valid_function_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_FUNCTION_NAME_CHARS
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// One tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct OfferedTool {
    pub server: String,
    pub tool: ListedTool,
}

impl OfferedTool {
    pub fn qualified(&self) -> String {
        format!("{}{SEPARATOR}{}", self.server, self.tool.name)
    }

    pub fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.qualified(),
            description: self.tool.description.clone(),
            input_schema: self.tool.input_schema.clone(),
        }
    }
}

/// The tools offered to the model from each server's list, and why each refused one was
/// refused. `reserved` are names taken already (the intrinsic tools).
pub fn catalog(
    servers: &[(String, Vec<ListedTool>)],
    reserved: &[String],
) -> (Vec<OfferedTool>, Vec<String>) {
    let mut offered: Vec<OfferedTool> = Vec::new();
    let mut refused = Vec::new();
    for (server, tools) in servers {
        if tools.len() > MAX_TOOLS_PER_SERVER {
            refused.push(format!(
                "{server} lists {} tools; the first {MAX_TOOLS_PER_SERVER} are offered",
                tools.len()
            ));
        }
        for tool in tools.iter().take(MAX_TOOLS_PER_SERVER) {
            let t = OfferedTool {
                server: server.clone(),
                tool: tool.clone(),
            };
            let name = t.qualified();
            let why = if !valid_function_name(&name) {
                Some("is not a valid function name (ASCII letters, digits, _ and -, at most 64)")
            } else if reserved.contains(&name) || offered.iter().any(|o| o.qualified() == name) {
                Some("collides with a tool offered already")
            } else if !tool.input_schema.is_object() {
                Some("has an input schema that is not a JSON object")
            } else if crate::wire::json_size(&tool.input_schema) > MAX_TOOL_SCHEMA_BYTES {
                Some("has an input schema past the bound")
            } else {
                None
            };
            match why {
                Some(why) => refused.push(format!("{name:.100} {why}: refused")),
                None => offered.push(t),
            }
        }
    }
    (offered, refused)
}

/// Whether an approval list entry covers a qualified tool name: the name itself, or
/// `NAME__*` for every tool of server `NAME`.
pub fn approval_covers(entry: &str, qualified: &str) -> bool {
    match entry.strip_suffix('*') {
        Some(prefix) if prefix.ends_with(SEPARATOR) => qualified.starts_with(prefix),
        _ => entry == qualified,
    }
}

/// A result as the model reads it: past `MAX_TOOL_RESULT_BYTES`, an error saying so.
pub fn bounded(result: CallResult) -> Result<String, String> {
    if result.text.len() > MAX_TOOL_RESULT_BYTES {
        return Err(format!(
            "the tool's result is {} bytes, past the bound of {MAX_TOOL_RESULT_BYTES}",
            result.text.len()
        ));
    }
    if result.is_error {
        return Err(result.text);
    }
    Ok(result.text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> ListedTool {
        ListedTool {
            name: name.into(),
            description: "d".into(),
            input_schema: json!({"type": "object"}),
            destructive: false,
        }
    }

    #[test]
    fn tools_are_offered_qualified_and_bad_or_colliding_names_are_refused() {
        let servers = vec![
            (
                "ev".to_string(),
                vec![tool("echo"), tool("get-sum"), tool("bad name")],
            ),
            ("ev".to_string(), vec![tool("echo")]),
        ];
        let (offered, refused) = catalog(&servers, &["create_plan".into()]);
        let names: Vec<String> = offered.iter().map(OfferedTool::qualified).collect();
        assert_eq!(names, ["ev__echo", "ev__get-sum"]);
        assert_eq!(refused.len(), 2, "{refused:?}");
        assert!(refused[0].contains("not a valid function name"));
        assert!(refused[1].contains("collides"));
        let (_, refused) = catalog(
            &[("create".into(), vec![tool("plan")])],
            &["create__plan".into()],
        );
        assert!(refused[0].contains("collides"));
    }

    #[test]
    fn a_function_name_is_bounded_at_its_limit() {
        assert!(valid_function_name(&"a".repeat(MAX_FUNCTION_NAME_CHARS)));
        assert!(!valid_function_name(
            &"a".repeat(MAX_FUNCTION_NAME_CHARS + 1)
        ));
        assert!(!valid_function_name(""));
        assert!(!valid_function_name("a.b"));
    }

    #[test]
    fn a_server_offers_its_first_tools_up_to_the_bound() {
        let many = |n: usize| (0..n).map(|i| tool(&format!("t{i}"))).collect::<Vec<_>>();
        let (offered, refused) = catalog(&[("s".into(), many(MAX_TOOLS_PER_SERVER))], &[]);
        assert_eq!((offered.len(), refused.len()), (MAX_TOOLS_PER_SERVER, 0));
        let (offered, refused) = catalog(&[("s".into(), many(MAX_TOOLS_PER_SERVER + 1))], &[]);
        assert_eq!((offered.len(), refused.len()), (MAX_TOOLS_PER_SERVER, 1));
    }

    #[test]
    fn approvals_name_a_tool_or_every_tool_of_a_server() {
        assert!(approval_covers("ev__echo", "ev__echo"));
        assert!(!approval_covers("ev__echo", "ev__get-sum"));
        assert!(approval_covers("ev__*", "ev__get-sum"));
        assert!(!approval_covers("ev__*", "evil__x"));
        assert!(!approval_covers("*", "ev__echo"));
    }

    #[test]
    fn a_result_is_bounded_at_its_limit_and_an_error_stays_one() {
        let r = |n: usize, is_error| CallResult {
            text: "x".repeat(n),
            is_error,
        };
        assert!(bounded(r(MAX_TOOL_RESULT_BYTES, false)).is_ok());
        let past = bounded(r(MAX_TOOL_RESULT_BYTES + 1, false)).unwrap_err();
        assert!(past.contains("past the bound"));
        assert_eq!(bounded(r(3, true)), Err("xxx".into()));
    }
}
