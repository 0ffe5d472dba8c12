//! OpenCode's storage before `opencode.db`: one JSON file per session, message and part
//! under `storage/` in its home:
//!
//! - `session/<project id>/<session id>.json`: `id`, `projectID`, `parentID` (a subagent's
//!   session), `directory`, `title`, `version`, `time.created`, `time.updated`;
//! - `project/<project id>.json`: `worktree`;
//! - `message/<session id>/<message id>.json`: what the database keeps as a message's `data`
//!   (`role`, `time`, the model, `path`, `error`), with its `id` and `sessionID`;
//! - `part/<message id>/<part id>.json`: a part's `data` (`type`, `text`, `state`, ...), with
//!   its `id`, `messageID` and `sessionID`.
//!
//! The tree is read into an in-memory copy of the database's tables ([`load`]), each file's
//! JSON as the row's `data`, so OpenCode's queries, its change detection and its parser
//! serve both. A file has no update time of its own: a row's `time_updated` is its file's
//! modification time, so a message whose file is written again is read again. A session's
//! stamp comes from its files' names and times ([`stamp`]): an unchanged session is listed,
//! never read.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use rusqlite::{params, Connection};
use serde_json::Value;

use crate::common::MAX_LINE_BYTES;
use crate::model::Skip;
use crate::source::{Loaded, Stamp};
use crate::sqlite::unreadable;
use crate::text::str_field;

/// The tables OpenCode's queries read (`crate::opencode`), as its database has them, the
/// session's file kept whole in `data`.
const SCHEMA: &str = "
CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT);
CREATE TABLE session (
  id TEXT PRIMARY KEY, project_id TEXT, parent_id TEXT, directory TEXT, title TEXT,
  version TEXT, time_created INTEGER, time_updated INTEGER, data TEXT
);
CREATE TABLE message (
  id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT
);
CREATE TABLE part (
  id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT,
  time_created INTEGER, time_updated INTEGER, data TEXT
);
CREATE INDEX part_message ON part (message_id, id);
";

/// One JSON file of the tree: its object, its text, its modification time (ms).
struct JsonFile {
    value: Value,
    text: String,
    mtime: i64,
}

/// The tree at `storage` as OpenCode's tables: every session's own row (`only` = None), or
/// one session's rows with its project, messages and parts. The files that could not be
/// read are skips with the reason; an error: the tables could not be made.
pub(crate) fn load(storage: &Path, only: Option<&str>) -> Result<Loaded, String> {
    let conn = Connection::open_in_memory().map_err(unreadable)?;
    conn.execute_batch(SCHEMA).map_err(unreadable)?;
    let mut skips = Vec::new();
    let tx = conn.unchecked_transaction().map_err(unreadable)?;
    for path in session_files(storage, only, &mut skips) {
        let Some(f) = read_json(&path, &mut skips) else {
            continue;
        };
        let id = str_field(&f.value, "id").unwrap_or_else(|| stem(&path));
        if only.is_some_and(|o| o != id) {
            continue;
        }
        let project = str_field(&f.value, "projectID");
        let time = |k: &str| {
            f.value
                .pointer(&format!("/time/{k}"))
                .and_then(Value::as_i64)
        };
        tx.execute(
            "INSERT OR REPLACE INTO session VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                id,
                project,
                str_field(&f.value, "parentID"),
                str_field(&f.value, "directory"),
                str_field(&f.value, "title"),
                str_field(&f.value, "version"),
                time("created").unwrap_or(f.mtime),
                time("updated").unwrap_or(f.mtime),
                f.text,
            ],
        )
        .map_err(unreadable)?;
        if only.is_none() {
            continue;
        }
        let project_file = project.map(|p| storage.join("project").join(format!("{p}.json")));
        if let Some(p) = project_file.filter(|p| p.is_file()) {
            if let Some(pf) = read_json(&p, &mut skips) {
                tx.execute(
                    "INSERT OR REPLACE INTO project VALUES (?1, ?2)",
                    params![str_field(&pf.value, "id"), str_field(&pf.value, "worktree")],
                )
                .map_err(unreadable)?;
            }
        }
        load_messages(&tx, storage, &id, &mut skips)?;
    }
    tx.commit().map_err(unreadable)?;
    Ok((conn, skips))
}

/// The stamp of the session `id` of the tree at `storage`: how many message and part files
/// it has, and the newest time (ms) of those and of its session file (the database's stamp:
/// rows and newest update, each row's update being its file's time).
pub(crate) fn stamp(storage: &Path, id: &str) -> Result<Stamp, String> {
    let mut skips = Vec::new();
    let mut files = 0u64;
    let mut newest = 0i64;
    let mut note = |path: &Path, count: bool| {
        if let Ok(t) = std::fs::metadata(path).and_then(|m| m.modified()) {
            let ms = t
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64);
            newest = newest.max(ms);
        }
        files += u64::from(count);
    };
    for session in session_files(storage, Some(id), &mut skips) {
        note(&session, false);
    }
    for message in json_files(&storage.join("message").join(id), &mut skips) {
        note(&message, true);
        for part in json_files(&storage.join("part").join(stem(&message)), &mut skips) {
            note(&part, true);
        }
    }
    match skips.first() {
        Some(s) => Err(format!("{}: {}", s.path, s.reason)),
        None => Ok((files, newest)),
    }
}

/// A session's messages and their parts.
fn load_messages(
    tx: &rusqlite::Transaction<'_>,
    storage: &Path,
    session: &str,
    skips: &mut Vec<Skip>,
) -> Result<(), String> {
    for path in json_files(&storage.join("message").join(session), skips) {
        let Some(m) = read_json(&path, skips) else {
            continue;
        };
        let id = str_field(&m.value, "id").unwrap_or_else(|| stem(&path));
        let created = m.value.pointer("/time/created").and_then(Value::as_i64);
        tx.execute(
            "INSERT OR REPLACE INTO message VALUES (?1, ?2, ?3, ?4, ?5)",
            params![id, session, created.unwrap_or(m.mtime), m.mtime, m.text],
        )
        .map_err(unreadable)?;
        for path in json_files(&storage.join("part").join(&id), skips) {
            let Some(p) = read_json(&path, skips) else {
                continue;
            };
            let start = p.value.pointer("/time/start").and_then(Value::as_i64);
            tx.execute(
                "INSERT OR REPLACE INTO part VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    str_field(&p.value, "id").unwrap_or_else(|| stem(&path)),
                    id,
                    session,
                    start.unwrap_or(p.mtime),
                    p.mtime,
                    p.text,
                ],
            )
            .map_err(unreadable)?;
        }
    }
    Ok(())
}

/// The session files: every one under `session/<project>/`, or the one named `<only>.json`.
fn session_files(storage: &Path, only: Option<&str>, skips: &mut Vec<Skip>) -> Vec<PathBuf> {
    let projects = storage.join("session");
    let mut out = Vec::new();
    for dir in folders(&projects, skips) {
        match only {
            Some(id) => out.extend(Some(dir.join(format!("{id}.json"))).filter(|p| p.is_file())),
            None => out.extend(json_files(&dir, skips)),
        }
    }
    out
}

/// The folders in `dir`, in name order (none when it does not exist).
fn folders(dir: &Path, skips: &mut Vec<Skip>) -> Vec<PathBuf> {
    entries(dir, skips)
        .into_iter()
        .filter(|p| p.is_dir())
        .collect()
}

/// The `.json` files in `dir`, in name order (none when it does not exist).
fn json_files(dir: &Path, skips: &mut Vec<Skip>) -> Vec<PathBuf> {
    entries(dir, skips)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
        .collect()
}

fn entries(dir: &Path, skips: &mut Vec<Skip>) -> Vec<PathBuf> {
    let read = match std::fs::read_dir(dir) {
        Ok(read) => read,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            skips.push(skip(dir, format!("cannot read folder: {e}")));
            return Vec::new();
        }
    };
    let mut out: Vec<PathBuf> = read.filter_map(|e| e.ok().map(|e| e.path())).collect();
    out.sort();
    out
}

/// A file of the tree, when it is a JSON object of at most [`MAX_LINE_BYTES`]; else a skip.
fn read_json(path: &Path, skips: &mut Vec<Skip>) -> Option<JsonFile> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            skips.push(skip(path, format!("cannot read: {e}")));
            return None;
        }
    };
    if meta.len() > MAX_LINE_BYTES as u64 {
        let reason = format!(
            "file too large: {} bytes, over the {MAX_LINE_BYTES}-byte limit",
            meta.len()
        );
        skips.push(skip(path, reason));
        return None;
    }
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as i64);
    let text = match std::fs::read(path).map(String::from_utf8) {
        Ok(Ok(text)) => text,
        Ok(Err(_)) => {
            skips.push(skip(path, "not UTF-8".into()));
            return None;
        }
        Err(e) => {
            skips.push(skip(path, format!("cannot read: {e}")));
            return None;
        }
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(value) if value.is_object() => Some(JsonFile { value, text, mtime }),
        Ok(_) => {
            skips.push(skip(path, "not a JSON object".into()));
            None
        }
        Err(e) => {
            skips.push(skip(path, format!("malformed JSON: {e}")));
            None
        }
    }
}

fn skip(path: &Path, reason: String) -> Skip {
    Skip {
        path: crate::paths::path_key(path),
        line: 0,
        reason,
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(crate::paths::os_key)
        .unwrap_or_default()
}
