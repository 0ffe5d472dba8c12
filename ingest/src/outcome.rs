//! What one read of a file gave: how it was read ([`ReadMode`]), its rows and its cursor
//! ([`ReadOutcome`]), for the line reader and the database reader alike.

use serde::Serialize;

use crate::file_cursor::FileCursor;
use crate::model::{FileBatch, Skip};
use crate::source::SourceFile;

/// How a file was read this time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadMode {
    /// Same size and mtime as last time: not opened.
    Unchanged,
    /// First time seen: read from the start.
    New,
    /// Grew since last time: read only the new lines.
    Appended,
    /// Shrank or its head changed: read again from the start (the store dedupes).
    Rewritten,
    /// The rest of a read that stopped at its byte budget, in the same sync.
    Continued,
    /// Could not be read at all (vanished, permissions): reported, nothing stored.
    Failed,
}

#[derive(Debug)]
pub struct ReadOutcome {
    pub mode: ReadMode,
    pub batch: FileBatch,
    pub cursor: FileCursor,
    /// Lines read in this pass (stored or skipped), not counting a held-back last line.
    pub lines_read: u64,
}

impl ReadOutcome {
    /// A file not read, with the reason (the caller decided to skip it).
    pub fn skipped(file: &SourceFile, prev: Option<&FileCursor>, reason: String) -> ReadOutcome {
        failed(file, prev, prev.map_or(0, |c| c.line), reason)
    }
}

pub(crate) fn failed(
    file: &SourceFile,
    prev: Option<&FileCursor>,
    line: u64,
    reason: String,
) -> ReadOutcome {
    let mut batch = FileBatch::default();
    let skip = Skip {
        path: file.key(),
        line,
        reason,
    };
    batch.skip(skip, 0);
    ReadOutcome {
        mode: ReadMode::Failed,
        batch,
        cursor: prev.cloned().unwrap_or_default(),
        lines_read: 0,
    }
}
