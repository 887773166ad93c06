//! DMP (Dispatch Messaging Protocol, dispatch.foo) A2A extensions, as pure values: work/v1
//! requests (§8.6), the work/v1 and gate/v1 state written back (§8.5, §8.6), and the §8.7
//! task-state projection. Nothing here does I/O; the task aggregate and the read models call in.

pub mod artifacts;
pub mod ext_data;
pub mod gate_state;
pub mod projection;
pub mod work;
pub mod work_state;

pub use artifacts::{EvidenceItem, FileStat, PrState, WorkArtifact, MAX_WORK_ARTIFACT_BYTES};
pub use ext_data::ExtensionData;
pub use gate_state::{gate_sentence, GateEntry, GateStateV1, OpenGate, WaitingOn, GATE_URI};
pub use projection::{project, Facts, Projected, Row};
pub use work::{
    Criterion, Handoff, Label, Priority, RepoPath, WorkError, WorkRequest, WorkTitle, WORK_URI,
};
pub use work_state::{Stage, WorkStateV1, WorkStatus};
