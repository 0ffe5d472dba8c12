//! The window of a hit's text around the words it matched.

/// Strip diacritics (`décimal` -> `decimal`), as the index's ASCII folding does to the
/// stored text, so accented and plain spellings find each other.
pub fn fold_accents(s: &str) -> String {
    use unicode_normalization::char::is_combining_mark;
    use unicode_normalization::UnicodeNormalization;
    s.nfd().filter(|c| !is_combining_mark(*c)).nfc().collect()
}

/// Lowercased words of the query, for locating the match in a hit's text.
pub(super) fn query_terms(q: &str) -> Vec<String> {
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
