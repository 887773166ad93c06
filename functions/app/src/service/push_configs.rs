//! Push notification config operations: configs are events on the task (`PushConfigSet`,
//! `PushConfigDeleted`), on any task the caller sees, each principal's its own (ADR 021),
//! available where a push worker runs.

use std::sync::Arc;

use taskledger_domain::error::ErrorKind;
use taskledger_domain::ids::Principal;
use taskledger_domain::ports::{Cursor, OutboxRecord, PushOutbox};
use taskledger_domain::push::{self, PushConfigSpec, Subscription};
use taskledger_domain::task::{TaskAggregate, TaskCommand};
use taskledger_domain::time::Timestamp;
use taskledger_domain::wire::{
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    TaskPushNotificationConfig, TaskPushNotificationConfigRef,
};

use super::{task_id_of, Actor, Change, Service};
use crate::error::AppError;

fn push_not_supported() -> AppError {
    AppError::protocol(
        ErrorKind::PushNotificationNotSupported,
        "push notifications are not enabled on this server (capabilities.pushNotifications is false)",
    )
}

impl Service {
    fn require_push(&self) -> Result<(), AppError> {
        if self.settings.push_enabled {
            Ok(())
        } else {
            Err(push_not_supported())
        }
    }

    /// A config from the wire, validated; a missing id is generated.
    pub(super) fn push_spec(
        &self,
        wire: &TaskPushNotificationConfig,
        field: &str,
    ) -> Result<PushConfigSpec, AppError> {
        self.require_push()?;
        let mut spec = PushConfigSpec::parse(
            wire,
            &uuid::Uuid::new_v4().to_string(),
            &self.settings.push_policy,
            field,
        )?;
        // Checked as given, stored sealed: only the webhook sender opens them (ADR 022).
        if let Some(secrets) = &self.settings.secrets {
            spec.token = spec.token.map(|t| secrets.seal(&t));
            spec.credentials = spec.credentials.map(|c| secrets.seal(&c));
        }
        Ok(spec)
    }

    /// A stored config as the API shows it: credentials redacted (`Subscription::to_wire`),
    /// the token opened (omitted if it no longer opens: its key was retired).
    fn shown(&self, sub: &Subscription, task_id: &str) -> TaskPushNotificationConfig {
        let mut wire = sub.to_wire(task_id);
        wire.token = wire.token.and_then(|t| match &self.settings.secrets {
            Some(secrets) => secrets.open(&t),
            None => Some(t),
        });
        wire
    }

    /// The caller's task, or TaskNotFound.
    async fn own_task(
        &self,
        who: &Principal,
        raw_id: &str,
    ) -> Result<Arc<TaskAggregate>, AppError> {
        let task_id = task_id_of(raw_id)?;
        self.ledger.visible(Actor::Client(who), &task_id).await
    }

    pub async fn create_push_config(
        &self,
        who: &Principal,
        req: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, AppError> {
        let raw_id = req.task_id.clone().unwrap_or_default();
        if raw_id.is_empty() {
            return Err(AppError::invalid_params("taskId", "is required"));
        }
        let spec = self.push_spec(&req, "")?;
        let task_id = task_id_of(&raw_id)?;
        let state = self
            .execute(Change::to(Actor::Client(who), &task_id), |_| {
                vec![TaskCommand::SetPushConfig {
                    config: spec.clone(),
                    at: Timestamp::now(),
                    by: Some(who.clone()),
                }]
            })
            .await?
            .state;
        state
            .head()
            .and_then(|h| {
                h.push
                    .iter()
                    .find(|p| p.id == spec.id && p.belongs_to(who, &h.owner))
            })
            .map(|p| self.shown(p, task_id.as_str()))
            .ok_or_else(|| AppError::protocol(ErrorKind::Internal, "the config was not stored"))
    }

    pub async fn get_push_config(
        &self,
        who: &Principal,
        req: TaskPushNotificationConfigRef,
    ) -> Result<TaskPushNotificationConfig, AppError> {
        self.require_push()?;
        let state = self.own_task(who, &req.task_id).await?;
        state
            .head()
            .and_then(|h| {
                h.push
                    .iter()
                    .find(|p| p.id == req.id && p.belongs_to(who, &h.owner))
            })
            .map(|p| self.shown(p, &req.task_id))
            .ok_or_else(|| {
                AppError::protocol(
                    ErrorKind::TaskNotFound,
                    format!(
                        "task {} has no push notification config {:?}",
                        req.task_id, req.id
                    ),
                )
            })
    }

    pub async fn list_push_configs(
        &self,
        who: &Principal,
        req: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, AppError> {
        self.require_push()?;
        let page_size = match req.page_size {
            None | Some(0) => push::DEFAULT_PUSH_CONFIG_PAGE,
            Some(n) if n > 0 && n as usize <= push::MAX_PUSH_CONFIG_PAGE => n as usize,
            Some(n) => {
                return Err(AppError::invalid_params(
                    "pageSize",
                    format!(
                        "must be between 1 and {} (got {n})",
                        push::MAX_PUSH_CONFIG_PAGE
                    ),
                ))
            }
        };
        let state = self.own_task(who, &req.task_id).await?;
        let scope = format!("push|{who}|{}", req.task_id);
        let start = match req.page_token.as_deref() {
            None | Some("") => 0,
            Some(t) => self.page_cursor(t, &scope)?.status_nanos.max(0) as usize,
        };
        // Each principal on a task lists its own configs (ADR 021).
        let all: Vec<_> = state
            .head()
            .map(|h| {
                h.push
                    .iter()
                    .filter(|p| p.belongs_to(who, &h.owner))
                    .collect()
            })
            .unwrap_or_default();
        let page: Vec<_> = all
            .iter()
            .skip(start)
            .take(page_size)
            .map(|p| self.shown(p, &req.task_id))
            .collect();
        let end = start + page.len();
        let next_page_token = if end < all.len() {
            let cursor = Cursor {
                status_nanos: end as i64,
                task_id: req.task_id.clone(),
            };
            self.page_token(&cursor, &scope)
        } else {
            String::new()
        };
        Ok(ListTaskPushNotificationConfigsResponse {
            configs: page,
            next_page_token,
        })
    }

    /// The webhook deliveries `outbox` still holds of `who`'s own configs on a task it sees: the
    /// one read of deliveries (each principal's configs, and what happens to them, are its own —
    /// the task's owner included). Their failure reasons name no URL (`push::failure_reason`).
    pub async fn own_deliveries(
        &self,
        who: &Principal,
        task_id: &str,
        outbox: &dyn PushOutbox,
    ) -> Result<Vec<OutboxRecord>, AppError> {
        let state = self.own_task(who, task_id).await?;
        let Some(owner) = state.head().map(|h| h.owner.clone()) else {
            return Ok(Vec::new());
        };
        let mut mine = outbox.task_deliveries(task_id).await?;
        mine.retain(|d| d.delivery.config.belongs_to(who, &owner));
        for d in &mut mine {
            d.reason = push::failure_reason(&d.reason);
        }
        Ok(mine)
    }

    /// Deleting a config that does not exist succeeds (idempotent); the task must exist.
    pub async fn delete_push_config(
        &self,
        who: &Principal,
        req: TaskPushNotificationConfigRef,
    ) -> Result<(), AppError> {
        self.require_push()?;
        let task_id = task_id_of(&req.task_id)?;
        self.execute(Change::to(Actor::Client(who), &task_id), |_| {
            vec![TaskCommand::DeletePushConfig {
                id: req.id.clone(),
                at: Timestamp::now(),
                by: Some(who.clone()),
            }]
        })
        .await?;
        Ok(())
    }
}
