//! pond's data layer: the Lance datasets, their schema, writes, indexes and queries.
//!
//! What it is for: everything that touches Lance. [`Store`] opens a store directory with a
//! Lance session whose caches are capped ([`StoreConfig`]); [`SyncWriter`] is the write side
//! of a sync (one journaled transaction over all datasets, with deduplication); [`search`],
//! [`get`] and [`sql`] are the read side.
//!
//! What it is not: a process manager or a parser. It knows nothing of workers, IPC or MCP
//! (the supervisor decides which process calls what), and takes parsed rows from
//! `pond-rows`' model.

pub mod error;
pub mod filters;
pub mod forgotten;
pub mod get;
pub mod hydrate;
pub mod indexes;
pub mod maintenance;
mod owners;
pub mod prices;
mod read;
pub mod records;
pub mod restore;
pub mod rowmap;
pub mod schema;
pub mod search;
pub mod sessions;
pub mod sql;
mod sql_caps;
mod sql_mask;
mod store;
pub mod usage;
pub mod vectors;
mod writer;
pub mod zone;

pub use error::{Result, StoreError};
/// The Lance dataset handle the store hands out (its readers take one).
pub use lance::Dataset;
pub use store::{owner_only, Store, StoreConfig, StoreCounts, StoreLock};
pub use writer::{stored_cursors, SyncWriter, WriteStats};
