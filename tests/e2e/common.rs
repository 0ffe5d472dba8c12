//! Helpers: run the binary, copy fixtures, read JSON output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn pond_bin() -> &'static str {
    env!("CARGO_BIN_EXE_pond")
}

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The fixtures of the clients added through the source registry, one home per client.
pub fn clients() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Env {
        Env {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn store(&self) -> PathBuf {
        self.dir.path().join("store")
    }

    /// A copy of the fixtures tree, safe to modify.
    pub fn sources(&self) -> PathBuf {
        let dst = self.dir.path().join("sources");
        if !dst.exists() {
            copy_dir(&fixtures(), &dst);
        }
        dst
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(pond_bin());
        c.arg("--store").arg(self.store()).args(args);
        // Keep the user's real homes out of every test.
        c.env("HOME", self.dir.path());
        for source in pond_ingest::SOURCES {
            c.env_remove(source.home_var);
        }
        c.env_remove("POND_STORE")
            .env_remove("POND_CONFIG")
            .env_remove("XDG_CONFIG_HOME")
            // Logs at their default level unless a test asks for more.
            .env_remove("RUST_LOG")
            .env_remove("POND_LOG")
            // Tests that want `pond mcp` to sync in the background ask for it.
            .env("POND_AUTO_SYNC_MINS", "0")
            // `pond mcp` serves in its own process unless a test asks for the shared server.
            .env("POND_STANDALONE", "true")
            // Times are shown in UTC unless a test names another zone.
            .env("TZ", "UTC");
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, &[])
    }

    /// Run with extra environment variables.
    pub fn run_with(&self, args: &[&str], vars: &[(&str, &str)]) -> Output {
        self.cmd(args)
            .envs(vars.iter().copied())
            .output()
            .expect("run pond")
    }

    /// Run and require success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_with(args, &[])
    }

    /// [`Env::ok`] with extra environment variables.
    pub fn ok_with(&self, args: &[&str], vars: &[(&str, &str)]) -> String {
        let out = self.run_with(args, vars);
        assert!(
            out.status.success(),
            "pond {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stdout).expect("utf-8 output")
    }

    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        self.json_with(args, &[])
    }

    /// [`Env::json`] with extra environment variables.
    pub fn json_with(&self, args: &[&str], vars: &[(&str, &str)]) -> serde_json::Value {
        let s = self.ok_with(args, vars);
        serde_json::from_str(&s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
    }

    /// Run and require failure; returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        self.fails_with(args, &[])
    }

    /// [`Env::fails`] with extra environment variables.
    pub fn fails_with(&self, args: &[&str], vars: &[(&str, &str)]) -> String {
        let out = self.run_with(args, vars);
        assert!(!out.status.success(), "pond {args:?} should fail");
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    pub fn sync(&self, path: &Path) -> serde_json::Value {
        self.sync_with(path, &[])
    }

    /// Sync `path` with more arguments; the report.
    pub fn sync_with(&self, path: &Path, args: &[&str]) -> serde_json::Value {
        let mut all = vec!["sync", "--path", path.to_str().unwrap(), "--json"];
        all.extend(args);
        self.json(&all)
    }

    /// Start `pond args`, SIGKILL it after `delay`, reap it.
    pub fn kill_after(&self, args: &[&str], delay: std::time::Duration) {
        let mut child = self
            .cmd(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let _ = child.kill();
        child.wait().unwrap();
    }

    /// Sync one new message (id `zz`, in a new session `s9`, text mentioning a quokka).
    pub fn sync_one_more_message(&self) {
        let more = self.dir.path().join("more");
        std::fs::create_dir_all(&more).unwrap();
        std::fs::write(
            more.join("s9.jsonl"),
            r#"{"type":"user","uuid":"zz","sessionId":"s9","timestamp":"2026-03-03T00:00:00Z","cwd":"/x","message":{"role":"user","content":"hello there, the quokka parser"}}
"#,
        )
        .unwrap();
        let path = more.to_str().unwrap();
        self.ok(&["sync", "--path", path, "--source", "claude-code"]);
    }

    pub fn sql_json(&self, q: &str) -> serde_json::Value {
        self.json(&["sql", q, "--format", "json"])
    }

    pub fn count(&self, table: &str) -> i64 {
        let v = self.sql_json(&format!("SELECT count(*) AS n FROM {table}"));
        v[0]["n"].as_i64().expect("count")
    }
}

pub fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap().flatten() {
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

pub use pond_protocol::footprint::{children, running};

/// Whether a process exists at all (a zombie counts: it has not been reaped).
pub fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Wait until `f` holds, up to `secs` seconds.
pub fn wait_for(secs: f64, mut f: impl FnMut() -> bool) -> bool {
    let until = std::time::Instant::now() + std::time::Duration::from_secs_f64(secs);
    while std::time::Instant::now() < until {
        if f() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    f()
}

/// A process's footprint (RssAnon + VmSwap), KiB; 0 once it is gone.
pub fn footprint_kib(pid: u32) -> u64 {
    pond_protocol::footprint::of_pid(pid).map_or(0, |f| f.footprint_kib())
}

/// Send `sig` to `pid`.
pub fn signal(pid: u32, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), sig).expect("kill");
}

/// Every file under `dir` with its bytes, by path.
pub fn files_under(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                out.insert(p, bytes);
            }
        }
    }
    out
}
