//! The sync job: discover session files, read what is new in each, and store it in one
//! journaled transaction, then bring the indexes and the row map up to date.
//!
//! [`run`] is a row of stages, each a function of its own: a forget that died finished
//! (`finish_forget`), token counts filled for lines stored before they were counted
//! (`fill_usage`), the files found (`discover`), the store upgraded (`upgrade`, which
//! `pond rebuild` runs too, through [`repair_store`]), every file read and its rows written
//! (`read_and_write`, in the windows of `read`), the transaction committed, the store kept
//! up (`upkeep`: compaction, then the index stage [`crate::reindex::reindex`] that rebuild
//! and forget share), what the store holds of the excluded projects counted
//! (`count_excluded`), and the report kept (`finish`).
//!
//! Memory is bounded by the flush size, not the corpus: parsed rows are written every
//! [`FLUSH_BYTES`] (or [`FLUSH_MESSAGES`]), and only file cursors and the store-wide
//! message-id hash set (16 bytes an id) live for the whole job.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

use pond_ingest::paths::path_key;
use pond_ingest::reader::ReadMode;
use pond_ingest::{
    discover_all, FileBatch, FileCursor, PendingBatch, ReadOutcome, Skip, Source, SourceFile,
};
use pond_protocol::job::ForgetRequest;
use pond_protocol::sync::{
    ExcludedStored, SkipNote, SyncProgress, SyncReport, SyncRequest, SyncSource,
};
use pond_store::forgotten::{self, Forgotten};
use pond_store::schema::{sql_str, MESSAGES};
use pond_store::{maintenance, Store, StoreLock, SyncWriter};

use crate::quarantine::Quarantine;
use crate::reindex::{reindex, Reindex, RowMap};
use crate::repair;

mod read;

use read::Reader;

pub const FLUSH_BYTES: usize = 64 << 20;
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
    // A forget that died is finished before anything is read: its files must not return.
    let mut report = SyncReport {
        forget_completed: finish_forget(store).await?,
        ..SyncReport::default()
    };
    let forgotten = Forgotten::load(store.root())?;
    let mut writer = SyncWriter::begin(store).await?;
    report.recovered_interrupted_sync = writer.recovered;
    let mut cursors = writer.cursors().await?;
    fill_usage(store, writer.lock(), &cursors, &mut report, progress).await?;
    let files = discover(&req.sources, &forgotten, &mut report)?;
    let t = Instant::now();
    let mut new_cursors = upgrade(store, &mut writer, &mut cursors, &files, &mut report).await?;
    let mut quarantine = Quarantine::load(store.root());
    report.write_ms += t.elapsed().as_millis() as u64;
    let keep = Keep {
        forgotten: &forgotten,
        exclude: &req.exclude_projects,
    };
    let read = read_and_write(
        files,
        &cursors,
        keep,
        &mut writer,
        &mut quarantine,
        &mut report,
        progress,
    )
    .await?;
    new_cursors.extend(read.cursors);
    // Whether this sync changed the store: a sync that did not leaves the datasets as the
    // last one left them (compacted, indexed and mapped as it needed).
    let changed = read.wrote
        || !new_cursors.is_empty()
        || report.recovered_interrupted_sync
        || report.rederived
        || report.forget_completed;
    let t = Instant::now();
    // Indexes and the row map are brought up to date under the same lock.
    let lock = writer.commit(new_cursors.into_iter().collect()).await?;
    report.write_ms += t.elapsed().as_millis() as u64;
    report.sessions_touched = read.sessions;
    upkeep(store, &lock, req.skip_index, changed, &mut report).await?;
    report.excluded_stored = count_excluded(store, &req.exclude_projects).await?;
    drop(lock);
    quarantine.finish();
    finish(store, &mut report, started);
    Ok(report)
}

/// Finish the forget the tombstones mark pending (one that died): whether there was one.
async fn finish_forget(store: &Store) -> Result<bool, SyncError> {
    if !Forgotten::load(store.root())?.pending {
        return Ok(false);
    }
    crate::forget::complete(store, FLUSH_BYTES).await?;
    Ok(true)
}

/// Token counts of the lines stored before pond read them, before this sync's journal
/// (the fill commits as it goes), when the store's usage does not cover them yet. An
/// outdated store is re-derived whole by [`upgrade`] instead.
async fn fill_usage(
    store: &Store,
    lock: &StoreLock,
    cursors: &HashMap<String, FileCursor>,
    report: &mut SyncReport,
    progress: &mut (dyn FnMut(SyncProgress) + Send),
) -> Result<(), SyncError> {
    if pond_store::usage::is_filled(store) || store.outdated().await? {
        return Ok(());
    }
    let mut each = |files_done, files_total| {
        progress(SyncProgress {
            files_done,
            files_total,
            ..SyncProgress::default()
        })
    };
    report.usage_filled = crate::usage::fill(store, lock, cursors, &mut each).await?;
    report.usage_added += report.usage_filled;
    Ok(())
}

/// The files to read: each source's files (a path two sources find is read once, as the
/// first's), less those `pond forget` removed, parents before subagents across sources
/// (fewer owners to demote). Folders that could not be read are counted as skips.
fn discover(
    sources: &[SyncSource],
    forgotten: &Forgotten,
    report: &mut SyncReport,
) -> Result<Vec<SourceFile>, SyncError> {
    let mut files = Vec::new();
    let mut seen_paths = HashSet::new();
    for source in sources {
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
        note_skips(report, &found.unreadable);
    }
    let before = files.len();
    files.retain(|f| !forgotten.paths.contains(&path_key(&f.path)));
    report.files_forgotten = (before - files.len()) as u64;
    files.sort_by_key(|f| f.is_subagent);
    Ok(files)
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

/// What decides [`Kept`]: the tombstones, and the projects the sync excludes.
#[derive(Clone, Copy)]
struct Keep<'a> {
    forgotten: &'a Forgotten,
    exclude: &'a [String],
}

impl Keep<'_> {
    fn of(&self, batch: &FileBatch) -> Kept {
        let (forgotten, exclude) = (self.forgotten, self.exclude);
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

/// What [`read_and_write`] did.
struct Read {
    /// The cursors to store: files read to their end (or forgotten elsewhere).
    cursors: BTreeMap<String, FileCursor>,
    /// Whether any rows were written.
    wrote: bool,
    /// Sessions with rows read.
    sessions: u64,
}

/// Read every file from its cursor, window by window ([`Reader`]), and write the rows
/// `keep` stores in `writer`'s transaction every [`FLUSH_BYTES`] or [`FLUSH_MESSAGES`];
/// `progress` after every file (or part of one).
async fn read_and_write(
    files: Vec<SourceFile>,
    cursors: &HashMap<String, FileCursor>,
    keep: Keep<'_>,
    writer: &mut SyncWriter<'_>,
    quarantine: &mut Quarantine,
    report: &mut SyncReport,
    progress: &mut (dyn FnMut(SyncProgress) + Send),
) -> Result<Read, SyncError> {
    // What each file has left to read, and what all of them have.
    let unread = read::unread_bytes(&files, cursors);
    let mut tally = Tally {
        prog: SyncProgress {
            files_total: files.len() as u64,
            bytes_total: unread.iter().sum(),
            ..SyncProgress::default()
        },
        ..Tally::default()
    };
    progress(tally.prog);
    let mut done = Read {
        cursors: BTreeMap::new(),
        wrote: false,
        sessions: 0,
    };
    let mut pending = PendingBatch::default();
    let mut reader = Reader::start(files, unread, cursors, quarantine);
    while let Some((outcomes, read_ms)) = reader.next(cursors, quarantine).await? {
        report.read_ms += read_ms;
        for (i, before, out) in outcomes {
            let file = &reader.files()[i];
            let path = path_key(&file.path);
            let share = file.database().map(|_| reader.unread(i));
            tally.count(report, &path, before, share, &out);
            let kept = keep.of(&out.batch);
            if let Some(batch) = settle(out, path, kept, report, &mut done.cursors, quarantine) {
                pending.append(batch);
                if pending.approx_bytes() >= FLUSH_BYTES || pending.messages() >= FLUSH_MESSAGES {
                    done.wrote |= flush(writer, &mut pending, &mut tally.rewritten, report).await?;
                }
            }
            progress(tally.prog);
        }
    }
    done.wrote |= flush(writer, &mut pending, &mut tally.rewritten, report).await?;
    done.sessions = tally.sessions.len() as u64;
    Ok(done)
}

/// What the read stage counts as outcomes come: the progress, the sessions read, and the
/// files read again from their start, whose paths the next write is told of.
#[derive(Default)]
struct Tally {
    prog: SyncProgress,
    sessions: HashSet<String>,
    rewritten_paths: HashSet<String>,
    /// The paths of the outcomes since the last write that belong to a rewritten file.
    rewritten: Vec<String>,
}

impl Tally {
    /// Count one outcome of the file at `path`, read from offset `before`, in the report
    /// and the progress. A database's session moves the bar by `share`, the part of its
    /// database it was counted at (its lines are not the database's bytes), so the bar
    /// ends full.
    fn count(
        &mut self,
        report: &mut SyncReport,
        path: &str,
        before: u64,
        share: Option<u64>,
        out: &ReadOutcome,
    ) {
        if out.mode != ReadMode::Continued {
            report.files_seen += 1;
            self.prog.files_done += 1;
        }
        match out.mode {
            ReadMode::Unchanged => report.files_unchanged += 1,
            ReadMode::New => report.files_new += 1,
            ReadMode::Appended => report.files_appended += 1,
            ReadMode::Rewritten => {
                report.files_rewritten += 1;
                self.rewritten_paths.insert(path.to_owned());
            }
            ReadMode::Continued => {}
            ReadMode::Failed => report.files_failed += 1,
        }
        if self.rewritten_paths.contains(path) {
            self.rewritten.push(path.to_owned());
        }
        let read = match out.mode {
            ReadMode::Appended | ReadMode::Continued => out.cursor.offset.saturating_sub(before),
            _ => out.cursor.offset,
        };
        report.bytes_read += read;
        report.lines_read += out.lines_read;
        self.prog.bytes_done += share.unwrap_or(read);
        self.prog.messages += out.batch.messages.len() as u64;
        for s in &out.batch.sessions {
            self.sessions.insert(s.id.clone());
        }
        for (kind, n) in &out.batch.skipped {
            report.skipped += n;
            *report.skipped_by_reason.entry(kind.clone()).or_default() += n;
        }
        note_examples(report, &out.batch.skips);
    }
}

/// Where one outcome goes: its rows, returned to be written unless `kept` says they are
/// not stored; its cursor, into `cursors`, once the file is read to its end and something
/// was read (the file then leaves the quarantine), or, for a forgotten session found under
/// another path, so that it is read no more. An excluded project's file is read again next
/// time (its exclusion may be lifted).
fn settle(
    out: ReadOutcome,
    path: String,
    kept: Kept,
    report: &mut SyncReport,
    cursors: &mut BTreeMap<String, FileCursor>,
    quarantine: &mut Quarantine,
) -> Option<FileBatch> {
    if kept != Kept::Stored {
        // Counted once per file, at its first (or only) part.
        if out.mode != ReadMode::Continued {
            report.files_excluded += 1;
        }
        if kept == Kept::Forgotten && !out.cursor.partial {
            cursors.insert(path, out.cursor);
        }
        return None;
    }
    if !out.cursor.partial && !matches!(out.mode, ReadMode::Unchanged | ReadMode::Failed) {
        quarantine.cleared(&path);
        cursors.insert(path, out.cursor);
    }
    Some(out.batch)
}

/// After the commit: many small fragments compacted (when the sync `changed` the store),
/// the indexes brought up to date (unless `skip_index`), and old versions removed.
/// Re-derived messages have no indexes, and a demoted owner's text is still in the
/// full-text index (its statistics too): both are rebuilt whatever `skip_index` says, over
/// the compacted fragments, and the row map refreshed.
async fn upkeep(
    store: &Store,
    lock: &StoreLock,
    skip_index: bool,
    changed: bool,
    report: &mut SyncReport,
) -> Result<(), SyncError> {
    let mut upkeep = maintenance::compact(store, lock, changed).await?;
    report.compacted = upkeep.compacted;
    let fresh_indexes = report.rederived || report.demoted_messages > 0 || upkeep.compacted > 0;
    if !skip_index || fresh_indexes {
        let plan = Reindex {
            fts: fresh_indexes,
            scalar: report.rederived || upkeep.compacted > 0,
            ensure: Some(report.messages_added > 0 || report.recovered_interrupted_sync),
            rowmap: RowMap::Refresh,
            rekey: report.rederived,
        };
        let done = reindex(store, lock, plan, &mut |_| {}).await?;
        report.index_ms = done.index_ms;
        if let Some(idx) = done.ensured {
            report.indexes_created = idx.created as u64;
            report.indexes_updated = idx.updated;
            report.unindexed_rows = idx.unindexed_rows as u64;
        }
        if let Some((stats, ms)) = done.rowmap {
            report.rowmap_rows = stats.rows;
            report.rowmap_ms = ms;
        }
    }
    maintenance::cleanup(store, lock, &mut upkeep).await?;
    report.old_versions_removed = upkeep.old_versions_removed;
    Ok(())
}

/// Of each project in `exclude` (in its order; an empty one names none), what the store
/// holds: the sessions `pond forget --project` would remove ([`forgotten::select`], one
/// read of the sessions per project) and their messages (one count). Projects with no
/// session stored are left out.
async fn count_excluded(
    store: &Store,
    exclude: &[String],
) -> pond_store::Result<Vec<ExcludedStored>> {
    let mut counted = Vec::new();
    for project in exclude.iter().filter(|p| !p.is_empty()) {
        let req = ForgetRequest {
            project: Some(project.clone()),
            ..ForgetRequest::default()
        };
        let sessions = forgotten::select(store, &req).await?;
        if sessions.is_empty() {
            continue;
        }
        let mut messages = 0;
        if let Some(ds) = store.dataset(MESSAGES).await? {
            for chunk in sessions.chunks(500) {
                let ids: Vec<String> = chunk.iter().map(|s| sql_str(&s.id)).collect();
                let filter = format!("session_id IN ({})", ids.join(","));
                messages += ds.count_rows(Some(filter)).await? as u64;
            }
        }
        counted.push(ExcludedStored {
            project: project.clone(),
            sessions: sessions.len() as u64,
            messages,
        });
    }
    Ok(counted)
}

/// The report's last figures (the files set aside, the time), kept for `pond status`.
fn finish(store: &Store, report: &mut SyncReport, started: Instant) {
    report.set_aside = Quarantine::list(store.root())
        .into_iter()
        .map(|(path, _)| path)
        .collect();
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    if let Err(e) = store.save_report("sync", report) {
        tracing::warn!("could not keep the sync report for status: {e}");
    }
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
    use std::path::{Path, PathBuf};

    fn claude_file(dir: &Path, name: &str) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, "{}\n").unwrap();
        std::fs::canonicalize(path).unwrap()
    }

    fn source(agent: &str, path: &Path) -> SyncSource {
        SyncSource {
            agent: Some(agent.into()),
            path: path.to_owned(),
        }
    }

    /// A file two sources find is read once, a forgotten one not at all, and parents come
    /// before subagents across sources.
    #[test]
    fn discover_reads_each_file_once_less_the_forgotten_parents_first() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let sub = claude_file(&a, "agent-x.jsonl");
        let first = claude_file(&a, "s1.jsonl");
        let gone = claude_file(&b, "s2.jsonl");
        let last = claude_file(&b, "s3.jsonl");
        let forgotten = Forgotten {
            paths: [path_key(&gone)].into(),
            ..Forgotten::default()
        };
        let sources = [
            source("claude-code", &a),
            source("claude-code", &b),
            source("claude-code", &a),
        ];
        let mut report = SyncReport::default();
        let files = discover(&sources, &forgotten, &mut report).unwrap();
        let paths: Vec<&Path> = files.iter().map(|f| f.path.as_path()).collect();
        assert_eq!(paths, [&first, &last, &sub]);
        assert_eq!(report.files_forgotten, 1);
        assert_eq!(report.skipped, 0);
        let unknown = discover(&[source("nope", &a)], &forgotten, &mut report);
        assert!(matches!(unknown, Err(SyncError::UnknownAgent(a)) if a == "nope"));
    }

    fn outcome(mode: ReadMode, offset: u64, session: Option<&str>) -> ReadOutcome {
        let mut batch = FileBatch::default();
        if let Some(id) = session {
            batch.sessions.push(pond_ingest::SessionRow {
                id: id.into(),
                project: Some("/home/u/work/secret-project".into()),
                ..Default::default()
            });
        }
        ReadOutcome {
            mode,
            batch,
            cursor: FileCursor {
                offset,
                ..FileCursor::default()
            },
            lines_read: 2,
        }
    }

    /// Each file is counted once however many parts it is read in; bytes are what this
    /// read consumed (an unchanged file counts at its cursor, as the report always did); a
    /// rewritten file's parts are all named to the next write.
    #[test]
    fn tally_counts_files_once_and_the_bytes_each_part_read() {
        let mut report = SyncReport::default();
        let mut tally = Tally::default();
        let count = |tally: &mut Tally, report: &mut SyncReport, path, before, share, out| {
            tally.count(report, path, before, share, &out);
        };
        count(
            &mut tally,
            &mut report,
            "new",
            0,
            None,
            outcome(ReadMode::New, 100, Some("s1")),
        );
        let grown = outcome(ReadMode::Appended, 150, Some("s1"));
        count(&mut tally, &mut report, "grown", 100, None, grown);
        let rewritten = outcome(ReadMode::Rewritten, 64, Some("s2"));
        count(&mut tally, &mut report, "re", 0, None, rewritten);
        let rest = outcome(ReadMode::Continued, 90, None);
        count(&mut tally, &mut report, "re", 64, None, rest);
        let same = outcome(ReadMode::Unchanged, 500, None);
        count(&mut tally, &mut report, "same", 500, None, same);
        let row = outcome(ReadMode::New, 7, Some("s3"));
        count(&mut tally, &mut report, "db/s3", 0, Some(1000), row);
        assert_eq!(report.files_seen, 5);
        assert_eq!(
            (
                report.files_new,
                report.files_appended,
                report.files_rewritten,
                report.files_unchanged
            ),
            (2, 1, 1, 1)
        );
        assert_eq!(report.bytes_read, 100 + 50 + 64 + 26 + 500 + 7);
        assert_eq!(report.lines_read, 12);
        assert_eq!(tally.prog.files_done, 5);
        assert_eq!(tally.prog.bytes_done, 100 + 50 + 64 + 26 + 500 + 1000);
        assert_eq!(tally.sessions.len(), 3);
        assert_eq!(tally.rewritten, ["re", "re"]);
    }

    /// A cursor is kept once a file is read to its end (a forgotten session's too, so it is
    /// not read again); an excluded project's is not, nor a partial read's; only stored
    /// rows go on to be written.
    #[test]
    fn settle_keeps_the_rows_and_cursors_a_sync_stores() {
        let dir = tempfile::tempdir().unwrap();
        let mut quarantine = Quarantine::load(dir.path());
        let mut report = SyncReport::default();
        let mut cursors = BTreeMap::new();
        let mut settle_one = |path: &str, kept, out| {
            settle(
                out,
                path.into(),
                kept,
                &mut report,
                &mut cursors,
                &mut quarantine,
            )
            .is_some()
        };
        assert!(settle_one(
            "done",
            Kept::Stored,
            outcome(ReadMode::New, 9, None)
        ));
        let mut part = outcome(ReadMode::New, 9, None);
        part.cursor.partial = true;
        assert!(settle_one("part", Kept::Stored, part));
        assert!(settle_one(
            "same",
            Kept::Stored,
            outcome(ReadMode::Unchanged, 9, None)
        ));
        assert!(settle_one(
            "bad",
            Kept::Stored,
            outcome(ReadMode::Failed, 9, None)
        ));
        assert!(!settle_one(
            "gone",
            Kept::Forgotten,
            outcome(ReadMode::New, 9, None)
        ));
        assert!(!settle_one(
            "out",
            Kept::Excluded,
            outcome(ReadMode::New, 9, None)
        ));
        assert!(!settle_one(
            "out",
            Kept::Excluded,
            outcome(ReadMode::Continued, 9, None)
        ));
        let kept: Vec<&str> = cursors.keys().map(String::as_str).collect();
        assert_eq!(kept, ["done", "gone"]);
        assert_eq!(report.files_excluded, 2);
    }

    /// A batch with a forgotten session is not stored, nor one whose project names an
    /// excluded part; an empty exclusion excludes nothing.
    #[test]
    fn keep_leaves_out_forgotten_sessions_and_excluded_projects() {
        let forgotten = Forgotten {
            sessions: ["s2".to_owned()].into(),
            ..Forgotten::default()
        };
        let exclude = ["secret".to_owned()];
        let keep = Keep {
            forgotten: &forgotten,
            exclude: &exclude,
        };
        let batch = |id| outcome(ReadMode::New, 0, Some(id)).batch;
        assert_eq!(keep.of(&batch("s2")), Kept::Forgotten);
        assert_eq!(keep.of(&batch("s1")), Kept::Excluded);
        assert_eq!(keep.of(&FileBatch::default()), Kept::Stored);
        let none = [String::new()];
        let keep = Keep {
            exclude: &none,
            ..keep
        };
        assert_eq!(keep.of(&batch("s1")), Kept::Stored);
    }

    /// A sync that excludes two projects stored before reports each one's sessions and
    /// messages, in the request's order, and names no project with nothing stored.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_sync_counts_what_is_stored_of_each_excluded_project() {
        let dir = tempfile::tempdir().unwrap();
        let claude = dir.path().join("claude");
        std::fs::create_dir_all(&claude).unwrap();
        let line = |session: &str, n: usize, cwd: &str| {
            format!(
                r#"{{"type":"user","sessionId":"{session}","uuid":"{session}-{n}","cwd":"{cwd}","timestamp":"2026-01-01T00:00:0{n}Z","message":{{"role":"user","content":"message {n}"}}}}"#
            )
        };
        let write = |session: &str, messages: usize, cwd: &str| {
            let text: Vec<String> = (0..messages).map(|n| line(session, n, cwd)).collect();
            std::fs::write(
                claude.join(format!("{session}.jsonl")),
                text.join("\n") + "\n",
            )
            .unwrap();
        };
        write("a1", 3, "/home/u/alpha");
        write("a2", 2, "/home/u/alpha-two");
        write("b1", 4, "/home/u/beta");
        write("c1", 1, "/home/u/gamma");
        let store = Store::open(&dir.path().join("store"), Default::default()).unwrap();
        let mut req = SyncRequest {
            sources: vec![source("claude-code", &claude)],
            skip_index: true,
            exclude_projects: Vec::new(),
        };
        let first = run(&store, &req, &mut |_| {}).await.unwrap();
        assert_eq!(first.messages_added, 10, "{first:?}");
        assert!(first.excluded_stored.is_empty());
        req.exclude_projects = ["beta", "", "delta", "alpha"].map(String::from).to_vec();
        let report = run(&store, &req, &mut |_| {}).await.unwrap();
        let counted = |project: &str, sessions, messages| ExcludedStored {
            project: project.into(),
            sessions,
            messages,
        };
        assert_eq!(
            report.excluded_stored,
            [counted("beta", 1, 4), counted("alpha", 2, 5)]
        );
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
