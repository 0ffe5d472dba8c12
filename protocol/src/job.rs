//! Jobs and the messages that carry them between the front and a worker.
//!
//! A worker connects to the front's one-shot server and sends [`FromWorker::Hello`] with the
//! sender of its job channel. The front then sends [`ToWorker::Run`] one job at a time; the
//! worker answers with any number of [`FromWorker::Progress`] and one [`FromWorker::Done`]
//! carrying the same id. [`ToWorker::Exit`], or the front's end of the channel closing, ends
//! the worker.

use ipc_channel::ipc::IpcSender;
use serde::{Deserialize, Serialize};

use crate::grep::{GrepJob, GrepResults};
use crate::model::{DownloadProgress, ModelSource};
use crate::sync::{SyncProgress, SyncReport, SyncRequest};
use crate::usage::{UsageReport, UsageRequest};

/// What a worker process is for. One actor in the front manages each kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum WorkerKind {
    /// Read-only SQL; long-lived until idle, killed on timeout or memory budget.
    Sql,
    /// Ingest (sync); one job, then exit.
    Sync,
    /// Index rebuilds; one job, then exit.
    Index,
    /// The embedding model: query vectors and backfills; long-lived until idle (exiting is
    /// how the model is unloaded).
    Embed,
}

impl WorkerKind {
    pub const ALL: [WorkerKind; 4] = [
        WorkerKind::Sql,
        WorkerKind::Sync,
        WorkerKind::Index,
        WorkerKind::Embed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            WorkerKind::Sql => "sql",
            WorkerKind::Sync => "sync",
            WorkerKind::Index => "index",
            WorkerKind::Embed => "embed",
        }
    }

    pub fn parse(s: &str) -> Option<WorkerKind> {
        WorkerKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Whether a worker of this kind runs one job and exits.
    pub fn one_shot(self) -> bool {
        !matches!(self, WorkerKind::Sql | WorkerKind::Embed)
    }
}

impl std::fmt::Display for WorkerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The handshake: the first message a worker sends.
#[derive(Debug, Serialize, Deserialize)]
pub struct Hello {
    pub version: u32,
    pub kind: WorkerKind,
    pub pid: u32,
    /// Where the front sends jobs.
    pub jobs: IpcSender<ToWorker>,
}

#[derive(Debug, Serialize, Deserialize)]
pub enum ToWorker {
    Run {
        id: u64,
        job: Job,
    },
    /// Finish and exit (the front also treats its channel closing as this).
    Exit,
}

#[derive(Debug, Serialize, Deserialize)]
pub enum FromWorker {
    Hello(Hello),
    Progress {
        id: u64,
        progress: Progress,
    },
    Done {
        id: u64,
        outcome: Result<Output, JobError>,
    },
    /// Sent by the front itself to release its own pending accept when a worker never
    /// connected (the one-shot server's accept has no timeout). Never sent by a worker.
    Abandoned,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Job {
    /// Answered at once: measures the round trip.
    Ping,
    Sql(SqlJob),
    Sync(SyncRequest),
    Rebuild(RebuildRequest),
    /// Embed a few texts (queries): the vectors come back.
    Embed(EmbedJob),
    /// Embed every searchable message that has no vector from the current model yet.
    Backfill(BackfillRequest),
    /// Remove sessions from every dataset for good (`pond forget`).
    Forget(ForgetRequest),
    /// Write a session's source files back from `records` (`pond restore`).
    Restore(RestoreRequest),
    /// Exact or regex search over every part (in the sql worker: its deadline and budget).
    Grep(Box<GrepJob>),
    /// Tokens and cost summed from the `usage` dataset (`pond usage`).
    Usage(Box<UsageRequest>),
    /// Import a model folder, or fetch one from the hub, as the store's model asset
    /// (`pond model import`, `pond model fetch`).
    ImportModel(ModelSource),
}

impl Job {
    /// The kind of worker that runs this job.
    pub fn kind(&self) -> WorkerKind {
        match self {
            Job::Ping | Job::Sql(_) | Job::Restore(_) | Job::Grep(_) | Job::Usage(_) => {
                WorkerKind::Sql
            }
            Job::Sync(_) => WorkerKind::Sync,
            Job::Rebuild(_) | Job::Forget(_) | Job::ImportModel(_) => WorkerKind::Index,
            Job::Embed(_) | Job::Backfill(_) => WorkerKind::Embed,
        }
    }
}

/// A job's parameters paired with the reply it gets (in the style of
/// `lsp_types::request::Request`; named `Call` so it is not read as the store's
/// `SearchRequest` or `PageRequest`): `Runner::call` takes the parameters and returns
/// `Self::Reply`, so no caller matches on [`Output`]. The wire carries [`Job`] and [`Output`]
/// as before.
pub trait Call: Sized {
    type Reply;
    fn into_job(self) -> Job;
    /// The reply out of the worker's [`Output`]; the output back when it is another kind.
    fn reply(out: Output) -> Result<Self::Reply, Output>;
}

macro_rules! call {
    ($request:ty, $job:ident => $output:ident($reply:ty)) => {
        impl Call for $request {
            type Reply = $reply;
            fn into_job(self) -> Job {
                Job::$job(self)
            }
            fn reply(out: Output) -> Result<$reply, Output> {
                match out {
                    Output::$output(r) => Ok(r),
                    other => Err(other),
                }
            }
        }
    };
}

call!(SqlJob, Sql => Sql(SqlOutput));
call!(SyncRequest, Sync => Sync(Box<SyncReport>));
call!(RebuildRequest, Rebuild => Rebuild(RebuildReport));
call!(EmbedJob, Embed => Vectors(Vectors));
call!(BackfillRequest, Backfill => Backfill(BackfillReport));
call!(ForgetRequest, Forget => Forget(ForgetReport));
call!(RestoreRequest, Restore => Restore(RestoreReport));

/// [`Job::Grep`] as a [`Call`] (boxed in the job: the largest request by far).
impl Call for GrepJob {
    type Reply = GrepResults;
    fn into_job(self) -> Job {
        Job::Grep(Box::new(self))
    }
    fn reply(out: Output) -> Result<GrepResults, Output> {
        match out {
            Output::Grep(r) => Ok(r),
            other => Err(other),
        }
    }
}
call!(Box<UsageRequest>, Usage => Usage(Box<UsageReport>));

/// [`Job::ImportModel`] as a [`Call`]: the reply is that the asset is written (its
/// manifest is then read from the store's model folder).
impl Call for ModelSource {
    type Reply = ();
    fn into_job(self) -> Job {
        Job::ImportModel(self)
    }
    fn reply(out: Output) -> Result<(), Output> {
        match out {
            Output::ModelImported => Ok(()),
            other => Err(other),
        }
    }
}

/// [`Job::Ping`] as a [`Call`].
#[derive(Debug, Clone, Copy)]
pub struct Ping;

impl Call for Ping {
    type Reply = ();
    fn into_job(self) -> Job {
        Job::Ping
    }
    fn reply(out: Output) -> Result<(), Output> {
        match out {
            Output::Pong => Ok(()),
            other => Err(other),
        }
    }
}

/// How a tabular answer is written: a text table, JSON or CSV. The one format enum of every
/// front end (the CLI's `--format`, MCP's `format`) and of the SQL job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    #[default]
    Table,
    Json,
    Csv,
}

impl crate::Choice for Format {
    const NAMES: &'static [(&'static str, Format)] = &[
        ("table", Format::Table),
        ("json", Format::Json),
        ("csv", Format::Csv),
    ];
    const SCHEMA_NAME: &'static str = "Format";
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SqlJob {
    pub query: String,
    pub format: Format,
    pub max_rows: u64,
    pub max_bytes: u64,
    pub timeout_ms: u64,
    /// Render string cells as stored (the CLI's `--reveal-secrets`); otherwise each is
    /// masked before the table is laid out.
    pub reveal_secrets: bool,
}

/// A bounded, rendered SQL result: the rows never cross IPC as data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SqlOutput {
    pub text: String,
    /// Rows, time, and why the result stops early if it does.
    pub footer: String,
    pub rows: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RebuildRequest {
    /// Rebuild the full-text index from scratch (one segment instead of many deltas).
    pub fts: bool,
    /// Rebuild the scalar (B-tree) indexes.
    pub scalar: bool,
    /// Rebuild the row map (`messages.rmm`).
    pub rowmap: bool,
    /// Train the vector index afresh (when there are enough vectors for one).
    pub vectors: bool,
    /// Read every stored line for token counts again (`usage` emptied and refilled).
    pub usage: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RebuildReport {
    /// What was rebuilt, in order, with the time each step took.
    pub steps: Vec<(String, u64)>,
    pub rows: u64,
    pub unindexed_rows: u64,
    /// The row map's size, if it was rebuilt.
    pub rowmap_bytes: u64,
    /// Second spellings of file paths merged, and whether sessions, messages and parts
    /// were re-derived from the stored lines first (an upgrade or a repair).
    pub paths_repaired: u64,
    pub rederived: bool,
    pub elapsed_ms: u64,
    /// The worker's peak resident memory (VmHWM), KiB.
    pub peak_kib: u64,
}

/// Which sessions `pond forget` removes: those matching every selector given (at least
/// one), with their subagent sessions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForgetRequest {
    /// One session by id.
    pub session: Option<String>,
    /// Sessions whose project (working directory) contains this.
    pub project: Option<String>,
    /// Sessions whose last message is older than this (Unix ms).
    pub before_ms: Option<i64>,
    /// Also forget the sessions that hold copies of messages the selected ones own (a
    /// resumed session's file begins with its predecessor's lines), their own messages
    /// with them, until no copy is left.
    pub with_copies: bool,
    /// Say what would go, change nothing.
    pub dry_run: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForgetReport {
    pub dry_run: bool,
    /// The sessions forgotten (or that would be), subagents included: id and project.
    pub sessions: Vec<(String, Option<String>)>,
    pub messages: u64,
    pub records: u64,
    pub files: u64,
    pub vectors: u64,
    /// Bytes of old versions and files removed after the rewrite.
    pub bytes_reclaimed: u64,
    /// Sessions not forgotten that hold copies of messages the forgotten ones owned, and
    /// how many each: those copies stay (searchable) unless `with_copies` forgets them.
    pub copies: Vec<(String, u64)>,
    pub elapsed_ms: u64,
    pub peak_kib: u64,
}

/// At most this many texts per embed job, each cut to [`EMBED_TEXT_BYTES`]: an IPC message
/// stays small.
pub const EMBED_MAX_TEXTS: usize = 64;
pub const EMBED_TEXT_BYTES: usize = 16 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbedJob {
    pub texts: Vec<String>,
    /// Queries get the model's query prefix; otherwise the passage prefix.
    pub query: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vectors {
    pub model: String,
    pub dims: u32,
    /// One unit vector per text.
    pub vectors: Vec<Vec<f32>>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackfillRequest {
    /// Stop after this many messages (0: all of them).
    pub limit: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbedProgress {
    pub done: u64,
    pub total: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackfillReport {
    pub model: String,
    /// Messages embedded by this job.
    pub embedded: u64,
    /// Searchable messages that already had a vector from this model.
    pub already: u64,
    /// Searchable messages still without one (a limit or a stop left them).
    pub remaining: u64,
    /// What happened to the vector index: "none" (too few vectors, or current), "created",
    /// "updated".
    pub vector_index: String,
    pub elapsed_ms: u64,
    /// The worker's peak resident memory (VmHWM), KiB.
    pub peak_kib: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Output {
    Pong,
    Sql(SqlOutput),
    Sync(Box<SyncReport>),
    Rebuild(RebuildReport),
    Vectors(Vectors),
    Backfill(BackfillReport),
    Forget(ForgetReport),
    Restore(RestoreReport),
    Grep(GrepResults),
    Usage(Box<UsageReport>),
    /// The model asset is written (`manifest.json` says what it is).
    ModelImported,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Progress {
    Sync(SyncProgress),
    /// A named step of a longer job has started.
    Step(String),
    Embed(EmbedProgress),
    /// A model download (`pond model fetch`), at most once per MiB of a file.
    Download(DownloadProgress),
}

/// Why a job failed, in words a caller can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ErrorKind {
    /// The request itself is wrong (bad SQL, unknown source): fix it and retry.
    Invalid,
    /// What was asked for does not exist.
    NotFound,
    /// The job ran past its deadline and was stopped.
    Timeout,
    /// The worker grew past its memory budget and was killed.
    OverBudget,
    /// Another sync or rebuild holds the store.
    Locked,
    /// The worker died, or could not be started.
    Crashed,
    /// Anything else.
    Internal,
    /// Something the request needs is not set up (no embedding model, a store an older pond
    /// wrote): the user must act, not the caller.
    Unavailable,
}

impl ErrorKind {
    /// The caller asked for something wrong or absent: fixing the request is the remedy.
    pub fn is_mistake(self) -> bool {
        matches!(self, ErrorKind::Invalid | ErrorKind::NotFound)
    }

    /// A limit stopped the job (time, memory): asking for less is the remedy.
    pub fn is_limit(self) -> bool {
        matches!(self, ErrorKind::Timeout | ErrorKind::OverBudget)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobError {
    pub kind: ErrorKind,
    pub message: String,
}

impl JobError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> JobError {
        JobError {
            kind,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for JobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for JobError {}

#[cfg(test)]
mod tests {
    use super::*;
    use ipc_channel::ipc;

    /// Every message shape survives the real channel (postcard encoding).
    #[test]
    fn messages_round_trip_over_ipc() {
        let (tx, rx) = ipc::channel::<FromWorker>().unwrap();
        let (jobs, job_rx) = ipc::channel::<ToWorker>().unwrap();
        tx.send(FromWorker::Hello(Hello {
            version: crate::PROTOCOL_VERSION,
            kind: WorkerKind::Sql,
            pid: 42,
            jobs,
        }))
        .unwrap();
        let FromWorker::Hello(h) = rx.recv().unwrap() else {
            panic!("expected hello")
        };
        assert_eq!(
            (h.version, h.kind, h.pid),
            (crate::PROTOCOL_VERSION, WorkerKind::Sql, 42)
        );
        let job = Job::Sql(SqlJob {
            query: "SELECT 1".into(),
            format: Format::Json,
            max_rows: 10,
            max_bytes: 100,
            timeout_ms: 5,
            reveal_secrets: false,
        });
        h.jobs
            .send(ToWorker::Run {
                id: 7,
                job: job.clone(),
            })
            .unwrap();
        match job_rx.recv().unwrap() {
            ToWorker::Run { id, job: got } => assert_eq!((id, got), (7, job)),
            other => panic!("unexpected {other:?}"),
        }
        let mut report = SyncReport::default();
        report.skipped_by_reason.insert("malformed JSON".into(), 3);
        for outcome in [
            Ok(Output::Sync(Box::new(report))),
            Ok(Output::Rebuild(RebuildReport {
                steps: vec![("full-text index".into(), 12)],
                ..RebuildReport::default()
            })),
            Ok(Output::Vectors(Vectors {
                model: "m".into(),
                dims: 2,
                vectors: vec![vec![0.6, -0.8], vec![1.0, 0.0]],
            })),
            Ok(Output::Backfill(BackfillReport {
                model: "m".into(),
                embedded: 3,
                ..BackfillReport::default()
            })),
            Ok(Output::ModelImported),
            Err(JobError::new(ErrorKind::Timeout, "too slow")),
        ] {
            tx.send(FromWorker::Done {
                id: 1,
                outcome: outcome.clone(),
            })
            .unwrap();
            match rx.recv().unwrap() {
                FromWorker::Done {
                    id: 1,
                    outcome: got,
                } => assert_eq!(got, outcome),
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    #[test]
    fn kinds_parse_their_names() {
        for k in WorkerKind::ALL {
            assert_eq!(WorkerKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(WorkerKind::parse("gpu"), None);
        assert!(!WorkerKind::Sql.one_shot() && WorkerKind::Sync.one_shot());
        assert!(!WorkerKind::Embed.one_shot() && WorkerKind::Index.one_shot());
    }
}

/// Which session `pond restore` writes back (with its subagent sessions), and where.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreRequest {
    pub session: String,
    /// Write under this folder instead of where the client reads the files.
    pub out_dir: Option<std::path::PathBuf>,
    /// Say what would be written, write nothing.
    pub dry_run: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreReport {
    pub session: String,
    pub dry_run: bool,
    /// The session's file first, then its subagents'.
    pub files: Vec<RestoredFile>,
    pub elapsed_ms: u64,
    /// The worker's peak resident memory (VmHWM), KiB.
    pub peak_kib: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoredFile {
    pub session_id: String,
    pub path: String,
    pub lines: u64,
    pub bytes: u64,
    /// Lines of the original file that were never stored (malformed, invalid UTF-8, over
    /// the size limit): the file differs from the original there.
    pub lines_missing: u64,
    /// Stored lines of an earlier version of the file (rewritten between syncs), left out.
    pub superseded: u64,
    pub state: FileState,
}

/// What restore found or did at a file's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileState {
    /// Nothing there: written (or would be, in a dry run).
    Missing,
    Written,
    /// Already there with exactly these bytes.
    Present,
    /// Something else is there: never overwritten.
    Differs,
}
