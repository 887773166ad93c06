//! The agent's side, as pure rules: the language-model port (`llm`), the intrinsic tools and
//! what they turn into (`tools`), skills (`skills`), the scripted model (`scripted`), and the
//! agent turns a commit asks for (`turns`), an upstream A2A agent's card (`upstream`), and MCP
//! servers' tools (`mcp`).

pub mod llm;
pub mod mcp;
pub mod scripted;
pub mod skills;
pub mod tools;
pub mod turns;
pub mod upstream;
