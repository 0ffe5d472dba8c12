//! Opening a store: its directory, its Lance session with capped caches, its datasets, and
//! the per-store lock that keeps two writers apart.

use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatchIterator;
use arrow_schema::SchemaRef;
use lance::dataset::builder::DatasetBuilder;
use lance::dataset::{WriteMode, WriteParams};
use lance::io::ObjectStoreRegistry;
use lance::session::Session;
use lance::Dataset;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

use crate::error::{Result, StoreError};
use crate::rowmap::{self, MapSlot, Mapped};
use crate::schema::{FILES, MESSAGES, MESSAGES_V2_COLUMNS, PARTS, RECORDS, SESSIONS};

/// Cache caps of the store's Lance session. Lance's own defaults are GiB-sized; pond's
/// long-lived front must hold a small, known amount.
#[derive(Debug, Clone, Copy)]
pub struct StoreConfig {
    pub index_cache_bytes: usize,
    pub metadata_cache_bytes: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            index_cache_bytes: 128 << 20,
            metadata_cache_bytes: 32 << 20,
        }
    }
}

pub struct Store {
    root: PathBuf,
    session: Arc<Session>,
    rowmap: MapSlot,
}

/// Rows per dataset, for summaries and status.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StoreCounts {
    pub sessions: usize,
    pub messages: usize,
    pub searchable_messages: usize,
    /// Message rows that copy a message another session owns.
    pub replayed_messages: usize,
    pub parts: usize,
    pub records: usize,
    pub files: usize,
    /// Sessions per `source_agent` that has any, in the registry's order
    /// (`pond_rows::clients::agent_names`).
    pub sessions_by_source: Vec<(String, usize)>,
}

/// Held while a sync or rebuild writes; released on drop (and by the OS if the process dies).
pub struct StoreLock {
    _file: File,
}

/// Files this process creates from now on are its owner's only (umask 077): a store holds
/// every line of every session, secrets included. Called by [`Store::open`]; the binary
/// calls it first thing, so logs and downloads are covered too.
pub fn owner_only() {
    // SAFETY: umask only sets the process's file mode mask.
    unsafe {
        libc::umask(0o077);
    }
}

/// The file a sync writes before its first write and removes after its last: every
/// dataset's version before the sync (see `crate::writer`).
pub(crate) const JOURNAL: &str = "sync.journal";

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Journal {
    /// Dataset name -> its version before the sync (`None`: it did not exist).
    pub versions: HashMap<String, Option<u64>>,
}

fn outdated(messages: &Dataset) -> bool {
    MESSAGES_V2_COLUMNS
        .iter()
        .any(|c| messages.schema().field(c).is_none())
}

impl Store {
    /// Open (creating the directory if needed) the store at `root`: a local directory,
    /// kept by its canonical path, readable by its owner only.
    pub fn open(root: &Path, config: StoreConfig) -> Result<Store> {
        let shown = root.to_string_lossy();
        if shown.contains("://") {
            return Err(StoreError::InvalidQuery(format!(
                "pond stores are local directories, and {shown} looks like a URL; give a directory path"
            )));
        }
        owner_only();
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(root)?;
        let root = &std::fs::canonicalize(root)?;
        // A store made before (or by a looser umask) is closed to others now: its
        // directory is the door to every file in it.
        let mode = std::fs::metadata(root)?.permissions().mode();
        if mode & 0o077 != 0 {
            std::fs::set_permissions(root, std::fs::Permissions::from_mode(mode & 0o700))?;
        }
        let session = Arc::new(Session::new(
            config.index_cache_bytes,
            config.metadata_cache_bytes,
            Arc::new(ObjectStoreRegistry::default()),
        ));
        Ok(Store {
            root: root.to_path_buf(),
            session,
            rowmap: MapSlot::default(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn table_path(&self, name: &str) -> PathBuf {
        self.root.join(format!("{name}.lance"))
    }

    pub(crate) fn uri(&self, name: &str) -> String {
        self.table_path(name).to_string_lossy().into_owned()
    }

    pub(crate) fn exists(&self, name: &str) -> bool {
        self.table_path(name).join("_versions").is_dir()
    }

    /// A dataset as readers see it: its latest committed version, or `None` if nothing was
    /// ever committed to it. While a sync runs (or after one died), that is the version its
    /// journal recorded before it started: readers never serve rows a sync may still roll
    /// back.
    pub async fn dataset(&self, name: &str) -> Result<Option<Dataset>> {
        match self.journaled(name) {
            None => self.latest(name).await,
            Some(None) => Ok(None),
            Some(Some(version)) => {
                if !self.exists(name) {
                    return Ok(None);
                }
                let ds = DatasetBuilder::from_uri(self.uri(name))
                    .with_session(self.session.clone())
                    .with_version(version)
                    .load()
                    .await?;
                Ok(Some(ds))
            }
        }
    }

    /// The latest version of a dataset, committed or not: what the writer holding the store
    /// lock reads back of its own writes.
    pub(crate) async fn latest(&self, name: &str) -> Result<Option<Dataset>> {
        if !self.exists(name) {
            return Ok(None);
        }
        let ds = DatasetBuilder::from_uri(self.uri(name))
            .with_session(self.session.clone())
            .load()
            .await?;
        Ok(Some(ds))
    }

    /// The version of `name` an unfinished sync's journal recorded (`Some(None)`: it did not
    /// exist), `None` without a journal.
    fn journaled(&self, name: &str) -> Option<Option<u64>> {
        let bytes = std::fs::read(self.root.join(JOURNAL)).ok()?;
        let journal: Journal = serde_json::from_slice(&bytes).ok()?;
        journal.versions.get(name).copied()
    }

    /// The row map checked against `messages` at `ds`'s version: `None` when there is no
    /// map, it is damaged, or it does not match (readers then take every row from Lance).
    /// A map replaced by a rebuild is picked up here, on the next call.
    pub fn mapped(&self, messages: &Dataset) -> Option<Mapped> {
        let map = self.rowmap.current(&self.rowmap_path())?;
        let mapped = Mapped::check(map, messages);
        if mapped.is_none() {
            tracing::warn!("row map not used: it does not match the messages dataset");
        }
        mapped
    }

    /// The row map's file.
    pub fn rowmap_path(&self) -> PathBuf {
        rowmap::path_in(&self.root)
    }

    /// Build the row map from `messages` (`rowmap::build`), replacing the old one. Under the
    /// store lock, so no sync writes meanwhile and two builds never overlap.
    pub async fn build_rowmap(&self, _lock: &StoreLock) -> Result<rowmap::RowMapStats> {
        let ds = self.messages().await?;
        rowmap::build(&ds, &self.rowmap_path()).await
    }

    /// After a sync: rebuild the row map when it is missing, damaged or does not match
    /// `messages` while there are rows, or lags (`rowmap::lags`). Returns what was built, if
    /// anything. Reads the map's header, and its body only the first time a sync sees this
    /// file (`rowmap::Checked`): a sync that changed nothing does not page the map in.
    pub async fn refresh_rowmap(&self, lock: &StoreLock) -> Result<Option<rowmap::RowMapStats>> {
        let Some(ds) = self.dataset(crate::schema::MESSAGES).await? else {
            return Ok(None);
        };
        let lags = match rowmap::Checked::open(&self.rowmap_path()) {
            Ok(map) => map.and_then(|m| m.lags(&ds)),
            Err(e) => {
                tracing::warn!("row map rebuilt: {e}");
                None
            }
        };
        let stale = match lags {
            Some(lags) => lags,
            None => ds.count_rows(None).await? > 0,
        };
        if !stale {
            return Ok(None);
        }
        self.build_rowmap(lock).await.map(Some)
    }

    /// Answer `read` from the row map, and if reading the map fails (it passed its checks
    /// at open, so this is damage the checks missed, or a bug), stop using the map and
    /// answer from Lance alone: the map never turns a question into an error.
    pub async fn with_map_fallback<T, F, Fut>(&self, read: F) -> Result<T>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        match read().await {
            Err(StoreError::Corrupt(e)) => {
                tracing::warn!("row map read failed, answering from Lance: {e}");
                self.rowmap.distrust();
                read().await
            }
            other => other,
        }
    }

    /// A dataset that must exist for a query to make sense.
    pub async fn require(&self, name: &str) -> Result<Dataset> {
        self.dataset(name).await?.ok_or_else(|| {
            StoreError::NotFound(format!(
                "the store at {} has no {name} yet; run `pond sync` first",
                self.root.display()
            ))
        })
    }

    /// The `messages` dataset, refused ([`StoreError::Outdated`]) when an older pond wrote
    /// it: readers and the row map need its per-session rows.
    pub async fn messages(&self) -> Result<Dataset> {
        let ds = self.require(MESSAGES).await?;
        if outdated(&ds) {
            return Err(StoreError::Outdated(self.root.display().to_string()));
        }
        Ok(ds)
    }

    /// Whether the store's `messages` predates per-session rows (`pond rebuild` upgrades it).
    pub async fn outdated(&self) -> Result<bool> {
        Ok(self
            .dataset(MESSAGES)
            .await?
            .is_some_and(|ds| outdated(&ds)))
    }

    /// Append one batch (creating the dataset on first write).
    pub(crate) async fn append(&self, name: &str, batch: arrow_array::RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let mode = if self.exists(name) {
            WriteMode::Append
        } else {
            WriteMode::Create
        };
        let schema = batch.schema();
        self.write(name, mode, vec![batch], schema).await
    }

    async fn write(
        &self,
        name: &str,
        mode: WriteMode,
        batches: Vec<arrow_array::RecordBatch>,
        schema: SchemaRef,
    ) -> Result<()> {
        let params = WriteParams {
            mode,
            enable_stable_row_ids: true,
            session: Some(self.session.clone()),
            ..WriteParams::default()
        };
        let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
        Dataset::write(reader, self.uri(name).as_str(), Some(params)).await?;
        Ok(())
    }

    /// Replace a dataset's rows with none (a new version; older ones stay readable until
    /// cleaned up). The schema becomes `schema`.
    pub(crate) async fn overwrite_empty(&self, name: &str, schema: SchemaRef) -> Result<()> {
        self.write(name, WriteMode::Overwrite, Vec::new(), schema)
            .await
    }

    /// Replace a dataset's rows with `batch` (a new version).
    pub(crate) async fn overwrite(
        &self,
        name: &str,
        batch: arrow_array::RecordBatch,
    ) -> Result<()> {
        let schema = batch.schema();
        self.write(name, WriteMode::Overwrite, vec![batch], schema)
            .await
    }

    /// Keep the last report of a job kind (`sync`) beside the datasets, for status.
    pub fn save_report<T: Serialize>(&self, kind: &str, report: &T) -> Result<()> {
        let path = self.root.join(format!("last-{kind}.json"));
        let tmp = path.with_extension("tmp");
        let stamped = serde_json::json!({
            "finished_at": chrono::Utc::now().to_rfc3339(),
            "report": report,
        });
        std::fs::write(&tmp, serde_json::to_vec_pretty(&stamped)?)?;
        std::fs::rename(&tmp, &path)?;
        Ok(())
    }

    /// The last report [`Store::save_report`] kept: `{finished_at, report}`.
    pub fn report(&self, kind: &str) -> Option<serde_json::Value> {
        let bytes = std::fs::read(self.root.join(format!("last-{kind}.json"))).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Take the store's writer lock without waiting.
    pub fn lock(&self) -> Result<StoreLock> {
        self.lock_file("pond.lock", "another sync or rebuild holds the store lock")
    }

    /// Take the embedding lock without waiting: one backfill at a time (a backfill only
    /// appends to `embeddings`, which no sync or rebuild writes, so it does not need the
    /// writer lock).
    pub fn embed_lock(&self) -> Result<StoreLock> {
        self.lock_file("embed.lock", "another embedding backfill holds the lock")
    }

    /// The store's model asset (`pond model import` writes it).
    pub fn model_dir(&self) -> PathBuf {
        self.root.join("model")
    }

    /// Whether a model is imported: then syncs embed what they add.
    pub fn has_model(&self) -> bool {
        self.model_dir().join("manifest.json").exists()
    }

    fn lock_file(&self, name: &str, holder: &str) -> Result<StoreLock> {
        let path = self.root.join(name);
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        match file.try_lock() {
            Ok(()) => Ok(StoreLock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::Locked(format!(
                "{holder} {}; wait for it to finish",
                path.display()
            ))),
            Err(std::fs::TryLockError::Error(e)) => Err(e.into()),
        }
    }

    pub async fn counts(&self) -> Result<StoreCounts> {
        let count = |name: &'static str, filter: Option<&'static str>| async move {
            Ok::<usize, StoreError>(match self.dataset(name).await? {
                Some(ds) => ds.count_rows(filter.map(str::to_owned)).await?,
                None => 0,
            })
        };
        let mut sessions_by_source = Vec::new();
        if let Some(ds) = self.dataset(SESSIONS).await? {
            for agent in pond_rows::clients::agent_names() {
                let filter = format!("source_agent = {}", crate::schema::sql_str(agent));
                let n = ds.count_rows(Some(filter)).await?;
                if n > 0 {
                    sessions_by_source.push((agent.to_owned(), n));
                }
            }
        }
        Ok(StoreCounts {
            sessions_by_source,
            sessions: count(SESSIONS, None).await?,
            messages: count(MESSAGES, None).await?,
            searchable_messages: count(MESSAGES, Some("searchable")).await?,
            replayed_messages: if self.outdated().await? {
                0
            } else {
                count(MESSAGES, Some("replayed")).await?
            },
            parts: count(PARTS, None).await?,
            records: count(RECORDS, None).await?,
            files: count(FILES, None).await?,
        })
    }
}

/// Write a small file so that readers see either the old or the new content.
pub(crate) fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
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
