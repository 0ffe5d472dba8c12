//! A worker process seen from the front: started, handshaken, stopped, killed and reaped;
//! its stderr forwarded. The worker's own side of the handshake and its job loop are
//! `pond-workers`' `process` module.

use std::collections::VecDeque;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};

use ipc_channel::ipc::{IpcOneShotServer, IpcSender};
use pond_protocol::{ErrorKind, FromWorker, JobError, ToWorker, WorkerKind, PROTOCOL_VERSION};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use super::*;

/// A running worker process.
pub(super) struct Live {
    pub(super) child: Child,
    pub(super) pid: u32,
    pub(super) jobs: IpcSender<ToWorker>,
    /// Messages from the worker; closed when the worker's end closes (it exited or died).
    pub(super) events: mpsc::Receiver<FromWorker>,
    pub(super) stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

impl Live {
    /// Wait for the (dying or dead) child and describe how it ended.
    pub(super) async fn reap(mut self) -> String {
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

    pub(super) async fn kill(mut self) -> String {
        let _ = self.child.start_kill();
        self.reap().await
    }

    /// Ask the worker to exit; kill it if it has not within the grace time.
    pub(super) async fn stop(mut self) {
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
/// How much a worker yields the CPU to the front's searches (its nice value): work no one
/// waits on at the keyboard (a sync, an index job, a backfill) the most, a SQL query (which
/// may scan millions of rows) some, a query's embedding not at all. Only under contention
/// does it change anything.
pub(super) fn niceness(kind: WorkerKind, slot: usize) -> i32 {
    match kind {
        WorkerKind::Sql => 5,
        WorkerKind::Sync | WorkerKind::Index => 10,
        WorkerKind::Embed if runs_backfills(kind, slot) => 10,
        WorkerKind::Embed => 0,
    }
}

pub(super) async fn spawn(
    config: &WorkersConfig,
    kind: WorkerKind,
    slot: usize,
) -> Result<Live, JobError> {
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
    let nice = niceness(kind, slot);
    // SAFETY: between fork and exec only a system call runs; the threads the worker starts
    // inherit its nice value.
    unsafe {
        cmd.pre_exec(move || {
            nix::libc::setpriority(nix::libc::PRIO_PROCESS as _, 0, nice);
            Ok(())
        });
    }
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
