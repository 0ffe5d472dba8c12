//! The rebuild job (`pond rebuild`): a sync's repairs, then the index stage it shares with a
//! sync and a forget ([`crate::reindex`]).

use std::time::Instant;

use pond_protocol::job::{RebuildReport, RebuildRequest};
use pond_store::indexes;
use pond_store::{schema, vectors, Store, StoreLock};

use crate::reindex::{reindex, vector_index_min_rows, Reindex, RowMap};
use crate::sync::SyncError;

/// Errors of a rebuild: the repair's (a sync's) or the store's.
#[derive(Debug)]
pub enum RebuildError {
    Repair(SyncError),
    Store(pond_store::StoreError),
}

impl From<pond_store::StoreError> for RebuildError {
    fn from(e: pond_store::StoreError) -> Self {
        RebuildError::Store(e)
    }
}

/// `pond rebuild`: the repairs and upgrade a sync would make (`crate::sync::repair_store`),
/// vectors of rows that are gone pruned, token counts filled (afresh with `req.usage`),
/// the indexes and the row map `req` names rebuilt ([`reindex`]; all of them after a
/// re-derive), and the vector index trained with `req.vectors`.
pub async fn run(
    store: &Store,
    req: &RebuildRequest,
    step: &mut (dyn FnMut(&str) + Send),
) -> Result<RebuildReport, RebuildError> {
    let started = Instant::now();
    let (lock, repaired) = crate::sync::repair_store(store)
        .await
        .map_err(RebuildError::Repair)?;
    // Vectors of rows that are gone (a backfill during a sync that was killed).
    let pruned = vectors::prune(store).await?;
    if pruned > 0 {
        tracing::warn!(pruned, "removed vectors whose messages are gone");
    }
    // Re-derived messages need every index and the row map afresh.
    let all = repaired.rederived;
    let usage_step = fill_usage(store, &lock, req.usage, step).await?;
    let plan = Reindex {
        fts: req.fts || all,
        scalar: req.scalar || all,
        ensure: None,
        rowmap: if req.rowmap || all {
            RowMap::Build
        } else {
            RowMap::Keep
        },
        rekey: all,
    };
    let done = reindex(store, &lock, plan, step).await?;
    let mut steps = done.steps;
    steps.extend(usage_step);
    let mut rowmap_bytes = 0;
    if let Some((stats, ms)) = done.rowmap {
        rowmap_bytes = stats.file_bytes;
        steps.push((
            format!("row map: {} rows, {} sessions", stats.rows, stats.sessions),
            ms,
        ));
    }
    if req.vectors {
        step("vector index");
        let t = Instant::now();
        let done = vectors::ensure_index(store, vector_index_min_rows(), true).await?;
        steps.push((
            format!("vector index: {}", format!("{done:?}").to_lowercase()),
            t.elapsed().as_millis() as u64,
        ));
    }
    let (rows, unindexed_rows) = match store.dataset(schema::MESSAGES).await {
        Ok(Some(ds)) => (
            ds.count_rows(None).await.unwrap_or(0) as u64,
            indexes::unindexed_rows(&ds).await.unwrap_or(0) as u64,
        ),
        _ => (0, 0),
    };
    Ok(RebuildReport {
        steps,
        rows,
        unindexed_rows,
        rowmap_bytes,
        paths_repaired: repaired.paths_repaired,
        rederived: repaired.rederived,
        elapsed_ms: started.elapsed().as_millis() as u64,
        peak_kib: 0,
    })
}

/// Token counts from the stored lines when `usage` is not filled, or afresh (emptied first)
/// with `again`: the step's line for the report, if it ran.
async fn fill_usage(
    store: &Store,
    lock: &StoreLock,
    again: bool,
    step: &mut (dyn FnMut(&str) + Send),
) -> pond_store::Result<Option<(String, u64)>> {
    if !again && pond_store::usage::is_filled(store) {
        return Ok(None);
    }
    step("token counts (usage) from the stored lines");
    let t = Instant::now();
    if again {
        pond_store::usage::reset(store, lock).await?;
    }
    let cursors = pond_store::stored_cursors(store).await?;
    let calls = crate::usage::fill(store, lock, &cursors, &mut |_, _| {}).await?;
    Ok(Some((
        format!("usage: {calls} model calls"),
        t.elapsed().as_millis() as u64,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pond_protocol::sync::{SyncRequest, SyncSource};

    /// A store synced without indexes, with one message.
    async fn unindexed_store(dir: &std::path::Path) -> Store {
        let claude = dir.join("claude");
        std::fs::create_dir_all(&claude).unwrap();
        std::fs::write(
            claude.join("s.jsonl"),
            r#"{"type":"user","sessionId":"s1","uuid":"u1","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hello there"}}
"#,
        )
        .unwrap();
        let store = Store::open(&dir.join("store"), Default::default()).unwrap();
        let req = SyncRequest {
            sources: vec![SyncSource {
                agent: Some("claude-code".into()),
                path: claude,
            }],
            skip_index: true,
            exclude_projects: Vec::new(),
        };
        crate::sync::run(&store, &req, &mut |_| {}).await.unwrap();
        store
    }

    /// The stage does what its plan names, in order, and names each step it takes.
    #[tokio::test(flavor = "multi_thread")]
    async fn reindex_does_what_the_plan_names() {
        let dir = tempfile::tempdir().unwrap();
        let store = unindexed_store(dir.path()).await;
        let lock = store.lock().unwrap();
        let mut named = Vec::new();
        let mut step = |s: &str| named.push(s.to_owned());
        let nothing = reindex(&store, &lock, Reindex::default(), &mut step)
            .await
            .unwrap();
        assert!(nothing.steps.is_empty() && nothing.ensured.is_none());
        assert!(nothing.rowmap.is_none());
        let plan = Reindex {
            fts: true,
            ensure: Some(false),
            rowmap: RowMap::Build,
            ..Reindex::default()
        };
        let done = reindex(&store, &lock, plan, &mut step).await.unwrap();
        let labels: Vec<&str> = done.steps.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(labels.len(), 1, "{labels:?}");
        assert!(labels[0].ends_with("on messages.search_text"), "{labels:?}");
        // The full-text index is there: the ensure creates the scalar indexes only.
        let ensured = done.ensured.unwrap();
        assert!(ensured.created > 0 && !ensured.updated, "{ensured:?}");
        assert_eq!(ensured.unindexed_rows, 0);
        assert_eq!(done.rowmap.unwrap().0.rows, 1);
        assert_eq!(named, [labels[0], "row map (messages.rmm)"]);
        // A map that covers the dataset is not refreshed.
        let plan = Reindex {
            rowmap: RowMap::Refresh,
            ..Reindex::default()
        };
        let again = reindex(&store, &lock, plan, &mut |_| {}).await.unwrap();
        assert!(again.rowmap.is_none());
    }
}
