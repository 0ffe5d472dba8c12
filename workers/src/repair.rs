//! Keeping a store at one row model and one identity per source file.
//!
//! A file's path is its identity in the store (records, cursors, messages carry it).
//! Discovery hands out canonical paths (absolute, symlinks resolved), but stores written
//! before it did may hold one file under two spellings (`./x` and `/abs/x`, a symlinked
//! home and its target), every line stored twice. [`plan`] finds such spellings: a stored
//! path that is not canonical and whose canonical form is a file with the same head as the
//! stored cursor recorded. Each becomes a [`Repair`]: renamed to the canonical path when that
//! is not stored, dropped (records and cursor) when it is.
//!
//! Both repairs and an upgrade from the model of older ponds (one row per message id) end
//! in [`rederive`]: sessions, messages and parts rebuilt from `records`, in the same
//! transaction, never by reading source files that may be gone.
//!
//! Vectors are keyed by message id, so re-derived rows keep theirs: [`rekey_vectors`] moves
//! each to its message's new row (later, when a backfill holds the embedding lock), and none
//! is computed again. Readers refuse a store not yet upgraded with a message naming
//! `pond rebuild` and `pond sync`.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use pond_ingest::discover::classify;
use pond_ingest::paths::{key_path, path_key};
use pond_ingest::reader::LineParser;
use pond_ingest::{FileCursor, PendingBatch, Source, SourceFile};
use pond_store::records::StoredLines;
use pond_store::{vectors, Store, SyncWriter, WriteStats};
use xxhash_rust::xxh3::xxh3_64;

/// What to do about one stored spelling of a file's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// Store `from`'s lines and cursor under `to`, its canonical path.
    Rename { from: String, to: String },
    /// `from`'s lines are stored under the canonical path already: delete them.
    Drop { from: String, canonical: String },
}

/// `path` without `.` components (a relative spelling as discovery once wrote it).
fn normalized(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

/// Whether the file at `path` still starts with the bytes `cursor` hashed.
fn same_head(path: &Path, cursor: &FileCursor) -> bool {
    let Ok(mut f) = File::open(path) else {
        return false;
    };
    let mut buf = vec![0u8; cursor.head_len as usize];
    f.read_exact(&mut buf).is_ok() && xxh3_64(&buf) == cursor.head_hash
}

/// The spellings to repair among the stored `cursors`, given the canonical paths this sync
/// discovered (none for a rebuild). A stored path is another spelling of canonical `c` when
/// it canonicalizes to `c` (a symlink or `..` spelling that still resolves), or when it is
/// relative and `c`, discovered or stored, ends with it; either way `c`'s head must match
/// what the stored cursor hashed, so a different file of the same name is never merged.
///
/// Only stored paths discovery did not hand out are resolved (a discovered path is
/// canonical already): resolving every stored path cost a sync one `canonicalize` per file
/// it ever read (55k at 1M messages), most of a sync that found nothing new.
pub fn plan(cursors: &HashMap<String, FileCursor>, discovered: &[SourceFile]) -> Vec<Repair> {
    plan_with(cursors, discovered, &mut |p| std::fs::canonicalize(p).ok())
}

/// [`plan`], resolving paths with `resolve`.
fn plan_with(
    cursors: &HashMap<String, FileCursor>,
    discovered: &[SourceFile],
    resolve: &mut dyn FnMut(&Path) -> Option<PathBuf>,
) -> Vec<Repair> {
    let found: HashSet<&Path> = discovered.iter().map(|f| f.path.as_path()).collect();
    // The absolute stored paths not discovered, each with what it resolves to now.
    let resolved: HashMap<&String, Option<PathBuf>> = cursors
        .keys()
        .filter_map(|k| {
            let p = key_path(k);
            (p.is_absolute() && !found.contains(p.as_path())).then(|| (k, resolve(&p)))
        })
        .collect();
    let canonical: HashSet<PathBuf> = found
        .iter()
        .map(|p| p.to_path_buf())
        .chain(resolved.iter().filter_map(|(k, c)| {
            let p = key_path(k);
            (c.as_ref() == Some(&p)).then_some(p)
        }))
        .collect();
    let mut out = Vec::new();
    let mut stored: Vec<&String> = cursors.keys().collect();
    stored.sort();
    for s in stored {
        let sp = key_path(s);
        let sp = sp.as_path();
        if canonical.contains(sp) {
            continue;
        }
        let cursor = &cursors[s];
        let target = if sp.is_absolute() {
            resolved[s].clone().filter(|c| c != sp)
        } else {
            let tail = normalized(sp);
            let mut matches = canonical.iter().filter(|c| c.ends_with(&tail));
            match (matches.next(), matches.next()) {
                (Some(c), None) => Some(c.to_path_buf()),
                _ => None,
            }
        };
        let Some(target) = target else { continue };
        let to = path_key(&target);
        let matches = match cursors.get(&to) {
            Some(c) => c.head_len == cursor.head_len && c.head_hash == cursor.head_hash,
            None => same_head(&target, cursor),
        };
        if !matches {
            continue;
        }
        out.push(if cursors.contains_key(&to) {
            Repair::Drop {
                from: s.clone(),
                canonical: to,
            }
        } else {
            Repair::Rename {
                from: s.clone(),
                to,
            }
        });
    }
    out
}

/// Apply `repairs` in `writer`'s transaction and update `cursors` to match. Returns the
/// cursors to store under their new paths.
pub async fn apply(
    writer: &mut SyncWriter<'_>,
    repairs: &[Repair],
    cursors: &mut HashMap<String, FileCursor>,
) -> pond_store::Result<Vec<(String, FileCursor)>> {
    let mut moved = Vec::new();
    for r in repairs {
        match r {
            Repair::Rename { from, to } => {
                tracing::warn!(%from, %to, "storing a file under its canonical path");
                writer.rename_source(from, to).await?;
                if let Some(c) = cursors.remove(from) {
                    cursors.insert(to.clone(), c.clone());
                    moved.push((to.clone(), c));
                }
            }
            Repair::Drop { from, canonical } => {
                tracing::warn!(%from, %canonical, "removing a second copy of a file's lines");
                writer.drop_sources(std::slice::from_ref(from)).await?;
                cursors.remove(from);
            }
        }
    }
    Ok(moved)
}

/// The files a store holds lines of, in the order a sync reads them (session files before
/// subagent files, then by path).
pub(crate) fn stored_files(
    lines: &StoredLines,
    cursors: &HashMap<String, FileCursor>,
) -> Vec<SourceFile> {
    let mut files: Vec<SourceFile> = lines
        .by_file
        .keys()
        .map(|p| {
            let kind = cursors
                .get(p)
                .and_then(|c| c.format.as_deref())
                .and_then(Source::parse);
            classify(key_path(p), kind)
        })
        .collect();
    files.sort_by(|a, b| {
        (a.is_subagent, a.path.as_os_str()).cmp(&(b.is_subagent, b.path.as_os_str()))
    });
    files
}

/// Re-derive sessions, messages and parts from every stored line: the derived datasets
/// are emptied in `writer`'s transaction, then each file's lines go through the parsers
/// again (session files before subagent files, as a sync reads them) and are written like
/// a sync's. `flush_bytes` bounds the rows held between writes.
pub async fn rederive(
    store: &Store,
    writer: &mut SyncWriter<'_>,
    cursors: &HashMap<String, FileCursor>,
    flush_bytes: usize,
) -> pond_store::Result<(u64, WriteStats)> {
    writer.reset_derived().await?;
    let mut stats = WriteStats::default();
    let Some(lines) = StoredLines::index(store).await? else {
        return Ok((0, stats));
    };
    let files = stored_files(&lines, cursors);
    let mut pending = PendingBatch::default();
    for f in &files {
        let path = path_key(&f.path);
        let cursor = cursors.get(&path);
        let mut parser = LineParser::new(
            f,
            cursor.and_then(|c| c.format.as_deref()),
            cursor.map_or(0, |c| c.mtime_ns),
        );
        let rows: Vec<u64> = lines.by_file[&path].iter().map(|l| l.1).collect();
        for chunk in rows.chunks(4096) {
            for l in lines.read(chunk).await? {
                parser.line(l.line, l.byte_offset, &l.raw);
            }
            pending.append(parser.drain());
            if pending.approx_bytes() >= flush_bytes {
                stats.add(writer.write(pending.take(), &[]).await?);
            }
        }
        pending.append(parser.finish());
    }
    stats.add(writer.write(pending.take(), &[]).await?);
    Ok((files.len() as u64, stats))
}

/// After messages were re-derived: point the stored vectors at the new rows (`vectors::
/// rekey`) and rebuild their index. Skipped, with a warning, while a backfill holds the
/// embedding lock: vector search then skips the stale vectors until the next rebuild.
pub async fn rekey_vectors(store: &Store) -> pond_store::Result<()> {
    let Ok(_embed) = store.embed_lock() else {
        tracing::warn!(
            "a backfill is running: vectors keep their old rows until `pond rebuild --vectors`"
        );
        return Ok(());
    };
    let Some(ds) = store.dataset(pond_store::schema::MESSAGES).await? else {
        return Ok(());
    };
    let Some(mapped) = store.mapped(&ds) else {
        return Ok(());
    };
    let (kept, dropped) = vectors::rekey(store, &mapped.map).await?;
    tracing::info!(kept, dropped, "vectors moved to the re-derived messages");
    vectors::ensure_index(store, vectors::VECTOR_INDEX_MIN_ROWS, true).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor_of(path: &Path) -> FileCursor {
        let bytes = std::fs::read(path).unwrap();
        let head_len = bytes.len().min(4096);
        FileCursor {
            offset: bytes.len() as u64,
            head_len: head_len as u64,
            head_hash: xxh3_64(&bytes[..head_len]),
            ..FileCursor::default()
        }
    }

    /// A sync that found every stored file again resolves none of them: discovered paths
    /// are canonical already.
    #[test]
    fn only_stored_paths_not_discovered_are_resolved() {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap();
        let files: Vec<PathBuf> = (0..3).map(|i| root.join(format!("s{i}.jsonl"))).collect();
        for f in &files {
            std::fs::write(f, "{\"a\":1}\n").unwrap();
        }
        let gone = root.join("gone.jsonl");
        let cursors: HashMap<String, FileCursor> = files
            .iter()
            .chain([&gone])
            .map(|f| (path_key(f), FileCursor::default()))
            .collect();
        let discovered: Vec<SourceFile> = files.iter().map(|p| classify(p.clone(), None)).collect();
        let mut asked = Vec::new();
        let repairs = plan_with(&cursors, &discovered, &mut |p| {
            asked.push(p.to_path_buf());
            std::fs::canonicalize(p).ok()
        });
        assert!(repairs.is_empty(), "{repairs:?}");
        assert_eq!(asked, vec![gone]);
    }

    #[test]
    fn finds_relative_and_symlinked_spellings_of_the_same_file() {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap();
        std::fs::create_dir_all(root.join("real/p")).unwrap();
        let file = root.join("real/p/s.jsonl");
        std::fs::write(&file, "{\"a\":1}\n").unwrap();
        std::fs::write(root.join("real/p/other.jsonl"), "{\"b\":2}\n").unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
        let canon = file.to_string_lossy().into_owned();
        let c = cursor_of(&file);
        let found = |stored: &[&str], discovered: &[&Path]| {
            let cursors: HashMap<String, FileCursor> =
                stored.iter().map(|s| (s.to_string(), c.clone())).collect();
            let files: Vec<SourceFile> = discovered
                .iter()
                .map(|p| classify(p.to_path_buf(), None))
                .collect();
            plan(&cursors, &files)
        };
        let link = root.join("link/p/s.jsonl").to_string_lossy().into_owned();
        // A symlinked spelling stored beside the canonical one: dropped.
        assert_eq!(
            found(&[&canon, &link], &[]),
            vec![Repair::Drop {
                from: link.clone(),
                canonical: canon.clone()
            }]
        );
        // Alone, it is renamed.
        assert_eq!(
            found(&[&link], &[]),
            vec![Repair::Rename {
                from: link,
                to: canon.clone()
            }]
        );
        // A relative spelling: matched against the discovered canonical path.
        assert_eq!(
            found(&["./real/p/s.jsonl"], &[&file]),
            vec![Repair::Rename {
                from: "./real/p/s.jsonl".into(),
                to: canon.clone()
            }]
        );
        assert_eq!(
            found(&["real/p/s.jsonl", &canon], &[]),
            vec![Repair::Drop {
                from: "real/p/s.jsonl".into(),
                canonical: canon.clone()
            }]
        );
        // Another file of that name (another head) is left alone, and so is a canonical
        // path or one that resolves to nothing.
        assert!(found(&["p/other.jsonl"], &[&root.join("real/p/other.jsonl")]).is_empty());
        assert!(found(&[&canon], &[&file]).is_empty());
        assert!(found(&["gone/s.jsonl"], &[]).is_empty());
    }
}
