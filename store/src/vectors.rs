//! Message embeddings: the `embeddings` dataset, its backfill, and nearest-neighbour search.
//!
//! Vectors live in their own dataset rather than as a column of `messages`: a backfill only
//! appends (without the store lock), `messages` is rewritten only by a sync's demotions and
//! re-derivations and by forget, and a store can hold the vectors of more than one model side
//! by side (`model` says whose each is; every query filters on it). Each row carries the
//! message's row id (for hydration from the row map), its message id (so [`rekey`] can move
//! it to a re-derived row) and copies of the columns search filters on, so filters prefilter
//! the nearest-neighbour query in Lance. A vector whose row is gone is skipped by hydration;
//! a demoted owner's is deleted when the sync commits, and [`prune`] removes the rest.
//!
//! The backfill embeds every searchable message without a vector from this model, newest
//! first, in chunks of [`CHUNK_ROWS`] sorted by length (each distinct text embedded once,
//! [`BATCH_TEXTS`] texts a call), each chunk one append commit: a killed backfill loses at
//! most its chunk in flight and the next one skips what is there. From
//! [`VECTOR_INDEX_MIN_ROWS`] vectors an IVF-SQ index is built (below, every vector is scanned
//! exactly); vectors not yet indexed are still scanned.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::builder::{
    FixedSizeListBuilder, Float16Builder, StringBuilder, TimestampMillisecondBuilder, UInt64Builder,
};
use arrow_array::types::{Float32Type, TimestampMillisecondType, UInt64Type};
use arrow_array::{Array, ArrayRef, Float32Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use futures::TryStreamExt;
use lance::Dataset;
use lance_linalg::distance::MetricType;

use crate::error::{Result, StoreError};
use crate::filters::SearchFilters;
use crate::read::{opt_str, primitive_col, string_col, ts_at, MESSAGE_COLUMNS};
use crate::schema::{sql_str, MESSAGES};
use crate::store::Store;

pub const EMBEDDINGS: &str = "embeddings";
/// Messages per appended chunk: the unit a killed backfill loses and a resumed one redoes.
pub const CHUNK_ROWS: usize = 2048;
/// Texts per call of the embedding function (each chunk is sorted by length first; the
/// embedder runs a call's texts in forward passes of at most 2,048 tokens, unpadded, so a
/// call of short texts still fills a pass).
pub const BATCH_TEXTS: usize = 128;
/// Text beyond this many bytes is cut before tokenizing (the model reads at most 512 tokens,
/// 256 as pond imports it, about 1-2 KB of text, anyway).
pub const TEXT_BYTES: usize = 4096;

fn schema(dims: usize) -> SchemaRef {
    let ts = DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()));
    Arc::new(Schema::new(vec![
        Field::new("row_id", DataType::UInt64, false),
        Field::new("message_id", DataType::Utf8, false),
        Field::new("session_id", DataType::Utf8, false),
        Field::new("timestamp", ts, false),
        Field::new("role", DataType::Utf8, false),
        Field::new("source_agent", DataType::Utf8, false),
        Field::new("project", DataType::Utf8, true),
        Field::new("model", DataType::Utf8, false),
        Field::new(
            "vector",
            DataType::FixedSizeList(
                Arc::new(Field::new("item", DataType::Float16, true)),
                dims as i32,
            ),
            false,
        ),
    ]))
}

/// A message to embed.
#[derive(Debug, Clone)]
pub struct Pending {
    pub row_id: u64,
    pub message_id: String,
    pub session_id: String,
    pub timestamp: i64,
    pub role: String,
    pub source_agent: String,
    pub project: Option<String>,
    pub text: String,
}

fn batch(model: &str, dims: usize, rows: &[(Pending, Vec<f32>)]) -> Result<RecordBatch> {
    let mut row_id = UInt64Builder::new();
    let mut message_id = StringBuilder::new();
    let mut session_id = StringBuilder::new();
    let mut timestamp = TimestampMillisecondBuilder::new().with_timezone("UTC");
    let mut role = StringBuilder::new();
    let mut agent = StringBuilder::new();
    let mut project = StringBuilder::new();
    let mut models = StringBuilder::new();
    let mut vector = FixedSizeListBuilder::new(Float16Builder::new(), dims as i32)
        .with_field(Arc::new(Field::new("item", DataType::Float16, true)));
    for (p, v) in rows {
        if v.len() != dims {
            return Err(StoreError::Failed(format!(
                "a vector of {} dims for a model of {dims}",
                v.len()
            )));
        }
        row_id.append_value(p.row_id);
        message_id.append_value(&p.message_id);
        session_id.append_value(&p.session_id);
        timestamp.append_value(p.timestamp);
        role.append_value(&p.role);
        agent.append_value(&p.source_agent);
        project.append_option(p.project.as_deref());
        models.append_value(model);
        for x in v {
            vector.values().append_value(half::f16::from_f32(*x));
        }
        vector.append(true);
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(row_id.finish()),
        Arc::new(message_id.finish()),
        Arc::new(session_id.finish()),
        Arc::new(timestamp.finish()),
        Arc::new(role.finish()),
        Arc::new(agent.finish()),
        Arc::new(project.finish()),
        Arc::new(models.finish()),
        Arc::new(vector.finish()),
    ];
    Ok(RecordBatch::try_new(schema(dims), columns)?)
}

/// Append vectors (with their messages' filter columns) to `embeddings`.
pub async fn append(
    store: &Store,
    model: &str,
    dims: usize,
    rows: &[(Pending, Vec<f32>)],
) -> Result<()> {
    store.append(EMBEDDINGS, batch(model, dims, rows)?).await
}

/// The row ids that already have a vector from `model`.
async fn embedded(store: &Store, model: &str) -> Result<HashSet<u64>> {
    let mut out = HashSet::new();
    let Some(ds) = store.dataset(EMBEDDINGS).await? else {
        return Ok(out);
    };
    let mut scan = ds.scan();
    scan.project(&["row_id"])?
        .filter(&format!("model = {}", sql_str(model)))?;
    let mut stream = scan.try_into_stream().await?;
    while let Some(b) = stream.try_next().await? {
        let ids = primitive_col::<UInt64Type>(&b, "row_id")?;
        out.extend(ids.values().iter().copied());
    }
    Ok(out)
}

/// Texts to unit vectors: the embedding model, as the backfill calls it.
pub type EmbedFn<'a> = dyn FnMut(&[&str]) -> Result<Vec<Vec<f32>>> + Send + 'a;

/// What a backfill did.
#[derive(Debug, Clone, Copy, Default)]
pub struct BackfillStats {
    pub embedded: u64,
    pub already: u64,
    pub remaining: u64,
}

/// Embed every searchable message without a vector from `model`, `limit` at most (0: all),
/// **newest first** (recent work is what an agent asks about, so vector search covers it
/// minutes after a backfill starts): one pass over the rows' timestamps, then the rows by id
/// in chunks of `chunk_rows` ([`CHUNK_ROWS`] in production), each appended (committed) before
/// the next, so a killed backfill resumes where it stopped. The caller holds the store's
/// embedding lock.
pub async fn backfill(
    store: &Store,
    model: &str,
    dims: usize,
    limit: u64,
    chunk_rows: usize,
    embed: &mut EmbedFn<'_>,
    progress: &mut (dyn FnMut(u64, u64) + Send),
) -> Result<BackfillStats> {
    let chunk_rows = chunk_rows.max(1);
    let mut stats = BackfillStats::default();
    let Some(ds) = store.dataset(MESSAGES).await? else {
        return Ok(stats);
    };
    let done = embedded(store, model).await?;
    stats.already = done.len() as u64;
    let mut todo = newest_first(&ds, &done).await?;
    let waiting = todo.len() as u64;
    if limit > 0 {
        todo.truncate(limit as usize);
    }
    let total = todo.len() as u64;
    for ids in todo.chunks(chunk_rows) {
        // A row gone since the first pass (a forget) is simply not there.
        let (b, _) = crate::hydrate::take(&ds, ids, &MESSAGE_COLUMNS).await?;
        let out = embed_chunk(pending(&b)?, embed)?;
        append(store, model, dims, &out).await?;
        stats.embedded += out.len() as u64;
        progress(stats.embedded, total);
    }
    // A sync may add messages while the backfill runs: they wait for the next one.
    stats.remaining = waiting.saturating_sub(stats.embedded);
    Ok(stats)
}

/// The searchable rows without a vector, newest first (ties: the later row first).
async fn newest_first(ds: &Dataset, done: &HashSet<u64>) -> Result<Vec<u64>> {
    let mut scan = ds.scan();
    scan.with_row_id()
        .project(&["timestamp"])?
        .filter("searchable")?;
    let mut stream = scan.try_into_stream().await?;
    let mut rows: Vec<(i64, u64)> = Vec::new();
    while let Some(b) = stream.try_next().await? {
        let row_ids = primitive_col::<UInt64Type>(&b, "_rowid")?;
        for i in 0..b.num_rows() {
            let row_id = row_ids.value(i);
            if !done.contains(&row_id) {
                rows.push((ts_at(&b, "timestamp", i)?.unwrap_or_default(), row_id));
            }
        }
    }
    rows.sort_unstable_by(|a, b| b.cmp(a));
    Ok(rows.into_iter().map(|(_, r)| r).collect())
}

/// The rows of a `take` of [`MESSAGE_COLUMNS`], as the backfill keeps them.
fn pending(b: &RecordBatch) -> Result<Vec<Pending>> {
    let row_ids = primitive_col::<UInt64Type>(b, "_rowid")?;
    let (id, session, role, agent, project, text) = (
        string_col(b, "id")?,
        string_col(b, "session_id")?,
        string_col(b, "role")?,
        string_col(b, "source_agent")?,
        string_col(b, "project")?,
        string_col(b, "search_text")?,
    );
    (0..b.num_rows())
        .map(|i| {
            let t = text.value(i);
            Ok(Pending {
                row_id: row_ids.value(i),
                message_id: id.value(i).to_owned(),
                session_id: session.value(i).to_owned(),
                timestamp: ts_at(b, "timestamp", i)?.unwrap_or_default(),
                role: role.value(i).to_owned(),
                source_agent: agent.value(i).to_owned(),
                project: opt_str(project, i),
                text: t[..t.floor_char_boundary(TEXT_BYTES)].to_owned(),
            })
        })
        .collect()
}

/// A chunk's vectors: each distinct text embedded once ("yes", "continue" and pasted logs
/// recur), shortest first and [`BATCH_TEXTS`] per call of `embed`.
fn embed_chunk(
    mut rows: Vec<Pending>,
    embed: &mut EmbedFn<'_>,
) -> Result<Vec<(Pending, Vec<f32>)>> {
    rows.sort_by(|a, b| {
        a.text
            .len()
            .cmp(&b.text.len())
            .then_with(|| a.text.cmp(&b.text))
    });
    let mut distinct: Vec<&str> = Vec::new();
    let mut which = Vec::with_capacity(rows.len());
    for p in &rows {
        if distinct.last() != Some(&p.text.as_str()) {
            distinct.push(&p.text);
        }
        which.push(distinct.len() - 1);
    }
    let mut vectors = Vec::with_capacity(distinct.len());
    for group in distinct.chunks(BATCH_TEXTS) {
        let got = embed(group)?;
        if got.len() != group.len() {
            return Err(StoreError::Failed(format!(
                "asked for {} vectors, got {}",
                group.len(),
                got.len()
            )));
        }
        vectors.extend(got);
    }
    Ok(rows
        .into_iter()
        .zip(which)
        .map(|(p, i)| (p, vectors[i].clone()))
        .collect())
}

/// The nearest messages to `query` among `model`'s vectors, filtered: (row id, score) best
/// first, score = 1 - cosine distance; and how many vectors were in scope.
pub async fn nearest(
    store: &Store,
    model: &str,
    query: &[f32],
    filters: &SearchFilters,
    k: usize,
) -> Result<(Vec<(u64, f32)>, usize)> {
    let ds = store.dataset(EMBEDDINGS).await?.ok_or_else(|| {
        StoreError::NotFound(
            "no message has a vector yet: run `pond embed` (after `pond model import` or `pond model fetch`)".into(),
        )
    })?;
    let mut filter = format!("model = {}", sql_str(model));
    if let Some(f) = filters.to_sql()? {
        filter = format!("{filter} AND {f}");
    }
    let q = Float32Array::from(query.to_vec());
    let mut scan = ds.scan();
    // With the index: probe 20 partitions and re-rank 4k candidates on the stored vectors
    // (ignored while every vector is scanned exactly).
    scan.nearest("vector", &q, k)?
        .distance_metric(MetricType::Cosine)
        .nprobes(20)
        .refine(4)
        .prefilter(true)
        .project(&["row_id", "_distance"])?
        .filter(&filter)?;
    let ranked = async {
        let stream = scan.try_into_stream().await?;
        stream.try_collect::<Vec<RecordBatch>>().await
    };
    let (in_scope, batches) = futures::try_join!(ds.count_rows(Some(filter.clone())), ranked)?;
    let mut out = Vec::new();
    for b in &batches {
        let ids = primitive_col::<UInt64Type>(b, "row_id")?;
        let dist = primitive_col::<Float32Type>(b, "_distance")?;
        for i in 0..b.num_rows() {
            if dist.is_valid(i) {
                out.push((ids.value(i), 1.0 - dist.value(i)));
            }
        }
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    Ok((out, in_scope))
}

/// How many vectors the store holds, of every model.
pub async fn count(store: &Store) -> Result<u64> {
    Ok(match store.latest(EMBEDDINGS).await? {
        Some(ds) => ds.count_rows(None).await? as u64,
        None => 0,
    })
}

/// Remove the vectors of messages rows that no longer exist (rows a sync rewrote as
/// replayed copies). Readers skip such vectors anyway; this reclaims them.
pub async fn forget_rows(store: &Store, row_ids: &[u64]) -> Result<()> {
    if row_ids.is_empty() {
        return Ok(());
    }
    let Some(mut ds) = store.latest(EMBEDDINGS).await? else {
        return Ok(());
    };
    for chunk in row_ids.chunks(1000) {
        let list: Vec<String> = chunk.iter().map(u64::to_string).collect();
        ds.delete(&format!("row_id IN ({})", list.join(",")))
            .await?;
    }
    Ok(())
}

/// Remove the vectors whose message row does not exist (rows a killed sync added and its
/// recovery rolled back, while a backfill embedded them). Returns how many went.
pub async fn prune(store: &Store) -> Result<u64> {
    let (Some(vectors), Some(messages)) = (
        store.latest(EMBEDDINGS).await?,
        store.latest(MESSAGES).await?,
    ) else {
        return Ok(0);
    };
    let mut rows = HashSet::new();
    let mut scan = messages.scan();
    scan.with_row_id().project::<&str>(&[])?;
    let mut stream = scan.try_into_stream().await?;
    while let Some(b) = stream.try_next().await? {
        rows.extend(
            primitive_col::<UInt64Type>(&b, "_rowid")?
                .values()
                .iter()
                .copied(),
        );
    }
    let mut gone = Vec::new();
    let mut scan = vectors.scan();
    scan.project(&["row_id"])?;
    let mut stream = scan.try_into_stream().await?;
    while let Some(b) = stream.try_next().await? {
        let ids = primitive_col::<UInt64Type>(&b, "row_id")?;
        gone.extend(ids.values().iter().copied().filter(|r| !rows.contains(r)));
    }
    forget_rows(store, &gone).await?;
    Ok(gone.len() as u64)
}

/// After `messages` was re-derived (every row has a new row id): point each vector at the
/// row that now owns its message id, with that row's filter columns, and drop the vectors
/// of messages that are not searchable any more. Vectors are never computed again. The
/// caller holds the store lock and the embedding lock. Returns (kept, dropped).
pub async fn rekey(store: &Store, map: &crate::rowmap::RowMap) -> Result<(u64, u64)> {
    let Some(ds) = store.latest(EMBEDDINGS).await? else {
        return Ok((0, 0));
    };
    let (mut kept, mut dropped) = (0u64, 0u64);
    let mut first = true;
    let mut stream = ds.scan().try_into_stream().await?;
    while let Some(b) = stream.try_next().await? {
        let message_id = string_col(&b, "message_id")?;
        let mut keep = Vec::new();
        let mut rows = Vec::new();
        for i in 0..b.num_rows() {
            match map.position_of_message(message_id.value(i))? {
                Some(pos) if map.row(pos)?.searchable => {
                    keep.push(i as u32);
                    rows.push(pos);
                }
                _ => dropped += 1,
            }
        }
        let taken =
            arrow_select::take::take_record_batch(&b, &arrow_array::UInt32Array::from(keep))?;
        let mut row_id = UInt64Builder::new();
        let mut session_id = StringBuilder::new();
        let mut timestamp = TimestampMillisecondBuilder::new().with_timezone("UTC");
        let mut role = StringBuilder::new();
        let mut agent = StringBuilder::new();
        let mut project = StringBuilder::new();
        for &pos in &rows {
            let r = map.row(pos)?;
            row_id.append_value(r.row_id);
            session_id.append_value(r.session_id);
            timestamp.append_value(r.timestamp);
            role.append_value(r.role);
            agent.append_value(r.source_agent);
            project.append_option(r.project);
        }
        let mut fresh: HashMap<&str, ArrayRef> = HashMap::from([
            ("row_id", Arc::new(row_id.finish()) as ArrayRef),
            ("session_id", Arc::new(session_id.finish())),
            ("timestamp", Arc::new(timestamp.finish())),
            ("role", Arc::new(role.finish())),
            ("source_agent", Arc::new(agent.finish())),
            ("project", Arc::new(project.finish())),
        ]);
        let schema = taken.schema();
        let columns = schema
            .fields()
            .iter()
            .zip(taken.columns())
            .map(|(f, c)| fresh.remove(f.name().as_str()).unwrap_or_else(|| c.clone()))
            .collect();
        let out = RecordBatch::try_new(schema, columns)?;
        kept += out.num_rows() as u64;
        if first {
            store.overwrite(EMBEDDINGS, out).await?;
            first = false;
        } else {
            store.append(EMBEDDINGS, out).await?;
        }
    }
    if first {
        let schema = Arc::new(arrow_schema::Schema::from(ds.schema()));
        store.overwrite_empty(EMBEDDINGS, schema).await?;
    }
    Ok((kept, dropped))
}

/// Vectors stored per model, for status.
pub async fn counts(store: &Store) -> Result<Vec<(String, usize)>> {
    let Some(ds) = store.dataset(EMBEDDINGS).await? else {
        return Ok(Vec::new());
    };
    let mut scan = ds.scan();
    scan.project(&["model"])?;
    let mut stream = scan.try_into_stream().await?;
    let mut out: Vec<(String, usize)> = Vec::new();
    while let Some(b) = stream.try_next().await? {
        let m = string_col(&b, "model")?;
        for i in 0..b.num_rows() {
            match out.iter_mut().find(|(name, _)| name == m.value(i)) {
                Some((_, n)) => *n += 1,
                None => out.push((m.value(i).to_owned(), 1)),
            }
        }
    }
    Ok(out)
}

/// The store's model, if it has one, how many vectors of it the store holds, and the time
/// span of the messages they are of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coverage {
    pub model: String,
    pub vectors: usize,
    /// The oldest and the newest message with a vector (epoch ms); None without vectors.
    /// The backfill goes newest first, so after a partial one this is the recent past.
    pub span: Option<(i64, i64)>,
}

/// The store's model, how many vectors it has and the time they cover (None: no model).
pub async fn coverage(store: &Store) -> Option<Coverage> {
    let manifest = std::fs::read(store.model_dir().join("manifest.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())?;
    let model = manifest["name"].as_str()?.to_owned();
    // Vectors are keyed by the name and the weights' hash (`pond_embed::Manifest::
    // vector_key`); an asset from before weights were hashed keys them by name alone.
    let key = match manifest["weights"].as_str() {
        Some(h) => format!("{model}@{}", &h[..h.len().min(12)]),
        None => model.clone(),
    };
    let (vectors, span) = span_of(store, &key).await.unwrap_or((0, None));
    Some(Coverage {
        model,
        vectors,
        span,
    })
}

/// How many vectors of `key` there are, and the oldest and newest of their messages' times:
/// one scan of two narrow columns.
async fn span_of(store: &Store, key: &str) -> Result<(usize, Option<(i64, i64)>)> {
    let Some(ds) = store.dataset(EMBEDDINGS).await? else {
        return Ok((0, None));
    };
    let mut scan = ds.scan();
    scan.project(&["model", "timestamp"])?;
    let mut stream = scan.try_into_stream().await?;
    let (mut n, mut span): (usize, Option<(i64, i64)>) = (0, None);
    while let Some(b) = stream.try_next().await? {
        let m = string_col(&b, "model")?;
        let t = primitive_col::<TimestampMillisecondType>(&b, "timestamp")?;
        for i in 0..b.num_rows() {
            if m.value(i) != key {
                continue;
            }
            n += 1;
            let at = t.value(i);
            span = Some(span.map_or((at, at), |(lo, hi)| (lo.min(at), hi.max(at))));
        }
    }
    Ok((n, span))
}

pub const VECTOR_INDEX: &str = "embeddings_vector_ivf_sq";
/// Below this many vectors a nearest-neighbour query scans them all (exact); from here on
/// an index serves it. An exact scan of 100k vectors took 200 ms and grew the querying
/// process by 394 MiB (vector_bench), so the index comes early.
pub const VECTOR_INDEX_MIN_ROWS: usize = 10_000;

/// IVF-SQ for `rows` vectors: about sqrt(rows) partitions, 8-bit scalar quantisation,
/// cosine. Chosen by vector_bench at 100k: recall@10 1.0 at 4.7 ms p50 (IVF-PQ: 0.72 at
/// 8.9 ms; IVF-HNSW-SQ: 1.0 at 8.9 ms with a larger index and cache).
fn ivf_sq(rows: usize) -> lance::index::vector::VectorIndexParams {
    let partitions = ((rows as f64).sqrt() as usize).clamp(1, 4096);
    lance::index::vector::VectorIndexParams::with_ivf_sq_params(
        MetricType::Cosine,
        lance_index::vector::ivf::IvfBuildParams::new(partitions),
        lance_index::vector::sq::builder::SQBuildParams {
            num_bits: 8,
            sample_rate: 256,
        },
    )
}

/// What [`ensure_index`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IndexAction {
    #[default]
    None,
    Created,
    Updated,
}

/// Create the vector index once there are `min_rows` vectors ([`VECTOR_INDEX_MIN_ROWS`] in
/// use), or fold appended vectors into it; `rebuild` trains it afresh. Vectors not yet
/// indexed are still searched, by a scan of their fragments.
pub async fn ensure_index(store: &Store, min_rows: usize, rebuild: bool) -> Result<IndexAction> {
    use lance::index::DatasetIndexExt;
    let Some(mut ds) = store.dataset(EMBEDDINGS).await? else {
        return Ok(IndexAction::None);
    };
    let has = ds
        .load_indices()
        .await?
        .iter()
        .any(|i| i.name == VECTOR_INDEX);
    if has && !rebuild {
        let stats: serde_json::Value =
            serde_json::from_str(&ds.index_statistics(VECTOR_INDEX).await?)?;
        let unindexed = stats["num_unindexed_rows"].as_u64().unwrap_or(0);
        if unindexed == 0 {
            return Ok(IndexAction::None);
        }
        ds.optimize_indices(&lance_index::optimize::OptimizeOptions::append())
            .await?;
        return Ok(IndexAction::Updated);
    }
    let rows = ds.count_rows(None).await?;
    if rows < min_rows.max(1) {
        return Ok(IndexAction::None);
    }
    if ds.schema().field("vector").is_none() {
        return Err(StoreError::NotFound("embeddings.vector missing".into()));
    }
    // A rebuild replaces whatever index is there, under any name.
    for old in ds.load_indices().await?.iter() {
        if old.name != VECTOR_INDEX && old.name.starts_with("embeddings_vector") {
            ds.drop_index(&old.name.clone()).await?;
        }
    }
    ds.create_index(
        &["vector"],
        lance_index::IndexType::Vector,
        Some(VECTOR_INDEX.into()),
        &ivf_sq(rows),
        true,
    )
    .await?;
    Ok(IndexAction::Created)
}
