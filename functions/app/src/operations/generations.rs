//! The draft A2A 1.1 task generations, shown only to clients that speak 1.1: a 1.0 request's
//! generation fields are unknown fields (ignored), and its results carry no `generation`; a
//! 1.1 stream gets each update's generation written into it. The task timeline (a 1.1 draft
//! too) is added here for 1.1 requests only. The draft's elicitations (a2aproject/A2A#2149:
//! `Task.elicitations`, `TaskStatus.elicitations`, `Message.elicitationIds`) are in what the
//! domain produces; a 1.0 (or 0.3) request's message names none, and its results show none.

use futures_util::StreamExt;

use taskledger_domain::ids::HistoryLength;
use taskledger_domain::wire::{StreamResponse, Task};

use super::{Operation, Outcome};
use crate::error::AppError;
use crate::request::ProtocolVersion;
use crate::service::streams::StreamEvent;
use crate::service::Service;

/// The request as the client's version reads it.
pub(super) fn request_for(version: ProtocolVersion, op: Operation) -> Operation {
    if version.generations() {
        return op;
    }
    match op {
        Operation::SendMessage(mut r) => {
            if let Some(c) = r.configuration.as_mut() {
                c.if_generation_match = None;
                c.timeline_length = None;
            }
            r.message.elicitation_ids.clear();
            Operation::SendMessage(r)
        }
        Operation::SendStreamingMessage(mut r) => {
            if let Some(c) = r.configuration.as_mut() {
                c.if_generation_match = None;
            }
            r.message.elicitation_ids.clear();
            Operation::SendStreamingMessage(r)
        }
        Operation::GetTask(mut r) => {
            r.current_generation = None;
            r.timeline_length = None;
            Operation::GetTask(r)
        }
        Operation::ListTasks(mut r) => {
            r.timeline_length = None;
            Operation::ListTasks(r)
        }
        other => other,
    }
}

/// How many timeline entries a 1.1 request asks for (`timelineLength`, read as `historyLength`
/// is): `None` when it names none.
pub(super) fn timeline_length(raw: Option<i32>) -> Result<Option<HistoryLength>, AppError> {
    raw.map(|n| {
        HistoryLength::parse(Some(n))
            .map(HistoryLength::at_most_max)
            .map_err(|e| {
                AppError::invalid_params(
                    "timelineLength",
                    e.replace("historyLength", "timelineLength"),
                )
            })
    })
    .transpose()
}

/// Draft A2A 1.1: the task or tasks of `outcome` with their timelines — of `length` entries
/// (GetTask without one: the read default, as for history; a send or a list only when asked).
pub(super) async fn with_timelines(
    svc: &Service,
    outcome: Outcome,
    length: Option<HistoryLength>,
    always: bool,
) -> Result<Outcome, AppError> {
    use taskledger_domain::wire::SendMessageResponse;
    let length = match (length, always) {
        (Some(l), _) => l,
        (None, true) => HistoryLength::All.for_read(),
        (None, false) => return Ok(outcome),
    };
    Ok(match outcome {
        Outcome::Task(mut t) => {
            svc.with_timeline(&mut t, length).await?;
            Outcome::Task(t)
        }
        Outcome::Sent(SendMessageResponse::Task(mut t)) => {
            svc.with_timeline(&mut t, length).await?;
            Outcome::Sent(SendMessageResponse::Task(t))
        }
        Outcome::Tasks(mut page) => {
            for t in &mut page.tasks {
                svc.with_timeline(t, length).await?;
            }
            Outcome::Tasks(page)
        }
        other => other,
    })
}

/// The result as the client's version shows it.
pub(super) fn outcome_for(version: ProtocolVersion, outcome: Outcome) -> Outcome {
    use taskledger_domain::wire::SendMessageResponse;
    if version.generations() {
        return match outcome {
            Outcome::Stream(s) => Outcome::Stream(Box::pin(s.map(with_generation))),
            other => other,
        };
    }
    match outcome {
        Outcome::Task(mut t) => {
            as_1_0(&mut t);
            Outcome::Task(t)
        }
        Outcome::Sent(SendMessageResponse::Task(mut t)) => {
            as_1_0(&mut t);
            Outcome::Sent(SendMessageResponse::Task(t))
        }
        Outcome::Tasks(mut page) => {
            page.tasks.iter_mut().for_each(as_1_0);
            Outcome::Tasks(page)
        }
        Outcome::Stream(s) => Outcome::Stream(Box::pin(s.map(event_as_1_0))),
        other => other,
    }
}

/// A task without the draft's fields: its generation and its elicitations (the set, its
/// status's delta, the ids its messages name).
fn as_1_0(t: &mut Task) {
    t.generation = None;
    t.elicitations.clear();
    t.status.elicitations.clear();
    let messages = t
        .history
        .iter_mut()
        .flatten()
        .chain(t.status.message.as_mut());
    for m in messages {
        m.elicitation_ids.clear();
    }
}

/// A stream event without the draft's elicitations. Recorded at commit, a status update
/// carries its status's delta and a stream's first Task its set; an event naming none (nearly
/// every one) is passed on as it is, without being read.
fn event_as_1_0(event: StreamEvent) -> StreamEvent {
    if !event.body.contains("\"elicitation") {
        return event;
    }
    let Ok(mut response) = serde_json::from_str::<StreamResponse>(&event.body) else {
        return event;
    };
    match &mut response {
        StreamResponse::Task(t) => as_1_0(t),
        StreamResponse::StatusUpdate(u) => {
            u.status.elicitations.clear();
            if let Some(m) = u.status.message.as_mut() {
                m.elicitation_ids.clear();
            }
        }
        StreamResponse::Message(m) => m.elicitation_ids.clear(),
        StreamResponse::ArtifactUpdate(_) => return event,
    }
    match serde_json::to_string(&response) {
        Ok(body) => StreamEvent {
            body: body.into(),
            ..event
        },
        Err(_) => event,
    }
}

/// The event with its generation as the first member of its one `StreamResponse` member
/// (`{"statusUpdate":{"generation":"5",…}}`); events without one are left as they are.
fn with_generation(event: StreamEvent) -> StreamEvent {
    let (Some(generation), Some(at)) = (event.generation, event.body.find(":{")) else {
        return event;
    };
    let (head, tail) = event.body.split_at(at + 2);
    let comma = if tail.starts_with('}') { "" } else { "," };
    StreamEvent {
        body: format!(r#"{head}"generation":"{generation}"{comma}{tail}"#).into(),
        ..event
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(body: &str, generation: Option<u64>) -> StreamEvent {
        StreamEvent {
            id: Some(3),
            generation,
            body: body.into(),
        }
    }

    #[test]
    fn a_1_1_event_carries_its_generation_in_its_member() {
        let e = with_generation(event(r#"{"statusUpdate":{"taskId":"t"}}"#, Some(5)));
        assert_eq!(
            &*e.body,
            r#"{"statusUpdate":{"generation":"5","taskId":"t"}}"#
        );
        let v: serde_json::Value = serde_json::from_str(&e.body).unwrap();
        assert_eq!(v["statusUpdate"]["generation"], "5");
        let e = with_generation(event(r#"{"task":{}}"#, Some(1)));
        assert_eq!(&*e.body, r#"{"task":{"generation":"1"}}"#);
        let e = with_generation(event(r#"{"message":{"messageId":"m"}}"#, None));
        assert_eq!(&*e.body, r#"{"message":{"messageId":"m"}}"#);
    }
}
