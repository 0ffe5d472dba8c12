//! "Did you mean": for a query that found nothing, each word that alone finds nothing is
//! looked up again within an edit or two (`fts::fuzzy_reach`) (Lance's fuzzy match), and the closest word the
//! matching messages hold replaces it.

use std::collections::HashMap;

use super::check::edits;
use super::fold_accents;
use super::fts::{index_tokens, rank_fts, Combine};
use super::query::{Query, Term};
use crate::error::Result;
use crate::filters::SearchFilters;
use crate::hydrate;
use crate::store::Store;

/// Messages read for the words a misspelling may stand for.
const SAMPLE: usize = 50;
/// Words of one query looked up again at most (each costs two or three full-text queries).
const MAX_RESPELLED: usize = 8;

/// `written` (the query as the caller wrote it) with each word that matches nothing in
/// scope respelled as the nearest word the archive holds; `None` if no word was respelled.
pub(super) async fn respell(
    store: &Store,
    ds: &lance::Dataset,
    written: &str,
    query: &Query,
    filters: &SearchFilters,
) -> Result<Option<String>> {
    let mut out: Vec<String> = written.split_whitespace().map(str::to_owned).collect();
    let mut changed = false;
    let words = query.must.iter().flatten().filter_map(|t| match t {
        Term::Word(w) => Some((t, w)),
        _ => None,
    });
    for (term, word) in words.take(MAX_RESPELLED) {
        let alone = Query {
            must: vec![vec![term.clone()]],
            ..Query::default()
        };
        if !rank_fts(ds, &alone, Combine::All, filters, 1)
            .await?
            .0
            .is_empty()
        {
            continue;
        }
        let Some(better) = nearest_word(store, ds, word, filters).await? else {
            continue;
        };
        for w in out.iter_mut().filter(|w| *w == word) {
            *w = better.clone();
            changed = true;
        }
    }
    Ok(changed.then(|| out.join(" ")))
}

/// The word nearest to `word` (fewest edits, then most often seen) in the messages a fuzzy
/// match of it, or of its first letters, finds.
async fn nearest_word(
    store: &Store,
    ds: &lance::Dataset,
    word: &str,
    filters: &SearchFilters,
) -> Result<Option<String>> {
    // The index holds stems (`separate` is `separ`), which a misspelling may be too many
    // edits from (`sepaeate`): the word's first half finds those messages too.
    // Two neighbours swapped is two edits to Lance's fuzzy match (`pyhton`): each swap back
    // is looked for too.
    let mut alternatives = vec![Term::Fuzzy(word.to_owned())];
    let n = word.chars().count();
    if n >= 6 && word.chars().all(char::is_alphanumeric) {
        alternatives.push(Term::Prefix(word.chars().take(n.div_ceil(2)).collect()));
    }
    let chars: Vec<char> = word.chars().collect();
    if (4..=16).contains(&chars.len()) {
        for i in 0..chars.len() - 1 {
            if chars[i] != chars[i + 1] {
                let mut swapped = chars.clone();
                swapped.swap(i, i + 1);
                alternatives.push(Term::Word(swapped.into_iter().collect()));
            }
        }
    }
    let fuzzy = Query {
        must: vec![alternatives],
        ..Query::default()
    };
    let (ranked, _) = rank_fts(ds, &fuzzy, Combine::All, filters, SAMPLE).await?;
    if ranked.is_empty() {
        return Ok(None);
    }
    let mapped = store.mapped(ds);
    let ids: Vec<u64> = ranked.iter().map(|r| r.0).collect();
    let metas: Vec<_> = hydrate::metas(ds, mapped.as_ref(), &ids)
        .await?
        .into_iter()
        .flatten()
        .collect();
    let shown: Vec<&hydrate::RowMeta> = metas.iter().collect();
    let texts = hydrate::texts(ds, mapped.as_ref(), &shown).await?;
    let target = fold_accents(word).to_lowercase();
    let reach = super::fts::fuzzy_reach(target.chars().count()) as usize;
    let mut seen: HashMap<String, (usize, usize)> = HashMap::new();
    for text in texts.iter().flatten() {
        for w in text.split(|c: char| !c.is_alphanumeric()) {
            if w.is_empty() || w.len() > 64 {
                continue;
            }
            let w = fold_accents(w).to_lowercase();
            let d = edits(&target, &w);
            // A stop word is never an answer: the index does not hold it.
            if d > 0 && d <= reach && !index_tokens(&w).is_empty() {
                seen.entry(w).or_insert((d, 0)).1 += 1;
            }
        }
    }
    Ok(seen
        .into_iter()
        .min_by(|a, b| {
            (a.1 .0, std::cmp::Reverse(a.1 .1), &a.0).cmp(&(
                b.1 .0,
                std::cmp::Reverse(b.1 .1),
                &b.0,
            ))
        })
        .map(|(w, _)| w))
}
