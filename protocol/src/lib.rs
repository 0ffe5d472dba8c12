//! The contract between pond's front process and its workers: job requests, reports and
//! progress, as plain serde types.
//!
//! What it is for: every message that will cross the process boundary is defined here, so the
//! front and a worker agree on one definition and a version. It depends on nothing heavy
//! (serde only) and knows nothing of Lance, parsers or processes; `pond-workers` runs the
//! jobs, `pond-supervisor` will carry them over IPC.

pub mod sync;

/// Bumped whenever a type in this crate changes shape.
pub const PROTOCOL_VERSION: u32 = 1;
