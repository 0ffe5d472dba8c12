//! Clients that keep their sessions in a SQLite database ([`Database`]): each session read
//! as if it were a file of JSON lines, so the store, its cursors, re-derivation and the
//! parsers treat it like any other file.
//!
//! A session's lines are made from its rows: one for the session's own row each time it
//! changed, and one per message holding the message row and its parts, made when the message
//! is complete (an assistant turn that finished or failed, a prompt with its parts) and again
//! each time it changes after that. Lines are numbered on from where the last read stopped,
//! so `records` keeps every version read, and a line parses the same from the database or,
//! re-derived, from the store. A message still being written is held back until it completes
//! or has not changed for [`STALE_MS`] (the client died mid-turn), so the store's first copy
//! of a message, the one search serves, is whole.
//!
//! The database is opened read-only with a busy timeout and each session is read in one
//! transaction (a consistent snapshot while the client writes). A database whose client
//! holds its lock past that timeout is not waited for again in the same sync
//! ([`HeldDatabases`]): its other sessions are read on the next. Change detection is per
//! session (its row count and newest update), never by the file's time, which moves for
//! every session.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::common::{now_ms, MAX_LINE_BYTES, STALE_MS};
use crate::file_cursor::{FileCursor, RowCursor};
use crate::model::Skip;
use crate::outcome::{failed, ReadMode, ReadOutcome};
use crate::pass::Pass;
use crate::source::{Database, Loaded, SourceFile, SourceKind, Stamp, Tree, Unit};
use crate::sqlite::{open, unreadable};

/// A session id that can name a path under the database's (one component, not `.`/`..`).
fn usable_id(id: &str) -> bool {
    !id.is_empty() && id != "." && id != ".." && !id.contains(['/', '\0'])
}

/// The sessions of the database at `path` as files, and the sessions that cannot be read
/// (an id that cannot be a path component), as skips. An error: the database cannot be
/// opened or listed.
pub fn sessions(path: &Path, kind: SourceKind) -> Result<(Vec<SourceFile>, Vec<Skip>), String> {
    let db = kind.database.expect("a database client");
    let (conn, mut skips) = connect(path, tree_at(db, path), None)?;
    let listed = (db.sessions)(&conn).map_err(unreadable)?;
    let mut files = Vec::new();
    for s in listed {
        if !usable_id(&s.id) {
            skips.push(Skip {
                path: crate::paths::path_key(path),
                line: 0,
                reason: format!("session id {:?} cannot be read (not a name)", s.id),
            });
            continue;
        }
        files.push(SourceFile {
            path: path.join(&s.id),
            kind: Some(kind),
            is_subagent: s.parent.is_some(),
            parent_session: s.parent,
        });
    }
    Ok((files, skips))
}

/// The read of a session whose stamp is what the last read saw, with nothing held back.
fn unchanged(prev: Option<&FileCursor>, stamp: Stamp) -> Option<ReadOutcome> {
    let p = prev?;
    let seen = p.rows.as_ref().is_some_and(|r| r.held == 0);
    (seen && !p.partial && (p.size, p.mtime_ns) == stamp).then(|| ReadOutcome {
        mode: ReadMode::Unchanged,
        batch: Default::default(),
        cursor: p.clone(),
        lines_read: 0,
    })
}

/// The client's older tree of files ([`Database::tree`]) when `path` is its folder.
fn tree_at<'a>(db: &'a Database, path: &Path) -> Option<&'a Tree> {
    db.tree.as_ref().filter(|_| path.is_dir())
}

/// The database at `path`, or the tables made from the `tree` there (every session's own
/// row, or the rows of the session `only`), with the files that could not be read.
fn connect(path: &Path, tree: Option<&Tree>, only: Option<&str>) -> Result<Loaded, String> {
    match tree {
        Some(tree) => (tree.load)(path, only),
        None => Ok((open(path)?, Vec::new())),
    }
}

/// The databases whose client held its lock past the busy timeout, shared by the reads of
/// one sync: a client busy writing for that long is not waited for once per session (a
/// database of a thousand sessions would hold the sync for over an hour); its sessions are
/// skipped with the reason and read on the next sync.
#[derive(Debug, Default)]
pub struct HeldDatabases(Mutex<HashSet<PathBuf>>);

impl HeldDatabases {
    fn holds(&self, path: &Path) -> bool {
        self.0.lock().expect("held databases").contains(path)
    }

    fn note(&self, path: &Path) {
        self.0
            .lock()
            .expect("held databases")
            .insert(path.to_owned());
    }
}

/// Why a session was not read.
enum Unread {
    /// The client held the database's lock past the busy timeout.
    Held(String),
    Failed(String),
}

impl From<String> for Unread {
    fn from(reason: String) -> Unread {
        Unread::Failed(reason)
    }
}

/// A query's error, telling a lock held past the timeout from the rest.
fn query_error(e: rusqlite::Error) -> Unread {
    let held = matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    );
    let reason = unreadable(e);
    if held {
        Unread::Held(reason)
    } else {
        Unread::Failed(reason)
    }
}

/// Read one session of `db` from where `prev` left it. Never fails: a database that cannot
/// be read is a skip with the reason, and the session is read again next time.
pub(crate) fn read(
    file: &SourceFile,
    db: &Database,
    prev: Option<&FileCursor>,
    held: &HeldDatabases,
) -> ReadOutcome {
    let at = prev.map_or(0, |c| c.line);
    let (Some(path), Some(id)) = (
        file.path.parent(),
        file.path.file_name().and_then(|n| n.to_str()),
    ) else {
        return failed(file, prev, at, "not a session of a database".into());
    };
    if held.holds(path) {
        let why = "not read: its client held the database locked earlier in this sync; it is read on the next sync";
        return failed(file, prev, at, why.into());
    }
    match read_session(file, db, path, id, prev) {
        Ok(out) => out,
        Err(Unread::Held(reason)) => {
            held.note(path);
            let why = format!(
                "{reason} (its client held it locked for {} s; it is read on the next sync)",
                crate::sqlite::BUSY.as_secs()
            );
            failed(file, prev, at, why)
        }
        Err(Unread::Failed(reason)) => failed(file, prev, at, reason),
    }
}

fn read_session(
    file: &SourceFile,
    db: &Database,
    path: &Path,
    id: &str,
    prev: Option<&FileCursor>,
) -> Result<ReadOutcome, Unread> {
    // A tree of files is stamped by its files' names and times, before any is read.
    let tree = tree_at(db, path);
    let tree_stamp = tree.map(|t| (t.stamp)(path, id)).transpose()?;
    if let Some(out) = tree_stamp.and_then(|s| unchanged(prev, s)) {
        return Ok(out);
    }
    let (conn, unread) = connect(path, tree, Some(id))?;
    // One snapshot for the stamp and the rows.
    let tx = conn.unchecked_transaction().map_err(query_error)?;
    let stamp = match tree_stamp {
        Some(s) => s,
        None => {
            let s = (db.stamp)(&tx, id).map_err(query_error)?;
            if let Some(out) = unchanged(prev, s) {
                return Ok(out);
            }
            s
        }
    };
    let mut cursor = prev.cloned().unwrap_or_default();
    let mut rows_at = cursor.rows.take().unwrap_or_default();
    let rows = (db.rows)(&tx, id, rows_at.since).map_err(query_error)?;
    drop(tx);

    // Each line, or the bytes of a message's rows too large to be one.
    let mut lines: Vec<Result<String, u64>> = Vec::new();
    if let Some((updated, line)) = rows.session {
        if prev.is_none() || updated != rows_at.session {
            rows_at.session = updated;
            lines.push(Ok(line));
        }
    }
    lines.extend(
        select(&mut rows_at, rows.units, db.timed, now_ms())
            .into_iter()
            .map(|u| u.too_large.map_or(Ok(u.line), Err)),
    );

    cursor.partial = false;
    let mut pass = Pass::new(file, &cursor, stamp.1);
    for s in unread {
        pass.skip(s.line, format!("{}: {}", s.path, s.reason));
    }
    for line in &lines {
        cursor.line += 1;
        let line = match line {
            Ok(line) => one_line(line),
            Err(bytes) => {
                let why = format!(
                    "message too large: its rows hold {bytes} bytes, over the {MAX_LINE_BYTES}-byte limit; not read"
                );
                pass.skip(cursor.line, why);
                continue;
            }
        };
        pass.line(cursor.line, cursor.offset, line.as_bytes(), line.len() + 1);
        cursor.offset += line.len() as u64 + 1;
    }
    (cursor.size, cursor.mtime_ns) = stamp;
    cursor.rows = Some(rows_at);
    let batch = pass.finish(&mut cursor);
    Ok(ReadOutcome {
        mode: if prev.is_some() {
            ReadMode::Appended
        } else {
            ReadMode::New
        },
        batch,
        cursor,
        lines_read: lines.len() as u64,
    })
}

/// Which of a session's messages become lines now, in order: each complete one not read at
/// this version already, and an incomplete one that has not changed for [`STALE_MS`]. Moves
/// `at` past what was read. In a `timed` database `at.since` moves up to just below the
/// newest update read, never past a message held back, and only versions above it are
/// remembered; in one
/// that is not, `units` is every message of the session and each one's version is
/// remembered while the session has it.
pub(crate) fn select(at: &mut RowCursor, units: Vec<Unit>, timed: bool, now: i64) -> Vec<Unit> {
    let read: HashSet<(&str, i64)> = at.above.iter().map(|(id, v)| (id.as_str(), *v)).collect();
    let mut out = Vec::new();
    let mut present = HashSet::new();
    let mut newest = at.since;
    let mut held_from: Option<i64> = None;
    let mut held = 0;
    for u in units {
        if !timed {
            present.insert(u.id.clone());
        }
        if (timed && u.updated <= at.since) || read.contains(&(u.id.as_str(), u.version)) {
            continue;
        }
        newest = newest.max(u.updated);
        if !u.complete && now - u.updated < STALE_MS {
            held += 1;
            held_from = Some(held_from.map_or(u.updated, |t| t.min(u.updated)));
            continue;
        }
        out.push(u);
    }
    drop(read);
    let mut above: Vec<(String, i64)> = std::mem::take(&mut at.above);
    above.retain(|(id, _)| !out.iter().any(|u| u.id == *id));
    above.extend(out.iter().map(|u| (u.id.clone(), u.version)));
    let since = if timed {
        // Just below the newest update read: a message written later in the same
        // millisecond is still to come (those read at it are remembered in `above`).
        let since = held_from.unwrap_or(newest).saturating_sub(1).max(at.since);
        above.retain(|(_, t)| *t > since);
        since
    } else {
        above.retain(|(id, _)| present.contains(id));
        at.since
    };
    *at = RowCursor {
        since,
        above,
        session: at.session,
        held,
    };
    out
}

/// A line with no line breaks: those outside JSON strings are whitespace (inside a string
/// they are escaped), so a client's pretty-printed JSON column keeps one record per line.
fn one_line(line: &str) -> std::borrow::Cow<'_, str> {
    if line.contains(['\n', '\r']) {
        line.replace(['\n', '\r'], " ").into()
    } else {
        line.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(id: &str, updated: i64, complete: bool) -> Unit {
        Unit {
            id: id.into(),
            updated,
            version: updated,
            complete,
            line: id.into(),
            too_large: None,
        }
    }

    fn ids(units: &[Unit]) -> Vec<&str> {
        units.iter().map(|u| u.id.as_str()).collect()
    }

    #[test]
    fn messages_are_read_when_complete_and_again_when_changed() {
        let now = 1_000;
        let mut at = RowCursor::default();
        // m2 is being written: held back, and `since` stays below it.
        let got = select(
            &mut at,
            vec![unit("m1", 100, true), unit("m2", 200, false)],
            true,
            now,
        );
        assert_eq!(ids(&got), ["m1"]);
        assert_eq!((at.since, at.held), (199, 1));
        // A prompt after it completed (m3), m2 still running: m1 is not read again.
        let got = select(
            &mut at,
            vec![unit("m2", 300, false), unit("m3", 250, true)],
            true,
            now,
        );
        assert_eq!(ids(&got), ["m3"]);
        assert_eq!((at.since, at.held), (299, 1));
        assert!(at.above.is_empty(), "m3 is below `since`: {at:?}");
        // Read after the message held back: remembered, so not read twice.
        let got = select(
            &mut at,
            vec![unit("m2", 300, false), unit("m5", 350, true)],
            true,
            now,
        );
        assert_eq!(ids(&got), ["m5"]);
        assert_eq!(at.above, [("m5".to_owned(), 350)]);
        let got = select(
            &mut at,
            vec![unit("m2", 300, false), unit("m5", 350, true)],
            true,
            now,
        );
        assert!(got.is_empty());
        // m2 completes; m3 unchanged is not read again; nothing is held.
        let got = select(
            &mut at,
            vec![
                unit("m2", 400, true),
                unit("m3", 250, true),
                unit("m5", 350, true),
            ],
            true,
            now,
        );
        assert_eq!(ids(&got), ["m2"]);
        assert_eq!((at.since, at.held), (399, 0));
        assert_eq!(at.above, [("m2".to_owned(), 400)]);
        // Another message updated in the same millisecond, written after that read: read,
        // and m2 not again.
        let got = select(
            &mut at,
            vec![unit("m2", 400, true), unit("m6", 400, true)],
            true,
            now,
        );
        assert_eq!(ids(&got), ["m6"]);
        assert_eq!(at.since, 399);
        // A message changed after it was read is read again (a new version).
        let got = select(&mut at, vec![unit("m1", 500, true)], true, now);
        assert_eq!(ids(&got), ["m1"]);
        // A message that stopped changing while incomplete is read as it is.
        let got = select(&mut at, vec![unit("m4", 600, false)], true, 600 + STALE_MS);
        assert_eq!(ids(&got), ["m4"]);
        assert_eq!(at.held, 0);
    }

    #[test]
    fn without_times_messages_are_read_by_their_digest() {
        let now = 1_000;
        let digest = |id: &str, version: i64, complete: bool| Unit {
            version,
            ..unit(id, now, complete)
        };
        let mut at = RowCursor::default();
        let got = select(
            &mut at,
            vec![digest("b1", 11, true), digest("b2", 21, false)],
            false,
            now,
        );
        assert_eq!(ids(&got), ["b1"]);
        assert_eq!((at.since, at.held), (0, 1));
        // Unchanged b1 is not read again; b2 completed, b3 new.
        let got = select(
            &mut at,
            vec![
                digest("b1", 11, true),
                digest("b2", 22, true),
                digest("b3", 31, true),
            ],
            false,
            now,
        );
        assert_eq!(ids(&got), ["b2", "b3"]);
        // b1 changed, b3 removed from the session: b1 read again, b3 forgotten.
        let got = select(
            &mut at,
            vec![digest("b1", 12, true), digest("b2", 22, true)],
            false,
            now,
        );
        assert_eq!(ids(&got), ["b1"]);
        let mut remembered = at.above.clone();
        remembered.sort();
        assert_eq!(remembered, [("b1".to_owned(), 12), ("b2".to_owned(), 22)]);
        // Still being written but unchanged for STALE_MS: read as it is.
        let got = select(
            &mut at,
            vec![digest("b4", 41, false)],
            false,
            now + STALE_MS,
        );
        assert_eq!(ids(&got), ["b4"]);
    }

    #[test]
    fn line_breaks_outside_strings_are_spaces() {
        assert_eq!(one_line("{\"a\":\n1}"), "{\"a\": 1}");
    }
}
