//! The full-text arm: a parsed [`Query`] as Lance's boolean FTS query over
//! `messages.search_text`, BM25-ranked in Lance.

use std::sync::OnceLock;

use arrow_array::types::{Float32Type, UInt64Type};
use lance_index::scalar::inverted::query::{BooleanQuery, FtsQuery, MatchQuery, Occur, Operator};
use lance_index::scalar::inverted::tokenizer::document_tokenizer::LanceTokenizer;
use lance_index::scalar::FullTextSearchQuery;

use super::query::{Query, Term};
use crate::error::Result;
use crate::filters::SearchFilters;
use crate::read::primitive_col;
use crate::search::fold_accents;

const COLUMN: &str = "search_text";
/// How many letters a `prefix*` of `len` characters may add (Lance expands a prefix as an
/// edit distance with the prefix kept, and refuses an automaton over 10,000 states: these
/// are the largest distances within that limit for prefixes of distinct letters, the worst
/// case, measured with fst 0.4.7). The index holds stems (`ventilation` is `ventil`), so
/// most words are within reach of their first letters.
fn prefix_reach(len: usize) -> u32 {
    match len {
        0..=5 => 6,
        6 => 4,
        7..=11 => 3,
        _ => 2,
    }
}
/// How many indexed words one `prefix*` or `word~` may stand for.
const EXPANSIONS: usize = 128;

/// How many edits `word~` allows a word of `len` characters: none for one or two, one up
/// to seven, two beyond (Lance's automatic rule gives two from six, which matched `ventil`
/// and `entri` for `ventoi`).
pub(super) fn fuzzy_reach(len: usize) -> u32 {
    match len {
        0..=2 => 0,
        3..=7 => 1,
        _ => 2,
    }
}

/// Indexed words beginning with `p` (lowercased, folded): Lance expands a prefix as an
/// edit distance with the prefix kept. An explicit distance makes Lance split the text
/// simply, without lowercasing or stemming: `p` is the form the index holds.
fn beginning(p: &str) -> FtsQuery {
    let keep = p.chars().count();
    let m = MatchQuery::new(p.to_owned())
        .with_fuzziness(Some(prefix_reach(keep)))
        .with_prefix_length(keep as u32)
        .with_max_expansions(EXPANSIONS)
        .with_column(Some(COLUMN.into()));
    FtsQuery::Match(m)
}

/// The first half `word~` is also looked for by, for a word of 8 or more letters and
/// digits (lowercased, folded); its hits are checked in their text.
pub(super) fn widened(word: &str) -> Option<String> {
    let n = word.chars().count();
    (n >= 8 && word.chars().all(char::is_alphanumeric))
        .then(|| word.chars().take(n.div_ceil(2)).collect())
}

/// The searchable messages in the filters' scope.
pub(super) async fn in_scope(ds: &lance::Dataset, filters: &SearchFilters) -> Result<usize> {
    let scope = match filters.to_sql()? {
        Some(f) => format!("searchable AND {f}"),
        None => "searchable".to_owned(),
    };
    Ok(ds.count_rows(Some(scope)).await?)
}

/// How the query's groups combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Combine {
    /// Every group must match (the query as written).
    All,
    /// Any group may match, more matching ranks higher (a query that found nothing as
    /// written, loosened).
    Any,
}

/// BM25 ranking: (row id, score) of the best `pool` matches, and the searchable messages in
/// the filters' scope. Lance returns row ids and scores only.
pub(super) async fn rank_fts(
    ds: &lance::Dataset,
    query: &Query,
    combine: Combine,
    filters: &SearchFilters,
    pool: usize,
) -> Result<(Vec<(u64, f32)>, usize)> {
    let filter = filters.to_sql()?;
    let scope_filter = match &filter {
        Some(f) => format!("searchable AND {f}"),
        None => "searchable".to_owned(),
    };
    let fts = FullTextSearchQuery::new_query(lance_query(query, combine))
        .with_column(COLUMN.into())?
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

/// One term as a Lance leaf. A phrase is its words, all required (the index keeps no
/// positions; `check` reads the order in the hit's text).
fn leaf(term: &Term) -> FtsQuery {
    let m = match term {
        Term::Word(t) | Term::Phrase(t) => {
            MatchQuery::new(fold_accents(t)).with_operator(Operator::And)
        }
        // Words beginning with the prefix as written, or with its stem (`install*` finds
        // `instal`, the stem the index holds for `install`), and the word itself (a prefix
        // in Chinese is words the index splits it into).
        Term::Prefix(p) => {
            let p = fold_accents(p).to_lowercase();
            let mut clauses = vec![
                (Occur::Should, leaf(&Term::Word(p.clone()))),
                (Occur::Should, beginning(&p)),
            ];
            if let [stem] = index_tokens(&p).as_slice() {
                if *stem != p && stem.chars().all(char::is_alphanumeric) {
                    clauses.push((Occur::Should, beginning(stem)));
                }
            }
            return FtsQuery::Boolean(BooleanQuery::new(clauses));
        }
        // The word as the index holds it (stemmed), or within edits of it (Lance's planner
        // reads no distance as none: give it one).
        Term::Fuzzy(w) => {
            let w = fold_accents(w).to_lowercase();
            let near = |form: String| {
                let reach = fuzzy_reach(form.chars().count());
                let m = MatchQuery::new(form)
                    .with_fuzziness(Some(reach))
                    .with_max_expansions(EXPANSIONS)
                    .with_column(Some(COLUMN.into()));
                (Occur::Should, FtsQuery::Match(m))
            };
            // Within edits of the word as written, and of its stem (`hanxdle` is one edit
            // from `handl`, the stem the index holds for `handle`, as written it is two).
            let mut forms = vec![w.clone()];
            forms.extend(index_tokens(&w).into_iter().filter(|t| *t != w));
            let mut clauses = vec![(Occur::Should, leaf(&Term::Word(w.clone())))];
            clauses.extend(forms.into_iter().map(near));
            // A long word's stem may be more edits away than its reach (`configuraton` is
            // four from `configur`): its first half finds those too, and the hits' text is
            // checked (`check`) for a word within reach.
            if let Some(half) = widened(&w) {
                clauses.push((Occur::Should, beginning(&half)));
            }
            return FtsQuery::Boolean(BooleanQuery::new(clauses));
        }
    };
    FtsQuery::Match(m.with_column(Some(COLUMN.into())))
}

fn group(terms: &[Term]) -> FtsQuery {
    match terms {
        [one] => leaf(one),
        many => FtsQuery::Boolean(BooleanQuery::new(
            many.iter().map(|t| (Occur::Should, leaf(t))),
        )),
    }
}

/// The query for Lance: its groups required (or any of them), its exclusions prohibited.
fn lance_query(query: &Query, combine: Combine) -> FtsQuery {
    let occur = || match combine {
        Combine::All => Occur::Must,
        Combine::Any => Occur::Should,
    };
    // An excluded phrase is checked in the hits' text: its words alone may be anywhere.
    let excluded: Vec<&Term> = query
        .must_not
        .iter()
        .filter(|t| !matches!(t, Term::Phrase(_)))
        .collect();
    if excluded.is_empty() && query.must.len() == 1 {
        return group(&query.must[0]);
    }
    let clauses = query
        .must
        .iter()
        .map(|g| (occur(), group(g)))
        .chain(excluded.into_iter().map(|t| (Occur::MustNot, leaf(t))));
    FtsQuery::Boolean(BooleanQuery::new(clauses))
}

/// The words the index keeps of `text` (lowercased, stemmed, stop words left out): empty
/// for a text of stop words, which no message can match.
pub(super) fn index_tokens(text: &str) -> Vec<String> {
    static TOKENIZER: OnceLock<Option<Box<dyn LanceTokenizer>>> = OnceLock::new();
    let Some(base) = TOKENIZER.get_or_init(|| crate::indexes::fts_params().build().ok()) else {
        // Without the tokenizer nothing is known to be a stop word.
        return vec![text.to_owned()];
    };
    let mut tokenizer = base.box_clone();
    let folded = fold_accents(text);
    let mut stream = tokenizer.token_stream_for_search(&folded);
    let mut out = Vec::new();
    while let Ok(Some(t)) = stream.try_next() {
        out.push(t.text.clone());
    }
    out
}
