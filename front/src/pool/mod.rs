//! The pool of worker processes, the front's side: a few actors per kind, each spawning and
//! supervising its `pond worker <kind>` child (the jobs those run are `pond-workers`').
//!
//! Each [`WorkerKind`] has one or more actors (its slots, [`WorkersConfig::slots`]), each a
//! tokio task that owns its child process and takes
//! commands from a bounded channel, answering through oneshots. The actor spawns the worker
//! on demand (`pond worker <kind>`, bootstrapped through an `IpcOneShotServer` with a connect
//! deadline), checks the handshake, runs one job at a time under an optional deadline and
//! memory budget (sampled footprint; SIGKILL on breach), restarts after a crash with backoff
//! (and refuses, with the last exit, when a worker keeps dying), stops an idle worker after a
//! configurable time, and lets a one-shot worker exit after its job. Every child is reaped.
//!
//! Which slot takes a job (`pick`) is what keeps many clients fair: a SQL job goes to an
//! idle actor (one whose worker is alive first, so a quiet front keeps one worker), else to
//! the one with the fewest jobs, so one client's long query leaves the other slot free; a
//! backfill has the embed kind's second slot to itself ([`runs_backfills`]), so a query's
//! embedding never waits behind one.
//!
//! Children are spawned from actor tasks, which run on the runtime's long-lived worker
//! threads: `PR_SET_PDEATHSIG` fires when the *thread* that forked a child exits, so a child
//! must never be spawned from a short-lived blocking thread.
//!
//! A job ends with `Done`, or with the worker's death (its channel closes: reaped and
//! described by signal and its last stderr lines), its deadline, stall limit or memory
//! budget (SIGKILL, reap, a `Timeout` or `OverBudget` error), or its caller going away
//! (SIGKILL). The
//! handshake's accept runs on a blocking thread raced against the child's exit and the
//! connect deadline; giving up, the front connects to its own one-shot server to free that
//! thread. Only a worker that fails to start counts toward the refusal (`MAX_CRASHES` in
//! `CRASH_WINDOW`, with backoff between starts): one that dies in a job is replaced for the
//! next, so no caller's request can make pond refuse the next caller's. On shutdown a busy
//! worker is killed, an idle one asked to exit (`EXIT_GRACE`, then SIGKILL), and all are
//! reaped.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pond_protocol::footprint;
use pond_protocol::{ErrorKind, Job, JobError, Output, Progress, WorkerKind};
use tokio::sync::{mpsc, oneshot};

use actor::Actor;

mod actor;
mod process;
#[cfg(test)]
mod tests;

/// Crashes counted for backoff within this window.
const CRASH_WINDOW: Duration = Duration::from_secs(60);
/// After this many crashes in the window, the actor refuses to restart until one ages out.
const MAX_CRASHES: usize = 5;
const BACKOFF_BASE: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// How long a worker may take to exit when asked, before it is killed.
const EXIT_GRACE: Duration = Duration::from_millis(500);
/// How often a busy worker's footprint is sampled against its budget.
const SAMPLE_EVERY: Duration = Duration::from_millis(50);
/// Lines of a worker's stderr kept to explain its death.
const STDERR_TAIL: usize = 8;
/// Jobs that may wait for a busy actor.
const QUEUE: usize = 256;

/// How to start a worker: the pond executable and the arguments before `worker <kind>`
/// (the store and its cache caps).
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    pub exe: PathBuf,
    pub args: Vec<OsString>,
}

#[derive(Debug, Clone)]
pub struct WorkersConfig {
    pub command: WorkerCommand,
    /// How long a started worker has to connect and say hello.
    pub connect_timeout: Duration,
    /// An idle long-lived worker (sql) exits after this long.
    pub idle_exit: Duration,
    /// Kill a worker whose footprint (`RssAnon + VmSwap`) passes this, per kind.
    pub memory_budget_kib: BTreeMap<WorkerKind, u64>,
    /// How many workers of a kind may run at once (1 for a kind not named).
    pub slots: BTreeMap<WorkerKind, usize>,
}

/// Two SQL workers, so that one long query does not hold up every other; two embed
/// workers, one for queries and one for backfills. A sync and an index job take the store's
/// lock: one each.
fn default_slots() -> BTreeMap<WorkerKind, usize> {
    BTreeMap::from([(WorkerKind::Sql, 2), (WorkerKind::Embed, 2)])
}

impl WorkersConfig {
    pub fn new(command: WorkerCommand) -> WorkersConfig {
        WorkersConfig {
            command,
            connect_timeout: Duration::from_secs(10),
            idle_exit: Duration::from_secs(60),
            memory_budget_kib: BTreeMap::new(),
            slots: default_slots(),
        }
    }
}

/// What a caller may ask of one job beyond the job itself.
#[derive(Debug, Clone, Default)]
pub struct JobOptions {
    /// Kill the worker and fail the job after this long.
    pub deadline: Option<Duration>,
    /// Kill the worker and fail the job when it reports no progress for this long (a job
    /// whose length follows its work, like a sync, has no fixed deadline but must not hang).
    pub stall: Option<Duration>,
    /// Where progress messages go.
    pub progress: Option<mpsc::UnboundedSender<Progress>>,
}

/// How long a sync may report no progress before its worker is killed: ten minutes, or
/// `POND_SYNC_STALL_SECS` (tests make it short).
pub fn sync_stall() -> Duration {
    let secs = std::env::var("POND_SYNC_STALL_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&s: &u64| s > 0)
        .unwrap_or(600);
    Duration::from_secs(secs)
}

/// One worker kind's state, as the status resource shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WorkerStatus {
    pub kind: WorkerKind,
    /// Which of its kind's actors (0 first).
    pub slot: usize,
    /// The live worker's pid, if one runs.
    pub pid: Option<u32>,
    pub busy: bool,
    pub started: u64,
    pub jobs_done: u64,
    pub crashes: u64,
    /// How the last worker ended, if it ended badly.
    pub last_exit: Option<String>,
    /// The live worker's footprint (`RssAnon + VmSwap`), KiB.
    pub footprint_kib: Option<u64>,
}

/// The embed kind's slot for backfills: the second (with one slot, backfills share it).
const BACKFILL_SLOT: usize = 1;

/// Whether the actor at `slot` of `kind` runs backfills (and nothing else).
pub fn runs_backfills(kind: WorkerKind, slot: usize) -> bool {
    kind == WorkerKind::Embed && slot == BACKFILL_SLOT
}

impl WorkerStatus {
    fn new(kind: WorkerKind, slot: usize) -> WorkerStatus {
        WorkerStatus {
            kind,
            slot,
            pid: None,
            busy: false,
            started: 0,
            jobs_done: 0,
            crashes: 0,
            last_exit: None,
            footprint_kib: None,
        }
    }
}

type Reply = oneshot::Sender<Result<Output, JobError>>;

enum Request {
    Run {
        job: Job,
        opts: JobOptions,
        reply: Reply,
    },
    Shutdown {
        done: oneshot::Sender<()>,
    },
}

#[derive(Clone)]
struct Handle {
    tx: mpsc::Sender<Request>,
    status: Arc<Mutex<WorkerStatus>>,
    /// Jobs sent to this actor and not answered yet.
    outstanding: Arc<AtomicUsize>,
}

impl Handle {
    fn idle(&self) -> bool {
        self.outstanding.load(Ordering::Relaxed) == 0
    }

    fn live(&self) -> bool {
        self.status.lock().expect("status lock").pid.is_some()
    }
}

/// The slot of `slots` (one kind's actors) that takes `job`.
fn pick(job: &Job, slots: &[Handle]) -> usize {
    match job {
        Job::Backfill(_) => BACKFILL_SLOT.min(slots.len() - 1),
        Job::Embed(_) => 0,
        _ => slots
            .iter()
            .position(|h| h.idle() && h.live())
            .or_else(|| slots.iter().position(Handle::idle))
            .unwrap_or_else(|| {
                (0..slots.len())
                    .min_by_key(|&i| slots[i].outstanding.load(Ordering::Relaxed))
                    .unwrap_or(0)
            }),
    }
}

/// Counts a job as outstanding on its actor until dropped (answered, or its caller gone).
struct Outstanding(Arc<AtomicUsize>);

impl Drop for Outstanding {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The front's workers: a few actors per kind. Cheap to clone.
#[derive(Clone)]
pub struct Workers {
    handles: Arc<BTreeMap<WorkerKind, Vec<Handle>>>,
    /// Set by [`Workers::shutdown`]: a busy actor watches it and kills its own child (never a
    /// pid read from outside, which its actor may have reaped and the system reused), and
    /// refuses jobs it picks up after.
    stopping: tokio::sync::watch::Sender<bool>,
}

fn stopped() -> JobError {
    JobError::new(ErrorKind::Internal, "pond is shutting down")
}

impl Workers {
    /// Start each kind's actors (no process yet). Must be called inside a tokio runtime.
    pub fn start(config: WorkersConfig) -> Workers {
        let config = Arc::new(config);
        let (stopping, _) = tokio::sync::watch::channel(false);
        let actor = |kind, slot| {
            let (tx, rx) = mpsc::channel(QUEUE);
            let status = Arc::new(Mutex::new(WorkerStatus::new(kind, slot)));
            let actor = Actor {
                kind,
                config: config.clone(),
                live: None,
                crashes: VecDeque::new(),
                status: status.clone(),
                next_id: 0,
                last_used: Instant::now(),
                stopping: stopping.subscribe(),
            };
            tokio::spawn(actor.main(rx));
            Handle {
                tx,
                status,
                outstanding: Arc::default(),
            }
        };
        let handles = WorkerKind::ALL
            .into_iter()
            .map(|kind| {
                let n = config.slots.get(&kind).copied().unwrap_or(1).max(1);
                (kind, (0..n).map(|slot| actor(kind, slot)).collect())
            })
            .collect();
        Workers {
            handles: Arc::new(handles),
            stopping,
        }
    }

    /// Run a job in a worker of its kind.
    pub async fn run(&self, job: Job, opts: JobOptions) -> Result<Output, JobError> {
        let kind = job.kind();
        let slots = &self.handles[&kind];
        let handle = &slots[pick(&job, slots)];
        handle.outstanding.fetch_add(1, Ordering::Relaxed);
        let _outstanding = Outstanding(handle.outstanding.clone());
        let started = std::time::Instant::now();
        let (reply, answer) = oneshot::channel();
        handle
            .tx
            .send(Request::Run { job, opts, reply })
            .await
            .map_err(|_| stopped())?;
        let out = answer.await.map_err(|_| stopped())?;
        let pid = handle.status.lock().expect("status lock").pid;
        let ms = started.elapsed().as_millis() as u64;
        match &out {
            Ok(_) => tracing::info!(?kind, ?pid, ms, "job done"),
            Err(e) => tracing::info!(?kind, ?pid, ms, error = %e, "job failed"),
        }
        out
    }

    /// Every kind's state, with live workers' footprints sampled now.
    pub fn status(&self) -> Vec<WorkerStatus> {
        self.handles
            .values()
            .flatten()
            .map(|h| {
                let mut s = h.status.lock().expect("status lock").clone();
                s.footprint_kib = s.pid.and_then(footprint::of_pid).map(|f| f.footprint_kib());
                s
            })
            .collect()
    }

    /// Stop every worker (asking first, then killing) and reap it.
    pub async fn shutdown(&self) {
        // A busy actor sees the request below only after its job: this interrupts the job.
        self.stopping.send_replace(true);
        let mut waits = Vec::new();
        for h in self.handles.values().flatten() {
            let (done, wait) = oneshot::channel();
            if h.tx.send(Request::Shutdown { done }).await.is_ok() {
                waits.push(wait);
            }
        }
        for w in waits {
            let _ = w.await;
        }
    }
}
