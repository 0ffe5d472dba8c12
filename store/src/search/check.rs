//! A query checked against a hit's text, for what the index cannot decide: a phrase's order
//! (the index keeps no word positions), whether the term of an `OR` that matched was the
//! phrase, a long `word~` found by its first half, and in vector and hybrid search the
//! phrases and exclusions (nearest neighbours know no words).

use std::cell::OnceCell;
use std::collections::HashSet;

use super::fts::{fuzzy_reach, index_tokens};
use super::query::{Query, Term};
use super::{fold_accents, SearchMode};

/// What of a query the hits' text must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope {
    /// Every group and exclusion (full-text search with a phrase or a long `word~`: the
    /// index matched the phrase's words in any order, the word's first half, and any term of
    /// a group).
    All,
    /// Phrases and exclusions only (vector and hybrid hits, found by meaning).
    PhrasesAndExclusions,
}

/// What a search of `mode` must check in its hits' text, if anything.
pub(super) fn needed(query: &Query, mode: SearchMode) -> Option<Scope> {
    match mode {
        SearchMode::Fts => {
            let long_fuzzy = |t: &Term| match t {
                Term::Fuzzy(w) => super::fts::widened(&fold_accents(w).to_lowercase()).is_some(),
                _ => false,
            };
            (query.has_phrase() || query.has(long_fuzzy)).then_some(Scope::All)
        }
        _ => (query.has_phrase() || !query.must_not.is_empty())
            .then_some(Scope::PhrasesAndExclusions),
    }
}

/// Whether `text` holds `query` within `scope`.
pub(super) fn holds(query: &Query, scope: Scope, text: &str) -> bool {
    let view = View::new(text);
    let groups = query.must.iter().all(|group| {
        let checked = match scope {
            Scope::All => true,
            Scope::PhrasesAndExclusions => group.iter().any(|t| matches!(t, Term::Phrase(_))),
        };
        !checked || group.iter().any(|t| view.has(t))
    });
    groups && !query.must_not.iter().any(|t| view.has(t))
}

/// A text, read lazily three ways.
struct View<'a> {
    text: &'a str,
    /// Lowercased, accents folded, every run of other than letters and digits one space,
    /// padded with a space at each end.
    normal: OnceCell<String>,
    /// Its words, lowercased and folded.
    words: OnceCell<HashSet<String>>,
    /// The words the index makes of it (stems).
    stems: OnceCell<HashSet<String>>,
}

impl<'a> View<'a> {
    fn new(text: &'a str) -> View<'a> {
        View {
            text,
            normal: OnceCell::new(),
            words: OnceCell::new(),
            stems: OnceCell::new(),
        }
    }

    fn normal(&self) -> &str {
        self.normal.get_or_init(|| normalize(self.text))
    }

    fn words(&self) -> &HashSet<String> {
        self.words.get_or_init(|| {
            fold_accents(self.text)
                .to_lowercase()
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(str::to_owned)
                .collect()
        })
    }

    fn stems(&self) -> &HashSet<String> {
        self.stems
            .get_or_init(|| index_tokens(self.text).into_iter().collect())
    }

    /// Whether the text has the term, as the index would match it.
    fn has(&self, term: &Term) -> bool {
        let stems_in = |w: &str| {
            let tokens = index_tokens(w);
            !tokens.is_empty() && tokens.iter().all(|t| self.stems().contains(t))
        };
        match term {
            Term::Word(w) => stems_in(w),
            Term::Phrase(p) => phrase_in(self.normal(), p),
            Term::Prefix(p) => {
                let p = fold_accents(p).to_lowercase();
                let stem = index_tokens(&p).into_iter().next();
                self.words().iter().any(|w| w.starts_with(&p))
                    || stem.is_some_and(|s| self.stems().iter().any(|t| t.starts_with(&s)))
            }
            Term::Fuzzy(w) => {
                let w = fold_accents(w).to_lowercase();
                let reach = fuzzy_reach(w.chars().count()) as usize;
                stems_in(&w) || self.words().iter().any(|x| edits(x, &w) <= reach)
            }
        }
    }
}

/// Lowercased, accents folded, every run of other than letters and digits one space, a
/// space at each end: how a phrase is compared with a text.
fn normalize(s: &str) -> String {
    let folded = fold_accents(s).to_lowercase();
    let mut out = String::with_capacity(folded.len() + 2);
    out.push(' ');
    for c in folded.chars() {
        if c.is_alphanumeric() {
            out.push(c);
        } else if !out.ends_with(' ') {
            out.push(' ');
        }
    }
    if !out.ends_with(' ') {
        out.push(' ');
    }
    out
}

/// Whether `phrase` is in `normal` (a [`normalize`]d text) as whole words. A script written
/// without spaces between words (Chinese, Japanese, Thai) has no word boundary to require:
/// an edge of the phrase in such a script may sit inside a run of text.
fn phrase_in(normal: &str, phrase: &str) -> bool {
    let p = normalize(phrase);
    let p = p.trim();
    if p.is_empty() {
        return false;
    }
    let open_start = p.chars().next().is_some_and(unspaced);
    let open_end = p.chars().next_back().is_some_and(unspaced);
    normal.match_indices(p).any(|(at, _)| {
        let before = normal[..at].chars().next_back();
        let after = normal[at + p.len()..].chars().next();
        (open_start || before == Some(' ')) && (open_end || after == Some(' '))
    })
}

/// A letter of a script written without spaces between its words.
fn unspaced(c: char) -> bool {
    matches!(c as u32,
        0x0E00..=0x0EFF       // Thai, Lao
        | 0x1000..=0x109F     // Myanmar
        | 0x1780..=0x17FF     // Khmer
        | 0x3040..=0x30FF     // Hiragana, Katakana
        | 0x3400..=0x4DBF     // CJK extension A
        | 0x4E00..=0x9FFF     // CJK unified ideographs
        | 0xF900..=0xFAFF     // CJK compatibility ideographs
        | 0xFF66..=0xFF9F     // halfwidth Katakana
        | 0x20000..=0x3FFFF) // CJK extensions B and on
}

/// Edits between two words, in characters: insertions, deletions, changes and swaps of
/// two neighbours (optimal string alignment: `unkonwn` is one edit from `unknown`).
pub(super) fn edits(a: &str, b: &str) -> usize {
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
    use super::*;

    #[test]
    fn edits_counts_insertions_deletions_changes_and_swaps() {
        assert_eq!(edits("ventoi", "ventoy"), 1);
        assert_eq!(edits("ventoy", "ventoy"), 0);
        assert_eq!(edits("vento", "ventoy"), 1);
        assert_eq!(edits("", "abc"), 3);
        assert_eq!(edits("kitten", "sitting"), 3);
        assert_eq!(edits("日本語", "日本"), 1);
        assert_eq!(edits("unkonwn", "unknown"), 1);
    }

    #[test]
    fn phrases_need_word_edges_except_in_unspaced_scripts() {
        let n = normalize("I want to install Ventoy, then 查询开发机的状态。");
        assert!(phrase_in(&n, "install ventoy"));
        assert!(phrase_in(&n, "INSTALL, Ventoy"));
        assert!(!phrase_in(&n, "stall vent"));
        assert!(!phrase_in(&n, "ventoy install"));
        assert!(phrase_in(&n, "查询开发机"));
        assert!(phrase_in(&n, "开发机"));
        assert!(!phrase_in(&n, "开发机器"));
        assert!(!phrase_in(&n, ""));
    }
}
