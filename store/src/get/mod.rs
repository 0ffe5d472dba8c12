//! Get: a session page by page, or one message with its parts and neighbours.
//!
//! A session's messages are ordered by (timestamp, source line, row id): time, then the
//! order of the file's lines. Pages never split a message; a message longer than the page
//! budget is shortened with a note saying how to read it whole (`get-message`).
//!
//! A subagent's file may open by replaying its parent's lines (Claude Code's compaction and
//! side-question agents do): those rows are replayed copies of messages the parent owns, and
//! a page leaves them out unless asked (`include_replayed`), saying how many it left out.

use std::collections::HashMap;

use serde::Serialize;

use crate::error::{Result, StoreError};
use lance::dataset::ProjectionRequest;
use lance::Dataset;

use crate::read::{
    bool_at, opt_str, plain_strings, scan_all, session_rows, string_col, ts_at, u64_at,
};
use crate::schema::{sql_str, SESSIONS};
use crate::store::Store;
use pond_rows::Origin;

mod ids;
mod parts;

pub use ids::{resolve_message_id, resolve_session_id, MIN_ID_PREFIX};
use parts::{clip, len_at, parts_of, render};

/// Default byte budget of one rendered page.
pub const DEFAULT_PAGE_BYTES: usize = 24 * 1024;
/// Per-part cap when a whole message is shown.
pub const PART_BYTES: usize = 16 * 1024;

#[derive(Debug, Clone, Serialize)]
pub struct SessionInfo {
    pub id: String,
    pub parent_session_id: Option<String>,
    pub source_agent: String,
    pub project: Option<String>,
    pub title: Option<String>,
    pub created_at: Option<i64>,
    pub updated_at: Option<i64>,
    pub source_path: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct PartView {
    pub ordinal: u32,
    pub part_type: String,
    pub tool_name: Option<String>,
    pub call_id: Option<String>,
    pub is_error: Option<bool>,
    pub text: Option<String>,
    pub body: Option<String>,
    /// The whole text's and body's length in bytes (`text`/`body` may be prefixes).
    #[serde(skip)]
    pub text_bytes: usize,
    #[serde(skip)]
    pub body_bytes: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct MessageView {
    pub id: String,
    /// 0-based position in the session.
    pub position: usize,
    pub timestamp: i64,
    pub role: String,
    pub model: Option<String>,
    /// The message rendered as text: its text, thinking, tool calls and results.
    pub text: String,
    /// Bytes left out of `text` to fit the budget.
    pub omitted_bytes: usize,
    pub source_path: String,
    pub source_line: u64,
    /// A copy of a message another session owns (a replayed or copied line).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<PartView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SessionPage {
    pub session: SessionInfo,
    pub total_messages: usize,
    /// Replayed context left out of the session's messages (a subagent's copy of its
    /// parent's lines); `include_replayed` shows it.
    pub replayed_hidden: usize,
    pub messages: Vec<MessageView>,
    /// Id to pass as `before` for the previous page, if there is one.
    pub more_before: Option<String>,
    /// Id to pass as `after` for the next page, if there is one.
    pub more_after: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MessageContext {
    pub session: SessionInfo,
    pub total_messages: usize,
    pub before: Vec<MessageView>,
    pub message: MessageView,
    pub after: Vec<MessageView>,
}

/// Which end of a session a first page starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PageFrom {
    #[default]
    Start,
    End,
}

impl pond_protocol::Choice for PageFrom {
    const NAMES: &'static [(&'static str, PageFrom)] =
        &[("start", PageFrom::Start), ("end", PageFrom::End)];
    const SCHEMA_NAME: &'static str = "From";
}

#[derive(Debug, Clone, Default)]
pub struct PageRequest {
    pub from: PageFrom,
    pub limit: usize,
    pub after: Option<String>,
    pub before: Option<String>,
    pub max_bytes: usize,
    /// List a subagent's replayed copy of its parent's lines too.
    pub include_replayed: bool,
}

/// One row of a session's message list: what ordering and paging need. The rest
/// ([`Detail`]) is read only for the messages a page shows.
struct Entry {
    row_id: u64,
    id: String,
    timestamp: i64,
    source_line: u64,
    role: String,
    origin: Origin,
    replayed: bool,
    detail: Option<Detail>,
}

impl Entry {
    /// A sidechain's replayed copy of lines another session owns: a subagent's context,
    /// not its work.
    fn replayed_context(&self) -> bool {
        self.replayed && self.origin == Origin::Sidechain
    }
}

#[derive(Default)]
struct Detail {
    model: Option<String>,
    search_text: Option<String>,
    /// The whole search text's length in bytes (`search_text` may be a prefix).
    text_bytes: usize,
    source_path: String,
    source_line: u64,
}

async fn session_info(store: &Store, id: &str) -> Result<SessionInfo> {
    let ds = store.require(SESSIONS).await?;
    let rows = session_rows(&ds, Some(&format!("id = {}", sql_str(id)))).await?;
    let s = rows.into_iter().next().ok_or_else(|| {
        StoreError::NotFound(format!(
            "no session with id {id:?}; session ids appear in search results and in SQL (SELECT id, title FROM sessions)"
        ))
    })?;
    // The client's title, else one derived from the first prompt.
    let title = match s.title.as_deref().and_then(crate::sessions::title::shown) {
        Some(t) => Some(t),
        None => crate::sessions::derived_titles(store, std::slice::from_ref(&s.id))
            .await?
            .remove(&s.id),
    };
    Ok(SessionInfo {
        id: s.id,
        parent_session_id: s.parent_id,
        source_agent: s.source_agent,
        project: s.project,
        title,
        created_at: s.created_at,
        updated_at: s.updated_at,
        source_path: s.source_path,
    })
}

/// All messages of a session in (timestamp, source line, row id) order, light fields only
/// (bounded by one session's size). Rows the row map covers come from its session entry;
/// rows newer than the map (or all, without a usable map) from a scan of `messages`.
async fn session_entries(store: &Store, ds: &Dataset, session_id: &str) -> Result<Vec<Entry>> {
    let mapped = store.mapped(ds);
    let mut out = Vec::new();
    if let Some(m) = &mapped {
        if let Some(entry) = m.map.session(session_id)? {
            for pos in m.map.session_rows(entry)? {
                let r = m.map.row(pos)?;
                out.push(Entry {
                    row_id: r.row_id,
                    id: r.message_id.into_owned(),
                    timestamp: r.timestamp,
                    source_line: r.source_line,
                    role: r.role.to_owned(),
                    origin: r.origin,
                    replayed: r.replayed,
                    detail: None,
                });
            }
        }
    }
    let delta = mapped.map(|m| m.delta);
    if delta.as_ref().is_none_or(|d| !d.is_empty()) {
        let mut scan = ds.scan();
        scan.with_row_id()
            .project(&[
                "id",
                "timestamp",
                "role",
                "source_line",
                "origin",
                "replayed",
            ])?
            .filter(&format!("session_id = {}", sql_str(session_id)))?;
        if let Some(fragments) = delta {
            scan.with_fragments(fragments);
        }
        let mut stream = scan.try_into_stream().await?;
        while let Some(b) = futures::TryStreamExt::try_next(&mut stream).await? {
            let id = string_col(&b, "id")?;
            let role = string_col(&b, "role")?;
            let origin = string_col(&b, "origin")?;
            for i in 0..b.num_rows() {
                out.push(Entry {
                    row_id: u64_at(&b, "_rowid", i)?,
                    id: id.value(i).to_owned(),
                    timestamp: ts_at(&b, "timestamp", i)?.unwrap_or_default(),
                    source_line: u64_at(&b, "source_line", i)?,
                    role: role.value(i).to_owned(),
                    origin: Origin::parse(origin.value(i)).unwrap_or(Origin::Own),
                    replayed: bool_at(&b, "replayed", i)? == Some(true),
                    detail: None,
                });
            }
        }
    }
    out.sort_by_key(|e| (e.timestamp, e.source_line, e.row_id));
    Ok(out)
}

/// Read the details of the entries a page shows (the search text as a prefix of
/// [`PART_BYTES`] characters, with its length).
async fn fill_details(ds: &Dataset, entries: &mut [Entry]) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let ids: Vec<u64> = entries.iter().map(|e| e.row_id).collect();
    let projection = ProjectionRequest::from_sql([
        ("model", "model".to_owned()),
        ("search_text", format!("left(search_text, {PART_BYTES})")),
        ("text_bytes", "octet_length(search_text)".to_owned()),
        ("source_path", "source_path".to_owned()),
        ("source_line", "source_line".to_owned()),
    ]);
    let b = plain_strings(ds.take_rows(&ids, projection).await?)?;
    if b.num_rows() != entries.len() {
        return Err(StoreError::NotFound(format!(
            "asked messages for {} rows by id, got {}; the session changed while it was read, ask again",
            entries.len(),
            b.num_rows()
        )));
    }
    let model = string_col(&b, "model")?;
    let text = string_col(&b, "search_text")?;
    let path = string_col(&b, "source_path")?;
    for (i, e) in entries.iter_mut().enumerate() {
        e.detail = Some(Detail {
            model: opt_str(model, i),
            search_text: opt_str(text, i),
            text_bytes: len_at(&b, "text_bytes", i),
            source_path: path.value(i).to_owned(),
            source_line: u64_at(&b, "source_line", i)?,
        });
    }
    Ok(())
}

fn view(
    entry: &Entry,
    position: usize,
    text: String,
    omitted: usize,
    parts: Vec<PartView>,
) -> MessageView {
    let detail = entry.detail.as_ref();
    MessageView {
        id: entry.id.clone(),
        position,
        timestamp: entry.timestamp,
        role: entry.role.clone(),
        model: detail.and_then(|d| d.model.clone()),
        text,
        omitted_bytes: omitted,
        source_path: detail.map(|d| d.source_path.clone()).unwrap_or_default(),
        source_line: detail.map_or(0, |d| d.source_line),
        replayed: entry.replayed,
        parts,
    }
}

/// Where message `id` (or the one message of the session whose id it begins, if it is at
/// least [`MIN_ID_PREFIX`] characters) is in `entries`.
fn position_of(entries: &[Entry], id: &str, what: &str) -> Result<usize> {
    let exact = entries.iter().position(|e| e.id == id);
    let prefixed = || {
        let mut it = (id.chars().count() >= MIN_ID_PREFIX)
            .then(|| {
                entries
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| e.id.starts_with(id))
            })
            .into_iter()
            .flatten();
        match (it.next(), it.next()) {
            (Some((i, _)), None) => Some(i),
            _ => None,
        }
    };
    exact.or_else(prefixed).ok_or_else(|| {
        StoreError::NotFound(format!(
            "message {id:?} (given as {what}) is not in this session; pass an id from a previous page"
        ))
    })
}

/// One page of a session.
pub async fn get_session(
    store: &Store,
    session_id: &str,
    req: &PageRequest,
) -> Result<SessionPage> {
    store
        .with_map_fallback(|| get_session_once(store, session_id, req))
        .await
}

async fn get_session_once(
    store: &Store,
    session_id: &str,
    req: &PageRequest,
) -> Result<SessionPage> {
    if req.after.is_some() && req.before.is_some() {
        return Err(StoreError::InvalidQuery(
            "give either after or before, not both".into(),
        ));
    }
    let limit = req.limit.clamp(1, 500);
    let budget = if req.max_bytes == 0 {
        DEFAULT_PAGE_BYTES
    } else {
        req.max_bytes
    };
    let session_id = &resolve_session_id(store, session_id).await?;
    let session = session_info(store, session_id).await?;
    let ds = store.messages().await?;
    let mut entries = session_entries(store, &ds, session_id).await?;
    let listed = entries.len();
    if !req.include_replayed {
        entries.retain(|e| !e.replayed_context());
    }
    let total = entries.len();

    // The window [lo, hi) before the byte budget is applied, and which end to fill from.
    let (lo, hi, from_end) = match (&req.after, &req.before) {
        (Some(a), _) => {
            let p = position_of(&entries, a, "after")? + 1;
            (p, (p + limit).min(total), false)
        }
        (_, Some(b)) => {
            let p = position_of(&entries, b, "before")?;
            (p.saturating_sub(limit), p, true)
        }
        _ if req.from == PageFrom::End => (total.saturating_sub(limit), total, true),
        _ => (0, limit.min(total), false),
    };
    fill_details(&ds, &mut entries[lo..hi]).await?;
    let ids: Vec<&str> = entries[lo..hi].iter().map(|e| e.id.as_str()).collect();
    let mut parts = parts_of(store, session_id, &ids).await?;

    // Fill from the anchored end until the budget is spent; the first message always fits
    // (shortened if it must be).
    let order: Vec<usize> = if from_end {
        (lo..hi).rev().collect()
    } else {
        (lo..hi).collect()
    };
    let mut used = 0;
    let mut shown = Vec::new();
    for i in order {
        let e = &entries[i];
        let mut text = render(
            e,
            parts.remove(&e.id).as_deref().unwrap_or_default(),
            PART_BYTES,
        );
        let cost = text.len() + 128;
        if !shown.is_empty() && used + cost > budget {
            break;
        }
        let omitted = clip(&mut text, 0, budget.saturating_sub(128));
        used += text.len() + 128;
        shown.push(view(e, i, text, omitted, Vec::new()));
    }
    if from_end {
        shown.reverse();
    }
    // An empty page (asked for what follows the last message, or precedes the first) has
    // nothing to continue from.
    let (more_before, more_after) = match (shown.first(), shown.last()) {
        (Some(first), Some(last)) => (
            (first.position > 0).then(|| first.id.clone()),
            (last.position + 1 < total).then(|| last.id.clone()),
        ),
        _ => (None, None),
    };
    Ok(SessionPage {
        session,
        total_messages: total,
        replayed_hidden: listed - total,
        more_before,
        more_after,
        messages: shown,
    })
}

/// The session that owns a message: from the row map's id index, else from `messages`.
async fn session_of(store: &Store, ds: &Dataset, message_id: &str) -> Result<String> {
    if let Some(m) = store.mapped(ds) {
        if let Some(pos) = m.map.position_of_message(message_id)? {
            return Ok(m.map.row(pos)?.session_id.to_owned());
        }
    }
    let filter = format!("NOT replayed AND id = {}", sql_str(message_id));
    for b in scan_all(ds, &["session_id"], Some(&filter)).await? {
        if b.num_rows() > 0 {
            return Ok(string_col(&b, "session_id")?.value(0).to_owned());
        }
    }
    Err(StoreError::NotFound(format!(
        "no message with id {message_id:?}; message ids appear in search results and session pages"
    )))
}

/// One message with all its parts, and up to `before`/`after` neighbours (rendered short).
pub async fn get_message(
    store: &Store,
    message_id: &str,
    before: usize,
    after: usize,
) -> Result<MessageContext> {
    store
        .with_map_fallback(|| get_message_once(store, message_id, before, after))
        .await
}

async fn get_message_once(
    store: &Store,
    message_id: &str,
    before: usize,
    after: usize,
) -> Result<MessageContext> {
    let (before, after) = (before.min(50), after.min(50));
    let message_id = &resolve_message_id(store, message_id).await?;
    let ds = store.messages().await?;
    let session_id = session_of(store, &ds, message_id).await?;
    let session = session_info(store, &session_id).await?;
    let mut entries = session_entries(store, &ds, &session_id).await?;
    let pos = position_of(&entries, message_id, "id")?;
    let lo = pos.saturating_sub(before);
    let hi = (pos + 1 + after).min(entries.len());
    fill_details(&ds, &mut entries[lo..hi]).await?;
    let ids: Vec<&str> = entries[lo..hi].iter().map(|e| e.id.as_str()).collect();
    let mut parts = parts_of(store, &session_id, &ids).await?;
    let neighbour = |i: usize, parts: &mut HashMap<String, Vec<PartView>>| {
        let e = &entries[i];
        let mut text = render(e, parts.remove(&e.id).as_deref().unwrap_or_default(), 2048);
        let omitted = clip(&mut text, 0, 2048);
        view(e, i, text, omitted, Vec::new())
    };
    let before_views: Vec<_> = (lo..pos).map(|i| neighbour(i, &mut parts)).collect();
    let after_views: Vec<_> = (pos + 1..hi).map(|i| neighbour(i, &mut parts)).collect();
    let target = &entries[pos];
    let mut target_parts = parts.remove(&target.id).unwrap_or_default();
    let text = render(target, &target_parts, PART_BYTES);
    for p in &mut target_parts {
        for (field, full) in [(&mut p.text, p.text_bytes), (&mut p.body, p.body_bytes)] {
            let Some(field) = field else { continue };
            let omitted = clip(field, full, PART_BYTES);
            if omitted > 0 {
                field.push_str(&format!(
                    " … [{omitted} more bytes; the raw record is in SQL: records]"
                ));
            }
        }
    }
    Ok(MessageContext {
        session,
        total_messages: entries.len(),
        before: before_views,
        message: view(target, pos, text, 0, target_parts),
        after: after_views,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn clipping_keeps_a_prefix_of_whole_characters_within_the_cap(
            text in "[a-zé日本語🦀 ]{0,200}",
            extra in 0usize..1000,
            max in 0usize..300,
        ) {
            let mut s = text.clone();
            let full = text.len() + extra;
            let omitted = clip(&mut s, full, max);
            proptest::prop_assert!(text.starts_with(&s));
            proptest::prop_assert!(s.len() <= max);
            proptest::prop_assert_eq!(s.len() + omitted, if full <= max { s.len() } else { full });
        }
    }
}
