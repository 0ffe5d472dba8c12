//! Index maintenance: the BM25 inverted index on `messages.search_text`, scalar (B-tree)
//! indexes on the columns that get and filters look up by, and the n-gram indexes on the
//! parts' text and body that exact and regex search look literals up in.

use lance::index::DatasetIndexExt;
use lance_index::optimize::OptimizeOptions;
use lance_index::scalar::{BuiltinIndexType, InvertedIndexParams, ScalarIndexParams};
use lance_index::IndexType;
use serde::Serialize;

use crate::error::Result;
use crate::schema::{MESSAGES, PARTS};
use crate::store::{Store, StoreLock};

pub const FTS_INDEX: &str = "search_text_fts";
/// B-trees: (dataset, column, index name). `parts.session_id` serves get: a message's parts
/// are looked up by session, which without it scans every part (52 ms per get at 1M).
const SCALAR_INDEXES: [(&str, &str, &str); 4] = [
    (MESSAGES, "id", "messages_id_btree"),
    (MESSAGES, "session_id", "messages_session_btree"),
    (MESSAGES, "timestamp", "messages_timestamp_btree"),
    (PARTS, "session_id", "parts_session_btree"),
];

/// N-gram indexes (Lance's `NGRAM`: the trigrams of ASCII letters and digits, lowercased
/// and accent-folded, each with the rows holding it) on `parts`: (column, index name).
/// `text` holds prose, thinking and tool output; `body` tool input and other JSON.
pub const NGRAM_INDEXES: [(&str, &str); 2] =
    [("text", "parts_text_ngram"), ("body", "parts_body_ngram")];

/// Every index besides the full-text one: (dataset, column, name, kind).
fn scalar_indexes() -> impl Iterator<Item = (&'static str, &'static str, &'static str, IndexType)> {
    let btrees = SCALAR_INDEXES
        .iter()
        .map(|(table, col, name)| (*table, *col, *name, IndexType::BTree));
    let ngrams = NGRAM_INDEXES
        .iter()
        .map(|(col, name)| (PARTS, *col, *name, IndexType::NGram));
    btrees.chain(ngrams)
}

fn scalar_params(kind: IndexType) -> ScalarIndexParams {
    match kind {
        IndexType::NGram => ScalarIndexParams::for_builtin(BuiltinIndexType::NGram),
        _ => ScalarIndexParams::default(),
    }
}

async fn index_names(ds: &lance::Dataset) -> Result<Vec<String>> {
    Ok(ds
        .load_indices()
        .await?
        .iter()
        .map(|i| i.name.clone())
        .collect())
}

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct IndexReport {
    pub created: usize,
    pub updated: bool,
    /// Searchable rows not covered by the full-text index (still found, by a flat scan).
    pub unindexed_rows: usize,
}

/// Memory the full-text index builder may hold before it spills a partition. Lance's default
/// is 2 GiB per build worker, which made the builder the peak of a large sync.
pub const FTS_BUILD_MEMORY_MIB: u64 = 512;

/// Fewest workers a full-text index build runs with. Lance hands the documents to its
/// workers as tokio tasks over one channel; measured on a 2-core machine (a rebuild of
/// 200,000 messages' index), two workers both ran on one thread (1.0 CPU busy, 3.0 s)
/// while three kept both cores busy (1.86 CPUs, 1.6 s). Lance's default is half of its
/// CPU pool plus one, and its pool is the cores less two: one or two workers below 6 cores.
const FTS_BUILD_WORKERS_MIN: usize = 3;

/// Size Lance's CPU pool and full-text build workers for a process that builds indexes
/// (a sync or index worker, a one-shot command), unless the environment already says:
/// at least three build workers, and a CPU pool that admits them
/// (Lance clamps the workers to it). Lance reads both once, at first use, so this runs
/// before any thread but the caller's exists. The resident server keeps Lance's defaults
/// (it builds no index; a larger pool would only let a query spread wider).
pub fn size_build_threads() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (pool, workers) = build_threads(cores);
    for (var, value) in [
        ("LANCE_CPU_THREADS", pool),
        ("LANCE_FTS_NUM_SHARDS", workers),
    ] {
        if std::env::var_os(var).is_none() {
            std::env::set_var(var, value.to_string());
        }
    }
}

/// Lance's CPU pool and full-text build workers on `cores` cores: Lance's own sizes (the
/// cores less two; half of that plus one), raised to [`FTS_BUILD_WORKERS_MIN`].
fn build_threads(cores: usize) -> (usize, usize) {
    let pool = cores.saturating_sub(2).max(FTS_BUILD_WORKERS_MIN);
    let workers = ((pool + 2) / 2).clamp(FTS_BUILD_WORKERS_MIN, pool);
    (pool, workers)
}

/// The tokenizer pond indexes with: words by ICU segmentation (so Chinese and Japanese
/// runs split into words; measured on real sessions with much Chinese text) with the simple
/// tokenizer's splitting on punctuation, lowercased, English stemming, stop words removed,
/// accents folded to ASCII.
pub fn fts_params() -> InvertedIndexParams {
    InvertedIndexParams::new(
        "icu/split".into(),
        lance_index::scalar::inverted::Language::English,
    )
    .lower_case(true)
    .stem(true)
    .remove_stop_words(true)
    .ascii_folding(true)
    .memory_limit_mb(FTS_BUILD_MEMORY_MIB)
}

/// Create missing indexes and, when `appended`, fold newly written rows into existing ones.
pub async fn ensure_indexes(store: &Store, appended: bool) -> Result<IndexReport> {
    let mut report = IndexReport::default();
    let Some(mut ds) = store.latest(MESSAGES).await? else {
        return Ok(report);
    };
    let existing = index_names(&ds).await?;
    let mut stale = false;
    if !existing.iter().any(|e| e == FTS_INDEX) {
        ds.create_index(
            &["search_text"],
            IndexType::Inverted,
            Some(FTS_INDEX.into()),
            &fts_params(),
            true,
        )
        .await?;
        report.created += 1;
    } else {
        stale = appended;
    }
    ensure_scalar(&mut ds, MESSAGES, appended, stale, &mut report).await?;
    if let Some(mut parts) = store.latest(PARTS).await? {
        ensure_scalar(&mut parts, PARTS, appended, false, &mut report).await?;
    }
    report.unindexed_rows = unindexed_rows(&ds).await?;
    Ok(report)
}

/// Create `table`'s missing B-trees; fold appended rows into the existing ones (and into the
/// full-text index when `stale`), since the optimize call covers every index of the dataset.
async fn ensure_scalar(
    ds: &mut lance::Dataset,
    table: &str,
    appended: bool,
    mut stale: bool,
    report: &mut IndexReport,
) -> Result<()> {
    let existing = index_names(ds).await?;
    for (_, col, name, kind) in scalar_indexes().filter(|i| i.0 == table) {
        if existing.iter().any(|e| e == name) {
            stale |= appended;
            continue;
        }
        ds.create_index(&[col], kind, Some(name.into()), &scalar_params(kind), true)
            .await?;
        report.created += 1;
    }
    if stale {
        ds.optimize_indices(&OptimizeOptions::append()).await?;
        report.updated = true;
    }
    Ok(())
}

/// Rows of `messages` that the full-text index does not cover yet: Lance's
/// `num_unindexed_rows` (every row less those of the fragments the index covers), counted
/// from the manifest. Lance's statistics open every segment of the index to report the rest
/// of them, which a sync that appended nothing paid for this one number.
pub async fn unindexed_rows(ds: &lance::Dataset) -> Result<usize> {
    use lance::index::DatasetIndexInternalExt;
    let Ok(segments) = ds.indexed_fragments(FTS_INDEX).await else {
        return Ok(0);
    };
    if segments.is_empty() {
        return Ok(0);
    }
    let mut ids = std::collections::HashSet::new();
    let mut indexed = 0;
    for f in segments.iter().flatten() {
        match f.num_rows() {
            Some(n) if ids.insert(f.id) => indexed += n,
            // A fragment without a row count, or in two segments: Lance's own account.
            _ => return unindexed_rows_by_lance(ds).await,
        }
    }
    Ok(ds.count_rows(None).await?.saturating_sub(indexed))
}

async fn unindexed_rows_by_lance(ds: &lance::Dataset) -> Result<usize> {
    let stats = ds.index_statistics(FTS_INDEX).await;
    let Ok(stats) = stats else { return Ok(0) };
    let v: serde_json::Value = serde_json::from_str(&stats)?;
    Ok(v.get("num_unindexed_rows")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0) as usize)
}

/// Rebuild indexes from scratch: the full-text index as one segment instead of a base plus
/// appended deltas, and the scalar indexes. `step` is told each step's name as it starts.
/// The caller holds the store lock, so a rebuild never overlaps a sync or another rebuild;
/// readers keep the previous index version until the new one is committed.
pub async fn rebuild(
    store: &Store,
    _lock: &StoreLock,
    fts: bool,
    scalar: bool,
    step: &mut (dyn FnMut(&str) + Send),
) -> Result<Vec<(String, u64)>> {
    let mut done = Vec::new();
    let mut todo: Vec<(&str, &str, &str, IndexType)> = Vec::new();
    if fts {
        todo.push((MESSAGES, "search_text", FTS_INDEX, IndexType::Inverted));
    }
    if scalar {
        todo.extend(scalar_indexes());
    }
    for (table, col, name, kind) in todo {
        let Some(mut ds) = store.latest(table).await? else {
            continue;
        };
        let label = format!("{name} on {table}.{col}");
        step(&label);
        let started = std::time::Instant::now();
        let params: Box<dyn lance_index::IndexParams> = match kind {
            IndexType::Inverted => Box::new(fts_params()),
            kind => Box::new(scalar_params(kind)),
        };
        ds.create_index(&[col], kind, Some(name.into()), params.as_ref(), true)
            .await?;
        done.push((label, started.elapsed().as_millis() as u64));
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The count from the manifest is Lance's, before and after rows are appended, and with
    /// no index at all.
    #[tokio::test]
    async fn unindexed_rows_count_as_lance_does() {
        use arrow_array::{RecordBatch, RecordBatchIterator, StringArray};
        use lance::dataset::{WriteMode, WriteParams};
        use std::sync::Arc;

        let dir = tempfile::tempdir().unwrap();
        let uri = dir.path().join("m.lance").to_string_lossy().into_owned();
        let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
            "search_text",
            arrow_schema::DataType::Utf8,
            true,
        )]));
        let append = |n: usize, mode: WriteMode| {
            let (uri, schema) = (uri.clone(), schema.clone());
            async move {
                let texts: Vec<String> = (0..n).map(|i| format!("word{i} parser")).collect();
                let batch =
                    RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from(texts))])
                        .unwrap();
                let params = WriteParams {
                    mode,
                    ..WriteParams::default()
                };
                let reader = RecordBatchIterator::new([Ok(batch)], schema);
                lance::Dataset::write(reader, uri.as_str(), Some(params))
                    .await
                    .unwrap()
            }
        };
        let mut ds = append(30, WriteMode::Create).await;
        assert_eq!(unindexed_rows(&ds).await.unwrap(), 0, "no index");
        ds.create_index(
            &["search_text"],
            IndexType::Inverted,
            Some(FTS_INDEX.into()),
            &fts_params(),
            true,
        )
        .await
        .unwrap();
        assert_eq!(unindexed_rows(&ds).await.unwrap(), 0);
        append(7, WriteMode::Append).await;
        let ds = append(5, WriteMode::Append).await;
        assert_eq!(unindexed_rows(&ds).await.unwrap(), 12);
        assert_eq!(unindexed_rows_by_lance(&ds).await.unwrap(), 12);
    }

    /// Small machines get three workers and a pool that admits them; larger ones keep
    /// Lance's sizes.
    #[test]
    fn build_threads_raise_lance_defaults_on_small_machines_only() {
        assert_eq!(build_threads(1), (3, 3));
        assert_eq!(build_threads(2), (3, 3));
        assert_eq!(build_threads(4), (3, 3));
        assert_eq!(build_threads(8), (6, 4));
        assert_eq!(build_threads(64), (62, 32));
    }
}
