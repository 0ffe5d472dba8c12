//! The worker side of a worker process: `pond worker <kind>` lands here.
//!
//! The worker dies with its front: it asks the kernel for SIGKILL when its parent dies
//! (`PR_SET_PDEATHSIG`), checks the parent did not die before that request, and exits when
//! the front's end of its job channel closes. It connects to the front's one-shot server,
//! sends the [`Hello`] handshake, then runs jobs one at a time until told to exit.

use std::path::Path;
use std::time::{Duration, Instant};

use ipc_channel::ipc::{self, IpcSender};
use pond_protocol::{
    ErrorKind, FromWorker, Hello, Job, JobError, ToWorker, WorkerKind, PROTOCOL_VERSION,
};
use pond_store::{Store, StoreConfig};

/// How often a job's progress is sent to the front at most: a sync reports every file it
/// looks at, one IPC message each (55k for a sync of a 1M store that found nothing new).
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// Keeps one of a run of progress reports per period; the last is always kept.
struct Throttle<T> {
    every: Duration,
    sent: Option<Instant>,
    held: Option<T>,
}

impl<T> Throttle<T> {
    fn new(every: Duration) -> Self {
        Throttle {
            every,
            sent: None,
            held: None,
        }
    }

    /// `p`, to send now (the first, or the first a period after the last sent), or `None`:
    /// held until the next offer or [`Throttle::rest`].
    fn offer(&mut self, p: T, now: Instant) -> Option<T> {
        if self
            .sent
            .is_some_and(|t| now.duration_since(t) < self.every)
        {
            self.held = Some(p);
            return None;
        }
        self.sent = Some(now);
        self.held = None;
        Some(p)
    }

    /// The last report offered, if it was held back: sent when the job ends.
    fn rest(&mut self) -> Option<T> {
        self.held.take()
    }
}

/// Where the worker was asked to connect, and who its parent is.
pub struct WorkerArgs {
    pub kind: WorkerKind,
    /// The name of the front's one-shot server.
    pub ipc: String,
    /// The front's pid: if it is not our parent any more, the front is gone.
    pub parent: u32,
}

/// Cap glibc's malloc arenas (by default up to 8 per core, each keeping what its threads
/// freed) at two, in every process. A serving front lives for days and answers on every
/// thread at once: the memory of one client's query is reused by the next instead of kept
/// once per thread. A sync worker writes and indexes on Lance's CPU pool and tokio's
/// threads: with one arena each its peak grew with the pool (a 200k-message sync, three
/// pool threads: 776-879 MiB, capped 464 MiB, as fast). `POND_MALLOC_ARENAS` sets another
/// cap (0: glibc's default), to measure it (`multi_client_bench --malloc-arenas`).
/// Call it before any thread but the caller's exists.
pub fn few_arenas() {
    let cap = std::env::var("POND_MALLOC_ARENAS")
        .ok()
        .and_then(|v| v.parse::<i32>().ok())
        .unwrap_or(2);
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if cap > 0 {
        // SAFETY: mallopt only sets a parameter; the caller runs before any other thread.
        unsafe {
            nix::libc::mallopt(nix::libc::M_ARENA_MAX, cap);
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = cap;
}

/// Tie this process's life to its parent's (Linux; elsewhere the IPC EOF does it alone).
fn die_with_parent(parent: u32) -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
            .map_err(|e| format!("PR_SET_PDEATHSIG: {e}"))?;
    }
    // The parent may have died between our fork and the request above.
    if std::os::unix::process::parent_id() != parent {
        return Err("the front process is gone".into());
    }
    Ok(())
}

/// Serve jobs until the front says exit or goes away. Returns why the worker stopped early,
/// if it did.
pub fn serve(store_root: &Path, config: StoreConfig, args: WorkerArgs) -> Result<(), String> {
    die_with_parent(args.parent)?;
    let to_front = IpcSender::<FromWorker>::connect(args.ipc)
        .map_err(|e| format!("cannot connect to the front: {e}"))?;
    let (jobs, job_rx) = ipc::channel::<ToWorker>().map_err(|e| e.to_string())?;
    to_front
        .send(FromWorker::Hello(Hello {
            version: PROTOCOL_VERSION,
            kind: args.kind,
            pid: std::process::id(),
            jobs,
        }))
        .map_err(|e| format!("handshake: {e}"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let store = Store::open(store_root, config).map_err(|e| e.to_string())?;
    let jobs = crate::jobs::Jobs::new(std::sync::Arc::new(store));
    let result = loop {
        let (id, job) = match job_rx.recv() {
            Ok(ToWorker::Run { id, job }) => (id, job),
            // Told to exit, or the front is gone: either way, done.
            Ok(ToWorker::Exit) | Err(_) => break Ok(()),
        };
        if job.kind() != args.kind && job != Job::Ping {
            let refused = JobError::new(
                ErrorKind::Internal,
                format!("a {} worker cannot run a {} job", args.kind, job.kind()),
            );
            let _ = to_front.send(FromWorker::Done {
                id,
                outcome: Err(refused),
            });
            continue;
        }
        let mut throttle = Throttle::new(PROGRESS_EVERY);
        let (held, progress_to) = (&mut throttle, to_front.clone());
        let mut progress = move |p| {
            if let Some(progress) = held.offer(p, Instant::now()) {
                let _ = progress_to.send(FromWorker::Progress { id, progress });
            }
        };
        let outcome = runtime.block_on(jobs.execute(job, &mut progress));
        if let Some(progress) = throttle.rest() {
            let _ = to_front.send(FromWorker::Progress { id, progress });
        }
        // A timed-out query may still hold a thread computing a plan that never yields:
        // this process cannot get it back, so it answers and exits (the front starts a
        // fresh worker for the next job).
        let poisoned = matches!(&outcome, Err(e) if e.kind == ErrorKind::Timeout);
        if to_front.send(FromWorker::Done { id, outcome }).is_err() || poisoned {
            break Ok(());
        }
    };
    runtime.shutdown_background();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reports closer than the period are held; the last one is never lost.
    #[test]
    fn throttled_progress_keeps_the_first_and_the_last() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut t = Throttle::new(Duration::from_millis(100));
        let sent: Vec<u32> = [(1, 0), (2, 10), (3, 50), (4, 120), (5, 130), (6, 150)]
            .into_iter()
            .filter_map(|(p, at)| t.offer(p, ms(at)))
            .collect();
        assert_eq!(sent, [1, 4]);
        assert_eq!(t.rest(), Some(6));
        assert_eq!(t.rest(), None);
        // Nothing held after a report that was sent.
        assert_eq!(t.offer(7, ms(300)), Some(7));
        assert_eq!(t.rest(), None);
    }
}
