//! The write side of a sync: one transaction over all datasets.
//!
//! Lance commits each dataset on its own, so a sync that dies between two commits would leave
//! the datasets out of step. A [`SyncWriter`] therefore writes a journal (the version of every
//! dataset before the sync) before its first write and removes it after its last. A journal
//! found at the start of the next sync means the last one died: every dataset is restored to
//! its journaled version (a new Lance version equal to the old one, nothing committed before
//! the dead sync is touched), and the re-run reads the same lines again from the old cursors.
//!
//! Deduplication: a session holds each message id once (a file that repeats a `uuid` keeps
//! its first line of it, with its parts); the same id in another session is stored there
//! too, and one occurrence owns it (`crate::owners`: the rule, and why it does not depend on
//! the order files are read in). A re-read of a rewritten file stores only the lines whose
//! `(line, content)` is new.

use std::collections::{HashMap, HashSet};

use arrow_array::{Array, RecordBatch, RecordBatchIterator, UInt64Array};
use futures::TryStreamExt;
use lance::dataset::{MergeInsertBuilder, UpdateBuilder, WhenMatched, WhenNotMatched};
use lance::Dataset;
use pond_rows::{FileBatch, FileCursor, SessionRow};
use serde::Serialize;
use std::sync::Arc;
use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Result, StoreError};
use crate::owners::{Claim, Occurrences, Verdict};
use crate::read::{primitive_col, session_rows, string_col};
use crate::schema::{
    self, sql_str, StoredMessage, ALL_TABLES, FILES, MESSAGES, PARTS, RECORDS, SESSIONS, USAGE,
};
use crate::store::{Journal, Store, StoreLock, JOURNAL};

/// What one [`SyncWriter::write`] stored.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct WriteStats {
    pub messages: usize,
    pub parts: usize,
    pub records: usize,
    pub duplicate_messages: usize,
    pub duplicate_records: usize,
    /// Model calls whose token counts were stored (a call another line stored is not).
    pub usage: usize,
    /// Message lines stored as replayed copies (another session's line owns the id),
    /// including owners this batch took over.
    pub replayed_messages: usize,
    /// Stored owners rewritten as copies because a line with a better claim arrived.
    pub demoted_messages: usize,
}

impl WriteStats {
    pub fn add(&mut self, o: WriteStats) {
        self.messages += o.messages;
        self.parts += o.parts;
        self.records += o.records;
        self.usage += o.usage;
        self.duplicate_messages += o.duplicate_messages;
        self.duplicate_records += o.duplicate_records;
        self.replayed_messages += o.replayed_messages;
        self.demoted_messages += o.demoted_messages;
    }
}

pub struct SyncWriter<'a> {
    store: &'a Store,
    lock: StoreLock,
    journaled: bool,
    /// The stored occurrences of message ids and their owners, loaded on the first write.
    occurrences: Option<Occurrences>,
    sessions: HashMap<String, SessionRow>,
    /// Row ids of owners this transaction rewrote as replayed copies (their vectors go).
    demoted_row_ids: Vec<u64>,
    /// The keys of the model calls stored (`crate::usage::Keys`), loaded on the first
    /// write that has any.
    usage_keys: Option<crate::usage::Keys>,
    /// `usage` was emptied with the other derived datasets and is written again from every
    /// stored line: once committed, it covers the store (`crate::usage::mark_filled`).
    usage_refilled: bool,
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
            occurrences: None,
            sessions: HashMap::new(),
            demoted_row_ids: Vec::new(),
            usage_keys: None,
            usage_refilled: false,
            recovered,
        })
    }

    /// The cursor of every file synced before.
    pub async fn cursors(&self) -> Result<HashMap<String, FileCursor>> {
        stored_cursors(self.store).await
    }

    /// The store lock this transaction holds.
    pub fn lock(&self) -> &StoreLock {
        &self.lock
    }

    async fn journal(&mut self) -> Result<()> {
        if self.journaled {
            return Ok(());
        }
        let mut versions = HashMap::new();
        for name in ALL_TABLES {
            let v = self.store.latest(name).await?.map(|d| d.version().version);
            versions.insert(name.to_owned(), v);
        }
        crate::store::write_atomic(
            &self.store.root().join(JOURNAL),
            &serde_json::to_vec(&Journal { versions })?,
        )?;
        self.journaled = true;
        Ok(())
    }

    async fn load_occurrences(&mut self) -> Result<&mut Occurrences> {
        if self.occurrences.is_none() {
            self.occurrences = Some(Occurrences::load(self.store).await?);
        }
        Ok(self.occurrences.as_mut().expect("loaded above"))
    }

    /// `(line, content hash)` of the records already stored for a file.
    async fn stored_lines(&self, path: &str) -> Result<HashSet<(u64, u64)>> {
        let mut out = HashSet::new();
        let Some(ds) = self.store.latest(RECORDS).await? else {
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

    /// Empty `sessions`, `messages`, `parts` and `usage` (in this transaction), so that the
    /// rows written next re-derive them: how a store is upgraded, or repaired, from its
    /// `records` without the source files. Vectors keep their message ids; their row ids
    /// are stale until `crate::vectors::rekey`.
    pub async fn reset_derived(&mut self) -> Result<()> {
        self.journal().await?;
        for (name, schema) in [
            (SESSIONS, &*schema::SESSIONS_SCHEMA),
            (MESSAGES, &*schema::MESSAGES_SCHEMA),
            (PARTS, &*schema::PARTS_SCHEMA),
            (USAGE, &*schema::USAGE_SCHEMA),
        ] {
            if self.store.exists(name) {
                self.store.overwrite_empty(name, schema.clone()).await?;
            }
        }
        self.usage_keys = Some(crate::usage::Keys::default());
        self.usage_refilled = true;
        self.occurrences = None;
        self.sessions.clear();
        Ok(())
    }

    /// Give the records stored under `from` (another spelling of a file's path) the path
    /// `to`, and forget `from`'s cursor (the caller stores it under `to`).
    pub async fn rename_source(&mut self, from: &str, to: &str) -> Result<()> {
        self.journal().await?;
        if let Some(ds) = self.store.latest(RECORDS).await? {
            UpdateBuilder::new(Arc::new(ds))
                .update_where(&format!("source_path = {}", sql_str(from)))?
                .set("source_path", &sql_str(to))?
                .build()?
                .execute()
                .await?;
        }
        if let Some(mut ds) = self.store.latest(FILES).await? {
            ds.delete(&format!("path = {}", sql_str(from))).await?;
        }
        Ok(())
    }

    /// Delete the records and the cursors of `paths` (a second spelling of a file whose
    /// lines are stored under its canonical path too; the files of forgotten sessions).
    /// The derived rows are the caller's to re-derive.
    pub async fn drop_sources(&mut self, paths: &[String]) -> Result<()> {
        if paths.is_empty() {
            return Ok(());
        }
        self.journal().await?;
        for chunk in paths.chunks(500) {
            let list: Vec<String> = chunk.iter().map(|p| sql_str(p)).collect();
            let list = list.join(",");
            if let Some(mut ds) = self.store.latest(RECORDS).await? {
                ds.delete(&format!("source_path IN ({list})")).await?;
            }
            if let Some(mut ds) = self.store.latest(FILES).await? {
                ds.delete(&format!("path IN ({list})")).await?;
            }
        }
        Ok(())
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

        let known = self.load_occurrences().await?;
        let mut messages: Vec<StoredMessage> = Vec::with_capacity(batch.messages.len());
        let mut parts = Vec::with_capacity(batch.parts.len());
        // Owners taken over by a better claim: in this batch (flipped before writing) or
        // already stored (rewritten as copies before this batch is appended).
        let mut owner_here: HashMap<&str, usize> = HashMap::new();
        let mut demote: Vec<&str> = Vec::new();
        // Parts follow their messages in order, each message's numbered from 0 (the
        // `FileBatch` contract): walk both in step, so a replayed message's parts go with it
        // even when two files hold the same id at the same line.
        let mut pending_parts = batch.parts.iter().peekable();
        for m in &batch.messages {
            let verdict = known.add(&m.id, Claim::new(m.origin, &m.session_id))?;
            let stored = verdict != Verdict::Duplicate;
            match verdict {
                Verdict::Duplicate => stats.duplicate_messages += 1,
                Verdict::Replayed => stats.replayed_messages += 1,
                Verdict::Owner | Verdict::Supersedes(_) => {
                    if let Verdict::Supersedes(_) = verdict {
                        match owner_here.get(m.id.as_str()) {
                            Some(&i) => messages[i].replayed = true,
                            None => demote.push(&m.id),
                        }
                        stats.replayed_messages += 1;
                    }
                    owner_here.insert(&m.id, messages.len());
                }
            }
            if stored {
                messages.push(StoredMessage {
                    row: m,
                    replayed: verdict == Verdict::Replayed,
                });
            }
            let mut next_ordinal = 0;
            while let Some(p) = pending_parts.next_if(|p| {
                p.ordinal == next_ordinal && p.message_id == m.id && p.source_line == m.source_line
            }) {
                next_ordinal += 1;
                if stored {
                    parts.push(p);
                }
            }
        }
        if !demote.is_empty() {
            let demoted = demote_owners(self.store, &demote).await?;
            stats.demoted_messages += demoted.len();
            self.demoted_row_ids.extend(demoted);
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

        let usage = match batch.usage.is_empty() {
            true => Vec::new(),
            false => {
                if self.usage_keys.is_none() {
                    self.usage_keys = Some(crate::usage::Keys::load(self.store).await?);
                }
                let keys = self.usage_keys.as_mut().expect("loaded above");
                keys.fresh(&batch.usage)
            }
        };

        stats.messages = messages.len();
        stats.parts = parts.len();
        stats.records = records.len();
        stats.usage = usage.len();
        // The three datasets at once: one dataset's write keeps about one core busy, and
        // with Lance's CPU pool sized for index builds (`indexes::size_build_threads`) the
        // three together cut a 200k-message sync's write phase by 18-23 % for up to 15 %
        // more peak (on Lance's one-thread pool it measured no faster). The journal covers
        // a failure of any of them, as it did one after another.
        let (m, p, r) = (
            schema::messages_batch(&messages)?,
            schema::parts_batch(&parts)?,
            schema::records_batch(&records)?,
        );
        tokio::try_join!(
            self.store.append(MESSAGES, m),
            self.store.append(PARTS, p),
            self.store.append(RECORDS, r),
        )?;
        if !usage.is_empty() {
            self.store
                .append(USAGE, schema::usage_batch(&usage)?)
                .await?;
        }
        Ok(stats)
    }

    /// Write sessions and file cursors, then drop the journal: the sync is durable. The
    /// store lock is handed back, so index and row map updates follow under it.
    pub async fn commit(mut self, cursors: Vec<(String, FileCursor)>) -> Result<StoreLock> {
        if cursors.is_empty() && self.sessions.is_empty() && !self.journaled {
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
        if !rows.is_empty() {
            upsert(self.store, FILES, schema::files_batch(&rows, now)?, "path").await?;
        }
        std::fs::remove_file(self.store.root().join(JOURNAL))?;
        if self.usage_refilled {
            crate::usage::mark_filled(self.store)?;
        }
        // A demoted owner's vector belonged to a row that is gone; search skips it either
        // way, this only reclaims it.
        crate::vectors::forget_rows(self.store, &self.demoted_row_ids).await?;
        Ok(self.lock)
    }

    async fn upsert_sessions(&self, mut touched: HashMap<String, SessionRow>) -> Result<()> {
        if touched.is_empty() {
            return Ok(());
        }
        if let Some(ds) = self.store.latest(SESSIONS).await? {
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

/// The cursor of every file a store holds lines of.
pub async fn stored_cursors(store: &Store) -> Result<HashMap<String, FileCursor>> {
    let mut out = HashMap::new();
    let Some(ds) = store.latest(FILES).await? else {
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

/// Rewrite the stored owners of `ids` as replayed copies: read them, delete them, append
/// them again without search text (a new row id each). Returns the old row ids.
async fn demote_owners(store: &Store, ids: &[&str]) -> Result<Vec<u64>> {
    let mut old_row_ids = Vec::new();
    for chunk in ids.chunks(500) {
        let list: Vec<String> = chunk.iter().map(|i| sql_str(i)).collect();
        let filter = format!("NOT replayed AND id IN ({})", list.join(","));
        let ds = store
            .latest(MESSAGES)
            .await?
            .ok_or_else(|| StoreError::NotFound("messages vanished during a sync".into()))?;
        let mut scan = ds.scan();
        scan.with_row_id().filter(&filter)?;
        let batches: Vec<RecordBatch> = scan.try_into_stream().await?.try_collect().await?;
        let mut rows = Vec::new();
        for b in &batches {
            old_row_ids.extend(
                primitive_col::<arrow_array::types::UInt64Type>(b, "_rowid")?
                    .values()
                    .iter(),
            );
            let columns: Vec<_> = schema::MESSAGES_SCHEMA
                .fields()
                .iter()
                .map(|f| b.column_by_name(f.name()).cloned())
                .collect::<Option<_>>()
                .ok_or_else(|| StoreError::NotFound("messages column missing".into()))?;
            let b = RecordBatch::try_new(schema::MESSAGES_SCHEMA.clone(), columns)?;
            rows.push(schema::as_replayed(&b)?);
        }
        if rows.is_empty() {
            continue;
        }
        let mut ds = ds;
        ds.delete(&filter).await?;
        for b in rows {
            store.append(MESSAGES, b).await?;
        }
    }
    Ok(old_row_ids)
}

/// Insert or replace rows by key.
async fn upsert(
    store: &Store,
    name: &str,
    batch: arrow_array::RecordBatch,
    key: &str,
) -> Result<()> {
    let Some(ds) = store.latest(name).await? else {
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
    // Only pond's own datasets: a name in the file is never a path to remove.
    for name in ALL_TABLES {
        let Some(version) = journal.versions.get(name) else {
            continue;
        };
        match (version, store.latest(name).await?) {
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
    // A backfill that ran during the dead sync may have embedded rows that are gone now.
    let pruned = crate::vectors::prune(store).await?;
    if pruned > 0 {
        tracing::warn!(
            pruned,
            "removed the vectors of rows the interrupted sync had added"
        );
    }
    Ok(true)
}
