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
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use pond_bridge_lib::bridge;
use pond_front::{Front, LocalJobs, Runner, WorkerCommand, Workers, WorkersConfig};
use pond_protocol::{Choice, WorkerKind};
use pond_store::{Store, StoreConfig};

mod commands;
mod config;
mod flags;
mod settings;

#[derive(Parser)]
#[command(
    name = "pond",
    version,
    about = "Archive and search your AI coding-agent sessions"
)]
pub(crate) struct Cli {
    /// Every global setting (flags, variables, the config file): `settings`' table.
    #[command(flatten)]
    settings: settings::Settings,
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
    /// Copilot CLI, Cursor, Cursor IDE, Gemini CLI, OpenCode and VS Code Copilot Chat) into
    /// the store
    Sync(flags::SyncFlags),
    /// Search user and assistant messages: full-text (default), vector or hybrid; or every
    /// part, tool calls and results too, for exact text or a regex
    Search(flags::SearchFlags),
    /// Read a session, one page at a time
    GetSession(flags::GetSessionFlags),
    /// Read one message with all its parts, and its neighbours
    GetMessage(flags::GetMessageFlags),
    /// List sessions newest first (by their last message): title, client, project, first
    /// and last message time, message count, size and id
    Sessions(flags::SessionsFlags),
    /// Tokens and cost of the whole history: by day (the default), week, month, session,
    /// model, project or client, from every client that records them
    Usage(flags::UsageFlags),
    /// Run one read-only SQL query (tables: sessions, messages, parts, records, files, usage)
    Sql(flags::SqlFlags),
    /// Store counts and index state
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Serve the archive to an agent over MCP (stdio): a bridge to the store's resident
    /// server (`pond serve`), started when none runs
    Mcp {
        /// Sync every client's default home at start and then every N minutes, in a worker
        /// (0: never); a started server takes it
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
    Forget(flags::ForgetFlags),
    /// Rebuild indexes from scratch in a worker (a serving `pond mcp` keeps answering)
    Rebuild(flags::RebuildFlags),
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
    Restore(flags::RestoreFlags),
    /// Print a stored session: its lines as the client wrote them (jsonl) or a readable
    /// document (markdown); secrets masked unless --reveal-secrets
    Export(flags::ExportFlags),
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
        #[arg(value_parser = PossibleValuesParser::new(pond_setup::Client::ALL.map(|c| c.name())))]
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
        #[arg(value_parser = PossibleValuesParser::new(pond_setup::Client::ALL.map(|c| c.name())))]
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
    let level = match (cli.settings.quiet, cli.settings.verbose) {
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
    if let Err(e) = cli.settings.check(&matches) {
        eprintln!("pond: {e:#}");
        return std::process::ExitCode::FAILURE;
    }
    pond_store::zone::set_utc(cli.settings.utc);
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
        index_cache_bytes: cli.settings.index_cache_mib << 20,
        metadata_cache_bytes: cli.settings.metadata_cache_mib << 20,
    }
}

/// `pond worker <kind>`: serve jobs for the front that started this process.
fn worker(cli: &Cli, kind: &str, ipc: &str, parent: u32) -> std::process::ExitCode {
    let Some(kind) = WorkerKind::parse(kind) else {
        eprintln!("pond: unknown worker kind {kind:?}");
        return std::process::ExitCode::FAILURE;
    };
    let root = cli.settings.store.clone().unwrap_or_else(default_store);
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
    if cli.settings.in_process {
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
    let settings = &cli.settings;
    config.idle_exit = Duration::from_secs(settings.worker_idle_secs.max(1));
    if settings.sync_memory_mib > 0 {
        config
            .memory_budget_kib
            .insert(WorkerKind::Sync, settings.sync_memory_mib << 10);
    }
    if settings.sql_memory_mib > 0 {
        config
            .memory_budget_kib
            .insert(WorkerKind::Sql, settings.sql_memory_mib << 10);
    }
    Ok(Runner::Workers(Workers::start(config)))
}

/// The flags a worker pond starts for this store gets: the store, and the settings the
/// table passes to workers (its cache caps, this command's verbosity).
fn store_args(cli: &Cli, root: &std::path::Path) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec!["--store".into(), root.into()];
    args.extend(cli.settings.pass(&[settings::Passed::Workers]));
    args
}

/// Open the store the command names, with the runner its jobs go to.
pub(crate) fn front(cli: &Cli) -> Result<Front> {
    let root = cli.settings.store.clone().unwrap_or_else(default_store);
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
    let root = cli.settings.store.clone().unwrap_or_else(default_store);
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
    // The server gets what a worker gets and the settings the table passes to it.
    let mut args: Vec<std::ffi::OsString> = vec!["--store".into(), root.clone().into()];
    let to = [settings::Passed::Workers, settings::Passed::Server];
    args.extend(cli.settings.pass(&to));
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
