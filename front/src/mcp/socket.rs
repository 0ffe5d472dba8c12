//! `pond serve`: one resident front per store, shared by every MCP client of the machine
//! over a Unix domain socket. Each connection is one MCP session with the same [`Front`]:
//! one set of Lance caches, one set of worker actors, one background sync; with `--http`,
//! the sessions of HTTP clients too ([`super::http`]).
//!
//! One server per store: the server holds an exclusive lock on `<socket>.lock` (with its pid
//! in it) for as long as it runs, so a second one refuses and names the first, and a socket
//! file left by a server that died (its lock released by the kernel) is replaced. The
//! server exits when no client has been connected for the idle time, or on SIGTERM/SIGINT,
//! with the same clean shutdown as the stdio front; it removes its socket and lock file.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use tokio::net::UnixListener;

use super::http::{self, HttpOptions};
use super::PondServer;
use crate::rendezvous::{lock_path, private_dir, refuse_folder, running, with_suffix};
use crate::{AutoSync, Front};

/// How a server runs.
pub struct ServeOptions {
    pub socket: PathBuf,
    /// Exit after this long with no client connected.
    pub idle_exit: Duration,
    pub auto_sync: Option<AutoSync>,
    /// Serve streamable HTTP as well.
    pub http: Option<HttpOptions>,
}

/// The server's hold on its socket: the locked file, removed (with the socket) on drop.
struct Held {
    socket: PathBuf,
    lock: std::fs::File,
}

impl Held {
    fn take(socket: &Path) -> Result<Held, String> {
        let dir = socket.parent().unwrap_or(Path::new("."));
        private_dir(dir)?;
        refuse_folder(socket)?;
        let path = lock_path(socket);
        let mut lock = loop {
            let lock = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
            if lock.try_lock().is_err() {
                let pid = running(socket).map_or("?".into(), |p| p.to_string());
                return Err(format!(
                    "a pond server already runs for this store (pid {pid}, socket {}); `pond mcp` attaches to it",
                    socket.display()
                ));
            }
            // A server that exits removes the lock file before it lets go of it: a lock
            // taken on the file it removed is no lock (another server may hold the new
            // file at that path), so the lock counts only while the path is still its file.
            if same_file(&lock, &path) {
                break lock;
            }
        };
        lock.set_len(0).map_err(|e| e.to_string())?;
        write!(lock, "{}", std::process::id()).map_err(|e| e.to_string())?;
        // The lock is ours: a socket file there is a dead server's.
        let _ = std::fs::remove_file(socket);
        Ok(Held {
            socket: socket.to_path_buf(),
            lock,
        })
    }
}

/// Whether `path` still names the open `file`.
fn same_file(file: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_file(lock_path(&self.socket));
        let _ = std::fs::remove_file(with_suffix(&self.socket, ".start"));
        let _ = std::fs::remove_file(crate::rendezvous::state_path(&self.socket));
        let _ = self.lock.unlock();
    }
}

/// Serve every client that connects to `opts.socket` until idle or signalled.
pub async fn serve(front: Front, opts: ServeOptions) -> Result<(), String> {
    use tokio::signal::unix::{signal, SignalKind};

    let held = Held::take(&opts.socket)?;
    let http_listener = match &opts.http {
        Some(o) => Some(http::bind(o).await?),
        None => None,
    };
    let listener = UnixListener::bind(&opts.socket)
        .map_err(|e| format!("cannot listen on {}: {e}", opts.socket.display()))?;
    std::fs::set_permissions(&opts.socket, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| e.to_string())?;
    tracing::info!(socket = %opts.socket.display(), pid = std::process::id(), "pond server listening");
    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    let runner = front.runner().clone();
    if let Some(auto) = opts.auto_sync {
        tokio::spawn(front.clone().auto_sync(auto));
    }
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let (mut url, mut http_token) = (None, None);
    let http_task = http_listener.map(|listener| {
        (url, http_token) = (listener.url(), Some(listener.token().to_owned()));
        tokio::spawn(http::serve(front.clone(), listener, stopped.clone()))
    });
    let state = StateFile {
        socket: opts.socket.clone(),
        started_ms: chrono::Utc::now().timestamp_millis(),
        http: url,
        http_token,
    };
    state.write(&front);
    let mut idle_since = Some(Instant::now());
    let mut shown_clients = front.clients().count();
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    tokio::time::sleep(http::ACCEPT_BACKOFF).await;
                    continue;
                };
                // Only this user's processes are served (the socket is 0600; root could
                // still connect). The peer is the process at the other end: one agent's
                // bridge, however many sessions it opens.
                let pid = match crate::rendezvous::peer_is_me(&stream) {
                    Ok(pid) => pid,
                    Err(e) => {
                        tracing::warn!("refused a connection: {e}");
                        continue;
                    }
                };
                idle_since = None;
                let server = PondServer::new(front.clone(), "unix", &format!("unix pid {pid}"));
                state.write(&front);
                let (stopped, state) = (stopped.clone(), state.clone());
                let front = front.clone();
                tokio::spawn(async move {
                    // The session's server (and so its place among the clients) is dropped
                    // when the session ends.
                    session(server, stream, stopped).await;
                    state.write(&front);
                });
            }
            _ = tick.tick() => {
                let clients = front.clients().count();
                // HTTP sessions come and go without a socket connection: the state file's
                // count follows them here.
                if clients != shown_clients {
                    shown_clients = clients;
                    state.write(&front);
                }
                match (clients, idle_since) {
                    (0, None) => idle_since = Some(Instant::now()),
                    (0, Some(t)) if t.elapsed() >= opts.idle_exit => {
                        tracing::info!("no client for {:?}: exiting", opts.idle_exit);
                        break;
                    }
                    (n, _) if n > 0 => idle_since = None,
                    _ => {}
                }
            }
            _ = term.recv() => break,
            _ = int.recv() => break,
        }
    }
    drop(listener);
    let _ = stop.send(true);
    if let Some(task) = http_task {
        let _ = task.await;
    }
    runner.shutdown().await;
    drop(held);
    Ok(())
}

/// `<socket>.state`: the server's pid, start and client count, for `pond status`.
#[derive(Clone)]
struct StateFile {
    socket: PathBuf,
    started_ms: i64,
    /// The HTTP transport's URL, if it serves one.
    http: Option<String>,
    /// The token its requests must carry: the file is the owner's alone.
    http_token: Option<String>,
}

impl StateFile {
    fn write(&self, front: &Front) {
        let state = crate::rendezvous::ServerState {
            pid: std::process::id(),
            socket: self.socket.clone(),
            started_ms: self.started_ms,
            clients: front.clients().count() as u64,
            http: self.http.clone(),
            http_token: self.http_token.clone(),
            footprint_kib: 0,
            uptime_s: 0,
        };
        let path = crate::rendezvous::state_path(&self.socket);
        let tmp = with_suffix(&path, ".tmp");
        let json = serde_json::to_vec(&state).expect("the state serializes");
        let _ = std::fs::remove_file(&tmp);
        // Created owner-only: it holds the HTTP token.
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| f.write_all(&json));
        if written.and_then(|()| std::fs::rename(&tmp, &path)).is_err() {
            tracing::warn!(path = %path.display(), "cannot write the server's state file");
        }
    }
}

/// One client's MCP session on the shared front.
async fn session(
    server: PondServer,
    stream: tokio::net::UnixStream,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) {
    let (read, write) = stream.into_split();
    let running = tokio::select! {
        r = server.serve((read, write)) => r,
        _ = stopped.changed() => return,
    };
    let Ok(running) = running else {
        return;
    };
    let token = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    tokio::select! {
        _ = &mut waiting => {}
        _ = stopped.changed() => token.cancel(),
    }
}
