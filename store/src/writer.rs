//! The write side of a sync: one transaction over all datasets.
//!
//! Lance commits each dataset on its own, so a sync that dies between two commits would leave
//! the datasets out of step. A [`SyncWriter`] therefore writes a journal (the version of every
//! dataset before the sync) before its first write and removes it after its last. A journal
//! found at the start of the next sync means the last one died: every dataset is restored to
//! its journaled version (a new Lance version equal to the old one, nothing committed before
//! the dead sync is touched), and the re-run reads the same lines again from the old cursors.
//!
//! Deduplication: message ids are unique store-wide (Claude replays a `uuid`; the first one
//! stored wins, and so do its parts); a re-read of a rewritten file stores only the lines
//! whose `(line, content)` is new.

use std::collections::{HashMap, HashSet};

use arrow_array::{Array, RecordBatchIterator, UInt64Array};
use futures::TryStreamExt;
use lance::dataset::{MergeInsertBuilder, WhenMatched, WhenNotMatched};
use lance::Dataset;
use pond_ingest::{FileBatch, FileCursor, SessionRow};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use xxhash_rust::xxh3::{xxh3_128, xxh3_64};

use crate::error::{Result, StoreError};
use crate::read::{session_rows, string_col};
use crate::rowmap::Mapped;
use crate::schema::{self, sql_str, ALL_TABLES, FILES, MESSAGES, PARTS, RECORDS, SESSIONS};
use crate::store::{Store, StoreLock};

const JOURNAL: &str = "sync.journal";

#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    /// Dataset name -> its version before the sync (`None`: it did not exist).
    versions: HashMap<String, Option<u64>>,
}

/// What one [`SyncWriter::write`] stored.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct WriteStats {
    pub messages: usize,
    pub parts: usize,
    pub records: usize,
    pub duplicate_messages: usize,
    pub duplicate_records: usize,
}

impl WriteStats {
    pub fn add(&mut self, o: WriteStats) {
        self.messages += o.messages;
        self.parts += o.parts;
        self.records += o.records;
        self.duplicate_messages += o.duplicate_messages;
        self.duplicate_records += o.duplicate_records;
    }
}

pub struct SyncWriter<'a> {
    store: &'a Store,
    lock: StoreLock,
    journaled: bool,
    /// The stored message ids, loaded on the first write.
    message_ids: Option<KnownIds>,
    sessions: HashMap<String, SessionRow>,
    /// Whether this transaction restored datasets left by a dead sync.
    pub recovered: bool,
}

impl<'a> SyncWriter<'a> {
    /// Lock the store and undo whatever a dead sync left half-written.
    pub async fn begin(store: &'a Store) -> Result<SyncWriter<'a>> {
        let lock = store.lock()?;
        let recovered = recover(store).await?;
        Ok(SyncWriter {
            store,
            lock,
            journaled: false,
            message_ids: None,
            sessions: HashMap::new(),
            recovered,
        })
    }

    /// The cursor of every file synced before.
    pub async fn cursors(&self) -> Result<HashMap<String, FileCursor>> {
        let mut out = HashMap::new();
        let Some(ds) = self.store.dataset(FILES).await? else {
            return Ok(out);
        };
        let mut stream = ds
            .scan()
            .project(&["path", "cursor"])?
            .try_into_stream()
            .await?;
        while let Some(b) = stream.try_next().await? {
            let paths = string_col(&b, "path")?;
            let cursors = string_col(&b, "cursor")?;
            for i in 0..b.num_rows() {
                out.insert(
                    paths.value(i).to_owned(),
                    serde_json::from_str(cursors.value(i))?,
                );
            }
        }
        Ok(out)
    }

    async fn journal(&mut self) -> Result<()> {
        if self.journaled {
            return Ok(());
        }
        let mut versions = HashMap::new();
        for name in ALL_TABLES {
            let v = self.store.dataset(name).await?.map(|d| d.version().version);
            versions.insert(name.to_owned(), v);
        }
        write_atomic(
            &self.store.root().join(JOURNAL),
            &serde_json::to_vec(&Journal { versions })?,
        )?;
        self.journaled = true;
        Ok(())
    }

    async fn load_message_ids(&mut self) -> Result<&mut KnownIds> {
        if self.message_ids.is_none() {
            self.message_ids = Some(KnownIds::load(self.store).await?);
        }
        Ok(self.message_ids.as_mut().expect("loaded above"))
    }

    /// `(line, content hash)` of the records already stored for a file.
    async fn stored_lines(&self, path: &str) -> Result<HashSet<(u64, u64)>> {
        let mut out = HashSet::new();
        let Some(ds) = self.store.dataset(RECORDS).await? else {
            return Ok(out);
        };
        let mut scan = ds.scan();
        scan.project(&["line", "raw"])?
            .filter(&format!("source_path = {}", sql_str(path)))?;
        let mut stream = scan.try_into_stream().await?;
        while let Some(b) = stream.try_next().await? {
            let lines = b
                .column_by_name("line")
                .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
                .ok_or_else(|| StoreError::NotFound("records.line missing".into()))?;
            let raws = string_col(&b, "raw")?;
            for i in 0..b.num_rows() {
                out.insert((lines.value(i), xxh3_64(raws.value(i).as_bytes())));
            }
        }
        Ok(out)
    }

    /// Store one batch of parsed rows. `rewritten` names files read again from the start.
    pub async fn write(&mut self, batch: FileBatch, rewritten: &[String]) -> Result<WriteStats> {
        self.journal().await?;
        let mut stats = WriteStats::default();
        for s in &batch.sessions {
            self.sessions
                .entry(s.id.clone())
                .and_modify(|old| old.merge(s))
                .or_insert_with(|| s.clone());
        }

        let ids = self.load_message_ids().await?;
        let mut messages = Vec::with_capacity(batch.messages.len());
        let mut parts = Vec::with_capacity(batch.parts.len());
        // Parts follow their messages in order, each message's numbered from 0 (the
        // `FileBatch` contract): walk both in step, so a replayed message's parts go with it
        // even when two files hold the same id at the same line.
        let mut pending_parts = batch.parts.iter().peekable();
        for m in &batch.messages {
            let fresh = ids.insert(&m.id)?;
            if fresh {
                messages.push(m);
            } else {
                stats.duplicate_messages += 1;
            }
            let mut next_ordinal = 0;
            while let Some(p) = pending_parts.next_if(|p| {
                p.ordinal == next_ordinal && p.message_id == m.id && p.source_line == m.source_line
            }) {
                next_ordinal += 1;
                if fresh {
                    parts.push(p);
                }
            }
        }

        let mut seen = HashMap::new();
        for path in rewritten {
            seen.insert(path.as_str(), self.stored_lines(path).await?);
        }
        let records: Vec<_> = batch
            .records
            .iter()
            .filter(|r| {
                let dup = seen
                    .get(r.source_path.as_str())
                    .is_some_and(|s| s.contains(&(r.line, xxh3_64(r.raw.as_bytes()))));
                stats.duplicate_records += dup as usize;
                !dup
            })
            .collect();

        stats.messages = messages.len();
        stats.parts = parts.len();
        stats.records = records.len();
        // One dataset at a time: writing the three concurrently measured no faster (Lance's
        // encoders already use every core) and raised the peak by a fifth.
        self.store
            .append(MESSAGES, schema::messages_batch(&messages)?)
            .await?;
        self.store
            .append(PARTS, schema::parts_batch(&parts)?)
            .await?;
        self.store
            .append(RECORDS, schema::records_batch(&records)?)
            .await?;
        Ok(stats)
    }

    /// Write sessions and file cursors, then drop the journal: the sync is durable. The
    /// store lock is handed back, so index and row map updates follow under it.
    pub async fn commit(mut self, cursors: Vec<(String, FileCursor)>) -> Result<StoreLock> {
        if cursors.is_empty() && self.sessions.is_empty() {
            return Ok(self.lock);
        }
        self.journal().await?;
        let sessions = std::mem::take(&mut self.sessions);
        self.upsert_sessions(sessions).await?;
        let now = chrono::Utc::now().timestamp_millis();
        let rows: Vec<(String, String)> = cursors
            .iter()
            .map(|(p, c)| Ok((p.clone(), serde_json::to_string(c)?)))
            .collect::<Result<_>>()?;
        upsert(self.store, FILES, schema::files_batch(&rows, now)?, "path").await?;
        std::fs::remove_file(self.store.root().join(JOURNAL))?;
        Ok(self.lock)
    }

    async fn upsert_sessions(&self, mut touched: HashMap<String, SessionRow>) -> Result<()> {
        if touched.is_empty() {
            return Ok(());
        }
        if let Some(ds) = self.store.dataset(SESSIONS).await? {
            let ids: Vec<String> = touched.keys().map(|k| sql_str(k)).collect();
            for chunk in ids.chunks(500) {
                let filter = format!("id IN ({})", chunk.join(","));
                for mut old in session_rows(&ds, Some(&filter)).await? {
                    if let Some(new) = touched.get(&old.id) {
                        old.merge(new);
                        touched.insert(old.id.clone(), old);
                    }
                }
            }
        }
        let mut rows: Vec<SessionRow> = touched.into_values().collect();
        rows.sort_by(|a, b| a.id.cmp(&b.id));
        upsert(self.store, SESSIONS, schema::sessions_batch(&rows)?, "id").await
    }
}

/// The message ids already stored. The row map's id index answers for the rows it covers,
/// so only the ids of rows newer than it are loaded (every id, without a usable map): at
/// 2.1M messages that is the difference between a scan of every id into a 70 MB set and
/// none.
struct KnownIds {
    mapped: Option<Mapped>,
    /// xxh3-128 of the ids the map does not cover, and of the ids this sync stored.
    hashes: HashSet<u128>,
}

impl KnownIds {
    async fn load(store: &Store) -> Result<KnownIds> {
        let mut known = KnownIds {
            mapped: None,
            hashes: HashSet::new(),
        };
        let Some(ds) = store.dataset(MESSAGES).await? else {
            return Ok(known);
        };
        known.mapped = store.mapped(&ds);
        let delta = known.mapped.as_ref().map(|m| m.delta.clone());
        if delta.as_ref().is_some_and(Vec::is_empty) {
            return Ok(known);
        }
        let mut scan = ds.scan();
        scan.project(&["id"])?;
        if let Some(fragments) = delta {
            scan.with_fragments(fragments);
        }
        let mut stream = scan.try_into_stream().await?;
        while let Some(b) = stream.try_next().await? {
            let col = string_col(&b, "id")?;
            known
                .hashes
                .extend((0..col.len()).map(|i| xxh3_128(col.value(i).as_bytes())));
        }
        Ok(known)
    }

    /// Note `id` as stored; `false` if it already was.
    fn insert(&mut self, id: &str) -> Result<bool> {
        if let Some(m) = &self.mapped {
            if m.map.position_of_message(id)?.is_some() {
                return Ok(false);
            }
        }
        Ok(self.hashes.insert(xxh3_128(id.as_bytes())))
    }
}

/// Insert or replace rows by key.
async fn upsert(
    store: &Store,
    name: &str,
    batch: arrow_array::RecordBatch,
    key: &str,
) -> Result<()> {
    let Some(ds) = store.dataset(name).await? else {
        return store.append(name, batch).await;
    };
    let schema = batch.schema();
    let mut builder = MergeInsertBuilder::try_new(Arc::new(ds), vec![key.to_owned()])?;
    builder
        .when_matched(WhenMatched::UpdateAll)
        .when_not_matched(WhenNotMatched::InsertAll);
    let job = builder.try_build()?;
    job.execute_reader(RecordBatchIterator::new(vec![Ok(batch)], schema))
        .await?;
    Ok(())
}

/// Undo a sync that died: restore every dataset to its journaled version.
async fn recover(store: &Store) -> Result<bool> {
    let path = store.root().join(JOURNAL);
    let Ok(bytes) = std::fs::read(&path) else {
        return Ok(false);
    };
    // A torn journal (killed while writing it) was written before any dataset changed.
    let Ok(journal) = serde_json::from_slice::<Journal>(&bytes) else {
        std::fs::remove_file(&path)?;
        return Ok(false);
    };
    for (name, version) in &journal.versions {
        match (version, store.dataset(name).await?) {
            (Some(v), Some(ds)) if ds.version().version != *v => {
                tracing::warn!(table = %name, version = v, "restoring after an interrupted sync");
                let mut old: Dataset = ds.checkout_version(*v).await?;
                old.restore().await?;
            }
            (None, Some(_)) => {
                tracing::warn!(table = %name, "removing a dataset created by an interrupted sync");
                std::fs::remove_dir_all(store.table_path(name))?;
            }
            _ => {}
        }
    }
    std::fs::remove_file(&path)?;
    Ok(true)
}

/// Write a small file so that readers see either the old or the new content.
fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}
