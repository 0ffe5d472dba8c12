//! `pond forget`: remove sessions from every dataset for good, and keep them out.
//!
//! The sessions a request selects (`pond_store::forgotten::select`, subagents included)
//! are written to the store's tombstones first (`forgotten.json`, marked pending), so that
//! from then on no sync reads their files again. Then, in one journaled transaction like a
//! sync's, the records and cursors of their files are deleted and sessions, messages and
//! parts are re-derived from the records that remain (`repair::rederive`): a message id a
//! forgotten session owned and another session also holds gets its owner again by the usual
//! rule. After the commit: the vectors of the forgotten rows go, fragments with deleted rows
//! are rewritten, the indexes and the row map are rebuilt, vectors move to the new rows, and
//! every older version is removed, so the text leaves the disk, not only the latest
//! version. Those copies are reported (`ForgetReport::copies`: a resumed session's file
//! begins with its predecessor's lines, so forgetting the predecessor leaves its text there);
//! `with_copies` forgets the sessions that hold them too, until none is left. The pending mark is cleared last: a forget killed at any step is completed by
//! the next forget or sync ([`complete`]).

use std::collections::BTreeSet;
use std::time::Instant;

use pond_protocol::job::{ForgetReport, ForgetRequest};
use pond_store::forgotten::{self, Forgotten};
use pond_store::schema::{sql_str, MESSAGES, RECORDS};
use pond_store::{maintenance, vectors, Result, Store, SyncWriter};

use crate::reindex::{reindex, Reindex, RowMap};

/// Forget what `req` selects (or say what that is, for a dry run). `flush_bytes` bounds the
/// rows held between writes while re-deriving.
pub async fn run(store: &Store, req: &ForgetRequest, flush_bytes: usize) -> Result<ForgetReport> {
    let started = Instant::now();
    let mut chosen = forgotten::select(store, req).await?;
    let mut ids: BTreeSet<String> = chosen.iter().map(|s| s.id.clone()).collect();
    let mut copies = forgotten::copies(store, &ids).await?;
    // The sessions holding copies, with their subagents, until no copy is left outside.
    while req.with_copies && !copies.is_empty() {
        for holder in std::mem::take(&mut copies).into_keys() {
            let one = ForgetRequest {
                session: Some(holder),
                ..ForgetRequest::default()
            };
            for s in forgotten::select(store, &one).await? {
                if ids.insert(s.id.clone()) {
                    chosen.push(s);
                }
            }
        }
        copies = forgotten::copies(store, &ids).await?;
    }
    chosen.sort_by(|a, b| a.id.cmp(&b.id));
    let mut report = ForgetReport {
        dry_run: req.dry_run,
        sessions: chosen
            .iter()
            .map(|s| (s.id.clone(), s.project.clone()))
            .collect(),
        copies: copies.into_iter().collect(),
        ..ForgetReport::default()
    };
    let ids: Vec<String> = ids.iter().map(|id| sql_str(id)).collect();
    let paths: Vec<String> = chosen.iter().map(|s| s.source_path.clone()).collect();
    report.files = paths.len() as u64;
    if let Some(ds) = store.dataset(MESSAGES).await? {
        for chunk in ids.chunks(500) {
            let filter = format!("session_id IN ({})", chunk.join(","));
            report.messages += ds.count_rows(Some(filter)).await? as u64;
        }
    }
    if let Some(ds) = store.dataset(RECORDS).await? {
        for chunk in paths.chunks(500) {
            let list: Vec<String> = chunk.iter().map(|p| sql_str(p)).collect();
            let filter = format!("source_path IN ({})", list.join(","));
            report.records += ds.count_rows(Some(filter)).await? as u64;
        }
    }
    if req.dry_run {
        report.elapsed_ms = started.elapsed().as_millis() as u64;
        return Ok(report);
    }
    if !chosen.is_empty() {
        // Under the store lock: no sync reads these files between here and the deletion.
        let lock = store.lock()?;
        let mut tombstones = Forgotten::load(store.root())?;
        tombstones
            .sessions
            .extend(chosen.iter().map(|s| s.id.clone()));
        tombstones.paths.extend(paths);
        tombstones.pending = true;
        tombstones.save(store.root())?;
        drop(lock);
    }
    // Also when nothing new is chosen: a forget that died before finishing is finished.
    let done = complete(store, flush_bytes).await?;
    report.vectors = done.vectors;
    report.bytes_reclaimed = done.bytes_reclaimed;
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    Ok(report)
}

/// What [`complete`] removed beyond the rows.
#[derive(Debug, Default)]
pub struct Completed {
    pub vectors: u64,
    pub bytes_reclaimed: u64,
}

/// Carry out the pending forget the tombstones record (idempotent: a forget killed at any
/// step, or one that finished, can run it again).
pub async fn complete(store: &Store, flush_bytes: usize) -> Result<Completed> {
    let mut tombstones = Forgotten::load(store.root())?;
    let mut done = Completed::default();
    if !tombstones.pending {
        return Ok(done);
    }
    let mut writer = SyncWriter::begin(store).await?;
    let mut cursors = writer.cursors().await?;
    let paths: Vec<String> = tombstones.paths.iter().cloned().collect();
    // The forgotten rows, whose vectors go, before the rows are re-derived.
    let gone_rows = forgotten::message_rows(store, &tombstones.sessions).await?;
    writer.drop_sources(&paths).await?;
    cursors.retain(|p, _| !tombstones.paths.contains(p));
    crate::repair::rederive(store, &mut writer, &cursors, flush_bytes).await?;
    let lock = writer.commit(Vec::new()).await?;
    let stored = vectors::count(store).await?;
    vectors::forget_rows(store, &gone_rows).await?;
    done.vectors = stored - vectors::count(store).await?;
    let mut upkeep = maintenance::materialize_deletions(store, &lock).await?;
    let every = Reindex {
        fts: true,
        scalar: true,
        ensure: Some(true),
        rowmap: RowMap::Build,
        rekey: true,
    };
    reindex(store, &lock, every, &mut |_| {}).await?;
    maintenance::remove_old_versions(store, &lock, &mut upkeep).await?;
    done.bytes_reclaimed = upkeep.bytes_removed;
    tombstones.pending = false;
    tombstones.save(store.root())?;
    Ok(done)
}
