//! Language-model providers behind the domain's `LanguageModel` port.

#[cfg(feature = "bedrock")]
pub mod bedrock;
pub mod openai;

#[cfg(feature = "bedrock")]
pub use bedrock::Bedrock;
pub use openai::{OpenAiCompatible, OpenAiSettings};
