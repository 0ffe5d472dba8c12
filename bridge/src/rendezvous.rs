//! Where a store's resident server is found: its socket, the lock that says it runs (with
//! its pid), and the state file it keeps for `pond status` (pid, start, clients). No
//! dependency on the server itself, so the status and the bridge can read them.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where the server of the store at `root` listens: `$XDG_RUNTIME_DIR/pond/<hash>.sock`,
/// else `<store>/serve.sock`, else (a path too long for a socket) `/tmp/pond-<uid>/`.
pub fn socket_path(root: &Path) -> PathBuf {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let name = socket_name(&root);
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("pond").join(name);
    }
    let beside = root.join("serve.sock");
    // sun_path holds 108 bytes with its terminating NUL.
    if beside.as_os_str().len() < 100 {
        return beside;
    }
    let uid = nix::unistd::geteuid();
    PathBuf::from(format!("/tmp/pond-{uid}")).join(name)
}

/// The socket's file name in a shared folder: a hash of the store's canonical path.
pub fn socket_name(canonical_root: &Path) -> String {
    format!(
        "{:016x}.sock",
        fnv1a(canonical_root.as_os_str().as_encoded_bytes())
    )
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

/// Make sure `dir` is a folder no other user can put a socket in: created owner-only (0700)
/// when missing, its parents as the umask makes them; a folder that exists already is never
/// changed (pond chmods no folder it did not create) and must be a real folder, not a link,
/// owned by this user and writable by nobody else, or it is refused: another user could
/// otherwise have made it, or could place a socket there that a bridge would trust.
pub fn private_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
    }
    let meta = std::fs::symlink_metadata(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let refuse = |why: String| {
        Err(format!(
            "{} {why}; pond keeps its socket only in a folder that is yours alone \
             (choose another --socket or --store, or fix the folder)",
            dir.display()
        ))
    };
    if meta.file_type().is_symlink() {
        return refuse("is a symbolic link".into());
    }
    if !meta.is_dir() {
        return refuse("is not a folder".into());
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return refuse(format!(
            "belongs to uid {}, not to you (uid {me})",
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return refuse(format!(
            "can be written by other users (mode {:o})",
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

/// A folder where the socket should be would make every bridge wait for a server that
/// cannot listen: said at once, by the server and by the bridge.
pub fn refuse_folder(socket: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(socket) {
        Ok(m) if m.is_dir() => Err(format!(
            "{} is a folder, where pond's socket should be; remove it",
            socket.display()
        )),
        _ => Ok(()),
    }
}

/// The pid of the process at the other end of a connected Unix socket, if it runs as this
/// user (`SO_PEERCRED`), else why not: the bridge asks it of the server before sending a
/// byte, the server of each client before serving it.
pub fn peer_is_me(stream: &impl std::os::fd::AsFd) -> Result<i32, String> {
    let cred = nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials)
        .map_err(|e| format!("cannot read the peer's credentials: {e}"))?;
    let me = nix::unistd::geteuid().as_raw();
    if cred.uid() != me {
        return Err(format!(
            "the process at the other end (pid {}) runs as uid {}, not as you (uid {me})",
            cred.pid(),
            cred.uid()
        ));
    }
    Ok(cred.pid())
}

/// What a running server says of itself in `<socket>.state`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerState {
    pub pid: u32,
    pub socket: PathBuf,
    /// Unix ms.
    pub started_ms: i64,
    pub clients: u64,
    /// The streamable HTTP URL, when the server serves one.
    #[serde(default)]
    pub http: Option<String>,
    /// The bearer token its HTTP requests must carry. The state file is the owner's alone
    /// (0600), so whoever reads it may see the token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_token: Option<String>,
    /// Read from /proc when the state is read (`pond_front::rendezvous::server_of`), not
    /// stored.
    #[serde(default)]
    pub footprint_kib: u64,
    #[serde(default)]
    pub uptime_s: u64,
}

pub fn state_path(socket: &Path) -> PathBuf {
    with_suffix(socket, ".state")
}
