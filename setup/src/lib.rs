//! What `pond install`, `pond uninstall` and `pond init` do, without the store: pond
//! registered where each MCP client reads its servers ([`install`]: the config files
//! edited in place, the agent skill), through `claude mcp` for Claude Code when that
//! command is there ([`claude`]), and init's steps ([`init`]: the clients found, each
//! registered, Claude Code's cleanup, the config file). The binary parses the arguments,
//! asks the questions and prints what is done.

pub mod claude;
pub mod init;
pub mod install;

use std::path::{Path, PathBuf};

pub use install::{Change, Client, Installed, SKILL};

/// The home folder clients live under, and the pond executable a client should start.
pub fn context() -> Result<(PathBuf, String), String> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .ok_or("HOME is not set: cannot tell where the clients keep their settings")?;
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|e| format!("cannot find the pond executable: {e}"))?;
    Ok((home, exe.display().to_string()))
}

/// Add (or remove) pond's entry for `client`: through `claude mcp` for Claude Code when
/// that command exists, else in the client's file.
pub fn register(
    client: Client,
    home: &Path,
    exe: &str,
    add: bool,
    dry_run: bool,
) -> Result<Installed, String> {
    claude::registered(client, home, exe, dry_run, add).unwrap_or_else(|| {
        if add {
            install::install(client, home, exe, dry_run)
        } else {
            install::uninstall(client, home, dry_run)
        }
    })
}
