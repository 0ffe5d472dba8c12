//! Renderings of the reports of jobs that change the store: sync, rebuild, embed, model.

use std::fmt::Write;

use pond_protocol::job::{BackfillReport, FileState, ForgetReport, RebuildReport, RestoreReport};
use pond_protocol::model::Manifest;
use pond_protocol::sync::SyncReport;
use pond_store::StoreCounts;

use crate::status::LastSync;
use crate::status::Synced;

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
    if r.files_forgotten + r.files_excluded > 0 {
        let _ = writeln!(
            out,
            "not stored: {} files of forgotten sessions left unread, {} files of forgotten sessions or excluded projects read and dropped",
            r.files_forgotten, r.files_excluded
        );
    }
    if r.forget_completed {
        let _ = writeln!(out, "an interrupted `pond forget` was completed first");
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
        "index: {}; {} rows not yet indexed",
        match (r.indexes_created, r.indexes_updated) {
            (0, true) => "updated".to_owned(),
            (0, false) => "unchanged".to_owned(),
            (n, _) => format!("{n} created"),
        },
        r.unindexed_rows,
    );
    let secs = |ms: u64| ms as f64 / 1000.0;
    let _ = writeln!(
        out,
        "time: {:.2} s; reading {:.2} s and writing {:.2} s (at once), indexing {:.2} s",
        secs(r.elapsed_ms),
        secs(r.read_ms),
        secs(r.write_ms),
        secs(r.index_ms)
    );
    if r.rowmap_rows > 0 {
        let _ = writeln!(
            out,
            "row map: rebuilt, {} rows in {:.2} s",
            r.rowmap_rows,
            secs(r.rowmap_ms)
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

/// The last sync's outcome as status shows it: when, what
/// it added, what it skipped and why, what it repaired, what it set aside.
pub fn last_sync(saved: &LastSync) -> String {
    let mut out = String::new();
    let r = &saved.report;
    let _ = writeln!(
        out,
        "last sync: {}: {} files seen, {} messages added",
        super::clock::time_rfc3339(&saved.finished_at),
        r.files_seen,
        r.messages_added
    );
    if r.skipped > 0 {
        skipped(&mut out, r, "  ", 5);
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

/// A sync as `pond sync` prints it: the report, what the embedding after it did, and the
/// store it went into.
pub fn synced(s: &Synced, store: &std::path::Path, counts: &StoreCounts) -> String {
    let mut out = sync_report(&s.report);
    if let Some(Ok(e)) = &s.embedded {
        let _ = writeln!(out, "{}", embedded(e));
    }
    let _ = writeln!(out, "store: {} ({})", store.display(), self::counts(counts));
    out
}

/// A sync as `pond sync --json` prints it: the report with the peak RSS under its old name,
/// the store, and the embedding report if one ran.
pub fn synced_json(s: &Synced, store: &std::path::Path) -> serde_json::Value {
    let mut v = serde_json::to_value(&s.report).expect("a report is JSON");
    v["peak_rss_kib"] = s.report.peak_kib.into();
    v["store"] = serde_json::json!(store);
    if let Some(Ok(e)) = &s.embedded {
        v["embedding"] = serde_json::to_value(e).expect("a report is JSON");
    }
    v
}

pub fn embedded(r: &BackfillReport) -> String {
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

/// `pond forget`: what went (or, for `--dry-run`, what would go) and what stays in the
/// sessions that copy it.
pub fn forgotten(r: &ForgetReport) -> String {
    forget_lines(r, "; run again without --dry-run to do it")
}

/// What a forget would do (a dry run's report), which `forget` shows before it asks.
pub fn forget_plan(r: &ForgetReport) -> String {
    forget_lines(r, "")
}

/// The sessions (the first few by id), what went or would go (then `hint`), and the copies
/// left in other sessions.
fn forget_lines(r: &ForgetReport, hint: &str) -> String {
    const LISTED: usize = 20;
    let mut out = String::new();
    if r.sessions.is_empty() {
        out.push_str("no stored session matches; nothing to forget\n");
        return out;
    }
    for (id, project) in r.sessions.iter().take(LISTED) {
        let _ = writeln!(out, "{id}  {}", project.as_deref().unwrap_or("-"));
    }
    if r.sessions.len() > LISTED {
        let _ = writeln!(out, "… and {} more sessions", r.sessions.len() - LISTED);
    }
    let what = format!(
        "{} sessions ({} messages, {} stored lines of {} files)",
        r.sessions.len(),
        r.messages,
        r.records,
        r.files
    );
    if r.dry_run {
        let _ = writeln!(out, "would forget {what}{hint}");
    } else {
        let _ = writeln!(
            out,
            "forgot {what} and {} vectors; {:.1} MiB reclaimed on disk; a sync will not store them again; {:.1} s",
            r.vectors,
            r.bytes_reclaimed as f64 / (1 << 20) as f64,
            r.elapsed_ms as f64 / 1000.0
        );
    }
    if !r.copies.is_empty() {
        let copied: u64 = r.copies.iter().map(|(_, n)| n).sum();
        let mut holders: Vec<&str> = r
            .copies
            .iter()
            .take(LISTED)
            .map(|(id, _)| id.as_str())
            .collect();
        if r.copies.len() > LISTED {
            holders.push("…");
        }
        let _ = writeln!(
            out,
            "{copied} of their messages {} in sessions {} that copy them (a resumed session begins with its predecessor's lines), searchable there; --with-copies forgets those sessions too",
            if r.dry_run { "would remain" } else { "remain" },
            holders.join(", ")
        );
    }
    out
}

/// `pond restore`: each file, what was done at its place, and where it is not the original.
pub fn restored(r: &RestoreReport) -> String {
    let mut out = String::new();
    for f in &r.files {
        let state = match (f.state, r.dry_run) {
            (FileState::Written, _) => "written",
            (FileState::Missing, true) => "would write",
            (FileState::Missing, false) => "not written",
            (FileState::Present, _) => "already there, identical",
            (FileState::Differs, _) => "exists and differs: left alone",
        };
        let _ = writeln!(
            out,
            "{}  {state} ({} lines, {} bytes)",
            f.path, f.lines, f.bytes
        );
        if f.lines_missing > 0 {
            let _ = writeln!(
                out,
                "  {} line{} of the original {} not stored (malformed, invalid UTF-8 or over the size limit): the file differs from it there",
                f.lines_missing,
                if f.lines_missing == 1 { "" } else { "s" },
                if f.lines_missing == 1 { "was" } else { "were" },
            );
        }
        if f.superseded > 0 {
            let _ = writeln!(
                out,
                "  {} stored lines of an earlier version of the file left out (the file was rewritten between syncs)",
                f.superseded
            );
        }
    }
    let done = if r.dry_run {
        FileState::Missing
    } else {
        FileState::Written
    };
    let written = r.files.iter().filter(|f| f.state == done).count();
    let _ = writeln!(
        out,
        "{} {written} of {} files of session {}{}",
        if r.dry_run {
            "would restore"
        } else {
            "restored"
        },
        r.files.len(),
        r.session,
        if r.dry_run {
            ""
        } else {
            "; resume it in its client (claude --resume ID, codex resume ID)"
        }
    );
    out
}

pub fn rebuilt(r: &RebuildReport) -> String {
    let mut out = String::new();
    if r.rederived {
        let _ = writeln!(
            out,
            "upgraded: sessions, messages and parts re-derived from the stored lines ({} second spellings of file paths merged)",
            r.paths_repaired
        );
    }
    for (step, ms) in &r.steps {
        let _ = writeln!(out, "rebuilt {step} in {:.1} s", *ms as f64 / 1000.0);
    }
    if r.rowmap_bytes > 0 {
        let _ = writeln!(
            out,
            "row map: {:.1} MiB",
            r.rowmap_bytes as f64 / (1 << 20) as f64
        );
    }
    let _ = writeln!(
        out,
        "{} messages, {} not yet indexed; {:.1} s, peak RSS of the process that rebuilt {} MiB",
        r.rows,
        r.unindexed_rows,
        r.elapsed_ms as f64 / 1000.0,
        r.peak_kib >> 10
    );
    out
}

/// `pond model show`: the manifest, and the vectors the store holds by model.
pub fn model(m: &Manifest, vectors: &[(String, usize)]) -> String {
    let mut out = serde_json::to_string_pretty(m).expect("a manifest is JSON");
    out.push('\n');
    for (model, n) in vectors {
        let _ = writeln!(out, "{n} vectors from {model}");
    }
    out
}

/// `pond model import|fetch`: what was imported, and where.
pub fn imported(m: &Manifest, dir: &std::path::Path) -> String {
    format!(
        "imported {} ({} dims, {} parameters, {} -> {}) into {}; `pond embed` embeds the archive\n",
        m.name,
        m.dims,
        m.parameters,
        m.source_dtype,
        m.dtype,
        dir.display()
    )
}
