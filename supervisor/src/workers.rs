//! Worker processes, one actor per kind.
//!
//! Each [`WorkerKind`] has one actor: a tokio task that owns its child process and takes
//! commands from a bounded channel, answering through oneshots. The actor spawns the worker
//! on demand (`pond worker <kind>`, bootstrapped through an `IpcOneShotServer` with a connect
//! deadline), checks the handshake, runs one job at a time under an optional deadline and
//! memory budget (sampled footprint; SIGKILL on breach), restarts after a crash with backoff
//! (and refuses, with the last exit, when a worker keeps dying), stops an idle worker after a
//! configurable time, and lets a one-shot worker exit after its job. Every child is reaped.
//!
//! Children are spawned from actor tasks, which run on the runtime's long-lived worker
//! threads: `PR_SET_PDEATHSIG` fires when the *thread* that forked a child exits, so a child
//! must never be spawned from a short-lived blocking thread.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ipc_channel::ipc::{IpcOneShotServer, IpcSender};
use pond_protocol::footprint;
use pond_protocol::{
    ErrorKind, FromWorker, Job, JobError, Output, Progress, ToWorker, WorkerKind, PROTOCOL_VERSION,
};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};

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
}

impl WorkersConfig {
    pub fn new(command: WorkerCommand) -> WorkersConfig {
        WorkersConfig {
            command,
            connect_timeout: Duration::from_secs(10),
            idle_exit: Duration::from_secs(60),
            memory_budget_kib: BTreeMap::new(),
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

impl WorkerStatus {
    fn new(kind: WorkerKind) -> WorkerStatus {
        WorkerStatus {
            kind,
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
}

/// The front's workers: one actor per kind. Cheap to clone.
#[derive(Clone)]
pub struct Workers {
    handles: Arc<BTreeMap<WorkerKind, Handle>>,
    /// Set by [`Workers::shutdown`]: a busy actor watches it and kills its own child (never a
    /// pid read from outside, which its actor may have reaped and the system reused), and
    /// refuses jobs it picks up after.
    stopping: tokio::sync::watch::Sender<bool>,
}

fn stopped() -> JobError {
    JobError::new(ErrorKind::Internal, "pond is shutting down")
}

impl Workers {
    /// Start one actor per kind (no process yet). Must be called inside a tokio runtime.
    pub fn start(config: WorkersConfig) -> Workers {
        let config = Arc::new(config);
        let (stopping, _) = tokio::sync::watch::channel(false);
        let handles = WorkerKind::ALL
            .into_iter()
            .map(|kind| {
                let (tx, rx) = mpsc::channel(QUEUE);
                let status = Arc::new(Mutex::new(WorkerStatus::new(kind)));
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
                (kind, Handle { tx, status })
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
        let handle = &self.handles[&kind];
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
        for h in self.handles.values() {
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

/// A running worker process.
struct Live {
    child: Child,
    pid: u32,
    jobs: IpcSender<ToWorker>,
    /// Messages from the worker; closed when the worker's end closes (it exited or died).
    events: mpsc::Receiver<FromWorker>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

impl Live {
    /// Wait for the (dying or dead) child and describe how it ended.
    async fn reap(mut self) -> String {
        let status = self.child.wait().await;
        let mut note = match status {
            Ok(s) => describe_exit(s),
            Err(e) => format!("could not be waited for: {e}"),
        };
        let tail = self.stderr_tail.lock().expect("tail lock");
        if let Some(last) = tail.back() {
            note.push_str("; its last words: ");
            note.push_str(last);
        }
        note
    }

    async fn kill(mut self) -> String {
        let _ = self.child.start_kill();
        self.reap().await
    }

    /// Ask the worker to exit; kill it if it has not within the grace time.
    async fn stop(mut self) {
        let _ = self.jobs.send(ToWorker::Exit);
        if tokio::time::timeout(EXIT_GRACE, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.kill().await;
        }
    }
}

fn describe_exit(s: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exited with code {c}"),
        (None, Some(sig)) => {
            let name = nix::sys::signal::Signal::try_from(sig)
                .map(|s| s.as_str().to_owned())
                .unwrap_or_else(|_| format!("signal {sig}"));
            format!("was killed by {name}")
        }
        _ => "ended".into(),
    }
}

/// Start a worker of `kind` and complete its handshake.
async fn spawn(config: &WorkersConfig, kind: WorkerKind) -> Result<Live, JobError> {
    let failed = |what: String| JobError::new(ErrorKind::Crashed, what);
    let (server, name) = IpcOneShotServer::<FromWorker>::new()
        .map_err(|e| failed(format!("cannot open the worker channel: {e}")))?;
    let mut cmd = Command::new(&config.command.exe);
    cmd.args(&config.command.args)
        .arg("worker")
        .arg(kind.as_str())
        .arg("--ipc")
        .arg(&name)
        .arg("--parent")
        .arg(std::process::id().to_string())
        .stdin(Stdio::null())
        // The front's stdout is the MCP channel: a worker never writes there.
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .map_err(|e| failed(format!("cannot start the {kind} worker: {e}")))?;
    let pid = child.id().unwrap_or(0);
    let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
    if let Some(err) = child.stderr.take() {
        let tail = stderr_tail.clone();
        tokio::spawn(forward_stderr(err, kind, pid, tail));
    }
    // The one-shot server's accept blocks with no timeout: run it on a blocking thread and
    // race it against the child's exit and the connect deadline. If we give up, connect to
    // the server ourselves so that thread returns.
    let mut accept = tokio::task::spawn_blocking(move || server.accept());
    let release = |name: String| {
        if let Ok(s) = IpcSender::<FromWorker>::connect(name) {
            let _ = s.send(FromWorker::Abandoned);
        }
    };
    let accepted = tokio::select! {
        r = &mut accept => r,
        exit = child.wait() => {
            release(name);
            let how = exit.map(describe_exit).unwrap_or_else(|e| e.to_string());
            let tail = stderr_tail.lock().expect("tail lock").iter().cloned().collect::<Vec<_>>().join(" | ");
            return Err(failed(format!("the {kind} worker {how} before it connected: {tail}")));
        }
        _ = tokio::time::sleep(config.connect_timeout) => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            release(name);
            return Err(failed(format!(
                "the {kind} worker did not connect within {} s and was killed",
                config.connect_timeout.as_secs_f64()
            )));
        }
    };
    let (receiver, first) = match accepted {
        Ok(Ok(pair)) => pair,
        Ok(Err(e)) => return Err(failed(format!("the {kind} worker's handshake failed: {e}"))),
        Err(e) => return Err(failed(format!("accept thread: {e}"))),
    };
    let hello = match first {
        FromWorker::Hello(h) => h,
        other => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            return Err(failed(format!(
                "the {kind} worker opened with {other:?} instead of a handshake"
            )));
        }
    };
    if hello.version != PROTOCOL_VERSION || hello.kind != kind || hello.pid != pid {
        let _ = child.start_kill();
        let _ = child.wait().await;
        return Err(failed(format!(
            "handshake mismatch: expected a {kind} worker, pid {pid}, protocol {PROTOCOL_VERSION}; got a {} worker, pid {}, protocol {} (a different pond binary?)",
            hello.kind, hello.pid, hello.version
        )));
    }
    // Messages arrive on a blocking receive; a thread forwards them until the worker's end
    // closes, then drops the sender, which the actor sees as the worker's death or exit.
    let (tx, events) = mpsc::channel(64);
    std::thread::Builder::new()
        .name(format!("pond-{kind}-ipc"))
        .spawn(move || {
            while let Ok(m) = receiver.recv() {
                if tx.blocking_send(m).is_err() {
                    break;
                }
            }
        })
        .map_err(|e| failed(format!("cannot start the IPC reader: {e}")))?;
    Ok(Live {
        child,
        pid,
        jobs: hello.jobs,
        events,
        stderr_tail,
    })
}

struct Actor {
    kind: WorkerKind,
    config: Arc<WorkersConfig>,
    live: Option<Live>,
    crashes: VecDeque<Instant>,
    status: Arc<Mutex<WorkerStatus>>,
    next_id: u64,
    last_used: Instant,
    stopping: tokio::sync::watch::Receiver<bool>,
}

enum Wake {
    Command(Option<Request>),
    Idle,
    /// The idle worker's channel closed: it exited or died between jobs.
    Gone,
}

enum End {
    Done(Box<Result<Output, JobError>>),
    Gone,
    Deadline(Duration),
    Stalled(Duration),
    OverBudget(u64, u64),
    Cancelled,
    Stopped,
}

impl Actor {
    fn update(&self, f: impl FnOnce(&mut WorkerStatus)) {
        f(&mut self.status.lock().expect("status lock"));
    }

    async fn main(mut self, mut rx: mpsc::Receiver<Request>) {
        loop {
            let idle_deadline = (self.live.is_some() && !self.kind.one_shot())
                .then(|| self.last_used + self.config.idle_exit);
            let wake = tokio::select! {
                c = rx.recv() => Wake::Command(c),
                _ = sleep_until(idle_deadline) => Wake::Idle,
                _ = closed(&mut self.live) => Wake::Gone,
            };
            match wake {
                Wake::Command(Some(Request::Run { job, opts, reply })) => {
                    self.run(job, opts, reply).await
                }
                Wake::Command(Some(Request::Shutdown { done })) => {
                    self.stop().await;
                    let _ = done.send(());
                    break;
                }
                Wake::Command(None) => {
                    self.stop().await;
                    break;
                }
                Wake::Idle => self.stop().await,
                Wake::Gone => {
                    if let Some(live) = self.live.take() {
                        let note = live.reap().await;
                        self.update(|s| {
                            s.pid = None;
                            s.last_exit = Some(format!("between jobs: {note}"));
                        });
                    }
                }
            }
        }
    }

    async fn stop(&mut self) {
        if let Some(live) = self.live.take() {
            live.stop().await;
        }
        self.update(|s| {
            s.pid = None;
            s.busy = false;
        });
    }

    async fn run(&mut self, job: Job, opts: JobOptions, mut reply: Reply) {
        if reply.is_closed() {
            return;
        }
        if let Some(outcome) = self.run_job(job, &opts, &mut reply).await {
            let _ = reply.send(outcome);
        }
        self.last_used = Instant::now();
        self.update(|s| s.busy = false);
        if self.kind.one_shot() {
            self.stop().await;
        }
    }

    /// Wait out the backoff after recent crashes, or refuse if the worker keeps dying.
    async fn backoff(&mut self) -> Result<(), JobError> {
        let now = Instant::now();
        while self
            .crashes
            .front()
            .is_some_and(|t| now.duration_since(*t) > CRASH_WINDOW)
        {
            self.crashes.pop_front();
        }
        let n = self.crashes.len();
        let Some(last) = self.crashes.back().copied() else {
            return Ok(());
        };
        if n >= MAX_CRASHES {
            let oldest = self.crashes.front().copied().unwrap_or(now);
            let retry = CRASH_WINDOW.saturating_sub(now.duration_since(oldest));
            let last_exit = self.status.lock().expect("status lock").last_exit.clone();
            return Err(JobError::new(
                ErrorKind::Crashed,
                format!(
                    "the {} worker crashed {n} times in the last minute, so pond stopped restarting it; it will try again in {} s. Last exit: {}",
                    self.kind,
                    retry.as_secs() + 1,
                    last_exit.unwrap_or_else(|| "unknown".into())
                ),
            ));
        }
        let wait = (BACKOFF_BASE * 2u32.pow(n as u32 - 1)).min(BACKOFF_MAX);
        let since = now.duration_since(last);
        if since < wait {
            tokio::time::sleep(wait - since).await;
        }
        Ok(())
    }

    /// A worker that could not be started (spawn, handshake): counted for the backoff and
    /// the refusal, which keep a broken install from looping.
    fn crashed(&mut self, note: &str) {
        self.crashes.push_back(Instant::now());
        self.died(note);
    }

    /// A worker that died during a job (a query that crashed it, a kill from outside): noted,
    /// but not counted for the refusal, so that no caller's request can make pond refuse
    /// the next ones; each request starts a fresh worker.
    fn died(&mut self, note: &str) {
        self.update(|s| {
            s.pid = None;
            s.crashes += 1;
            s.last_exit = Some(note.to_owned());
        });
    }

    async fn ensure_live(&mut self) -> Result<(), JobError> {
        if self.live.is_some() {
            return Ok(());
        }
        self.backoff().await?;
        match spawn(&self.config, self.kind).await {
            Ok(live) => {
                let pid = live.pid;
                self.live = Some(live);
                self.update(|s| {
                    s.pid = Some(pid);
                    s.started += 1;
                });
                Ok(())
            }
            Err(e) => {
                self.crashed(&e.message);
                Err(e)
            }
        }
    }

    /// Run one job; `None` when the caller has gone away.
    async fn run_job(
        &mut self,
        job: Job,
        opts: &JobOptions,
        reply: &mut Reply,
    ) -> Option<Result<Output, JobError>> {
        if *self.stopping.borrow() {
            return Some(Err(stopped()));
        }
        if let Err(e) = self.ensure_live().await {
            return Some(Err(e));
        }
        self.next_id += 1;
        let id = self.next_id;
        self.update(|s| s.busy = true);
        let kind = self.kind;
        let budget = self.config.memory_budget_kib.get(&kind).copied();
        let deadline = opts.deadline.map(|d| (Instant::now() + d, d));
        let mut stall_at = opts.stall.map(|d| Instant::now() + d);
        let live = self.live.as_mut().expect("live worker");
        let sent = live.jobs.send(ToWorker::Run { id, job }).is_ok();
        let mut sample = tokio::time::interval(SAMPLE_EVERY);
        let end = if !sent {
            End::Gone
        } else {
            loop {
                tokio::select! {
                    m = live.events.recv() => match m {
                        Some(FromWorker::Progress { id: of, progress }) if of == id => {
                            stall_at = opts.stall.map(|d| Instant::now() + d);
                            if let Some(p) = &opts.progress {
                                let _ = p.send(progress);
                            }
                        }
                        Some(FromWorker::Done { id: of, outcome }) if of == id => break End::Done(Box::new(outcome)),
                        Some(_) => {}
                        None => break End::Gone,
                    },
                    _ = sleep_until(deadline.map(|d| d.0)) => {
                        break End::Deadline(deadline.map(|d| d.1).unwrap_or_default())
                    }
                    _ = sleep_until(stall_at) => {
                        break End::Stalled(opts.stall.unwrap_or_default())
                    }
                    _ = sample.tick(), if budget.is_some() => {
                        let used = footprint::of_pid(live.pid).map_or(0, |f| f.footprint_kib());
                        let budget = budget.unwrap_or(u64::MAX);
                        if used > budget {
                            break End::OverBudget(used, budget);
                        }
                    }
                    _ = reply.closed() => break End::Cancelled,
                    _ = self.stopping.wait_for(|s| *s) => break End::Stopped,
                }
            }
        };
        match end {
            End::Done(outcome) => {
                self.update(|s| s.jobs_done += 1);
                Some(*outcome)
            }
            End::Gone => {
                let live = self.live.take().expect("live worker");
                let note = live.reap().await;
                self.died(&note);
                Some(Err(JobError::new(
                    ErrorKind::Crashed,
                    format!(
                        "the {kind} worker died during the job ({note}); the next call starts a fresh one"
                    ),
                )))
            }
            End::Deadline(d) => {
                self.kill(format!("killed at its deadline of {} s", d.as_secs_f64()))
                    .await;
                Some(Err(JobError::new(
                    ErrorKind::Timeout,
                    format!(
                        "the job ran past its deadline of {} s, so its {kind} worker was killed and its memory returned",
                        d.as_secs_f64()
                    ),
                )))
            }
            End::Stalled(d) => {
                self.kill(format!("killed: no progress for {} s", d.as_secs_f64()))
                    .await;
                Some(Err(JobError::new(
                    ErrorKind::Timeout,
                    format!(
                        "the job made no progress for {} s (a file that cannot be read to its end?), so its {kind} worker was killed",
                        d.as_secs_f64()
                    ),
                )))
            }
            End::OverBudget(used, budget) => {
                self.kill(format!(
                    "killed at {} MiB, over its budget of {} MiB",
                    used >> 10,
                    budget >> 10
                ))
                .await;
                Some(Err(JobError::new(
                    ErrorKind::OverBudget,
                    format!(
                        "the job grew its {kind} worker to {} MiB, past the budget of {} MiB, so the worker was killed",
                        used >> 10,
                        budget >> 10
                    ),
                )))
            }
            End::Cancelled => {
                self.kill("killed: the caller cancelled the job".into())
                    .await;
                None
            }
            End::Stopped => {
                self.kill("killed: pond is shutting down".into()).await;
                Some(Err(stopped()))
            }
        }
    }

    /// Kill the live worker on purpose (not a crash) and reap it.
    async fn kill(&mut self, why: String) {
        if let Some(live) = self.live.take() {
            live.kill().await;
        }
        self.update(|s| {
            s.pid = None;
            s.last_exit = Some(why);
        });
    }
}

/// The longest stderr line of a worker kept or forwarded; the rest of a longer line is
/// dropped (a worker must not grow the front by printing).
const STDERR_LINE_BYTES: usize = 4096;

/// Forward a worker's stderr line by line (prefixed with its kind and pid) and keep the last
/// lines to explain its death.
async fn forward_stderr(
    err: tokio::process::ChildStderr,
    kind: WorkerKind,
    pid: u32,
    tail: Arc<Mutex<VecDeque<String>>>,
) {
    use tokio::io::AsyncBufReadExt;

    let mut r = tokio::io::BufReader::new(err);
    let mut line = Vec::new();
    let emit = |line: &[u8]| {
        let line = String::from_utf8_lossy(line).into_owned();
        eprintln!("[pond {kind} worker {pid}] {line}");
        let mut t = tail.lock().expect("tail lock");
        if t.len() == STDERR_TAIL {
            t.pop_front();
        }
        t.push_back(line);
    };
    loop {
        let buf = match r.fill_buf().await {
            Ok(b) if !b.is_empty() => b,
            _ => break,
        };
        let (take, end) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let keep = if end { take - 1 } else { take };
        let room = STDERR_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&buf[..keep.min(room)]);
        r.consume(take);
        if end {
            emit(&line);
            line.clear();
        }
    }
    if !line.is_empty() {
        emit(&line);
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// Resolves when the live worker's channel closes (messages between jobs are dropped).
async fn closed(live: &mut Option<Live>) {
    match live {
        Some(l) => while l.events.recv().await.is_some() {},
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Workers whose "pond" is a shell script that ignores the worker arguments.
    fn fake(script: &str) -> Workers {
        let mut config = WorkersConfig::new(WorkerCommand {
            exe: "/bin/sh".into(),
            args: vec!["-c".into(), script.into(), "sh".into()],
        });
        config.connect_timeout = Duration::from_millis(300);
        Workers::start(config)
    }

    fn sql_status(w: &Workers) -> WorkerStatus {
        w.status()
            .into_iter()
            .find(|s| s.kind == WorkerKind::Sql)
            .unwrap()
    }

    #[tokio::test]
    async fn a_worker_that_never_connects_is_killed_at_the_connect_deadline() {
        let w = fake("sleep 30");
        let started = Instant::now();
        let e = w.run(Job::Ping, JobOptions::default()).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Crashed);
        assert!(e.message.contains("did not connect within 0.3 s"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(2));
        let s = sql_status(&w);
        assert_eq!((s.pid, s.crashes), (None, 1));
        w.shutdown().await;
    }

    #[tokio::test]
    async fn a_worker_that_keeps_dying_is_reported_not_restarted_in_a_loop() {
        let w = fake("echo 'cannot start' >&2; exit 3");
        let started = Instant::now();
        for _ in 0..MAX_CRASHES {
            let e = w.run(Job::Ping, JobOptions::default()).await.unwrap_err();
            assert!(e.message.contains("exited with code 3"), "{e}");
        }
        // Backoff between the attempts: 0.1 + 0.2 + 0.4 + 0.8 s.
        assert!(started.elapsed() >= Duration::from_millis(1500));
        let refused_at = Instant::now();
        let e = w.run(Job::Ping, JobOptions::default()).await.unwrap_err();
        assert!(
            e.message.contains("crashed 5 times in the last minute"),
            "{e}"
        );
        assert!(
            e.message.contains("exited with code 3"),
            "the last exit is named: {e}"
        );
        assert!(
            refused_at.elapsed() < Duration::from_millis(100),
            "no spawn, no wait"
        );
        assert_eq!(sql_status(&w).crashes, 5);
        w.shutdown().await;
    }

    #[tokio::test]
    async fn jobs_after_shutdown_fail_cleanly() {
        let w = fake("exit 0");
        w.shutdown().await;
        let e = w.run(Job::Ping, JobOptions::default()).await.unwrap_err();
        assert!(e.message.contains("shutting down"), "{e}");
    }
}
