//! Keeping a store's datasets from growing without bound in pieces: every sync commits new
//! versions and small fragments (with the MCP server's background sync every ten minutes,
//! hundreds a day). After a sync, under its lock and in its worker, datasets with many
//! fragments are compacted, and versions older than an hour are removed (a reader holds a
//! version for the length of a query; an hour is far past any).

use lance::dataset::optimize::{compact_files, CompactionOptions};
use serde::Serialize;

use crate::error::Result;
use crate::schema::ALL_TABLES;
use crate::store::{Store, StoreLock};
use crate::vectors::EMBEDDINGS;

/// Every dataset a store keeps: the synced ones and the vectors.
fn datasets() -> impl Iterator<Item = &'static str> {
    ALL_TABLES.into_iter().chain([EMBEDDINGS])
}

/// Small fragments a dataset may have before a sync compacts them (`POND_MAX_FRAGMENTS`
/// lowers it for tests).
pub const MAX_FRAGMENTS: usize = 64;

/// Rows below which a fragment is small: what a sync of a few sessions writes (the MCP
/// server's background sync, every ten minutes). A sync's full flush (64 MiB of parsed rows,
/// about 30,000 messages of generated sessions) writes larger ones, which are left as they
/// are: compacting them rewrote a 2.1M-message first sync's every dataset (63.9 s and a
/// 1,378 MiB peak, against 50.3 s and 879 MiB without). Small ones are merged up to this
/// size, so a merged fragment is no longer small.
pub const SMALL_FRAGMENT_ROWS: usize = 16_384;

fn max_fragments() -> usize {
    std::env::var("POND_MAX_FRAGMENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(MAX_FRAGMENTS)
}
/// Versions older than this are removed.
pub const KEEP_VERSIONS_MINUTES: i64 = 60;

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Maintenance {
    /// Datasets compacted, and the fragments they had.
    pub compacted: u64,
    pub fragments_before: u64,
    pub old_versions_removed: u64,
    pub bytes_removed: u64,
}

/// Compact the datasets with more than [`MAX_FRAGMENTS`] fragments. A compacted `messages`
/// retires the row map (its fragments are new), which the caller's refresh rebuilds; row
/// ids are stable, so indexes and vectors stay valid. A backfill appending vectors meanwhile
/// (it does not take the store lock) commits after the rewrite: Lance rebases an append over
/// a compaction. `wrote`: whether the sync wrote; a sync that did not looks only at the
/// vectors, which a backfill appends to without the lock (the other datasets have the
/// fragments the last sync left, which it compacted as needed).
pub async fn compact(store: &Store, _lock: &StoreLock, wrote: bool) -> Result<Maintenance> {
    let mut m = Maintenance::default();
    for name in datasets().filter(|&n| wrote || n == EMBEDDINGS) {
        let Some(mut ds) = store.latest(name).await? else {
            continue;
        };
        let small = ds
            .fragments()
            .iter()
            .filter(|f| f.num_rows().is_some_and(|n| n < SMALL_FRAGMENT_ROWS))
            .count();
        if small <= max_fragments() {
            continue;
        }
        let options = CompactionOptions {
            target_rows_per_fragment: SMALL_FRAGMENT_ROWS,
            ..CompactionOptions::default()
        };
        m.fragments_before += ds.fragments().len() as u64;
        compact_files(&mut ds, options, None).await?;
        m.compacted += 1;
    }
    Ok(m)
}

/// After `pond forget`: rewrite every fragment with deleted rows, whose bytes are still in
/// its data files (Lance deletes by marking), so that [`remove_old_versions`] can remove
/// them from disk.
pub async fn materialize_deletions(store: &Store, _lock: &StoreLock) -> Result<Maintenance> {
    let mut m = Maintenance::default();
    for name in datasets() {
        let Some(mut ds) = store.latest(name).await? else {
            continue;
        };
        let with_deletions = ds
            .get_fragments()
            .iter()
            .filter(|f| f.metadata().deletion_file.is_some())
            .count();
        if with_deletions == 0 {
            continue;
        }
        let options = CompactionOptions {
            materialize_deletions_threshold: 0.0,
            ..CompactionOptions::default()
        };
        m.fragments_before += ds.fragments().len() as u64;
        compact_files(&mut ds, options, None).await?;
        m.compacted += 1;
    }
    Ok(m)
}

/// The file whose modification time is when [`cleanup`] last ran.
const CLEANED: &str = "versions.cleaned";

/// Remove versions older than [`KEEP_VERSIONS_MINUTES`] (and the files only they used), if
/// the last cleanup ran longer ago than that: it reads every dataset's manifests, and
/// versions are only removed once they are that old anyway (a sync every ten minutes found
/// nothing to remove five times in six). Returns whether it ran.
pub async fn cleanup(store: &Store, lock: &StoreLock, m: &mut Maintenance) -> Result<bool> {
    let stamp = store.root().join(CLEANED);
    if !cleanup_due(&stamp, std::time::SystemTime::now()) {
        return Ok(false);
    }
    cleanup_older_than(
        store,
        lock,
        chrono::Duration::minutes(KEEP_VERSIONS_MINUTES),
        m,
    )
    .await?;
    std::fs::write(&stamp, b"")?;
    Ok(true)
}

/// Whether the cleanup stamped by the file at `stamp` is due at `now`: never ran, ran
/// [`KEEP_VERSIONS_MINUTES`] ago or more, or the clock went back.
fn cleanup_due(stamp: &std::path::Path, now: std::time::SystemTime) -> bool {
    let last = std::fs::metadata(stamp).and_then(|m| m.modified());
    let keep = std::time::Duration::from_secs(60 * KEEP_VERSIONS_MINUTES as u64);
    match last.map(|t| now.duration_since(t)) {
        Ok(Ok(age)) => age >= keep,
        _ => true,
    }
}

/// Remove every version but the latest (after `pond forget`: the older ones still hold
/// what it removed). A query in flight on an older version may fail; the next one reads
/// the latest.
pub async fn remove_old_versions(
    store: &Store,
    lock: &StoreLock,
    m: &mut Maintenance,
) -> Result<()> {
    cleanup_older_than(store, lock, chrono::Duration::zero(), m).await
}

async fn cleanup_older_than(
    store: &Store,
    _lock: &StoreLock,
    age: chrono::Duration,
    m: &mut Maintenance,
) -> Result<()> {
    for name in datasets() {
        let Some(ds) = store.latest(name).await? else {
            continue;
        };
        let removed = ds
            .cleanup_old_versions(age, Some(false), Some(false))
            .await?;
        m.old_versions_removed += removed.old_versions;
        m.bytes_removed += removed.bytes_removed;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    #[test]
    fn cleanup_is_due_an_hour_after_the_last() {
        let dir = tempfile::tempdir().unwrap();
        let stamp = dir.path().join(CLEANED);
        let now = SystemTime::now();
        assert!(cleanup_due(&stamp, now), "never ran");
        std::fs::write(&stamp, b"").unwrap();
        let ran = std::fs::metadata(&stamp).unwrap().modified().unwrap();
        let minutes = |n: u64| Duration::from_secs(60 * n);
        assert!(!cleanup_due(&stamp, ran + minutes(10)));
        assert!(!cleanup_due(&stamp, ran + minutes(59)));
        assert!(cleanup_due(&stamp, ran + minutes(60)));
        assert!(cleanup_due(&stamp, ran - minutes(1)), "the clock went back");
    }
}
