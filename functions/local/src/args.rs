//! The command line of `taskledger`: the settings every deployment reads and the local
//! server's own flags (each also an environment variable: `taskledger_app::settings`,
//! `taskledger_local::flags`), and the operator's subcommands.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use taskledger_app::settings::Settings;
use taskledger_local::LocalFlags;

#[derive(Debug, Parser)]
#[command(
    name = "taskledger",
    version,
    about = "A2A 1.0 task server on an embedded event store"
)]
pub(crate) struct Args {
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    /// Every setting a deployment reads (the Lambda functions the same, from their environment).
    #[command(flatten)]
    pub(crate) settings: Settings,
    /// The local server's own flags.
    #[command(flatten)]
    pub(crate) local: LocalFlags,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Serve the A2A API (the default).
    Serve,
    /// List push deliveries that were given up on (dead letters), with the reason.
    DeadLetters,
    /// Put every dead-lettered push delivery back in the outbox (sent again by the server).
    Redrive,
    /// Move a handoff's approved work item on (DMP work/v1): working, review, landing,
    /// landed (the task completes) or dropped (it is rejected).
    Work {
        /// The handoff task.
        #[arg(long)]
        task: String,
        /// The work item's new status.
        #[arg(long)]
        status: String,
        /// Work artifacts as JSON, e.g. `[{"kind":"pr","url":"…","number":7}]`.
        #[arg(long, default_value = "[]")]
        artifacts: String,
    },
    /// Write tasks as NDJSON of their events (the archive format, versioned): one task, a
    /// tenant's, or all; to a file created private to you, or to standard output.
    Export {
        /// The task to export.
        #[arg(long, conflicts_with_all = ["tenant", "all"])]
        task: Option<String>,
        /// Every task of this tenant.
        #[arg(long, conflicts_with = "all")]
        tenant: Option<String>,
        /// Every task.
        #[arg(long)]
        all: bool,
        /// The file to write (standard output when not given).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Replay an export into the store, every event held to the task's rules (idempotent:
    /// tasks already there whole are left as they are); stops at the first bad line, with its
    /// number.
    Import {
        /// The export to read.
        #[arg(long)]
        file: PathBuf,
        /// Place the archive in this tenant: a task of any other tenant is refused.
        #[arg(long)]
        tenant: Option<String>,
        /// Refuse an archive not signed with this server's signing key
        /// (--push-signing-key-file), or changed since.
        #[arg(long)]
        require_signed: bool,
    },
    /// Replay events into the DynamoDB read model: one task, or every task page by page.
    Rebuild {
        /// The task to rebuild.
        #[arg(long, conflicts_with = "all")]
        task: Option<String>,
        /// Rebuild every task.
        #[arg(long)]
        all: bool,
    },
}
