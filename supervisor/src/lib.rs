//! The front: what the long-lived `pond mcp` process runs, and how it speaks.
//!
//! What it is for: the MCP server ([`mcp`]) answering full-text search and get on the
//! store's capped Lance caches, and routing every heavy job (SQL, sync, index rebuilds)
//! through a [`Runner`]: by default to worker processes, each kind managed by one actor
//! ([`workers`]: spawn, handshake, deadlines, memory budget, restarts, idle exit, reaping).
//! Every answer is bounded text an agent or a person can read ([`render`]); memory is
//! measured the way pond's targets are stated ([`footprint`]).
//!
//! What it is not: a place for heavy work. It depends on `pond-store` for queries and
//! never on `pond-workers`: the binary hands it the in-process job function for
//! `--in-process` mode.

pub use pond_protocol::footprint;

pub mod mcp;
pub mod render;
pub mod runner;
pub mod workers;

pub use runner::{LocalJobs, Runner};
pub use workers::{sync_stall, JobOptions, WorkerCommand, WorkerStatus, Workers, WorkersConfig};
