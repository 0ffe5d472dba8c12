//! The Arrow schemas of pond's Lance datasets, and row <-> batch conversion.
//!
//! | dataset    | one row per                | key                         |
//! |------------|----------------------------|-----------------------------|
//! | `sessions` | session (source file)      | `id`                        |
//! | `messages` | message line of a session  | `session_id`, `id`          |
//! | `parts`    | content block of a message | `message_id`, `ordinal`     |
//! | `records`  | source line, verbatim      | `source_path`, `line`       |
//! | `files`    | source file's ingest state | `path`                      |
//! | `usage`    | model call's token counts  | `key`                       |
//!
//! `records` is where nothing is lost: every source line verbatim, message or not, stored
//! once with its file, line and byte offset. `sessions`, `messages`, `parts` and `usage` are
//! derived from the lines and can be derived again from `records` alone (an upgrade, a
//! repair, a forget), without the source files. `messages.search_text` holds conversational
//! text only (user prompts, assistant text; none for tool traffic, thinking, harness text or
//! a replayed copy), which is what the full-text index and the embeddings cover; everything
//! else stays reachable through `parts`. Vectors are a dataset of their own
//! (`crate::vectors`).

use std::sync::{Arc, LazyLock};

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, StringBuilder, TimestampMillisecondBuilder, UInt32Builder,
    UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use pond_rows::{MessageRow, PartRow, RecordRow, SessionRow, UsageRow};

use crate::error::Result;

pub const SESSIONS: &str = "sessions";
pub const MESSAGES: &str = "messages";
pub const PARTS: &str = "parts";
pub const RECORDS: &str = "records";
pub const FILES: &str = "files";
pub const USAGE: &str = "usage";
/// Every dataset, in the order a sync writes them.
pub const ALL_TABLES: [&str; 6] = [MESSAGES, PARTS, RECORDS, USAGE, SESSIONS, FILES];

fn ts() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
}

fn utf8(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Utf8, nullable)
}

pub static SESSIONS_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        utf8("id", false),
        utf8("parent_session_id", true),
        utf8("source_agent", false),
        utf8("project", true),
        Field::new("created_at", ts(), true),
        Field::new("updated_at", ts(), true),
        utf8("title", true),
        utf8("source_path", false),
        utf8("header", true),
    ]))
});

pub static MESSAGES_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        utf8("session_id", false),
        utf8("id", false),
        Field::new("timestamp", ts(), false),
        utf8("role", false),
        utf8("source_agent", false),
        utf8("project", true),
        utf8("search_text", true),
        // `search_text IS NOT NULL`, kept as its own narrow column: counting the messages in
        // a search's scope then reads bits, not every message's text.
        Field::new("searchable", DataType::Boolean, false),
        utf8("model", true),
        utf8("source_path", false),
        Field::new("source_line", DataType::UInt64, false),
        // The line's claim to be the original of `id`: own, copied or sidechain
        // (`pond_rows::Origin`).
        utf8("origin", false),
        // Another session's line owns this id: this row is its replayed copy (not
        // searchable; its session still lists it).
        Field::new("replayed", DataType::Boolean, false),
    ]))
});

/// The `messages` columns a store written before messages were kept per session lacks.
pub const MESSAGES_V2_COLUMNS: [&str; 2] = ["origin", "replayed"];

pub static PARTS_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        utf8("session_id", false),
        utf8("message_id", false),
        Field::new("ordinal", DataType::UInt32, false),
        utf8("part_type", false),
        utf8("tool_name", true),
        utf8("call_id", true),
        Field::new("is_error", DataType::Boolean, true),
        utf8("text", true),
        utf8("body", true),
    ]))
});

pub static RECORDS_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        utf8("source_path", false),
        Field::new("line", DataType::UInt64, false),
        Field::new("byte_offset", DataType::UInt64, false),
        utf8("session_id", true),
        utf8("record_type", true),
        utf8("raw", false),
    ]))
});

pub static FILES_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        utf8("path", false),
        // The whole cursor as JSON: it is read and written only by the sync job.
        utf8("cursor", false),
        Field::new("synced_at", ts(), false),
    ]))
});

/// One row per model call (an API response, a Codex turn), its key stored once store-wide.
/// Its own dataset rather than columns of `messages`: a Codex turn's counts are an event,
/// not a message; one Claude response is several message lines, and counting a column
/// repeated on each would need every reader to dedupe; and filling an older store appends
/// here without rewriting `messages` (its row ids, row map and vectors stay).
pub static USAGE_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    let tokens = |name: &str| Field::new(name, DataType::UInt64, false);
    Arc::new(Schema::new(vec![
        utf8("session_id", false),
        utf8("message_id", true),
        utf8("key", false),
        Field::new("timestamp", ts(), false),
        utf8("source_agent", false),
        utf8("project", true),
        utf8("model", true),
        utf8("request_id", true),
        tokens("input_tokens"),
        tokens("output_tokens"),
        tokens("cache_write_tokens"),
        tokens("cache_read_tokens"),
        tokens("reasoning_tokens"),
        // What the client recorded, not computed: null where it recorded none.
        Field::new("cost_usd", DataType::Float64, true),
        utf8("source_path", false),
        Field::new("source_line", DataType::UInt64, false),
    ]))
});

pub fn usage_batch(rows: &[&UsageRow]) -> Result<RecordBatch> {
    let mut cost = Float64Builder::new();
    for r in rows {
        cost.append_option(r.cost_usd);
    }
    batch(
        &USAGE_SCHEMA,
        vec![
            strings(rows.iter().map(|r| Some(r.session_id.as_str()))),
            strings(rows.iter().map(|r| r.message_id.as_deref())),
            strings(rows.iter().map(|r| Some(r.key.as_str()))),
            timestamps(rows.iter().map(|r| Some(r.timestamp))),
            strings(rows.iter().map(|r| Some(r.source_agent.as_str()))),
            strings(rows.iter().map(|r| r.project.as_deref())),
            strings(rows.iter().map(|r| r.model.as_deref())),
            strings(rows.iter().map(|r| r.request_id.as_deref())),
            u64s(rows.iter().map(|r| r.input)),
            u64s(rows.iter().map(|r| r.output)),
            u64s(rows.iter().map(|r| r.cache_write)),
            u64s(rows.iter().map(|r| r.cache_read)),
            u64s(rows.iter().map(|r| r.reasoning)),
            Arc::new(cost.finish()),
            strings(rows.iter().map(|r| Some(r.source_path.as_str()))),
            u64s(rows.iter().map(|r| r.source_line)),
        ],
    )
}

fn batch(schema: &SchemaRef, cols: Vec<ArrayRef>) -> Result<RecordBatch> {
    Ok(RecordBatch::try_new(schema.clone(), cols)?)
}

fn strings<'a>(it: impl Iterator<Item = Option<&'a str>>) -> ArrayRef {
    let mut b = StringBuilder::new();
    for v in it {
        b.append_option(v);
    }
    Arc::new(b.finish())
}

fn timestamps(it: impl Iterator<Item = Option<i64>>) -> ArrayRef {
    let mut b = TimestampMillisecondBuilder::new().with_timezone("UTC");
    for v in it {
        b.append_option(v);
    }
    Arc::new(b.finish())
}

fn bools(it: impl Iterator<Item = Option<bool>>) -> ArrayRef {
    let mut b = BooleanBuilder::new();
    for v in it {
        b.append_option(v);
    }
    Arc::new(b.finish())
}

fn u64s(it: impl Iterator<Item = u64>) -> ArrayRef {
    let mut b = UInt64Builder::new();
    for v in it {
        b.append_value(v);
    }
    Arc::new(b.finish())
}

pub fn sessions_batch(rows: &[SessionRow]) -> Result<RecordBatch> {
    batch(
        &SESSIONS_SCHEMA,
        vec![
            strings(rows.iter().map(|r| Some(r.id.as_str()))),
            strings(rows.iter().map(|r| r.parent_id.as_deref())),
            strings(rows.iter().map(|r| Some(r.source_agent.as_str()))),
            strings(rows.iter().map(|r| r.project.as_deref())),
            timestamps(rows.iter().map(|r| r.created_at)),
            timestamps(rows.iter().map(|r| r.updated_at)),
            strings(rows.iter().map(|r| r.title.as_deref())),
            strings(rows.iter().map(|r| Some(r.source_path.as_str()))),
            strings(rows.iter().map(|r| r.header.as_deref())),
        ],
    )
}

/// A message line as stored: a replayed copy keeps no search text.
pub struct StoredMessage<'a> {
    pub row: &'a MessageRow,
    pub replayed: bool,
}

impl StoredMessage<'_> {
    fn search_text(&self) -> Option<&str> {
        self.row.search_text.as_deref().filter(|_| !self.replayed)
    }
}

pub fn messages_batch(rows: &[StoredMessage]) -> Result<RecordBatch> {
    batch(
        &MESSAGES_SCHEMA,
        vec![
            strings(rows.iter().map(|r| Some(r.row.session_id.as_str()))),
            strings(rows.iter().map(|r| Some(r.row.id.as_str()))),
            timestamps(rows.iter().map(|r| Some(r.row.timestamp))),
            strings(rows.iter().map(|r| Some(r.row.role.as_str()))),
            strings(rows.iter().map(|r| Some(r.row.source_agent.as_str()))),
            strings(rows.iter().map(|r| r.row.project.as_deref())),
            strings(rows.iter().map(|r| r.search_text())),
            bools(rows.iter().map(|r| Some(r.search_text().is_some()))),
            strings(rows.iter().map(|r| r.row.model.as_deref())),
            strings(rows.iter().map(|r| Some(r.row.source_path.as_str()))),
            u64s(rows.iter().map(|r| r.row.source_line)),
            strings(rows.iter().map(|r| Some(r.row.origin.as_str()))),
            bools(rows.iter().map(|r| Some(r.replayed))),
        ],
    )
}

/// `batch` (rows of `messages`) with every row turned into a replayed copy: no search text,
/// not searchable.
pub fn as_replayed(batch: &RecordBatch) -> Result<RecordBatch> {
    let n = batch.num_rows();
    let schema = batch.schema();
    let columns = schema
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(f, c)| match f.name().as_str() {
            "search_text" => arrow_array::new_null_array(&DataType::Utf8, n),
            "searchable" => bools(std::iter::repeat_n(Some(false), n)),
            "replayed" => bools(std::iter::repeat_n(Some(true), n)),
            _ => c.clone(),
        })
        .collect();
    Ok(RecordBatch::try_new(schema, columns)?)
}

pub fn parts_batch(rows: &[&PartRow]) -> Result<RecordBatch> {
    let mut ordinal = UInt32Builder::new();
    for r in rows {
        ordinal.append_value(r.ordinal);
    }
    batch(
        &PARTS_SCHEMA,
        vec![
            strings(rows.iter().map(|r| Some(r.session_id.as_str()))),
            strings(rows.iter().map(|r| Some(r.message_id.as_str()))),
            Arc::new(ordinal.finish()),
            strings(rows.iter().map(|r| Some(r.part_type.as_str()))),
            strings(rows.iter().map(|r| r.tool_name.as_deref())),
            strings(rows.iter().map(|r| r.call_id.as_deref())),
            bools(rows.iter().map(|r| r.is_error)),
            strings(rows.iter().map(|r| r.text.as_deref())),
            strings(rows.iter().map(|r| r.body.as_deref())),
        ],
    )
}

pub fn records_batch(rows: &[&RecordRow]) -> Result<RecordBatch> {
    batch(
        &RECORDS_SCHEMA,
        vec![
            strings(rows.iter().map(|r| Some(r.source_path.as_str()))),
            u64s(rows.iter().map(|r| r.line)),
            u64s(rows.iter().map(|r| r.byte_offset)),
            strings(rows.iter().map(|r| r.session_id.as_deref())),
            strings(rows.iter().map(|r| r.record_type.as_deref())),
            strings(rows.iter().map(|r| Some(r.raw.as_str()))),
        ],
    )
}

pub fn files_batch(rows: &[(String, String)], synced_at: i64) -> Result<RecordBatch> {
    batch(
        &FILES_SCHEMA,
        vec![
            strings(rows.iter().map(|r| Some(r.0.as_str()))),
            strings(rows.iter().map(|r| Some(r.1.as_str()))),
            timestamps(rows.iter().map(|_| Some(synced_at))),
        ],
    )
}

/// Quote a string as a SQL literal for Lance filters.
pub fn sql_str(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::sql_str;

    #[test]
    fn literals_are_quoted_so_no_value_escapes_them() {
        assert_eq!(sql_str("abc"), "'abc'");
        assert_eq!(sql_str("it's"), "'it''s'");
        assert_eq!(sql_str("x' OR '1'='1"), "'x'' OR ''1''=''1'");
        assert_eq!(sql_str(""), "''");
        // Backslashes and newlines are plain characters in SQL string literals.
        assert_eq!(sql_str("a\\'\nb"), "'a\\''\nb'");
    }
}
