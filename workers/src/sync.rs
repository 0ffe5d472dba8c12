//! The sync job: discover session files, read what is new in each, and store it in one
//! journaled transaction, then bring the indexes up to date.
//!
//! Memory is bounded by the flush size, not the corpus: parsed rows are written every
//! [`FLUSH_BYTES`] (or [`FLUSH_MESSAGES`]), and only file cursors and the store-wide
//! message-id hash set (16 bytes an id) live for the whole job.

use std::collections::HashSet;
use std::time::Instant;

use pond_ingest::reader::ReadMode;
use pond_ingest::{discover, read_file, FileBatch, SourceKind};
use pond_protocol::sync::{SkipNote, SyncProgress, SyncReport, SyncRequest};
use pond_store::{indexes, Store, SyncWriter};

pub const FLUSH_BYTES: usize = 64 << 20;
pub const FLUSH_MESSAGES: usize = 100_000;
const SKIP_EXAMPLES: usize = 50;

#[derive(Debug)]
pub enum SyncError {
    UnknownAgent(String),
    Store(pond_store::StoreError),
}

impl std::fmt::Display for SyncError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SyncError::UnknownAgent(a) => {
                write!(f, "unknown source {a:?}: use claude-code or codex")
            }
            SyncError::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SyncError {}

impl From<pond_store::StoreError> for SyncError {
    fn from(e: pond_store::StoreError) -> Self {
        SyncError::Store(e)
    }
}

/// The reason's kind: the text before its first colon or parenthesis.
fn reason_kind(reason: &str) -> String {
    reason
        .split([':', '('])
        .next()
        .unwrap_or(reason)
        .trim()
        .to_owned()
}

pub async fn run(
    store: &Store,
    req: &SyncRequest,
    progress: &mut dyn FnMut(SyncProgress),
) -> Result<SyncReport, SyncError> {
    let started = Instant::now();
    let mut report = SyncReport::default();
    let mut writer = SyncWriter::begin(store).await?;
    report.recovered_interrupted_sync = writer.recovered;
    let cursors = writer.cursors().await?;

    let mut files = Vec::new();
    let mut seen_paths = HashSet::new();
    for source in &req.sources {
        let kind = match &source.agent {
            Some(a) => {
                Some(SourceKind::parse(a).ok_or_else(|| SyncError::UnknownAgent(a.clone()))?)
            }
            None => None,
        };
        for f in discover(&source.path, kind) {
            if seen_paths.insert(f.path.clone()) {
                files.push(f);
            }
        }
    }
    let mut prog = SyncProgress {
        files_total: files.len() as u64,
        ..SyncProgress::default()
    };
    for f in &files {
        let size = std::fs::metadata(&f.path).map_or(0, |m| m.len());
        let done = cursors
            .get(f.path.to_string_lossy().as_ref())
            .map_or(0, |c| c.offset.min(size));
        prog.bytes_total += size - done;
    }
    progress(prog);

    let mut pending = FileBatch::default();
    let mut rewritten = Vec::new();
    let mut new_cursors = Vec::new();
    let mut sessions = HashSet::new();
    for f in &files {
        let path = f.path.to_string_lossy().into_owned();
        let prev = cursors.get(&path);
        let before = prev.map_or(0, |c| c.offset);
        let out = read_file(f, prev);
        report.files_seen += 1;
        match out.mode {
            ReadMode::Unchanged => report.files_unchanged += 1,
            ReadMode::New => report.files_new += 1,
            ReadMode::Appended => report.files_appended += 1,
            ReadMode::Rewritten => {
                report.files_rewritten += 1;
                rewritten.push(path.clone());
            }
            ReadMode::Failed => report.files_failed += 1,
        }
        let read = match out.mode {
            ReadMode::Appended => out.cursor.offset.saturating_sub(before),
            _ => out.cursor.offset,
        };
        report.bytes_read += read;
        report.lines_read += out.lines_read;
        prog.files_done += 1;
        prog.bytes_done += read;
        prog.messages += out.batch.messages.len() as u64;
        for s in &out.batch.sessions {
            sessions.insert(s.id.clone());
        }
        for s in &out.batch.skips {
            report.skipped += 1;
            *report
                .skipped_by_reason
                .entry(reason_kind(&s.reason))
                .or_default() += 1;
            if report.skip_examples.len() < SKIP_EXAMPLES {
                report.skip_examples.push(SkipNote {
                    path: s.path.clone(),
                    line: s.line,
                    reason: s.reason.clone(),
                });
            }
            tracing::debug!(path = %s.path, line = s.line, reason = %s.reason, "skipped");
        }
        if !matches!(out.mode, ReadMode::Unchanged | ReadMode::Failed) {
            new_cursors.push((path, out.cursor));
        }
        pending.append(out.batch);
        if pending.approx_bytes() >= FLUSH_BYTES || pending.messages.len() >= FLUSH_MESSAGES {
            flush(&mut writer, &mut pending, &mut rewritten, &mut report).await?;
        }
        progress(prog);
    }
    flush(&mut writer, &mut pending, &mut rewritten, &mut report).await?;
    writer.commit(new_cursors).await?;
    report.sessions_touched = sessions.len() as u64;

    if !req.skip_index {
        let wrote = report.messages_added > 0 || report.recovered_interrupted_sync;
        let idx = indexes::ensure_indexes(store, wrote).await?;
        report.indexes_created = idx.created as u64;
        report.indexes_updated = idx.updated;
        report.unindexed_rows = idx.unindexed_rows as u64;
    }
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    Ok(report)
}

async fn flush(
    writer: &mut SyncWriter<'_>,
    pending: &mut FileBatch,
    rewritten: &mut Vec<String>,
    report: &mut SyncReport,
) -> Result<(), SyncError> {
    let batch = std::mem::take(pending);
    if batch.is_empty() {
        return Ok(());
    }
    let stats = writer.write(batch, rewritten).await?;
    rewritten.clear();
    report.messages_added += stats.messages as u64;
    report.parts_added += stats.parts as u64;
    report.records_added += stats.records as u64;
    report.duplicate_messages += stats.duplicate_messages as u64;
    report.duplicate_records += stats.duplicate_records as u64;
    Ok(())
}
