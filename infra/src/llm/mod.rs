//! Language-model providers behind the domain's `LanguageModel` port.

pub mod openai;

pub use openai::{OpenAiCompatible, OpenAiSettings};
