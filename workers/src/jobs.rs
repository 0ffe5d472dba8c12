//! One entry point for every job: [`Jobs::execute`] maps a protocol [`Job`] to the function
//! that does it and its outcome back to a protocol [`Output`] or [`JobError`]. A worker process
//! and the front's `--in-process` mode both call it, so both run the same code.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pond_embed::{EmbedError, Embedder, TextKind};

use pond_protocol::footprint;
use pond_protocol::job::{
    BackfillReport, BackfillRequest, EmbedJob, EmbedProgress, SqlJob, SqlOutput, Vectors,
    EMBED_MAX_TEXTS, EMBED_TEXT_BYTES,
};
use pond_protocol::model::{DownloadProgress, Manifest, ModelSource};
use pond_protocol::{ErrorKind, Job, JobError, Output, Progress};
use pond_store::sql::{self, SqlLimits};
use pond_store::{vectors, Store};

use crate::rebuild::RebuildError;
use crate::reindex::{env_usize, vector_index_min_rows};
use crate::sync::SyncError;

fn sync_error(e: SyncError) -> JobError {
    match e {
        SyncError::Store(e) => e.into(),
        SyncError::UnknownAgent(_) => JobError::new(ErrorKind::Invalid, e.to_string()),
        SyncError::Reader(_) => JobError::new(ErrorKind::Internal, e.to_string()),
    }
}

/// What a worker (or the `--in-process` front) keeps between jobs: the store, and the
/// embedding model once a job needed it. The model goes when the process exits.
pub struct Jobs {
    store: Arc<Store>,
    embedder: Mutex<Option<Arc<Embedder>>>,
}

impl Jobs {
    pub fn new(store: Arc<Store>) -> Jobs {
        Jobs {
            store,
            embedder: Mutex::new(None),
        }
    }

    /// The store's model, loaded on first use.
    fn embedder(&self) -> Result<Arc<Embedder>, JobError> {
        let mut slot = self.embedder.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = slot.as_ref() {
            return Ok(e.clone());
        }
        let e = Arc::new(Embedder::load(&self.store.model_dir()).map_err(embed_error)?);
        *slot = Some(e.clone());
        Ok(e)
    }

    /// Run one job, reporting progress as it goes.
    pub async fn execute(
        &self,
        job: Job,
        progress: &mut (dyn FnMut(Progress) + Send),
    ) -> Result<Output, JobError> {
        match job {
            Job::Embed(req) => self.embed(req).map(Output::Vectors),
            Job::Backfill(req) => self.backfill(req, progress).await.map(Output::Backfill),
            other => execute(&self.store, other, progress).await,
        }
    }

    fn embed(&self, req: EmbedJob) -> Result<Vectors, JobError> {
        if req.texts.len() > EMBED_MAX_TEXTS {
            return Err(JobError::new(
                ErrorKind::Invalid,
                format!("at most {EMBED_MAX_TEXTS} texts per embed job"),
            ));
        }
        let e = self.embedder()?;
        let texts: Vec<&str> = req
            .texts
            .iter()
            .map(|t| &t[..t.floor_char_boundary(EMBED_TEXT_BYTES)])
            .collect();
        let kind = if req.query {
            TextKind::Query
        } else {
            TextKind::Passage
        };
        let vectors = e.embed(&texts, kind).map_err(embed_error)?;
        Ok(Vectors {
            model: e.manifest().vector_key(),
            dims: e.manifest().dims as u32,
            vectors,
        })
    }

    async fn backfill(
        &self,
        req: BackfillRequest,
        progress: &mut (dyn FnMut(Progress) + Send),
    ) -> Result<BackfillReport, JobError> {
        let started = Instant::now();
        let _lock = self.store.embed_lock().map_err(JobError::from)?;
        let e = self.embedder()?;
        let (model, dims) = (e.manifest().vector_key(), e.manifest().dims);
        let mut embed = |texts: &[&str]| {
            e.embed(texts, TextKind::Passage)
                .map_err(|err| pond_store::StoreError::Failed(format!("embedding failed: {err}")))
        };
        let mut each = |done, total| progress(Progress::Embed(EmbedProgress { done, total }));
        let stats = vectors::backfill(
            &self.store,
            &model,
            dims,
            req.limit,
            env_usize("POND_EMBED_CHUNK_ROWS", vectors::CHUNK_ROWS),
            &mut embed,
            &mut each,
        )
        .await
        .map_err(JobError::from)?;
        progress(Progress::Step("vector index".into()));
        let index = vectors::ensure_index(&self.store, vector_index_min_rows(), false)
            .await
            .map_err(JobError::from)?;
        Ok(BackfillReport {
            model,
            embedded: stats.embedded,
            already: stats.already,
            remaining: stats.remaining,
            vector_index: format!("{index:?}").to_lowercase(),
            elapsed_ms: started.elapsed().as_millis() as u64,
            peak_kib: peak_kib(),
        })
    }
}

fn embed_error(e: EmbedError) -> JobError {
    let kind = match e {
        // The store's model asset is missing or unusable: the user must import one.
        EmbedError::Invalid(_) => ErrorKind::Unavailable,
        _ => ErrorKind::Internal,
    };
    JobError::new(kind, e.to_string())
}

/// Run one job that needs no state kept between jobs.
async fn execute(
    store: &Store,
    job: Job,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<Output, JobError> {
    match job {
        Job::Embed(_) | Job::Backfill(_) => Err(JobError::new(
            ErrorKind::Internal,
            "embedding jobs run through Jobs::execute",
        )),
        Job::Ping => Ok(Output::Pong),
        Job::ImportModel(source) => import_model(store, source, progress)
            .await
            .map(|_| Output::ModelImported),
        Job::Forget(req) => {
            let mut report = crate::forget::run(store, &req, crate::sync::FLUSH_BYTES)
                .await
                .map_err(JobError::from)?;
            report.peak_kib = peak_kib();
            Ok(Output::Forget(report))
        }
        Job::Sql(q) => run_sql(store, &q).await.map(Output::Sql),
        Job::Usage(req) => pond_store::usage::summarize(store, &req)
            .await
            .map(|r| Output::Usage(Box::new(r)))
            .map_err(JobError::from),
        Job::Grep(g) => pond_store::search::exact::grep(store, &g)
            .await
            .map(Output::Grep)
            .map_err(JobError::from),
        Job::Restore(req) => {
            let mut report = crate::restore::run(store, &req)
                .await
                .map_err(JobError::from)?;
            report.peak_kib = peak_kib();
            Ok(Output::Restore(report))
        }
        Job::Sync(req) => {
            let mut each = |p| progress(Progress::Sync(p));
            let mut report = crate::sync::run(store, &req, &mut each)
                .await
                .map_err(sync_error)?;
            report.peak_kib = peak_kib();
            Ok(Output::Sync(Box::new(report)))
        }
        Job::Rebuild(req) => {
            let mut step = |name: &str| progress(Progress::Step(name.to_owned()));
            let mut report =
                crate::rebuild::run(store, &req, &mut step)
                    .await
                    .map_err(|e| match e {
                        RebuildError::Repair(e) => sync_error(e),
                        RebuildError::Store(e) => e.into(),
                    })?;
            report.peak_kib = peak_kib();
            Ok(Output::Rebuild(report))
        }
    }
}

/// `pond model import` and `pond model fetch`: the asset written into the store's model
/// folder, a download's progress sent once per MiB of a file (what the CLI shows).
async fn import_model(
    store: &Store,
    source: ModelSource,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<Manifest, JobError> {
    let mut last: Option<(String, u64)> = None;
    let mut each = |file: &str, bytes: u64, total: Option<u64>| {
        let shown = (file.to_owned(), bytes >> 20);
        if last.as_ref() != Some(&shown) {
            last = Some(shown);
            progress(Progress::Download(DownloadProgress {
                file: file.to_owned(),
                bytes,
                total,
            }));
        }
    };
    let download = store.root().join("model.download");
    pond_embed::import_from(source, &store.model_dir(), &download, &mut each)
        .await
        .map_err(|e| {
            let kind = match e {
                // A folder that is not a model, a download refused: the caller named the
                // wrong thing.
                EmbedError::Invalid(_) => ErrorKind::Invalid,
                _ => ErrorKind::Internal,
            };
            JobError::new(kind, e.to_string())
        })
}

async fn run_sql(store: &Store, q: &SqlJob) -> Result<SqlOutput, JobError> {
    let limits = SqlLimits {
        max_rows: (q.max_rows as usize).max(1),
        max_bytes: (q.max_bytes as usize).max(1024),
        timeout: Duration::from_millis(q.timeout_ms.max(1)),
        ..SqlLimits::default()
    };
    let masked = !q.reveal_secrets;
    // An error may quote a value of the query (`Cannot cast string '…'`): masked like the
    // rows, for the CLI's standard error and MCP alike.
    let error = |e: pond_store::StoreError| {
        let mut e = JobError::from(e);
        if masked {
            e.message = pond_mask::mask(&e.message).into_owned();
        }
        e
    };
    let result = sql::run_sql(store, &q.query, limits, masked)
        .await
        .map_err(error)?;
    let text = sql::render(&result, q.format, masked).map_err(error)?;
    Ok(SqlOutput {
        text,
        footer: result.footer(),
        rows: result.rows as u64,
    })
}

/// This process's peak resident memory (VmHWM), KiB.
fn peak_kib() -> u64 {
    footprint::of_self().map_or(0, |f| f.hwm_kib)
}
