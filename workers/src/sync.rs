//! The sync job: discover session files, read what is new in each, and store it in one
//! journaled transaction, then bring the indexes and the row map up to date.
//!
//! Memory is bounded by the flush size, not the corpus: parsed rows are written every
//! [`FLUSH_BYTES`] (or [`FLUSH_MESSAGES`]), and only file cursors and the store-wide
//! message-id hash set (16 bytes an id) live for the whole job.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use pond_ingest::reader::ReadMode;
use pond_ingest::{
    discover, read_file, FileBatch, FileCursor, ReadOutcome, SourceFile, SourceKind,
};
use pond_protocol::sync::{SkipNote, SyncProgress, SyncReport, SyncRequest};
use pond_store::{indexes, rowmap, vectors, Store, StoreLock, SyncWriter};

use crate::repair;

pub const FLUSH_BYTES: usize = 64 << 20;
/// Unread bytes per read window (two windows are in memory at once: one parsed, one read).
const WINDOW_BYTES: u64 = 32 << 20;
const WINDOW_FILES: usize = 512;
pub const FLUSH_MESSAGES: usize = 100_000;
const SKIP_EXAMPLES: usize = 50;

#[derive(Debug)]
pub enum SyncError {
    UnknownAgent(String),
    Reader(String),
    Store(pond_store::StoreError),
}

impl std::fmt::Display for SyncError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SyncError::UnknownAgent(a) => {
                write!(f, "unknown source {a:?}: use claude-code or codex")
            }
            SyncError::Reader(e) => write!(f, "a reader thread failed: {e}"),
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
    progress: &mut (dyn FnMut(SyncProgress) + Send),
) -> Result<SyncReport, SyncError> {
    let started = Instant::now();
    let mut report = SyncReport::default();
    let mut writer = SyncWriter::begin(store).await?;
    report.recovered_interrupted_sync = writer.recovered;
    let mut cursors = writer.cursors().await?;

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
    // Parents before subagents across sources too: fewer owners to demote.
    files.sort_by_key(|f| f.is_subagent);
    let t = Instant::now();
    let mut new_cursors = upgrade(store, &mut writer, &mut cursors, &files, &mut report).await?;
    report.write_ms += t.elapsed().as_millis() as u64;
    let (windows, unread) = plan_windows(&files, &cursors);
    let mut prog = SyncProgress {
        files_total: files.len() as u64,
        bytes_total: unread,
        ..SyncProgress::default()
    };
    progress(prog);

    let mut pending = FileBatch::default();
    let mut rewritten = Vec::new();
    let mut sessions = HashSet::new();
    // Files are read in windows: while window k is written, window k+1 is parsed on
    // blocking threads (one per core), so parsing overlaps writing and uses every core.
    // Outcomes are consumed in file order, so the sync's writes never depend on thread
    // timing.
    let files = Arc::new(files);
    let cursors = Arc::new(cursors);
    let spawn = |range: Range<usize>| {
        let (files, cursors) = (files.clone(), cursors.clone());
        tokio::task::spawn_blocking(move || read_window(&files, range, &cursors))
    };
    let mut next = windows.first().cloned().map(spawn);
    for w in 1..=windows.len() {
        let (outcomes, read_ms) = next
            .take()
            .expect("a window is in flight")
            .await
            .map_err(|e| SyncError::Reader(e.to_string()))?;
        next = windows.get(w).cloned().map(spawn);
        report.read_ms += read_ms;
        for (path, before, out) in outcomes {
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
                new_cursors.insert(path, out.cursor);
            }
            pending.append(out.batch);
            if pending.approx_bytes() >= FLUSH_BYTES || pending.messages.len() >= FLUSH_MESSAGES {
                flush(&mut writer, &mut pending, &mut rewritten, &mut report).await?;
            }
            progress(prog);
        }
    }
    flush(&mut writer, &mut pending, &mut rewritten, &mut report).await?;
    let t = Instant::now();
    // Indexes and the row map are brought up to date under the same lock.
    let lock = writer.commit(new_cursors.into_iter().collect()).await?;
    report.write_ms += t.elapsed().as_millis() as u64;
    report.sessions_touched = sessions.len() as u64;

    // Re-derived messages have no indexes; a demoted owner's text is still in the
    // full-text index (its statistics too): both are rebuilt whatever `skip_index` says.
    if !req.skip_index || report.rederived || report.demoted_messages > 0 {
        let wrote = report.messages_added > 0 || report.recovered_interrupted_sync;
        let t = Instant::now();
        if report.rederived || report.demoted_messages > 0 {
            indexes::rebuild(store, &lock, true, report.rederived, &mut |_| {}).await?;
        }
        let idx = indexes::ensure_indexes(store, wrote).await?;
        report.index_ms = t.elapsed().as_millis() as u64;
        report.indexes_created = idx.created as u64;
        report.indexes_updated = idx.updated;
        report.unindexed_rows = idx.unindexed_rows as u64;
        let t = Instant::now();
        if let Some(stats) = rowmap::refresh(store, &lock).await? {
            report.rowmap_rows = stats.rows;
            report.rowmap_ms = t.elapsed().as_millis() as u64;
        }
        if report.rederived {
            rekey_vectors(store).await?;
        }
    }
    drop(lock);
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    Ok(report)
}

/// Bring the store to the current row model and one spelling per file, in `writer`'s
/// transaction, before new lines are read: merge second spellings of discovered files
/// (`crate::repair`), and re-derive sessions, messages and parts from `records` when a
/// path was repaired or an older pond wrote the store. Returns the cursors to store (those
/// of renamed files; the sync adds the files it reads).
async fn upgrade(
    store: &Store,
    writer: &mut SyncWriter<'_>,
    cursors: &mut HashMap<String, FileCursor>,
    discovered: &[SourceFile],
    report: &mut SyncReport,
) -> Result<BTreeMap<String, FileCursor>, SyncError> {
    let repairs = repair::plan(cursors, discovered);
    if repairs.is_empty() && !store.outdated().await? {
        return Ok(BTreeMap::new());
    }
    let moved = repair::apply(writer, &repairs, cursors).await?;
    let (files, stats) = repair::rederive(store, writer, cursors, FLUSH_BYTES).await?;
    report.paths_repaired = repairs.len() as u64;
    report.rederived = true;
    report.rederived_files = files;
    report.replayed_messages += stats.replayed_messages as u64;
    report.demoted_messages += stats.demoted_messages as u64;
    Ok(moved.into_iter().collect())
}

/// `pond rebuild`'s first step: the repairs and the upgrade a sync would make (see
/// [`upgrade`]), for the spellings the store itself shows (nothing is discovered). Returns
/// the store lock, which the rebuild keeps.
pub async fn repair_store(store: &Store) -> Result<(StoreLock, SyncReport), SyncError> {
    let mut report = SyncReport::default();
    let mut writer = SyncWriter::begin(store).await?;
    report.recovered_interrupted_sync = writer.recovered;
    let mut cursors = writer.cursors().await?;
    let moved = upgrade(store, &mut writer, &mut cursors, &[], &mut report).await?;
    let lock = writer.commit(moved.into_iter().collect()).await?;
    Ok((lock, report))
}

/// After messages were re-derived: point the stored vectors at the new rows (`vectors::
/// rekey`) and rebuild their index. Skipped, with a warning, while a backfill holds the
/// embedding lock: vector search then skips the stale vectors until the next rebuild.
pub async fn rekey_vectors(store: &Store) -> Result<(), SyncError> {
    let Ok(_embed) = store.embed_lock() else {
        tracing::warn!(
            "a backfill is running: vectors keep their old rows until `pond rebuild --vectors`"
        );
        return Ok(());
    };
    let Some(ds) = store.dataset(pond_store::schema::MESSAGES).await? else {
        return Ok(());
    };
    let Some(mapped) = store.mapped(&ds) else {
        return Ok(());
    };
    let (kept, dropped) = vectors::rekey(store, &mapped.map).await?;
    tracing::info!(kept, dropped, "vectors moved to the re-derived messages");
    vectors::ensure_index(store, vectors::VECTOR_INDEX_MIN_ROWS, true).await?;
    Ok(())
}

/// Split the files into windows of about [`WINDOW_BYTES`] of unread data; also returns the
/// unread bytes in all.
fn plan_windows(
    files: &[SourceFile],
    cursors: &HashMap<String, FileCursor>,
) -> (Vec<Range<usize>>, u64) {
    let mut out = Vec::new();
    let (mut start, mut bytes, mut total) = (0, 0u64, 0u64);
    for (i, f) in files.iter().enumerate() {
        let size = std::fs::metadata(&f.path).map_or(0, |m| m.len());
        let done = cursors
            .get(f.path.to_string_lossy().as_ref())
            .map_or(0, |c| c.offset.min(size));
        bytes += size - done;
        total += size - done;
        if bytes >= WINDOW_BYTES || i + 1 - start >= WINDOW_FILES {
            out.push(start..i + 1);
            (start, bytes) = (i + 1, 0);
        }
    }
    if start < files.len() {
        out.push(start..files.len());
    }
    (out, total)
}

/// One file's outcome, with its path and the offset it was read from.
type Outcome = (String, u64, ReadOutcome);

/// Read the files of one window on one thread per core; outcomes in file order, and the
/// wall time it took.
fn read_window(
    files: &[SourceFile],
    range: Range<usize>,
    cursors: &HashMap<String, FileCursor>,
) -> (Vec<Outcome>, u64) {
    let started = Instant::now();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = AtomicUsize::new(range.start);
    let mut all: Vec<(usize, Outcome)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= range.end {
                            break mine;
                        }
                        let f = &files[i];
                        let path = f.path.to_string_lossy().into_owned();
                        let prev = cursors.get(&path);
                        let before = prev.map_or(0, |c| c.offset);
                        let out = read_file(f, prev);
                        mine.push((i, (path, before, out)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("reader thread"))
            .collect()
    });
    all.sort_by_key(|(i, _)| *i);
    let outcomes = all.into_iter().map(|(_, o)| o).collect();
    (outcomes, started.elapsed().as_millis() as u64)
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
    let t = Instant::now();
    let stats = writer.write(batch, rewritten).await?;
    report.write_ms += t.elapsed().as_millis() as u64;
    rewritten.clear();
    report.messages_added += stats.messages as u64;
    report.parts_added += stats.parts as u64;
    report.records_added += stats.records as u64;
    report.duplicate_messages += stats.duplicate_messages as u64;
    report.duplicate_records += stats.duplicate_records as u64;
    report.replayed_messages += stats.replayed_messages as u64;
    report.demoted_messages += stats.demoted_messages as u64;
    Ok(())
}
