//! The `pond://schema` resource: every table's columns and types, what each holds, and
//! worked examples for pond_sql.

use pond_store::schema;

/// The schema resource: every table's columns and types, what each holds, and worked
/// examples.
pub fn schema_text() -> String {
    let mut out = String::from("# pond SQL schema\n\nOne read-only SELECT (or WITH ... SELECT) per call, DataFusion SQL dialect. Timestamps are UTC (Timestamp(ms)); compare with `timestamp >= '2026-03-01'`.\n\n");
    let schemas = [
        (schema::SESSIONS, &*schema::SESSIONS_SCHEMA),
        (schema::MESSAGES, &*schema::MESSAGES_SCHEMA),
        (schema::PARTS, &*schema::PARTS_SCHEMA),
        (schema::RECORDS, &*schema::RECORDS_SCHEMA),
        (schema::FILES, &*schema::FILES_SCHEMA),
        (schema::USAGE, &*schema::USAGE_SCHEMA),
    ];
    for (name, s) in schemas {
        let about = pond_store::sql::TABLES
            .iter()
            .find(|(t, _)| *t == name)
            .map(|(_, d)| d.split(':').next().unwrap_or(d))
            .unwrap_or("");
        out.push_str(&format!("## {name}\n{about}.\n\n"));
        for f in s.fields() {
            out.push_str(&format!(
                "- `{}` {}{}\n",
                f.name(),
                f.data_type(),
                if f.is_nullable() { "" } else { " (never null)" }
            ));
        }
        out.push('\n');
    }
    out.push_str(EXAMPLES);
    out
}

const EXAMPLES: &str = "## Notes\n- `messages.search_text` is the conversational text (null for pure tool traffic); `searchable` is `search_text IS NOT NULL`.\n- A session lists every message line of its own file, so a message id can occur in several sessions (a subagent replays its parent's lines; a resumed session copies its predecessor's): the occurrence that owns it has `replayed = false`, the copies `replayed = true` (and no search text). Count distinct messages with `WHERE NOT replayed`.\n- `parts` holds every content block: `part_type` is text, thinking, tool_call, tool_result, image, or the client's own kind (an error, a file, a subtask); a tool result's `call_id` joins its call.\n- `records.raw` is every source line verbatim.\n- `usage` holds the token counts clients record (Claude Code, Codex, Gemini CLI, OpenCode; not Copilot, VS Code or Cursor): `input_tokens` is input not read from a cache, `output_tokens` includes `reasoning_tokens`; `cost_usd` is set only where the client recorded a cost. A subagent's calls have its parent's `session_id`.\n- `sessions.source_agent` is claude-code, claude-code/subagent, codex, copilot (GitHub Copilot CLI), cursor (Cursor's agent transcripts, CLI and IDE), cursor-ide or cursor-ide/subagent (Cursor IDE's conversations), gemini or gemini/subagent (Gemini CLI), opencode or opencode/subagent (OpenCode), vscode-copilot (VS Code's Copilot Chat); subagent sessions have `parent_session_id`.\n- OpenCode and Cursor's IDE keep their sessions in a database: `source_path` is the database's path with the session id under it, and a record (`records.raw`) is a row as the client wrote it: OpenCode's session row or a message row with its parts, Cursor's conversation row (`composerData`, without its editor state) or a message row (`bubbleId`).\n- VS Code's Copilot Chat keeps a session as a log of changes to one document (`kind` 0 the document, 1 set, 2 push, 3 delete at the key path `k`): each line is a record, and its messages come from the document the whole log makes (a message's `source_line` is the line that added its turn).\n\n## Examples\nSessions per project:\n```sql\nSELECT project, count(*) AS sessions, max(updated_at) AS last FROM sessions GROUP BY project ORDER BY sessions DESC LIMIT 20\n```\nThe latest sessions with titles:\n```sql\nSELECT id, title, project, updated_at FROM sessions ORDER BY updated_at DESC LIMIT 10\n```\nTools used most, and how often they failed:\n```sql\nSELECT tool_name, count(*) AS calls, sum(CASE WHEN is_error THEN 1 ELSE 0 END) AS errors FROM parts WHERE part_type = 'tool_result' GROUP BY tool_name ORDER BY calls DESC LIMIT 20\n```\nMessages per day in one project:\n```sql\nSELECT date_trunc('day', timestamp) AS day, count(*) AS n FROM messages WHERE project LIKE '%myrepo%' GROUP BY 1 ORDER BY 1\n```\nTokens per day and model (one row per model call, each call once; pond_usage adds the cost):\n```sql\nSELECT date_trunc('day', timestamp) AS day, model, sum(input_tokens) AS input, sum(output_tokens) AS output, sum(cache_write_tokens) AS cache_write, sum(cache_read_tokens) AS cache_read FROM usage GROUP BY 1, 2 ORDER BY 1, 2\n```\nShell commands run in a session:\n```sql\nSELECT ordinal, body FROM parts WHERE session_id = '<id>' AND part_type = 'tool_call' AND tool_name IN ('Bash', 'shell') ORDER BY message_id, ordinal LIMIT 50\n```\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_resource_names_every_table_and_column() {
        let s = schema_text();
        for (table, _) in pond_store::sql::TABLES {
            assert!(s.contains(&format!("## {table}\n")), "{table}");
        }
        assert!(s.contains("`search_text` Utf8"));
        assert!(s.contains("```sql"));
    }

    #[test]
    fn the_texts_an_agent_reads_name_every_client() {
        let filter_doc = include_str!("../params.rs");
        for name in pond_rows::clients::agent_names() {
            assert!(schema_text().contains(name), "schema resource: {name}");
            assert!(
                filter_doc.contains(&format!("`{name}`")),
                "source_agent doc: {name}"
            );
        }
    }
}
