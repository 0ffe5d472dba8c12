//! The `status` operation: the store's counts and the state of everything derived from it
//! (full-text index, row map, embeddings), the last sync, and for a serving front its
//! process and workers. Data only (numbers and enums, serialized as `status --json`); the
//! prose is [`crate::render::status`].

use std::path::PathBuf;
use std::time::Instant;

use pond_protocol::job::BackfillReport;
use pond_protocol::sync::SyncReport;
use pond_protocol::JobError;
use pond_store::{indexes, rowmap, schema, vectors, Dataset, Store, StoreCounts};
use serde::{Deserialize, Serialize};

use crate::footprint;
use crate::pool::WorkerStatus;
use crate::runner::Runner;

#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub store: PathBuf,
    /// None when the store could not be counted (`counts_error` says why).
    pub counts: Option<StoreCounts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counts_error: Option<String>,
    /// Searchable messages the full-text index does not cover yet (found by scan); None
    /// when there is no index to speak of (no messages, or unreadable).
    pub unindexed_rows: Option<u64>,
    pub rowmap: RowMapState,
    pub embeddings: Embeddings,
    pub last_sync: Option<LastSync>,
    /// What the serving front's own background sync last did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background_sync: Option<BackgroundSync>,
    /// The store's resident server (`pond serve`), if one runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<crate::rendezvous::ServerState>,
    /// The serving front's process and workers (None for a one-shot CLI command).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<Process>,
}

/// The row map as this process would serve it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RowMapState {
    NotBuilt,
    /// A map file, but no messages dataset to serve it over.
    NoMessages,
    Serving {
        rows: u64,
        sessions: u64,
        bytes: u64,
        /// Rows newer than the map (read from Lance until a sync rebuilds the map).
        delta_rows: u64,
        /// A sync rebuilds the map once `delta_rows` passes this.
        rebuild_past: u64,
    },
    /// The file cannot be read as a map.
    Damaged {
        error: String,
    },
    /// A readable map of other rows (another store's, or an older state).
    Foreign,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Embeddings {
    /// The store's model (None: full-text only).
    pub model: Option<String>,
    /// Vectors of that model.
    pub vectors: u64,
    pub searchable: u64,
    /// The oldest and the newest message with a vector (RFC 3339, UTC); the backfill goes
    /// newest first, so a partial one covers the recent past.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub covered_from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub covered_to: Option<String>,
}

/// The last sync any process finished on this store.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LastSync {
    pub finished_at: String,
    pub report: SyncReport,
}

/// A background sync's start time (epoch ms) and outcome.
#[derive(Debug, Clone, Serialize)]
pub struct BackgroundSync {
    pub started_ms: i64,
    pub outcome: BackgroundOutcome,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum BackgroundOutcome {
    Done {
        files_seen: u64,
        messages_added: u64,
        skipped: u64,
        embedding: Option<EmbedOutcome>,
    },
    /// Another sync or rebuild held the store.
    Locked,
    Failed {
        error: String,
    },
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum EmbedOutcome {
    Embedded { messages: u64 },
    Locked,
    Failed { error: String },
}

/// Where a serving front's jobs run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JobsRunIn {
    WorkerProcesses,
    InProcess,
}

#[derive(Debug, Clone, Serialize)]
pub struct Process {
    pub pid: u32,
    /// RssAnon + VmSwap, KiB.
    pub footprint_kib: u64,
    pub peak_rss_kib: u64,
    pub uptime_s: u64,
    pub jobs_run_in: JobsRunIn,
    pub workers: Vec<WorkerStatus>,
    /// The MCP clients this process serves.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<crate::clients::ClientStatus>,
}

/// The store's state; with `process`, the calling front's process (up since `started`)
/// and its `runner`'s workers too.
pub(crate) async fn gather(
    store: &Store,
    runner: &Runner,
    started: Instant,
    background_sync: Option<BackgroundSync>,
    process: bool,
) -> Status {
    let (counts, counts_error) = match store.counts().await {
        Ok(c) => (Some(c), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let messages = store.dataset(schema::MESSAGES).await.ok().flatten();
    let unindexed_rows = match &messages {
        Some(ds) => indexes::unindexed_rows(ds).await.ok().map(|n| n as u64),
        None => None,
    };
    let coverage = vectors::coverage(store).await;
    let span = coverage.as_ref().and_then(|c| c.span);
    let at = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
    };
    let embeddings = Embeddings {
        model: coverage.as_ref().map(|c| c.model.clone()),
        vectors: coverage.map_or(0, |c| c.vectors as u64),
        searchable: counts.as_ref().map_or(0, |c| c.searchable_messages as u64),
        covered_from: span.and_then(|(lo, _)| at(lo)),
        covered_to: span.and_then(|(_, hi)| at(hi)),
    };
    Status {
        store: store.root().to_path_buf(),
        counts,
        counts_error,
        unindexed_rows,
        rowmap: rowmap_state(store, messages.as_ref()),
        embeddings,
        last_sync: store
            .report("sync")
            .and_then(|v| serde_json::from_value(v).ok()),
        background_sync,
        // The HTTP token is for the owner's `pond status`, not for an MCP client's answer.
        server: crate::rendezvous::server_of(store.root()).map(|s| {
            let http_token = s.http_token.filter(|_| !process);
            crate::rendezvous::ServerState { http_token, ..s }
        }),
        process: process.then(|| process_of(runner, started)),
    }
}

fn process_of(runner: &Runner, started: Instant) -> Process {
    let me = footprint::of_self().unwrap_or_default();
    Process {
        pid: std::process::id(),
        footprint_kib: me.footprint_kib(),
        peak_rss_kib: me.hwm_kib,
        uptime_s: started.elapsed().as_secs(),
        jobs_run_in: match runner {
            Runner::Workers(_) => JobsRunIn::WorkerProcesses,
            Runner::InProcess(_) => JobsRunIn::InProcess,
        },
        workers: runner.workers(),
        clients: Vec::new(),
    }
}

/// The row map's state as this process serves it.
fn rowmap_state(store: &Store, messages: Option<&Dataset>) -> RowMapState {
    let path = store.rowmap_path();
    if !path.exists() {
        return RowMapState::NotBuilt;
    }
    let Some(ds) = messages else {
        return RowMapState::NoMessages;
    };
    match store.mapped(ds) {
        Some(m) => RowMapState::Serving {
            rows: m.map.rows() as u64,
            sessions: m.map.sessions() as u64,
            bytes: std::fs::metadata(&path).map_or(0, |m| m.len()),
            delta_rows: m.delta_rows as u64,
            rebuild_past: rowmap::delta_limit(m.map.rows()) as u64,
        },
        None => match rowmap::RowMap::open(&path) {
            Err(e) => RowMapState::Damaged {
                error: e.to_string(),
            },
            Ok(_) => RowMapState::Foreign,
        },
    }
}

/// A sync's report, and what the embedding after it did (if it ran).
#[derive(Debug, Clone)]
pub struct Synced {
    pub report: SyncReport,
    pub embedded: Option<Result<BackfillReport, JobError>>,
}
