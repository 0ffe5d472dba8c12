//! Where jobs run: in worker processes (the default), or inside this process
//! (`--in-process`, the single-process baseline and a debugging aid). Both take the same
//! protocol [`Job`] and give the same outcome, so the front's code path is one.

use std::sync::Arc;

use futures::future::BoxFuture;
use pond_protocol::{Call, ErrorKind, Job, JobError, Output, Progress};
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::pool::{JobOptions, WorkerStatus, Workers};

/// Runs a job inside this process. The binary provides it (this crate does not depend on
/// the workers crate): the same function a worker process calls.
pub type LocalJobs = Arc<
    dyn Fn(
            Job,
            Option<mpsc::UnboundedSender<Progress>>,
        ) -> BoxFuture<'static, Result<Output, JobError>>
        + Send
        + Sync,
>;

#[derive(Clone)]
pub enum Runner {
    Workers(Workers),
    InProcess(LocalJobs),
}

impl Runner {
    pub async fn run(&self, job: Job, opts: JobOptions) -> Result<Output, JobError> {
        let span = tracing::debug_span!("job", kind = %job.kind());
        self.run_job(job, opts).instrument(span).await
    }

    async fn run_job(&self, job: Job, opts: JobOptions) -> Result<Output, JobError> {
        match self {
            Runner::Workers(w) => w.run(job, opts).await,
            Runner::InProcess(local) => {
                let job = local(job, opts.progress);
                match opts.deadline {
                    // Nothing to kill here: a job that ignores the deadline keeps its thread.
                    Some(d) => tokio::time::timeout(d, job).await.unwrap_or_else(|_| {
                        Err(JobError::new(
                            ErrorKind::Timeout,
                            format!("the job ran past its deadline of {} s", d.as_secs_f64()),
                        ))
                    }),
                    None => job.await,
                }
            }
        }
    }

    /// Run a request's job and return its reply (the one place a mismatched reply, a pond
    /// bug, is turned into an error).
    pub async fn call<R: Call>(&self, req: R, opts: JobOptions) -> Result<R::Reply, JobError> {
        let out = self.run(req.into_job(), opts).await?;
        R::reply(out).map_err(|other| {
            JobError::new(
                ErrorKind::Internal,
                format!("a worker answered {other:?}, not what its job asks for (a pond bug)"),
            )
        })
    }

    pub fn workers(&self) -> Vec<WorkerStatus> {
        match self {
            Runner::Workers(w) => w.status(),
            Runner::InProcess(_) => Vec::new(),
        }
    }

    pub async fn shutdown(&self) {
        if let Runner::Workers(w) = self {
            w.shutdown().await;
        }
    }
}
