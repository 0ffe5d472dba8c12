//! `pond`: the command line. It parses arguments, opens the store, calls the library crates
//! and prints their renderings; it holds no logic of its own.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use pond_ingest::SourceKind;
use pond_protocol::sync::{SyncRequest, SyncSource};
use pond_store::get::{self, PageRequest};
use pond_store::search::{self, SearchFilters, SearchRequest, SortBy};
use pond_store::sql::{self, SqlFormat, SqlLimits};
use pond_store::{Store, StoreConfig};
use pond_supervisor::{footprint, render};

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
    },
    /// Full-text search over user and assistant messages
    Search {
        query: String,
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

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("POND_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let cli = Cli::parse();
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

async fn run(cli: Cli) -> Result<()> {
    let root = cli.store.clone().unwrap_or_else(default_store);
    let config = StoreConfig {
        index_cache_bytes: cli.index_cache_mib << 20,
        metadata_cache_bytes: cli.metadata_cache_mib << 20,
    };
    let store = Store::open(&root, config)
        .with_context(|| format!("cannot open the store at {}", root.display()))?;
    match cli.command {
        Command::Sync {
            source,
            path,
            json,
            no_index,
        } => sync(&store, source, path, json, no_index).await,
        Command::Search {
            query,
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
            };
            let results = search::search(&store, &req).await?;
            emit(json, &results, render::search)
        }
        Command::GetSession {
            id,
            from,
            limit,
            after,
            before,
            max_bytes,
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
            let limits = SqlLimits {
                max_rows: max_rows.max(1),
                timeout: Duration::from_secs(timeout_seconds.max(1)),
                ..SqlLimits::default()
            };
            let result = sql::run_sql(&store, &query, limits).await?;
            let format = match format {
                Format::Table => SqlFormat::Table,
                Format::Json => SqlFormat::Json,
                Format::Csv => SqlFormat::Csv,
            };
            print!("{}", sql::render(&result, format)?);
            if format == SqlFormat::Table {
                println!();
            }
            eprintln!("{}", render::sql_footer(&result));
            Ok(())
        }
        Command::Status { json } => {
            let counts = store.counts().await?;
            let unindexed = match store.dataset(pond_store::schema::MESSAGES).await? {
                Some(ds) => pond_store::indexes::unindexed_rows(&ds).await?,
                None => 0,
            };
            if json {
                print_json(&serde_json::json!({
                    "store": store.root(),
                    "counts": counts,
                    "unindexed_rows": unindexed,
                }))
            } else {
                println!("store {}", store.root().display());
                println!("{}", render::counts(&counts));
                println!("full-text index: {unindexed} rows not yet indexed");
                Ok(())
            }
        }
    }
}

async fn sync(
    store: &Store,
    source: Option<Agent>,
    path: Option<PathBuf>,
    json: bool,
    no_index: bool,
) -> Result<()> {
    let wanted = source.map(|a| match a {
        Agent::ClaudeCode => SourceKind::ClaudeCode,
        Agent::Codex => SourceKind::Codex,
    });
    let sources = match path {
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
    };
    let searched: Vec<String> = sources
        .iter()
        .map(|s| s.path.display().to_string())
        .collect();
    let req = SyncRequest {
        sources,
        skip_index: no_index,
    };
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {msg}",
            )
            .expect("valid template"),
        );
        b
    });
    let mut on_progress = |p: pond_protocol::sync::SyncProgress| {
        if let Some(b) = &bar {
            b.set_length(p.bytes_total);
            b.set_position(p.bytes_done);
            b.set_message(format!(
                "{}/{} files, {} messages",
                p.files_done, p.files_total, p.messages
            ));
        }
    };
    let report = pond_workers::sync::run(store, &req, &mut on_progress).await?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if report.files_seen == 0 {
        eprintln!(
            "pond: no session files found under {}; point --path at a folder of session files",
            searched.join(", ")
        );
    }
    let peak = footprint::of_self().map(|f| f.hwm_kib).unwrap_or(0);
    if json {
        let mut v = serde_json::to_value(&report)?;
        v["peak_rss_kib"] = peak.into();
        v["store"] = serde_json::json!(store.root());
        print_json(&v)
    } else {
        print!("{}", render::sync_report(&report));
        println!(
            "store: {} ({})",
            store.root().display(),
            render::counts(&store.counts().await?)
        );
        Ok(())
    }
}
