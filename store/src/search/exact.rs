//! Exact and regex search over every part of every message: prose, thinking, tool calls
//! (their input, `parts.body`) and tool results (their output, `parts.text`), where the
//! strings people look for again live (`ERR_PNPM_OUTDATED_LOCKFILE`, `src/a.rs:240`, a hash).
//!
//! Indexed, then checked: Lance's n-gram indexes on `parts.text` and `parts.body`
//! ([`crate::indexes`]; trigrams of ASCII letters and digits, lowercased and accent-folded)
//! give the parts that hold every trigram of the literals a match needs (the exact text, or
//! the fragments `Need` reads from a regex's syntax); the pattern then runs (the `regex`
//! crate: linear time, size-capped) on those candidates only, newest message first, until
//! the page is full. A pattern with no literal the index can look up (under three letters or
//! digits, only punctuation, only CJK) is checked on every part of its scope, which must
//! then be small ([`SCAN_MAX_MESSAGES`]). Runs in the sql worker (its deadline and memory
//! budget); the front gets the page.
//!
//! The query is taken literally: no words, phrases or inline filters (those are the
//! full-text query language's); filters come from the request's fields.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::time::{Duration, Instant};

use arrow_array::types::UInt64Type;
use arrow_array::RecordBatch;
use futures::TryStreamExt;
use lance::dataset::ProjectionRequest;
use lance::index::DatasetIndexExt;
use lance::index::DatasetIndexInternalExt;
use lance::Dataset;
use lance_index::metrics::NoOpMetricsCollector;
use lance_index::scalar::{SearchResult, TextQuery};
use pond_protocol::grep::{GrepHit, GrepJob, GrepResults, GrepSession};
use regex::{Regex, RegexBuilder};
use regex_syntax::hir::{Class, Hir, HirKind};

use crate::error::{Result, StoreError};
use crate::filters::SearchFilters;
use crate::indexes::NGRAM_INDEXES;
use crate::read::{opt_str, plain_strings, primitive_col, string_col, ts_at, u32_at};
use crate::schema::{sql_str, PARTS};
use crate::store::Store;

/// The longest pattern searched.
pub const MAX_PATTERN_BYTES: usize = 1024;
/// The most a compiled pattern may take (the `regex` crate's size limit): `a{1000}{1000}`
/// is refused, not built.
const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// A pattern the index cannot narrow is checked on every part of its scope, which may hold
/// at most this many messages (`POND_GREP_SCAN_MAX_MESSAGES` overrides it).
pub const SCAN_MAX_MESSAGES: usize = 50_000;

/// [`SCAN_MAX_MESSAGES`], or `POND_GREP_SCAN_MAX_MESSAGES` (tests refuse a scan of a few).
fn scan_max_messages() -> usize {
    std::env::var("POND_GREP_SCAN_MAX_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(SCAN_MAX_MESSAGES)
}
/// Candidate parts kept at most (their keys are held to order them newest first).
const MAX_CANDIDATES: usize = 1_000_000;
/// The most of a line shown around a match, in characters.
pub const LINE_CHARS: usize = 240;
/// Characters of context kept before a match when its line is cut.
const LINE_BEFORE: usize = 80;
/// Parts whose text is read at once while candidates are checked (a tool result may be
/// megabytes).
const CHECK_CHUNK: usize = 16;
/// Rows taken at once for the candidates' keys.
const KEY_CHUNK: usize = 4096;
/// Message ids looked up at once by the `messages` id B-tree; past [`ID_LOOKUP_MAX`]
/// distinct ids, the scope is scanned once instead.
const ID_CHUNK: usize = 512;
const ID_LOOKUP_MAX: usize = 20_000;

/// What a match needs the text to contain: the literal fragments of a pattern, as a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Need {
    /// Nothing known: every part is a candidate.
    All,
    /// This text, in any case (the index is case-blind).
    Lit(String),
    And(Vec<Need>),
    Or(Vec<Need>),
}

impl Need {
    fn and(items: Vec<Need>) -> Need {
        let mut flat: Vec<Need> = Vec::new();
        for n in items {
            match n {
                Need::All => {}
                Need::Lit(s) if s.is_empty() => {}
                Need::And(inner) => flat.extend(inner),
                other => flat.push(other),
            }
        }
        match flat.len() {
            0 => Need::All,
            1 => flat.pop().expect("one"),
            _ => Need::And(flat),
        }
    }

    fn or(items: Vec<Need>) -> Need {
        if items
            .iter()
            .any(|n| matches!(n, Need::All) || matches!(n, Need::Lit(s) if s.is_empty()))
        {
            return Need::All;
        }
        Need::Or(items)
    }

    /// The fragments of a regex's syntax every match contains: literal runs joined across
    /// concatenation (a class of one letter's cases, as `(?i)` makes, counts as the letter),
    /// alternatives as `Or`, anything repeated possibly zero times as `All`.
    pub(crate) fn of(hir: &Hir) -> Need {
        match hir.kind() {
            HirKind::Empty | HirKind::Look(_) | HirKind::Class(_) => {
                exact_text(hir).map_or(Need::All, Need::Lit)
            }
            HirKind::Literal(_) => exact_text(hir).map_or(Need::All, Need::Lit),
            HirKind::Capture(c) => Need::of(&c.sub),
            HirKind::Repetition(r) if r.min >= 1 => Need::of(&r.sub),
            HirKind::Repetition(_) => Need::All,
            HirKind::Alternation(alts) => Need::or(alts.iter().map(Need::of).collect()),
            HirKind::Concat(items) => {
                let mut out = Vec::new();
                let mut run = String::new();
                for item in items {
                    match exact_text(item) {
                        Some(s) => run.push_str(&s),
                        None => {
                            out.push(Need::Lit(std::mem::take(&mut run)));
                            out.push(Need::of(item));
                        }
                    }
                }
                out.push(Need::Lit(run));
                Need::and(out)
            }
        }
    }

    fn literals<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Need::All => {}
            Need::Lit(s) => out.push(s),
            Need::And(v) | Need::Or(v) => v.iter().for_each(|n| n.literals(out)),
        }
    }

    /// The candidates, given each literal's (`None`: the index cannot narrow it).
    fn eval(&self, found: &HashMap<String, Option<Vec<u64>>>) -> Option<Vec<u64>> {
        match self {
            Need::All => None,
            Need::Lit(s) => found.get(s).cloned().flatten(),
            Need::And(v) => v
                .iter()
                .filter_map(|n| n.eval(found))
                .reduce(|a, b| intersect(&a, &b)),
            Need::Or(v) => {
                let mut acc = Vec::new();
                for n in v {
                    acc = union(&acc, &n.eval(found)?);
                }
                Some(acc)
            }
        }
    }
}

/// The text a piece of syntax matches, when it matches exactly one (up to case).
fn exact_text(hir: &Hir) -> Option<String> {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => Some(String::new()),
        HirKind::Literal(l) => String::from_utf8(l.0.to_vec()).ok(),
        HirKind::Class(c) => class_char(c).map(String::from),
        HirKind::Capture(c) => exact_text(&c.sub),
        HirKind::Repetition(r) if r.min == 1 && r.max == Some(1) => exact_text(&r.sub),
        HirKind::Concat(items) => items.iter().map(exact_text).collect(),
        _ => None,
    }
}

/// A class of one character's cases (`[kK]`, as `(?i)k` compiles) as that character.
fn class_char(c: &Class) -> Option<char> {
    let chars: Vec<char> = match c {
        Class::Unicode(u) => {
            let mut v = Vec::new();
            for r in u.ranges() {
                if (r.end() as u32 - r.start() as u32) > 4 || v.len() > 4 {
                    return None;
                }
                v.extend(r.start()..=r.end());
            }
            v
        }
        Class::Bytes(b) => {
            let mut v = Vec::new();
            for r in b.ranges() {
                if r.end() - r.start() > 4 || v.len() > 4 {
                    return None;
                }
                v.extend((r.start()..=r.end()).map(char::from));
            }
            v
        }
    };
    let lower = |c: char| c.to_lowercase().next().unwrap_or(c);
    let first = lower(*chars.first()?);
    chars.iter().all(|&c| lower(c) == first).then_some(first)
}

fn intersect(a: &[u64], b: &[u64]) -> Vec<u64> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

fn union(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out: Vec<u64> = a.iter().chain(b).copied().collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The pattern compiled, and what a match needs. Refuses an empty, oversized or invalid
/// pattern, or one whose program would be too large, with what to do instead.
pub(crate) fn compile(job: &GrepJob) -> Result<(Regex, Need)> {
    let p = job.pattern.as_str();
    if p.is_empty() {
        return Err(StoreError::InvalidQuery(
            "the pattern is empty: give the text to find".into(),
        ));
    }
    if p.len() > MAX_PATTERN_BYTES {
        return Err(StoreError::InvalidQuery(format!(
            "the pattern is {} bytes, over the {MAX_PATTERN_BYTES}-byte limit: search for a \
             shorter distinctive part of it",
            p.len()
        )));
    }
    let (source, need) = if job.regex {
        let hir = regex_syntax::parse(p).map_err(|e| {
            StoreError::InvalidQuery(format!(
                "the regex does not parse: {e}\n(the regex crate's syntax; \
                 no look-around or backreferences; or search with --mode exact)"
            ))
        })?;
        (p.to_owned(), Need::of(&hir))
    } else {
        (regex::escape(p), Need::Lit(p.to_owned()))
    };
    let re = RegexBuilder::new(&source)
        .case_insensitive(!job.regex && !job.case_sensitive)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(_) => StoreError::InvalidQuery(format!(
                "the regex compiles to more than {} KiB (counted repetitions like a{{1000}} \
                 multiply it): write it with fewer or smaller repetitions",
                REGEX_SIZE_LIMIT / 1024
            )),
            e => StoreError::InvalidQuery(format!("the regex does not parse: {e}")),
        })?;
    Ok((re, need))
}

/// One candidate part and the message it belongs to.
struct Candidate {
    row_id: u64,
    session_id: String,
    message_id: String,
    ordinal: u32,
    part_type: String,
    tool_name: Option<String>,
}

/// What a hit shows of its message.
#[derive(Clone)]
struct MessageMeta {
    timestamp: i64,
    role: String,
    project: Option<String>,
    source_agent: String,
}

/// Exact or regex search: the newest page of messages one of whose parts matches.
pub async fn grep(store: &Store, job: &GrepJob) -> Result<GrepResults> {
    let started = Instant::now();
    let budget = Duration::from_millis(job.timeout_ms.max(1));
    let (re, need) = compile(job)?;
    let filters = SearchFilters {
        project: job.project.clone(),
        session_id: job.session_id.clone(),
        source_agent: job.source_agent.clone(),
        role: None,
        from: job.from_ms,
        to: job.to_ms,
    };
    filters.check_range()?;
    let scope = scope_filter(&filters, job.role.as_deref())?;
    let messages = store.messages().await?;
    let mut out = GrepResults {
        pattern: job.pattern.clone(),
        regex: job.regex,
        case_sensitive: job.case_sensitive && !job.regex,
        include_tools: job.include_tools,
        offset: job.offset,
        ..GrepResults::default()
    };
    let Some(parts) = store.dataset(PARTS).await? else {
        return Ok(out);
    };
    // Candidates from the indexes, or (no usable literal) every part of a small scope.
    let (mut cands, metas) = match indexed(&parts, &need).await? {
        Narrowed::Rows(ids) => {
            let mut cands = keys_of(&parts, &ids, job).await?;
            cands.extend(unindexed_keys(&parts, job).await?);
            let metas = metas_of(&messages, &cands, &scope).await?;
            (cands, metas)
        }
        Narrowed::NoLiteral => scope_scan(&messages, &parts, &scope, job, false).await?,
        Narrowed::NoIndex => scope_scan(&messages, &parts, &scope, job, true).await?,
    };
    cands.retain(|c| metas.contains_key(&(c.session_id.clone(), c.message_id.clone())));
    out.candidates = cands.len() as u64;
    // Newest first; ties by message, then by part.
    let meta = |c: &Candidate| meta_of(&metas, c);
    cands.sort_by(|a, b| {
        meta(b)
            .timestamp
            .cmp(&meta(a).timestamp)
            .then_with(|| (&a.session_id, &a.message_id).cmp(&(&b.session_id, &b.message_id)))
            .then_with(|| a.ordinal.cmp(&b.ordinal))
    });

    let want = (job.offset + job.limit.max(1)) as usize;
    let mut seen = 0usize;
    let mut page: Vec<(Candidate, GrepHit)> = Vec::new();
    let mut matched: HashSet<(String, String)> = HashSet::new();
    let mut rest = cands.into_iter().peekable();
    'check: while rest.peek().is_some() {
        if started.elapsed() > budget {
            out.notes.push(format!(
                "stopped at the {} s time limit after checking {} of {} candidate parts: \
                 the page holds the newest matches found; narrow the search (a longer \
                 literal, --project, --session, --from) to see all",
                budget.as_secs().max(1),
                out.checked,
                out.candidates
            ));
            break;
        }
        let chunk: Vec<Candidate> = rest
            .by_ref()
            .filter(|c| !matched.contains(&(c.session_id.clone(), c.message_id.clone())))
            .take(CHECK_CHUNK)
            .collect();
        let texts = texts_of(&parts, &chunk).await?;
        for (c, (text, body)) in chunk.into_iter().zip(texts) {
            out.checked += 1;
            let key = (c.session_id.clone(), c.message_id.clone());
            if matched.contains(&key) {
                continue;
            }
            let found = [text, body]
                .into_iter()
                .flatten()
                .find_map(|t| found_line(&t, &re, job));
            let Some((line, line_number)) = found else {
                continue;
            };
            matched.insert(key);
            seen += 1;
            if seen > job.offset as usize {
                let m = meta_of(&metas, &c);
                page.push((
                    c,
                    GrepHit {
                        message_id: String::new(),
                        role: m.role.clone(),
                        timestamp: m.timestamp,
                        part_type: String::new(),
                        tool_name: None,
                        line,
                        line_number,
                    },
                ));
            }
            if seen > want {
                break 'check;
            }
        }
    }
    out.more = seen > want;
    // At most MAX_CANDIDATES (a million) matched; a page is far smaller.
    out.matched = u32::try_from(seen).unwrap_or(u32::MAX);
    out.limit = u32::try_from(job.limit.max(1)).unwrap_or(u32::MAX);
    page.truncate(job.limit.max(1) as usize);
    out.hits = page.len() as u64;
    out.sessions = group(store, page, &metas).await?;
    Ok(out)
}

/// The scope as a `messages` filter: the shared filters, any role (tool messages hold tool
/// results), the owner of each message id only (a replayed copy would repeat it).
fn scope_filter(filters: &SearchFilters, role: Option<&str>) -> Result<String> {
    let mut parts = vec!["replayed = false".to_owned()];
    if let Some(f) = filters.to_sql()? {
        parts.push(f);
    }
    if let Some(r) = role {
        if pond_rows::Role::parse(r).is_none() {
            return Err(StoreError::InvalidQuery(format!(
                "unknown role {r:?}: use user, assistant, system or tool"
            )));
        }
        parts.push(format!("role = {}", sql_str(r)));
    }
    Ok(parts.join(" AND "))
}

/// What the n-gram indexes make of a pattern.
enum Narrowed {
    /// Row ids of the parts whose text or body holds every literal the pattern needs, sorted.
    Rows(Vec<u64>),
    /// The pattern has no literal of three letters or digits to look up.
    NoLiteral,
    /// An n-gram index is not built (a store synced with `--no-index`, one made before the
    /// indexes, or one being rebuilt): nothing is known of any part.
    NoIndex,
}

/// The parts whose text or body may hold a match, by the n-gram indexes.
async fn indexed(parts: &Dataset, need: &Need) -> Result<Narrowed> {
    let mut lits = Vec::new();
    need.literals(&mut lits);
    let indices = parts.load_indices().await?;
    let built = |name: &str| indices.iter().any(|i| i.name == name);
    if !NGRAM_INDEXES.iter().all(|(_, name)| built(name)) {
        return Ok(Narrowed::NoIndex);
    }
    let mut found: HashMap<String, Option<Vec<u64>>> = HashMap::new();
    for lit in lits {
        if found.contains_key(lit) {
            continue;
        }
        let mut ids: Option<Vec<u64>> = Some(Vec::new());
        for (column, name) in NGRAM_INDEXES {
            for seg in indices.iter().filter(|i| i.name == name) {
                let index = parts
                    .open_scalar_index(column, &seg.uuid, &NoOpMetricsCollector)
                    .await?;
                let query = TextQuery::StringContains(lit.to_owned());
                let rows = match index.search(&query, &NoOpMetricsCollector).await? {
                    SearchResult::AtLeast(_) => None,
                    SearchResult::Exact(r) | SearchResult::AtMost(r) => r
                        .true_rows()
                        .row_addrs()
                        .map(|it| it.map(u64::from).collect::<Vec<u64>>()),
                };
                ids = match (ids, rows) {
                    (Some(a), Some(mut b)) => {
                        b.sort_unstable();
                        Some(union(&a, &b))
                    }
                    _ => None,
                };
            }
        }
        found.insert(lit.to_owned(), ids);
    }
    let Some(ids) = need.eval(&found) else {
        return Ok(Narrowed::NoLiteral);
    };
    if ids.len() > MAX_CANDIDATES {
        return Err(StoreError::InvalidQuery(format!(
            "{} parts hold the pattern's letters (over {MAX_CANDIDATES}): search for a \
             longer or rarer literal, or narrow with filters",
            ids.len()
        )));
    }
    Ok(Narrowed::Rows(ids))
}

const KEY_COLUMNS: [&str; 6] = [
    "_rowid",
    "session_id",
    "message_id",
    "ordinal",
    "part_type",
    "tool_name",
];

/// The keys of parts by row id (parts gone since the index was built are left out).
async fn keys_of(parts: &Dataset, ids: &[u64], job: &GrepJob) -> Result<Vec<Candidate>> {
    let mut out = Vec::new();
    for chunk in ids.chunks(KEY_CHUNK) {
        let projection = ProjectionRequest::from_columns(KEY_COLUMNS, parts.schema());
        let b = plain_strings(parts.take_rows(chunk, projection).await?)?;
        keys_from(&b, job, &mut out)?;
    }
    Ok(out)
}

/// The keys of the parts in fragments no n-gram index covers yet (written since it was
/// last updated, or a store whose indexes are still to be built): every one a candidate.
async fn unindexed_keys(parts: &Dataset, job: &GrepJob) -> Result<Vec<Candidate>> {
    let mut frags: HashMap<u64, lance::table::format::Fragment> = HashMap::new();
    for (_, name) in NGRAM_INDEXES {
        let missing = match parts.unindexed_fragments(name).await {
            Ok(f) => f,
            Err(_) => parts
                .get_fragments()
                .iter()
                .map(|f| f.metadata().clone())
                .collect(),
        };
        for f in missing {
            frags.insert(f.id, f);
        }
    }
    if frags.is_empty() {
        return Ok(Vec::new());
    }
    let mut scan = parts.scan();
    scan.project(&KEY_COLUMNS[1..])?
        .with_row_id()
        .with_fragments(frags.into_values().collect());
    scan_keys(scan, job, None).await
}

async fn scan_keys(
    scan: lance::dataset::scanner::Scanner,
    job: &GrepJob,
    keep: Option<&HashMap<(String, String), MessageMeta>>,
) -> Result<Vec<Candidate>> {
    let mut out = Vec::new();
    let mut stream = scan.try_into_stream().await?;
    while let Some(b) = stream.try_next().await? {
        let b = plain_strings(b)?;
        keys_from(&b, job, &mut out)?;
        if let Some(keep) = keep {
            out.retain(|c| keep.contains_key(&(c.session_id.clone(), c.message_id.clone())));
        }
        if out.len() > MAX_CANDIDATES {
            return Err(StoreError::InvalidQuery(format!(
                "the scope holds over {MAX_CANDIDATES} parts to check: narrow it with filters"
            )));
        }
    }
    Ok(out)
}

fn keys_from(b: &RecordBatch, job: &GrepJob, out: &mut Vec<Candidate>) -> Result<()> {
    let rid = primitive_col::<UInt64Type>(b, "_rowid")?;
    let sid = string_col(b, "session_id")?;
    let mid = string_col(b, "message_id")?;
    let ty = string_col(b, "part_type")?;
    let tool = string_col(b, "tool_name")?;
    for i in 0..b.num_rows() {
        let part_type = ty.value(i);
        if !job.include_tools && matches!(part_type, "tool_call" | "tool_result") {
            continue;
        }
        if job.session_id.as_deref().is_some_and(|s| s != sid.value(i)) {
            continue;
        }
        out.push(Candidate {
            row_id: rid.value(i),
            session_id: sid.value(i).to_owned(),
            message_id: mid.value(i).to_owned(),
            ordinal: u32_at(b, "ordinal", i)?,
            part_type: part_type.to_owned(),
            tool_name: opt_str(tool, i),
        });
    }
    Ok(())
}

const META_COLUMNS: [&str; 6] = [
    "session_id",
    "id",
    "timestamp",
    "role",
    "project",
    "source_agent",
];

fn metas_from(b: &RecordBatch, out: &mut HashMap<(String, String), MessageMeta>) -> Result<()> {
    let sid = string_col(b, "session_id")?;
    let id = string_col(b, "id")?;
    let role = string_col(b, "role")?;
    let project = string_col(b, "project")?;
    let agent = string_col(b, "source_agent")?;
    for i in 0..b.num_rows() {
        out.insert(
            (sid.value(i).to_owned(), id.value(i).to_owned()),
            MessageMeta {
                timestamp: ts_at(b, "timestamp", i)?.unwrap_or(0),
                role: role.value(i).to_owned(),
                project: opt_str(project, i),
                source_agent: agent.value(i).to_owned(),
            },
        );
    }
    Ok(())
}

/// The messages in scope that the candidates belong to: looked up by id (B-tree) when
/// they are few, else the scope scanned once.
async fn metas_of(
    messages: &Dataset,
    cands: &[Candidate],
    scope: &str,
) -> Result<HashMap<(String, String), MessageMeta>> {
    let mut ids: Vec<&str> = cands.iter().map(|c| c.message_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut out = HashMap::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let filters: Vec<String> = if ids.len() <= ID_LOOKUP_MAX {
        ids.chunks(ID_CHUNK)
            .map(|chunk| {
                let list: Vec<String> = chunk.iter().map(|i| sql_str(i)).collect();
                format!("id IN ({}) AND {scope}", list.join(","))
            })
            .collect()
    } else {
        vec![scope.to_owned()]
    };
    for f in filters {
        for b in crate::read::scan_all(messages, &META_COLUMNS, Some(&f)).await? {
            metas_from(&plain_strings(b)?, &mut out)?;
        }
    }
    Ok(out)
}

/// No literal to look up, or no index to look it up in (`no_index`): every part of the
/// scope, if it is small enough to check.
async fn scope_scan(
    messages: &Dataset,
    parts: &Dataset,
    scope: &str,
    job: &GrepJob,
    no_index: bool,
) -> Result<(Vec<Candidate>, HashMap<(String, String), MessageMeta>)> {
    let in_scope = messages.count_rows(Some(scope.to_owned())).await?;
    let max = scan_max_messages();
    if in_scope > max && no_index {
        return Err(StoreError::InvalidQuery(format!(
            "the store's n-gram index for exact and regex search is not built (synced with \
             --no-index, made before the index existed, or being rebuilt), so every message \
             in scope would be read, and the scope holds {in_scope} messages (at most {max} \
             are read without the index): run `pond sync` (or `pond rebuild`) to build it, \
             or narrow the scope with a session, a project, a client or dates"
        )));
    }
    if in_scope > max {
        return Err(StoreError::InvalidQuery(format!(
            "{:?} holds no literal of 3 or more letters or digits (ASCII) that the index can \
             look up, so every message in scope would be read, and the scope holds {in_scope} \
             messages (at most {max} are read without the index): add such a \
             literal to the pattern, or narrow the scope with a session, a project, a client \
             or dates",
            job.pattern
        )));
    }
    let mut metas = HashMap::new();
    for b in crate::read::scan_all(messages, &META_COLUMNS, Some(scope)).await? {
        metas_from(&plain_strings(b)?, &mut metas)?;
    }
    let mut sessions: Vec<&str> = metas.keys().map(|k| k.0.as_str()).collect();
    sessions.sort_unstable();
    sessions.dedup();
    let mut cands = Vec::new();
    for chunk in sessions.chunks(ID_CHUNK) {
        let list: Vec<String> = chunk.iter().map(|s| sql_str(s)).collect();
        let mut scan = parts.scan();
        scan.project(&KEY_COLUMNS[1..])?
            .with_row_id()
            .filter(&format!("session_id IN ({})", list.join(",")))?;
        cands.extend(scan_keys(scan, job, Some(&metas)).await?);
    }
    Ok((cands, metas))
}

/// The text and body of each candidate, in order (`None` for a part gone since).
async fn texts_of(
    parts: &Dataset,
    chunk: &[Candidate],
) -> Result<Vec<(Option<String>, Option<String>)>> {
    if chunk.is_empty() {
        return Ok(Vec::new());
    }
    let mut ids: Vec<u64> = chunk.iter().map(|c| c.row_id).collect();
    ids.sort_unstable();
    ids.dedup();
    let projection = ProjectionRequest::from_columns(["_rowid", "text", "body"], parts.schema());
    let b = plain_strings(parts.take_rows(&ids, projection).await?)?;
    let rid = primitive_col::<UInt64Type>(&b, "_rowid")?;
    let text = string_col(&b, "text")?;
    let body = string_col(&b, "body")?;
    let at: HashMap<u64, usize> = (0..b.num_rows()).map(|i| (rid.value(i), i)).collect();
    Ok(chunk
        .iter()
        .map(|c| match at.get(&c.row_id) {
            Some(&i) => (opt_str(text, i), opt_str(body, i)),
            None => (None, None),
        })
        .collect())
}

/// The first match in `t` and its line ([`shown_line`]), looked for in the masked text
/// unless secrets are revealed: a match inside a secret is no hit (else a pattern could
/// read a secret a character at a time by whether it is found).
fn found_line(t: &str, re: &Regex, job: &GrepJob) -> Option<(String, u64)> {
    if !re.is_match(t) {
        return None;
    }
    // The whole text is masked, not a region around the match: a region's edge could cut
    // a secret, and the masker would not know its tail.
    let text = if job.reveal_secrets {
        std::borrow::Cow::Borrowed(t)
    } else {
        pond_mask::mask(t)
    };
    let m = re.find(&text)?;
    Some(shown_line(&text, m.range()))
}

/// The line (or lines) of a match in `text` (masked already unless revealed), its 1-based
/// number, as one line of plain text ([`crate::sessions::title::plain`]: no control
/// characters or escape sequences) cut to [`LINE_CHARS`] around the match on character
/// boundaries.
fn shown_line(text: &str, m: Range<usize>) -> (String, u64) {
    let start = text[..m.start].rfind('\n').map_or(0, |i| i + 1);
    let end = text[m.end..].find('\n').map_or(text.len(), |i| m.end + i);
    let number = text[..start].matches('\n').count() as u64 + 1;
    let end = end.max(m.end);
    let line = text[start..end].trim_end_matches('\r');
    let end = start + line.len();
    // Each side made plain apart, so the match's place is known in the plain line.
    let plain = crate::sessions::title::plain;
    let before = plain(&text[start..m.start]);
    let matched = plain(&text[m.start..m.end.min(end).max(m.start)]);
    let after = plain(&text[m.end.min(end).max(m.start)..end]);
    let at = before.len()..before.len() + matched.len();
    (window(&format!("{before}{matched}{after}"), at), number)
}

/// At most [`LINE_CHARS`] characters of `line` around `m` (from [`LINE_BEFORE`] characters
/// before it), marked with `…` where cut.
pub(crate) fn window(line: &str, m: Range<usize>) -> String {
    if line.chars().count() <= LINE_CHARS {
        return line.to_owned();
    }
    let before: Vec<usize> = line[..m.start].char_indices().map(|(i, _)| i).collect();
    let from = if before.len() > LINE_BEFORE {
        before[before.len() - LINE_BEFORE]
    } else {
        0
    };
    let to = line[from..]
        .char_indices()
        .nth(LINE_CHARS)
        .map_or(line.len(), |(i, _)| from + i);
    let mut out = String::new();
    if from > 0 {
        out.push('…');
    }
    out.push_str(&line[from..to]);
    if to < line.len() {
        out.push('…');
    }
    out
}

fn meta_of<'m>(
    metas: &'m HashMap<(String, String), MessageMeta>,
    c: &Candidate,
) -> &'m MessageMeta {
    &metas[&(c.session_id.clone(), c.message_id.clone())]
}

/// Hits grouped by session, sessions in the order of their newest hit.
async fn group(
    store: &Store,
    page: Vec<(Candidate, GrepHit)>,
    metas: &HashMap<(String, String), MessageMeta>,
) -> Result<Vec<GrepSession>> {
    let mut order: Vec<GrepSession> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (c, mut hit) in page {
        let m = &metas[&(c.session_id.clone(), c.message_id.clone())];
        let i = *index.entry(c.session_id.clone()).or_insert_with(|| {
            order.push(GrepSession {
                session_id: c.session_id.clone(),
                title: None,
                project: m.project.clone(),
                source_agent: m.source_agent.clone(),
                hits: Vec::new(),
            });
            order.len() - 1
        });
        hit.message_id = c.message_id;
        hit.part_type = c.part_type;
        hit.tool_name = c.tool_name;
        order[i].hits.push(hit);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn need(p: &str) -> Need {
        Need::of(&regex_syntax::parse(p).unwrap())
    }

    fn lit(s: &str) -> Need {
        Need::Lit(s.into())
    }

    #[test]
    fn a_regex_needs_its_literal_runs() {
        assert_eq!(
            need("ERR_[A-Z]+_LOCKFILE"),
            Need::And(vec![lit("ERR_"), lit("_LOCKFILE")])
        );
        assert_eq!(
            need(r"src/\w+\.rs:\d+"),
            Need::And(vec![lit("src/"), lit(".rs:")])
        );
        assert_eq!(need("(?i)Lockfile"), lit("lockfile"));
        assert_eq!(
            need("foo(bar|baz)qux"),
            Need::And(vec![
                lit("foo"),
                Need::Or(vec![lit("bar"), lit("baz")]),
                lit("qux")
            ])
        );
        assert_eq!(need(r"\bE0502\b"), lit("E0502"));
        assert_eq!(need("(abc)+x"), Need::And(vec![lit("abc"), lit("x")]));
    }

    #[test]
    fn a_regex_without_literals_needs_nothing() {
        assert_eq!(need("[0-9a-f]{40}"), Need::All);
        assert_eq!(need(".*"), Need::All);
        assert_eq!(need("(abc)?"), Need::All);
        assert_eq!(need("abc|.*"), Need::All);
    }

    #[test]
    fn candidates_are_intersected_and_united() {
        let found: HashMap<String, Option<Vec<u64>>> = [
            ("foo".to_owned(), Some(vec![1, 2, 3])),
            ("bar".to_owned(), Some(vec![2, 3, 4])),
            ("ab".to_owned(), None),
        ]
        .into();
        let and = Need::And(vec![lit("foo"), lit("bar"), lit("ab")]);
        assert_eq!(and.eval(&found), Some(vec![2, 3]));
        assert_eq!(
            Need::Or(vec![lit("foo"), lit("bar")]).eval(&found),
            Some(vec![1, 2, 3, 4])
        );
        assert_eq!(Need::Or(vec![lit("foo"), lit("ab")]).eval(&found), None);
        assert_eq!(Need::And(vec![lit("ab")]).eval(&found), None);
    }

    #[test]
    fn patterns_are_checked() {
        let job = |p: &str, regex| GrepJob {
            pattern: p.into(),
            regex,
            ..GrepJob::default()
        };
        assert!(compile(&job("", false)).is_err());
        assert!(compile(&job(&"x".repeat(MAX_PATTERN_BYTES + 1), false)).is_err());
        let big = compile(&job("a{1000}{1000}", true))
            .unwrap_err()
            .to_string();
        assert!(big.contains("compiles to more than"), "{big}");
        let bad = compile(&job("(a", true)).unwrap_err().to_string();
        assert!(bad.contains("does not parse"), "{bad}");
        let refs = compile(&job(r"(a)\1", true)).unwrap_err().to_string();
        assert!(refs.contains("backreferences"), "{refs}");
        // Exact text is literal, in any case unless asked.
        let (re, need) = compile(&job("a.b(", false)).unwrap();
        assert!(re.is_match("x A.B( y") && !re.is_match("axb("));
        assert_eq!(need, lit("a.b("));
        let sensitive = GrepJob {
            case_sensitive: true,
            ..job("Lockfile", false)
        };
        let (re, _) = compile(&sensitive).unwrap();
        assert!(re.is_match("Lockfile") && !re.is_match("lockfile"));
    }

    #[test]
    fn a_long_line_is_cut_around_the_match_on_char_boundaries() {
        let line = format!("{}NEEDLE{}", "é".repeat(300), "字".repeat(300));
        let at = line.find("NEEDLE").unwrap();
        let w = window(&line, at..at + 6);
        assert!(w.starts_with('…') && w.ends_with('…'), "{w}");
        assert!(w.contains("NEEDLE"));
        assert_eq!(w.chars().count(), LINE_CHARS + 2);
        assert_eq!(window("short", 0..1), "short");
    }

    #[test]
    fn the_matched_line_is_shown_with_its_number_and_masked() {
        let job = GrepJob::default();
        let re = Regex::new("needle").unwrap();
        let text = "first\nsecond with needle here\r\nthird";
        let (line, n) = found_line(text, &re, &job).unwrap();
        assert_eq!((line.as_str(), n), ("second with needle here", 2));
        let secret = "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY needle";
        let (line, _) = found_line(secret, &re, &job).unwrap();
        assert!(!line.contains("wJalrXUtnFEMI"), "{line}");
        assert!(line.contains("needle"), "{line}");
        // A match inside the secret is none, unless secrets are revealed.
        let inside = Regex::new("EXAMPLEKEY").unwrap();
        assert_eq!(found_line(secret, &inside, &job), None);
        let reveal = GrepJob {
            reveal_secrets: true,
            ..GrepJob::default()
        };
        assert!(found_line(secret, &inside, &reveal).is_some());
    }

    #[test]
    fn the_matched_line_is_one_line_without_control_characters() {
        let re = Regex::new("b").unwrap();
        let text = "a\u{1b}[1mb\u{1b}[0m\u{202e}c\td";
        let at = text.find('b').unwrap();
        let (line, n) = shown_line(text, at..at + 1);
        assert_eq!((line.as_str(), n), ("abc d", 1));
        assert!(re.is_match(&line));
    }
}
