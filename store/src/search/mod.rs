//! Search: full-text (BM25 over `messages.search_text`), vector, or both fused; filtered,
//! grouped by session, with a window of text around the match.
//!
//! `fts` ranks in Lance, `crate::vectors` is the vector arm, `fusion` merges them, `snippet`
//! cuts the window; this module checks the request, runs the arms and presents the hits.

mod check;
pub mod exact;
mod fts;
mod fusion;
pub mod query;
mod snippet;
mod suggest;
#[cfg(test)]
mod tests;

pub use crate::filters::{parse_date, parse_end_date, SearchFilters, SEARCHABLE_ROLES};
pub use fusion::{fuse, Fusion, HYBRID_FUSION};
pub use snippet::{fold_accents, snippet};

use std::collections::HashMap;

use pond_protocol::Choice;
use serde::{Deserialize, Serialize};

use crate::error::{Result, StoreError};
use crate::hydrate::{self, HitRow, RowMeta};
use crate::store::Store;
use crate::vectors;
use fts::{rank_fts, Combine};
use query::{Query, Term};
use snippet::query_terms;

pub const MAX_LIMIT: usize = 200;
/// The longest query searched (a longer one is refused before it is tokenized).
pub const MAX_QUERY_BYTES: usize = 8 * 1024;
/// Hits fetched beyond a ranked pool, for a deterministic cut among equal scores.
const TIE_MARGIN: usize = 32;

/// How hits are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SortBy {
    #[default]
    Relevance,
    /// Newest first among the matches.
    Recency,
}

impl Choice for SortBy {
    const NAMES: &'static [(&'static str, SortBy)] = &[
        ("relevance", SortBy::Relevance),
        ("recency", SortBy::Recency),
    ];
    const SCHEMA_NAME: &'static str = "Sort";
}

/// How hits are ranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// BM25 over the search text.
    #[default]
    Fts,
    /// Nearest neighbours of the query's embedding.
    Vector,
    /// Both, fused ([`HYBRID_FUSION`]).
    Hybrid,
    /// The text as it is, in every part (tool calls and results too): [`exact`].
    Exact,
    /// A regular expression, in every part: [`exact`].
    Regex,
}

impl Choice for SearchMode {
    const NAMES: &'static [(&'static str, SearchMode)] = &[
        ("fts", SearchMode::Fts),
        ("vector", SearchMode::Vector),
        ("hybrid", SearchMode::Hybrid),
        ("exact", SearchMode::Exact),
        ("regex", SearchMode::Regex),
    ];
    const SCHEMA_NAME: &'static str = "Mode";
}

impl SearchMode {
    /// Whether the query must be embedded first.
    pub fn needs_vector(self) -> bool {
        matches!(self, SearchMode::Vector | SearchMode::Hybrid)
    }

    /// Whether the query is a literal text or a regex found in every part
    /// ([`exact::grep`], in a worker), not words ranked here.
    pub fn is_literal(self) -> bool {
        matches!(self, SearchMode::Exact | SearchMode::Regex)
    }
}

#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub query: String,
    pub filters: SearchFilters,
    pub sort: SortBy,
    pub limit: usize,
    pub mode: SearchMode,
    /// Show secrets in snippets as they were stored (the CLI's `--reveal-secrets`; never
    /// over MCP). Otherwise a hit's text is masked before its snippet is cut from it, so a
    /// window never shows part of a secret the whole text would have masked.
    pub reveal_secrets: bool,
}

/// The query's embedding, for vector and hybrid modes (the embed worker makes it).
#[derive(Debug, Clone)]
pub struct QueryVector {
    pub model: String,
    pub vector: Vec<f32>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SearchHit {
    pub score: f32,
    #[serde(flatten)]
    pub row: HitRow,
    pub snippet: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SessionHits {
    pub session_id: String,
    pub title: Option<String>,
    pub project: Option<String>,
    pub source_agent: String,
    pub best_score: f32,
    pub hits: Vec<SearchHit>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SearchResults {
    pub query: String,
    pub mode: SearchMode,
    pub sort: SortBy,
    pub sessions: Vec<SessionHits>,
    pub hits: usize,
    /// Searchable messages that passed the filters.
    pub in_scope: usize,
    /// What the answer could not do as asked and did instead (a stop word left out, a
    /// query loosened to any of its words), for the person or agent to search better.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// For a query that found nothing: the query with its unknown words respelled as
    /// words the archive holds ("did you mean").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

/// Run a query: full-text, vector (needs `vector`, the query's embedding) or hybrid.
pub async fn search(
    store: &Store,
    req: &SearchRequest,
    vector: Option<&QueryVector>,
) -> Result<SearchResults> {
    let (query, mut filters) = check(req)?;
    if let Some(id) = &filters.session_id {
        filters.session_id = Some(crate::get::resolve_session_id(store, id).await?);
    }
    store
        .with_map_fallback(|| search_once(store, req, &query, &filters, vector))
        .await
}

/// Refuse a request search cannot answer (an empty, oversized or unreadable query, a limit
/// out of range, filters given twice) before any work: before its query is embedded, too.
/// Returns the parsed query and the filters with the query's own merged in.
pub fn check(req: &SearchRequest) -> Result<(Query, SearchFilters)> {
    let query = req.query.trim();
    if query.is_empty() {
        return Err(StoreError::InvalidQuery(
            "the query is empty: give the words to look for".into(),
        ));
    }
    if query.len() > MAX_QUERY_BYTES {
        return Err(StoreError::InvalidQuery(format!(
            "the query is {} bytes, over the {MAX_QUERY_BYTES}-byte limit: search with the words that matter",
            query.len()
        )));
    }
    if req.limit == 0 || req.limit > MAX_LIMIT {
        return Err(StoreError::InvalidQuery(format!(
            "limit must be between 1 and {MAX_LIMIT}"
        )));
    }
    let parsed = query::parse(query)?;
    if parsed.must.is_empty() {
        let what = if parsed.filters == query::InlineFilters::default() {
            "the query has no words to look for"
        } else {
            "the query holds only filters"
        };
        return Err(StoreError::InvalidQuery(format!(
            "{what}: add the words to look for ({})",
            query::SYNTAX_HINT
        )));
    }
    if req.mode == SearchMode::Fts && parsed.terms() > query::MAX_TERMS {
        return Err(StoreError::InvalidQuery(format!(
            "the query has {} terms, over the {} a full-text query may hold: search with the \
             words that matter (or --mode vector for a passage)",
            parsed.terms(),
            query::MAX_TERMS
        )));
    }
    let mut filters = req.filters.clone();
    parsed.merge_into(&mut filters)?;
    filters.check_range()?;
    Ok((parsed, filters))
}

async fn search_once(
    store: &Store,
    req: &SearchRequest,
    query: &Query,
    filters: &SearchFilters,
    vector: Option<&QueryVector>,
) -> Result<SearchResults> {
    let ds = store.messages().await?;
    // Recency re-sorts a larger pool of the best matches by time.
    let mut pool = match req.sort {
        SortBy::Relevance => req.limit,
        SortBy::Recency => (req.limit * 20).max(500),
    };
    // What the index cannot decide is checked in the hits' text: rank more candidates than
    // are shown, and more again while too few hold it.
    let check = check::needed(query, req.mode);
    if check.is_some() {
        pool = (pool * 10).max(CHECKED_POOL);
    }
    let mut notes = Vec::new();
    let text_query = without_stop_words(query, &mut notes);
    let need_vector = || {
        vector.ok_or_else(|| {
            StoreError::InvalidQuery("vector and hybrid search need the query's embedding".into())
        })
    };
    let (ds_ref, tq_ref) = (&ds, &text_query);
    let fts = move |combine, pool| async move {
        match tq_ref {
            Some(q) => rank_fts(ds_ref, q, combine, filters, pool).await,
            None => Ok((Vec::new(), fts::in_scope(ds_ref, filters).await?)),
        }
    };
    let results = loop {
        // A few more than asked, so that hits tied at the cut are all seen and the tie-break
        // in `present` (not Lance's order) decides which are kept.
        let text_pool = pool + TIE_MARGIN;
        let (ranked, in_scope) = match req.mode {
            SearchMode::Fts => fts(Combine::All, text_pool).await?,
            SearchMode::Vector => {
                let v = need_vector()?;
                vectors::nearest(store, &v.model, &v.vector, filters, pool).await?
            }
            SearchMode::Hybrid => {
                let v = need_vector()?;
                let arm = (pool * 2).max(50);
                let (text, in_scope) = fts(Combine::All, arm).await?;
                let (near, _) = vectors::nearest(store, &v.model, &v.vector, filters, arm).await?;
                (fuse(HYBRID_FUSION, &[&text, &near]), in_scope)
            }
            SearchMode::Exact | SearchMode::Regex => {
                return Err(StoreError::InvalidQuery(
                    "exact and regex search run as a grep job (search::exact::grep)".into(),
                ))
            }
        };
        let more = ranked.len() >= text_pool.min(pool);
        let results = present(store, &ds, query, check, req, ranked, in_scope).await?;
        if check.is_none() || results.hits >= req.limit || !more {
            break results;
        }
        if pool >= MAX_CHECKED_POOL {
            notes.push(format!(
                "the text of only the best {pool} matches of the words was checked for the \
                 phrase or exclusion: narrow the search (a project, a client, dates) to check further"
            ));
            break results;
        }
        pool = (pool * 4).min(MAX_CHECKED_POOL);
    };
    let mut results = results;
    let searched = text_query.as_ref().filter(|_| req.mode == SearchMode::Fts);
    if let Some(tq) = searched.filter(|_| results.hits == 0) {
        if tq.must.len() > 1 {
            let (ranked, in_scope) = fts(Combine::Any, pool + TIE_MARGIN).await?;
            let loose = present(store, &ds, query, check, req, ranked, in_scope).await?;
            if loose.hits > 0 {
                let groups: Vec<String> = tq
                    .must
                    .iter()
                    .map(|g| {
                        let alts: Vec<String> = g.iter().map(Term::written).collect();
                        alts.join(" OR ")
                    })
                    .collect();
                notes.push(format!(
                    "no message holds all of {}: these hold some of them, most first",
                    groups.join(", ")
                ));
                results = loose;
            }
        }
        results.suggestion = suggest::respell(store, &ds, &req.query, tq, filters).await?;
    }
    results.notes = notes;
    Ok(results)
}

/// The fewest candidates ranked for a query whose hits' text is checked.
const CHECKED_POOL: usize = 1000;
/// The most candidates ranked for it (1,000, then 4,000, then 16,000 while too few hold).
const MAX_CHECKED_POOL: usize = 16_000;
/// Hits whose text is read at once while they are checked.
const CHECK_CHUNK: usize = 64;

/// The query without the words the index leaves out (stop words: no message can match
/// them), each named in `notes`; `None` when nothing is left to look for.
fn without_stop_words(query: &Query, notes: &mut Vec<String>) -> Option<Query> {
    let (mut stop, mut marks) = (Vec::new(), Vec::new());
    let mut keep = |t: &Term| match t {
        Term::Word(w) | Term::Phrase(w) if fts::index_tokens(w).is_empty() => {
            if w.chars().any(char::is_alphanumeric) {
                stop.push(t.written());
            } else {
                marks.push(t.written());
            }
            false
        }
        _ => true,
    };
    let mut out = query.clone();
    out.must = query
        .must
        .iter()
        .map(|g| g.iter().filter(|t| keep(t)).cloned().collect::<Vec<_>>())
        .filter(|g| !g.is_empty())
        .collect();
    out.must_not.retain(|t| keep(t));
    let mut said = Vec::new();
    if !stop.is_empty() {
        said.push(format!(
            "stop words, which the index leaves out: {}",
            stop.join(", ")
        ));
    }
    if !marks.is_empty() {
        said.push(format!(
            "what holds no letter or digit: {}",
            marks.join(" ")
        ));
    }
    if said.is_empty() {
        return Some(out);
    }
    if out.must.is_empty() {
        notes.push(format!(
            "nothing of the query can be looked for ({}): search with a word that names the thing",
            said.join("; ")
        ));
        return None;
    }
    notes.push(format!("left out {}", said.join("; left out ")));
    Some(out)
}

/// From ranked row ids to grouped, hydrated hits (from the row map where it has them).
async fn present(
    store: &Store,
    ds: &lance::Dataset,
    query: &Query,
    check: Option<check::Scope>,
    req: &SearchRequest,
    ranked: Vec<(u64, f32)>,
    in_scope: usize,
) -> Result<SearchResults> {
    let mapped = store.mapped(ds);
    let ids: Vec<u64> = ranked.iter().map(|r| r.0).collect();
    let metas = hydrate::metas(ds, mapped.as_ref(), &ids).await?;
    // A hit whose row is gone (a vector of a message a sync rewrote) is left out.
    let mut rows: Vec<(f32, RowMeta)> = ranked
        .iter()
        .zip(metas)
        .filter_map(|(r, m)| Some((r.1, m?)))
        .collect();
    // Ties are broken by the message, never by row ids or Lance's order: the same store
    // content answers alike however it was written.
    let tie = |a: &RowMeta, b: &RowMeta| {
        (&a.row.message_id, &a.row.session_id).cmp(&(&b.row.message_id, &b.row.session_id))
    };
    match req.sort {
        SortBy::Relevance => rows.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| tie(&a.1, &b.1))),
        SortBy::Recency => rows.sort_by(|a, b| {
            b.1.row
                .timestamp
                .cmp(&a.1.row.timestamp)
                .then_with(|| tie(&a.1, &b.1))
        }),
    }
    let mut kept: Vec<((f32, RowMeta), Option<String>)> = Vec::new();
    if let Some(scope) = check {
        // In order, a chunk at a time, until enough hold what the index could not decide.
        let mut rest = rows.into_iter();
        while kept.len() < req.limit {
            let chunk: Vec<(f32, RowMeta)> = rest.by_ref().take(CHECK_CHUNK).collect();
            if chunk.is_empty() {
                break;
            }
            let shown: Vec<&RowMeta> = chunk.iter().map(|r| &r.1).collect();
            let texts = hydrate::texts(ds, mapped.as_ref(), &shown).await?;
            kept.extend(
                chunk
                    .into_iter()
                    .zip(texts)
                    .filter(|(_, t)| check::holds(query, scope, t.as_deref().unwrap_or_default())),
            );
        }
        kept.truncate(req.limit);
    } else {
        rows.truncate(req.limit);
        let shown: Vec<&RowMeta> = rows.iter().map(|r| &r.1).collect();
        let texts = hydrate::texts(ds, mapped.as_ref(), &shown).await?;
        kept = rows.into_iter().zip(texts).collect();
    }
    let terms = query_terms(&query.plain_text());
    let hits: Vec<SearchHit> = kept
        .into_iter()
        .map(|((score, m), text)| {
            let text = text.as_deref().unwrap_or_default();
            let text = if req.reveal_secrets {
                text.into()
            } else {
                pond_mask::mask(text)
            };
            SearchHit {
                score,
                row: m.row,
                snippet: snippet(&text, &terms, 240),
            }
        })
        .collect();
    let total = hits.len();
    let sessions = group(store, hits).await?;
    Ok(SearchResults {
        query: req.query.trim().to_owned(),
        mode: req.mode,
        sort: req.sort,
        sessions,
        hits: total,
        in_scope,
        notes: Vec::new(),
        suggestion: None,
    })
}

/// Group hits by session, keeping the order of each session's first (best) hit.
async fn group(store: &Store, hits: Vec<SearchHit>) -> Result<Vec<SessionHits>> {
    let mut order: Vec<SessionHits> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for h in hits {
        let i = *index.entry(h.row.session_id.clone()).or_insert_with(|| {
            order.push(SessionHits {
                session_id: h.row.session_id.clone(),
                title: None,
                project: h.row.project.clone(),
                source_agent: h.row.source_agent.clone(),
                best_score: h.score,
                hits: Vec::new(),
            });
            order.len() - 1
        });
        order[i].best_score = order[i].best_score.max(h.score);
        order[i].hits.push(h);
    }
    if !order.is_empty() {
        let ids: Vec<String> = order.iter().map(|s| s.session_id.clone()).collect();
        let mut titles = crate::sessions::titles(store, &ids).await?;
        for s in &mut order {
            s.title = titles.remove(&s.session_id);
        }
    }
    Ok(order)
}
