//! The contract between pond's front process and its workers: worker kinds, the handshake,
//! jobs, their progress, outcomes and errors.
//!
//! What it is for: every message that crosses the process boundary is defined here, so the
//! front and a worker agree on one definition and one version ([`PROTOCOL_VERSION`], checked
//! in the [`Hello`] handshake before the first job). Messages travel over `ipc-channel`
//! (postcard encoding), so types here use plain serde shapes: no `skip_serializing_if`,
//! no flattening, no untagged enums.
//!
//! [`model`] is the model import job and the asset's manifest, which the front reads (a
//! file's shape, the one type here that never crosses IPC).
//!
//! [`footprint`] is how both sides measure a process's memory (`/proc`), so the front's
//! budgets and a worker's own report use one definition.
//!
//! What it is not: a process manager. It knows nothing of Lance, parsers or processes;
//! `pond-workers` runs the jobs and `pond-front` carries them.

mod choice;
pub mod footprint;
pub mod grep;
pub mod job;
pub mod model;
pub mod sync;
pub mod usage;

pub use choice::Choice;
pub use job::{
    Call, ErrorKind, Format, FromWorker, Hello, Job, JobError, Output, Progress, ToWorker,
    WorkerKind,
};

/// Bumped whenever a type in this crate changes shape.
pub const PROTOCOL_VERSION: u32 = 12;
