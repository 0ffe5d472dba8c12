//! Where session files live, and what kind each one is.
//!
//! Each client's folders and which files there are transcripts come from its
//! [`Source`](crate::source::Source) (`layout`, `transcript`); discovery walks them for
//! `.jsonl` files. Claude Code's subagents are found here by their layout:
//! `<slug>/<session>/subagents/agent-<id>.jsonl` (older builds: `agent-<id>.jsonl` beside the
//! session). Prompt indexes (`history.jsonl`, `session_index.jsonl`) are not transcripts and
//! are ignored.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::model::Skip;
pub use crate::source::SourceFile;
use crate::source::SourceKind;

const NOT_TRANSCRIPTS: &[&str] = &["history.jsonl", "session_index.jsonl"];

/// Every `.jsonl` under `root` (links not followed), minus prompt indexes, every file
/// named as a client's database is (`opencode.db`, `state.vscdb`) and every file a client
/// reads whole (VS Code's chat sessions, the `.json` chats of VS Code and Gemini CLI); a
/// folder that cannot be read is noted in `unreadable` (a skip at line 0 with the OS's
/// reason), never passed over in silence.
fn jsonl_files(root: &Path, unreadable: &mut Vec<Skip>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            // A default home that is absent (no Codex here) is not a problem.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                unreadable.push(folder_skip(&dir, &e));
                continue;
            }
        };
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    unreadable.push(folder_skip(&dir, &e));
                    break;
                }
            };
            let Ok(ft) = entry.file_type() else { continue };
            let path = entry.path();
            if ft.is_dir() {
                stack.push(path);
            } else if ft.is_file()
                && ((path.extension().is_some_and(|e| e == "jsonl")
                    && !path
                        .file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| NOT_TRANSCRIPTS.contains(&n)))
                    || database_of(&path, None).is_some()
                    || read_whole_by(&path).is_some())
            {
                out.push(path);
            }
        }
    }
    out
}

/// The client whose session file `path` is and that reads it whole (`Source::reads_whole`),
/// by where it is and what it is called: that client must be known before it is read.
fn read_whole_by(path: &Path) -> Option<SourceKind> {
    crate::sources::SOURCES
        .iter()
        .copied()
        .find(|s| s.reads_whole(path) && s.session_file(path))
}

fn folder_skip(dir: &Path, e: &std::io::Error) -> Skip {
    Skip {
        path: crate::paths::path_key(dir),
        line: 0,
        reason: format!("cannot read folder: {e}"),
    }
}

/// The client whose database the file at `path` is: `kind` when it keeps a database,
/// else (no kind given) the client whose database has the file's name.
fn database_of(path: &Path, kind: Option<SourceKind>) -> Option<SourceKind> {
    match kind {
        Some(k) => k.database.is_some().then_some(k),
        None => {
            let name = path.file_name()?;
            crate::sources::SOURCES.iter().copied().find(|s| {
                s.database
                    .is_some_and(|d| Some(name) == Path::new(d.file).file_name())
            })
        }
    }
}

/// The sessions of the database at `path` into `found` (or why it cannot be read).
fn add_database(found: &mut Discovered, path: &Path, kind: SourceKind) {
    match crate::database::sessions(path, kind) {
        Ok((files, skips)) => {
            found.files.extend(files);
            found.unreadable.extend(skips);
        }
        Err(reason) => found.unreadable.push(Skip {
            path: crate::paths::path_key(path),
            line: 0,
            reason,
        }),
    }
}

/// A file at `path` as discovery describes it: whether it is a Claude subagent's, and its
/// parent session when the layout names it.
pub fn classify(path: PathBuf, kind: Option<SourceKind>) -> SourceFile {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    // Claude Code's layout (and a file whose client is not known yet: sniffed later).
    let claude_layout = kind.is_none_or(|k| k == crate::sources::CLAUDE_CODE);
    let is_subagent = claude_layout && stem.starts_with("agent-");
    // `<session>/subagents/agent-x.jsonl`: the grandparent folder names the parent session.
    let parent_session = if is_subagent {
        let parent_dir = path.parent();
        match parent_dir
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
        {
            Some("subagents") => parent_dir
                .and_then(Path::parent)
                .and_then(|p| p.file_name())
                .and_then(|n| n.to_str())
                .map(str::to_owned),
            _ => None,
        }
    } else {
        None
    };
    SourceFile {
        path,
        kind,
        parent_session,
        is_subagent,
    }
}

/// Files under `dir`, or `dir` itself when it is a file. With a kind, the folder may be the
/// client's home (`~/.claude`, `~/.codex`) or any folder of its files; without one, each
/// file's format is sniffed.
///
/// Paths are canonical (absolute, symlinks resolved): a path is a file's identity in the
/// store, so one file reached as `./x`, `/abs/x` or through a symlinked home is one file.
/// Session files come before subagent files (each group in byte order of its paths), so
/// a parent's lines are stored before the subagent files that replay them.
pub fn discover(dir: &Path, kind: Option<SourceKind>) -> Vec<SourceFile> {
    discover_all(dir, kind).files
}

/// What [`discover_all`] found under a source folder.
#[derive(Debug, Default)]
pub struct Discovered {
    pub files: Vec<SourceFile>,
    /// Folders (the source itself included) that exist but could not be read.
    pub unreadable: Vec<Skip>,
}

/// [`discover`], also saying which folders could not be read.
pub fn discover_all(dir: &Path, kind: Option<SourceKind>) -> Discovered {
    let mut found = Discovered::default();
    let dir = match std::fs::canonicalize(dir) {
        Ok(dir) => dir,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return found,
        Err(e) => {
            found.unreadable.push(folder_skip(dir, &e));
            return found;
        }
    };
    let paths = if dir.is_file() {
        vec![dir]
    } else if let Some(db) = kind.and_then(|k| k.database) {
        // A database client's home holds its database, a folder with a copy holds the file
        // itself (none: not installed); then the tree of files older builds kept.
        let name = Path::new(db.file).file_name().unwrap_or_default();
        let file = [dir.join(db.file), dir.join(name)]
            .into_iter()
            .find(|p| p.is_file());
        let tree = db.tree.as_ref().and_then(|t| {
            [dir.join(t.folder), dir.clone()]
                .into_iter()
                .find(|p| p.file_name().is_some_and(|n| n == t.folder) && p.is_dir())
        });
        file.into_iter().chain(tree).collect()
    } else {
        let roots = match kind {
            Some(k) => k.roots(&dir),
            None => vec![dir],
        };
        roots
            .iter()
            .flat_map(|r| jsonl_files(r, &mut found.unreadable))
            .filter(|p| match kind {
                // Any folder: transcripts, and the databases found in it.
                None => true,
                Some(k) => k.session_file(p),
            })
            .collect()
    };
    for path in paths {
        match database_of(&path, kind) {
            Some(k) => add_database(&mut found, &path, k),
            None => {
                let kind = kind.or_else(|| read_whole_by(&path));
                found.files.push(classify(path, kind))
            }
        }
    }
    if kind.is_some_and(|k| k.database.is_some()) {
        // A session both in the database and in the older tree is the database's.
        let mut seen = std::collections::HashSet::new();
        found
            .files
            .retain(|f| seen.insert(f.path.file_name().map(ToOwned::to_owned)));
    }
    found.files.sort_by(|a, b| {
        (a.is_subagent, a.path.as_os_str().as_bytes())
            .cmp(&(b.is_subagent, b.path.as_os_str().as_bytes()))
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_sessions_subagents_and_skips_indexes() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("projects/-home-a-proj");
        std::fs::create_dir_all(p.join("S1/subagents")).unwrap();
        std::fs::write(p.join("S1.jsonl"), "{}\n").unwrap();
        std::fs::write(p.join("S1/subagents/agent-abc.jsonl"), "{}\n").unwrap();
        std::fs::write(p.join("agent-old.jsonl"), "{}\n").unwrap();
        std::fs::write(d.path().join("history.jsonl"), "{}\n").unwrap();
        let files = discover(d.path(), Some(crate::sources::CLAUDE_CODE));
        assert_eq!(files.len(), 3);
        let sub = files
            .iter()
            .find(|f| f.path.ends_with("agent-abc.jsonl"))
            .unwrap();
        assert!(sub.is_subagent);
        assert_eq!(sub.parent_session.as_deref(), Some("S1"));
        let old = files
            .iter()
            .find(|f| f.path.ends_with("agent-old.jsonl"))
            .unwrap();
        assert!(old.is_subagent);
        assert_eq!(old.parent_session, None);
        // The session file comes before the subagents that replay its lines.
        assert!(files[0].path.ends_with("S1.jsonl"), "{files:?}");
    }

    #[test]
    fn folders_that_cannot_be_read_are_reported_not_passed_over() {
        let d = tempfile::tempdir().unwrap();
        // Absent: nothing to say (a client that is not installed).
        let absent = discover_all(&d.path().join("missing"), None);
        assert!(absent.files.is_empty() && absent.unreadable.is_empty());
        // A path through a file: it exists, and cannot be read as a folder.
        std::fs::write(d.path().join("f"), "").unwrap();
        let through = discover_all(&d.path().join("f/sub"), None);
        assert_eq!(through.unreadable.len(), 1, "{through:?}");
        assert!(through.unreadable[0]
            .reason
            .starts_with("cannot read folder"));
        // A folder without read permission (root reads it anyway).
        let locked = d.path().join("locked");
        std::fs::create_dir_all(locked.join("inner")).unwrap();
        std::fs::write(d.path().join("ok.jsonl"), "{}\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
        let found = discover_all(d.path(), None);
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(found.files.len(), 1);
        if !nix_is_root() {
            assert_eq!(found.unreadable.len(), 1, "{found:?}");
            assert!(found.unreadable[0].path.ends_with("locked"));
        }
    }

    fn nix_is_root() -> bool {
        std::fs::read_to_string("/proc/self/status")
            .map(|s| {
                s.lines()
                    .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
            })
            .unwrap_or(false)
    }

    #[test]
    fn paths_are_canonical_whatever_the_spelling() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real");
        std::fs::create_dir_all(real.join("p")).unwrap();
        std::fs::write(real.join("p/s.jsonl"), "{}\n").unwrap();
        std::os::unix::fs::symlink(&real, d.path().join("link")).unwrap();
        let canonical = std::fs::canonicalize(real.join("p/s.jsonl")).unwrap();
        for spelling in [
            real.clone(),
            d.path().join("link"),
            d.path().join("real/p/../p/.."),
            real.join("p/s.jsonl"),
            d.path().join("link/p/s.jsonl"),
        ] {
            let files = discover(&spelling, None);
            assert_eq!(files.len(), 1, "{spelling:?}");
            assert_eq!(files[0].path, canonical, "{spelling:?}");
        }
        assert!(discover(&d.path().join("missing"), None).is_empty());
    }

    #[test]
    fn codex_home_layout() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("sessions/2026/01/02")).unwrap();
        std::fs::create_dir_all(d.path().join("archived_sessions")).unwrap();
        std::fs::write(d.path().join("sessions/2026/01/02/rollout-a.jsonl"), "").unwrap();
        std::fs::write(d.path().join("archived_sessions/rollout-b.jsonl"), "").unwrap();
        std::fs::write(d.path().join("history.jsonl"), "").unwrap();
        let files = discover(d.path(), Some(crate::sources::CODEX));
        assert_eq!(files.len(), 2);
        assert!(files.iter().all(|f| !f.is_subagent));
    }
}
