//! The sync job: discover session files, read what is new in each, and store it in one
//! journaled transaction, then bring the indexes and the row map up to date.
//!
//! Memory is bounded by the flush size, not the corpus: parsed rows are written every
//! [`FLUSH_BYTES`] (or [`FLUSH_MESSAGES`]), and only file cursors and the store-wide
//! message-id hash set (16 bytes an id) live for the whole job.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use pond_ingest::paths::path_key;
use pond_ingest::reader::{read_file_part, HeldDatabases, ReadMode};
use pond_ingest::{
    discover_all, FileBatch, FileCursor, PendingBatch, ReadOutcome, Skip, Source, SourceFile,
};
use pond_protocol::sync::{SkipNote, SyncProgress, SyncReport, SyncRequest};
use pond_store::forgotten::Forgotten;
use pond_store::{indexes, maintenance, Store, StoreLock, SyncWriter};

use crate::quarantine::{Quarantine, NOTED_BYTES};
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
                let names: Vec<&str> = pond_ingest::SOURCES.iter().map(|s| s.name).collect();
                write!(
                    f,
                    "unknown source {a:?}: use {}",
                    pond_ingest::sources::name_list(&names)
                )
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

pub async fn run(
    store: &Store,
    req: &SyncRequest,
    progress: &mut (dyn FnMut(SyncProgress) + Send),
) -> Result<SyncReport, SyncError> {
    let started = Instant::now();
    let mut report = SyncReport::default();
    // A forget that died is finished before anything is read: its files must not return.
    if Forgotten::load(store.root())?.pending {
        crate::forget::complete(store, FLUSH_BYTES).await?;
        report.forget_completed = true;
    }
    let forgotten = Forgotten::load(store.root())?;
    let mut writer = SyncWriter::begin(store).await?;
    report.recovered_interrupted_sync = writer.recovered;
    let mut cursors = writer.cursors().await?;
    // Token counts of the lines stored before pond read them, before this sync's journal
    // (the fill commits as it goes). An outdated store is re-derived whole below instead.
    if !pond_store::usage::is_filled(store) && !store.outdated().await? {
        let mut each = |files_done, files_total| {
            progress(SyncProgress {
                files_done,
                files_total,
                ..SyncProgress::default()
            })
        };
        report.usage_filled = crate::usage::fill(store, writer.lock(), &cursors, &mut each).await?;
        report.usage_added += report.usage_filled;
    }

    let mut files = Vec::new();
    let mut seen_paths = HashSet::new();
    for source in &req.sources {
        let kind = match &source.agent {
            Some(a) => Some(Source::parse(a).ok_or_else(|| SyncError::UnknownAgent(a.clone()))?),
            None => None,
        };
        let found = discover_all(&source.path, kind);
        for f in found.files {
            if seen_paths.insert(f.path.clone()) {
                files.push(f);
            }
        }
        for s in &found.unreadable {
            tracing::warn!(path = %s.path, reason = %s.reason, "not read");
        }
        note_skips(&mut report, &found.unreadable);
    }
    let before = files.len();
    files.retain(|f| !forgotten.paths.contains(&path_key(&f.path)));
    report.files_forgotten = (before - files.len()) as u64;
    // Parents before subagents across sources too: fewer owners to demote.
    files.sort_by_key(|f| f.is_subagent);
    let t = Instant::now();
    let mut new_cursors = upgrade(store, &mut writer, &mut cursors, &files, &mut report).await?;
    let mut quarantine = Quarantine::load(store.root());
    report.write_ms += t.elapsed().as_millis() as u64;
    // What each file has left to read, and what all of them have.
    let unread = unread_bytes(&files, &cursors);
    let mut prog = SyncProgress {
        files_total: files.len() as u64,
        bytes_total: unread.iter().sum(),
        ..SyncProgress::default()
    };
    progress(prog);

    let mut pending = PendingBatch::default();
    let mut wrote = false;
    let mut rewritten = Vec::new();
    let mut rewritten_paths = HashSet::new();
    let mut sessions = HashSet::new();
    // Files are read in windows: while window k is written, window k+1 is parsed on
    // blocking threads (one per core), so parsing overlaps writing and uses every core.
    // A file is read at most WINDOW_BYTES at a time: the rest of a larger one goes first
    // into the next window (its read continues from the partial cursor), so memory follows
    // the window, not the largest file. Outcomes are consumed in window order.
    let files = Arc::new(files);
    // A database its client keeps locked is waited for once in this sync, not per session.
    let held = Arc::new(HeldDatabases::default());
    let mut queue = Windows {
        next: 0,
        unread,
        carried: Vec::new(),
    };
    let spawn = |tasks: Vec<Task>| {
        let (files, held) = (files.clone(), held.clone());
        tokio::task::spawn_blocking(move || read_window(&files, tasks, &held))
    };
    // The large files of the window being read and of the one being written: what a dead
    // worker is blamed on (see `crate::quarantine`).
    let noted = |tasks: &[Task]| -> Vec<PathBuf> {
        tasks
            .iter()
            .filter(|t| queue_unread(&files[t.file], t.from.as_ref()) >= NOTED_BYTES)
            .map(|t| files[t.file].path.clone())
            .collect()
    };
    let mut first = queue.window(&files, &cursors, &quarantine);
    let mut reading_now = first.as_deref().map(noted).unwrap_or_default();
    quarantine.reading(&reading_now.iter().map(PathBuf::as_path).collect::<Vec<_>>());
    let mut next = first.take().map(spawn);
    while let Some(reading) = next.take() {
        let (outcomes, read_ms) = reading
            .await
            .map_err(|e| SyncError::Reader(e.to_string()))?;
        queue.carried = outcomes
            .iter()
            .filter(|o| o.2.cursor.partial)
            .map(|o| Task {
                file: o.0,
                from: Some(o.2.cursor.clone()),
                skip: None,
            })
            .collect();
        let window = queue.window(&files, &cursors, &quarantine);
        let writing = std::mem::replace(
            &mut reading_now,
            window.as_deref().map(noted).unwrap_or_default(),
        );
        let in_flight: Vec<&Path> = writing
            .iter()
            .chain(&reading_now)
            .map(PathBuf::as_path)
            .collect();
        quarantine.reading(&in_flight);
        next = window.map(spawn);
        report.read_ms += read_ms;
        for (i, before, out) in outcomes {
            let path = path_key(&files[i].path);
            if out.mode != ReadMode::Continued {
                report.files_seen += 1;
                prog.files_done += 1;
            }
            match out.mode {
                ReadMode::Unchanged => report.files_unchanged += 1,
                ReadMode::New => report.files_new += 1,
                ReadMode::Appended => report.files_appended += 1,
                ReadMode::Rewritten => {
                    report.files_rewritten += 1;
                    rewritten_paths.insert(path.clone());
                }
                ReadMode::Continued => {}
                ReadMode::Failed => report.files_failed += 1,
            }
            if rewritten_paths.contains(&path) {
                rewritten.push(path.clone());
            }
            let read = match out.mode {
                ReadMode::Appended | ReadMode::Continued => {
                    out.cursor.offset.saturating_sub(before)
                }
                _ => out.cursor.offset,
            };
            report.bytes_read += read;
            report.lines_read += out.lines_read;
            // A database's session moves the bar by the share it was counted at (its lines
            // are not the database's bytes), so the bar ends full.
            prog.bytes_done += match files[i].database() {
                Some(_) => queue.unread[i],
                None => read,
            };
            prog.messages += out.batch.messages.len() as u64;
            for s in &out.batch.sessions {
                sessions.insert(s.id.clone());
            }
            for (kind, n) in &out.batch.skipped {
                report.skipped += n;
                *report.skipped_by_reason.entry(kind.clone()).or_default() += n;
            }
            note_examples(&mut report, &out.batch.skips);
            let kept = Kept::of(&out.batch, &forgotten, &req.exclude_projects);
            if kept != Kept::Stored {
                // Counted once per file, at its first (or only) part.
                if out.mode != ReadMode::Continued {
                    report.files_excluded += 1;
                }
                // A forgotten session under another path is read no more; an excluded
                // project is read again next time (its exclusion may be lifted).
                if kept == Kept::Forgotten && !out.cursor.partial {
                    new_cursors.insert(path, out.cursor);
                }
                progress(prog);
                continue;
            }
            if !out.cursor.partial && !matches!(out.mode, ReadMode::Unchanged | ReadMode::Failed) {
                quarantine.cleared(&path);
                new_cursors.insert(path, out.cursor);
            }
            pending.append(out.batch);
            if pending.approx_bytes() >= FLUSH_BYTES || pending.messages() >= FLUSH_MESSAGES {
                wrote |= flush(&mut writer, &mut pending, &mut rewritten, &mut report).await?;
            }
            progress(prog);
        }
    }
    wrote |= flush(&mut writer, &mut pending, &mut rewritten, &mut report).await?;
    // Whether this sync changed the store: a sync that did not leaves the datasets as the
    // last one left them (compacted, indexed and mapped as it needed).
    let wrote = wrote
        || !new_cursors.is_empty()
        || report.recovered_interrupted_sync
        || report.rederived
        || report.forget_completed;
    let t = Instant::now();
    // Indexes and the row map are brought up to date under the same lock.
    let lock = writer.commit(new_cursors.into_iter().collect()).await?;
    report.write_ms += t.elapsed().as_millis() as u64;
    report.sessions_touched = sessions.len() as u64;

    // Re-derived messages have no indexes; a demoted owner's text is still in the
    // full-text index (its statistics too): both are rebuilt whatever `skip_index` says.
    // Many small fragments are compacted first; the indexes are then rebuilt over the new
    // fragments, and the row map refreshed.
    let mut upkeep = maintenance::compact(store, &lock, wrote).await?;
    report.compacted = upkeep.compacted;
    let fresh_indexes = report.rederived || report.demoted_messages > 0 || upkeep.compacted > 0;
    if !req.skip_index || fresh_indexes {
        let wrote = report.messages_added > 0 || report.recovered_interrupted_sync;
        let t = Instant::now();
        if fresh_indexes {
            let scalar = report.rederived || upkeep.compacted > 0;
            indexes::rebuild(store, &lock, true, scalar, &mut |_| {}).await?;
        }
        let idx = indexes::ensure_indexes(store, wrote).await?;
        report.index_ms = t.elapsed().as_millis() as u64;
        report.indexes_created = idx.created as u64;
        report.indexes_updated = idx.updated;
        report.unindexed_rows = idx.unindexed_rows as u64;
        let t = Instant::now();
        if let Some(stats) = store.refresh_rowmap(&lock).await? {
            report.rowmap_rows = stats.rows;
            report.rowmap_ms = t.elapsed().as_millis() as u64;
        }
        if report.rederived {
            repair::rekey_vectors(store).await?;
        }
    }
    maintenance::cleanup(store, &lock, &mut upkeep).await?;
    report.old_versions_removed = upkeep.old_versions_removed;
    drop(lock);
    quarantine.finish();
    report.set_aside = Quarantine::list(store.root())
        .into_iter()
        .map(|(path, _)| path)
        .collect();
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    if let Err(e) = store.save_report("sync", &report) {
        tracing::warn!("could not keep the sync report for status: {e}");
    }
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
/// `upgrade`), for the spellings the store itself shows (nothing is discovered). Returns
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

/// Whether a file's parsed rows are stored: not when they belong to a session `pond forget`
/// removed (a file the tombstones do not name: moved, or copied elsewhere), nor to a
/// project the sync excludes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kept {
    Stored,
    Forgotten,
    Excluded,
}

impl Kept {
    fn of(batch: &FileBatch, forgotten: &Forgotten, exclude: &[String]) -> Kept {
        let sessions = batch
            .sessions
            .iter()
            .map(|s| s.id.as_str())
            .chain(batch.messages.iter().map(|m| m.session_id.as_str()));
        if !forgotten.sessions.is_empty() {
            if let Some(id) = sessions.clone().find(|id| forgotten.sessions.contains(*id)) {
                tracing::info!(session = id, "not stored: a forgotten session");
                return Kept::Forgotten;
            }
        }
        let projects = batch
            .sessions
            .iter()
            .filter_map(|s| s.project.as_deref())
            .chain(batch.messages.iter().filter_map(|m| m.project.as_deref()));
        let mut projects = projects;
        if projects.any(|p| {
            exclude
                .iter()
                .any(|x| !x.is_empty() && p.contains(x.as_str()))
        }) {
            return Kept::Excluded;
        }
        Kept::Stored
    }
}

/// One file to read in a window, from its stored cursor or where its last part stopped,
/// unless it is set aside (`skip`: why).
struct Task {
    file: usize,
    from: Option<FileCursor>,
    skip: Option<String>,
}

/// What each file has left to read. A session of a database has no file of its own: it
/// counts as an equal share of its database, so a read window holds about
/// [`WINDOW_BYTES`] of a database's rows, not [`WINDOW_FILES`] of its sessions (at
/// OpenCode's size 512 sessions are about 200 MiB of rows, and two windows are held at
/// once). A session read before counts as read: the estimate is for a first read.
fn unread_bytes(files: &[SourceFile], cursors: &HashMap<String, FileCursor>) -> Vec<u64> {
    // A database session's path is the database's followed by the session's id.
    let in_database: Vec<Option<&Path>> = files
        .iter()
        .map(|f| f.database().and(f.path.parent()))
        .collect();
    let mut databases: HashMap<&Path, (u64, u64)> = HashMap::new();
    for db in in_database.iter().flatten() {
        databases
            .entry(db)
            .or_insert_with(|| (std::fs::metadata(db).map_or(0, |m| m.len()), 0))
            .1 += 1;
    }
    files
        .iter()
        .zip(&in_database)
        .map(|(f, db)| {
            let size = match db {
                Some(db) => {
                    let (bytes, sessions) = databases[db];
                    bytes / sessions.max(1)
                }
                None => std::fs::metadata(&f.path).map_or(0, |m| m.len()),
            };
            let done = cursors
                .get(&path_key(&f.path))
                .map_or(0, |c| c.offset.min(size));
            size - done
        })
        .collect()
}

/// What is left to read of `f` from `from`.
fn queue_unread(f: &SourceFile, from: Option<&FileCursor>) -> u64 {
    let size = std::fs::metadata(&f.path).map_or(0, |m| m.len());
    size.saturating_sub(from.map_or(0, |c| c.offset))
}

/// The files left to read, cut into windows of about [`WINDOW_BYTES`] of unread data.
struct Windows {
    /// The next file not read yet.
    next: usize,
    /// Each file's unread bytes.
    unread: Vec<u64>,
    /// Files whose read stopped at the window's budget: they open the next window.
    carried: Vec<Task>,
}

impl Windows {
    fn window(
        &mut self,
        files: &[SourceFile],
        cursors: &HashMap<String, FileCursor>,
        quarantine: &Quarantine,
    ) -> Option<Vec<Task>> {
        let mut tasks = std::mem::take(&mut self.carried);
        let mut bytes = tasks.len() as u64 * WINDOW_BYTES;
        while self.next < self.unread.len() && bytes < WINDOW_BYTES && tasks.len() < WINDOW_FILES {
            let path = path_key(&files[self.next].path);
            bytes += self.unread[self.next].min(WINDOW_BYTES);
            tasks.push(Task {
                file: self.next,
                from: cursors.get(&path).cloned(),
                skip: quarantine.set_aside(&files[self.next].path),
            });
            self.next += 1;
        }
        (!tasks.is_empty()).then_some(tasks)
    }
}

/// One file's outcome: its index, the offset it was read from, and the outcome.
type Outcome = (usize, u64, ReadOutcome);

/// Read the files of one window on one thread per core, each up to [`WINDOW_BYTES`];
/// outcomes in window order, and the wall time it took.
fn read_window(
    files: &[SourceFile],
    tasks: Vec<Task>,
    held: &HeldDatabases,
) -> (Vec<Outcome>, u64) {
    let started = Instant::now();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = AtomicUsize::new(0);
    let mut all: Vec<(usize, Outcome)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(task) = tasks.get(k) else {
                            break mine;
                        };
                        let f = &files[task.file];
                        let before = task.from.as_ref().map_or(0, |c| c.offset);
                        let out = match &task.skip {
                            Some(why) => ReadOutcome::skipped(f, task.from.as_ref(), why.clone()),
                            None => read_file_part(f, task.from.as_ref(), WINDOW_BYTES, held),
                        };
                        mine.push((k, (task.file, before, out)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("reader thread"))
            .collect()
    });
    all.sort_by_key(|(k, _)| *k);
    let outcomes = all.into_iter().map(|(_, o)| o).collect();
    (outcomes, started.elapsed().as_millis() as u64)
}

/// Write what is pending; whether there was anything.
async fn flush(
    writer: &mut SyncWriter<'_>,
    pending: &mut PendingBatch,
    rewritten: &mut Vec<String>,
    report: &mut SyncReport,
) -> Result<bool, SyncError> {
    let batch = pending.take();
    if batch.is_empty() {
        return Ok(false);
    }
    let t = Instant::now();
    let stats = writer.write(batch, rewritten).await?;
    report.write_ms += t.elapsed().as_millis() as u64;
    rewritten.clear();
    report.messages_added += stats.messages as u64;
    report.parts_added += stats.parts as u64;
    report.records_added += stats.records as u64;
    report.usage_added += stats.usage as u64;
    report.duplicate_messages += stats.duplicate_messages as u64;
    report.duplicate_records += stats.duplicate_records as u64;
    report.replayed_messages += stats.replayed_messages as u64;
    report.demoted_messages += stats.demoted_messages as u64;
    Ok(true)
}

/// Count `skips` (not counted elsewhere) by reason, and keep the first as examples.
fn note_skips(report: &mut SyncReport, skips: &[Skip]) {
    for s in skips {
        report.skipped += 1;
        *report
            .skipped_by_reason
            .entry(s.kind().to_owned())
            .or_default() += 1;
    }
    note_examples(report, skips);
}

/// Keep the first [`SKIP_EXAMPLES`] skips of a sync in full.
fn note_examples(report: &mut SyncReport, skips: &[Skip]) {
    for s in skips {
        if report.skip_examples.len() < SKIP_EXAMPLES {
            report.skip_examples.push(SkipNote {
                path: s.path.clone(),
                line: s.line,
                reason: s.reason.clone(),
            });
        }
        tracing::debug!(path = %s.path, line = s.line, reason = %s.reason, "skipped");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pond_ingest::discover::classify;

    fn file(path: PathBuf, source: &str) -> SourceFile {
        classify(path, Source::parse(source))
    }

    #[test]
    fn a_database_session_counts_as_its_share_of_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("opencode.db");
        std::fs::write(&db, vec![0u8; 3000]).unwrap();
        let log = dir.path().join("s.jsonl");
        std::fs::write(&log, vec![b'x'; 700]).unwrap();
        let files = vec![
            file(db.join("ses_a"), "opencode"),
            file(db.join("ses_b"), "opencode"),
            file(db.join("ses_c"), "opencode"),
            file(log.clone(), "claude-code"),
        ];
        let mut cursors = HashMap::new();
        assert_eq!(unread_bytes(&files, &cursors), [1000, 1000, 1000, 700]);
        // Read before: nothing is estimated left (a grown session is not known until read).
        let read = |offset| FileCursor {
            offset,
            ..FileCursor::default()
        };
        cursors.insert(path_key(&db.join("ses_b")), read(4000));
        cursors.insert(path_key(&log), read(200));
        assert_eq!(unread_bytes(&files, &cursors), [1000, 0, 1000, 500]);
    }

    /// A sync of a database and a file reports every byte counted as done at its end.
    #[tokio::test(flavor = "multi_thread")]
    async fn the_progress_of_a_database_and_a_file_ends_full() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("opencode");
        std::fs::create_dir_all(&home).unwrap();
        let db = rusqlite::Connection::open(home.join("opencode.db")).unwrap();
        db.execute_batch(include_str!("../../tests/clients/opencode/schema.sql"))
            .unwrap();
        db.execute_batch(include_str!("../../tests/clients/opencode/sessions.sql"))
            .unwrap();
        drop(db);
        let claude = dir.path().join("claude");
        std::fs::create_dir_all(&claude).unwrap();
        std::fs::write(
            claude.join("s.jsonl"),
            r#"{"type":"user","sessionId":"s1","uuid":"u1","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hello there"}}
"#,
        )
        .unwrap();
        let store = Store::open(&dir.path().join("store"), Default::default()).unwrap();
        let source = |agent: &str, path: &Path| pond_protocol::sync::SyncSource {
            agent: Some(agent.into()),
            path: path.to_owned(),
        };
        let req = SyncRequest {
            sources: vec![source("opencode", &home), source("claude-code", &claude)],
            skip_index: true,
            exclude_projects: Vec::new(),
        };
        let mut last = SyncProgress::default();
        let mut each = |p: SyncProgress| last = p;
        let report = run(&store, &req, &mut each).await.unwrap();
        assert_eq!(report.files_new, 4, "{report:?}");
        assert_eq!(report.messages_added, 9, "{report:?}");
        assert_eq!(last.files_done, 4);
        let jsonl = std::fs::metadata(claude.join("s.jsonl")).unwrap().len();
        assert!(last.bytes_total > jsonl, "{last:?}");
        assert_eq!(last.bytes_done, last.bytes_total, "{last:?}");
    }
}
