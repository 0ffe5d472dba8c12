//! The flags of the commands that run one operation of the front, each read into that
//! operation's parameter struct ([`pond_front::params`]), where its defaults and ranges
//! are defined: the help texts here are for people, the doc comments there for agents.

use std::path::PathBuf;

use pond_front::params::{
    self, ExportFormat, ExportParams, ForgetParams, GetMessageParams, GetSessionParams,
    RebuildParams, RestoreParams, SearchParams, SessionsParams, SqlParams, SyncParams, UsageParams,
};
use pond_protocol::usage::UsageGroup;
use pond_protocol::Format;
use pond_store::get::{self, PageFrom};
use pond_store::search::{SearchMode, SortBy};

use crate::{choice, source_choice};

// `pond sync`'s flags.
#[derive(clap::Args, Default)]
pub(crate) struct SyncFlags {
    /// Sync only this client's files (with --path: how to read that folder)
    #[arg(long, value_parser = source_choice())]
    pub source: Option<pond_ingest::SourceKind>,
    /// Sync this folder instead of the clients' default homes
    #[arg(long)]
    pub path: Option<PathBuf>,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
    /// Leave the index update to a later sync
    #[arg(long)]
    pub no_index: bool,
    /// Do not embed the new messages (a store with a model embeds them after a sync)
    #[arg(long)]
    pub no_embed: bool,
}

// `pond search`'s flags.
#[derive(clap::Args)]
pub(crate) struct SearchFlags {
    /// Words to find, all of them (a query finding nothing is loosened to any, and says
    /// so); "exact phrase"; -word or NOT word to exclude; a OR b; prefix*; word~ for
    /// spellings within two edits; filters project:NAME client:NAME role:user
    /// session:ID after:DATE (or since:) before:DATE to:DATE, as the options below.
    /// With --mode exact or regex: the text or regex as it is (no syntax, no inline
    /// filters)
    #[arg(allow_hyphen_values = true)]
    pub query: String,
    /// fts (BM25), vector (needs a model: `pond model import|fetch`, then `pond embed`),
    /// hybrid (both, fused), exact (the text as it is, e.g. ERR_PNPM_OUTDATED_LOCKFILE
    /// or src/a.rs:240, newest first) or regex (the regex crate's syntax, newest first)
    #[arg(long, value_parser = choice::<SearchMode>(), default_value = "fts")]
    pub mode: SearchMode,
    /// Only projects whose path contains this, in any case (`Shop` matches /home/a/shop)
    #[arg(long)]
    pub project: Option<String>,
    /// Only this session: its id, or 6 or more of its first characters
    #[arg(long)]
    pub session: Option<String>,
    /// claude-code (includes subagents), claude-code/subagent, codex, copilot, cursor,
    /// cursor-ide (includes sub-conversations), cursor-ide/subagent, gemini (includes
    /// subagents), gemini/subagent, opencode (includes subagents), opencode/subagent or
    /// vscode-copilot
    #[arg(long)]
    pub agent: Option<String>,
    /// user or assistant (only their messages are searchable)
    #[arg(long)]
    pub role: Option<String>,
    /// From this date, inclusive: YYYY-MM-DD (a day in your time zone), an RFC 3339
    /// time, today, yesterday, or a time ago (12h, 3d, 2w, 6mo, 1y)
    #[arg(long, visible_alias = "since")]
    pub from: Option<String>,
    /// Up to this date, inclusive of its whole day (YYYY-MM-DD, today, yesterday), or up
    /// to (not including) an RFC 3339 time or a time ago (3d)
    #[arg(long)]
    pub to: Option<String>,
    #[arg(long, default_value_t = params::SEARCH_LIMIT.default)]
    pub limit: u64,
    #[arg(long, value_parser = choice::<SortBy>(), default_value = "relevance")]
    pub sort: SortBy,
    /// exact: match case (by default exact text matches in any case; a regex says
    /// (?i) itself)
    #[arg(long)]
    pub case_sensitive: bool,
    /// exact and regex: leave out tool calls and tool results (looked in by default)
    #[arg(long)]
    pub no_tools: bool,
    /// exact and regex: skip this many matching messages (the next page)
    #[arg(long)]
    pub offset: Option<u64>,
    /// exact and regex: stop checking candidates after this many seconds
    #[arg(long, default_value_t = params::GREP_TIMEOUT_S)]
    pub timeout_seconds: u64,
    #[arg(long)]
    pub json: bool,
}

// `pond get-session`'s flags.
#[derive(clap::Args)]
pub(crate) struct GetSessionFlags {
    pub id: String,
    #[arg(long, value_parser = choice::<PageFrom>(), default_value = "start")]
    pub from: PageFrom,
    #[arg(long, default_value_t = params::PAGE_LIMIT.default)]
    pub limit: u64,
    /// The page after this message id
    #[arg(long, conflicts_with = "before")]
    pub after: Option<String>,
    /// The page before this message id
    #[arg(long)]
    pub before: Option<String>,
    /// Byte budget of the page
    #[arg(long, default_value_t = get::DEFAULT_PAGE_BYTES)]
    pub max_bytes: usize,
    /// Also list the parent's messages a subagent session replays at its start
    #[arg(long)]
    pub include_replayed: bool,
    #[arg(long)]
    pub json: bool,
}

// `pond get-message`'s flags.
#[derive(clap::Args)]
pub(crate) struct GetMessageFlags {
    pub id: String,
    /// Neighbours to show on each side
    #[arg(long, default_value_t = params::CONTEXT.default)]
    pub context: u64,
    #[arg(long)]
    pub json: bool,
}

// `pond sessions`'s flags.
#[derive(clap::Args)]
pub(crate) struct SessionsFlags {
    /// Only projects whose path contains this, in any case (`Shop` matches /home/a/shop)
    #[arg(long)]
    pub project: Option<String>,
    /// Only this client's sessions, as `pond search --agent` takes it (claude-code
    /// includes its subagents)
    #[arg(long)]
    pub agent: Option<String>,
    /// Only sessions active from this date on (their last message at or after it), in
    /// the forms `pond search --from` takes
    #[arg(long, visible_alias = "since")]
    pub from: Option<String>,
    /// Only sessions active up to this date, inclusive of its whole day (their first
    /// message before its end), in the forms `pond search --to` takes
    #[arg(long)]
    pub to: Option<String>,
    /// Sessions to show, 1-200
    #[arg(long, default_value_t = params::SESSIONS_LIMIT.default)]
    pub limit: u64,
    /// Sessions to skip first: the next page starts where the last one said
    #[arg(long, default_value_t = 0)]
    pub offset: u64,
    /// Print the page as JSON
    #[arg(long)]
    pub json: bool,
}

// `pond usage`'s flags.
#[derive(clap::Args)]
pub(crate) struct UsageFlags {
    #[arg(value_parser = choice::<UsageGroup>(), default_value = "daily")]
    pub group: UsageGroup,
    /// Only calls from this date on, in the forms `pond search --from` takes
    #[arg(long, visible_alias = "from")]
    pub since: Option<String>,
    /// Only calls up to this date, inclusive of its whole day
    #[arg(long, visible_alias = "to")]
    pub until: Option<String>,
    /// Only this client's calls (claude-code includes its subagents)
    #[arg(long)]
    pub client: Option<String>,
    /// Only projects whose path contains this, in any case
    #[arg(long)]
    pub project: Option<String>,
    /// Only models whose name contains this, in any case
    #[arg(long)]
    pub model: Option<String>,
    /// A price table (JSON, the format of pond's store/prices.json) whose models replace
    /// or add to the built-in prices
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
    /// Print the summary as JSON
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print one line per group and model as CSV
    #[arg(long)]
    pub csv: bool,
}

// `pond sql`'s flags.
#[derive(clap::Args)]
pub(crate) struct SqlFlags {
    pub query: String,
    #[arg(long, value_parser = choice::<Format>(), default_value = "table")]
    pub format: Format,
    #[arg(long, default_value_t = params::SQL_MAX_ROWS.default)]
    pub max_rows: u64,
    #[arg(long, default_value_t = params::SQL_TIMEOUT_S.default)]
    pub timeout_seconds: u64,
}

// `pond forget`'s flags.
#[derive(clap::Args)]
pub(crate) struct ForgetFlags {
    /// The session with this id
    #[arg(long)]
    pub session: Option<String>,
    /// Sessions whose project (working directory) contains this
    #[arg(long)]
    pub project: Option<String>,
    /// Sessions whose last message is before this date (YYYY-MM-DD or RFC 3339)
    #[arg(long)]
    pub before: Option<String>,
    /// Also forget the sessions that copy their messages (a resumed session begins with
    /// its predecessor's lines), with those sessions' own messages
    #[arg(long)]
    pub with_copies: bool,
    /// Say what would go; change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask first: required without a terminal (a terminal asks)
    #[arg(long, short = 'y')]
    pub yes: bool,
    #[arg(long)]
    pub json: bool,
}

// `pond rebuild`'s flags.
#[derive(clap::Args)]
pub(crate) struct RebuildFlags {
    /// Only the full-text index
    #[arg(long)]
    pub fts: bool,
    /// Only the scalar (B-tree) indexes
    #[arg(long)]
    pub scalar: bool,
    /// Only the row map
    #[arg(long)]
    pub rowmap: bool,
    /// Only the vector index
    #[arg(long)]
    pub vectors: bool,
    /// Only the token counts: every stored line read again for usage
    #[arg(long)]
    pub usage: bool,
    #[arg(long)]
    pub json: bool,
}

// `pond restore`'s flags.
#[derive(clap::Args)]
pub(crate) struct RestoreFlags {
    pub session: String,
    /// Write under this folder instead
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Say what would be written; write nothing
    #[arg(long)]
    pub dry_run: bool,
    #[arg(long)]
    pub json: bool,
}

// `pond export`'s flags.
#[derive(clap::Args)]
pub(crate) struct ExportFlags {
    pub session: String,
    #[arg(long, value_parser = choice::<ExportFormat>(), default_value = "markdown")]
    pub format: ExportFormat,
}

impl SyncFlags {
    pub fn params(&self) -> SyncParams {
        SyncParams {
            source: self.source.map(|k| k.name.to_owned()),
            path: self.path.clone(),
            no_index: self.no_index,
            no_embed: self.no_embed,
        }
    }
}

impl SearchFlags {
    pub fn params(self) -> SearchParams {
        SearchParams {
            query: self.query,
            mode: Some(self.mode),
            case_sensitive: self.case_sensitive.then_some(true),
            include_tools: self.no_tools.then_some(false),
            offset: self.offset,
            project: self.project,
            session_id: self.session,
            source_agent: self.agent,
            role: self.role,
            from_date: self.from,
            to_date: self.to,
            sort_by: Some(self.sort),
            limit: Some(self.limit),
            timeout_seconds: Some(self.timeout_seconds),
        }
    }
}

impl GetSessionFlags {
    pub fn params(self) -> GetSessionParams {
        GetSessionParams {
            id: self.id,
            from: Some(self.from),
            limit: Some(self.limit),
            after: self.after,
            before: self.before,
            include_replayed: Some(self.include_replayed),
            max_bytes: Some(self.max_bytes),
        }
    }
}

impl GetMessageFlags {
    pub fn params(self) -> GetMessageParams {
        GetMessageParams {
            id: self.id,
            context_before: Some(self.context),
            context_after: Some(self.context),
        }
    }
}

impl SessionsFlags {
    pub fn params(self) -> SessionsParams {
        SessionsParams {
            project: self.project,
            source_agent: self.agent,
            from_date: self.from,
            to_date: self.to,
            limit: Some(self.limit),
            offset: Some(self.offset),
        }
    }
}

impl UsageFlags {
    /// The parameters, with the price file read.
    pub fn params(self) -> anyhow::Result<UsageParams> {
        let prices =
            match &self.prices {
                Some(p) => Some(std::fs::read_to_string(p).map_err(|e| {
                    anyhow::anyhow!("cannot read the price file {}: {e}", p.display())
                })?),
                None => None,
            };
        let format = match (self.json, self.csv) {
            (true, _) => Format::Json,
            (_, true) => Format::Csv,
            _ => Format::Table,
        };
        Ok(UsageParams {
            group: Some(self.group),
            from_date: self.since,
            to_date: self.until,
            project: self.project,
            source_agent: self.client,
            model: self.model,
            format: Some(format),
            prices,
        })
    }
}

impl SqlFlags {
    pub fn params(self) -> SqlParams {
        SqlParams {
            query: self.query,
            timeout_seconds: Some(self.timeout_seconds),
            max_rows: Some(self.max_rows),
            format: Some(self.format),
        }
    }
}

impl ForgetFlags {
    pub fn params(&self) -> ForgetParams {
        ForgetParams {
            session: self.session.clone(),
            project: self.project.clone(),
            before: self.before.clone(),
            with_copies: self.with_copies,
            dry_run: self.dry_run,
        }
    }
}

impl RebuildFlags {
    pub fn params(&self) -> RebuildParams {
        RebuildParams {
            fts: self.fts,
            scalar: self.scalar,
            rowmap: self.rowmap,
            vectors: self.vectors,
            usage: self.usage,
        }
    }
}

impl RestoreFlags {
    pub fn params(self) -> RestoreParams {
        RestoreParams {
            session: self.session,
            out: self.out,
            dry_run: self.dry_run,
        }
    }
}

impl ExportFlags {
    pub fn params(self) -> ExportParams {
        ExportParams {
            session: self.session,
            format: self.format,
        }
    }
}
