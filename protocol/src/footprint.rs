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
    fn reads_own_process() {
        let f = of_self().expect("linux /proc");
        assert!(f.rss_anon_kib > 0);
        assert!(f.hwm_kib >= f.rss_anon_kib);
    }
}
