//! One kind's actor: owns its worker process and runs its jobs one at a time.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pond_protocol::footprint;
use pond_protocol::{ErrorKind, FromWorker, Job, JobError, Output, ToWorker, WorkerKind};
use tokio::sync::mpsc;

use super::process::{spawn, Live};
use super::*;

pub(super) struct Actor {
    pub(super) kind: WorkerKind,
    pub(super) config: Arc<WorkersConfig>,
    pub(super) live: Option<Live>,
    pub(super) crashes: VecDeque<Instant>,
    pub(super) status: Arc<Mutex<WorkerStatus>>,
    pub(super) next_id: u64,
    pub(super) last_used: Instant,
    pub(super) stopping: tokio::sync::watch::Receiver<bool>,
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

    pub(super) async fn main(mut self, mut rx: mpsc::Receiver<Request>) {
        loop {
            // An idle time past what an Instant can hold is no deadline.
            let idle_deadline = (self.live.is_some() && !self.kind.one_shot())
                .then(|| self.last_used.checked_add(self.config.idle_exit))
                .flatten();
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
        let slot = self.status.lock().expect("status lock").slot;
        match spawn(&self.config, self.kind, slot).await {
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
