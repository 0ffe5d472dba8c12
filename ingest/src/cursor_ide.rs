//! Cursor's IDE (its chat and agent panel, "composers"): the user dir (`~/.config/Cursor/User`
//! on Linux, `~/Library/Application Support/Cursor/User` on macOS; `$XDG_CONFIG_HOME/Cursor/
//! User` when set), every conversation in one SQLite key-value database,
//! `globalStorage/state.vscdb`, table `cursorDiskKV(key, value)`:
//!
//! - `composerData:<composer id>`: the conversation (`name`, `createdAt` and `lastUpdatedAt`
//!   in ms, `status`, `modelConfig.modelName`, `subComposerIds` for the conversations it
//!   started, and its messages' order as `fullConversationHeadersOnly: [{bubbleId, type}]`;
//!   older builds keep the messages inline as `conversation: [bubble]`).
//! - `bubbleId:<composer id>:<bubble id>`: one message ("bubble"): `type` 1 a prompt, 2 an
//!   answer, `text`, `createdAt`, `modelInfo.modelName`, `thinking.text`, a tool call as
//!   `toolFormerData {name, toolCallId, rawArgs, result, status}`, `workspaceProjectDir` and
//!   `workspaceUris` (the project).
//!
//! Read through `crate::database`: a session's lines are its composer row,
//! `{"db":"cursor","row":{"key":…,"value":{…}}}`, and one line per bubble in the order the
//! conversation shows them, each row verbatim. The composer row is stored without the editor
//! state Cursor rewrites on every keystroke and edit (the draft prompt `text`/`richText`,
//! `context`, `originalFileStates`, `codeBlockData`) and without the message list (the bubble
//! lines are the messages): the rest of it each time it changes, with the folder of the window
//! it was opened in when a workspace database beside the global one names it
//! (`workspaceStorage/<hash>/`: `workspace.json` the folder, its `state.vscdb` the
//! conversations; the project, else the one a prompt names). Bubbles of a branch the
//! conversation no longer shows (an edited prompt) are not read. The database keeps no time
//! per bubble, so a bubble is read again when its row changes (a digest of it); one Cursor
//! is still writing (named in `generatingBubbleIds`, or the last while the composer is
//! `generating`) is held back until it is done. Composers with no message (an empty panel
//! opened) are not sessions.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use pond_rows::clients;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension};
use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64;

use crate::common::{Common, MAX_LINE_BYTES};
use crate::model::{FileBatch, MessageRow, Origin, PartRow, Role};
use crate::source::{Database, DbSession, RecordParser, Rows, Source, SourceFile, Unit};
use crate::sqlite::{push_string, row_json};
use crate::text::{join_search, parse_ts, str_field};

/// Cursor's IDE: its user dir, conversations in `globalStorage/state.vscdb`.
pub static SOURCE: Source = Source {
    client: &clients::CURSOR_IDE,
    layout: &[],
    transcript: crate::source::every_file,
    sniff,
    parser: |file, common| Box::new(CursorIdeParser::new(file, common)),
    database: Some(&DATABASE),
    replayed: false,
    documents: false,
    text: false,
};

static DATABASE: Database = Database {
    file: "globalStorage/state.vscdb",
    tree: None,
    sessions,
    stamp,
    rows,
    timed: false,
};

const COMPOSER: &str = "composerData:";
const BUBBLE: &str = "bubbleId:";

/// The composer fields not stored: editor state, and the message list (see the module doc).
const NOT_STORED: &[&str] = &[
    "$.fullConversationHeadersOnly",
    "$.conversation",
    "$.conversationMap",
    "$.text",
    "$.richText",
    "$.context",
    "$.originalFileStates",
    "$.codeBlockData",
];

fn sniff(v: &Value) -> bool {
    v.get("db").and_then(Value::as_str) == Some("cursor")
}

/// The keys that start with `prefix`, as a range `[prefix, upper)` (`:` + 1 is `;`).
fn key_range(prefix: &str) -> (String, String) {
    let upper = match prefix.strip_suffix(':') {
        Some(p) => format!("{p};"),
        None => format!("{prefix}\u{10FFFF}"),
    };
    (prefix.to_owned(), upper)
}

fn has_table(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [name],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

fn sessions(conn: &Connection) -> rusqlite::Result<Vec<DbSession>> {
    // A database of Cursor's without conversations (a workspace's), or VS Code's own.
    if !has_table(conn, "cursorDiskKV")? {
        return Ok(Vec::new());
    }
    let (lo, hi) = key_range(COMPOSER);
    // A value that is not JSON is listed (its row is stored as read); the others when they
    // hold a message.
    let mut stmt = conn.prepare(
        "SELECT substr(key, length(?1) + 1),
                CASE WHEN json_valid(v) THEN json_extract(v, '$.subComposerIds') END,
                CASE WHEN json_valid(v) THEN json_extract(v, '$.createdAt') END,
                CASE WHEN json_valid(v)
                     THEN coalesce(json_array_length(v, '$.fullConversationHeadersOnly'), 0)
                        + coalesce(json_array_length(v, '$.conversation'), 0)
                     ELSE 1 END
         FROM (SELECT key, CAST(value AS TEXT) AS v FROM cursorDiskKV
               WHERE key >= ?1 AND key < ?2 AND value IS NOT NULL)",
    )?;
    let rows = stmt.query_map([&lo, &hi], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, Option<String>>(1)?,
            r.get::<_, SqlValue>(2)?,
            r.get::<_, i64>(3)?,
        ))
    })?;
    let mut found = Vec::new();
    let mut parent_of = HashMap::new();
    for row in rows {
        let (id, subs, created, messages) = row?;
        let subs: Vec<String> = subs
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default();
        for s in subs {
            parent_of.entry(s).or_insert_with(|| id.clone());
        }
        if messages > 0 {
            found.push((sql_ms(&created), id));
        }
    }
    found.sort();
    Ok(found
        .into_iter()
        .map(|(_, id)| DbSession {
            parent: parent_of.get(&id).filter(|p| **p != id).cloned(),
            id,
        })
        .collect())
}

/// A time Cursor wrote (field `key` of `v`) as ms or as RFC 3339 text, in ms.
fn ms(v: &Value, key: &str) -> Option<i64> {
    let t = v.get(key)?;
    t.as_i64().or_else(|| parse_ts(Some(t)))
}

/// [`ms`] of a column's value (0: none).
fn sql_ms(v: &SqlValue) -> i64 {
    match v {
        SqlValue::Integer(n) => *n,
        SqlValue::Real(f) => *f as i64,
        SqlValue::Text(s) => parse_ts(Some(&Value::from(s.as_str()))).unwrap_or(0),
        _ => 0,
    }
}

/// The bytes of a composer's row and of its bubbles' (and how many bubbles), and the
/// composer's `lastUpdatedAt`: without times per bubble, what tells that a conversation
/// changed. Read from the rows' sizes, not their contents.
fn stamp(conn: &Connection, id: &str) -> rusqlite::Result<(u64, i64)> {
    let (lo, hi) = key_range(&format!("{BUBBLE}{id}:"));
    conn.query_row(
        "SELECT (SELECT coalesce(sum(octet_length(value)), 0) + count(*) FROM cursorDiskKV
                 WHERE key >= ?2 AND key < ?3)
              + coalesce((SELECT octet_length(value) FROM cursorDiskKV WHERE key = ?1), 0),
                (SELECT CASE WHEN json_valid(v) THEN json_extract(v, '$.lastUpdatedAt') END
                 FROM (SELECT CAST(value AS TEXT) AS v FROM cursorDiskKV WHERE key = ?1))",
        [&format!("{COMPOSER}{id}"), &lo, &hi],
        |r| Ok((r.get::<_, i64>(0)? as u64, sql_ms(&r.get(1)?))),
    )
}

fn digest(s: &str) -> i64 {
    xxh3_64(s.as_bytes()) as i64
}

/// What the composer row says of its messages: their order, which are still being written.
struct Conversation {
    headers: Vec<String>,
    inline: Vec<Value>,
    generating: Vec<String>,
    busy: bool,
    updated: i64,
}

fn conversation(v: &Value) -> Conversation {
    let ids = |key: &str, field: Option<&str>| -> Vec<String> {
        v.get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|h| match field {
                Some(f) => h.get(f),
                None => Some(h),
            })
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect()
    };
    Conversation {
        headers: ids("fullConversationHeadersOnly", Some("bubbleId")),
        inline: v
            .get("conversation")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        generating: ids("generatingBubbleIds", None),
        busy: v.get("status").and_then(Value::as_str) == Some("generating"),
        updated: ms(v, "lastUpdatedAt").or(ms(v, "createdAt")).unwrap_or(0),
    }
}

fn rows(conn: &Connection, id: &str, _since: i64) -> rusqlite::Result<Rows> {
    let key = format!("{COMPOSER}{id}");
    let remove = NOT_STORED
        .iter()
        .map(|p| format!("'{p}'"))
        .collect::<Vec<_>>();
    let composer = conn
        .query_row(
            &format!(
                "SELECT key, CASE WHEN json_valid(v) THEN json_remove(v, {}) ELSE v END AS value
                 FROM (SELECT key, CAST(value AS TEXT) AS v FROM cursorDiskKV WHERE key = ?1)",
                remove.join(", ")
            ),
            [&key],
            |r| row_json(r, &["value"]),
        )
        .optional()?;
    let Some(row) = composer else {
        return Ok(Rows {
            session: None,
            units: Vec::new(),
        });
    };
    let mut line = format!(r#"{{"db":"cursor","row":{row}"#);
    // The folder of the window it was opened in, when a workspace database names it.
    if let Some(folder) = conn
        .path()
        .and_then(|p| workspaces(Path::new(p)).get(id).cloned())
    {
        line.push_str(r#","workspace":"#);
        push_string(&mut line, &folder);
    }
    line.push('}');
    // What orders its messages, from the parts of the row not stored.
    let order: Option<String> = conn.query_row(
        "SELECT CASE WHEN json_valid(v) THEN json_object(
                    'fullConversationHeadersOnly', json_extract(v, '$.fullConversationHeadersOnly'),
                    'conversation', json_extract(v, '$.conversation'),
                    'generatingBubbleIds', json_extract(v, '$.generatingBubbleIds'),
                    'status', json_extract(v, '$.status'),
                    'lastUpdatedAt', json_extract(v, '$.lastUpdatedAt'),
                    'createdAt', json_extract(v, '$.createdAt')) END
         FROM (SELECT CAST(value AS TEXT) AS v FROM cursorDiskKV WHERE key = ?1)",
        [&key],
        |r| r.get(0),
    )?;
    let conv = conversation(
        &order
            .and_then(|o| serde_json::from_str(&o).ok())
            .unwrap_or(Value::Null),
    );
    let session = Some((digest(&line), line));

    let (lo, hi) = key_range(&format!("{BUBBLE}{id}:"));
    // A bubble too large to be a line is not built: its size is read from its row's header.
    let limit = MAX_LINE_BYTES as i64;
    let mut stmt = conn.prepare(
        "SELECT key, octet_length(value) FROM cursorDiskKV
         WHERE key >= ?1 AND key < ?2 AND octet_length(value) > ?3",
    )?;
    let prefix = lo.len();
    let mut too_large = HashMap::new();
    for r in stmt.query_map(rusqlite::params![&lo, &hi, limit], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
    })? {
        let (k, bytes) = r?;
        too_large.insert(k[prefix..].to_owned(), bytes);
    }
    let mut stmt = conn.prepare(
        "SELECT key, value FROM cursorDiskKV
         WHERE key >= ?1 AND key < ?2 AND coalesce(octet_length(value), 0) <= ?3",
    )?;
    let mut bubbles = HashMap::new();
    for r in stmt.query_map(rusqlite::params![&lo, &hi, limit], |r| {
        Ok((r.get::<_, String>(0)?, row_json(r, &["value"])?))
    })? {
        let (k, row) = r?;
        bubbles.insert(k[prefix..].to_owned(), row);
    }
    let last = conv.headers.last().cloned();
    let mut units = Vec::new();
    for b in &conv.headers {
        let writing = conv.generating.contains(b) || (conv.busy && last.as_ref() == Some(b));
        if let Some(bytes) = too_large.remove(b) {
            units.push(Unit {
                id: b.clone(),
                updated: conv.updated,
                version: bytes,
                complete: !writing,
                line: String::new(),
                too_large: Some(bytes as u64),
            });
            continue;
        }
        let Some(row) = bubbles.remove(b) else {
            continue;
        };
        units.push(Unit {
            id: b.clone(),
            updated: conv.updated,
            version: digest(&row),
            complete: !writing,
            line: format!(r#"{{"db":"cursor","row":{row}}}"#),
            too_large: None,
        });
    }
    // Older builds: the messages inline in the composer row.
    for (i, b) in conv.inline.iter().enumerate() {
        let bid = str_field(b, "bubbleId").unwrap_or_else(|| format!("{id}:{i}"));
        let mut line = String::from(r#"{"db":"cursor","composer":"#);
        push_string(&mut line, id);
        line.push_str(r#","bubble":"#);
        line.push_str(&b.to_string());
        line.push('}');
        units.push(Unit {
            id: bid.clone(),
            updated: conv.updated,
            version: digest(&line),
            complete: !conv.generating.contains(&bid),
            line,
            too_large: None,
        });
    }
    Ok(Rows { session, units })
}

/// Conversation id to the folder of the window it was opened in.
type Folders = HashMap<String, String>;

/// The folder each conversation was opened in, from Cursor's workspace databases beside the
/// global one: `workspaceStorage/<hash>/workspace.json` names the folder (`folder`, or the
/// `workspace` file's), `<hash>/state.vscdb` lists the conversations of that window
/// (`ItemTable` `composer.composerData`: `allComposers[].composerId`). Read once per process
/// (a sync worker) for each global database; a workspace that cannot be read names nothing.
fn workspaces(global: &Path) -> Arc<Folders> {
    static SEEN: Mutex<Vec<(PathBuf, Arc<Folders>)>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, m)) = seen.iter().find(|(p, _)| p == global) {
        return m.clone();
    }
    let mut map = HashMap::new();
    let root = global
        .parent()
        .and_then(Path::parent)
        .map(|u| u.join("workspaceStorage"));
    for dir in root
        .and_then(|r| std::fs::read_dir(r).ok())
        .into_iter()
        .flatten()
        .flatten()
    {
        let dir = dir.path();
        let Some(folder) = crate::paths::workspace_folder(&dir) else {
            continue;
        };
        for id in workspace_composers(&dir.join("state.vscdb")) {
            map.entry(id).or_insert_with(|| folder.clone());
        }
    }
    let map = Arc::new(map);
    seen.push((global.to_path_buf(), map.clone()));
    map
}

fn workspace_composers(db: &Path) -> Vec<String> {
    let Ok(conn) = crate::sqlite::open(db) else {
        return Vec::new();
    };
    let value: Option<String> = conn
        .query_row(
            "SELECT CAST(value AS TEXT) FROM ItemTable WHERE key = 'composer.composerData'",
            [],
            |r| r.get(0),
        )
        .ok()
        .flatten();
    let Some(v) = value.and_then(|v| serde_json::from_str::<Value>(&v).ok()) else {
        return Vec::new();
    };
    v.get("allComposers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| str_field(c, "composerId"))
        .collect()
}

pub struct CursorIdeParser {
    subagent: bool,
}

impl CursorIdeParser {
    fn new(file: &SourceFile, common: &mut Common) -> Self {
        CursorIdeParser {
            subagent: file.start_database_session(common),
        }
    }

    fn composer(&mut self, c: &mut Common, v: &Value, raw: &str) {
        if let Some(id) = str_field(v, "composerId").filter(|s| !s.is_empty()) {
            c.session.id = id;
        }
        if c.session.header.is_none() {
            c.session.header = Some(raw.to_owned());
        }
        if let Some(t) = str_field(v, "name").filter(|t| !t.trim().is_empty()) {
            c.session.title = Some(t);
        }
        c.span(ms(v, "createdAt"), ms(v, "lastUpdatedAt"));
    }

    fn bubble(&self, c: &mut Common, line_no: u64, b: &Value, out: &mut FileBatch) -> String {
        let Some(id) = str_field(b, "bubbleId").filter(|s| !s.is_empty()) else {
            return "bubble".into();
        };
        let (role, kind) = match b.get("type").and_then(Value::as_i64) {
            Some(1) => (Role::User, "bubble/user"),
            Some(2) => (Role::Assistant, "bubble/assistant"),
            _ => (Role::System, "bubble/other"),
        };
        if c.session.project.is_none() {
            c.session.project = project(b);
        }
        let created = ms(b, "createdAt").or(ms(b, "timestamp"));
        let ts = c.touch(created);
        let m = MessageRow {
            model: b
                .pointer("/modelInfo/modelName")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .map(str::to_owned),
            // Ids are Cursor's own, one row per bubble.
            ..c.message(id, ts, role, self.source_agent(), line_no, Origin::Own)
        };
        let mut parts = Vec::new();
        let mut said = Vec::new();
        let thinking = b
            .pointer("/thinking/text")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty());
        if let Some(t) = thinking {
            parts.push(PartRow::with_text(&m, 0, "thinking", Some(t.to_owned())));
        }
        let text = ["text", "rawText"]
            .iter()
            .find_map(|k| str_field(b, k).filter(|t| !t.trim().is_empty()));
        if let Some(t) = text {
            said.push(t.clone());
            parts.push(PartRow::with_text(&m, 0, "text", Some(t)));
        }
        if let Some(tool) = b.get("toolFormerData").filter(|t| t.is_object()) {
            tool_parts(&m, tool, &mut parts);
        }
        if parts.is_empty() {
            // A bubble with nothing said (a step of Cursor's UI): its record only.
            return format!("{kind}/empty");
        }
        let m = MessageRow {
            search_text: matches!(role, Role::User | Role::Assistant)
                .then(|| join_search(said))
                .flatten(),
            ..m
        };
        out.push_message(m, parts);
        kind.into()
    }
}

/// A tool bubble's call, and its result once it ran (`status` `completed` or `error`).
fn tool_parts(m: &MessageRow, tool: &Value, parts: &mut Vec<PartRow>) {
    let mut call = PartRow::of(m, 0, "tool_call");
    call.call_id = str_field(tool, "toolCallId");
    call.tool_name = str_field(tool, "name");
    call.body = match tool.get("rawArgs").or_else(|| tool.get("params")) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(v) if !v.is_null() => Some(v.to_string()),
        _ => None,
    };
    let (call_id, name) = (call.call_id.clone(), call.tool_name.clone());
    parts.push(call);
    let status = tool.get("status").and_then(Value::as_str);
    let result = match tool.get("result") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(v) if !v.is_null() => Some(v.to_string()),
        _ => None,
    };
    if result.is_none() && !matches!(status, Some("completed" | "error")) {
        return;
    }
    let mut r = PartRow::with_text(m, 0, "tool_result", result);
    r.call_id = call_id;
    r.tool_name = name;
    r.is_error = Some(status == Some("error"));
    parts.push(r);
}

/// The project a bubble names: `workspaceProjectDir`, else its first `file://` workspace.
fn project(b: &Value) -> Option<String> {
    if let Some(d) = str_field(b, "workspaceProjectDir").filter(|d| !d.is_empty()) {
        return Some(d);
    }
    b.get("workspaceUris")
        .and_then(Value::as_array)?
        .iter()
        .filter_map(Value::as_str)
        .find_map(crate::paths::file_uri_path)
}

impl RecordParser for CursorIdeParser {
    fn source_agent(&self) -> &'static str {
        SOURCE.agent(self.subagent)
    }

    fn line(
        &mut self,
        c: &mut Common,
        line_no: u64,
        v: &Value,
        raw: &str,
        out: &mut FileBatch,
    ) -> Option<String> {
        if let Some(b) = v.get("bubble") {
            return Some(self.bubble(c, line_no, b, out));
        }
        let row = v.get("row")?;
        let key = row.get("key").and_then(Value::as_str).unwrap_or("");
        let value = &row["value"];
        if let Some(id) = key.strip_prefix(COMPOSER) {
            if c.session.id.is_empty() {
                c.session.id = id.to_owned();
            }
            self.composer(c, value, raw);
            if let Some(w) = str_field(v, "workspace").filter(|w| !w.is_empty()) {
                c.session.project = Some(w);
            }
            Some("composer".into())
        } else if key.starts_with(BUBBLE) {
            if value.get("bubbleId").is_none() {
                // Rows of every build carry their id in the key.
                let mut b = value.clone();
                if let (Some(o), Some(id)) = (b.as_object_mut(), key.rsplit(':').next()) {
                    o.insert("bubbleId".into(), id.into());
                    return Some(self.bubble(c, line_no, &b, out));
                }
                return Some("bubble".into());
            }
            Some(self.bubble(c, line_no, value, out))
        } else {
            Some("row".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_ranges_cover_a_prefix() {
        assert_eq!(
            key_range("bubbleId:c1:"),
            ("bubbleId:c1:".into(), "bubbleId:c1;".into())
        );
    }
}
