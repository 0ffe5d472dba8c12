//! The MCP server (`pond mcp`): five tools and two resources over stdio, an adapter over
//! the front's operations ([`Front`]): read a call's arguments ([`args`]), call one
//! operation, render its answer ([`crate::render`]).
//!
//! Every caller mistake (bad or unknown arguments, a non-SELECT query, an unknown id, even
//! an unknown tool) comes back as a tool error whose text says what to do, never as a
//! protocol error: hosts treat those as a broken server. An error that is not the caller's
//! says so. Every answer is bounded text ending in a totals line.

use pond_protocol::ErrorKind;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use crate::background::AutoSync;
use crate::ops::{Error, Front};
use crate::params::{
    Caller, GetMessageParams, GetSessionParams, SearchParams, SearchPlan, SessionsParams,
    SqlParams, UsageParams,
};
use crate::render;

pub mod args;
pub mod http;
pub mod schema;
pub mod socket;

use args::TOOLS;

pub use crate::params::MAX_ANSWER_BYTES;

const SCHEMA_URI: &str = "pond://schema";
const STATUS_URI: &str = "pond://status";

/// What every agent reads first: what pond holds (every client of the registry) and which
/// tool answers what.
fn instructions() -> String {
    format!(
        "pond is an archive of past AI coding-agent sessions ({}): every user and assistant message, tool call and result, by project and time. Use it to recall how something was done before, find a past decision or error, or reread a session.
- Start with pond_search (full-text by default: all words must match, stemmed, case- and accent-insensitive; \"exact phrase\", -word, a OR b, prefix*, word~ for typos; mode exact or regex for tool output, paths and error codes, vector or hybrid for meaning when the store has an embedding model). Filter by project (a substring of the working directory), role, source_agent, or dates (also inline: project:pond after:2w). A query that finds nothing says why and suggests a respelling. Hits come grouped by session, each with a message id.
- pond_sessions lists sessions newest first with their titles, filtered by project, source_agent or dates: what was done in a project last week, in one call.
- pond_get_message shows one hit in full with its neighbours; pond_get_session reads a whole session page by page (from start or end, after/before a message id).
- pond_usage answers what it cost: tokens and cost per day, week, month, session, model, project or client (how much did this project cost last week?).
- pond_sql answers counting and listing questions (how many sessions per project, which tools failed most) with one read-only SELECT; read the pond://schema resource first.
- Answers are bounded; when there is more, the last line says how to get it.",
        pond_rows::clients::titles()
    )
}

/// The front's MCP server: one per MCP session.
#[derive(Clone)]
pub struct PondServer {
    front: Front,
    /// This session's entry among the front's clients (its calls are counted there), given
    /// up when the session's last clone is dropped.
    client: std::sync::Arc<crate::clients::Attached>,
}

impl PondServer {
    /// A new session of `front`'s, listed among its clients under `transport`, taking its
    /// SQL turns with the other sessions of `peer` (see [`crate::clients::Clients::attach`]).
    pub fn new(front: Front, transport: &'static str, peer: &str) -> PondServer {
        let client = std::sync::Arc::new(front.clients().attach(transport, peer));
        PondServer { front, client }
    }
}

/// A tool's answer: text for the caller, or a mistake (or failure) explained.
type Answer = Result<String, String>;

/// How to act on a tool's errors, by who must act.
struct Hints {
    /// The caller's mistake: how to fix the request.
    mistake: &'static str,
    /// A limit stopped it: how to ask for less.
    limit: &'static str,
    /// Something is not set up: what the user must do.
    unavailable: &'static str,
}

/// An operation's error as a tool answers it: the message, and what to do about it.
fn explain(e: Error, hints: &Hints) -> String {
    let hint = match e.kind {
        k if k.is_mistake() => hints.mistake,
        k if k.is_limit() => hints.limit,
        ErrorKind::Unavailable => hints.unavailable,
        _ => return internal(e.message),
    };
    if hint.is_empty() {
        e.message
    } else {
        format!("{}. {hint}", e.message)
    }
}

fn internal(e: impl std::fmt::Display) -> String {
    format!("pond could not answer: {e}. This is not a mistake in the request; retry, and if it persists run `pond status`.")
}

// The store's own messages for a bad filter or query already name what to use.
const SEARCH_HINTS: Hints = Hints {
    mistake: "",
    limit: "Narrow the search (project, session_id, dates) or lower the limit.",
    unavailable: "Vector and hybrid search need the store's embedding model (`pond model fetch` or `pond model import DIR`, then `pond embed`); use mode \"fts\" (the default) meanwhile.",
};

const SESSIONS_HINTS: Hints = Hints {
    mistake: "",
    limit: "Narrow the listing (project, source_agent, dates) or lower the limit.",
    unavailable: "",
};

const USAGE_HINTS: Hints = Hints {
    mistake: "",
    limit: "Narrow the range (from_date, to_date) or the filters (project, source_agent, model).",
    unavailable: "",
};

const GET_HINTS: Hints = Hints {
    mistake: "",
    limit: "Ask for fewer messages (limit, context_before, context_after).",
    unavailable: "",
};

const SQL_HINTS: Hints = Hints {
    mistake: "Only one read-only SELECT/WITH is allowed; tables and columns are in the pond://schema resource.",
    limit: "Narrow the query (WHERE on session_id, project or timestamp; LIMIT; fewer columns), or raise timeout_seconds.",
    unavailable: "",
};

impl PondServer {
    async fn search(&self, params: SearchParams) -> Answer {
        match params
            .plan(Caller::Agent)
            .map_err(|e| explain(e, &SEARCH_HINTS))?
        {
            SearchPlan::Literal(job) => {
                // A scan in the sql worker: it takes this peer's SQL turn, as a query would.
                let _turn = self.client.sql_turn().await;
                match self.front.grep(job).await {
                    Ok(r) => Ok(render::grep::results(&r, |n| format!("offset {n}"))),
                    Err(e) => Err(explain(e, &SEARCH_HINTS)),
                }
            }
            SearchPlan::Ranked(req) => match self.front.search(&req).await {
                Ok(results) => Ok(render::search(&results)),
                Err(e) => Err(explain(e, &SEARCH_HINTS)),
            },
        }
    }

    async fn sessions(&self, params: SessionsParams) -> Answer {
        let req = params
            .request(Caller::Agent)
            .map_err(|e| explain(e, &SESSIONS_HINTS))?;
        match self.front.sessions(&req).await {
            Ok(list) => Ok(render::sessions::list(&list)),
            Err(e) => Err(explain(e, &SESSIONS_HINTS)),
        }
    }

    async fn get_session(&self, params: GetSessionParams) -> Answer {
        let (id, req) = params.request(Caller::Agent);
        match self.front.get_session(&id, &req).await {
            Ok(page) => Ok(render::session_page(&page)),
            Err(e) => Err(explain(e, &GET_HINTS)),
        }
    }

    async fn get_message(&self, params: GetMessageParams) -> Answer {
        let (id, before, after) = params.request(Caller::Agent);
        match self.front.get_message(&id, before, after).await {
            Ok(c) => Ok(render::message_context(&c)),
            Err(e) => Err(explain(e, &GET_HINTS)),
        }
    }

    async fn sql(&self, params: SqlParams) -> Answer {
        let job = params.job(Caller::Agent);
        let _turn = self.client.sql_turn().await;
        match self.front.sql(job).await {
            Ok(out) => Ok(format!("{}\n{}\n", out.text.trim_end(), out.footer)),
            Err(e) => Err(explain(e, &SQL_HINTS)),
        }
    }

    async fn usage(&self, params: UsageParams) -> Answer {
        let format = params.format.unwrap_or_default();
        let req = params
            .request(Caller::Agent)
            .map_err(|e| explain(e, &USAGE_HINTS))?;
        let _turn = self.client.sql_turn().await;
        match self.front.usage(req).await {
            Ok(report) => Ok(render::usage::answer(&report, format)),
            Err(e) => Err(explain(e, &USAGE_HINTS)),
        }
    }

    async fn call(&self, name: &str, call_args: Option<JsonObject>) -> Answer {
        match name {
            "pond_search" => self.search(args::parse(name, call_args)?).await,
            "pond_sessions" => self.sessions(args::parse(name, call_args)?).await,
            "pond_get_session" => self.get_session(args::parse(name, call_args)?).await,
            "pond_get_message" => self.get_message(args::parse(name, call_args)?).await,
            "pond_sql" => self.sql(args::parse(name, call_args)?).await,
            "pond_usage" => self.usage(args::parse(name, call_args)?).await,
            other => Err(format!(
                "there is no tool {other:?}; pond's tools are {}",
                TOOLS.map(|t| t.name).join(", ")
            )),
        }
    }

    /// The status resource: store counts, index state, this process and its workers.
    async fn status_text(&self) -> String {
        render::status::resource(&self.front.status(true).await)
    }
}

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
        .with_instructions(instructions())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(args::tool_list()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        args::tool_list().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.client.called();
        let answered = async {
            let _turn = self.client.turn().await;
            // A panic in a handler (a bug) is this call's tool error, not a dead session; the
            // panic hook logs where it happened, never the message (it may quote archived
            // text).
            let call = std::panic::AssertUnwindSafe(self.call(&request.name, request.arguments));
            futures::FutureExt::catch_unwind(call)
                .await
                .unwrap_or_else(|_| Err(internal("an internal error (a bug, logged by pond)")))
        };
        // A call its client cancelled (`notifications/cancelled`), or whose session closed,
        // is dropped where it is: its place in the queue given up, its worker job ended
        // (the worker is killed) instead of running on to its deadline.
        let answer = tokio::select! {
            answer = answered => answer,
            _ = context.ct.cancelled() => Err("the client cancelled this call".to_owned()),
        };
        // Secrets are masked in every answer, errors included (one may quote the request).
        let shown = |text: String| {
            ContentBlock::text(render::bounded(
                render::masked(&text).into_owned(),
                MAX_ANSWER_BYTES,
            ))
        };
        let result = match answer {
            Ok(text) => CallToolResult::success(vec![shown(text)]),
            Err(mistake) => CallToolResult::error(vec![shown(mistake)]),
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
        self.client.called();
        let (text, mime) = match request.uri.as_str() {
            SCHEMA_URI => (schema::schema_text(), "text/markdown"),
            STATUS_URI => (self.status_text().await, "text/plain"),
            other => {
                return Err(McpError::resource_not_found(
                    format!("no resource {other:?}; pond has {SCHEMA_URI} and {STATUS_URI}"),
                    None,
                ))
            }
        };
        let text = render::masked(&text).into_owned();
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, request.uri.clone()).with_mime_type(mime)
        ])
        .into())
    }
}

/// Serve MCP over stdio until stdin closes or SIGTERM/SIGINT arrives, then stop and reap
/// every worker. Returns once nothing of this server is left running but the process.
pub async fn serve_stdio(front: Front, auto_sync: Option<AutoSync>) -> Result<(), String> {
    use rmcp::ServiceExt;
    use tokio::signal::unix::{signal, SignalKind};

    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    let runner = front.runner().clone();
    if let Some(auto) = auto_sync {
        tokio::spawn(front.clone().auto_sync(auto));
    }
    let server = PondServer::new(front, "stdio", "stdio");
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
