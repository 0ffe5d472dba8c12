//! A child process spoken to over its stdin and stdout: how the tests and benches start
//! `pond mcp` for rmcp's client, whose transport a `(stdout, stdin)` pair is. (rmcp's own
//! child-process transport would pull in features of crates Lance shares, and a bench
//! after a release build would recompile Lance for them.)

use std::process::Stdio;

use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// A started child: its handle (killed when dropped), its pid, and its stdio for a transport.
pub struct Spawned {
    pub child: Child,
    pub pid: u32,
    pub io: (ChildStdout, ChildStdin),
}

/// Start `cmd` with piped stdin and stdout and stderr passed through.
pub fn spawn(mut cmd: Command) -> std::io::Result<Spawned> {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = cmd.spawn()?;
    let pid = child
        .id()
        .ok_or_else(|| std::io::Error::other("the child exited at once"))?;
    let stdout = child.stdout.take().expect("piped stdout");
    let stdin = child.stdin.take().expect("piped stdin");
    Ok(Spawned {
        child,
        pid,
        io: (stdout, stdin),
    })
}
