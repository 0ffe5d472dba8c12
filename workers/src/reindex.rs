//! The index stage a sync, a rebuild and a forget share: [`reindex`] rebuilds the chosen
//! indexes from scratch, brings the rest up to date, refreshes or rebuilds the row map, and
//! moves vectors to re-derived messages, in that order, under the store lock.

use std::time::Instant;

use pond_store::indexes::{self, IndexReport};
use pond_store::rowmap::RowMapStats;
use pond_store::{vectors, Store, StoreLock};

/// What [`reindex`] does, in its order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reindex {
    /// Rebuild the full-text index from scratch (one segment instead of many deltas).
    pub fts: bool,
    /// Rebuild the scalar indexes from scratch.
    pub scalar: bool,
    /// Create missing indexes, and fold rows appended since (`Some(true)`) into the rest.
    pub ensure: Option<bool>,
    pub rowmap: RowMap,
    /// Move vectors to the messages that were re-derived (`crate::repair::rekey_vectors`).
    pub rekey: bool,
}

/// What [`reindex`] does with the row map.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RowMap {
    /// Left as it is.
    #[default]
    Keep,
    /// Rebuilt if it lags the dataset (`Store::refresh_rowmap`).
    Refresh,
    /// Rebuilt whatever it covers (`Store::build_rowmap`).
    Build,
}

/// What [`reindex`] did.
#[derive(Debug, Default)]
pub struct Reindexed {
    /// The indexes rebuilt, in order, with the time each took.
    pub steps: Vec<(String, u64)>,
    /// What [`Reindex::ensure`] created and updated.
    pub ensured: Option<IndexReport>,
    /// Time spent on the indexes (the rebuilds and the ensure).
    pub index_ms: u64,
    /// The row map, if it was written, and the time that took.
    pub rowmap: Option<(RowMapStats, u64)>,
}

/// The index stage: `plan`'s steps in order, each named to `step` as it starts (the
/// rebuilds by `indexes::rebuild`, the row map and the vectors here).
pub async fn reindex(
    store: &Store,
    lock: &StoreLock,
    plan: Reindex,
    step: &mut (dyn FnMut(&str) + Send),
) -> pond_store::Result<Reindexed> {
    let mut done = Reindexed::default();
    let t = Instant::now();
    done.steps = indexes::rebuild(store, lock, plan.fts, plan.scalar, step).await?;
    if let Some(appended) = plan.ensure {
        done.ensured = Some(indexes::ensure_indexes(store, appended).await?);
    }
    done.index_ms = t.elapsed().as_millis() as u64;
    let t = Instant::now();
    let rowmap = match plan.rowmap {
        RowMap::Keep => None,
        RowMap::Refresh => store.refresh_rowmap(lock).await?,
        RowMap::Build => {
            step("row map (messages.rmm)");
            Some(store.build_rowmap(lock).await?)
        }
    };
    done.rowmap = rowmap.map(|stats| (stats, t.elapsed().as_millis() as u64));
    if plan.rekey {
        step("vectors moved to the re-derived messages");
        crate::repair::rekey_vectors(store).await?;
    }
    Ok(done)
}

/// Vectors needed before an index is built: `vectors::VECTOR_INDEX_MIN_ROWS`, or
/// `POND_VECTOR_INDEX_MIN_ROWS` (tests build one over a few thousand vectors).
pub(crate) fn vector_index_min_rows() -> usize {
    env_usize("POND_VECTOR_INDEX_MIN_ROWS", vectors::VECTOR_INDEX_MIN_ROWS)
}

/// A size the environment may override (tests: an index over a few thousand vectors, a
/// backfill of many small chunks to kill in the middle of).
pub(crate) fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}
