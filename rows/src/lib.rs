//! pond's canonical rows: what the parsers (`pond-ingest`) write and the store
//! (`pond-store`) reads.
//!
//! What it is for: the one definition of a stored row ([`model`]: sessions, messages, parts,
//! records, usage), of where the last read of a file stopped ([`file_cursor`], which the
//! store keeps beside the rows), and of the clients' names ([`clients`]: the search filter's
//! agents).
//!
//! What it is not: a parser or a store. It depends on serde alone, so that whatever reads
//! rows links neither the parsers nor SQLite.

pub mod clients;
pub mod file_cursor;
pub mod model;

pub use clients::{Client, CLIENTS};
pub use file_cursor::{FileCursor, RowCursor};
pub use model::{
    FileBatch, MessageRow, Origin, PartRow, PendingBatch, RecordRow, Role, SessionRow, Skip,
    UsageRow,
};
