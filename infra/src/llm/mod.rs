//! Language-model providers behind the domain's `LanguageModel` port.

pub mod bedrock;
pub mod openai;

pub use bedrock::Bedrock;
pub use openai::{OpenAiCompatible, OpenAiSettings};
