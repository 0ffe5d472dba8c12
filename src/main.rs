//! `pond`: the command line. This file holds the arguments and the wiring (logging, the
//! store, where jobs run); [`commands`] calls one operation of the front per command and
//! prints its rendering. No logic of its own.

// Lance's take path nests deeply enough to pass the default limit of 128 in `run`'s future.
#![recursion_limit = "256"]

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use pond_front::{Front, LocalJobs, Runner, WorkerCommand, Workers, WorkersConfig};
use pond_protocol::usage::UsageGroup;
use pond_protocol::{Choice, Format, WorkerKind};
use pond_store::get::{self, PageFrom};
use pond_store::search::{SearchMode, SortBy};
use pond_store::{Store, StoreConfig};

mod bridge;
mod commands;
mod config;

#[derive(Parser)]
#[command(
    name = "pond",
    version,
    about = "Archive and search your AI coding-agent sessions"
)]
pub(crate) struct Cli {
    /// Store directory [default: $XDG_DATA_HOME/pond, else ~/.local/share/pond]
    #[arg(long, global = true, env = "POND_STORE")]
    store: Option<PathBuf>,
    /// The config file [default: $XDG_CONFIG_HOME/pond/config.toml, else
    /// ~/.config/pond/config.toml]; flags and environment variables override it
    #[arg(long, global = true, env = "POND_CONFIG")]
    config: Option<PathBuf>,
    /// Lance index cache cap, MiB
    #[arg(
        long,
        global = true,
        env = "POND_INDEX_CACHE_MIB",
        default_value_t = 128
    )]
    index_cache_mib: usize,
    /// Lance metadata cache cap, MiB
    #[arg(
        long,
        global = true,
        env = "POND_METADATA_CACHE_MIB",
        default_value_t = 32
    )]
    metadata_cache_mib: usize,
    /// Run heavy jobs (sync, rebuild, SQL) inside this process instead of worker processes:
    /// the single-process baseline, and a debugging aid
    #[arg(long, global = true, env = "POND_IN_PROCESS")]
    in_process: bool,
    /// More log lines on stderr (-v: info, -vv: debug, -vvv: trace); `RUST_LOG` or `POND_LOG`
    /// set a filter of their own
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Errors only on stderr
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    /// Print secrets as they were stored (answers mask them by default: keys, tokens, private
    /// keys, passwords; `pond mcp` always masks)
    #[arg(long, global = true)]
    reveal_secrets: bool,
    /// Show times in UTC instead of the local time zone (`TZ`, else /etc/localtime) in text
    /// answers, MCP answers and Markdown exports, and read a day given to a date filter as a
    /// UTC day; JSON always carries UTC and epoch values
    #[arg(long, global = true)]
    utc: bool,
    /// Do not store sessions whose project (working directory) contains this; repeat it or
    /// separate with commas (`sync` and `mcp`'s background sync; what is stored already
    /// stays until `pond forget --project`)
    #[arg(
        long = "exclude-project",
        global = true,
        env = "POND_EXCLUDE_PROJECTS",
        value_delimiter = ',',
        value_name = "SUBSTRING"
    )]
    exclude_projects: Vec<String>,
    /// An idle SQL worker exits after this many seconds
    #[arg(
        long,
        global = true,
        env = "POND_WORKER_IDLE_SECS",
        default_value_t = 60
    )]
    worker_idle_secs: u64,
    /// Kill the SQL worker if its footprint passes this many MiB (0: no budget)
    #[arg(
        long,
        global = true,
        env = "POND_SQL_MEMORY_MIB",
        default_value_t = 1536
    )]
    sql_memory_mib: u64,
    /// Kill a sync worker if its footprint passes this many MiB (0: no budget); a file it
    /// was reading when killed twice is skipped until it changes
    #[arg(
        long,
        global = true,
        env = "POND_SYNC_MEMORY_MIB",
        default_value_t = 2048
    )]
    sync_memory_mib: u64,
    #[command(subcommand)]
    command: Command,
    /// The config file's `[sources.NAME]` tables: which clients `pond sync` reads, where.
    #[arg(skip)]
    sources: std::collections::BTreeMap<String, config::Source>,
}

impl Command {
    /// Whether this command makes the store when there is none: the ones that write into
    /// it (sync, a model's import) or serve it (and sync it in the background).
    fn makes_store(&self) -> bool {
        matches!(
            self,
            Command::Sync { .. }
                | Command::Mcp { .. }
                | Command::Serve { .. }
                | Command::Worker { .. }
                | Command::Model {
                    action: ModelAction::Import { .. } | ModelAction::Fetch { .. }
                }
        )
    }
}

#[derive(Subcommand)]
pub(crate) enum ModelAction {
    /// Import a BERT-shaped sentence embedder from a folder (config.json, tokenizer.json,
    /// model.safetensors in f32, f16 or bf16) as the store's model asset (int8
    /// encoder layers, f16 tables)
    Import {
        dir: PathBuf,
        /// The name stored with every vector [default: the folder's name]
        #[arg(long)]
        name: Option<String>,
        /// Prepended to queries [default: "query: " for E5 models, else none]
        #[arg(long, requires = "passage_prefix")]
        query_prefix: Option<String>,
        /// Prepended to stored texts [default: "passage: " for E5 models, else none]
        #[arg(long, requires = "query_prefix")]
        passage_prefix: Option<String>,
    },
    /// Download a model from the Hugging Face hub and import it
    Fetch {
        #[arg(default_value = pond_embed::fetch::DEFAULT_MODEL)]
        repo: String,
        /// The hub revision (a commit) [default: a pinned commit for the default model,
        /// else main]
        #[arg(long)]
        revision: Option<String>,
    },
    /// Show the store's model
    Show,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ExportFormat {
    Jsonl,
    Markdown,
}

#[derive(Subcommand)]
pub(crate) enum ConfigAction {
    /// Every setting, its value, and where it came from (flag, env, file, default)
    Show {
        #[arg(long)]
        json: bool,
    },
    /// The config file's path
    Path,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Ingest new sessions from every client installed here (Claude Code, Codex, GitHub
    /// Copilot CLI and VS Code Copilot Chat, Cursor's agent CLI and IDE, Gemini CLI,
    /// OpenCode) into the store
    Sync {
        /// Sync only this client's files (with --path: how to read that folder)
        #[arg(long, value_parser = source_choice())]
        source: Option<pond_ingest::SourceKind>,
        /// Sync this folder instead of the clients' default homes
        #[arg(long)]
        path: Option<PathBuf>,
        /// Print the report as JSON
        #[arg(long)]
        json: bool,
        /// Leave the index update to a later sync
        #[arg(long)]
        no_index: bool,
        /// Do not embed the new messages (a store with a model embeds them after a sync)
        #[arg(long)]
        no_embed: bool,
    },
    /// Search user and assistant messages: full-text (default), vector or hybrid; or every
    /// part, tool calls and results too, for exact text or a regex
    Search {
        /// Words to find, all of them (a query finding nothing is loosened to any, and says
        /// so); "exact phrase"; -word or NOT word to exclude; a OR b; prefix*; word~ for
        /// spellings within two edits; filters project:NAME client:NAME role:user
        /// session:ID after:DATE (or since:) before:DATE to:DATE, as the options below.
        /// With --mode exact or regex: the text or regex as it is (no syntax, no inline
        /// filters)
        #[arg(allow_hyphen_values = true)]
        query: String,
        /// fts (BM25), vector (needs a model: `pond model import|fetch`, then `pond embed`),
        /// hybrid (both, fused), exact (the text as it is, e.g. ERR_PNPM_OUTDATED_LOCKFILE
        /// or src/a.rs:240, newest first) or regex (the regex crate's syntax, newest first)
        #[arg(long, value_parser = choice::<SearchMode>(), default_value = "fts")]
        mode: SearchMode,
        /// Only projects whose path contains this, in any case (`Shop` matches /home/a/shop)
        #[arg(long)]
        project: Option<String>,
        /// Only this session: its id, or 6 or more of its first characters
        #[arg(long)]
        session: Option<String>,
        /// claude-code (includes subagents), claude-code/subagent, codex, copilot, cursor,
        /// cursor-ide (includes sub-conversations), cursor-ide/subagent, gemini (includes
        /// subagents), gemini/subagent, opencode (includes subagents), opencode/subagent or
        /// vscode-copilot
        #[arg(long)]
        agent: Option<String>,
        /// user or assistant (only their messages are searchable)
        #[arg(long)]
        role: Option<String>,
        /// From this date, inclusive: YYYY-MM-DD (a day in your time zone), an RFC 3339
        /// time, today, yesterday, or a time ago (12h, 3d, 2w, 6mo, 1y)
        #[arg(long, visible_alias = "since")]
        from: Option<String>,
        /// Up to this date, inclusive of its whole day (YYYY-MM-DD, today, yesterday), or up
        /// to (not including) an RFC 3339 time or a time ago (3d)
        #[arg(long)]
        to: Option<String>,
        #[arg(long, default_value_t = 10)]
        limit: usize,
        #[arg(long, value_parser = choice::<SortBy>(), default_value = "relevance")]
        sort: SortBy,
        /// exact: match case (by default exact text matches in any case; a regex says
        /// (?i) itself)
        #[arg(long)]
        case_sensitive: bool,
        /// exact and regex: leave out tool calls and tool results (looked in by default)
        #[arg(long)]
        no_tools: bool,
        /// exact and regex: skip this many matching messages (the next page)
        #[arg(long)]
        offset: Option<u64>,
        /// exact and regex: stop checking candidates after this many seconds
        #[arg(long, default_value_t = pond_front::ops::GREP_TIMEOUT_S)]
        timeout_seconds: u64,
        #[arg(long)]
        json: bool,
    },
    /// Read a session, one page at a time
    GetSession {
        id: String,
        #[arg(long, value_parser = choice::<PageFrom>(), default_value = "start")]
        from: PageFrom,
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// The page after this message id
        #[arg(long, conflicts_with = "before")]
        after: Option<String>,
        /// The page before this message id
        #[arg(long)]
        before: Option<String>,
        /// Byte budget of the page
        #[arg(long, default_value_t = get::DEFAULT_PAGE_BYTES)]
        max_bytes: usize,
        /// Also list the parent's messages a subagent session replays at its start
        #[arg(long)]
        include_replayed: bool,
        #[arg(long)]
        json: bool,
    },
    /// Read one message with all its parts, and its neighbours
    GetMessage {
        id: String,
        /// Neighbours to show on each side
        #[arg(long, default_value_t = 2)]
        context: usize,
        #[arg(long)]
        json: bool,
    },
    /// List sessions newest first (by their last message): title, client, project, first
    /// and last message time, message count, size and id
    Sessions {
        /// Only projects whose path contains this, in any case (`Shop` matches /home/a/shop)
        #[arg(long)]
        project: Option<String>,
        /// Only this client's sessions, as `pond search --agent` takes it (claude-code
        /// includes its subagents)
        #[arg(long)]
        agent: Option<String>,
        /// Only sessions active from this date on (their last message at or after it), in
        /// the forms `pond search --from` takes
        #[arg(long, visible_alias = "since")]
        from: Option<String>,
        /// Only sessions active up to this date, inclusive of its whole day (their first
        /// message before its end), in the forms `pond search --to` takes
        #[arg(long)]
        to: Option<String>,
        /// Sessions to show, 1-200
        #[arg(long, default_value_t = pond_store::sessions::DEFAULT_LIMIT)]
        limit: usize,
        /// Sessions to skip first: the next page starts where the last one said
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// Print the page as JSON
        #[arg(long)]
        json: bool,
    },
    /// Tokens and cost of the whole history: by day (the default), week, month, session,
    /// model, project or client, from every client that records them
    Usage {
        #[arg(value_parser = choice::<UsageGroup>(), default_value = "daily")]
        group: UsageGroup,
        /// Only calls from this date on, in the forms `pond search --from` takes
        #[arg(long, visible_alias = "from")]
        since: Option<String>,
        /// Only calls up to this date, inclusive of its whole day
        #[arg(long, visible_alias = "to")]
        until: Option<String>,
        /// Only this client's calls (claude-code includes its subagents)
        #[arg(long)]
        client: Option<String>,
        /// Only projects whose path contains this, in any case
        #[arg(long)]
        project: Option<String>,
        /// Only models whose name contains this, in any case
        #[arg(long)]
        model: Option<String>,
        /// A price table (JSON, the format of pond's store/prices.json) whose models replace
        /// or add to the built-in prices
        #[arg(long, value_name = "FILE")]
        prices: Option<PathBuf>,
        /// Print the summary as JSON
        #[arg(long, conflicts_with = "csv")]
        json: bool,
        /// Print one line per group and model as CSV
        #[arg(long)]
        csv: bool,
    },
    /// Run one read-only SQL query (tables: sessions, messages, parts, records, files, usage)
    Sql {
        query: String,
        #[arg(long, value_parser = choice::<Format>(), default_value = "table")]
        format: Format,
        #[arg(long, default_value_t = 200)]
        max_rows: usize,
        #[arg(long, default_value_t = 30)]
        timeout_seconds: u64,
    },
    /// Store counts and index state
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Serve the archive to an agent over MCP (stdio): a bridge to the store's resident
    /// server (`pond serve`), started when none runs
    Mcp {
        /// Sync the default homes (~/.claude, ~/.codex) at start and then every N minutes,
        /// in a worker (0: never); a started server takes it
        #[arg(long, env = "POND_AUTO_SYNC_MINS", default_value_t = 10)]
        auto_sync_mins: u64,
        /// Serve in this process instead of through the shared server
        #[arg(long, env = "POND_STANDALONE")]
        standalone: bool,
    },
    /// The store's resident MCP server, shared by every `pond mcp` of the machine over a
    /// Unix socket (started by `pond mcp` when none runs)
    Serve {
        /// Sync the default homes at start and then every N minutes (0: never)
        #[arg(long, env = "POND_AUTO_SYNC_MINS", default_value_t = 10)]
        auto_sync_mins: u64,
        /// Exit after this many minutes with no client connected
        #[arg(long, env = "POND_IDLE_EXIT_MINS", default_value_t = 30)]
        idle_exit_mins: u64,
        /// The same in seconds (tests)
        #[arg(long, env = "POND_IDLE_EXIT_SECS", hide = true)]
        idle_exit_secs: Option<u64>,
        /// Listen here [default: $XDG_RUNTIME_DIR/pond/HASH.sock, HASH naming the store's
        /// path; else STORE/serve.sock]
        #[arg(long)]
        socket: Option<PathBuf>,
        /// Serve streamable HTTP too, at `http://ADDR/mcp` (e.g. 127.0.0.1:7777; loopback
        /// unless --allow-remote). Every request carries `Authorization: Bearer TOKEN`: the
        /// token in POND_HTTP_TOKEN, else one made at start that `pond status` shows
        #[arg(long, env = "POND_HTTP", value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// Refused: a command line is visible to every local user (set POND_HTTP_TOKEN)
        #[arg(long, hide = true, value_name = "TOKEN")]
        http_token: Option<String>,
        /// Let --http bind a non-loopback address (with POND_HTTP_TOKEN set)
        #[arg(long)]
        allow_remote: bool,
        /// Accept this HTTP Host name besides loopback names and the machine's addresses
        /// (repeatable)
        #[arg(long, value_name = "NAME")]
        allow_host: Vec<String>,
        /// Accept requests from this browser origin, e.g. `https://app.example:443`
        /// (repeatable; loopback origins always are)
        #[arg(long, value_name = "ORIGIN")]
        allow_origin: Vec<String>,
    },
    /// Remove sessions from the archive for good: every dataset, the indexes, the vectors,
    /// and the disk; no later sync stores them again. Give one selector or more (all must
    /// match); subagent sessions go with their parents
    Forget {
        /// The session with this id
        #[arg(long)]
        session: Option<String>,
        /// Sessions whose project (working directory) contains this
        #[arg(long)]
        project: Option<String>,
        /// Sessions whose last message is before this date (YYYY-MM-DD or RFC 3339)
        #[arg(long)]
        before: Option<String>,
        /// Also forget the sessions that copy their messages (a resumed session begins with
        /// its predecessor's lines), with those sessions' own messages
        #[arg(long)]
        with_copies: bool,
        /// Say what would go; change nothing
        #[arg(long)]
        dry_run: bool,
        /// Do not ask first: required without a terminal (a terminal asks)
        #[arg(long, short = 'y')]
        yes: bool,
        #[arg(long)]
        json: bool,
    },
    /// Rebuild indexes from scratch in a worker (a serving `pond mcp` keeps answering)
    Rebuild {
        /// Only the full-text index
        #[arg(long)]
        fts: bool,
        /// Only the scalar (B-tree) indexes
        #[arg(long)]
        scalar: bool,
        /// Only the row map
        #[arg(long)]
        rowmap: bool,
        /// Only the vector index
        #[arg(long)]
        vectors: bool,
        /// Only the token counts: every stored line read again for usage
        #[arg(long)]
        usage: bool,
        #[arg(long)]
        json: bool,
    },
    /// The embedding model: import a local folder, or fetch the default from the hub
    Model {
        #[command(subcommand)]
        action: ModelAction,
    },
    /// Embed every message that has no vector yet, in the embed worker (resumable)
    Embed {
        /// Stop after this many messages
        #[arg(long, default_value_t = 0)]
        limit: u64,
        #[arg(long)]
        json: bool,
    },
    /// Write a stored session's files (with its subagents') back where its client reads
    /// them, byte for byte, so `claude --resume ID` / `codex resume ID` work after the
    /// client deleted them. Never overwrites a file that differs
    Restore {
        session: String,
        /// Write under this folder instead
        #[arg(long)]
        out: Option<PathBuf>,
        /// Say what would be written; write nothing
        #[arg(long)]
        dry_run: bool,
        #[arg(long)]
        json: bool,
    },
    /// Print a stored session: its lines as the client wrote them (jsonl) or a readable
    /// document (markdown); secrets masked unless --reveal-secrets
    Export {
        session: String,
        #[arg(long, value_enum, default_value = "markdown")]
        format: ExportFormat,
    },
    /// The config file: where it is, and every setting with where its value came from
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Set pond up: register it with the clients found, keep Claude Code from deleting
    /// sessions, write the config file, then sync. Safe to run again
    Init {
        /// Answer yes to every question
        #[arg(long, short = 'y')]
        yes: bool,
        /// Show each change; change nothing
        #[arg(long)]
        dry_run: bool,
    },
    /// Register `pond mcp` with a client (where it reads its MCP servers; a backup of every
    /// file changed) and install the agent skill where the client reads skills
    Install {
        /// claude-code, codex, gemini, cursor, copilot, vscode, opencode, claude-desktop
        #[arg(value_parser = PossibleValuesParser::new(pond_front::install::Client::ALL.map(|c| c.name())))]
        client: String,
        /// Show the entry instead of writing it
        #[arg(long)]
        print: bool,
        /// Say what would change; change nothing
        #[arg(long)]
        dry_run: bool,
        #[arg(long)]
        json: bool,
    },
    /// Remove pond from a client's MCP servers (and the skill), leaving the rest as it is
    Uninstall {
        #[arg(value_parser = PossibleValuesParser::new(pond_front::install::Client::ALL.map(|c| c.name())))]
        client: String,
        #[arg(long)]
        dry_run: bool,
        #[arg(long)]
        json: bool,
    },
    /// Print the agent skill (SKILL.md) that tells an agent when and how to use pond
    Skill,
    /// Print a shell completion script (e.g. `pond completions bash > ~/.local/share/bash-completion/completions/pond`)
    Completions { shell: clap_complete::Shell },
    /// Run as a worker process (started by pond itself)
    #[command(hide = true)]
    Worker {
        kind: String,
        #[arg(long)]
        ipc: String,
        #[arg(long)]
        parent: u32,
    },
}

pub(crate) fn default_store() -> PathBuf {
    // An empty XDG_DATA_HOME counts as unset (XDG base directory spec).
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    data.join("pond")
}

/// The parser of a [`Choice`] enum: its names, listed in `--help`.
fn choice<T: Choice>() -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(T::NAMES.iter().map(|(n, _)| *n))
        .map(|n| T::named(&n).expect("clap checked the name"))
}

/// The clients of pond's registry by name (or alias).
fn source_choice() -> impl TypedValueParser<Value = pond_ingest::SourceKind> {
    let names = pond_ingest::SOURCES
        .iter()
        .map(|s| PossibleValue::new(s.name).aliases(s.aliases.iter().copied()));
    PossibleValuesParser::new(names)
        .map(|n| pond_ingest::Source::parse(&n).expect("clap checked the name"))
}

/// Report a panic (a bug) by where it happened, never by its message: a message can quote
/// the archived text being handled, and stderr ends up in an MCP host's log.
fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("pond: internal error{at} (a bug; please report it)");
    }));
}

/// Log to stderr: the filter of `POND_LOG`, else `RUST_LOG`, else the level `-v`/`-q` ask
/// (warnings by default, but for Lance's notes on empty index partitions). Colour only on a
/// terminal: an MCP host writes a server's stderr, and a worker's goes through its
/// supervisor, into log files.
fn logging(cli: &Cli) {
    use tracing_subscriber::EnvFilter;
    let level = match (cli.quiet, cli.verbose) {
        (true, _) => "error",
        // Lance's vector index builder warns of every empty partition, which clustered
        // vectors leave and which costs nothing: said with `-v`.
        (_, 0) => "warn,lance::index::vector::builder=error",
        (_, 1) => "info",
        (_, 2) => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_env("POND_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(filter)
        .init();
}

/// The `-v`/`-q` flags a worker is started with, so its logs follow the command's.
fn verbosity_args(cli: &Cli) -> Vec<std::ffi::OsString> {
    if cli.quiet {
        vec!["--quiet".into()]
    } else if cli.verbose > 0 {
        vec![format!("-{}", "v".repeat(cli.verbose as usize)).into()]
    } else {
        Vec::new()
    }
}

/// Lance's vector index statistics, which pond reads only for the count of rows not yet
/// indexed, by default also carry every centroid as JSON (and warn that this will change):
/// opt in to the lean statistics now, unless the variable says otherwise. Workers inherit
/// it.
fn lean_index_statistics() {
    const VAR: &str = "LANCE_INCLUDE_VECTOR_CENTROIDS";
    if std::env::var_os(VAR).is_none() {
        // Before any thread but this one exists.
        std::env::set_var(VAR, "false");
    }
}

fn main() -> std::process::ExitCode {
    quiet_panics();
    lean_index_statistics();
    pond_store::owner_only();
    let matches = Cli::command().get_matches();
    let mut cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    pond_workers::process::few_arenas();
    if !matches!(cli.command, Command::Serve { .. } | Command::Mcp { .. }) {
        pond_store::indexes::size_build_threads();
    }
    logging(&cli);
    if let Command::Worker { kind, ipc, parent } = &cli.command {
        return worker(&cli, kind, ipc, *parent);
    }
    // A worker gets every setting as a flag; everything else reads the config file.
    let file = match config::load(&config::path(&cli)) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("pond: {e:#}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let settings = config::apply(&mut cli, &matches, file);
    if let Err(e) = config::check(&cli) {
        eprintln!("pond: {e:#}");
        return std::process::ExitCode::FAILURE;
    }
    pond_store::zone::set_utc(cli.utc);
    if let Some(code) = commands::offline(&mut cli, &settings) {
        return code;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let result = runtime.block_on(commands::run(cli));
    // Do not wait for tasks still running (a timed-out query): exiting ends them.
    runtime.shutdown_background();
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pond: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

pub(crate) fn store_config(cli: &Cli) -> StoreConfig {
    StoreConfig {
        index_cache_bytes: cli.index_cache_mib << 20,
        metadata_cache_bytes: cli.metadata_cache_mib << 20,
    }
}

/// `pond worker <kind>`: serve jobs for the front that started this process.
fn worker(cli: &Cli, kind: &str, ipc: &str, parent: u32) -> std::process::ExitCode {
    let Some(kind) = WorkerKind::parse(kind) else {
        eprintln!("pond: unknown worker kind {kind:?}");
        return std::process::ExitCode::FAILURE;
    };
    let root = cli.store.clone().unwrap_or_else(default_store);
    let args = pond_workers::process::WorkerArgs {
        kind,
        ipc: ipc.to_owned(),
        parent,
    };
    match pond_workers::process::serve(&root, store_config(cli), args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pond worker: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Where this process runs heavy jobs: worker processes, or itself with `--in-process`.
fn runner(cli: &Cli, store: &Arc<Store>) -> Result<Runner> {
    if cli.in_process {
        let jobs = Arc::new(pond_workers::jobs::Jobs::new(store.clone()));
        let local: LocalJobs = Arc::new(move |job, progress| {
            let jobs = jobs.clone();
            Box::pin(async move {
                let mut report = |p| {
                    if let Some(tx) = &progress {
                        let _ = tx.send(p);
                    }
                };
                jobs.execute(job, &mut report).await
            })
        });
        return Ok(Runner::InProcess(local));
    }
    let exe = std::env::current_exe().context("cannot find the pond executable")?;
    let args = store_args(cli, store.root());
    let mut config = WorkersConfig::new(WorkerCommand { exe, args });
    config.idle_exit = Duration::from_secs(cli.worker_idle_secs.max(1));
    if cli.sync_memory_mib > 0 {
        config
            .memory_budget_kib
            .insert(WorkerKind::Sync, cli.sync_memory_mib << 10);
    }
    if cli.sql_memory_mib > 0 {
        config
            .memory_budget_kib
            .insert(WorkerKind::Sql, cli.sql_memory_mib << 10);
    }
    Ok(Runner::Workers(Workers::start(config)))
}

/// The flags a process pond starts for this store gets: the store, its cache caps, and
/// this command's verbosity (a worker needs no more; a server gets its settings too).
fn store_args(cli: &Cli, root: &std::path::Path) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec!["--store".into(), root.into()];
    args.extend([
        "--index-cache-mib".into(),
        cli.index_cache_mib.to_string().into(),
        "--metadata-cache-mib".into(),
        cli.metadata_cache_mib.to_string().into(),
    ]);
    args.extend(verbosity_args(cli));
    args
}

/// Open the store the command names, with the runner its jobs go to.
pub(crate) fn front(cli: &Cli) -> Result<Front> {
    let root = cli.store.clone().unwrap_or_else(default_store);
    // A command that only reads never makes a store: a mistyped --store is said as such.
    // (A URL is refused as such by the store.)
    let url = root.to_string_lossy().contains("://");
    if !cli.command.makes_store() && !url && std::fs::symlink_metadata(&root).is_err() {
        anyhow::bail!(
            "no store at {}: `pond sync` makes one there (or give --store the path of yours)",
            root.display()
        );
    }
    let store = Store::open(&root, store_config(cli))
        .with_context(|| format!("cannot open the store at {}", root.display()))?;
    let store = Arc::new(store);
    let runner = runner(cli, &store)?;
    Ok(Front::new(store, runner))
}

/// How `pond mcp` reaches the store's server: its socket, and how to start one with this
/// command's settings.
pub(crate) fn bridge_of(cli: &Cli, auto_sync_mins: u64) -> Result<bridge::Bridge, String> {
    let root = cli.store.clone().unwrap_or_else(default_store);
    // The store's folder exists before its socket is named by its canonical path.
    {
        use std::os::unix::fs::DirBuilderExt;
        // Made owner-only when missing; one that exists is left as it is (the socket's own
        // folder is checked when the bridge connects).
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&root)
            .map_err(|e| format!("cannot create {}: {e}", root.display()))?;
    }
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the pond executable: {e}"))?;
    let mut args = store_args(cli, &root);
    for (flag, value) in [
        ("--worker-idle-secs", cli.worker_idle_secs),
        ("--sql-memory-mib", cli.sql_memory_mib),
        ("--sync-memory-mib", cli.sync_memory_mib),
    ] {
        args.extend([flag.into(), value.to_string().into()]);
    }
    for p in &cli.exclude_projects {
        args.extend(["--exclude-project".into(), p.into()]);
    }
    if cli.utc {
        args.push("--utc".into());
    }
    if let Some(c) = &cli.config {
        args.extend(["--config".into(), c.clone().into()]);
    }
    args.extend([
        "serve".into(),
        "--auto-sync-mins".into(),
        auto_sync_mins.to_string().into(),
    ]);
    Ok(bridge::Bridge {
        socket: pond_front::rendezvous::socket_path(&root),
        log: root.join("serve.log"),
        exe,
        serve_args: args,
    })
}
