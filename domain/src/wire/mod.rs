//! A2A 1.0 wire types (proto package `lf.a2a.v1`) in their ProtoJSON form.
//! camelCase out, camelCase and snake_case in, enum names as strings, unset fields omitted, never `null`.

mod card;
mod enums;
mod events;
mod message;
mod part;
mod proto;
mod push;
mod requests;
mod task;

pub use card::{
    AgentCapabilities, AgentCard, AgentCardSignature, AgentExtension, AgentInterface,
    AgentProvider, AgentSkill, ApiKeySecurityScheme, AuthorizationCodeOAuthFlow,
    ClientCredentialsOAuthFlow, DeviceCodeOAuthFlow, HttpAuthSecurityScheme,
    MutualTlsSecurityScheme, OAuth2SecurityScheme, OAuthFlows, OpenIdConnectSecurityScheme,
    SecurityRequirement, SecurityScheme, StringList,
};
pub use enums::{ElicitationState, Role, TaskState};
pub use events::{ListTaskEventsRequest, ListTaskEventsResponse, TaskEventRecord};
pub use message::Message;
pub use part::{Part, PartContent};
pub use proto::Metadata;
pub use push::{
    AuthenticationInfo, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, PushProtocol, TaskPushNotificationConfig,
    TaskPushNotificationConfigRef,
};
pub use requests::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse,
    SendMessageConfiguration, SendMessageRequest, SendMessageResponse,
};
pub use task::{
    Artifact, Elicitation, StreamResponse, Task, TaskArtifactUpdateEvent, TaskStatus,
    TaskStatusUpdateEvent, TimelineEntry, TimelineItem,
};

/// How many bytes `v` takes as compact JSON (what the size limits count), counted as it is
/// written rather than written into a buffer; `usize::MAX` for a value JSON cannot hold.
pub fn json_size<T: serde::Serialize + ?Sized>(v: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    serde_json::to_writer(&mut n, v).map_or(usize::MAX, |()| n.0)
}

#[cfg(test)]
mod tests;
