//! A process's memory as pond's targets state it (Linux `/proc`).
//!
//! Footprint = `RssAnon + VmSwap`: anonymous memory resident or swapped. File-backed pages
//! (the binary, mapped files, page cache) do not count. `VmHWM` is the peak resident set.

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Footprint {
    pub rss_anon_kib: u64,
    pub swap_kib: u64,
    pub hwm_kib: u64,
}

impl Footprint {
    pub fn footprint_kib(&self) -> u64 {
        self.rss_anon_kib + self.swap_kib
    }
}

/// Parse the text of `/proc/<pid>/status`.
pub fn parse_status(status: &str) -> Footprint {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Footprint {
        rss_anon_kib: field("RssAnon:"),
        swap_kib: field("VmSwap:"),
        hwm_kib: field("VmHWM:"),
    }
}

/// The footprint of a process; `None` where `/proc` does not have it (gone, not Linux).
pub fn of_pid(pid: u32) -> Option<Footprint> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .map(|s| parse_status(&s))
}

pub fn of_self() -> Option<Footprint> {
    of_pid(std::process::id())
}

/// Whether `pid` runs: it exists and is not a zombie (exited, not yet reaped by its parent).
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            let state = s[s.rfind(')').map_or(0, |i| i + 1)..].trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        })
        .unwrap_or(false)
}

/// The pids whose parent is `pid` (zombies included: a child not yet reaped is listed).
pub fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(child) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // The fields after the command name, which is in parentheses and may hold spaces.
        let rest = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
        if rest.split_whitespace().nth(1).and_then(|p| p.parse().ok()) == Some(pid) {
            out.push(child);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_status() {
        let s = "Name:\tpond\nVmHWM:\t  2048 kB\nRssAnon:\t  1000 kB\nVmSwap:\t 24 kB\n";
        let f = parse_status(s);
        assert_eq!(f.footprint_kib(), 1024);
        assert_eq!(f.hwm_kib, 2048);
    }

    #[test]
    fn lists_own_children() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        assert!(children(std::process::id()).contains(&child.id()));
        assert!(running(child.id()));
        child.kill().unwrap();
        // Killed but not yet reaped: a zombie, which does not run.
        let gone = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while running(child.id()) && std::time::Instant::now() < gone {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!running(child.id()));
        child.wait().unwrap();
        assert!(!children(std::process::id()).contains(&child.id()));
    }

    #[test]
    fn reads_own_process() {
        let f = of_self().expect("linux /proc");
        assert!(f.rss_anon_kib > 0);
        assert!(f.hwm_kib >= f.rss_anon_kib);
    }
}
