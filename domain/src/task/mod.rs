//! The Task aggregate: commands in, events out (`decide`), events folded into state (`apply`),
//! pure and synchronous. A table of contents: each rule lives in the file named for its concept.

mod access;
pub mod admission;
mod agent_work;
mod approvals;
mod artifacts;
mod commands;
mod create;
mod elicitations;
mod events;
mod gates;
mod generation;
mod handoff;
mod handoff_status;
mod head;
mod help;
pub mod intake;
mod liveness;
mod messages;
mod mirror;
mod participants;
mod plan;
mod recent;
mod shapes;
mod sharing;
mod status;
pub mod stored;
mod subscriptions;
mod subtasks;
mod upstream;
mod upstream_batch;
mod work;

use cqrs_es::Aggregate;

use crate::error::DomainError;

pub use agent_work::ends_turn_waiting;
pub use approvals::{AnswerToolApproval, RequestToolApproval, ToolCallAsked, DECIDED};
pub use artifacts::{MAX_ARTIFACTS_PER_TASK, MAX_CHUNKS_PER_ARTIFACT};
pub use commands::{AppendUserMessage, CreateTask, TaskCommand};
pub use elicitations::{
    KIND_KEY as ELICITATION_KIND_KEY, PARTICIPANT_KEY as ELICITATION_PARTICIPANT_KEY,
};
pub use events::{TaskEvent, EVENT_VERSION};
pub use gates::{
    answer_of, gate_id, gate_state, AnswerGate, Gate, GateAnswer, GateKind, ENVELOPE_URI,
    MAX_ANSWER_FIELD_BYTES,
};
pub use handoff::{HandoffHead, HandoffWork, ProposeHandoff, HANDOFF_RISK};
pub use handoff_status::{
    facts as handoff_facts, shown as handoff_shown, Shown, DECLINED_SENTENCE,
};
pub use head::{ArtifactHead, PendingHelp, TaskAggregate, TaskHead};
pub use help::MAX_QUESTION_BYTES;
pub use liveness::{clip_reason, MAX_REASON_CHARS, MAX_STALL_DEADLINE_SECS};
pub use messages::{MAX_HISTORY_BYTES, MAX_HISTORY_MESSAGES};
pub use mirror::{
    UpstreamArtifact, UpstreamHead, MAX_UPSTREAM_ID_CHARS, MAX_UPSTREAM_INTERFACE_CHARS,
};
pub use recent::{RecentHistory, RECENT_BYTES, RECENT_MESSAGES};
pub use sharing::principal_of;
pub use subtasks::{child_creation, MAX_CHILD_SUMMARY_CHARS};
pub use upstream_batch::{
    plan as plan_upstream, UpstreamBatch, UpstreamRefusal, MAX_UPSTREAM_BATCH,
};
pub use work::{AdvanceWork, DROPPED_SENTENCE};

impl TaskAggregate {
    /// The decision: which events a command causes, or why it is refused. Changes nothing.
    pub fn decide(&self, command: TaskCommand) -> Result<Vec<TaskEvent>, DomainError> {
        self.decide_command(command)
            .map(|events| access::revoke_lost_access(self, events))
    }

    fn decide_command(&self, command: TaskCommand) -> Result<Vec<TaskEvent>, DomainError> {
        match command {
            TaskCommand::CreateTask(c) => return create::create_task(self.head.as_ref(), c),
            TaskCommand::ProposeHandoff(c) => return handoff::propose(self.head.as_ref(), *c),
            _ => {}
        }
        let head = self
            .head
            .as_ref()
            .ok_or_else(|| DomainError::TaskNotFound {
                task_id: String::new(),
            })?;
        match command {
            TaskCommand::CreateTask(_) | TaskCommand::ProposeHandoff(_) => unreachable_create(),
            TaskCommand::AnswerGate(c) => {
                gates::answer(head, *c).and_then(|events| handoff_status::answered(head, events))
            }
            TaskCommand::RequestToolApproval(c) => approvals::request(head, self.version, *c),
            TaskCommand::AnswerToolApproval(c) => approvals::answer(head, *c),
            TaskCommand::AdvanceWork(c) => work::advance(head, *c),
            // messages
            TaskCommand::AppendUserMessage(c) => messages::append_user_message(head, c),
            TaskCommand::RequireGeneration { expected } => generation::require(head, expected),
            TaskCommand::AppendAgentMessage { message, at } => {
                messages::append_agent_message(head, message, at)
            }
            // status
            TaskCommand::ChangeStatus { state, message, at } => {
                status::change_status(head, state, message, at)
            }
            TaskCommand::CancelTask { at, by } => status::cancel(head, by.as_ref(), at),
            // artifacts
            TaskCommand::AddArtifact {
                artifact,
                append,
                last_chunk,
                at,
            } => artifacts::add_artifact(head, artifact, append, last_chunk, at),
            TaskCommand::EmitUi { messages, at } => {
                artifacts::emit_ui(head, self.version, messages, at)
            }
            // participants
            TaskCommand::SetParticipantRole {
                participant_id,
                role,
                by,
                at,
            } => participants::set_role(head, participant_id, role, by, at),
            // plan
            TaskCommand::CreatePlan { plan, at } => plan::create_plan(head, plan, at),
            TaskCommand::StartStep { step, at } => plan::start_step(head, step, at),
            TaskCommand::CompleteStep { step, output, at } => {
                plan::complete_step(head, step, output, at)
            }
            TaskCommand::FailStep { step, reason, at } => plan::fail_step(head, step, reason, at),
            // sub-tasks
            TaskCommand::SpawnSubTask { step, at } => subtasks::spawn(head, step, at),
            TaskCommand::RecordChildState {
                child_id,
                state,
                summary,
                at,
            } => subtasks::record_child_state(head, child_id, state, summary, at),
            TaskCommand::AwaitSubTasks { at } => subtasks::await_children(head, at),
            // help
            TaskCommand::AskParticipant {
                participant_id,
                question,
                options,
                at,
            } => help::ask(head, participant_id, question, options, at),
            // agent work
            TaskCommand::FinishAgentTurn { work_seq, at } => {
                agent_work::finish_turn(head, work_seq, at)
            }
            TaskCommand::GiveUpAgentWork {
                work_seq,
                attempts,
                reason,
                at,
            } => liveness::give_up(head, work_seq, attempts, &reason, at),
            TaskCommand::FailStalledTask { deadline_secs, at } => {
                liveness::fail_stalled(head, deadline_secs, at)
            }
            TaskCommand::ContinueAgentWork {
                after,
                steps_taken,
                at,
            } => agent_work::continue_work(head, after, steps_taken, at),
            TaskCommand::RecordUsage { model, usage, at } => {
                agent_work::record_usage(head, model, usage, at)
            }
            TaskCommand::RecordUpstream { upstream, at } => upstream::record(head, *upstream, at),
            TaskCommand::LoadSkill { name, at } => agent_work::load_skill(head, name, at),
            TaskCommand::UnloadSkill { name, at } => agent_work::unload_skill(head, name, at),
            // subscriptions
            TaskCommand::SetPushConfig { config, at, by } => {
                subscriptions::set(head, config, by, at)
            }
            TaskCommand::DeletePushConfig { id, at, by } => {
                subscriptions::delete(head, id, by.as_ref(), at)
            }
        }
    }

    /// Folds one event into the state. No rules here: events are facts.
    pub fn apply_event(&mut self, event: &TaskEvent) {
        self.version += 1;
        let version = self.version;
        if let TaskEvent::TaskCreated {
            task_id,
            context_id,
            owner,
            at,
        } = event
        {
            self.head = Some(create::new_head(task_id, context_id, owner, *at, version));
            return;
        }
        let Some(head) = self.head.as_mut() else {
            return;
        };
        let open_before = elicitations::open(head);
        match event {
            TaskEvent::TaskCreated { .. } => {}
            // messages
            TaskEvent::MessageAppended { message, at, .. } => {
                messages::apply_message_appended(head, message, *at)
            }
            TaskEvent::MessageRefused { reason, at, .. } => {
                messages::apply_message_refused(head, version, reason, *at)
            }
            TaskEvent::ExtensionUpdated { data, at, .. } => {
                messages::apply_extension_updated(head, data, *at)
            }
            TaskEvent::ModelChanged { model, at, .. } => {
                messages::apply_model_changed(head, model, *at)
            }
            TaskEvent::ReasoningEffortChanged { effort, at, .. } => {
                messages::apply_effort_changed(head, *effort, *at)
            }
            // status
            TaskEvent::StatusChanged { state, message, at } => {
                status::apply_status_changed(head, version, *state, message.as_ref(), *at)
            }
            TaskEvent::TaskCanceled { at } => status::apply_canceled(head, version, *at),
            // artifacts
            TaskEvent::ArtifactAdded {
                artifact,
                last_chunk,
                at,
            } => artifacts::apply_artifact_added(head, artifact, *last_chunk, *at),
            TaskEvent::ArtifactChunkAppended {
                artifact_id,
                last_chunk,
                at,
                ..
            } => artifacts::apply_chunk_appended(head, artifact_id, *last_chunk, *at),
            // participants
            TaskEvent::ParticipantRoleChanged {
                participant_id,
                role,
                at,
                ..
            } => participants::apply_role_changed(head, participant_id, *role, *at),
            // plan
            TaskEvent::PlanCreated { plan, at } => plan::apply_plan_created(head, plan, *at),
            TaskEvent::StepStarted { step_id, at } => plan::apply_step_started(head, step_id, *at),
            TaskEvent::StepCompleted {
                step_id,
                output,
                at,
            } => plan::apply_step_completed(head, step_id, output, *at),
            TaskEvent::StepFailed { step_id, at, .. } => {
                plan::apply_step_failed(head, step_id, *at)
            }
            // sub-tasks
            TaskEvent::SubTaskSpawned {
                child_id,
                step_id,
                at,
            } => subtasks::apply_spawned(head, child_id, step_id.as_ref(), *at),
            TaskEvent::ChildStateRecorded {
                child_id,
                state,
                at,
                ..
            } => subtasks::apply_child_state(head, child_id, *state, *at),
            TaskEvent::SubTasksAwaited { at, .. } => subtasks::apply_awaited(head, version, *at),
            TaskEvent::ParticipantTaskOpened { assignee, at } => {
                subtasks::apply_participant_task_opened(head, assignee, *at)
            }
            // help
            TaskEvent::HelpRequested {
                participant_id,
                question,
                options,
                message,
                at,
            } => help::apply_requested(
                head,
                version,
                participant_id,
                question,
                options,
                message,
                *at,
            ),
            TaskEvent::HelpAnswered { at, .. } => help::apply_answered(head, version, *at),
            // agent work
            TaskEvent::AgentWorkRequested { at, .. } => {
                agent_work::apply_work_requested(head, version, *at)
            }
            TaskEvent::ExecutionContinued { steps_taken, at } => {
                agent_work::apply_execution_continued(head, *steps_taken, *at)
            }
            TaskEvent::AgentTurnFinished { work_seq, at } => {
                agent_work::apply_turn_finished(head, *work_seq, *at)
            }
            TaskEvent::UsageRecorded { model, usage, at } => {
                agent_work::apply_usage_recorded(head, model.as_deref(), usage, *at)
            }
            TaskEvent::SkillLoaded { name, at } => agent_work::apply_skill_loaded(head, name, *at),
            TaskEvent::UpstreamRecorded { upstream, at } => {
                upstream::apply_recorded(head, upstream, *at)
            }
            TaskEvent::SkillUnloaded { name, at } => {
                agent_work::apply_skill_unloaded(head, name, *at)
            }
            // subscriptions
            TaskEvent::PushConfigSet { config, at } => {
                subscriptions::apply_set(head, version, config, *at)
            }
            TaskEvent::PushConfigDeleted { id, key, at } => {
                subscriptions::apply_deleted(head, id, key.as_deref(), *at)
            }
            TaskEvent::AccessRevoked { at, .. } => {
                head.last_timeline = head.last_timeline.max(*at);
            }
            // gates and handoffs
            TaskEvent::HandoffProposed { work, .. } => handoff::apply_proposed(head, work),
            TaskEvent::GateRaised { gate } => gates::apply_raised(head, gate),
            TaskEvent::WorkAdvanced { status, .. } => work::apply_advanced(head, status),
            TaskEvent::GateAnswered {
                gate_id,
                choice,
                by,
                approvals,
                at,
            } => {
                gates::apply_answered(head, gate_id, choice, by, approvals, *at);
                if let Some(kind) = head.gates.iter().find(|g| &g.id == gate_id).map(|g| g.kind) {
                    handoff::apply_decided(head, kind, choice);
                }
            }
        }
        // A status update carries the elicitations changed since the last one (draft 1.1).
        elicitations::fold(head, open_before, head.status_version == version);
        // An update that ends an execution carries the usage totals.
        if head.status_version == version {
            let awaiting = matches!(event, TaskEvent::SubTasksAwaited { .. });
            head.status_metadata = head.status_update_metadata(awaiting);
        }
        // Each status or artifact update is one generation.
        let artifact = matches!(
            event,
            TaskEvent::ArtifactAdded { .. } | TaskEvent::ArtifactChunkAppended { .. }
        );
        if artifact || head.status_version == version {
            head.generation += 1;
        }
    }
}

fn unreachable_create() -> Result<Vec<TaskEvent>, DomainError> {
    Err(DomainError::UnsupportedOperation(
        "task creation is decided separately".into(),
    ))
}

impl Aggregate for TaskAggregate {
    const TYPE: &'static str = "task";
    type Command = TaskCommand;
    type Event = TaskEvent;
    type Error = DomainError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _services: &Self::Services,
        sink: &cqrs_es::event_sink::EventSink<Self>,
    ) -> Result<(), Self::Error> {
        for event in self.decide(command)? {
            sink.write(event, self).await;
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        self.apply_event(&event);
    }
}
