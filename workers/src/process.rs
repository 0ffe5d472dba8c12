//! The worker side of a worker process: `pond worker <kind>` lands here.
//!
//! The worker dies with its front: it asks the kernel for SIGKILL when its parent dies
//! (`PR_SET_PDEATHSIG`), checks the parent did not die before that request, and exits when
//! the front's end of its job channel closes. It connects to the front's one-shot server,
//! sends the [`Hello`] handshake, then runs jobs one at a time until told to exit.

use std::path::Path;

use ipc_channel::ipc::{self, IpcSender};
use pond_protocol::{
    ErrorKind, FromWorker, Hello, Job, JobError, ToWorker, WorkerKind, PROTOCOL_VERSION,
};
use pond_store::{Store, StoreConfig};

/// Where the worker was asked to connect, and who its parent is.
pub struct WorkerArgs {
    pub kind: WorkerKind,
    /// The name of the front's one-shot server.
    pub ipc: String,
    /// The front's pid: if it is not our parent any more, the front is gone.
    pub parent: u32,
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
        let progress_to = to_front.clone();
        let mut progress = move |progress| {
            let _ = progress_to.send(FromWorker::Progress { id, progress });
        };
        let outcome = runtime.block_on(jobs.execute(job, &mut progress));
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
