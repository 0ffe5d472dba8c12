//! Every answer as bounded text: the same renderings serve the CLI and MCP tool results.
//!
//! Each rendering ends with a totals line and, where there is more, a hint saying how to
//! get it. Budgets are bytes of output; nothing here allocates beyond its budget's order.

use std::fmt::Write;

use pond_protocol::sync::SyncReport;
use pond_store::get::{MessageContext, MessageView, SessionInfo, SessionPage};
use pond_store::search::SearchResults;
use pond_store::{rowmap, Dataset, Store, StoreCounts};

pub fn time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_else(|| "-".into())
}

/// ` · <title>`, or nothing for an untitled session.
fn title_suffix(title: Option<&str>) -> String {
    title.map(|t| format!(" · {t}")).unwrap_or_default()
}

fn indent(text: &str, pad: &str) -> String {
    text.lines()
        .map(|l| format!("{pad}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn search(r: &SearchResults) -> String {
    let mut out = String::new();
    if r.hits == 0 {
        let _ = writeln!(
            out,
            "No matches for {:?} among {} messages in scope. Try fewer or other words, or widen the filters.",
            r.query, r.in_scope
        );
        return out;
    }
    for (n, s) in r.sessions.iter().enumerate() {
        let _ = writeln!(
            out,
            "{}. session {}{}\n   project {} · {}",
            n + 1,
            s.session_id,
            title_suffix(s.title.as_deref()),
            s.project.as_deref().unwrap_or("-"),
            s.source_agent,
        );
        for h in &s.hits {
            let _ = writeln!(
                out,
                "   [{:.2}] {} {} {}\n{}",
                h.score,
                time(h.row.timestamp),
                h.row.role,
                h.row.message_id,
                indent(&h.snippet, "      ")
            );
        }
    }
    let _ = writeln!(
        out,
        "{} hits in {} sessions for {:?} ({}); {} messages in scope; sorted by {}.",
        r.hits,
        r.sessions.len(),
        r.query,
        match r.mode {
            pond_store::search::SearchMode::Fts => "full-text",
            pond_store::search::SearchMode::Vector => "vector",
            pond_store::search::SearchMode::Hybrid => "hybrid",
        },
        r.in_scope,
        match r.sort {
            pond_store::search::SortBy::Relevance => "relevance",
            pond_store::search::SortBy::Recency => "recency",
        }
    );
    out
}

fn session_header(out: &mut String, s: &SessionInfo) {
    let _ = writeln!(
        out,
        "session {}{}\nproject {} · {} · {} → {}{}",
        s.id,
        title_suffix(s.title.as_deref()),
        s.project.as_deref().unwrap_or("-"),
        s.source_agent,
        s.created_at.map(time).unwrap_or_else(|| "-".into()),
        s.updated_at.map(time).unwrap_or_else(|| "-".into()),
        s.parent_session_id
            .as_deref()
            .map(|p| format!(" · parent {p}"))
            .unwrap_or_default(),
    );
}

fn message(out: &mut String, m: &MessageView, marker: &str) {
    let _ = writeln!(
        out,
        "{marker}#{} {} {} {}{}{}",
        m.position,
        time(m.timestamp),
        m.role,
        m.id,
        m.model
            .as_deref()
            .map(|x| format!(" ({x})"))
            .unwrap_or_default(),
        if m.replayed {
            " [copy: another session holds the original]"
        } else {
            ""
        }
    );
    if !m.text.is_empty() {
        let _ = writeln!(out, "{}", indent(&m.text, "  "));
    }
    if m.omitted_bytes > 0 {
        let _ = writeln!(
            out,
            "  … {} more bytes: get-message {} shows the whole message",
            m.omitted_bytes, m.id
        );
    }
}

pub fn session_page(p: &SessionPage) -> String {
    let mut out = String::new();
    session_header(&mut out, &p.session);
    out.push('\n');
    for m in &p.messages {
        message(&mut out, m, "");
    }
    let (first, last) = match (p.messages.first(), p.messages.last()) {
        (Some(f), Some(l)) => (f.position, l.position),
        _ => (0, 0),
    };
    if p.messages.is_empty() {
        let _ = write!(
            out,
            "no messages in this page; the session has {}",
            p.total_messages
        );
    } else {
        let _ = write!(out, "messages {first}-{last} of {}", p.total_messages);
    }
    if p.replayed_hidden > 0 {
        let _ = write!(
            out,
            "; {} messages replayed from {} at the start left out (include_replayed shows them)",
            p.replayed_hidden,
            p.session
                .parent_session_id
                .as_deref()
                .map_or("the parent session".to_owned(), |s| format!("session {s}"))
        );
    }
    if let Some(b) = &p.more_before {
        let _ = write!(out, "; earlier: before={b}");
    }
    if let Some(a) = &p.more_after {
        let _ = write!(out, "; more: after={a}");
    }
    out.push('\n');
    out
}

pub fn message_context(c: &MessageContext) -> String {
    let mut out = String::new();
    session_header(&mut out, &c.session);
    out.push('\n');
    for m in &c.before {
        message(&mut out, m, "  ");
    }
    message(&mut out, &c.message, "> ");
    for p in &c.message.parts {
        let _ = writeln!(
            out,
            "  part {} {}{}{}{}",
            p.ordinal,
            p.part_type,
            p.tool_name
                .as_deref()
                .map(|t| format!(" tool={t}"))
                .unwrap_or_default(),
            p.call_id
                .as_deref()
                .map(|t| format!(" call={t}"))
                .unwrap_or_default(),
            match p.is_error {
                Some(true) => " error",
                _ => "",
            }
        );
        if let Some(b) = &p.body {
            let _ = writeln!(out, "{}", indent(b, "    "));
        }
    }
    for m in &c.after {
        message(&mut out, m, "  ");
    }
    let _ = writeln!(
        out,
        "message #{} of {} in the session; source {}:{}",
        c.message.position, c.total_messages, c.message.source_path, c.message.source_line
    );
    out
}

pub fn sync_report(r: &SyncReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "files: {} seen, {} new, {} grown, {} rewritten, {} unchanged, {} unreadable",
        r.files_seen,
        r.files_new,
        r.files_appended,
        r.files_rewritten,
        r.files_unchanged,
        r.files_failed
    );
    let _ = writeln!(
        out,
        "read: {} lines, {:.1} MiB",
        r.lines_read,
        r.bytes_read as f64 / (1 << 20) as f64
    );
    let _ = writeln!(
        out,
        "added: {} sessions touched, {} messages, {} parts, {} records ({} duplicate messages, {} duplicate lines not stored again)",
        r.sessions_touched, r.messages_added, r.parts_added, r.records_added, r.duplicate_messages, r.duplicate_records
    );
    if r.skipped > 0 {
        skipped(&mut out, r, "", r.skip_examples.len());
        if r.skip_examples.len() < r.skipped as usize {
            let _ = writeln!(
                out,
                "  … {} more (pond sync --json lists the first {})",
                r.skipped as usize - r.skip_examples.len(),
                r.skip_examples.len()
            );
        }
    }
    if r.replayed_messages > 0 {
        let _ = writeln!(
            out,
            "replayed: {} message lines copy messages another session holds (kept in their sessions, searched once){}",
            r.replayed_messages,
            if r.demoted_messages > 0 {
                format!("; {} earlier copies gave way to their originals", r.demoted_messages)
            } else {
                String::new()
            }
        );
    }
    if r.rederived {
        let _ = writeln!(
            out,
            "upgraded: sessions, messages and parts re-derived from the stored lines of {} files{}",
            r.rederived_files,
            if r.paths_repaired > 0 {
                format!(
                    " after merging {} second spellings of file paths",
                    r.paths_repaired
                )
            } else {
                String::new()
            }
        );
    }
    if r.recovered_interrupted_sync {
        let _ = writeln!(
            out,
            "recovered: an interrupted sync was rolled back and redone"
        );
    }
    let _ = writeln!(
        out,
        "index: {} created, {}; {} rows not yet indexed; {:.2} s",
        r.indexes_created,
        if r.indexes_updated {
            "updated"
        } else {
            "unchanged"
        },
        r.unindexed_rows,
        r.elapsed_ms as f64 / 1000.0
    );
    if r.rowmap_rows > 0 {
        let _ = writeln!(
            out,
            "row map: rebuilt, {} rows in {:.2} s",
            r.rowmap_rows,
            r.rowmap_ms as f64 / 1000.0
        );
    }
    out
}

/// The lines a sync skipped, by reason, and the first `examples` in full.
fn skipped(out: &mut String, r: &SyncReport, indent: &str, examples: usize) {
    let kinds: Vec<String> = r
        .skipped_by_reason
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    let _ = writeln!(
        out,
        "{indent}skipped: {} lines ({})",
        r.skipped,
        kinds.join(", ")
    );
    for s in r.skip_examples.iter().take(examples) {
        let _ = writeln!(out, "{indent}  {}:{}: {}", s.path, s.line, s.reason);
    }
}

/// The last sync's outcome as status shows it (from `Store::report("sync")`): when, what
/// it added, what it skipped and why, what it repaired, what it set aside.
pub fn last_sync(saved: &serde_json::Value) -> String {
    let mut out = String::new();
    let Ok(r) = serde_json::from_value::<SyncReport>(saved["report"].clone()) else {
        return out;
    };
    let _ = writeln!(
        out,
        "last sync: {}: {} files seen, {} messages added",
        saved["finished_at"].as_str().unwrap_or("?"),
        r.files_seen,
        r.messages_added
    );
    if r.skipped > 0 {
        skipped(&mut out, &r, "  ", 5);
    }
    if r.rederived {
        let _ = writeln!(
            out,
            "  upgraded: sessions, messages and parts re-derived from the stored lines of {} files ({} second spellings of file paths merged)",
            r.rederived_files, r.paths_repaired
        );
    }
    if r.recovered_interrupted_sync {
        let _ = writeln!(
            out,
            "  recovered: an interrupted sync was rolled back first"
        );
    }
    if r.demoted_messages > 0 {
        let _ = writeln!(
            out,
            "  {} stored messages were found to be copies of originals read later",
            r.demoted_messages
        );
    }
    for path in &r.set_aside {
        let _ = writeln!(
            out,
            "  set aside (the sync worker died reading it; read again once it changes): {path}"
        );
    }
    out
}

pub fn counts(c: &StoreCounts) -> String {
    format!(
        "sessions {}, messages {} ({} searchable, {} replayed copies), parts {}, records {}, files {}",
        c.sessions, c.messages, c.searchable_messages, c.replayed_messages, c.parts, c.records, c.files
    )
}

/// The row map's state as this process serves it, for status displays.
pub fn rowmap_state(store: &Store, messages: Option<&Dataset>) -> String {
    let path = store.rowmap_path();
    if !path.exists() {
        return "row map: not built (`pond sync` or `pond rebuild --rowmap` builds it)".into();
    }
    let fix = "`pond rebuild --rowmap` rebuilds it (so does the next sync)";
    let Some(ds) = messages else {
        return format!("row map: present but the store has no messages; {fix}");
    };
    match store.mapped(ds) {
        Some(m) => {
            let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
            let age = if m.delta_rows > 0 {
                format!(
                    "{} rows newer than the map (read from Lance; a sync rebuilds it past {})",
                    m.delta_rows,
                    rowmap::delta_limit(m.map.rows())
                )
            } else {
                "current".into()
            };
            format!(
                "row map: {} rows, {} sessions, {:.1} MiB, {age}",
                m.map.rows(),
                m.map.sessions(),
                bytes as f64 / (1 << 20) as f64
            )
        }
        None => match rowmap::RowMap::open(&path) {
            Err(e) => format!("{e}; not used; {fix}"),
            Ok(_) => format!("row map: does not match the messages dataset; not used; {fix}"),
        },
    }
}
