//! OpenCode: `$XDG_DATA_HOME/opencode` or `~/.local/share/opencode`, every session in one
//! SQLite database, `opencode.db`: `session` (id, `parent_id` for a subagent's session,
//! title, directory, times), `project` (`worktree`), `message` and `part` (each with its
//! `session_id`, `time_created`, `time_updated` in ms, and a JSON `data` column).
//!
//! Read through `crate::database`: a session's lines are its `session` row (with the
//! project's worktree) and one line per message with its parts,
//! `{"db":"opencode","table":"message","row":{...},"parts":[{...}]}`, every column
//! verbatim. A message is complete when it is a prompt with its parts, or an answer whose
//! `time.completed` or `error` is set.
//!
//! Message `data`: `role` (`user`, `assistant`), `time.created`, the model (`modelID`, or a
//! prompt's `model.modelID`), an answer's `path.cwd` and `error`. Part `data.type`: `text`
//! (searchable unless `synthetic` or `ignored`), `reasoning` (thinking), `tool` (`callID`,
//! `tool`, `state` with `status`, `input`, and `output` or `error`; a failed call, or a
//! `bash` call whose `metadata.exit` is not 0, is an error), `file`, `subtask`, `agent`,
//! `patch`, `retry`, `compaction` (kept as parts of their type); `step-start`,
//! `step-finish` and `snapshot` are kept in records only.

use pond_rows::clients;
use rusqlite::{Connection, OptionalExtension};
use serde_json::Value;

use crate::common::Common;
use crate::model::{tokens, FileBatch, MessageRow, Origin, PartRow, Role, UsageRow};
use crate::source::{Database, DbSession, RecordParser, Rows, Source, SourceFile, Tree, Unit};
use crate::sqlite::{push_string, row_bytes_sql, row_json};
use crate::text::{join_search, str_field};

/// OpenCode: `$XDG_DATA_HOME/opencode` or `~/.local/share/opencode`, sessions in
/// `opencode.db`.
pub static SOURCE: Source = Source {
    client: &clients::OPENCODE,
    layout: &[],
    transcript: crate::source::every_file,
    sniff,
    parser: |file, common| Box::new(OpenCodeParser::new(file, common)),
    database: Some(&DATABASE),
    replayed: false,
    documents: false,
    text: false,
};

static DATABASE: Database = Database {
    file: "opencode.db",
    tree: Some(Tree {
        folder: "storage",
        load: crate::opencode_storage::load,
        stamp: crate::opencode_storage::stamp,
    }),
    sessions,
    stamp,
    rows,
    timed: true,
};

/// The JSON columns of OpenCode's tables.
const JSON_COLUMNS: &[&str] = &[
    "data",
    "summary_diffs",
    "metadata",
    "revert",
    "permission",
    "model",
];

fn sniff(v: &Value) -> bool {
    v.get("db").and_then(Value::as_str) == Some("opencode")
}

/// Whether `table` has `column` (older and forked schemas lack some).
fn has_column(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({table})"))?;
    let names = stmt.query_map([], |r| r.get::<_, String>(1))?;
    for n in names {
        if n? == column {
            return Ok(true);
        }
    }
    Ok(false)
}

fn sessions(conn: &Connection) -> rusqlite::Result<Vec<DbSession>> {
    let parent = if has_column(conn, "session", "parent_id")? {
        "parent_id"
    } else {
        "NULL"
    };
    let mut stmt = conn.prepare(&format!(
        "SELECT id, {parent} FROM session ORDER BY time_created, id"
    ))?;
    let rows = stmt.query_map([], |r| {
        Ok(DbSession {
            id: r.get(0)?,
            parent: r.get(1)?,
        })
    })?;
    rows.collect()
}

fn stamp(conn: &Connection, id: &str) -> rusqlite::Result<(u64, i64)> {
    conn.query_row(
        "SELECT (SELECT count(*) FROM message WHERE session_id = ?1)
              + (SELECT count(*) FROM part WHERE session_id = ?1),
                max(coalesce((SELECT max(time_updated) FROM message WHERE session_id = ?1), 0),
                    coalesce((SELECT max(time_updated) FROM part WHERE session_id = ?1), 0),
                    coalesce((SELECT time_updated FROM session WHERE id = ?1), 0))",
        [id],
        |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)),
    )
}

fn rows(conn: &Connection, id: &str, since: i64) -> rusqlite::Result<Rows> {
    let session = conn
        .query_row("SELECT * FROM session WHERE id = ?1", [id], |r| {
            let updated = r.get::<_, Option<i64>>("time_updated").unwrap_or(None);
            Ok((updated.unwrap_or(0), row_json(r, JSON_COLUMNS)?))
        })
        .optional()?;
    let session = match session {
        Some((updated, row)) => {
            let mut line = String::from(r#"{"db":"opencode","table":"session","row":"#);
            line.push_str(&row);
            // The project's worktree: the session's directory on schemas that lack one.
            let worktree: Option<String> = conn
                .query_row(
                    "SELECT worktree FROM project WHERE id = (SELECT project_id FROM session WHERE id = ?1)",
                    [id],
                    |r| r.get(0),
                )
                .optional()
                .unwrap_or(None);
            if let Some(w) = worktree {
                line.push_str(r#","worktree":"#);
                push_string(&mut line, &w);
            }
            line.push('}');
            Some((updated, line))
        }
        None => None,
    };
    // Each message's newest update, its own or a part's.
    let mut stmt = conn.prepare(
        "SELECT id, max(time_updated, coalesce((SELECT max(p.time_updated) FROM part p
                WHERE p.message_id = m.id), 0)) AS updated
         FROM message m WHERE session_id = ?1 ORDER BY time_created, id",
    )?;
    let changed: Vec<(String, i64)> = stmt
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .filter(|r| r.as_ref().map_or(true, |(_, t)| *t > since))
        .collect::<rusqlite::Result<_>>()?;
    // A message's bytes with its parts', from the rows' headers: one too large to be a
    // line is not built.
    let mut bytes = conn.prepare(&format!(
        "SELECT ({}) + coalesce((SELECT sum({}) FROM part WHERE message_id = ?1), 0)
         FROM message WHERE id = ?1",
        row_bytes_sql(conn, "message")?,
        row_bytes_sql(conn, "part")?
    ))?;
    let mut message = conn.prepare("SELECT * FROM message WHERE id = ?1")?;
    let mut parts = conn.prepare("SELECT * FROM part WHERE message_id = ?1 ORDER BY id")?;
    let mut units = Vec::with_capacity(changed.len());
    for (mid, updated) in changed {
        let size = bytes.query_row([&mid], |r| r.get::<_, i64>(0))? as u64;
        if Unit::too_large(size) {
            units.push(Unit {
                id: mid,
                updated,
                version: updated,
                complete: true,
                line: String::new(),
                too_large: Some(size),
            });
            continue;
        }
        let row = message.query_row([&mid], |r| row_json(r, JSON_COLUMNS))?;
        let part_rows: Vec<String> = parts
            .query_map([&mid], |r| row_json(r, JSON_COLUMNS))?
            .collect::<rusqlite::Result<_>>()?;
        let mut line = String::from(r#"{"db":"opencode","table":"message","row":"#);
        line.push_str(&row);
        line.push_str(r#","parts":["#);
        line.push_str(&part_rows.join(","));
        line.push_str("]}");
        let complete = complete(&row, part_rows.len());
        units.push(Unit {
            id: mid,
            updated,
            version: updated,
            complete,
            line,
            too_large: None,
        });
    }
    Ok(Rows { session, units })
}

/// Whether OpenCode has finished writing a message: a prompt once it has its parts, an
/// answer once it completed or failed.
fn complete(row: &str, parts: usize) -> bool {
    // Only what is asked is built (the rest of the row is skipped over, not made a `Value`).
    #[derive(serde::Deserialize)]
    struct Row {
        data: Data,
    }
    #[derive(serde::Deserialize)]
    struct Data {
        role: Option<Value>,
        time: Option<Value>,
        error: Option<serde::de::IgnoredAny>,
    }
    // A row whose data is not an object (kept as the text it was) is complete.
    let Ok(Row { data }) = serde_json::from_str::<Row>(row) else {
        return true;
    };
    match data.role.as_ref().and_then(Value::as_str) {
        Some("user") => parts > 0,
        Some("assistant") => {
            data.time
                .as_ref()
                .and_then(|t| t.get("completed"))
                .is_some_and(|t| !t.is_null())
                || data.error.is_some()
        }
        _ => true,
    }
}

pub struct OpenCodeParser {
    subagent: bool,
}

impl OpenCodeParser {
    fn new(file: &SourceFile, common: &mut Common) -> Self {
        OpenCodeParser {
            subagent: file.start_database_session(common),
        }
    }

    fn session(&mut self, c: &mut Common, v: &Value, raw: &str) {
        let row = &v["row"];
        if let Some(id) = str_field(row, "id").filter(|s| !s.is_empty()) {
            c.session.id = id;
        }
        if let Some(p) = str_field(row, "parent_id").filter(|s| !s.is_empty()) {
            c.session.parent_id = Some(p);
            self.subagent = true;
        }
        if c.session.header.is_none() {
            c.session.header = Some(raw.to_owned());
        }
        if let Some(t) = str_field(row, "title").filter(|t| !t.trim().is_empty()) {
            c.session.title = Some(t);
        }
        // The global project's worktree is `/`: the session's own directory says more.
        let dir = str_field(row, "directory")
            .or_else(|| str_field(v, "worktree"))
            .filter(|d| !d.is_empty() && d != "/");
        if dir.is_some() {
            c.session.project = dir;
        }
        c.span(
            row.get("time_created").and_then(Value::as_i64),
            row.get("time_updated").and_then(Value::as_i64),
        );
    }

    fn message(&self, c: &mut Common, line_no: u64, v: &Value, out: &mut FileBatch) -> String {
        let row = &v["row"];
        let data = &row["data"];
        let Some(id) = str_field(row, "id").filter(|s| !s.is_empty()) else {
            return "message".into();
        };
        if c.session.id.is_empty() {
            c.session.id = str_field(row, "session_id").unwrap_or_default();
        }
        let role_name = data.get("role").and_then(Value::as_str).unwrap_or("");
        let role = match role_name {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            _ => Role::System,
        };
        if c.session.project.is_none() {
            c.session.project = data
                .pointer("/path/cwd")
                .and_then(Value::as_str)
                .filter(|d| !d.is_empty() && *d != "/")
                .map(str::to_owned);
        }
        let created = data
            .pointer("/time/created")
            .and_then(Value::as_i64)
            .or_else(|| row.get("time_created").and_then(Value::as_i64));
        let ts = c.touch(created);
        let model = str_field(data, "modelID").or_else(|| {
            data.pointer("/model/modelID")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        let m = MessageRow {
            model,
            // Ids are OpenCode's own, one row per message.
            ..c.message(id, ts, role, self.source_agent(), line_no, Origin::Own)
        };
        if let Some(t) = data
            .get("tokens")
            .filter(|t| t.is_object() && role == Role::Assistant)
        {
            out.push_usage(usage(c, &m, t, data.get("cost").and_then(Value::as_f64)));
        }
        let mut parts = Vec::new();
        let mut said = Vec::new();
        for p in v
            .get("parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            part(&m, &p["data"], &mut parts, &mut said);
        }
        if let Some(e) = data.get("error").filter(|e| !e.is_null()) {
            let text = e
                .pointer("/data/message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| str_field(e, "name"))
                .unwrap_or_else(|| e.to_string());
            let mut p = PartRow::with_text(&m, 0, "error", Some(text));
            p.is_error = Some(true);
            parts.push(p);
        }
        let m = MessageRow {
            search_text: matches!(role, Role::User | Role::Assistant)
                .then(|| join_search(said))
                .flatten(),
            ..m
        };
        out.push_message(m, parts);
        format!("message/{role_name}")
    }
}

/// An answer's `tokens {input, output, reasoning, cache {read, write}}` and the `cost`
/// OpenCode recorded for it. OpenCode counts reasoning apart from output (and charges it
/// at the output price): added to `output` here, where every client's output includes it.
fn usage(c: &Common, m: &MessageRow, t: &Value, cost: Option<f64>) -> UsageRow {
    let cache = t.get("cache").unwrap_or(&Value::Null);
    let reasoning = tokens(t, "reasoning");
    UsageRow {
        message_id: Some(m.id.clone()),
        model: m.model.clone(),
        input: tokens(t, "input"),
        output: tokens(t, "output").saturating_add(reasoning),
        cache_write: tokens(cache, "write"),
        cache_read: tokens(cache, "read"),
        reasoning,
        cost_usd: cost,
        ..c.usage_row(
            format!("{}:{}", m.session_id, m.id),
            m.timestamp,
            &m.source_agent,
            m.source_line,
        )
    }
}

/// One part's rows (a tool part: its call, and its result once it ran), and its text in
/// `said` when it is conversational.
fn part(m: &MessageRow, data: &Value, parts: &mut Vec<PartRow>, said: &mut Vec<String>) {
    let ty = data
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let flag = |k: &str| data.get(k).and_then(Value::as_bool).unwrap_or(false);
    match ty {
        "text" => {
            let text = str_field(data, "text");
            if let Some(t) = &text {
                if !flag("synthetic") && !flag("ignored") {
                    said.push(t.clone());
                }
            }
            parts.push(PartRow::with_text(m, 0, "text", text));
        }
        "reasoning" => parts.push(PartRow::with_text(
            m,
            0,
            "thinking",
            str_field(data, "text"),
        )),
        "tool" => {
            let state = &data["state"];
            let mut call = PartRow::of(m, 0, "tool_call");
            call.call_id = str_field(data, "callID");
            call.tool_name = str_field(data, "tool");
            call.body = state.get("input").map(Value::to_string);
            let (call_id, tool) = (call.call_id.clone(), call.tool_name.clone());
            parts.push(call);
            let (text, failed) = match state.get("status").and_then(Value::as_str) {
                Some("completed") => {
                    let exit = state.pointer("/metadata/exit").and_then(Value::as_i64);
                    (str_field(state, "output"), exit.is_some_and(|e| e != 0))
                }
                Some("error") => (str_field(state, "error"), true),
                _ => return,
            };
            let mut r = PartRow::with_text(m, 0, "tool_result", text);
            r.call_id = call_id;
            r.tool_name = tool;
            r.is_error = Some(failed);
            parts.push(r);
        }
        "step-start" | "step-finish" | "snapshot" => {}
        "file" => {
            let mut body = data.clone();
            // An attachment inline (`data:` URL) stays in records only.
            if let Some(o) = body.as_object_mut() {
                if o.get("url")
                    .and_then(Value::as_str)
                    .is_some_and(|u| u.starts_with("data:"))
                {
                    o.remove("url");
                }
            }
            let mut p = PartRow::with_text(m, 0, "file", str_field(data, "filename"));
            p.body = Some(body.to_string());
            parts.push(p);
        }
        "subtask" => {
            let mut p = PartRow::with_text(m, 0, "subtask", str_field(data, "prompt"));
            p.tool_name = str_field(data, "agent");
            p.body = Some(data.to_string());
            parts.push(p);
        }
        other => {
            let text = str_field(data, "name").or_else(|| str_field(data, "text"));
            let mut p = PartRow::with_text(m, 0, other, text);
            p.body = Some(data.to_string());
            parts.push(p);
        }
    }
}

impl RecordParser for OpenCodeParser {
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
        match v.get("table").and_then(Value::as_str) {
            Some("session") => {
                self.session(c, v, raw);
                Some("session".into())
            }
            Some("message") => Some(self.message(c, line_no, v, out)),
            other => other.map(str::to_owned),
        }
    }
}
