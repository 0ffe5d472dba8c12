//! "Did you mean": for a query that found nothing, each word that alone finds nothing is
//! looked up again within an edit or two (`fts::fuzzy_reach`) (Lance's fuzzy match), and the closest word the
//! matching messages hold replaces it.

use std::collections::HashMap;

use super::fold_accents;
use super::fts::{rank_fts, Combine};
use super::query::{Query, Term};
use crate::error::Result;
use crate::filters::SearchFilters;
use crate::hydrate;
use crate::store::Store;

/// Messages read for the words a misspelling may stand for.
const SAMPLE: usize = 50;

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
    for term in query.must.iter().flatten() {
        let Term::Word(word) = term else { continue };
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
    let mut alternatives = vec![Term::Fuzzy(word.to_owned())];
    let n = word.chars().count();
    if n >= 6 && word.chars().all(char::is_alphanumeric) {
        alternatives.push(Term::Prefix(word.chars().take(n.div_ceil(2)).collect()));
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
            if d > 0 && d <= reach {
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

/// Edits between two words, in characters: insertions, deletions, changes and swaps of
/// two neighbours (optimal string alignment: `unkonwn` is one edit from `unknown`).
fn edits(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let change = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + change);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    #[test]
    fn edits_counts_insertions_deletions_and_changes() {
        assert_eq!(super::edits("ventoi", "ventoy"), 1);
        assert_eq!(super::edits("ventoy", "ventoy"), 0);
        assert_eq!(super::edits("vento", "ventoy"), 1);
        assert_eq!(super::edits("", "abc"), 3);
        assert_eq!(super::edits("kitten", "sitting"), 3);
        assert_eq!(super::edits("日本語", "日本"), 1);
        assert_eq!(super::edits("unkonwn", "unknown"), 1);
    }
}
