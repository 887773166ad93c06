//! The agent's side, as pure rules: the language-model port (`llm`), the intrinsic tools and
//! what they turn into (`tools`), skills (`skills`), the scripted model (`scripted`), and the
//! agent turns a commit asks for (`turns`), and an upstream A2A agent's card (`upstream`).

pub mod llm;
pub mod scripted;
pub mod skills;
pub mod tools;
pub mod turns;
pub mod upstream;
