//! `pond`: the command line. It parses arguments, opens the store, calls the library crates
//! and prints their renderings; it holds no logic of its own.

// Lance's take path nests deeply enough to pass the default limit of 128 in `run`'s future.
#![recursion_limit = "256"]

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use pond_ingest::SourceKind;
use pond_protocol::job::{
    BackfillReport, BackfillRequest, RebuildReport, RebuildRequest, SqlFormat as JobSqlFormat,
    SqlJob,
};
use pond_protocol::sync::{SyncRequest, SyncSource};
use pond_protocol::{Progress, Request, WorkerKind};
use pond_store::get::{self, PageRequest};
use pond_store::search::{self, SearchFilters, SearchMode, SearchRequest, SortBy};
use pond_store::sql::SqlLimits;
use pond_store::{Store, StoreConfig};
use pond_supervisor::mcp::AutoSync;
use pond_supervisor::{
    render, JobOptions, LocalJobs, Runner, WorkerCommand, Workers, WorkersConfig,
};

#[derive(Parser)]
#[command(
    name = "pond",
    version,
    about = "Archive and search your AI coding-agent sessions"
)]
struct Cli {
    /// Store directory [default: $XDG_DATA_HOME/pond, else ~/.local/share/pond]
    #[arg(long, global = true, env = "POND_STORE")]
    store: Option<PathBuf>,
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
    /// An idle SQL worker exits after this many seconds
    #[arg(long, global = true, default_value_t = 60)]
    worker_idle_secs: u64,
    /// Kill the SQL worker if its footprint passes this many MiB (0: no budget)
    #[arg(long, global = true, default_value_t = 1536)]
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
}

#[derive(Clone, Copy, ValueEnum)]
enum Agent {
    ClaudeCode,
    Codex,
}

#[derive(Clone, Copy, ValueEnum)]
enum Sort {
    Relevance,
    Recency,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    Fts,
    Vector,
    Hybrid,
}

#[derive(Clone, Copy, ValueEnum)]
enum FromEnd {
    Start,
    End,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Table,
    Json,
    Csv,
}

#[derive(Subcommand)]
enum ModelAction {
    /// Import a BERT-shaped sentence embedder from a folder (config.json, tokenizer.json,
    /// model.safetensors in f32, f16 or bf16) as the store's f16 model asset
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
enum Command {
    /// Ingest new session lines from Claude Code and Codex into the store
    Sync {
        /// Sync only this client's files (with --path: how to read that folder)
        #[arg(long, value_enum)]
        source: Option<Agent>,
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
    /// Search user and assistant messages: full-text (default), vector or hybrid
    Search {
        query: String,
        /// fts (BM25), vector (needs a model: `pond model import|fetch`, then `pond embed`)
        /// or hybrid (both, fused)
        #[arg(long, value_enum, default_value_t = Mode::Fts)]
        mode: Mode,
        /// Only projects whose path contains this
        #[arg(long)]
        project: Option<String>,
        #[arg(long)]
        session: Option<String>,
        /// claude-code (includes subagents), claude-code/subagent or codex
        #[arg(long)]
        agent: Option<String>,
        /// user, assistant, system or tool
        #[arg(long)]
        role: Option<String>,
        /// From this date (YYYY-MM-DD or RFC 3339), inclusive
        #[arg(long)]
        from: Option<String>,
        /// Up to this date, exclusive
        #[arg(long)]
        to: Option<String>,
        #[arg(long, default_value_t = 10)]
        limit: usize,
        #[arg(long, value_enum, default_value_t = Sort::Relevance)]
        sort: Sort,
        #[arg(long)]
        json: bool,
    },
    /// Read a session, one page at a time
    GetSession {
        id: String,
        #[arg(long, value_enum, default_value_t = FromEnd::Start)]
        from: FromEnd,
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
    /// Run one read-only SQL query (tables: sessions, messages, parts, records, files)
    Sql {
        query: String,
        #[arg(long, value_enum, default_value_t = Format::Table)]
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
    /// Serve the archive to an agent over MCP (stdio)
    Mcp {
        /// Sync the default homes (~/.claude, ~/.codex) at start and then every N minutes,
        /// in a worker (0: never)
        #[arg(long, env = "POND_AUTO_SYNC_MINS", default_value_t = 10)]
        auto_sync_mins: u64,
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

fn default_store() -> PathBuf {
    // An empty XDG_DATA_HOME counts as unset (XDG base directory spec).
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    data.join("pond")
}

fn print_json<T: serde::Serialize>(v: &T) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

/// Print a result as JSON, or as its text rendering.
fn emit<T: serde::Serialize>(json: bool, value: &T, text: fn(&T) -> String) -> Result<()> {
    if json {
        print_json(value)
    } else {
        print!("{}", text(value));
        Ok(())
    }
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
/// (warnings by default). Colour only on a terminal: an MCP host writes a server's stderr,
/// and a worker's goes through its supervisor, into log files.
fn logging(cli: &Cli) {
    use tracing_subscriber::EnvFilter;
    let level = match (cli.quiet, cli.verbose) {
        (true, _) => "error",
        (_, 0) => "warn",
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

fn main() -> std::process::ExitCode {
    quiet_panics();
    pond_store::owner_only();
    let cli = Cli::parse();
    logging(&cli);
    if let Command::Worker { kind, ipc, parent } = &cli.command {
        return worker(&cli, kind, ipc, *parent);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let result = runtime.block_on(run(cli));
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

fn store_config(cli: &Cli) -> StoreConfig {
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
    let mut args: Vec<std::ffi::OsString> = vec!["--store".into(), store.root().into()];
    args.extend([
        "--index-cache-mib".into(),
        cli.index_cache_mib.to_string().into(),
        "--metadata-cache-mib".into(),
        cli.metadata_cache_mib.to_string().into(),
    ]);
    args.extend(verbosity_args(cli));
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

async fn run(cli: Cli) -> Result<()> {
    let root = cli.store.clone().unwrap_or_else(default_store);
    let store = Store::open(&root, store_config(&cli))
        .with_context(|| format!("cannot open the store at {}", root.display()))?;
    let store = Arc::new(store);
    let runner = matches!(
        cli.command,
        Command::Mcp { .. }
            | Command::Rebuild { .. }
            | Command::Sync { .. }
            | Command::Embed { .. }
            | Command::Sql { .. }
            | Command::Search {
                mode: Mode::Vector | Mode::Hybrid,
                ..
            }
    )
    .then(|| runner(&cli, &store))
    .transpose()?;
    let runner = || runner.clone().expect("a runner for this command");
    match cli.command {
        Command::Worker { .. } => unreachable!("handled before the runtime starts"),
        Command::Mcp { auto_sync_mins } => {
            let runner = runner();
            let auto_sync = (auto_sync_mins > 0).then(|| AutoSync {
                every: Duration::from_secs(auto_sync_mins * 60),
                request: SyncRequest {
                    sources: source_list(None, None),
                    skip_index: false,
                },
            });
            pond_supervisor::mcp::serve_stdio(store, runner, auto_sync)
                .await
                .map_err(anyhow::Error::msg)
        }
        Command::Embed { limit, json } => {
            let runner = runner();
            let result = backfill(&runner, limit).await;
            runner.shutdown().await;
            let report = result?;
            if json {
                print_json(&report)
            } else {
                println!("{}", embed_line(&report));
                Ok(())
            }
        }
        Command::Model { action } => model(&store, action).await,
        Command::Rebuild {
            fts,
            scalar,
            rowmap,
            vectors,
            json,
        } => {
            let runner = runner();
            let all = !(fts || scalar || rowmap || vectors);
            let req = RebuildRequest {
                fts: fts || all,
                scalar: scalar || all,
                rowmap: rowmap || all,
                vectors: vectors || all,
            };
            let result = rebuild(&runner, req).await;
            runner.shutdown().await;
            let report = result?;
            if json {
                print_json(&report)
            } else {
                if report.rederived {
                    println!(
                        "upgraded: sessions, messages and parts re-derived from the stored lines ({} second spellings of file paths merged)",
                        report.paths_repaired
                    );
                }
                for (step, ms) in &report.steps {
                    println!("rebuilt {step} in {:.1} s", *ms as f64 / 1000.0);
                }
                if report.rowmap_bytes > 0 {
                    println!(
                        "row map: {:.1} MiB",
                        report.rowmap_bytes as f64 / (1 << 20) as f64
                    );
                }
                println!(
                    "{} messages, {} not yet indexed; {:.1} s, peak RSS of the process that rebuilt {} MiB",
                    report.rows,
                    report.unindexed_rows,
                    report.elapsed_ms as f64 / 1000.0,
                    report.peak_kib >> 10
                );
                Ok(())
            }
        }
        Command::Sync {
            source,
            path,
            json,
            no_index,
            no_embed,
        } => {
            let runner = runner();
            // A store with a model embeds what the sync added.
            let embed_after = !no_embed && store.has_model();
            let result = sync(&store, &runner, source, path, json, no_index, embed_after).await;
            runner.shutdown().await;
            result
        }
        Command::Search {
            query,
            mode,
            project,
            session,
            agent,
            role,
            from,
            to,
            limit,
            sort,
            json,
        } => {
            let req = SearchRequest {
                query,
                filters: SearchFilters {
                    project,
                    session_id: session,
                    source_agent: agent,
                    role,
                    from: from.as_deref().map(search::parse_date).transpose()?,
                    to: to.as_deref().map(search::parse_date).transpose()?,
                },
                sort: match sort {
                    Sort::Relevance => SortBy::Relevance,
                    Sort::Recency => SortBy::Recency,
                },
                limit,
                mode: match mode {
                    Mode::Fts => SearchMode::Fts,
                    Mode::Vector => SearchMode::Vector,
                    Mode::Hybrid => SearchMode::Hybrid,
                },
            };
            let vector = if mode == Mode::Fts {
                None
            } else {
                let runner = runner();
                let v = runner.embed_query(&req.query).await;
                runner.shutdown().await;
                Some(v?)
            };
            let results = search::search(&store, &req, vector.as_ref()).await?;
            emit(json, &results, render::search)
        }
        Command::GetSession {
            id,
            from,
            limit,
            after,
            before,
            max_bytes,
            include_replayed,
            json,
        } => {
            let req = PageRequest {
                from: match from {
                    FromEnd::Start => get::PageFrom::Start,
                    FromEnd::End => get::PageFrom::End,
                },
                limit,
                after,
                before,
                max_bytes,
                include_replayed,
            };
            let page = get::get_session(&store, &id, &req).await?;
            emit(json, &page, render::session_page)
        }
        Command::GetMessage { id, context, json } => {
            let c = get::get_message(&store, &id, context, context).await?;
            emit(json, &c, render::message_context)
        }
        Command::Sql {
            query,
            format,
            max_rows,
            timeout_seconds,
        } => {
            // In the sql worker, like the MCP server's: its memory budget and its kill at
            // the deadline hold here too, and only the capped, rendered result comes back.
            let runner = runner();
            let timeout = timeout_seconds.max(1);
            let job = SqlJob {
                query,
                format: match format {
                    Format::Table => JobSqlFormat::Table,
                    Format::Json => JobSqlFormat::Json,
                    Format::Csv => JobSqlFormat::Csv,
                },
                max_rows: max_rows.max(1) as u64,
                max_bytes: SqlLimits::default().max_bytes as u64,
                timeout_ms: timeout * 1000,
            };
            let opts = JobOptions {
                deadline: Some(Duration::from_secs(timeout + 5)),
                progress: None,
                ..JobOptions::default()
            };
            let outcome = runner.call(job, opts).await;
            runner.shutdown().await;
            let out = outcome?;
            println!("{}", out.text.trim_end());
            eprintln!("{}", out.footer);
            Ok(())
        }
        Command::Status { json } => {
            let counts = store.counts().await?;
            let messages = store.dataset(pond_store::schema::MESSAGES).await?;
            let unindexed = match &messages {
                Some(ds) => pond_store::indexes::unindexed_rows(ds).await?,
                None => 0,
            };
            let rowmap = pond_supervisor::render::rowmap_state(&store, messages.as_ref());
            let embeddings =
                pond_store::vectors::describe(&store, counts.searchable_messages).await;
            let last_sync = store.report("sync");
            if json {
                print_json(&serde_json::json!({
                    "store": store.root(),
                    "counts": counts,
                    "unindexed_rows": unindexed,
                    "rowmap": rowmap,
                    "embeddings": embeddings,
                    "last_sync": last_sync,
                }))
            } else {
                println!("store {}", store.root().display());
                println!("{}", render::counts(&counts));
                println!("full-text index: {unindexed} rows not yet indexed");
                println!("{rowmap}");
                println!("{embeddings}");
                if let Some(saved) = &last_sync {
                    print!("{}", render::last_sync(saved));
                }
                Ok(())
            }
        }
    }
}

async fn rebuild(runner: &Runner, req: RebuildRequest) -> Result<RebuildReport> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let opts = JobOptions {
        deadline: None,
        progress: Some(tx),
        ..JobOptions::default()
    };
    let show = tokio::spawn(async move {
        while let Some(p) = rx.recv().await {
            if let Progress::Step(step) = p {
                eprintln!("pond: rebuilding {step}");
            }
        }
    });
    let outcome = runner.call(req, opts).await;
    let _ = show.await;
    Ok(outcome?)
}

/// What to sync: one folder (`--path`), or the clients' default homes, optionally one client.
fn source_list(source: Option<Agent>, path: Option<PathBuf>) -> Vec<SyncSource> {
    let wanted = source.map(|a| match a {
        Agent::ClaudeCode => SourceKind::ClaudeCode,
        Agent::Codex => SourceKind::Codex,
    });
    match path {
        Some(p) => vec![SyncSource {
            agent: wanted.map(|k| k.as_str().to_owned()),
            path: p,
        }],
        None => pond_ingest::discover::default_sources()
            .into_iter()
            .filter(|(k, _)| wanted.is_none_or(|w| w == *k))
            .map(|(k, p)| SyncSource {
                agent: Some(k.as_str().to_owned()),
                path: p,
            })
            .collect(),
    }
}

/// Run a long job, showing its progress with a bar of `template` on a terminal's stderr.
async fn run_with_bar<R: Request>(
    runner: &Runner,
    req: R,
    stall: Option<Duration>,
    template: &str,
    show: fn(&indicatif::ProgressBar, Progress),
) -> Result<R::Reply, pond_protocol::JobError> {
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(indicatif::ProgressStyle::with_template(template).expect("valid template"));
        b
    });
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let show_bar = bar.clone();
    let shown = tokio::spawn(async move {
        while let Some(p) = rx.recv().await {
            if let Some(b) = &show_bar {
                show(b, p);
            }
        }
    });
    let opts = JobOptions {
        deadline: None,
        stall,
        progress: Some(tx),
    };
    let outcome = runner.call(req, opts).await;
    let _ = shown.await;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    outcome
}

/// Embed messages without vectors in the embed worker, with a progress bar.
async fn backfill(runner: &Runner, limit: u64) -> Result<BackfillReport> {
    let outcome = run_with_bar(
        runner,
        BackfillRequest { limit },
        None,
        "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} messages embedded ({eta})",
        |b, p| {
            if let Progress::Embed(p) = p {
                b.set_length(p.total);
                b.set_position(p.done);
            }
        },
    )
    .await;
    Ok(outcome?)
}

fn embed_line(r: &BackfillReport) -> String {
    format!(
        "embedded {} messages with {} in {:.1} s ({} had vectors, {} left); peak RSS of the embed worker {} MiB",
        r.embedded,
        r.model,
        r.elapsed_ms as f64 / 1000.0,
        r.already,
        r.remaining,
        r.peak_kib >> 10
    )
}

async fn model(store: &Store, action: ModelAction) -> Result<()> {
    let dst = store.model_dir();
    let manifest = match action {
        ModelAction::Show => {
            let m = pond_embed::Manifest::read(&dst)?;
            println!("{}", serde_json::to_string_pretty(&m)?);
            for (model, n) in pond_store::vectors::counts(store).await? {
                println!("{n} vectors from {model}");
            }
            return Ok(());
        }
        ModelAction::Import {
            dir,
            name,
            query_prefix,
            passage_prefix,
        } => {
            let name = name.unwrap_or_else(|| {
                dir.canonicalize()
                    .ok()
                    .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .unwrap_or_else(|| "model".into())
            });
            let prefixes = query_prefix.zip(passage_prefix);
            pond_embed::import(&dir, &dst, &name, prefixes)?
        }
        ModelAction::Fetch { repo, revision } => {
            let download = store.root().join("model.download");
            let mut last = String::new();
            let mut show = |file: &str, got: u64, total: Option<u64>| {
                let line = format!(
                    "{file}: {} MiB of {}",
                    got >> 20,
                    total.map_or("?".into(), |t| format!("{} MiB", t >> 20))
                );
                if line != last {
                    eprint!("\r{line}   ");
                    last = line;
                }
            };
            let revision =
                revision.unwrap_or_else(|| pond_embed::fetch::default_revision(&repo).to_owned());
            let fetched = pond_embed::fetch::download(&repo, &revision, &download, &mut show).await;
            eprintln!();
            let imported = fetched.and_then(|f| {
                pond_embed::import(&download, &dst, &repo, None)?;
                pond_embed::Manifest::set_revision(&dst, &f.revision)
            });
            let _ = std::fs::remove_dir_all(&download);
            imported?
        }
    };
    println!(
        "imported {} ({} dims, {} parameters, {} -> f16) into {}; `pond embed` embeds the archive",
        manifest.name,
        manifest.dims,
        manifest.parameters,
        manifest.source_dtype,
        dst.display()
    );
    Ok(())
}

async fn sync(
    store: &Store,
    runner: &Runner,
    source: Option<Agent>,
    path: Option<PathBuf>,
    json: bool,
    no_index: bool,
    embed_after: bool,
) -> Result<()> {
    let sources = source_list(source, path);
    let searched: Vec<String> = sources
        .iter()
        .map(|s| s.path.display().to_string())
        .collect();
    let req = SyncRequest {
        sources,
        skip_index: no_index,
    };
    let outcome = run_with_bar(
        runner,
        req,
        Some(pond_supervisor::sync_stall()),
        "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {msg}",
        |b, p| {
            if let Progress::Sync(p) = p {
                b.set_length(p.bytes_total);
                b.set_position(p.bytes_done);
                b.set_message(format!(
                    "{}/{} files, {} messages",
                    p.files_done, p.files_total, p.messages
                ));
            }
        },
    )
    .await;
    let report = outcome?;
    if report.files_seen == 0 {
        eprintln!(
            "pond: no session files found under {}; point --path at a folder of session files",
            searched.join(", ")
        );
    }
    let embedded = if embed_after {
        Some(backfill(runner, 0).await?)
    } else {
        None
    };
    if json {
        let mut v = serde_json::to_value(&report)?;
        v["peak_rss_kib"] = report.peak_kib.into();
        v["store"] = serde_json::json!(store.root());
        if let Some(e) = &embedded {
            v["embedding"] = serde_json::to_value(e)?;
        }
        print_json(&v)
    } else {
        print!("{}", render::sync_report(&report));
        if let Some(e) = &embedded {
            println!("{}", embed_line(e));
        }
        println!(
            "store: {} ({})",
            store.root().display(),
            render::counts(&store.counts().await?)
        );
        Ok(())
    }
}
