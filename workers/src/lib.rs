//! The jobs that pond runs outside its long-lived front process, and the worker process
//! that runs them.
//!
//! What it is for: work whose memory grows with the corpus or the input: ingest ([`sync`]),
//! index rebuilds and SQL, all behind one entry point ([`jobs::Jobs::execute`]). A worker process
//! ([`process::serve`], started as `pond worker <kind>`) runs jobs it receives over IPC and
//! exits, handing every page back to the OS; the front's `--in-process` mode calls the same
//! entry point directly.
//!
//! What it is not: a process manager. Spawning, deadlines and budgets belong to the
//! supervisor; a job here is an async function from a `pond-protocol` request to an outcome.

pub mod forget;
pub mod jobs;
pub mod process;
pub mod quarantine;
pub mod rebuild;
pub mod reindex;
pub mod repair;
pub mod restore;
pub mod sync;
pub mod usage;
