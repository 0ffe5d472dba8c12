//! What each operation takes, defined once: one parameter struct per operation, with its
//! defaults, ranges and clamps, and how it becomes the request the store or a worker reads
//! ([`SearchParams::plan`], [`SqlParams::job`], ...). Every front end fills the same
//! struct: the MCP server reads it from a tool call's JSON (serde, and the tool's JSON
//! schema from the doc comments below, which are what an agent reads), the CLI from its
//! flags (its own help texts, these defaults), a web front end from a query string or JSON.
//!
//! A person and an agent differ in one way, named by [`Caller`]: a person's number out of
//! the store's range is refused with the store's message; an agent's is taken as the nearest
//! in a narrower range (answers sized for a context window), and an agent's bad date names
//! the argument. Everything else (defaults, date forms, which options go with which search
//! mode) is the same for both.
//!
//! Adding a search filter: a field on [`SearchParams`] (and the CLI's flag), the store's
//! filter ([`SearchFilters`]), and a test.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::time::Duration;

use pond_protocol::grep::GrepJob;
use pond_protocol::job::{ForgetRequest, RebuildRequest, RestoreRequest, SqlJob};
use pond_protocol::sync::{SyncRequest, SyncSource};
use pond_protocol::usage::{UsageGroup, UsageRequest};
use pond_protocol::{Choice, ErrorKind, Format, JobError as Error};
use pond_rows::Client;
use pond_store::get::{self, PageFrom, PageRequest};
use pond_store::search::{self, SearchFilters, SearchMode, SearchRequest, SortBy};
use pond_store::sessions::{self, SessionsRequest};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;

/// Hard cap on one tool answer, whatever produced it.
pub const MAX_ANSWER_BYTES: usize = 100 * 1024;

/// How long after a SQL query's own timeout its worker is killed: the query's graceful end
/// (an error naming the timeout) comes first, the kill only for a plan that never yields.
pub const SQL_KILL_GRACE: Duration = Duration::from_secs(5);

/// How long an exact or regex search checks candidates, by default (SQL's default timeout);
/// its worker is killed [`SQL_KILL_GRACE`] later, as a query's is.
pub const GREP_TIMEOUT_S: u64 = 30;

/// Refuse options that only exact and regex search read (`given`: their names, when set)
/// with another mode, saying which modes read them.
pub fn check_grep_options(mode: search::SearchMode, given: &[&str]) -> Result<(), Error> {
    match given.first() {
        Some(name) if !mode.is_literal() => Err(Error::new(
            ErrorKind::Invalid,
            format!(
                "{name} is for exact and regex search: add mode exact or regex, or leave it out"
            ),
        )),
        _ => Ok(()),
    }
}

/// When a sync embeds what it added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedAfter {
    Never,
    /// If the sync added messages (a background sync: no embed worker for nothing).
    Added,
    /// Every time: a backfill interrupted earlier goes on (`pond sync`).
    Always,
}

/// Who asks, which decides the ranges numbers are read in and how a bad value is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// A person at the command line: the store's ranges (out of range is refused),
    /// options named as flags (`--offset`), secrets shown if they asked.
    Person { reveal_secrets: bool },
    /// An agent (MCP): the narrower [`Count`] ranges (out of range is taken as the
    /// nearest), arguments named as the tool's (`from_date`), secrets always masked.
    Agent,
}

impl Caller {
    fn reveal_secrets(self) -> bool {
        matches!(
            self,
            Caller::Person {
                reveal_secrets: true
            }
        )
    }

    /// An option's name as this caller spells it: a person's flag or an agent's argument.
    fn spelled(self, flag: &'static str, argument: &'static str) -> &'static str {
        match self {
            Caller::Person { .. } => flag,
            Caller::Agent => argument,
        }
    }

    /// A date filter read as this caller's: a bad one names the argument for an agent.
    fn date(
        self,
        value: Option<&str>,
        argument: &str,
        parse: fn(&str) -> pond_store::Result<i64>,
    ) -> Result<Option<i64>, Error> {
        value.map(parse).transpose().map_err(|e| match self {
            Caller::Person { .. } => Error::from(e),
            Caller::Agent => Error::new(ErrorKind::Invalid, format!("{argument}: {e}")),
        })
    }

    /// A count: its default when not given; an agent's taken into `count`'s range.
    fn count(self, value: Option<u64>, count: Count) -> u64 {
        match self {
            Caller::Person { .. } => value.unwrap_or(count.default),
            Caller::Agent => count.clamp(value),
        }
    }
}

/// A number a caller may give: its default, and the range an agent's is taken into (a
/// person's is checked by the store, or only kept from 0 where 0 means nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    pub default: u64,
    pub min: u64,
    pub max: u64,
}

impl Count {
    /// `value` (else the default) taken into the range.
    pub fn clamp(self, value: Option<u64>) -> u64 {
        value.unwrap_or(self.default).clamp(self.min, self.max)
    }
}

/// Search hits per answer. A person's limit is checked against the store's range
/// (1-[`SEARCH_MAX_LIMIT`]); an agent's is taken into this narrower one.
pub const SEARCH_LIMIT: Count = Count {
    default: 10,
    min: 1,
    max: 50,
};
/// The most hits a search answers, the store's cap (one definition: the store's).
pub use pond_store::search::MAX_LIMIT as SEARCH_MAX_LIMIT;
const _: () = assert!(SEARCH_LIMIT.max <= SEARCH_MAX_LIMIT as u64);
/// Sessions per listing; a person's is checked against 1-[`sessions::MAX_LIMIT`].
pub const SESSIONS_LIMIT: Count = Count {
    default: sessions::DEFAULT_LIMIT as u64,
    min: 1,
    max: 50,
};
/// Messages per session page (the page also stops at [`get::DEFAULT_PAGE_BYTES`]).
pub const PAGE_LIMIT: Count = Count {
    default: 50,
    min: 1,
    max: 200,
};
/// Neighbours shown on each side of a message.
pub const CONTEXT: Count = Count {
    default: 2,
    min: 0,
    max: 20,
};
/// Rows a SQL answer holds at most.
pub const SQL_MAX_ROWS: Count = Count {
    default: 200,
    min: 1,
    max: 1000,
};
/// Seconds a SQL query may run (its worker is killed [`SQL_KILL_GRACE`]
/// later).
pub const SQL_TIMEOUT_S: Count = Count {
    default: 30,
    min: 1,
    max: 300,
};

/// The schema of a [`Choice`] enum: a string, one of its names. A field of such a type
/// carries no `serde(default)` (a missing `Option` is `None` anyway): with it, schemars
/// would add `"default": null` to the tool's schema.
pub struct Named<T>(PhantomData<T>);

impl<T: Choice> JsonSchema for Named<T> {
    fn schema_name() -> Cow<'static, str> {
        T::SCHEMA_NAME.into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = T::NAMES.iter().map(|(n, _)| *n).collect();
        schemars::json_schema!({"type": "string", "enum": names})
    }
}

/// Accepts a count as a number or as a numeric string ("10"), which some clients send.
mod lenient {
    use serde::{Deserialize, Deserializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumOrText {
        Num(u64),
        Text(String),
    }

    pub fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        match Option::<NumOrText>::deserialize(d)? {
            None => Ok(None),
            Some(NumOrText::Num(n)) => Ok(Some(n)),
            Some(NumOrText::Text(s)) => s.trim().parse().map(Some).map_err(|_| {
                serde::de::Error::custom(format!("expected a whole number, got {s:?}"))
            }),
        }
    }
}

/// Search (`pond search`, pond_search). The tool schemas keep their first title and
/// description (`schemars(...)`): the tool list an agent reads stays as it was.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "SearchArgs", description = "pond_search arguments.")]
pub struct SearchParams {
    /// Words to look for, all of them (stemmed, case- and accent-insensitive; a query that
    /// finds nothing is loosened to any of its words, and the answer says so). Syntax:
    /// "exact phrase", -word or NOT word (exclude), a OR b, prefix*, word~ (spellings within
    /// two edits), and filters in the text: project:NAME client:NAME role:user session:ID
    /// after:DATE before:DATE (DATE: YYYY-MM-DD, yesterday, 3d, 2w). With mode `exact` or
    /// `regex`: the text or regular expression as it is (no syntax, no inline filters).
    pub query: String,
    /// `fts` (full-text, the default): exact words. `vector`: meaning, for paraphrases and
    /// concepts when you do not know the words used. `hybrid`: both, fused. `vector` and
    /// `hybrid` need the store's embedding model (`pond model fetch`, then `pond embed`).
    /// `exact`: the text as it is, anywhere in a message, tool calls and tool results too:
    /// identifiers, paths, error codes, hashes (e.g. ERR_PNPM_OUTDATED_LOCKFILE,
    /// src/a.rs:240); any case unless `case_sensitive`. `regex`: a regular expression (Rust
    /// regex syntax; `(?i)` for any case) that holds a literal of 3+ letters or digits, or a
    /// narrow scope. Both list the newest matches first, with the matching line.
    #[schemars(with = "Option<Named<SearchMode>>")]
    pub mode: Option<SearchMode>,
    /// `exact` only: match case (default false: any case).
    #[serde(default)]
    pub case_sensitive: Option<bool>,
    /// `exact` and `regex` only: also look in tool calls (their input) and tool results
    /// (their output). Default true.
    #[serde(default)]
    pub include_tools: Option<bool>,
    /// `exact` and `regex` only: skip this many matching messages (the next page).
    #[serde(default, deserialize_with = "lenient::count")]
    pub offset: Option<u64>,
    /// Only sessions whose project (working directory) contains this text, in any case, e.g.
    /// a repo name.
    #[serde(default)]
    pub project: Option<String>,
    /// Only this session: its id, or its first 6 or more characters.
    #[serde(default)]
    pub session_id: Option<String>,
    /// `claude-code` (includes its subagents), `claude-code/subagent`, `codex`, `copilot`,
    /// `cursor`, `cursor-ide` (includes its sub-conversations), `cursor-ide/subagent`,
    /// `gemini` (includes its subagents), `gemini/subagent`, `opencode` (includes its
    /// subagents), `opencode/subagent` or `vscode-copilot` (VS Code's Copilot Chat).
    #[serde(default)]
    pub source_agent: Option<String>,
    /// `user` or `assistant` (only their messages are searchable).
    #[serde(default)]
    pub role: Option<String>,
    /// From this date, inclusive: YYYY-MM-DD (a day in the server's time zone), RFC 3339,
    /// today, yesterday, or a time ago (12h, 3d, 2w, 6mo, 1y).
    #[serde(default)]
    pub from_date: Option<String>,
    /// Up to this date, inclusive of its whole day (YYYY-MM-DD, today, yesterday), or up to
    /// (not including) an RFC 3339 time or a time ago.
    #[serde(default)]
    pub to_date: Option<String>,
    /// `relevance` (default) or `recency` (newest first among matches).
    #[schemars(with = "Option<Named<SortBy>>")]
    pub sort_by: Option<SortBy>,
    /// Messages to return, 1-50 (default 10).
    #[serde(default, deserialize_with = "lenient::count")]
    #[schemars(range(min = SEARCH_LIMIT.min, max = SEARCH_LIMIT.max))]
    pub limit: Option<u64>,
    /// Exact and regex search: seconds to check candidates (default [`GREP_TIMEOUT_S`]). A
    /// person's setting; an agent's search always has the default.
    #[serde(skip)]
    #[schemars(skip)]
    pub timeout_seconds: Option<u64>,
}

/// A search as the front runs it: ranked (full-text, vector, hybrid) in the front, or
/// literal (exact, regex) in the sql worker.
#[derive(Debug, Clone)]
pub enum SearchPlan {
    Ranked(SearchRequest),
    Literal(GrepJob),
}

impl SearchParams {
    /// The request these parameters make: options only exact and regex search read are
    /// refused with another mode, dates are read, the limit defaulted (and an agent's
    /// clamped).
    pub fn plan(self, caller: Caller) -> Result<SearchPlan, Error> {
        let mode = self.mode.unwrap_or_default();
        let given: Vec<&str> = [
            (
                caller.spelled("--case-sensitive", "case_sensitive"),
                self.case_sensitive.is_some(),
            ),
            (
                caller.spelled("--no-tools", "include_tools"),
                self.include_tools.is_some(),
            ),
            (caller.spelled("--offset", "offset"), self.offset.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect();
        check_grep_options(mode, &given)?;
        let from = caller.date(self.from_date.as_deref(), "from_date", search::parse_date)?;
        let to = caller.date(self.to_date.as_deref(), "to_date", search::parse_end_date)?;
        let limit = caller.count(self.limit, SEARCH_LIMIT);
        if mode.is_literal() {
            let timeout_s = match caller {
                Caller::Person { .. } => self.timeout_seconds.unwrap_or(GREP_TIMEOUT_S).max(1),
                Caller::Agent => GREP_TIMEOUT_S,
            };
            return Ok(SearchPlan::Literal(GrepJob {
                pattern: self.query,
                regex: mode == SearchMode::Regex,
                case_sensitive: self.case_sensitive.unwrap_or(false),
                include_tools: self.include_tools.unwrap_or(true),
                project: self.project,
                session_id: self.session_id,
                source_agent: self.source_agent,
                role: self.role,
                from_ms: from,
                to_ms: to,
                limit,
                offset: self.offset.unwrap_or(0),
                timeout_ms: timeout_s * 1000,
                reveal_secrets: caller.reveal_secrets(),
            }));
        }
        Ok(SearchPlan::Ranked(SearchRequest {
            query: self.query,
            filters: SearchFilters {
                project: self.project,
                session_id: self.session_id,
                source_agent: self.source_agent,
                role: self.role,
                from,
                to,
            },
            sort: self.sort_by.unwrap_or_default(),
            limit: limit as usize,
            mode,
            reveal_secrets: caller.reveal_secrets(),
        }))
    }
}

/// A listing of sessions (`pond sessions`, pond_sessions).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "SessionsArgs", description = "pond_sessions arguments.")]
pub struct SessionsParams {
    /// Only sessions whose project (working directory) contains this text, in any case, e.g.
    /// a repo name.
    #[serde(default)]
    pub project: Option<String>,
    /// Only this client's sessions: a name pond_search's `source_agent` takes
    /// (`claude-code` includes its subagents, `codex`, `cursor`, `gemini`, ...).
    #[serde(default)]
    pub source_agent: Option<String>,
    /// Only sessions active from this date on (their last message at or after it), in the
    /// forms pond_search's `from_date` takes.
    #[serde(default)]
    pub from_date: Option<String>,
    /// Only sessions active up to this date (their first message before its end), in the
    /// forms pond_search's `to_date` takes.
    #[serde(default)]
    pub to_date: Option<String>,
    /// Sessions to return, 1-50 (default 20); a number out of range is taken as the
    /// nearest, 0 as 1 and more than 50 as 50, as pond_search takes its limit.
    #[serde(default, deserialize_with = "lenient::count")]
    #[schemars(range(min = SESSIONS_LIMIT.min, max = SESSIONS_LIMIT.max))]
    pub limit: Option<u64>,
    /// Sessions to skip, newest first: the next page starts at the offset the last answer
    /// names.
    #[serde(default, deserialize_with = "lenient::count")]
    pub offset: Option<u64>,
}

impl SessionsParams {
    pub fn request(self, caller: Caller) -> Result<SessionsRequest, Error> {
        Ok(SessionsRequest {
            filters: SearchFilters {
                project: self.project,
                source_agent: self.source_agent,
                from: caller.date(self.from_date.as_deref(), "from_date", search::parse_date)?,
                to: caller.date(self.to_date.as_deref(), "to_date", search::parse_end_date)?,
                ..SearchFilters::default()
            },
            limit: caller.count(self.limit, SESSIONS_LIMIT) as usize,
            offset: self.offset.unwrap_or(0) as usize,
        })
    }
}

/// A page of one session (`pond get-session`, pond_get_session).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "GetSessionArgs", description = "pond_get_session arguments.")]
pub struct GetSessionParams {
    /// The session id (from search hits, or `SELECT id FROM sessions`), or its first 6 or
    /// more characters.
    pub id: String,
    /// Read from the `start` (default) or the `end` of the session.
    #[schemars(with = "Option<Named<PageFrom>>")]
    pub from: Option<PageFrom>,
    /// Messages per page, 1-200 (default 50); the page also stops at a byte budget.
    #[serde(default, deserialize_with = "lenient::count")]
    #[schemars(range(min = PAGE_LIMIT.min, max = PAGE_LIMIT.max))]
    pub limit: Option<u64>,
    /// The page after this message id (continue forwards).
    #[serde(default)]
    pub after: Option<String>,
    /// The page before this message id (continue backwards).
    #[serde(default)]
    pub before: Option<String>,
    /// Also list the parent's messages a subagent session replays at its start (its
    /// context, left out by default: the parent session has them).
    #[serde(default)]
    pub include_replayed: Option<bool>,
    /// The page's byte budget (default [`get::DEFAULT_PAGE_BYTES`]). A person's setting;
    /// an agent's page always has the default.
    #[serde(skip)]
    #[schemars(skip)]
    pub max_bytes: Option<usize>,
}

impl GetSessionParams {
    /// The session's id (or prefix) and the page asked for.
    pub fn request(self, caller: Caller) -> (String, PageRequest) {
        let max_bytes = match caller {
            Caller::Person { .. } => self.max_bytes,
            Caller::Agent => None,
        };
        let req = PageRequest {
            from: self.from.unwrap_or_default(),
            limit: caller.count(self.limit, PAGE_LIMIT) as usize,
            after: self.after,
            before: self.before,
            max_bytes: max_bytes.unwrap_or(get::DEFAULT_PAGE_BYTES),
            include_replayed: self.include_replayed.unwrap_or(false),
        };
        (self.id, req)
    }
}

/// One message and its neighbours (`pond get-message`, pond_get_message).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "GetMessageArgs", description = "pond_get_message arguments.")]
pub struct GetMessageParams {
    /// The message id (from search hits or a session page), or its first 6 or more
    /// characters.
    pub id: String,
    /// Messages to show before it, 0-20 (default 2).
    #[serde(default, deserialize_with = "lenient::count")]
    #[schemars(range(min = CONTEXT.min, max = CONTEXT.max))]
    pub context_before: Option<u64>,
    /// Messages to show after it, 0-20 (default 2).
    #[serde(default, deserialize_with = "lenient::count")]
    #[schemars(range(min = CONTEXT.min, max = CONTEXT.max))]
    pub context_after: Option<u64>,
}

impl GetMessageParams {
    /// The message's id (or prefix), and the neighbours before and after it.
    pub fn request(self, caller: Caller) -> (String, usize, usize) {
        let before = caller.count(self.context_before, CONTEXT) as usize;
        let after = caller.count(self.context_after, CONTEXT) as usize;
        (self.id, before, after)
    }
}

/// One read-only SQL query (`pond sql`, pond_sql).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "SqlArgs", description = "pond_sql arguments.")]
pub struct SqlParams {
    /// One read-only SELECT (or WITH ... SELECT) over sessions, messages, parts, records,
    /// files. See the pond://schema resource.
    pub query: String,
    /// Seconds before the query is stopped, 1-300 (default 30).
    #[serde(default, deserialize_with = "lenient::count")]
    #[schemars(range(min = SQL_TIMEOUT_S.min, max = SQL_TIMEOUT_S.max))]
    pub timeout_seconds: Option<u64>,
    /// Rows to return at most, 1-1000 (default 200).
    #[serde(default, deserialize_with = "lenient::count")]
    #[schemars(range(min = SQL_MAX_ROWS.min, max = SQL_MAX_ROWS.max))]
    pub max_rows: Option<u64>,
    /// `table` (default), `json` or `csv`.
    #[schemars(with = "Option<Named<Format>>")]
    pub format: Option<Format>,
}

impl SqlParams {
    /// The sql worker's job. A person's answer may be as large as the store's SQL cap; an
    /// agent's is half a tool answer ([`MAX_ANSWER_BYTES`]), leaving room
    /// for the footer.
    pub fn job(self, caller: Caller) -> SqlJob {
        let (timeout_s, max_rows, max_bytes) = match caller {
            Caller::Person { .. } => (
                self.timeout_seconds.unwrap_or(SQL_TIMEOUT_S.default).max(1),
                self.max_rows.unwrap_or(SQL_MAX_ROWS.default).max(1),
                pond_store::sql::SqlLimits::default().max_bytes as u64,
            ),
            Caller::Agent => (
                SQL_TIMEOUT_S.clamp(self.timeout_seconds),
                SQL_MAX_ROWS.clamp(self.max_rows),
                (MAX_ANSWER_BYTES / 2) as u64,
            ),
        };
        SqlJob {
            query: self.query,
            format: self.format.unwrap_or_default(),
            max_rows,
            max_bytes,
            timeout_ms: timeout_s * 1000,
            reveal_secrets: caller.reveal_secrets(),
        }
    }
}

/// Tokens and cost (`pond usage`, pond_usage).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "UsageArgs", description = "pond_usage arguments.")]
pub struct UsageParams {
    /// What a row is: `daily` (default), `weekly`, `monthly`, `session`, `model`,
    /// `project` or `client`.
    #[serde(default)]
    #[schemars(with = "Option<Named<UsageGroup>>")]
    pub group: Option<UsageGroup>,
    /// Only calls from this date on, in the forms pond_search's `from_date` takes
    /// (2026-03-01, yesterday, 7d, 2w).
    #[serde(default)]
    pub from_date: Option<String>,
    /// Only calls up to this date, inclusive of its whole day.
    #[serde(default)]
    pub to_date: Option<String>,
    /// Only calls in projects whose working directory contains this text, in any case.
    #[serde(default)]
    pub project: Option<String>,
    /// Only this client's calls: a name pond_search's `source_agent` takes.
    #[serde(default)]
    pub source_agent: Option<String>,
    /// Only models whose name contains this text, in any case.
    #[serde(default)]
    pub model: Option<String>,
    /// `table` (default), `json` or `csv`.
    #[serde(default)]
    #[schemars(with = "Option<Named<Format>>")]
    pub format: Option<Format>,
    /// A price table (JSON, the format of the store's prices.json) over the built-in one.
    /// A person's setting (read from their file); an agent's answer uses the store's.
    #[serde(skip)]
    #[schemars(skip)]
    pub prices: Option<String>,
}

impl UsageParams {
    pub fn request(self, caller: Caller) -> Result<UsageRequest, Error> {
        Ok(UsageRequest {
            group: self.group.unwrap_or_default(),
            since_ms: caller.date(self.from_date.as_deref(), "from_date", search::parse_date)?,
            until_ms: caller.date(self.to_date.as_deref(), "to_date", search::parse_end_date)?,
            client: self.source_agent,
            project: self.project,
            model: self.model,
            utc: false,
            prices: match caller {
                Caller::Person { .. } => self.prices,
                Caller::Agent => None,
            },
        })
    }
}

/// What the config file says of one client's sessions (`[sources.NAME]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct SourceSetting {
    /// `false`: a sync of every client leaves this one out.
    pub enabled: Option<bool>,
    /// Where its sessions are, for all its editions (its own variable wins).
    pub path: Option<PathBuf>,
}

/// A sync (`pond sync`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyncParams {
    /// Only this client (a name or alias of the registry); with `path`, how to read it.
    #[serde(default)]
    pub source: Option<String>,
    /// This folder (or file) instead of the clients' homes.
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// Leave the index update to a later sync.
    #[serde(default)]
    pub no_index: bool,
    /// Do not embed what the sync added.
    #[serde(default)]
    pub no_embed: bool,
}

impl SyncParams {
    /// The sync worker's request: the folders [`sources`] picks, less the excluded
    /// projects. A `path` that is not there is refused before a worker starts.
    pub fn request(
        &self,
        configured: &BTreeMap<String, SourceSetting>,
        exclude_projects: Vec<String>,
    ) -> Result<SyncRequest, Error> {
        if let Some(p) = self
            .path
            .as_deref()
            .filter(|p| std::fs::symlink_metadata(p).is_err())
        {
            return Err(Error::new(
                ErrorKind::Invalid,
                format!(
                    "{} does not exist; point --path at a session file or a folder of them",
                    p.display()
                ),
            ));
        }
        let wanted = match &self.source {
            Some(name) => Some(Client::parse(name).ok_or_else(|| {
                Error::new(
                    ErrorKind::Invalid,
                    format!(
                        "there is no client {name:?}; pond reads {}",
                        pond_rows::CLIENTS
                            .iter()
                            .map(|c| c.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })?),
            None => None,
        };
        Ok(SyncRequest {
            sources: sources(wanted, self.path.clone(), configured),
            skip_index: self.no_index,
            exclude_projects,
        })
    }

    /// When the embedding after the sync runs: always (an interrupted backfill goes on),
    /// unless asked not to.
    pub fn embed(&self) -> crate::EmbedAfter {
        if self.no_embed {
            crate::EmbedAfter::Never
        } else {
            crate::EmbedAfter::Always
        }
    }
}

/// The folders a sync reads: `path`, else every client's homes (the client's own
/// variable, else the config file's `[sources.NAME] path` (one folder for all its
/// editions), else its defaults), less the clients the config file turns off.
pub fn sources(
    wanted: Option<&'static Client>,
    path: Option<PathBuf>,
    configured: &BTreeMap<String, SourceSetting>,
) -> Vec<SyncSource> {
    let mut list = match path {
        Some(p) => vec![SyncSource {
            agent: wanted.map(|k| k.name.to_owned()),
            path: p,
        }],
        None => pond_rows::clients::default_homes()
            .into_iter()
            .filter(|(k, _)| wanted.is_none_or(|w| w == *k))
            .filter_map(|(k, p)| {
                let set = configured.get(k.name);
                if set.and_then(|s| s.enabled) == Some(false) && wanted.is_none() {
                    return None;
                }
                let path = match set.and_then(|s| s.path.clone()) {
                    Some(p) if !k.home_moved() => p,
                    _ => p,
                };
                Some(SyncSource {
                    agent: Some(k.name.to_owned()),
                    path,
                })
            })
            .collect(),
    };
    // A configured path stands for each of the client's editions: read once.
    list.dedup_by(|a, b| a.agent == b.agent && a.path == b.path);
    list
}

/// Index rebuilds (`pond rebuild`): none named is every index (the token counts only when
/// named: they mean reading every stored line again).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RebuildParams {
    pub fts: bool,
    pub scalar: bool,
    pub rowmap: bool,
    pub vectors: bool,
    pub usage: bool,
}

impl RebuildParams {
    pub fn request(self) -> RebuildRequest {
        let all = !(self.fts || self.scalar || self.rowmap || self.vectors || self.usage);
        RebuildRequest {
            fts: self.fts || all,
            scalar: self.scalar || all,
            rowmap: self.rowmap || all,
            vectors: self.vectors || all,
            usage: self.usage,
        }
    }
}

/// Forgetting sessions (`pond forget`): every selector given must match.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForgetParams {
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub project: Option<String>,
    /// Sessions whose last message is before this date.
    #[serde(default)]
    pub before: Option<String>,
    #[serde(default)]
    pub with_copies: bool,
    #[serde(default)]
    pub dry_run: bool,
}

impl ForgetParams {
    pub fn request(self) -> Result<ForgetRequest, Error> {
        Ok(ForgetRequest {
            session: self.session,
            project: self.project,
            before_ms: self.before.as_deref().map(search::parse_date).transpose()?,
            with_copies: self.with_copies,
            dry_run: self.dry_run,
        })
    }
}

/// Writing a session's files back (`pond restore`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RestoreParams {
    pub session: String,
    /// Under this folder instead of where the client reads them.
    #[serde(default)]
    pub out: Option<PathBuf>,
    #[serde(default)]
    pub dry_run: bool,
}

impl RestoreParams {
    pub fn request(self) -> Result<RestoreRequest, Error> {
        let out_dir = self
            .out
            .map(std::path::absolute)
            .transpose()
            .map_err(|e| Error::new(ErrorKind::Invalid, e.to_string()))?;
        Ok(RestoreRequest {
            session: self.session,
            out_dir,
            dry_run: self.dry_run,
        })
    }
}

/// What `pond export` writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// The session's lines as its client wrote them.
    Jsonl,
    /// A readable document.
    #[default]
    Markdown,
}

impl Choice for ExportFormat {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("jsonl", ExportFormat::Jsonl),
        ("markdown", ExportFormat::Markdown),
    ];
    const SCHEMA_NAME: &'static str = "ExportFormat";
}

/// Exporting one session (`pond export`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportParams {
    pub session: String,
    #[serde(default)]
    pub format: ExportFormat,
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERSON: Caller = Caller::Person {
        reveal_secrets: false,
    };

    fn ranked(p: SearchParams, caller: Caller) -> SearchRequest {
        match p.plan(caller).unwrap() {
            SearchPlan::Ranked(r) => r,
            SearchPlan::Literal(_) => panic!("a ranked search"),
        }
    }

    #[test]
    fn an_agents_limit_is_taken_into_range_and_a_persons_is_left_to_the_store() {
        let p = |limit| SearchParams {
            query: "x".into(),
            limit,
            ..SearchParams::default()
        };
        let (default, max) = (SEARCH_LIMIT.default as usize, SEARCH_LIMIT.max as usize);
        assert_eq!(ranked(p(None), Caller::Agent).limit, default);
        assert_eq!(ranked(p(Some(0)), Caller::Agent).limit, 1);
        assert_eq!(ranked(p(Some(500)), Caller::Agent).limit, max);
        assert_eq!(ranked(p(None), PERSON).limit, default);
        assert_eq!(ranked(p(Some(120)), PERSON).limit, 120);
        // Refused by the store's check, with its message.
        for limit in [0, SEARCH_MAX_LIMIT as u64 + 1] {
            let e = search::check(&ranked(p(Some(limit)), PERSON)).unwrap_err();
            let range = format!("between 1 and {SEARCH_MAX_LIMIT}");
            assert!(e.to_string().contains(&range), "{e}");
        }
        assert!(search::check(&ranked(p(Some(SEARCH_MAX_LIMIT as u64)), PERSON)).is_ok());
    }

    /// The limit's description in pond_search's schema (a doc comment, so a literal) says
    /// the range and default [`SEARCH_LIMIT`] has, and the schema's bounds are its.
    #[test]
    fn the_search_limits_schema_says_its_range_and_default() {
        let schema = serde_json::to_value(schemars::schema_for!(SearchParams)).unwrap();
        let limit = &schema["properties"]["limit"];
        let said = format!(
            "{}-{} (default {})",
            SEARCH_LIMIT.min, SEARCH_LIMIT.max, SEARCH_LIMIT.default
        );
        let description = limit["description"].as_str().unwrap_or_default();
        assert!(description.contains(&said), "{limit}");
        assert_eq!(limit["minimum"], SEARCH_LIMIT.min, "{limit}");
        assert_eq!(limit["maximum"], SEARCH_LIMIT.max, "{limit}");
    }

    #[test]
    fn grep_options_are_refused_with_another_mode_in_the_callers_words() {
        let p = SearchParams {
            query: "x".into(),
            offset: Some(3),
            ..SearchParams::default()
        };
        let agent = p.clone().plan(Caller::Agent).unwrap_err();
        assert!(agent.message.starts_with("offset is for exact"), "{agent}");
        let person = p.plan(PERSON).unwrap_err();
        assert!(
            person.message.starts_with("--offset is for exact"),
            "{person}"
        );
    }

    #[test]
    fn a_bad_date_names_the_argument_for_an_agent_only() {
        let p = SessionsParams {
            from_date: Some("someday".into()),
            ..SessionsParams::default()
        };
        let agent = p.clone().request(Caller::Agent).unwrap_err();
        let person = p.request(PERSON).unwrap_err();
        assert_eq!(agent.message, format!("from_date: {}", person.message));
        assert_eq!(agent.kind, ErrorKind::Invalid);
    }

    #[test]
    fn literal_search_timeout_is_a_persons_setting() {
        let p = SearchParams {
            query: "x".into(),
            mode: Some(SearchMode::Exact),
            timeout_seconds: Some(0),
            ..SearchParams::default()
        };
        let job = |caller| match p.clone().plan(caller).unwrap() {
            SearchPlan::Literal(j) => j,
            SearchPlan::Ranked(_) => panic!("a literal search"),
        };
        assert_eq!(job(PERSON).timeout_ms, 1000);
        assert_eq!(job(Caller::Agent).timeout_ms, GREP_TIMEOUT_S * 1000);
    }

    #[test]
    fn sql_and_context_counts_by_caller() {
        let sql = SqlParams {
            query: "SELECT 1".into(),
            max_rows: Some(5000),
            timeout_seconds: Some(0),
            format: None,
        };
        let agent = sql.clone().job(Caller::Agent);
        assert_eq!((agent.max_rows, agent.timeout_ms), (1000, 1000));
        let person = sql.job(PERSON);
        assert_eq!((person.max_rows, person.timeout_ms), (5000, 1000));
        let m = GetMessageParams {
            id: "m".into(),
            context_before: Some(50),
            context_after: None,
        };
        assert_eq!(m.clone().request(Caller::Agent), ("m".into(), 20, 2));
        assert_eq!(m.request(PERSON), ("m".into(), 50, 2));
    }

    #[test]
    fn rebuild_without_a_name_is_every_index_but_the_token_counts() {
        let r = RebuildParams::default().request();
        assert!(r.fts && r.scalar && r.rowmap && r.vectors && !r.usage);
        let r = RebuildParams {
            usage: true,
            ..RebuildParams::default()
        }
        .request();
        assert!(r.usage && !r.fts);
    }

    #[test]
    fn a_configured_source_is_read_once_and_a_disabled_one_not_at_all() {
        let name = pond_rows::CLIENTS[0].name;
        let off = BTreeMap::from([(
            name.to_owned(),
            SourceSetting {
                enabled: Some(false),
                path: None,
            },
        )]);
        let list = sources(None, None, &off);
        assert!(list.iter().all(|s| s.agent.as_deref() != Some(name)));
        let given = sources(None, Some("/x".into()), &off);
        assert_eq!(given.len(), 1);
        assert_eq!(given[0].agent, None);
        let unknown = SyncParams {
            source: Some("nope".into()),
            ..SyncParams::default()
        };
        let e = unknown.request(&off, Vec::new()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid);
        assert!(e.message.contains("there is no client \"nope\""), "{e}");
        // Only names --source takes: a client's, never a subagent's source_agent.
        assert!(
            e.message.contains("claude-code") && !e.message.contains('/'),
            "{e}"
        );
    }

    #[test]
    fn the_web_can_read_the_same_structs_from_json() {
        let p: SearchParams =
            serde_json::from_str(r#"{"query": "x", "limit": "7", "sort_by": "recency"}"#).unwrap();
        assert_eq!((p.limit, p.sort_by), (Some(7), Some(SortBy::Recency)));
        let e = serde_json::from_str::<SearchParams>(r#"{"query": "x", "timeout_seconds": 9}"#)
            .unwrap_err();
        assert!(e.to_string().contains("unknown field"), "{e}");
        let x: ExportParams = serde_json::from_str(r#"{"session": "s"}"#).unwrap();
        assert_eq!(x.format, ExportFormat::Markdown);
    }
}
