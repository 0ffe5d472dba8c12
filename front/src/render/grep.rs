//! Exact and regex search results: sessions newest first, each matching message with the
//! line of its match (cut and masked by the worker), a totals line and the next page.

use std::fmt::Write;

use pond_protocol::grep::GrepResults;

use super::sessions::count;
use super::{indent, session_heading, time};

/// The results; `next` says how to ask for the next page (`--offset N`, `offset: N`).
pub fn results(r: &GrepResults, next: fn(u64) -> String) -> String {
    let mut out = String::new();
    for note in &r.notes {
        let _ = writeln!(out, "Note: {note}.");
    }
    let how = how(r);
    if r.hits == 0 && r.offset > 0 && r.matched > 0 {
        let limit = u64::from(r.limit.max(1));
        let last_page = (u64::from(r.matched) - 1) / limit * limit;
        let _ = writeln!(
            out,
            "No messages on this page: offset {} is past the last of the {} that match {:?} \
             ({how}); the last page starts at offset {last_page}.",
            r.offset, r.matched, r.pattern,
        );
        return out;
    }
    if r.hits == 0 {
        let _ = writeln!(
            out,
            "No messages match {:?} ({how}); {} candidate parts checked.",
            r.pattern, r.checked,
        );
        if !r.include_tools {
            let _ = writeln!(
                out,
                "Tool calls and results were left out: include them to look there too."
            );
        }
        return out;
    }
    for (n, s) in r.sessions.iter().enumerate() {
        session_heading(
            &mut out,
            n,
            &s.session_id,
            s.title.as_deref(),
            s.project.as_deref(),
            &s.source_agent,
        );
        for h in &s.hits {
            let part = match &h.tool_name {
                Some(t) => format!("{} ({t})", h.part_type),
                None => h.part_type.clone(),
            };
            let _ = writeln!(
                out,
                "   {} {} {} · {} line {}\n{}",
                time(h.timestamp),
                h.role,
                h.message_id,
                part,
                h.line_number,
                indent(&h.line, "      ")
            );
        }
    }
    let first = r.offset + 1;
    let _ = writeln!(
        out,
        "Messages {}-{} matching {:?} ({how}), in {}, newest first.{}",
        first,
        r.offset + r.hits,
        r.pattern,
        count(r.sessions.len(), "session"),
        if r.more {
            format!(" More: {}.", next(r.offset + r.hits))
        } else {
            String::new()
        }
    );
    out
}

fn how(r: &GrepResults) -> String {
    let mode = match (r.regex, r.case_sensitive) {
        (true, _) => "regex",
        (false, true) => "exact, case-sensitive",
        (false, false) => "exact, any case",
    };
    let tools = if r.include_tools {
        "tool calls and results included"
    } else {
        "prose only"
    };
    format!("{mode}; {tools}")
}
