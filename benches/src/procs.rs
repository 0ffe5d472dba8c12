//! The processes of this machine as `/proc` shows them: what benches and tests use to find
//! pond's servers, fronts, bridges and workers by their command lines.

/// Every process's pid and command line (its arguments), skipping those that exited while
/// being read.
pub fn all() -> Vec<(u32, Vec<String>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        if cmdline.is_empty() {
            continue;
        }
        let args = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        out.push((pid, args));
    }
    out
}

/// Whether the process is a zombie (exited, not yet reaped: it holds no memory or socket).
pub fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "))
}
