//! The status as text: `pond status` ([`status`]) and the MCP status resource ([`resource`],
//! which adds the serving front's process and workers).

use std::fmt::Write;

use crate::pool::runs_backfills;
use crate::status::{
    BackgroundOutcome, BackgroundSync, EmbedOutcome, Embeddings, JobsRunIn, Process, RowMapState,
    Status,
};

use super::reports::{counts, last_sync};

/// `pond status`.
pub fn status(s: &Status) -> String {
    let mut out = format!("store {}\n", s.store.display());
    if let Some(c) = &s.counts {
        let _ = writeln!(out, "{}", counts(c));
        by_source(&mut out, c);
    }
    let _ = writeln!(
        out,
        "full-text index: {} rows not yet indexed",
        s.unindexed_rows.unwrap_or(0)
    );
    derived(&mut out, s);
    out
}

/// The `pond://status` resource of a serving front.
pub fn resource(s: &Status) -> String {
    let mut out = format!("pond store {}\n", s.store.display());
    match (&s.counts, &s.counts_error) {
        (Some(c), _) => {
            let _ = writeln!(out, "{}", counts(c));
            by_source(&mut out, c);
        }
        (None, e) => {
            let _ = writeln!(out, "counts unavailable: {}", e.as_deref().unwrap_or("?"));
        }
    }
    let _ = match s.unindexed_rows {
        Some(0) => writeln!(out, "full-text index: covers every searchable message"),
        Some(n) => writeln!(
            out,
            "full-text index: {n} searchable messages not yet indexed (still found, by scan)"
        ),
        None => writeln!(out, "full-text index: none yet (run `pond sync`)"),
    };
    derived(&mut out, s);
    if let Some(p) = &s.process {
        process(&mut out, p);
    }
    out
}

/// Sessions per client, when there are any.
fn by_source(out: &mut String, c: &pond_store::StoreCounts) {
    if c.sessions_by_source.is_empty() {
        return;
    }
    let each: Vec<String> = c
        .sessions_by_source
        .iter()
        .map(|(agent, n)| format!("{agent} {n}"))
        .collect();
    let _ = writeln!(out, "sessions by source: {}", each.join(", "));
}

/// The row map, the embeddings, the background sync and the last sync.
fn derived(out: &mut String, s: &Status) {
    match &s.server {
        Some(srv) => {
            let _ = writeln!(
                out,
                "server: pid {}, up {} s, {} clients, footprint {} MiB, socket {}{}",
                srv.pid,
                srv.uptime_s,
                srv.clients,
                srv.footprint_kib >> 10,
                srv.socket.display(),
                srv.http
                    .as_deref()
                    .map(|u| format!(", {u}"))
                    .unwrap_or_default()
            );
            if let Some(token) = &srv.http_token {
                let _ = writeln!(
                    out,
                    "server HTTP token: {token} (masked unless --reveal-secrets; send `Authorization: Bearer TOKEN`)"
                );
            }
        }
        None => {
            let _ = writeln!(out, "server: none running (`pond mcp` starts one)");
        }
    }
    let _ = writeln!(out, "{}", rowmap(&s.rowmap));
    let _ = writeln!(out, "{}", embeddings(&s.embeddings));
    if let Some(b) = &s.background_sync {
        let _ = writeln!(out, "last background sync: {}", background(b));
    }
    if let Some(saved) = &s.last_sync {
        out.push_str(&last_sync(saved));
    }
}

pub fn rowmap(r: &RowMapState) -> String {
    let fix = "`pond rebuild --rowmap` rebuilds it (so does the next sync)";
    match r {
        RowMapState::NotBuilt => {
            "row map: not built (`pond sync` or `pond rebuild --rowmap` builds it)".into()
        }
        RowMapState::NoMessages => {
            format!("row map: present but the store has no messages; {fix}")
        }
        RowMapState::Serving {
            rows,
            sessions,
            bytes,
            delta_rows,
            rebuild_past,
        } => {
            let age = if *delta_rows > 0 {
                format!(
                    "{delta_rows} rows newer than the map (read from Lance; a sync rebuilds it past {rebuild_past})"
                )
            } else {
                "current".into()
            };
            format!(
                "row map: {rows} rows, {sessions} sessions, {:.1} MiB, {age}",
                *bytes as f64 / (1 << 20) as f64
            )
        }
        RowMapState::Damaged { error } => format!("{error}; not used; {fix}"),
        RowMapState::Foreign => {
            format!("row map: does not match the messages dataset; not used; {fix}")
        }
    }
}

pub fn embeddings(e: &Embeddings) -> String {
    let Some(name) = &e.model else {
        return "embeddings: no model (full-text only; `pond model fetch` or `pond model import DIR`, then `pond embed`, enable vector search)".into();
    };
    let span = match (&e.covered_from, &e.covered_to) {
        (Some(from), Some(to)) => format!(", messages from {} to {}", minute(from), minute(to)),
        _ => String::new(),
    };
    format!(
        "embeddings: model {name}; {} of {} searchable messages have vectors{span}{}",
        e.vectors,
        e.searchable,
        if e.vectors < e.searchable {
            " (`pond embed` adds the rest, newest first; a sync does it for what it adds)"
        } else {
            ""
        }
    )
}

/// An RFC 3339 time to the minute, as status lines show spans.
fn minute(rfc3339: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| super::clock::minute(t.timestamp_millis()))
        .unwrap_or_else(|_| rfc3339.to_owned())
}

fn background(b: &BackgroundSync) -> String {
    let started = super::time(b.started_ms);
    match &b.outcome {
        BackgroundOutcome::Done {
            files_seen,
            messages_added,
            skipped,
            embedding,
        } => format!(
            "{started}: {files_seen} files seen, {messages_added} messages added, {skipped} lines skipped{}",
            match embedding {
                None => String::new(),
                Some(EmbedOutcome::Embedded { messages }) => format!(", {messages} embedded"),
                Some(EmbedOutcome::Locked) => {
                    ", embedding skipped: another backfill held the store".into()
                }
                Some(EmbedOutcome::Failed { error }) => format!(", embedding failed: {error}"),
            }
        ),
        BackgroundOutcome::Locked => {
            format!("{started}: skipped, another sync or rebuild held the store")
        }
        BackgroundOutcome::Failed { error } => format!("{started}: failed: {error}"),
    }
}

fn process(out: &mut String, p: &Process) {
    let _ = writeln!(
        out,
        "front: pid {}, footprint {} MiB (RssAnon+VmSwap), peak RSS {} MiB, up {} s, jobs run in {}",
        p.pid,
        p.footprint_kib >> 10,
        p.peak_rss_kib >> 10,
        p.uptime_s,
        match p.jobs_run_in {
            JobsRunIn::WorkerProcesses => "worker processes",
            JobsRunIn::InProcess => "in-process (single-process baseline)",
        }
    );
    for c in &p.clients {
        let _ = writeln!(
            out,
            "client ({}): connected since {}, {} calls",
            c.transport,
            super::time(c.since_ms),
            c.calls
        );
    }
    // A kind's second worker is shown once it has run.
    for w in p.workers.iter().filter(|w| w.slot == 0 || w.started > 0) {
        let name = match w.slot {
            0 => w.kind.to_string(),
            n => format!("{} #{}", w.kind, n + 1),
        };
        let name = if runs_backfills(w.kind, w.slot) {
            format!("{name} (backfills)")
        } else {
            name
        };
        let state = match (w.pid, w.busy) {
            (Some(pid), true) => format!("busy, pid {pid}"),
            (Some(pid), false) => format!("idle, pid {pid}"),
            (None, _) => "not running".into(),
        };
        let _ = writeln!(
            out,
            "worker {name}: {state}{}; started {} times, {} jobs, {} crashes{}",
            w.footprint_kib
                .map(|k| format!(", footprint {} MiB", k >> 10))
                .unwrap_or_default(),
            w.started,
            w.jobs_done,
            w.crashes,
            w.last_exit
                .as_deref()
                .map(|e| format!("; last exit: {e}"))
                .unwrap_or_default()
        );
    }
}
