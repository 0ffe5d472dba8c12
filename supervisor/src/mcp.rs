//! The MCP server (`pond mcp`): four tools and two resources over stdio.
//!
//! Full-text search and get run here, on the front's capped Lance caches; SQL goes to the
//! `sql` worker through the [`Runner`]. Every caller mistake (bad or unknown arguments, a
//! non-SELECT query, an unknown id, even an unknown tool) comes back as a tool error whose
//! text says what to do, never as a protocol error: hosts treat those as a broken server.
//! Every answer is bounded text ending in a totals line.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pond_protocol::job::{BackfillRequest, SqlFormat, SqlJob};
use pond_protocol::{ErrorKind, JobError};
use pond_store::get::{self, PageFrom, PageRequest};
use pond_store::search::{self, SearchFilters, SearchMode, SearchRequest, SortBy};
use pond_store::{indexes, schema, Store, StoreError};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::footprint;
use crate::render;
use crate::runner::Runner;
use crate::workers::JobOptions;

/// Hard cap on one tool answer, whatever produced it.
pub const MAX_ANSWER_BYTES: usize = 100 * 1024;
const SEARCH_MAX_LIMIT: usize = 50;
const SQL_MAX_ROWS: u64 = 1000;
const SQL_MAX_TIMEOUT_S: u64 = 300;
const CONTEXT_MAX: usize = 20;

const SCHEMA_URI: &str = "pond://schema";
const STATUS_URI: &str = "pond://status";

const INSTRUCTIONS: &str = "pond is an archive of past AI coding-agent sessions (Claude Code and Codex): every user and assistant message, tool call and result, by project and time. Use it to recall how something was done before, find a past decision or error, or reread a session.
- Start with pond_search (full-text: words, stemmed, case- and accent-insensitive). Filter by project (a substring of the working directory), role, source_agent, or dates. Hits come grouped by session, each with a message id.
- pond_get_message shows one hit in full with its neighbours; pond_get_session reads a whole session page by page (from start or end, after/before a message id).
- pond_sql answers counting and listing questions (how many sessions per project, which tools failed most) with one read-only SELECT; read the pond://schema resource first.
- Answers are bounded; when there is more, the last line says how to get it.";

/// The front's MCP server.
#[derive(Clone)]
pub struct PondServer {
    store: Arc<Store>,
    runner: Runner,
    started: Instant,
    /// The outcome of the last background sync, for the status resource.
    last_sync: Arc<std::sync::Mutex<Option<String>>>,
}

/// Keep the archive current while serving: sync `request` in a one-shot worker at start and
/// then every `every`.
#[derive(Debug, Clone)]
pub struct AutoSync {
    pub every: Duration,
    pub request: pond_protocol::sync::SyncRequest,
}

impl PondServer {
    pub fn new(store: Arc<Store>, runner: Runner) -> PondServer {
        PondServer {
            store,
            runner,
            started: Instant::now(),
            last_sync: Arc::default(),
        }
    }
}

// ---- arguments ----------------------------------------------------------------------

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Fts,
    Vector,
    Hybrid,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Sort {
    Relevance,
    Recency,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum From {
    Start,
    End,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Format {
    Table,
    Json,
    Csv,
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

/// pond_search arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    /// Words to look for. Matching is by word (stemmed, case- and accent-insensitive); all
    /// words need not appear, messages with more of them rank higher.
    query: String,
    /// `fts` (full-text, the default): exact words. `vector`: meaning, for paraphrases and
    /// concepts when you do not know the words used. `hybrid`: both, fused. `vector` and
    /// `hybrid` need the store's embedding model (`pond model fetch`, then `pond embed`).
    #[serde(default)]
    mode: Option<Mode>,
    /// Only sessions whose project (working directory) contains this text, e.g. a repo name.
    #[serde(default)]
    project: Option<String>,
    /// Only this session.
    #[serde(default)]
    session_id: Option<String>,
    /// `claude-code` (includes its subagents), `claude-code/subagent`, or `codex`.
    #[serde(default)]
    source_agent: Option<String>,
    /// `user`, `assistant`, `system` or `tool`.
    #[serde(default)]
    role: Option<String>,
    /// From this date, inclusive: YYYY-MM-DD or RFC 3339.
    #[serde(default)]
    from_date: Option<String>,
    /// Up to this date, exclusive: YYYY-MM-DD or RFC 3339.
    #[serde(default)]
    to_date: Option<String>,
    /// `relevance` (default) or `recency` (newest first among matches).
    #[serde(default)]
    sort_by: Option<Sort>,
    /// Messages to return, 1-50 (default 10).
    #[serde(default, deserialize_with = "lenient::count")]
    #[schemars(range(min = 1, max = 50))]
    limit: Option<u64>,
}

/// pond_get_session arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GetSessionArgs {
    /// The session id (from search hits, or `SELECT id FROM sessions`).
    id: String,
    /// Read from the `start` (default) or the `end` of the session.
    #[serde(default)]
    from: Option<From>,
    /// Messages per page, 1-200 (default 50); the page also stops at a byte budget.
    #[serde(default, deserialize_with = "lenient::count")]
    #[schemars(range(min = 1, max = 200))]
    limit: Option<u64>,
    /// The page after this message id (continue forwards).
    #[serde(default)]
    after: Option<String>,
    /// The page before this message id (continue backwards).
    #[serde(default)]
    before: Option<String>,
    /// Also list the parent's messages a subagent session replays at its start (its
    /// context, left out by default: the parent session has them).
    #[serde(default)]
    include_replayed: Option<bool>,
}

/// pond_get_message arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GetMessageArgs {
    /// The message id (from search hits or a session page).
    id: String,
    /// Messages to show before it, 0-20 (default 2).
    #[serde(default, deserialize_with = "lenient::count")]
    #[schemars(range(min = 0, max = 20))]
    context_before: Option<u64>,
    /// Messages to show after it, 0-20 (default 2).
    #[serde(default, deserialize_with = "lenient::count")]
    #[schemars(range(min = 0, max = 20))]
    context_after: Option<u64>,
}

/// pond_sql arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SqlArgs {
    /// One read-only SELECT (or WITH ... SELECT) over sessions, messages, parts, records,
    /// files. See the pond://schema resource.
    query: String,
    /// Seconds before the query is stopped, 1-300 (default 30).
    #[serde(default, deserialize_with = "lenient::count")]
    #[schemars(range(min = 1, max = 300))]
    timeout_seconds: Option<u64>,
    /// Rows to return at most, 1-1000 (default 200).
    #[serde(default, deserialize_with = "lenient::count")]
    #[schemars(range(min = 1, max = 1000))]
    max_rows: Option<u64>,
    /// `table` (default), `json` or `csv`.
    #[serde(default)]
    format: Option<Format>,
}

struct ToolSpec {
    name: &'static str,
    description: &'static str,
    schema: fn() -> JsonObject,
}

fn schema_of<T: JsonSchema>() -> JsonObject {
    let v = serde_json::to_value(schemars::schema_for!(T)).expect("schema is JSON");
    match v {
        serde_json::Value::Object(o) => o,
        _ => JsonObject::new(),
    }
}

const TOOLS: [ToolSpec; 4] = [
    ToolSpec {
        name: "pond_search",
        description: "Search past agent sessions by words (BM25 full-text). Use it first to find when and where something was discussed or done: an error message, a function name, a decision. Returns hits grouped by session with a snippet, role, time, project and message id; follow up with pond_get_message (one hit in full) or pond_get_session (the whole conversation).",
        schema: schema_of::<SearchArgs>,
    },
    ToolSpec {
        name: "pond_get_session",
        description: "Read one session's messages in order, a page at a time (from the start or the end; continue with after/before a message id). Use it to reread a whole conversation found by pond_search.",
        schema: schema_of::<GetSessionArgs>,
    },
    ToolSpec {
        name: "pond_get_message",
        description: "Show one message in full (text, thinking, tool calls and results) with the messages around it. Use it to read a search hit in context.",
        schema: schema_of::<GetMessageArgs>,
    },
    ToolSpec {
        name: "pond_sql",
        description: "Run one read-only SQL SELECT over the archive (tables sessions, messages, parts, records, files; DataFusion dialect). Use it for counts, lists and aggregates that search cannot answer, e.g. sessions per project or the tools that failed most. Read the pond://schema resource for columns and examples. Capped by rows, bytes and a timeout.",
        schema: schema_of::<SqlArgs>,
    },
];

fn tool_list() -> Vec<Tool> {
    TOOLS
        .iter()
        .map(|t| {
            Tool::new(t.name, t.description, (t.schema)()).with_annotations(
                ToolAnnotations::new()
                    .read_only(true)
                    .destructive(false)
                    .idempotent(true)
                    .open_world(false),
            )
        })
        .collect()
}

// ---- answers ------------------------------------------------------------------------

/// A tool's answer: text for the caller, or a mistake (or failure) explained.
type Answer = Result<String, String>;

/// Cut `text` to the answer budget at a character boundary, saying so.
pub fn bounded(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(&format!(
        "\n[answer cut at {max} bytes; ask for less: a smaller limit, narrower filters, or fewer columns]\n"
    ));
    text
}

fn parse_args<T: DeserializeOwned>(tool: &str, args: Option<JsonObject>) -> Result<T, String> {
    let value = serde_json::Value::Object(args.unwrap_or_default());
    serde_json::from_value(value).map_err(|e| {
        let accepted = TOOLS
            .iter()
            .find(|t| t.name == tool)
            .map(|t| {
                let schema = (t.schema)();
                schema
                    .get("properties")
                    .and_then(|p| p.as_object())
                    .map(|p| p.keys().cloned().collect::<Vec<_>>().join(", "))
                    .unwrap_or_default()
            })
            .unwrap_or_default();
        format!("invalid arguments for {tool}: {e}. Accepted arguments: {accepted}.")
    })
}

fn store_mistake(e: StoreError, hint: &str) -> String {
    match e {
        StoreError::NotFound(m) | StoreError::InvalidQuery(m) if hint.is_empty() => m,
        StoreError::NotFound(m) | StoreError::InvalidQuery(m) => format!("{m}. {hint}"),
        other => internal(other),
    }
}

fn internal(e: impl std::fmt::Display) -> String {
    format!("pond could not answer: {e}. This is not a mistake in the request; retry, and if it persists run `pond status`.")
}

fn job_mistake(e: JobError, hint: &str) -> String {
    match e.kind {
        ErrorKind::Invalid | ErrorKind::NotFound => format!("{}. {hint}", e.message),
        ErrorKind::Timeout | ErrorKind::OverBudget => format!(
            "{}. Narrow the query (WHERE on session_id, project or timestamp; LIMIT; fewer columns), or raise timeout_seconds.",
            e.message
        ),
        _ => internal(e.message),
    }
}

fn clamp(v: Option<u64>, default: u64, min: u64, max: u64) -> u64 {
    v.unwrap_or(default).clamp(min, max)
}

impl PondServer {
    async fn search(&self, args: SearchArgs) -> Answer {
        if args.query.trim().is_empty() {
            return Err("the query is empty: give one or more words to look for".into());
        }
        let mode = match args.mode {
            Some(Mode::Vector) => SearchMode::Vector,
            Some(Mode::Hybrid) => SearchMode::Hybrid,
            _ => SearchMode::Fts,
        };
        let date = |d: &Option<String>, name: &str| {
            d.as_deref()
                .map(search::parse_date)
                .transpose()
                .map_err(|e| {
                    store_mistake(
                        e,
                        &format!("{name} takes YYYY-MM-DD or an RFC 3339 time, e.g. 2026-03-01"),
                    )
                })
        };
        let req = SearchRequest {
            query: args.query,
            filters: SearchFilters {
                project: args.project,
                session_id: args.session_id,
                source_agent: args.source_agent,
                role: args.role,
                from: date(&args.from_date, "from_date")?,
                to: date(&args.to_date, "to_date")?,
            },
            sort: match args.sort_by {
                Some(Sort::Recency) => SortBy::Recency,
                _ => SortBy::Relevance,
            },
            limit: clamp(args.limit, 10, 1, SEARCH_MAX_LIMIT as u64) as usize,
            mode,
        };
        let vector = if mode == SearchMode::Fts {
            None
        } else {
            let no_model = "Vector and hybrid search need the store's embedding model (`pond model fetch` or `pond model import DIR`, then `pond embed`); use mode \"fts\" (the default) meanwhile.";
            Some(
                self.runner
                    .embed_query(&req.query)
                    .await
                    .map_err(|e| match e.kind {
                        ErrorKind::NotFound | ErrorKind::Invalid => {
                            format!("{}. {no_model}", e.message)
                        }
                        _ => internal(e.message),
                    })?,
            )
        };
        let results = search::search(&self.store, &req, vector.as_ref()).await.map_err(|e| {
            store_mistake(e, "Check the filters: source_agent is claude-code, claude-code/subagent or codex; role is user, assistant, system or tool.")
        })?;
        Ok(render::search(&results))
    }

    async fn get_session(&self, args: GetSessionArgs) -> Answer {
        let req = PageRequest {
            from: match args.from {
                Some(From::End) => PageFrom::End,
                _ => PageFrom::Start,
            },
            limit: clamp(args.limit, 50, 1, 200) as usize,
            after: args.after,
            before: args.before,
            max_bytes: get::DEFAULT_PAGE_BYTES,
            include_replayed: args.include_replayed.unwrap_or(false),
        };
        if req.after.is_some() && req.before.is_some() {
            return Err("give either after or before, not both".into());
        }
        let page = get::get_session(&self.store, &args.id, &req)
            .await
            .map_err(|e| store_mistake(e, ""))?;
        Ok(render::session_page(&page))
    }

    async fn get_message(&self, args: GetMessageArgs) -> Answer {
        let before = clamp(args.context_before, 2, 0, CONTEXT_MAX as u64) as usize;
        let after = clamp(args.context_after, 2, 0, CONTEXT_MAX as u64) as usize;
        let c = get::get_message(&self.store, &args.id, before, after)
            .await
            .map_err(|e| store_mistake(e, ""))?;
        Ok(render::message_context(&c))
    }

    async fn sql(&self, args: SqlArgs) -> Answer {
        let timeout_s = clamp(args.timeout_seconds, 30, 1, SQL_MAX_TIMEOUT_S);
        let job = SqlJob {
            query: args.query,
            format: match args.format {
                Some(Format::Json) => SqlFormat::Json,
                Some(Format::Csv) => SqlFormat::Csv,
                _ => SqlFormat::Table,
            },
            max_rows: clamp(args.max_rows, 200, 1, SQL_MAX_ROWS),
            max_bytes: (MAX_ANSWER_BYTES / 2) as u64,
            timeout_ms: timeout_s * 1000,
        };
        let opts = JobOptions {
            deadline: Some(Duration::from_secs(timeout_s)),
            progress: None,
            ..JobOptions::default()
        };
        match self.runner.call(job, opts).await {
            Ok(out) => Ok(format!("{}\n{}\n", out.text.trim_end(), out.footer)),
            Err(e) => Err(job_mistake(
                e,
                "Only one read-only SELECT/WITH is allowed; tables and columns are in the pond://schema resource.",
            )),
        }
    }

    async fn call(&self, name: &str, args: Option<JsonObject>) -> Answer {
        match name {
            "pond_search" => self.search(parse_args(name, args)?).await,
            "pond_get_session" => self.get_session(parse_args(name, args)?).await,
            "pond_get_message" => self.get_message(parse_args(name, args)?).await,
            "pond_sql" => self.sql(parse_args(name, args)?).await,
            other => Err(format!(
                "there is no tool {other:?}; pond's tools are {}",
                TOOLS.map(|t| t.name).join(", ")
            )),
        }
    }

    /// The status resource: store counts, index state, this process and its workers.
    pub async fn status_text(&self) -> String {
        let mut out = format!("pond store {}\n", self.store.root().display());
        let counts = self.store.counts().await;
        match &counts {
            Ok(c) => out.push_str(&format!("{}\n", render::counts(c))),
            Err(e) => out.push_str(&format!("counts unavailable: {e}\n")),
        }
        let messages = self.store.dataset(schema::MESSAGES).await.ok().flatten();
        let unindexed = match &messages {
            Some(ds) => indexes::unindexed_rows(ds).await.ok(),
            None => None,
        };
        match unindexed {
            Some(0) => out.push_str("full-text index: covers every searchable message\n"),
            Some(n) => out.push_str(&format!(
                "full-text index: {n} searchable messages not yet indexed (still found, by scan)\n"
            )),
            None => out.push_str("full-text index: none yet (run `pond sync`)\n"),
        }
        out.push_str(&render::rowmap_state(&self.store, messages.as_ref()));
        out.push('\n');
        let searchable = counts.as_ref().map_or(0, |c| c.searchable_messages);
        out.push_str(&pond_store::vectors::describe(&self.store, searchable).await);
        out.push('\n');
        if let Some(sync) = self.last_sync.lock().expect("sync note").as_deref() {
            out.push_str(&format!("last background sync: {sync}\n"));
        }
        if let Some(saved) = self.store.report("sync") {
            out.push_str(&render::last_sync(&saved));
        }
        let me = footprint::of_self().unwrap_or_default();
        out.push_str(&format!(
            "front: pid {}, footprint {} MiB (RssAnon+VmSwap), peak RSS {} MiB, up {} s, jobs run in {}\n",
            std::process::id(),
            me.footprint_kib() >> 10,
            me.hwm_kib >> 10,
            self.started.elapsed().as_secs(),
            self.runner.mode()
        ));
        for w in self.runner.workers() {
            let state = match (w.pid, w.busy) {
                (Some(pid), true) => format!("busy, pid {pid}"),
                (Some(pid), false) => format!("idle, pid {pid}"),
                (None, _) => "not running".into(),
            };
            out.push_str(&format!(
                "worker {}: {state}{}; started {} times, {} jobs, {} crashes{}\n",
                w.kind,
                w.footprint_kib
                    .map(|k| format!(", footprint {} MiB", k >> 10))
                    .unwrap_or_default(),
                w.started,
                w.jobs_done,
                w.crashes,
                w.last_exit
                    .map(|e| format!("; last exit: {e}"))
                    .unwrap_or_default()
            ));
        }
        out
    }
}

/// The schema resource: every table's columns and types, what each holds, and worked
/// examples.
pub fn schema_text() -> String {
    let mut out = String::from("# pond SQL schema\n\nOne read-only SELECT (or WITH ... SELECT) per call, DataFusion SQL dialect. Timestamps are UTC (Timestamp(ms)); compare with `timestamp >= '2026-03-01'`.\n\n");
    let schemas = [
        (schema::SESSIONS, &*schema::SESSIONS_SCHEMA),
        (schema::MESSAGES, &*schema::MESSAGES_SCHEMA),
        (schema::PARTS, &*schema::PARTS_SCHEMA),
        (schema::RECORDS, &*schema::RECORDS_SCHEMA),
        (schema::FILES, &*schema::FILES_SCHEMA),
    ];
    for (name, s) in schemas {
        let about = pond_store::sql::TABLES
            .iter()
            .find(|(t, _)| *t == name)
            .map(|(_, d)| d.split(':').next().unwrap_or(d))
            .unwrap_or("");
        out.push_str(&format!("## {name}\n{about}.\n\n"));
        for f in s.fields() {
            out.push_str(&format!(
                "- `{}` {}{}\n",
                f.name(),
                f.data_type(),
                if f.is_nullable() { "" } else { " (never null)" }
            ));
        }
        out.push('\n');
    }
    out.push_str(EXAMPLES);
    out
}

const EXAMPLES: &str = "## Notes\n- `messages.search_text` is the conversational text (null for pure tool traffic); `searchable` is `search_text IS NOT NULL`.\n- A session lists every message line of its own file, so a message id can occur in several sessions (a subagent replays its parent's lines; a resumed session copies its predecessor's): the occurrence that owns it has `replayed = false`, the copies `replayed = true` (and no search text). Count distinct messages with `WHERE NOT replayed`.\n- `parts` holds every content block: `part_type` is text, thinking, tool_call, tool_result or image; a tool result's `call_id` joins its call.\n- `records.raw` is every source line verbatim.\n- `sessions.source_agent` is claude-code, claude-code/subagent or codex; subagent sessions have `parent_session_id`.\n\n## Examples\nSessions per project:\n```sql\nSELECT project, count(*) AS sessions, max(updated_at) AS last FROM sessions GROUP BY project ORDER BY sessions DESC LIMIT 20\n```\nThe latest sessions with titles:\n```sql\nSELECT id, title, project, updated_at FROM sessions ORDER BY updated_at DESC LIMIT 10\n```\nTools used most, and how often they failed:\n```sql\nSELECT tool_name, count(*) AS calls, sum(CASE WHEN is_error THEN 1 ELSE 0 END) AS errors FROM parts WHERE part_type = 'tool_result' GROUP BY tool_name ORDER BY calls DESC LIMIT 20\n```\nMessages per day in one project:\n```sql\nSELECT date_trunc('day', timestamp) AS day, count(*) AS n FROM messages WHERE project LIKE '%myrepo%' GROUP BY 1 ORDER BY 1\n```\nShell commands run in a session:\n```sql\nSELECT ordinal, body FROM parts WHERE session_id = '<id>' AND part_type = 'tool_call' AND tool_name IN ('Bash', 'shell') ORDER BY message_id, ordinal LIMIT 50\n```\n";

impl ServerHandler for PondServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(
            Implementation::new("pond", env!("CARGO_PKG_VERSION"))
                .with_title("pond: archive and search of past agent sessions"),
        )
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tool_list()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tool_list().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // A panic in a handler (a bug) is this call's tool error, not a dead session; the
        // panic hook logs where it happened, never the message (it may quote archived text).
        let call = std::panic::AssertUnwindSafe(self.call(&request.name, request.arguments));
        let answer = futures::FutureExt::catch_unwind(call)
            .await
            .unwrap_or_else(|_| Err(internal("an internal error (a bug, logged by pond)")));
        let result = match answer {
            Ok(text) => {
                CallToolResult::success(vec![ContentBlock::text(bounded(text, MAX_ANSWER_BYTES))])
            }
            Err(mistake) => {
                CallToolResult::error(vec![ContentBlock::text(bounded(mistake, MAX_ANSWER_BYTES))])
            }
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(SCHEMA_URI, "schema")
                .with_title("SQL schema and examples")
                .with_description("Tables, columns and worked examples for pond_sql.")
                .with_mime_type("text/markdown"),
            Resource::new(STATUS_URI, "status")
                .with_title("Store and process status")
                .with_description(
                    "Store counts, index state, the front's memory footprint and its live workers.",
                )
                .with_mime_type("text/plain"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let (text, mime) = match request.uri.as_str() {
            SCHEMA_URI => (schema_text(), "text/markdown"),
            STATUS_URI => (self.status_text().await, "text/plain"),
            other => {
                return Err(McpError::resource_not_found(
                    format!("no resource {other:?}; pond has {SCHEMA_URI} and {STATUS_URI}"),
                    None,
                ))
            }
        };
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, request.uri.clone()).with_mime_type(mime)
        ])
        .into())
    }
}

impl PondServer {
    /// Sync now and then every `auto.every`, noting each outcome for the status resource. A
    /// sync that finds the store locked (another front or a CLI sync is at it) is skipped.
    async fn auto_sync(self, auto: AutoSync) {
        loop {
            let started = chrono::Utc::now().format("%Y-%m-%d %H:%M:%S UTC");
            let opts = JobOptions {
                stall: Some(crate::workers::sync_stall()),
                ..JobOptions::default()
            };
            let note = match self.runner.call(auto.request.clone(), opts).await {
                Ok(r) => format!(
                    "{started}: {} files seen, {} messages added, {} lines skipped{}",
                    r.files_seen,
                    r.messages_added,
                    r.skipped,
                    self.embed_new(r.messages_added).await
                ),
                Err(e) if e.kind == ErrorKind::Locked => {
                    format!("{started}: skipped, another sync or rebuild held the store")
                }
                Err(e) => {
                    tracing::warn!("background sync failed: {e}");
                    format!("{started}: failed: {e}")
                }
            };
            *self.last_sync.lock().expect("sync note") = Some(note);
            tokio::time::sleep(auto.every).await;
        }
    }
}

impl PondServer {
    /// After a sync that added messages to a store with a model: embed them (in the embed
    /// worker), so vector search keeps up with what the front syncs. The note's tail.
    async fn embed_new(&self, added: u64) -> String {
        if added == 0 || !self.store.has_model() {
            return String::new();
        }
        let job = BackfillRequest { limit: 0 };
        match self.runner.call(job, JobOptions::default()).await {
            Ok(r) => format!(", {} embedded", r.embedded),
            Err(e) if e.kind == ErrorKind::Locked => {
                ", embedding skipped: another backfill held the store".into()
            }
            Err(e) => {
                tracing::warn!("background embedding failed: {e}");
                format!(", embedding failed: {e}")
            }
        }
    }
}

/// Serve MCP over stdio until stdin closes or SIGTERM/SIGINT arrives, then stop and reap
/// every worker. Returns once nothing of this server is left running but the process.
pub async fn serve_stdio(
    store: Arc<Store>,
    runner: Runner,
    auto_sync: Option<AutoSync>,
) -> Result<(), String> {
    use rmcp::ServiceExt;
    use tokio::signal::unix::{signal, SignalKind};

    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    let server = PondServer::new(store, runner.clone());
    if let Some(auto) = auto_sync {
        tokio::spawn(server.clone().auto_sync(auto));
    }
    let served = tokio::select! {
        s = server.serve(rmcp::transport::stdio_pipes()) => s,
        _ = term.recv() => { runner.shutdown().await; return Ok(()) }
        _ = int.recv() => { runner.shutdown().await; return Ok(()) }
    };
    let running = match served {
        Ok(r) => r,
        Err(e) => {
            runner.shutdown().await;
            // Stdin closed before the client said hello: nothing to serve.
            tracing::info!("MCP session did not start: {e}");
            return Ok(());
        }
    };
    let stop = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    tokio::select! {
        r = &mut waiting => { tracing::info!("MCP session ended: {r:?}"); }
        _ = term.recv() => stop.cancel(),
        _ = int.recv() => stop.cancel(),
    }
    runner.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_cut_at_a_char_boundary_with_a_note() {
        let text = "é".repeat(100);
        let cut = bounded(text.clone(), 51);
        assert!(cut.starts_with(&"é".repeat(25)));
        assert!(cut.contains("answer cut at 51 bytes"));
        assert_eq!(bounded("short".into(), 51), "short");
    }

    #[test]
    fn every_tool_has_an_object_schema_with_documented_properties() {
        for t in tool_list() {
            assert_eq!(t.input_schema["type"], "object", "{}", t.name);
            let props = t.input_schema["properties"].as_object().unwrap();
            for (name, p) in props {
                assert!(
                    p.get("description").is_some(),
                    "{}.{name} has no description: {p}",
                    t.name
                );
            }
        }
    }

    #[test]
    fn counts_may_be_numbers_or_numeric_strings() {
        let args = |v: serde_json::Value| v.as_object().cloned();
        let a: SearchArgs = parse_args(
            "pond_search",
            args(serde_json::json!({"query": "x", "limit": "7"})),
        )
        .unwrap();
        assert_eq!(a.limit, Some(7));
        let a: SearchArgs = parse_args(
            "pond_search",
            args(serde_json::json!({"query": "x", "limit": 7})),
        )
        .unwrap();
        assert_eq!(a.limit, Some(7));
        let e = parse_args::<SearchArgs>(
            "pond_search",
            args(serde_json::json!({"query": "x", "limit": -1})),
        )
        .unwrap_err();
        assert!(e.contains("Accepted arguments"), "{e}");
        let e = parse_args::<SqlArgs>("pond_sql", None).unwrap_err();
        assert!(e.contains("missing field `query`"), "{e}");
    }

    #[test]
    fn the_schema_resource_names_every_table_and_column() {
        let s = schema_text();
        for (table, _) in pond_store::sql::TABLES {
            assert!(s.contains(&format!("## {table}\n")), "{table}");
        }
        assert!(s.contains("`search_text` Utf8"));
        assert!(s.contains("```sql"));
    }
}
