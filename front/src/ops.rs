//! What pond can do, defined once: [`Front`] owns the store and the runner and offers each
//! operation typed (a request in, data or an [`Error`] out). The CLI and the MCP server are
//! adapters over it: they parse, call one operation, and render the result ([`crate::render`]).
//!
//! Reads (search, get) run here on the front's capped Lance caches; everything heavy (the
//! query's embedding, SQL, sync, rebuild, backfill) goes to a worker through the [`Runner`].
//! Every operation runs in a span named for it and logs its duration and size at debug
//! level (`-vv`), or its error kind at info level (`-v`).

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pond_protocol::grep::{GrepJob, GrepResults};
use pond_protocol::job::{
    BackfillReport, BackfillRequest, EmbedJob, ForgetReport, ForgetRequest, RebuildReport,
    RebuildRequest, RestoreReport, RestoreRequest, SqlJob, SqlOutput,
};
use pond_protocol::sync::{SyncReport, SyncRequest};
use pond_protocol::usage::{UsageReport, UsageRequest};
use pond_protocol::{ErrorKind, JobError, Progress};
use pond_store::get::{self, MessageContext, PageRequest, SessionPage};
use pond_store::search::{self, QueryVector, SearchRequest, SearchResults};
use pond_store::sessions::{self, SessionList, SessionsRequest};
use pond_store::Store;
use tokio::sync::mpsc::UnboundedSender;
use tracing::Instrument;

use crate::params::{EmbedAfter, ExportFormat, ExportParams, SQL_KILL_GRACE};
use crate::pool::{sync_stall, JobOptions};
use crate::runner::Runner;
use crate::status::{self, BackgroundSync, Status, Synced};

/// An operation's failure, classified by who must act ([`ErrorKind::is_mistake`]: the
/// caller; [`ErrorKind::Unavailable`]: the user; [`ErrorKind::is_limit`]: ask for less;
/// the rest: pond).
pub type Error = JobError;

/// Where an operation's progress goes (a CLI's progress bar), if anywhere.
pub type ProgressSink = Option<UnboundedSender<Progress>>;

/// A Markdown export's page: messages and bytes read from the store at a time.
const EXPORT_PAGE_MESSAGES: usize = 500;
const EXPORT_PAGE_BYTES: usize = 8 << 20;

/// How long `pond usage` may sum before its worker is killed.
pub const USAGE_DEADLINE: Duration = Duration::from_secs(120);

/// The front: the store, where jobs run, and what the background sync last did.
#[derive(Clone)]
pub struct Front {
    store: Arc<Store>,
    runner: Runner,
    started: Instant,
    pub(crate) background: Arc<Mutex<Option<BackgroundSync>>>,
    clients: crate::clients::Clients,
}

/// Run `fut` as the operation `name`: in its span, logging how long it took and `size` of
/// what it returned, or the kind of its error.
async fn op<T>(
    name: &'static str,
    size: fn(&T) -> usize,
    fut: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    let started = Instant::now();
    let out = fut.instrument(tracing::info_span!("op", name)).await;
    let ms = started.elapsed().as_millis() as u64;
    match &out {
        Ok(v) => tracing::debug!(op = name, ms, size = size(v), "done"),
        Err(e) => tracing::info!(op = name, ms, kind = ?e.kind, "failed: {}", e.message),
    }
    out
}

impl Front {
    pub fn new(store: Arc<Store>, runner: Runner) -> Front {
        Front {
            store,
            runner,
            started: Instant::now(),
            background: Arc::default(),
            clients: Default::default(),
        }
    }

    /// The MCP clients this front serves.
    pub fn clients(&self) -> &crate::clients::Clients {
        &self.clients
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    pub fn runner(&self) -> &Runner {
        &self.runner
    }

    /// The store's state; with `process`, this front's process and workers too.
    pub async fn status(&self, process: bool) -> Status {
        let background = self.background.lock().expect("background note").clone();
        let mut s =
            status::gather(&self.store, &self.runner, self.started, background, process).await;
        if let Some(p) = &mut s.process {
            p.clients = self.clients.list();
        }
        s
    }

    /// Stop and reap every worker this front started.
    pub async fn shutdown(&self) {
        self.runner.shutdown().await;
    }

    /// Search: full-text here; vector and hybrid embed the query in the embed worker first.
    pub async fn search(&self, req: &SearchRequest) -> Result<SearchResults, Error> {
        op("search", |r: &SearchResults| r.hits, async {
            let (query, _) = search::check(req)?;
            let vector = if req.mode.needs_vector() {
                Some(self.embed_query(&query.plain_text()).await?)
            } else {
                None
            };
            Ok(search::search(&self.store, req, vector.as_ref()).await?)
        })
        .await
    }

    /// Exact or regex search (`search --mode exact|regex`) in the sql worker: the indexes
    /// give candidates, the worker checks the pattern on them within the job's timeout and
    /// the sql worker's memory budget, and is killed [`SQL_KILL_GRACE`] after it (for a job
    /// that does not yield). Only the page comes back.
    pub async fn grep(&self, mut job: GrepJob) -> Result<GrepResults, Error> {
        let deadline = Duration::from_millis(job.timeout_ms) + SQL_KILL_GRACE;
        op("grep", |r: &GrepResults| r.hits as usize, async {
            if let Some(id) = &job.session_id {
                job.session_id = Some(get::resolve_session_id(&self.store, id).await?);
            }
            let opts = JobOptions {
                deadline: Some(deadline),
                ..JobOptions::default()
            };
            self.runner.call(job, opts).await
        })
        .await
    }

    /// The embedding of a search query, from the embed worker (which loads the store's
    /// model on first use and exits when idle).
    async fn embed_query(&self, query: &str) -> Result<QueryVector, Error> {
        let job = EmbedJob {
            texts: vec![query.to_owned()],
            query: true,
        };
        let opts = JobOptions {
            deadline: Some(Duration::from_secs(120)),
            ..JobOptions::default()
        };
        let mut v = self.runner.call(job, opts).await?;
        match v.vectors.pop() {
            Some(vector) if v.vectors.is_empty() => Ok(QueryVector {
                model: v.model,
                vector,
            }),
            _ => Err(Error::new(
                ErrorKind::Internal,
                "the embed worker did not return one vector for the query (a pond bug)",
            )),
        }
    }

    /// One page of a session.
    pub async fn get_session(&self, id: &str, req: &PageRequest) -> Result<SessionPage, Error> {
        op("get_session", |p: &SessionPage| p.messages.len(), async {
            Ok(get::get_session(&self.store, id, req).await?)
        })
        .await
    }

    /// One message with `before` and `after` neighbours.
    pub async fn get_message(
        &self,
        id: &str,
        before: usize,
        after: usize,
    ) -> Result<MessageContext, Error> {
        op(
            "get_message",
            |c: &MessageContext| c.message.parts.len(),
            async { Ok(get::get_message(&self.store, id, before, after).await?) },
        )
        .await
    }

    /// A page of sessions, newest first, filtered as search is.
    pub async fn sessions(&self, req: &SessionsRequest) -> Result<SessionList, Error> {
        op("sessions", |l: &SessionList| l.sessions.len(), async {
            Ok(sessions::list(&self.store, req).await?)
        })
        .await
    }

    /// One read-only query in the sql worker. Its own timeout (`job.timeout_ms`) ends it
    /// gracefully; the worker is killed [`SQL_KILL_GRACE`] later, for a query that does not
    /// yield. One rule for every front end.
    pub async fn sql(&self, job: SqlJob) -> Result<SqlOutput, Error> {
        let opts = JobOptions {
            deadline: Some(Duration::from_millis(job.timeout_ms) + SQL_KILL_GRACE),
            ..JobOptions::default()
        };
        op(
            "sql",
            |o: &SqlOutput| o.rows as usize,
            self.runner.call(job, opts),
        )
        .await
    }

    /// Sync in the sync worker (killed if it stalls), then embed what it added if asked and
    /// the store has a model.
    pub async fn sync(
        &self,
        req: SyncRequest,
        embed: EmbedAfter,
        progress: ProgressSink,
    ) -> Result<Synced, Error> {
        let opts = JobOptions {
            stall: Some(sync_stall()),
            progress: progress.clone(),
            ..JobOptions::default()
        };
        let report = op("sync", |r: &SyncReport| r.messages_added as usize, async {
            Ok(*self.runner.call(req, opts).await?)
        })
        .await?;
        let wanted = match embed {
            EmbedAfter::Never => false,
            EmbedAfter::Added => report.messages_added > 0,
            EmbedAfter::Always => true,
        };
        let embedded = if wanted && self.store.has_model() {
            Some(self.backfill(0, progress).await)
        } else {
            None
        };
        Ok(Synced { report, embedded })
    }

    /// Embed up to `limit` messages without vectors (0: all) in the embed worker.
    pub async fn backfill(
        &self,
        limit: u64,
        progress: ProgressSink,
    ) -> Result<BackfillReport, Error> {
        let opts = JobOptions {
            progress,
            ..JobOptions::default()
        };
        op(
            "backfill",
            |r: &BackfillReport| r.embedded as usize,
            self.runner.call(BackfillRequest { limit }, opts),
        )
        .await
    }

    /// Forget the sessions `req` selects, for good, in the index worker (or say which they
    /// are: a dry run).
    pub async fn forget(&self, mut req: ForgetRequest) -> Result<ForgetReport, Error> {
        op("forget", |r: &ForgetReport| r.sessions.len(), async {
            if let Some(id) = &req.session {
                req.session = Some(get::resolve_session_id(&self.store, id).await?);
            }
            self.runner.call(req, JobOptions::default()).await
        })
        .await
    }

    /// Write a stored session's files back (or say which would be written) in a worker:
    /// the lines may be many megabytes, read from `records`.
    pub async fn restore(&self, mut req: RestoreRequest) -> Result<RestoreReport, Error> {
        op("restore", |r: &RestoreReport| r.files.len(), async {
            req.session = get::resolve_session_id(&self.store, &req.session).await?;
            self.runner.call(req, JobOptions::default()).await
        })
        .await
    }

    /// Tokens and cost summed over the store's `usage` (`pond usage`, `pond_usage`), in
    /// the sql worker: the front receives the summary's lines only. Days are the zone's.
    pub async fn usage(&self, mut req: UsageRequest) -> Result<UsageReport, Error> {
        req.utc = pond_store::zone::is_utc();
        if let Some(text) = &req.prices {
            // A bad price file is the caller's to fix: said before a worker starts.
            pond_store::prices::PriceTable::with_overrides(Some(text))?;
        }
        let opts = JobOptions {
            deadline: Some(USAGE_DEADLINE),
            ..JobOptions::default()
        };
        let report = op(
            "usage",
            |r| r.lines.len(),
            self.runner.call(Box::new(req), opts),
        )
        .await?;
        Ok(*report)
    }

    /// Rebuild the indexes `req` names in the index worker.
    pub async fn rebuild(
        &self,
        req: RebuildRequest,
        progress: ProgressSink,
    ) -> Result<RebuildReport, Error> {
        let opts = JobOptions {
            progress,
            ..JobOptions::default()
        };
        op(
            "rebuild",
            |r: &RebuildReport| r.rows as usize,
            self.runner.call(req, opts),
        )
        .await
    }

    /// A stored session written out (`pond export`), a piece at a time to `write`: its
    /// lines as its client wrote them (restored into a temporary folder by a worker, then
    /// read back a line at a time), or a Markdown document read page by page.
    pub async fn export(
        &self,
        params: ExportParams,
        write: &mut dyn FnMut(&str),
    ) -> Result<(), Error> {
        let session = &get::resolve_session_id(&self.store, &params.session).await?;
        match params.format {
            ExportFormat::Jsonl => {
                use std::io::BufRead;
                let io = |e: std::io::Error| Error::new(ErrorKind::Internal, e.to_string());
                let dir = tempfile::tempdir().map_err(io)?;
                let req = RestoreRequest {
                    session: session.to_owned(),
                    out_dir: Some(dir.path().to_owned()),
                    dry_run: false,
                };
                let report = self.restore(req).await?;
                let file = report
                    .files
                    .iter()
                    .find(|f| f.session_id == *session)
                    .ok_or_else(|| {
                        Error::new(
                            ErrorKind::Internal,
                            format!("the store holds no file of session {session}"),
                        )
                    })?;
                let mut lines =
                    std::io::BufReader::new(std::fs::File::open(&file.path).map_err(io)?);
                let mut line = Vec::new();
                while lines.read_until(b'\n', &mut line).map_err(io)? > 0 {
                    write(&String::from_utf8_lossy(&line));
                    line.clear();
                }
            }
            ExportFormat::Markdown => {
                let mut req = PageRequest {
                    from: get::PageFrom::Start,
                    limit: EXPORT_PAGE_MESSAGES,
                    after: None,
                    before: None,
                    max_bytes: EXPORT_PAGE_BYTES,
                    include_replayed: false,
                };
                let mut first = true;
                loop {
                    let page = self.get_session(session, &req).await?;
                    if std::mem::take(&mut first) {
                        write(&crate::render::markdown::header(&page.session));
                    }
                    for m in &page.messages {
                        write(&crate::render::markdown::message(m));
                    }
                    match page.more_after {
                        Some(after) => req.after = Some(after),
                        None => break,
                    }
                }
            }
        }
        Ok(())
    }
}
