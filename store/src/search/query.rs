//! The query language, read once for every front end: words (all must match), `"exact
//! phrase"`, `-word` / `NOT word` (exclude), `a OR b` (either), `prefix*`, `word~` (a word
//! or one spelled within two edits), and inline filters (`project:pond`, `client:codex`,
//! `role:user`, `session:ID`, `after:2026-11-01`, `before:yesterday`), which mean what their
//! flags mean. [`parse`] turns the text into a [`Query`]; `fts` ranks it in Lance.

use crate::error::{Result, StoreError};
use crate::filters::{parse_date, parse_end_date, SearchFilters};

/// One thing a message is matched against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    /// A word (or what the index makes of it: `foo.rs` is `foo` and `rs`, both required).
    Word(String),
    /// Words in this order, next to each other (punctuation and case aside).
    Phrase(String),
    /// An indexed word (a stem: `ventilation` is held as `ventil`) beginning with this and
    /// at most a few letters longer (`fts::prefix_reach`: 6 for a short prefix, 2 for one
    /// of 12 letters or more).
    Prefix(String),
    /// The word, or one spelled within one or two edits (by its length).
    Fuzzy(String),
}

impl Term {
    /// The term as it is written in a query.
    pub fn written(&self) -> String {
        match self {
            Term::Word(w) => w.clone(),
            Term::Phrase(p) => format!("\"{p}\""),
            Term::Prefix(p) => format!("{p}*"),
            Term::Fuzzy(w) => format!("{w}~"),
        }
    }

    fn text(&self) -> &str {
        match self {
            Term::Word(t) | Term::Phrase(t) | Term::Prefix(t) | Term::Fuzzy(t) => t,
        }
    }
}

/// A parsed query: what a message must and must not hold, and the filters written in it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// Each group must match: one term, or several joined by `OR` (any of them).
    pub must: Vec<Vec<Term>>,
    /// No term here may match.
    pub must_not: Vec<Term>,
    /// `project:`, `client:`, ... as written in the query.
    pub filters: InlineFilters,
}

/// Filters written inside the query text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InlineFilters {
    pub project: Option<String>,
    pub client: Option<String>,
    pub role: Option<String>,
    pub session: Option<String>,
    pub from: Option<i64>,
    pub to: Option<i64>,
}

/// The most terms (words, phrases, prefixes) a full-text query may hold (a vector query is
/// embedded whole: a message's text finds messages like it).
pub const MAX_TERMS: usize = 64;

/// The filter names a query may hold (`name:value`), for the syntax help.
pub const FILTER_NAMES: &str =
    "project:, client:, role:, session:, after: (or since:), before:, to:";

/// How to write a query, for errors that point at a mistake in one.
pub const SYNTAX_HINT: &str = "query syntax: words (all must match), \"exact phrase\", -word or \
     NOT word, a OR b, prefix*, word~ (typos), and filters like project:pond client:codex \
     role:user after:2026-11-01 before:yesterday";

impl Query {
    /// The words to embed for a vector search: the terms without operators or filters.
    pub fn plain_text(&self) -> String {
        let words: Vec<&str> = self.must.iter().flatten().map(Term::text).collect();
        words.join(" ")
    }

    /// The terms, wanted and excluded.
    pub fn terms(&self) -> usize {
        self.must.iter().flatten().count() + self.must_not.len()
    }

    /// Whether any term, wanted or excluded, is of this kind.
    pub fn has(&self, kind: fn(&Term) -> bool) -> bool {
        self.must.iter().flatten().chain(&self.must_not).any(kind)
    }

    /// Whether a phrase must be checked in a hit's text (the index has no word positions).
    pub fn has_phrase(&self) -> bool {
        self.has(|t| matches!(t, Term::Phrase(_)))
    }

    /// Apply the query's own filters to `filters` (the flags'). The same filter given both
    /// ways with different values is refused; dates narrow to the later start and the
    /// earlier end.
    pub fn merge_into(&self, filters: &mut SearchFilters) -> Result<()> {
        fn one(name: &str, flag: &mut Option<String>, inline: &Option<String>) -> Result<()> {
            match (flag.as_deref(), inline) {
                (_, None) => Ok(()),
                (None, Some(v)) => {
                    *flag = Some(v.clone());
                    Ok(())
                }
                (Some(a), Some(b)) if a.eq_ignore_ascii_case(b) => Ok(()),
                (Some(a), Some(b)) => Err(StoreError::InvalidQuery(format!(
                    "{name} is given twice ({a:?} as an option, {b:?} in the query): give it once"
                ))),
            }
        }
        let f = &self.filters;
        one("project", &mut filters.project, &f.project)?;
        one("client (--agent)", &mut filters.source_agent, &f.client)?;
        one("role", &mut filters.role, &f.role)?;
        one("session", &mut filters.session_id, &f.session)?;
        filters.from = filters.from.max(f.from);
        filters.to = match (filters.to, f.to) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Ok(())
    }
}

/// One piece of a query's text, before `OR` joins pieces.
#[derive(Debug)]
enum Piece {
    Term { negated: bool, term: Term },
    Or,
}

fn invalid(msg: String) -> StoreError {
    StoreError::InvalidQuery(format!("{msg} ({SYNTAX_HINT})"))
}

/// Read a query's text.
pub fn parse(text: &str) -> Result<Query> {
    let mut query = Query::default();
    let mut pieces: Vec<Piece> = Vec::new();
    let mut chars = text.char_indices().peekable();
    let mut negate_next = false;
    while let Some(&(start, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut negated = std::mem::take(&mut negate_next);
        // `-word` excludes; `--flag` and a lone `-` are words.
        let rest = &text[start..];
        if c == '-' && rest[1..].starts_with(|c: char| c.is_alphanumeric() || c == '"') {
            negated = true;
            chars.next();
        }
        let (_, first) = *chars.peek().expect("a character");
        let term = if first == '"' {
            chars.next();
            let from = chars.peek().map_or(text.len(), |&(i, _)| i);
            let mut end = None;
            for (i, c) in chars.by_ref() {
                if c == '"' {
                    end = Some(i);
                    break;
                }
            }
            let Some(end) = end else {
                return Err(invalid(format!(
                    "a quote is not closed: {:?}; close it or leave it out",
                    &text[from - 1..]
                )));
            };
            let phrase = text[from..end].trim();
            if phrase.is_empty() {
                continue;
            }
            Term::Phrase(phrase.to_owned())
        } else {
            let from = chars.peek().map_or(text.len(), |&(i, _)| i);
            let mut end = text.len();
            let mut quoted_value = None;
            while let Some(&(i, c)) = chars.peek() {
                if c.is_whitespace() {
                    end = i;
                    break;
                }
                chars.next();
                // `name:"a value"`: the quoted value belongs to the filter.
                if c == '"' && text[from..i].ends_with(':') {
                    let vfrom = i + 1;
                    let mut vend = None;
                    for (j, c) in chars.by_ref() {
                        if c == '"' {
                            vend = Some(j);
                            break;
                        }
                    }
                    let Some(vend) = vend else {
                        return Err(invalid(format!(
                            "a quote is not closed: {:?}; close it or leave it out",
                            &text[from..]
                        )));
                    };
                    quoted_value = Some(text[vfrom..vend].to_owned());
                    end = vend + 1;
                    break;
                }
            }
            let word = &text[from..end];
            if !negated {
                match word {
                    "OR" => {
                        pieces.push(Piece::Or);
                        continue;
                    }
                    "AND" => continue,
                    "NOT" => {
                        negate_next = true;
                        continue;
                    }
                    _ => {}
                }
            }
            if let Some((name, value)) = word.split_once(':') {
                let value = quoted_value.unwrap_or_else(|| value.to_owned());
                if filter(&mut query.filters, name, &value, negated)? {
                    continue;
                }
            }
            if let Some(stem) = word.strip_suffix('*') {
                if !stem.chars().any(char::is_alphanumeric) {
                    return Err(invalid(format!(
                        "{word:?} has no letters before its *: write the start of a word, as in instal*"
                    )));
                }
                if stem.contains(|c: char| !c.is_alphanumeric()) || stem.chars().count() > 40 {
                    return Err(invalid(format!(
                        "{word:?}: a prefix is one word's start, up to 40 letters and digits (as in instal*)"
                    )));
                }
                Term::Prefix(stem.to_owned())
            } else if let Some(w) = word.strip_suffix('~').filter(|w| !w.is_empty()) {
                Term::Fuzzy(w.to_owned())
            } else {
                Term::Word(word.to_owned())
            }
        };
        pieces.push(Piece::Term { negated, term });
    }
    if negate_next {
        return Err(invalid(
            "NOT ends the query: put the word to exclude after it".into(),
        ));
    }
    join(pieces, &mut query)?;
    if query.must.is_empty() && !query.must_not.is_empty() {
        return Err(invalid(
            "the query only excludes: give a word to look for too".into(),
        ));
    }
    Ok(query)
}

/// `name:value` as a filter, if `name` is one; false if it is a word with a colon.
fn filter(f: &mut InlineFilters, name: &str, value: &str, negated: bool) -> Result<bool> {
    let name = name.to_ascii_lowercase();
    let slot = match name.as_str() {
        "project" => &mut f.project,
        "client" | "agent" => &mut f.client,
        "role" => &mut f.role,
        "session" => &mut f.session,
        "after" | "since" | "before" | "to" => {
            if negated {
                return Err(invalid(format!(
                    "-{name}: cannot exclude; write the other bound (after: for -before:, before: for -after:)"
                )));
            }
            if value.is_empty() {
                return Err(invalid(format!(
                    "{name}: needs a date, as in {name}:2026-11-01"
                )));
            }
            let t = match name.as_str() {
                "before" => parse_date(value)?,
                "to" => parse_end_date(value)?,
                _ => parse_date(value)?,
            };
            // Given twice, the bounds narrow: the later start, the earlier end.
            if matches!(name.as_str(), "before" | "to") {
                f.to = Some(f.to.map_or(t, |old| old.min(t)));
            } else {
                f.from = Some(f.from.map_or(t, |old| old.max(t)));
            }
            return Ok(true);
        }
        _ => return Ok(false),
    };
    if negated {
        return Err(invalid(format!(
            "-{name}: cannot exclude; a filter keeps what matches it"
        )));
    }
    if value.is_empty() {
        return Err(invalid(format!("{name}: needs a value, as in {name}:pond")));
    }
    if let Some(old) = slot.as_deref().filter(|old| *old != value) {
        return Err(invalid(format!(
            "{name}: is given twice ({old:?} and {value:?}): give it once"
        )));
    }
    *slot = Some(value.to_owned());
    Ok(true)
}

/// Group the pieces: terms joined by `OR` form one group; each other term is a group.
fn join(pieces: Vec<Piece>, query: &mut Query) -> Result<()> {
    let mut joining = false;
    // Whether the last piece was a term to look for (what OR may join to).
    let mut after_term = false;
    let n = pieces.len();
    for (i, piece) in pieces.into_iter().enumerate() {
        match piece {
            Piece::Or => {
                if !std::mem::take(&mut after_term) || i + 1 == n {
                    return Err(invalid(
                        "OR needs a word on each side, as in ventoy OR grub".into(),
                    ));
                }
                joining = true;
            }
            Piece::Term {
                negated: true,
                term,
            } => {
                if joining {
                    return Err(invalid(format!(
                        "OR -{}: an excluded word cannot be one side of OR",
                        term.written()
                    )));
                }
                after_term = false;
                query.must_not.push(term);
            }
            Piece::Term {
                negated: false,
                term,
            } => {
                after_term = true;
                if std::mem::take(&mut joining) {
                    query.must.last_mut().expect("a group before OR").push(term);
                } else {
                    query.must.push(vec![term]);
                }
            }
        }
    }
    Ok(())
}
