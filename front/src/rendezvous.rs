//! Where a store's resident server is found (the socket, lock and state file of
//! `pond_bridge_lib::rendezvous`, shared with the bridge and re-exported here), and what
//! `pond status` reads of a running server ([`server_of`]), which needs the front's
//! libraries.

use std::path::Path;

pub use pond_bridge_lib::rendezvous::*;

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
        http_token: None,
        footprint_kib: 0,
        uptime_s: 0,
    });
    s.footprint_kib = pond_protocol::footprint::of_pid(pid).map_or(0, |f| f.footprint_kib());
    if s.started_ms > 0 {
        s.uptime_s = ((chrono::Utc::now().timestamp_millis() - s.started_ms).max(0) / 1000) as u64;
    }
    Some(s)
}
