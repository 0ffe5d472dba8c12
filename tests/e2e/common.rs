//! Helpers: run the binary, copy fixtures, read JSON output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn pond_bin() -> &'static str {
    env!("CARGO_BIN_EXE_pond")
}

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
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
        c.env("HOME", self.dir.path())
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("POND_STORE");
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run pond")
    }

    /// Run and require success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "pond {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stdout).expect("utf-8 output")
    }

    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let s = self.ok(args);
        serde_json::from_str(&s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
    }

    /// Run and require failure; returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(!out.status.success(), "pond {args:?} should fail");
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    pub fn sync(&self, path: &Path) -> serde_json::Value {
        self.json(&["sync", "--path", path.to_str().unwrap(), "--json"])
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
