//! Search: full-text (BM25 over `messages.search_text`), vector, or both fused; filtered,
//! grouped by session, with a window of text around the match.
//!
//! `fts` ranks in Lance, `crate::vectors` is the vector arm, `fusion` merges them, `snippet`
//! cuts the window; this module checks the request, runs the arms and presents the hits.

mod fts;
mod fusion;
mod snippet;
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
use fts::rank_fts;
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
}

impl Choice for SearchMode {
    const NAMES: &'static [(&'static str, SearchMode)] = &[
        ("fts", SearchMode::Fts),
        ("vector", SearchMode::Vector),
        ("hybrid", SearchMode::Hybrid),
    ];
    const SCHEMA_NAME: &'static str = "Mode";
}

impl SearchMode {
    /// Whether the query must be embedded first.
    pub fn needs_vector(self) -> bool {
        self != SearchMode::Fts
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
}

/// Run a query: full-text, vector (needs `vector`, the query's embedding) or hybrid.
pub async fn search(
    store: &Store,
    req: &SearchRequest,
    vector: Option<&QueryVector>,
) -> Result<SearchResults> {
    let mut req = req.clone();
    if let Some(id) = &req.filters.session_id {
        req.filters.session_id = Some(crate::get::resolve_session_id(store, id).await?);
    }
    let req = &req;
    store
        .with_map_fallback(|| search_once(store, req, vector))
        .await
}

/// Refuse a request search cannot answer (an empty or oversized query, a limit out of
/// range) before any work: before its query is embedded, too.
pub fn check(req: &SearchRequest) -> Result<()> {
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
    req.filters.check_range()
}

async fn search_once(
    store: &Store,
    req: &SearchRequest,
    vector: Option<&QueryVector>,
) -> Result<SearchResults> {
    check(req)?;
    let query = req.query.trim();
    let ds = store.messages().await?;
    // Recency re-sorts a larger pool of the best matches by time.
    let pool = match req.sort {
        SortBy::Relevance => req.limit,
        SortBy::Recency => (req.limit * 20).max(500),
    };
    let need_vector = || {
        vector.ok_or_else(|| {
            StoreError::InvalidQuery("vector and hybrid search need the query's embedding".into())
        })
    };
    let (ranked, in_scope) = match req.mode {
        // A few more than asked, so that hits tied at the cut are all seen and the
        // tie-break in `present` (not Lance's order) decides which are kept.
        SearchMode::Fts => rank_fts(&ds, query, &req.filters, pool + TIE_MARGIN).await?,
        SearchMode::Vector => {
            let v = need_vector()?;
            vectors::nearest(store, &v.model, &v.vector, &req.filters, pool).await?
        }
        SearchMode::Hybrid => {
            let v = need_vector()?;
            let arm = (pool * 2).max(50);
            let (text, in_scope) = rank_fts(&ds, query, &req.filters, arm).await?;
            let (near, _) = vectors::nearest(store, &v.model, &v.vector, &req.filters, arm).await?;
            (fuse(HYBRID_FUSION, &[&text, &near]), in_scope)
        }
    };
    present(store, &ds, query, req, ranked, in_scope).await
}

/// From ranked row ids to grouped, hydrated hits (from the row map where it has them).
async fn present(
    store: &Store,
    ds: &lance::Dataset,
    query: &str,
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
    rows.truncate(req.limit);
    let shown: Vec<&RowMeta> = rows.iter().map(|r| &r.1).collect();
    let texts = hydrate::texts(ds, mapped.as_ref(), &shown).await?;
    let terms = query_terms(query);
    let hits: Vec<SearchHit> = rows
        .into_iter()
        .zip(texts)
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
        query: query.to_owned(),
        mode: req.mode,
        sort: req.sort,
        sessions,
        hits: total,
        in_scope,
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
