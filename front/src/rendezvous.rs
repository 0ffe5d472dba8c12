//! Where a store's resident server is found: its socket, the lock that says it runs (with
//! its pid), and the state file it keeps for `pond status` (pid, start, clients). No
//! dependency on the server itself, so the status and the bridge can read them.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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
    /// Read from /proc when the state is read ([`server_of`]), not stored.
    #[serde(default)]
    pub footprint_kib: u64,
    #[serde(default)]
    pub uptime_s: u64,
}

pub fn state_path(socket: &Path) -> PathBuf {
    with_suffix(socket, ".state")
}

/// The running server of the store at `root`, if there is one.
pub fn server_of(root: &Path) -> Option<ServerState> {
    let socket = socket_path(root);
    let pid = running(&socket)?;
    let text = std::fs::read_to_string(state_path(&socket)).ok();
    let state = text.and_then(|t| serde_json::from_str::<ServerState>(&t).ok());
    let mut s = state.filter(|s| s.pid == pid).unwrap_or(ServerState {
        pid,
        socket,
        started_ms: 0,
        clients: 0,
        http: None,
        footprint_kib: 0,
        uptime_s: 0,
    });
    s.footprint_kib = pond_protocol::footprint::of_pid(pid).map_or(0, |f| f.footprint_kib());
    if s.started_ms > 0 {
        s.uptime_s = ((chrono::Utc::now().timestamp_millis() - s.started_ms).max(0) / 1000) as u64;
    }
    Some(s)
}
