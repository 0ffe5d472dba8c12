//! The front: what pond can do ([`ops`], [`status`]), how it answers ([`render`]), and the
//! two front ends over it, the MCP server ([`mcp`]) and (in the binary) the CLI.
//!
//! What it is for: [`Front`] owns the store and a [`Runner`] and offers every operation
//! typed (search with the query's embedding, get, SQL, sync then embed, rebuild, backfill,
//! model, status). Reads run here on the store's capped Lance caches; every heavy job goes
//! through the runner, by default to worker processes, each kind managed by one actor
//! ([`pool`]: spawn, handshake, deadlines, memory budget, restarts, idle exit, reaping).
//! A serving front keeps the archive current in the background ([`background`]). Memory is
//! measured the way pond's targets are stated ([`footprint`]).
//!
//! What it is not: a place for heavy work. It depends on `pond-store` for reads and never
//! on `pond-workers`: the binary hands it the in-process job function for `--in-process`.

// Lance's read path nests deeply enough to pass the default limit of 128 in the futures
// of the operations that call it.
#![recursion_limit = "256"]

pub use pond_protocol::footprint;

pub mod background;
pub mod clients;
pub mod mcp;
pub mod model;
pub mod ops;
pub mod params;
pub mod pool;
pub mod render;
pub mod rendezvous;
pub mod runner;
pub mod status;

pub use background::AutoSync;
pub use ops::{Error, Front, ProgressSink};
pub use params::EmbedAfter;
pub use pool::{sync_stall, JobOptions, WorkerCommand, WorkerStatus, Workers, WorkersConfig};
pub use runner::{LocalJobs, Runner};
pub use status::Status;
pub use status::Synced;
