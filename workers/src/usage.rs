//! Filling `usage` for what a store already holds: every stored line (`records`) read
//! again by its client's parser for token counts only, no source file needed. A sync runs
//! it first when the store's usage does not cover its lines yet (a store written before
//! usage existed), and `pond rebuild --usage` runs it afresh. It commits every
//! [`COMMIT_ROWS`] rows with the number of files done (`pond_store::usage::PROGRESS`), so
//! a fill that dies resumes there: the rows of the files after that point, which a
//! last commit may hold in part, are deleted first.

use std::collections::HashMap;

use pond_ingest::paths::path_key;
use pond_ingest::reader::LineParser;
use pond_ingest::{FileCursor, UsageRow};
use pond_store::records::StoredLines;
use pond_store::usage::{self, Keys};
use pond_store::{Store, StoreLock};

/// Rows gathered before a commit.
pub const COMMIT_ROWS: usize = 50_000;

/// Read every stored line for usage, resuming where a fill stopped; `each(done, total)`
/// after every commit (in files). Returns the rows stored.
pub async fn fill(
    store: &Store,
    lock: &StoreLock,
    cursors: &HashMap<String, FileCursor>,
    each: &mut (dyn FnMut(u64, u64) + Send),
) -> pond_store::Result<u64> {
    let Some(lines) = StoredLines::index(store).await? else {
        usage::mark_filled(store)?;
        return Ok(0);
    };
    let files = crate::repair::stored_files(&lines, cursors);
    let start = usage::progress(store).min(files.len());
    let rest: Vec<String> = files[start..].iter().map(|f| path_key(&f.path)).collect();
    usage::forget_files(store, lock, &rest).await?;
    if start > 0 {
        tracing::info!(files = start, "usage: resuming a fill");
    }
    let mut keys = Keys::load(store).await?;
    let mut pending: Vec<UsageRow> = Vec::new();
    let mut stored = 0u64;
    let total = files.len() as u64;
    for (i, f) in files.iter().enumerate().skip(start) {
        let path = path_key(&f.path);
        let cursor = cursors.get(&path);
        let mut parser = LineParser::new(
            f,
            cursor.and_then(|c| c.format.as_deref()),
            cursor.map_or(0, |c| c.mtime_ns),
        );
        let rows: Vec<u64> = lines.by_file[&path].iter().map(|l| l.1).collect();
        for chunk in rows.chunks(4096) {
            for l in lines.read(chunk).await? {
                parser.line(l.line, l.byte_offset, &l.raw);
            }
            let batch = parser.drain();
            pending.extend(keys.fresh(&batch.usage).into_iter().cloned());
        }
        let batch = parser.finish();
        pending.extend(keys.fresh(&batch.usage).into_iter().cloned());
        let last = i + 1 == files.len();
        if pending.len() >= COMMIT_ROWS || last {
            let rows: Vec<&UsageRow> = pending.iter().collect();
            usage::append(store, lock, &rows).await?;
            stored += rows.len() as u64;
            pending.clear();
            usage::save_progress(store, i + 1)?;
            each(i as u64 + 1, total);
        }
    }
    usage::mark_filled(store)?;
    Ok(stored)
}
