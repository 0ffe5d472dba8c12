//! One entry point for every job: [`execute`] maps a protocol [`Job`] to the function that
//! does it and its outcome back to a protocol [`Output`] or [`JobError`]. A worker process
//! and the front's `--in-process` mode both call it, so both run the same code.

use std::time::{Duration, Instant};

use pond_protocol::footprint;
use pond_protocol::job::{RebuildReport, SqlFormat, SqlJob, SqlOutput};
use pond_protocol::{ErrorKind, Job, JobError, Output, Progress};
use pond_store::sql::{self, SqlLimits};
use pond_store::{indexes, rowmap, schema, Store, StoreError};

use crate::sync::SyncError;

/// The error a caller sees for a store failure, classified so it can act on it.
pub fn store_error(e: StoreError) -> JobError {
    let kind = match &e {
        StoreError::NotFound(_) => ErrorKind::NotFound,
        StoreError::InvalidQuery(_) => ErrorKind::Invalid,
        StoreError::Timeout(_) => ErrorKind::Timeout,
        StoreError::Locked(_) => ErrorKind::Locked,
        _ => ErrorKind::Internal,
    };
    JobError::new(kind, e.to_string())
}

fn sync_error(e: SyncError) -> JobError {
    match e {
        SyncError::Store(e) => store_error(e),
        SyncError::UnknownAgent(_) => JobError::new(ErrorKind::Invalid, e.to_string()),
        SyncError::Reader(_) => JobError::new(ErrorKind::Internal, e.to_string()),
    }
}

/// Run one job on `store`, reporting progress as it goes.
pub async fn execute(
    store: &Store,
    job: Job,
    progress: &mut (dyn FnMut(Progress) + Send),
) -> Result<Output, JobError> {
    match job {
        Job::Ping => Ok(Output::Pong),
        Job::Sql(q) => run_sql(store, &q).await.map(Output::Sql),
        Job::Sync(req) => {
            let mut each = |p| progress(Progress::Sync(p));
            let mut report = crate::sync::run(store, &req, &mut each)
                .await
                .map_err(sync_error)?;
            report.peak_kib = peak_kib();
            Ok(Output::Sync(report))
        }
        Job::Rebuild(req) => {
            let started = Instant::now();
            let lock = store.lock().map_err(store_error)?;
            let mut step = |name: &str| progress(Progress::Step(name.to_owned()));
            let mut steps = indexes::rebuild(store, &lock, req.fts, req.scalar, &mut step)
                .await
                .map_err(store_error)?;
            let mut rowmap_bytes = 0;
            if req.rowmap {
                step("row map (messages.rmm)");
                let t = Instant::now();
                let stats = rowmap::build(store, &lock).await.map_err(store_error)?;
                rowmap_bytes = stats.file_bytes;
                steps.push((
                    format!("row map: {} rows, {} sessions", stats.rows, stats.sessions),
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
            Ok(Output::Rebuild(RebuildReport {
                steps,
                rows,
                unindexed_rows,
                rowmap_bytes,
                elapsed_ms: started.elapsed().as_millis() as u64,
                peak_kib: peak_kib(),
            }))
        }
    }
}

async fn run_sql(store: &Store, q: &SqlJob) -> Result<SqlOutput, JobError> {
    let limits = SqlLimits {
        max_rows: (q.max_rows as usize).max(1),
        max_bytes: (q.max_bytes as usize).max(1024),
        timeout: Duration::from_millis(q.timeout_ms.max(1)),
        ..SqlLimits::default()
    };
    let result = sql::run_sql(store, &q.query, limits)
        .await
        .map_err(store_error)?;
    let format = match q.format {
        SqlFormat::Table => sql::SqlFormat::Table,
        SqlFormat::Json => sql::SqlFormat::Json,
        SqlFormat::Csv => sql::SqlFormat::Csv,
    };
    let text = sql::render(&result, format).map_err(store_error)?;
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
