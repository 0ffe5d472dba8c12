//! Full-text search: BM25 over `messages.search_text`, filtered, grouped by session, with a
//! window of text around the match.

use std::collections::HashMap;
use std::hash::Hash;

use arrow_array::types::{Float32Type, UInt64Type};
use lance_index::scalar::FullTextSearchQuery;
use serde::Serialize;

use crate::error::{Result, StoreError};
use crate::hydrate::{self, HitRow, RowMeta};
use crate::read::{primitive_col, session_rows};
use crate::schema::{sql_str, SESSIONS};
use crate::store::Store;
use crate::vectors;

pub const MAX_LIMIT: usize = 200;
/// The longest query searched (a longer one is refused before it is tokenized).
pub const MAX_QUERY_BYTES: usize = 8 * 1024;
/// Hits fetched beyond a ranked pool, for a deterministic cut among equal scores.
const TIE_MARGIN: usize = 32;

/// Restrictions shared by every search mode.
#[derive(Debug, Clone, Default)]
pub struct SearchFilters {
    /// Substring of the project path (`shop` matches `/home/a/shop`).
    pub project: Option<String>,
    pub session_id: Option<String>,
    /// `claude-code`, `codex`, `claude-code/subagent`; `claude-code` also matches subagents.
    pub source_agent: Option<String>,
    pub role: Option<String>,
    /// Inclusive lower bound, epoch ms.
    pub from: Option<i64>,
    /// Exclusive upper bound, epoch ms.
    pub to: Option<i64>,
}

impl SearchFilters {
    /// The Lance filter expression, or `None` when nothing is restricted.
    pub fn to_sql(&self) -> Result<Option<String>> {
        let mut parts = Vec::new();
        if let Some(p) = &self.project {
            let escaped = p
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_");
            parts.push(format!(
                "project LIKE {} ESCAPE '\\'",
                sql_str(&format!("%{escaped}%"))
            ));
        }
        if let Some(s) = &self.session_id {
            parts.push(format!("session_id = {}", sql_str(s)));
        }
        if let Some(a) = &self.source_agent {
            match a.as_str() {
                "claude-code" | "claude" => parts.push("source_agent LIKE 'claude-code%'".into()),
                "codex" | "claude-code/subagent" => {
                    parts.push(format!("source_agent = {}", sql_str(a)))
                }
                other => {
                    return Err(StoreError::InvalidQuery(format!(
                        "unknown agent {other:?}: use claude-code, claude-code/subagent or codex"
                    )))
                }
            }
        }
        if let Some(r) = &self.role {
            if pond_ingest::Role::parse(r).is_none() {
                return Err(StoreError::InvalidQuery(format!(
                    "unknown role {r:?}: use user, assistant, system or tool"
                )));
            }
            parts.push(format!("role = {}", sql_str(r)));
        }
        if let Some(f) = self.from {
            parts.push(format!("timestamp >= {}", ts_literal(f)));
        }
        if let Some(t) = self.to {
            parts.push(format!("timestamp < {}", ts_literal(t)));
        }
        Ok((!parts.is_empty()).then(|| parts.join(" AND ")))
    }
}

fn ts_literal(ms: i64) -> String {
    let t = chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default();
    format!("TIMESTAMP '{}'", t.format("%Y-%m-%d %H:%M:%S%.3f"))
}

/// `2026-03-01`, `2026-03-01T10:00:00Z` or any RFC 3339 time, to epoch ms.
pub fn parse_date(s: &str) -> Result<i64> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(t.timestamp_millis());
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Ok(d
            .and_hms_opt(0, 0, 0)
            .expect("midnight")
            .and_utc()
            .timestamp_millis());
    }
    Err(StoreError::InvalidQuery(format!(
        "cannot read date {s:?}: use YYYY-MM-DD or an RFC 3339 time like 2026-03-01T10:00:00Z"
    )))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SortBy {
    #[default]
    Relevance,
    Recency,
}

/// How hits are ranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
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

impl SearchMode {
    pub fn parse(s: &str) -> Option<SearchMode> {
        match s {
            "fts" | "full-text" | "bm25" => Some(SearchMode::Fts),
            "vector" | "semantic" => Some(SearchMode::Vector),
            "hybrid" => Some(SearchMode::Hybrid),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub query: String,
    pub filters: SearchFilters,
    pub sort: SortBy,
    pub limit: usize,
    pub mode: SearchMode,
}

/// The query's embedding, for vector and hybrid modes (the embed worker makes it).
#[derive(Debug, Clone)]
pub struct QueryVector {
    pub model: String,
    pub vector: Vec<f32>,
}

/// Reciprocal rank fusion's constant: a hit ranked r-th in an arm adds 1 / (K + r).
const RRF_K: f32 = 60.0;

/// How hybrid search merges its full-text and vector arms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fusion {
    /// Reciprocal rank fusion: a hit ranked r-th (from 1) in an arm adds 1 / (60 + r).
    Rrf,
    /// Each arm's scores scaled to [0, 1] over its pool (min-max), then averaged; a hit
    /// missing from an arm gets 0 there.
    MinMax,
}

/// The fusion hybrid search uses: min-max found known items more often than reciprocal rank
/// fusion on both corpora `hybrid_bench` ran (docs/benchmarks.md).
pub const HYBRID_FUSION: Fusion = Fusion::MinMax;

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
    store
        .with_map_fallback(|| search_once(store, req, vector))
        .await
}

async fn search_once(
    store: &Store,
    req: &SearchRequest,
    vector: Option<&QueryVector>,
) -> Result<SearchResults> {
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

/// Fuse ranked lists of (key, score), each best first, into one: best first, ties by key.
pub fn fuse<K: Clone + Eq + Hash + Ord>(fusion: Fusion, arms: &[&[(K, f32)]]) -> Vec<(K, f32)> {
    let mut score: HashMap<K, f32> = HashMap::new();
    for arm in arms {
        let (lo, hi) = arm
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), r| {
                (lo.min(r.1), hi.max(r.1))
            });
        for (rank, (key, s)) in arm.iter().enumerate() {
            let add = match fusion {
                Fusion::Rrf => 1.0 / (RRF_K + rank as f32 + 1.0),
                Fusion::MinMax if hi > lo => (s - lo) / (hi - lo) / arms.len() as f32,
                Fusion::MinMax => 1.0 / arms.len() as f32,
            };
            *score.entry(key.clone()).or_default() += add;
        }
    }
    let mut out: Vec<(K, f32)> = score.into_iter().collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}

/// BM25 ranking: (row id, score) of the best `pool` matches, and the searchable messages in
/// the filters' scope. Lance returns row ids and scores only.
async fn rank_fts(
    ds: &lance::Dataset,
    query: &str,
    filters: &SearchFilters,
    pool: usize,
) -> Result<(Vec<(u64, f32)>, usize)> {
    let filter = filters.to_sql()?;
    let scope_filter = match &filter {
        Some(f) => format!("searchable AND {f}"),
        None => "searchable".to_owned(),
    };
    let fts = FullTextSearchQuery::new(fold_accents(query))
        .with_column("search_text".into())?
        .limit(Some(pool as i64));
    let mut scan = ds.scan();
    scan.full_text_search(fts)?
        .with_row_id()
        .project(&["_score"])?
        .prefilter(true)
        .limit(Some(pool as i64), None)?;
    if let Some(f) = &filter {
        scan.filter(f)?;
    }
    // The scope count and the ranked query read different columns: run them together.
    let ranked = async {
        let stream = scan.try_into_stream().await?;
        futures::TryStreamExt::try_collect::<Vec<_>>(stream).await
    };
    let (in_scope, batches) = futures::try_join!(ds.count_rows(Some(scope_filter)), ranked)?;
    let mut ranked: Vec<(u64, f32)> = Vec::new();
    for b in &batches {
        let row_id = primitive_col::<UInt64Type>(b, "_rowid")?;
        let score = primitive_col::<Float32Type>(b, "_score")?;
        ranked.extend((0..b.num_rows()).map(|i| (row_id.value(i), score.value(i))));
    }
    Ok((ranked, in_scope))
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
        .map(|((score, m), text)| SearchHit {
            score,
            row: m.row,
            snippet: snippet(text.as_deref().unwrap_or_default(), &terms, 240),
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
        if let Some(ds) = store.dataset(SESSIONS).await? {
            let ids: Vec<String> = order.iter().map(|s| sql_str(&s.session_id)).collect();
            let filter = format!("id IN ({})", ids.join(","));
            for row in session_rows(&ds, Some(&filter)).await? {
                if let Some(&i) = index.get(&row.id) {
                    order[i].title = row.title;
                }
            }
        }
    }
    Ok(order)
}

/// Strip diacritics (`décimal` -> `decimal`), as the index's ASCII folding does to the
/// stored text, so accented and plain spellings find each other.
pub fn fold_accents(s: &str) -> String {
    use unicode_normalization::char::is_combining_mark;
    use unicode_normalization::UnicodeNormalization;
    s.nfd().filter(|c| !is_combining_mark(*c)).nfc().collect()
}

/// Lowercased words of the query, for locating the match in a hit's text.
fn query_terms(q: &str) -> Vec<String> {
    q.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// About `width` bytes of `text` around the first query term (matched by its first five
/// characters, so stemmed forms are found), on one line, cut at char boundaries.
pub fn snippet(text: &str, terms: &[String], width: usize) -> String {
    let lower = text.to_lowercase();
    // Lowercasing can change byte lengths; only trust positions when it did not.
    let pos = if lower.len() == text.len() {
        terms
            .iter()
            .filter_map(|t| {
                let stem: String = t.chars().take(5).collect();
                lower.find(&stem)
            })
            .min()
    } else {
        None
    };
    let start = pos.map_or(0, |p| p.saturating_sub(width / 3));
    let mut s = text.floor_char_boundary(start);
    let e = text.floor_char_boundary(s.saturating_add(width)).max(s);
    // Prefer starting at a word boundary: just after the first whitespace near the start.
    if s > 0 {
        if let Some((sp, ws)) = text[s..e].char_indices().find(|(_, c)| c.is_whitespace()) {
            if sp < width / 4 {
                s += sp + ws.len_utf8();
            }
        }
    }
    let mut out = String::new();
    if s > 0 {
        out.push('…');
    }
    out.push_str(&text[s..e].split_whitespace().collect::<Vec<_>>().join(" "));
    if e < text.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippet_centres_on_the_match() {
        let text = format!(
            "{} the parser fails on CRLF input {}",
            "a ".repeat(300),
            "b ".repeat(300)
        );
        let s = snippet(&text, &["crlf".into()], 80);
        assert!(s.contains("CRLF"), "{s}");
        assert!(s.starts_with('…') && s.ends_with('…'));
        assert!(s.len() < 100);
    }

    #[test]
    fn snippet_never_cuts_inside_a_character() {
        // A no-break space and an ideographic space (2 and 3 bytes) right where the window
        // starts used to leave it inside a character.
        for ws in ['\u{a0}', '\u{3000}', '\u{2003}', ' '] {
            for pad in 0..12 {
                let text = format!(
                    "{}{ws}{}match here{ws}tail",
                    "x".repeat(80 + pad),
                    "é".repeat(pad)
                );
                let s = snippet(&text, &["match".into()], 60);
                assert!(s.contains("match"), "{s}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn a_snippet_is_a_window_of_whole_characters(
            text in "[a-z \u{a0}\u{3000}\u{2003}é日本語\n\t]{0,400}",
            term in "[a-zé日本]{1,6}",
            width in 1usize..300,
        ) {
            let s = snippet(&text, &[term], width);
            // Built from slices of `text` at char boundaries (a panic otherwise), at most
            // `width` bytes of it plus the two ellipses.
            proptest::prop_assert!(s.len() <= width + 2 * '…'.len_utf8());
        }
    }

    #[test]
    fn snippet_handles_unicode_and_short_text() {
        assert_eq!(
            snippet("héllo wörld", &["wörld".into()], 240),
            "héllo wörld"
        );
        let s = snippet(&"日本語のテキスト".repeat(50), &["テキスト".into()], 30);
        assert!(!s.is_empty());
    }

    #[test]
    fn filters_escape_and_validate() {
        let f = SearchFilters {
            project: Some("o'neil_50%".into()),
            role: Some("user".into()),
            from: Some(0),
            ..Default::default()
        };
        let sql = f.to_sql().unwrap().unwrap();
        assert!(sql.contains("'%o''neil\\_50\\%%'"), "{sql}");
        assert!(sql.contains("TIMESTAMP '1970-01-01 00:00:00.000'"));
        let bad = SearchFilters {
            role: Some("robot".into()),
            ..Default::default()
        };
        assert!(bad.to_sql().is_err());
    }

    #[test]
    fn fusion_rewards_agreement_and_scales_each_arm() {
        let text = [(1u64, 9.0), (2, 5.0), (3, 1.0)];
        let near = [(3u64, 0.9), (1, 0.8), (4, 0.7)];
        let rrf = fuse(Fusion::Rrf, &[&text, &near]);
        assert_eq!(rrf.iter().map(|r| r.0).collect::<Vec<_>>(), [1, 3, 2, 4]);
        assert!((rrf[0].1 - (1.0 / 61.0 + 1.0 / 62.0)).abs() < 1e-6);
        // Min-max, averaged over two arms: 1 = (1.0 + 0.5) / 2; 3 = (0 + 1.0) / 2;
        // 2 = (0.5 + missing) / 2; 4 = (missing + 0) / 2.
        let mm = fuse(Fusion::MinMax, &[&text, &near]);
        assert_eq!(mm.iter().map(|r| r.0).collect::<Vec<_>>(), [1, 3, 2, 4]);
        assert!((mm[0].1 - 0.75).abs() < 1e-6 && (mm[1].1 - 0.5).abs() < 1e-6);
        assert_eq!(mm[3].1, 0.0);
        // One hit, or equal scores: each counts fully.
        assert_eq!(fuse(Fusion::MinMax, &[&[(7u64, 3.0)][..]]), [(7, 1.0)]);
        assert!(fuse::<u64>(Fusion::Rrf, &[&[], &[]]).is_empty());
    }

    #[test]
    fn folding() {
        assert_eq!(fold_accents("Décimal naïve façade"), "Decimal naive facade");
        assert_eq!(fold_accents("日本語"), "日本語");
    }

    #[test]
    fn dates() {
        assert_eq!(parse_date("1970-01-02").unwrap(), 86_400_000);
        assert!(parse_date("tomorrow").is_err());
    }
}
