//! Sharing: the participants of a task are principals of its tenant. Who may see a task (its
//! owner and the principals its participants name), who speaks in a client's command (the
//! authenticated caller, never a `participant_id` it merely writes — except an admin acting for
//! someone, which is recorded), and what each role may do.

use crate::extensions::harness::{Participant, Role};
use crate::ids::{ParticipantId, Principal, Subject};

use super::head::TaskHead;

/// The principal a participant id names within `owner`'s tenant: `subject`, or
/// `tenant/subject` with the task's own tenant. Any other id (another tenant's, or one no
/// subject can be) names nobody who could sign in.
pub fn principal_of(owner: &Principal, participant_id: &str) -> Option<Principal> {
    let subject = match participant_id.split_once('/') {
        Some((tenant, rest)) if tenant == owner.tenant.as_str() => rest,
        _ => participant_id,
    };
    Subject::parse(subject).ok().map(|subject| Principal {
        tenant: owner.tenant.clone(),
        subject,
    })
}

impl TaskHead {
    /// The principals the task is shared with: those its participants name, the owner left
    /// out, each once, in a stable order.
    pub fn shared_with(&self) -> Vec<Principal> {
        let mut out: Vec<Principal> = self
            .ext
            .iter()
            .flat_map(|d| d.participants.iter())
            .filter_map(|p| principal_of(&self.owner, &p.id))
            .filter(|p| *p != self.owner)
            .collect();
        out.sort_by(|a, b| a.subject.as_str().cmp(b.subject.as_str()));
        out.dedup();
        out
    }

    /// Whether `who` may see the task: its owner, or a principal one of its participants names.
    /// Everyone else is told the task does not exist.
    pub fn visible_to(&self, who: &Principal) -> bool {
        self.owner == *who || self.participant_of(who).is_some()
    }

    /// The participant bound to `who`, if any.
    pub fn participant_of(&self, who: &Principal) -> Option<&Participant> {
        if who.tenant != self.owner.tenant {
            return None;
        }
        self.ext
            .as_ref()?
            .participants
            .iter()
            .find(|p| principal_of(&self.owner, &p.id).as_ref() == Some(who))
    }

    /// Whether `who` administers the task: its owner, or an admin participant.
    pub fn administered_by(&self, who: &Principal) -> bool {
        self.owner == *who
            || self
                .participant_of(who)
                .is_some_and(|p| p.role == Role::Admin)
    }
}

impl TaskHead {
    /// Whether whoever sent `message` (a message of this task's history: the participant it
    /// names, or, naming none, the owner) may end the task as a cancel would: the owner or an
    /// admin participant. What an agent does on a message that ends the task otherwise than by
    /// doing its work is held to it.
    pub fn may_end_for(&self, message: &crate::wire::Message) -> bool {
        let named = message
            .metadata
            .as_ref()
            .and_then(|m| m.get(crate::extensions::harness::PARTICIPANT_ID_KEY))
            .and_then(serde_json::Value::as_str);
        match named {
            None => true,
            Some(id) => {
                principal_of(&self.owner, id).as_ref() == Some(&self.owner)
                    || self
                        .ext
                        .as_ref()
                        .and_then(|d| d.participant(id))
                        .is_some_and(|p| p.role == Role::Admin)
            }
        }
    }
}

/// Who speaks in a client's command, once the caller is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Speaker {
    /// The participant the command speaks as (none: the owner, speaking as the owner).
    pub sender: Option<ParticipantId>,
    /// Set when an admin speaks for another participant: who really sent it.
    pub acted_by: Option<Principal>,
}

/// The speaker of a client's command from `caller`, who names `named` (its
/// `metadata.participant_id`), or why the command is refused:
/// - the owner speaks as the participant it names (as an admin acting for them when that
///   participant is not bound to the owner), else as its own participant, else as the owner;
/// - any other caller speaks as its own participant; naming another is acting for them, which
///   only an admin participant may do.
pub(super) fn speaker(
    head: &TaskHead,
    caller: &Principal,
    named: Option<ParticipantId>,
) -> Result<Speaker, String> {
    let own = head.participant_of(caller);
    let acting_for = |named: &ParticipantId| own.is_none_or(|p| p.id != named.as_str());
    if *caller == head.owner {
        let acted_by = named
            .as_ref()
            .filter(|n| {
                acting_for(n)
                    && head
                        .ext
                        .as_ref()
                        .is_some_and(|d| d.participant(n.as_str()).is_some())
            })
            .map(|_| caller.clone());
        let sender = match named {
            Some(n) => Some(n),
            None => own.map(own_id).transpose()?,
        };
        return Ok(Speaker { sender, acted_by });
    }
    let Some(own) = own else {
        return Err(format!("{caller} is not a participant of this task"));
    };
    match named {
        Some(n) if acting_for(&n) => {
            if own.role != Role::Admin {
                return Err(format!(
                    "you are participant {}: only an admin may speak for {n}",
                    own.id
                ));
            }
            Ok(Speaker {
                sender: Some(n),
                acted_by: Some(caller.clone()),
            })
        }
        _ => Ok(Speaker {
            sender: Some(own_id(own)?),
            acted_by: None,
        }),
    }
}

fn own_id(p: &Participant) -> Result<ParticipantId, String> {
    ParticipantId::parse(p.id.clone())
}

/// Why `sender` may not send a message to the task, if it may not: watchers read.
pub(super) fn may_not_send(head: &TaskHead, sender: Option<&ParticipantId>) -> Option<String> {
    let p = head.ext.as_ref()?.participant(sender?.as_str())?;
    (p.role == Role::Watcher).then(|| {
        format!(
            "message not accepted: {} is a watcher of this task; watchers read, assignees, \
             reporters and admins send",
            p.id
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extensions::harness::{ParticipantKind, TaskExtensionData};
    use crate::task::TaskAggregate;
    use crate::task::{CreateTask, TaskCommand};
    use crate::time::Timestamp;
    use crate::wire::Message;

    fn person(id: &str, role: Role) -> Participant {
        Participant {
            id: id.into(),
            kind: ParticipantKind::Human,
            role,
            display_name: String::new(),
        }
    }

    /// Given a task of acme/alice shared with bob (assignee), carol (watcher) and dan (admin).
    fn shared_task() -> TaskHead {
        let owner = Principal::new("acme", "alice").unwrap();
        let mut state = TaskAggregate::default();
        let events = state
            .decide(TaskCommand::CreateTask(CreateTask {
                task_id: crate::ids::TaskId::parse("t-1").unwrap(),
                context_id: crate::ids::ContextId::parse("c-1").unwrap(),
                owner,
                message: Message::user_text("m-1", "hello"),
                at: Timestamp::from_unix_nanos(1_000),
                extension: Some(Box::new({
                    let mut data: TaskExtensionData =
                        serde_json::from_value(serde_json::json!({"name": "n", "goal": "g"}))
                            .unwrap();
                    data.participants = vec![
                        person("alice", Role::Admin),
                        person("bob", Role::Assignee),
                        person("carol", Role::Watcher),
                        person("acme/dan", Role::Admin),
                        person("other/eve", Role::Reporter),
                    ];
                    data
                })),
                awaiting_assignee: None,
            }))
            .unwrap();
        for e in &events {
            state.apply_event(e);
        }
        state.head.unwrap()
    }

    fn who(s: &str) -> Principal {
        Principal::new("acme", s).unwrap()
    }

    fn pid(s: &str) -> Option<ParticipantId> {
        Some(ParticipantId::parse(s).unwrap())
    }

    #[test]
    fn a_task_is_shared_with_the_principals_its_participants_name() {
        let head = shared_task();
        let shared: Vec<String> = head.shared_with().iter().map(|p| p.to_string()).collect();
        // the owner is left out; "other/eve" is a subject of acme, not another tenant's eve
        assert_eq!(
            shared,
            ["acme/bob", "acme/carol", "acme/dan", "acme/other/eve"]
        );
        for p in ["alice", "bob", "carol", "dan"] {
            assert!(head.visible_to(&who(p)), "{p}");
        }
        assert!(!head.visible_to(&who("mallory")));
        // the same subject in another tenant is someone else
        assert!(!head.visible_to(&Principal::new("globex", "bob").unwrap()));
        assert!(head.administered_by(&who("alice")) && head.administered_by(&who("dan")));
        assert!(!head.administered_by(&who("bob")));
    }

    #[test]
    fn a_member_speaks_as_itself_whatever_it_names() {
        let head = shared_task();
        // unnamed: its own participant
        assert_eq!(
            speaker(&head, &who("bob"), None).unwrap(),
            Speaker {
                sender: pid("bob"),
                acted_by: None
            }
        );
        // naming itself is the same
        assert_eq!(
            speaker(&head, &who("bob"), pid("bob")).unwrap().sender,
            pid("bob")
        );
        // naming another participant is spoofing, unless it is an admin acting for them
        let refused = speaker(&head, &who("bob"), pid("carol")).unwrap_err();
        assert!(
            refused.contains("only an admin may speak for carol"),
            "{refused}"
        );
        assert_eq!(
            speaker(&head, &who("dan"), pid("bob")).unwrap(),
            Speaker {
                sender: pid("bob"),
                acted_by: Some(who("dan"))
            }
        );
        // a principal that is no participant is refused (the service never lets one this far)
        assert!(speaker(&head, &who("mallory"), None).is_err());
    }

    #[test]
    fn the_owner_speaks_as_whom_it_names_and_acting_for_another_is_recorded() {
        let head = shared_task();
        // unnamed: its own participant, like anyone
        assert_eq!(
            speaker(&head, &who("alice"), None).unwrap(),
            Speaker {
                sender: pid("alice"),
                acted_by: None
            }
        );
        assert_eq!(
            speaker(&head, &who("alice"), pid("alice"))
                .unwrap()
                .acted_by,
            None
        );
        assert_eq!(
            speaker(&head, &who("alice"), pid("bob")).unwrap().acted_by,
            Some(who("alice"))
        );
    }

    #[test]
    fn watchers_read_and_the_other_roles_send() {
        let head = shared_task();
        assert!(may_not_send(&head, pid("carol").as_ref()).is_some());
        for p in ["alice", "bob", "acme/dan"] {
            assert_eq!(may_not_send(&head, pid(p).as_ref()), None, "{p}");
        }
        assert_eq!(may_not_send(&head, None), None);
    }

    fn say(text: &str, named: Option<&str>, caller: &str) -> TaskCommand {
        let mut message = Message::user_text("m-x", text);
        if let Some(n) = named {
            let mut meta = crate::wire::Metadata::new();
            meta.insert(
                crate::extensions::harness::PARTICIPANT_ID_KEY.into(),
                n.into(),
            );
            message.metadata = Some(meta);
        }
        TaskCommand::AppendUserMessage(crate::task::AppendUserMessage {
            message,
            at: Timestamp::from_unix_nanos(5_000),
            caller: Some(who(caller)),
        })
    }

    fn state_of(head: TaskHead) -> TaskAggregate {
        TaskAggregate {
            head: Some(head),
            ..TaskAggregate::default()
        }
    }

    #[test]
    fn given_a_shared_task_when_an_admin_speaks_for_bob_then_the_message_is_bobs_and_records_the_admin(
    ) {
        let events = state_of(shared_task())
            .decide(say("ship it", Some("bob"), "dan"))
            .unwrap();
        let crate::task::TaskEvent::MessageAppended {
            message, acted_by, ..
        } = &events[0]
        else {
            panic!("{events:?}")
        };
        assert_eq!(acted_by.as_ref(), Some(&who("dan")));
        assert_eq!(
            message.metadata.as_ref().unwrap()[crate::extensions::harness::PARTICIPANT_ID_KEY],
            "bob"
        );
    }

    #[test]
    fn given_a_shared_task_when_bob_speaks_unnamed_then_history_names_him() {
        let events = state_of(shared_task())
            .decide(say("on it", None, "bob"))
            .unwrap();
        let crate::task::TaskEvent::MessageAppended {
            message, acted_by, ..
        } = &events[0]
        else {
            panic!("{events:?}")
        };
        assert_eq!(*acted_by, None);
        assert_eq!(
            message.metadata.as_ref().unwrap()[crate::extensions::harness::PARTICIPANT_ID_KEY],
            "bob"
        );
    }

    #[test]
    fn given_a_shared_task_when_bob_speaks_as_carol_then_it_is_refused_and_nothing_enters_history()
    {
        let events = state_of(shared_task())
            .decide(say("hi", Some("carol"), "bob"))
            .unwrap();
        assert!(
            matches!(&events[..], [crate::task::TaskEvent::MessageRefused { reason, .. }]
                if reason.contains("only an admin may speak for carol")),
            "{events:?}"
        );
    }

    #[test]
    fn given_a_shared_task_when_a_non_admin_cancels_then_it_is_refused() {
        let state = state_of(shared_task());
        let cancel = |by: &str| TaskCommand::CancelTask {
            at: Timestamp::from_unix_nanos(5_000),
            by: Some(who(by)),
        };
        let e = state.decide(cancel("bob")).unwrap_err();
        assert!(
            e.to_string().contains("only the task's owner or an admin"),
            "{e}"
        );
        assert!(state.decide(cancel("dan")).is_ok());
        assert!(state.decide(cancel("alice")).is_ok());
    }
}
