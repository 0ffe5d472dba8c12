//! Sessions as things: the list of sessions, newest first, filtered as search is
//! ([`SearchFilters`]: project, agent, dates), and each session's title: the client's own
//! (`sessions.title`), else one derived from its first real prompt ([`title`]).
//!
//! A listing scans `sessions` (one row per session, the header column left out), sorts by
//! the last message's time and reads the rest only for the page it shows: the message
//! count and the title candidates from `messages` (one filtered scan of narrow columns,
//! `session_id` has a B-tree; then the few candidate texts by row id, as prefixes), the
//! size from the file's cursor in `files`. Nothing is stored for it, so a store synced
//! before listings existed lists at once.

pub mod title;

use std::collections::HashMap;

use arrow_array::types::TimestampMillisecondType;
use arrow_array::Array;
use lance::dataset::ProjectionRequest;
use serde::Serialize;

use crate::error::{Result, StoreError};
use crate::filters::SearchFilters;
use crate::read::{
    bool_at, opt_str, plain_strings, primitive_col, scan_all, string_col, ts_at, u64_at,
};
use crate::schema::{sql_str, FILES, SESSIONS};
use crate::store::Store;

/// Sessions a listing shows unless asked for another number.
pub const DEFAULT_LIMIT: usize = 20;
/// The most sessions one listing shows.
pub const MAX_LIMIT: usize = 200;
/// How much of a candidate prompt is read to derive a title from, in characters.
const TITLE_TEXT_CHARS: usize = 4096;
/// Messages tried, in order, for a session's derived title (its first user prompts, then
/// its first other messages).
const TITLE_CANDIDATES: usize = 8;
/// Ids per `IN (…)` list.
const CHUNK: usize = 500;

/// Which sessions to list: the filters search takes (but a session and a role, which do
/// not select sessions), a page.
#[derive(Debug, Clone, Default)]
pub struct SessionsRequest {
    /// `project` (a substring, in any case), `source_agent`, and `from`/`to`: a session is
    /// listed when its span (first to last message) meets the range.
    pub filters: SearchFilters,
    pub limit: usize,
    /// Sessions skipped first (the next page: the last offset plus its limit).
    pub offset: usize,
}

/// One session as a listing shows it.
#[derive(Debug, Clone, Serialize)]
pub struct SessionSummary {
    pub id: String,
    /// The client's title, else one derived from the first prompt (`None`: the session
    /// holds no text to derive one from); one line, masked, cut ([`title::shown`]).
    pub title: Option<String>,
    /// `title` was derived from the session's first prompt.
    pub title_derived: bool,
    pub source_agent: String,
    pub project: Option<String>,
    pub parent_session_id: Option<String>,
    /// The first and the last message's time, epoch ms.
    pub first_at: Option<i64>,
    pub last_at: Option<i64>,
    /// Messages as `get-session` lists them (a subagent's replayed context left out).
    pub messages: usize,
    /// The session's source file as last synced, bytes (`None`: not known).
    pub bytes: Option<u64>,
}

/// A page of sessions, newest first.
#[derive(Debug, Clone, Serialize)]
pub struct SessionList {
    pub sessions: Vec<SessionSummary>,
    /// Sessions that pass the filters, on every page.
    pub total: usize,
    pub offset: usize,
    pub limit: usize,
}

/// Refuse a listing request before any work.
pub fn check(req: &SessionsRequest) -> Result<()> {
    if req.limit == 0 || req.limit > MAX_LIMIT {
        return Err(StoreError::InvalidQuery(format!(
            "limit must be between 1 and {MAX_LIMIT}"
        )));
    }
    if req.filters.session_id.is_some() || req.filters.role.is_some() {
        return Err(StoreError::InvalidQuery(
            "sessions are listed by project, agent and dates; a session id or a role does not select sessions"
                .into(),
        ));
    }
    req.filters.check_range()
}

/// What a listing reads of every session: enough to filter by time and sort.
struct Row {
    id: String,
    parent_session_id: Option<String>,
    source_agent: String,
    project: Option<String>,
    first_at: Option<i64>,
    last_at: Option<i64>,
    title: Option<String>,
    source_path: String,
}

/// A session's place in the order and in the scan: last and first message time, id, batch,
/// row.
type Key<'a> = (Option<i64>, Option<i64>, &'a str, usize, usize);

/// The page of sessions `req` asks for, newest first (by the last message's time).
pub async fn list(store: &Store, req: &SessionsRequest) -> Result<SessionList> {
    check(req)?;
    let ds = store.require(SESSIONS).await?;
    // Project and agent as search filters them: `sessions` has both columns by the same
    // names. Times are the session's span, compared here.
    let filter = SearchFilters {
        project: req.filters.project.clone(),
        source_agent: req.filters.source_agent.clone(),
        ..SearchFilters::default()
    }
    .to_sql()?;
    let columns = [
        "id",
        "parent_session_id",
        "source_agent",
        "project",
        "created_at",
        "updated_at",
        "title",
        "source_path",
    ];
    let (from, to) = (req.filters.from, req.filters.to);
    let batches = scan_all(&ds, &columns, filter.as_deref()).await?;
    // Every session's times and where its row is; strings are read for the page alone.
    let mut keys: Vec<Key> = Vec::new();
    for (n, b) in batches.iter().enumerate() {
        let id = string_col(b, "id")?;
        let created = primitive_col::<TimestampMillisecondType>(b, "created_at")?;
        let updated = primitive_col::<TimestampMillisecondType>(b, "updated_at")?;
        for i in 0..b.num_rows() {
            let at = |c: &arrow_array::TimestampMillisecondArray| c.is_valid(i).then(|| c.value(i));
            let (created, updated) = (at(created), at(updated));
            let (first, last) = (created.or(updated), updated.or(created));
            let meets = from.is_none_or(|f| last.is_some_and(|l| l >= f))
                && to.is_none_or(|t| first.is_some_and(|s| s < t));
            if meets {
                keys.push((last, first, id.value(i), n, i));
            }
        }
    }
    let total = keys.len();
    // Newest first; a session without times last; ties by id, so pages never overlap.
    keys.sort_unstable_by(|a, b| {
        b.0.is_some()
            .cmp(&a.0.is_some())
            .then(b.0.cmp(&a.0))
            .then_with(|| a.2.cmp(b.2))
    });
    let mut page = Vec::new();
    for &(last, first, id, n, i) in keys.iter().skip(req.offset).take(req.limit) {
        let b = &batches[n];
        page.push(Row {
            id: id.to_owned(),
            parent_session_id: opt_str(string_col(b, "parent_session_id")?, i),
            source_agent: string_col(b, "source_agent")?.value(i).to_owned(),
            project: opt_str(string_col(b, "project")?, i),
            first_at: first,
            last_at: last,
            title: opt_str(string_col(b, "title")?, i).and_then(|t| title::shown(&t)),
            source_path: string_col(b, "source_path")?.value(i).to_owned(),
        });
    }

    let ids: Vec<String> = page.iter().map(|r| r.id.clone()).collect();
    let mut seen = messages_of(store, &ids).await?;
    let untitled: Vec<String> = page
        .iter()
        .filter(|r| r.title.is_none())
        .map(|r| r.id.clone())
        .collect();
    let mut derived = derive(store, &untitled, &seen).await?;
    let paths: Vec<String> = page.iter().map(|r| r.source_path.clone()).collect();
    let sizes = file_sizes(store, &paths).await?;
    let sessions = page
        .into_iter()
        .map(|r| {
            let derived = r.title.is_none().then(|| derived.remove(&r.id)).flatten();
            SessionSummary {
                title_derived: derived.is_some(),
                title: r.title.or(derived),
                messages: seen.remove(&r.id).map_or(0, |s| s.listed),
                bytes: sizes.get(&r.source_path).copied(),
                id: r.id,
                source_agent: r.source_agent,
                project: r.project,
                parent_session_id: r.parent_session_id,
                first_at: r.first_at,
                last_at: r.last_at,
            }
        })
        .collect();
    Ok(SessionList {
        sessions,
        total,
        offset: req.offset,
        limit: req.limit,
    })
}

/// The title of each of `ids` that has one: the client's, else one derived from the
/// session's first prompt; one line, masked, cut ([`title::shown`]). How search hits and
/// session pages name a session.
pub async fn titles(store: &Store, ids: &[String]) -> Result<HashMap<String, String>> {
    let mut out = HashMap::new();
    let Some(ds) = store.dataset(SESSIONS).await? else {
        return Ok(out);
    };
    for chunk in ids.chunks(CHUNK) {
        for b in scan_all(&ds, &["id", "title"], Some(&id_list("id", chunk))).await? {
            let id = string_col(&b, "id")?;
            let title = string_col(&b, "title")?;
            for i in 0..b.num_rows() {
                if let Some(t) = opt_str(title, i).and_then(|t| title::shown(&t)) {
                    out.insert(id.value(i).to_owned(), t);
                }
            }
        }
    }
    let untitled: Vec<String> = ids
        .iter()
        .filter(|id| !out.contains_key(*id))
        .cloned()
        .collect();
    out.extend(derived_titles(store, &untitled).await?);
    Ok(out)
}

/// The derived title of each of `ids` (whatever title the client gave), where the
/// session holds a prompt to derive one from.
pub async fn derived_titles(store: &Store, ids: &[String]) -> Result<HashMap<String, String>> {
    let seen = messages_of(store, ids).await?;
    derive(store, ids, &seen).await
}

/// What a listing and a title need of a session's messages.
#[derive(Default)]
struct Seen {
    /// Messages `get-session` lists.
    listed: usize,
    /// Searchable messages as (not a user's, time, source line, row id): the title's
    /// candidates, best first once sorted.
    candidates: Vec<(bool, i64, u64, u64)>,
}

/// One scan of `messages`' narrow columns for the sessions `ids`.
async fn messages_of(store: &Store, ids: &[String]) -> Result<HashMap<String, Seen>> {
    let mut out: HashMap<String, Seen> = HashMap::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let ds = store.messages().await?;
    for chunk in ids.chunks(CHUNK) {
        let mut scan = ds.scan();
        scan.with_row_id()
            .project(&[
                "session_id",
                "timestamp",
                "source_line",
                "role",
                "searchable",
                "replayed",
                "origin",
            ])?
            .filter(&id_list("session_id", chunk))?;
        let batches: Vec<_> =
            futures::TryStreamExt::try_collect(scan.try_into_stream().await?).await?;
        for b in &batches {
            let session = string_col(b, "session_id")?;
            let role = string_col(b, "role")?;
            let origin = string_col(b, "origin")?;
            for i in 0..b.num_rows() {
                let seen = out.entry(session.value(i).to_owned()).or_default();
                let replayed = bool_at(b, "replayed", i)? == Some(true);
                // A subagent's replayed context, which a session page leaves out.
                let context = replayed && origin.value(i) == pond_rows::Origin::Sidechain.as_str();
                seen.listed += usize::from(!context);
                if bool_at(b, "searchable", i)? == Some(true) {
                    seen.candidates.push((
                        role.value(i) != pond_rows::Role::User.as_str(),
                        ts_at(b, "timestamp", i)?.unwrap_or_default(),
                        u64_at(b, "source_line", i)?,
                        u64_at(b, "_rowid", i)?,
                    ));
                }
            }
        }
    }
    for seen in out.values_mut() {
        seen.candidates.sort_unstable();
        seen.candidates.truncate(TITLE_CANDIDATES);
    }
    Ok(out)
}

/// The derived title of each of `ids`: the first of its candidates that gives one.
async fn derive(
    store: &Store,
    ids: &[String],
    seen: &HashMap<String, Seen>,
) -> Result<HashMap<String, String>> {
    let mut out = HashMap::new();
    let wanted: Vec<(&String, u64)> = ids
        .iter()
        .filter_map(|id| seen.get(id).map(|s| (id, s)))
        .flat_map(|(id, s)| s.candidates.iter().map(move |c| (id, c.3)))
        .collect();
    if wanted.is_empty() {
        return Ok(out);
    }
    let ds = store.messages().await?;
    let row_ids: Vec<u64> = wanted.iter().map(|w| w.1).collect();
    let projection =
        ProjectionRequest::from_sql([("text", format!("left(search_text, {TITLE_TEXT_CHARS})"))]);
    let b = plain_strings(ds.take_rows(&row_ids, projection).await?)?;
    if b.num_rows() != row_ids.len() {
        return Err(StoreError::NotFound(format!(
            "asked {} messages by row id for titles, got {}; the store changed while it was read, ask again",
            row_ids.len(),
            b.num_rows()
        )));
    }
    let text = string_col(&b, "text")?;
    for (i, (id, _)) in wanted.iter().enumerate() {
        if out.contains_key(*id) || !text.is_valid(i) {
            continue;
        }
        if let Some(t) = title::from_prompt(whole_lines(text.value(i))) {
            out.insert((*id).clone(), t);
        }
    }
    Ok(out)
}

/// A prompt's prefix as read for a title, without its last line when the prefix may have
/// cut it: a secret cut short no longer has the shape the masker knows it by.
fn whole_lines(prefix: &str) -> &str {
    if prefix.chars().count() < TITLE_TEXT_CHARS {
        return prefix;
    }
    prefix.rfind('\n').map_or(prefix, |end| &prefix[..end])
}

/// The size of each of `paths` as its cursor last recorded it.
async fn file_sizes(store: &Store, paths: &[String]) -> Result<HashMap<String, u64>> {
    let mut out = HashMap::new();
    let Some(ds) = store.dataset(FILES).await? else {
        return Ok(out);
    };
    for chunk in paths.chunks(CHUNK) {
        for b in scan_all(&ds, &["path", "cursor"], Some(&id_list("path", chunk))).await? {
            let path = string_col(&b, "path")?;
            let cursor = string_col(&b, "cursor")?;
            for i in 0..b.num_rows() {
                if let Ok(c) = serde_json::from_str::<pond_rows::FileCursor>(cursor.value(i)) {
                    out.insert(path.value(i).to_owned(), c.size);
                }
            }
        }
    }
    Ok(out)
}

/// `column IN ('a', 'b', …)`.
fn id_list(column: &str, values: &[String]) -> String {
    let list: Vec<String> = values.iter().map(|v| sql_str(v)).collect();
    format!("{column} IN ({})", list.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_cut_short_loses_its_last_line() {
        assert_eq!(
            whole_lines("fix this\nkey ghp_abc"),
            "fix this\nkey ghp_abc"
        );
        let cut = format!("{}\nkey ghp_abc", "x".repeat(TITLE_TEXT_CHARS));
        assert_eq!(whole_lines(&cut), "x".repeat(TITLE_TEXT_CHARS));
        let one = "y".repeat(TITLE_TEXT_CHARS);
        assert_eq!(whole_lines(&one), one);
    }
}
