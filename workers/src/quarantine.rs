//! Files that kill the sync worker are set aside, not retried by every sync.
//!
//! A sync notes the large files it is reading (`sync.reading`, rewritten as its windows
//! move) and removes the note when it ends. A note found by the next sync means the last
//! one died while reading those files (killed over its memory budget, or a crash): each
//! gets a strike. A file with [`STRIKES`] strikes and unchanged since is skipped, with a
//! reason, until it changes; a sync that reads it to its end clears it. Small files are not
//! noted: the parsers bound what a line can expand to, so only large ones can take a
//! worker past its budget.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pond_ingest::paths::path_key;
use serde::{Deserialize, Serialize};

/// Files with at least this much left to read are noted while they are read.
pub const NOTED_BYTES: u64 = 1 << 20;
/// Deaths while a file was being read before it is set aside.
pub const STRIKES: u32 = 2;

const READING: &str = "sync.reading";
const QUARANTINE: &str = "quarantine.json";

/// A file as it was when noted: a change of size or time clears its strikes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    pub size: u64,
    pub mtime_ns: i64,
}

impl Seen {
    pub fn of(path: &Path) -> Option<Seen> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        Some(Seen {
            size: m.len(),
            mtime_ns: m.mtime() * 1_000_000_000 + m.mtime_nsec(),
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Strikes {
    seen: Seen,
    strikes: u32,
}

/// The store's set-aside files, loaded at the start of a sync.
pub struct Quarantine {
    root: PathBuf,
    files: BTreeMap<String, Strikes>,
    changed: bool,
}

fn write_json<T: Serialize>(path: &Path, v: &T) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec(v)?)?;
    std::fs::rename(&tmp, path)
}

impl Quarantine {
    /// Load the set-aside files, and strike the ones a dead sync was reading.
    pub fn load(store_root: &Path) -> Quarantine {
        let read = |name: &str| std::fs::read(store_root.join(name)).ok();
        let mut q = Quarantine {
            root: store_root.to_path_buf(),
            files: read(QUARANTINE)
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or_default(),
            changed: false,
        };
        let reading: BTreeMap<String, Seen> = read(READING)
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        for (path, seen) in reading {
            let entry = q.files.entry(path).or_insert(Strikes { seen, strikes: 0 });
            if entry.seen != seen {
                *entry = Strikes { seen, strikes: 0 };
            }
            entry.strikes += 1;
            q.changed = true;
        }
        // Kept at once: this sync may die too, before it saves anything.
        if q.changed {
            let _ = write_json(&store_root.join(QUARANTINE), &q.files);
            q.changed = false;
        }
        let _ = std::fs::remove_file(store_root.join(READING));
        q
    }

    /// Why `path` is skipped, if it is set aside and has not changed since.
    pub fn set_aside(&self, path: &Path) -> Option<String> {
        let entry = self.files.get(&path_key(path))?;
        (entry.strikes >= STRIKES && Seen::of(path) == Some(entry.seen)).then(|| {
            format!(
                "skipped: the sync worker died {} times while reading this file (over its memory budget, or a crash); it is read again once it changes (`pond status` lists it)",
                entry.strikes
            )
        })
    }

    /// Note the files now being read (replacing the last note).
    pub fn reading(&self, files: &[&Path]) {
        let note: BTreeMap<String, Seen> = files
            .iter()
            .filter_map(|p| Some((path_key(p), Seen::of(p)?)))
            .collect();
        let path = self.root.join(READING);
        let _ = if note.is_empty() {
            std::fs::remove_file(&path).or(Ok(()))
        } else {
            write_json(&path, &note)
        };
    }

    /// `path` was read to its end: it is not set aside any more.
    pub fn cleared(&mut self, path: &str) {
        self.changed |= self.files.remove(path).is_some();
    }

    /// Save the set-aside files and remove the reading note (the sync ended).
    pub fn finish(self) {
        let _ = std::fs::remove_file(self.root.join(READING));
        if self.changed {
            let _ = write_json(&self.root.join(QUARANTINE), &self.files);
        }
    }

    /// The files set aside now, for status: (path, strikes).
    pub fn list(store_root: &Path) -> Vec<(String, u32)> {
        std::fs::read(store_root.join(QUARANTINE))
            .ok()
            .and_then(|b| serde_json::from_slice::<BTreeMap<String, Strikes>>(&b).ok())
            .unwrap_or_default()
            .into_iter()
            .filter(|(_, s)| s.strikes >= STRIKES)
            .map(|(p, s)| (p, s.strikes))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_read_when_two_syncs_died_is_set_aside_until_it_changes() {
        let d = tempfile::tempdir().unwrap();
        let big = d.path().join("big.jsonl");
        std::fs::write(&big, "{}\n").unwrap();
        for round in 1..=STRIKES {
            let q = Quarantine::load(d.path());
            assert!(q.set_aside(&big).is_none(), "round {round}");
            q.reading(&[&big]);
            // The sync dies here: no finish.
        }
        let q = Quarantine::load(d.path());
        assert!(q.set_aside(&big).unwrap().contains("died 2 times"));
        q.finish();
        assert_eq!(Quarantine::list(d.path()).len(), 1);
        std::fs::write(&big, "{}\n{}\n").unwrap();
        let mut q = Quarantine::load(d.path());
        assert!(q.set_aside(&big).is_none(), "a changed file is read again");
        q.cleared(&path_key(&big));
        q.finish();
        assert!(Quarantine::list(d.path()).is_empty());
    }
}
