//! `pond serve`: one resident front per store, shared by every MCP client of the machine
//! over a Unix domain socket. Each connection is one MCP session with the same [`Front`]:
//! one set of Lance caches, one actor per worker kind, one background sync.
//!
//! One server per store: the server holds an exclusive lock on `<socket>.lock` (with its pid
//! in it) for as long as it runs, so a second one refuses and names the first, and a socket
//! file left by a server that died (its lock released by the kernel) is replaced. The
//! server exits when no client has been connected for the idle time, or on SIGTERM/SIGINT,
//! with the same clean shutdown as the stdio front; it removes its socket and lock file.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use tokio::net::UnixListener;

use super::PondServer;
use crate::{AutoSync, Front};

/// How a server runs.
pub struct ServeOptions {
    pub socket: PathBuf,
    /// Exit after this long with no client connected.
    pub idle_exit: Duration,
    pub auto_sync: Option<AutoSync>,
}

/// Where the server of the store at `root` listens: `$XDG_RUNTIME_DIR/pond/<hash>.sock`,
/// else `<store>/serve.sock`, else (a path too long for a socket) `/tmp/pond-<uid>/`.
pub fn socket_path(root: &Path) -> PathBuf {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let name = format!("{:016x}.sock", fnv1a(root.as_os_str().as_encoded_bytes()));
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("pond").join(name);
    }
    let beside = root.join("serve.sock");
    // sun_path holds 108 bytes with its terminating NUL.
    if beside.as_os_str().len() < 100 {
        return beside;
    }
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").map_or(0, |m| m.uid());
    PathBuf::from(format!("/tmp/pond-{uid}")).join(name)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The lock file beside a socket: held by its server while it runs, holding its pid.
pub fn lock_path(socket: &Path) -> PathBuf {
    with_suffix(socket, ".lock")
}

pub fn with_suffix(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The pid of the server running at `socket`, if one runs (its lock is held).
pub fn running(socket: &Path) -> Option<u32> {
    let mut f = std::fs::File::open(lock_path(socket)).ok()?;
    match f.try_lock_shared() {
        // Nobody holds it: no server.
        Ok(()) => None,
        Err(_) => {
            let mut pid = String::new();
            f.read_to_string(&mut pid).ok()?;
            pid.trim().parse().ok()
        }
    }
}

/// The folder of sockets: created owner-only.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// The server's hold on its socket: the locked file, removed (with the socket) on drop.
struct Held {
    socket: PathBuf,
    lock: std::fs::File,
}

impl Held {
    fn take(socket: &Path) -> Result<Held, String> {
        let dir = socket.parent().unwrap_or(Path::new("."));
        private_dir(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let path = lock_path(socket);
        let mut lock = std::fs::OpenOptions::new()
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

impl Drop for Held {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_file(lock_path(&self.socket));
        let _ = std::fs::remove_file(with_suffix(&self.socket, ".start"));
        let _ = self.lock.unlock();
    }
}

/// Serve every client that connects to `opts.socket` until idle or signalled.
pub async fn serve(front: Front, opts: ServeOptions) -> Result<(), String> {
    use tokio::signal::unix::{signal, SignalKind};

    let held = Held::take(&opts.socket)?;
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
    let clients = Arc::new(AtomicUsize::new(0));
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut idle_since = Some(Instant::now());
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                clients.fetch_add(1, Ordering::SeqCst);
                idle_since = None;
                let (clients, stopped, server) =
                    (clients.clone(), stopped.clone(), PondServer { front: front.clone() });
                tokio::spawn(async move {
                    session(server, stream, stopped).await;
                    clients.fetch_sub(1, Ordering::SeqCst);
                });
            }
            _ = tick.tick() => {
                let now = clients.load(Ordering::SeqCst);
                match (now, idle_since) {
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
    runner.shutdown().await;
    drop(held);
    Ok(())
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
