//! Session discovery and parsers for the clients pond reads ([`sources::SOURCES`]: Claude
//! Code, Codex CLI, GitHub Copilot CLI, Cursor, Gemini CLI, OpenCode), into pond's canonical
//! model.
//!
//! What it is for: turning the JSONL files (and SQLite databases) that coding agents write into rows of the
//! canonical model ([`model`]): sessions, messages, parts, and the verbatim source records.
//! It reads files and nothing else: it knows nothing of Lance, processes or IPC, and keeps
//! no state between calls beyond what its caller hands back in: the
//! [`reader::FileCursor`], and within one sync the [`reader::HeldDatabases`].
//!
//! What it is not: a store. Deduplication across files and runs, and every write, belong to
//! the `pond-store` crate and the sync job in `pond-workers`.
//!
//! Every line of a file ends up either as a stored [`model::RecordRow`] or as a
//! [`model::Skip`] with a reason; nothing is dropped silently.

mod blocks;
pub mod claude;
pub mod codex;
mod common;
pub mod copilot;
pub mod cursor_agent;
pub mod cursor_ide;
#[cfg(test)]
mod cursor_ide_tests;
mod cursor_text;
mod database;
pub mod discover;
pub mod gemini;
mod json;
pub mod model;
pub mod opencode;
mod opencode_storage;
#[cfg(test)]
mod opencode_tests;
mod outcome;
mod pass;
pub mod paths;
pub mod reader;
mod side;
pub mod source;
pub mod sources;
mod sqlite;
#[cfg(test)]
mod tests;
mod text;
#[cfg(test)]
mod usage_tests;
pub mod vscode_copilot;
#[cfg(test)]
mod vscode_copilot_tests;

use pond_rows::file_cursor;

pub use discover::{discover, discover_all, Discovered, SourceFile};
pub use model::{
    FileBatch, MessageRow, Origin, PartRow, PendingBatch, RecordRow, Role, SessionRow, Skip,
    UsageRow,
};
pub use reader::{read_file, FileCursor, ReadOutcome};
pub use sources::{Source, SourceKind, SOURCES};
