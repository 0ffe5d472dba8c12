//! A page's parts: read as bounded prefixes (a 4 MB tool result is never read whole for a
//! page), and a message's text composed from them within a byte cap.

use std::collections::HashMap;

use super::{Entry, PartView, PART_BYTES};
use crate::error::Result;
use crate::read::{bool_at, opt_str, plain_strings, string_col, u32_at};
use crate::schema::{sql_str, PARTS};
use crate::store::Store;

/// Rows of `parts` decoded at a time for a page.
const PART_BATCH_ROWS: usize = 4;

/// Parts listed per message at most; the rest are counted in a last note.
const PARTS_PER_MESSAGE: usize = 500;

/// The parts of some messages of a session, by message id in ordinal order. Texts are read
/// as prefixes of [`PART_BYTES`] characters with their full byte length (a 4 MB tool result
/// is never read whole for a page), at most [`PARTS_PER_MESSAGE`] a message.
pub(super) async fn parts_of(
    store: &Store,
    session_id: &str,
    ids: &[&str],
) -> Result<HashMap<String, Vec<PartView>>> {
    let mut out: HashMap<String, Vec<PartView>> = HashMap::new();
    let mut more: HashMap<String, usize> = HashMap::new();
    let Some(ds) = store.dataset(PARTS).await? else {
        return Ok(out);
    };
    let prefix = |c: &str| format!("left({c}, {PART_BYTES})");
    let columns = [
        ("message_id", "message_id".to_owned()),
        ("ordinal", "ordinal".to_owned()),
        ("part_type", "part_type".to_owned()),
        ("tool_name", "tool_name".to_owned()),
        ("call_id", "call_id".to_owned()),
        ("is_error", "is_error".to_owned()),
        ("text", prefix("text")),
        ("text_bytes", "octet_length(text)".to_owned()),
        ("body", prefix("body")),
        ("body_bytes", "octet_length(body)".to_owned()),
    ];
    for chunk in ids.chunks(256) {
        let list: Vec<String> = chunk.iter().map(|i| sql_str(i)).collect();
        let filter = format!(
            "session_id = {} AND message_id IN ({})",
            sql_str(session_id),
            list.join(",")
        );
        // Few rows a batch, one batch ahead: a batch's values are decoded whole before
        // `left` cuts them, so this bounds what a page of 4 MB tool results holds at once.
        let mut scan = ds.scan();
        scan.project_with_transform(&columns)?
            .filter(&filter)?
            .batch_size(PART_BATCH_ROWS)
            .batch_readahead(1)
            .fragment_readahead(1);
        let mut stream = scan.try_into_stream().await?;
        while let Some(b) = futures::TryStreamExt::try_next(&mut stream).await? {
            let b = plain_strings(b)?;
            let mid = string_col(&b, "message_id")?;
            let ty = string_col(&b, "part_type")?;
            let tool = string_col(&b, "tool_name")?;
            let call = string_col(&b, "call_id")?;
            let text = string_col(&b, "text")?;
            let body = string_col(&b, "body")?;
            for i in 0..b.num_rows() {
                let parts = out.entry(mid.value(i).to_owned()).or_default();
                if parts.len() >= PARTS_PER_MESSAGE {
                    *more.entry(mid.value(i).to_owned()).or_default() += 1;
                    continue;
                }
                parts.push(PartView {
                    ordinal: u32_at(&b, "ordinal", i)?,
                    part_type: ty.value(i).to_owned(),
                    tool_name: opt_str(tool, i),
                    call_id: opt_str(call, i),
                    is_error: bool_at(&b, "is_error", i)?,
                    text: opt_str(text, i),
                    body: opt_str(body, i),
                    text_bytes: len_at(&b, "text_bytes", i),
                    body_bytes: len_at(&b, "body_bytes", i),
                });
            }
        }
    }
    for (id, parts) in &mut out {
        parts.sort_by_key(|p| p.ordinal);
        if let Some(n) = more.get(id) {
            let note = format!(
                "{n} more parts not listed (the first {PARTS_PER_MESSAGE} are); the whole message is in SQL: records"
            );
            parts.push(PartView {
                ordinal: u32::MAX,
                part_type: "omitted".into(),
                tool_name: None,
                call_id: None,
                is_error: None,
                text_bytes: note.len(),
                text: Some(note),
                body: None,
                body_bytes: 0,
            });
        }
    }
    Ok(out)
}

/// A length computed by the scan (`octet_length`), 0 for null.
pub(super) fn len_at(b: &arrow_array::RecordBatch, name: &str, i: usize) -> usize {
    use arrow_array::cast::AsArray;
    use arrow_array::Array;
    let Some(c) = b.column_by_name(name) else {
        return 0;
    };
    if c.is_null(i) {
        return 0;
    }
    match c.data_type() {
        arrow_schema::DataType::Int32 => {
            c.as_primitive::<arrow_array::types::Int32Type>().value(i) as usize
        }
        arrow_schema::DataType::Int64 => {
            c.as_primitive::<arrow_array::types::Int64Type>().value(i) as usize
        }
        _ => 0,
    }
}

/// Cut `s` to at most `max` bytes at a char boundary; returns the bytes left out of the
/// whole value, which was `full` bytes long (`s` may be a prefix of it).
pub(super) fn clip(s: &mut String, full: usize, max: usize) -> usize {
    let full = full.max(s.len());
    if full <= max {
        return 0;
    }
    let cut = s.floor_char_boundary(max);
    s.truncate(cut);
    full - cut
}

pub(super) fn clipped(s: &str, full: usize, max: usize) -> String {
    let mut s = s.to_owned();
    let omitted = clip(&mut s, full, max);
    if omitted > 0 {
        s.push_str(&format!(" … [{omitted} more bytes]"));
    }
    s
}

/// A message as text: every part, tool traffic summarised.
pub(super) fn render(entry: &Entry, parts: &[PartView], part_cap: usize) -> String {
    if parts.is_empty() {
        return entry
            .detail
            .as_ref()
            .and_then(|d| d.search_text.as_deref())
            .map(|t| {
                clipped(
                    t,
                    entry.detail.as_ref().map_or(0, |d| d.text_bytes),
                    part_cap,
                )
            })
            .unwrap_or_default();
    }
    let mut out = Vec::new();
    for p in parts {
        let tool = p.tool_name.as_deref().unwrap_or("?");
        let text = || {
            clipped(
                p.text.as_deref().unwrap_or_default(),
                p.text_bytes,
                part_cap,
            )
        };
        let body = || {
            clipped(
                p.body.as_deref().unwrap_or_default(),
                p.body_bytes,
                part_cap,
            )
        };
        let s = match p.part_type.as_str() {
            "text" => text(),
            "thinking" => format!("[thinking] {}", text()),
            "tool_call" => format!("[tool call: {tool}] {}", body()),
            "tool_result" => format!(
                "[tool result: {tool}{}] {}",
                if p.is_error == Some(true) {
                    ", error"
                } else {
                    ""
                },
                text()
            ),
            "image" => format!("[image {}]", p.body.as_deref().unwrap_or_default()),
            other if p.text.is_some() => format!("[{other}] {}", text()),
            other => format!("[{other}] {}", body()),
        };
        if !s.trim().is_empty() {
            out.push(s);
        }
    }
    out.join("\n")
}
