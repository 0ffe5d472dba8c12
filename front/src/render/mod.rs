//! Every answer as text, in one place: the same renderings serve the CLI and MCP tool
//! results. This module renders reads (search hits, session pages, messages); [`reports`]
//! the reports of jobs that change the store; [`status`] the status. JSON is the data's own
//! serialization ([`json`]); SQL results are rendered by the sql worker in the asked
//! [`pond_protocol::Format`], so only capped text crosses IPC.
//!
//! Every time is shown by [`clock`]: in the local zone with its offset, or in UTC.
//!
//! Each rendering ends with a totals line and, where there is more, a hint saying how to
//! get it. Budgets are bytes of output, applied here ([`bounded`]); nothing here allocates
//! beyond its budget's order.

use std::fmt::Write;

use pond_protocol::Choice;
use pond_store::get::{MessageContext, MessageView, SessionInfo, SessionPage};
use pond_store::search::SearchResults;

pub mod clock;
pub mod grep;
pub mod markdown;
pub mod reports;
pub mod sessions;
pub mod status;
pub mod usage;

pub use clock::time;
pub use reports::counts;

/// A result as pretty JSON: the data's own serialization.
pub fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).expect("pond's results serialize to JSON")
}

/// `text` as a reader may see it: every secret the masker recognizes replaced by a typed
/// placeholder (`pond_mask`). Every MCP answer and resource passes here before it is
/// bounded (masking first, so a cut never leaves the start of a secret that the whole text
/// would have masked), and so does the CLI's standard output unless `--reveal-secrets`.
pub fn masked(text: &str) -> std::borrow::Cow<'_, str> {
    pond_mask::mask(text)
}

/// Cut `text` to `max` bytes at a character boundary, saying so.
pub fn bounded(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    text.truncate(text.floor_char_boundary(max));
    text.push_str(&format!(
        "\n[answer cut at {max} bytes; ask for less: a smaller limit, narrower filters, or fewer columns]\n"
    ));
    text
}

/// ` · <title>`, or nothing for an untitled session.
fn title_suffix(title: Option<&str>) -> String {
    title.map(|t| format!(" · {t}")).unwrap_or_default()
}

/// The `n`th (from 0) session of a search's answer: its id and title, then its project and
/// client; full-text and exact search show their hits under it alike.
fn session_heading(
    out: &mut String,
    n: usize,
    id: &str,
    title: Option<&str>,
    project: Option<&str>,
    agent: &str,
) {
    let _ = writeln!(
        out,
        "{}. session {id}{}\n   project {} · {agent}",
        n + 1,
        title_suffix(title),
        project.unwrap_or("-"),
    );
}

fn indent(text: &str, pad: &str) -> String {
    text.lines()
        .map(|l| format!("{pad}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn search(r: &SearchResults) -> String {
    let mut out = String::new();
    for note in &r.notes {
        let _ = writeln!(out, "Note: {note}.");
    }
    if r.hits == 0 {
        let _ = writeln!(
            out,
            "No matches for \"{}\" among {} messages in scope.",
            r.query, r.in_scope
        );
    }
    match &r.suggestion {
        Some(s) => {
            let _ = writeln!(out, "Did you mean: {s}");
        }
        None if r.hits == 0 => {
            let _ = writeln!(
                out,
                "Try other words, word~ for spellings within two edits, prefix*, or wider filters."
            );
        }
        None => {}
    }
    if r.hits == 0 {
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
        "{} hits in {} sessions for \"{}\" ({}); {} messages in scope; sorted by {}.",
        r.hits,
        r.sessions.len(),
        r.query,
        match r.mode {
            pond_store::search::SearchMode::Fts => "full-text",
            mode => mode.name(),
        },
        r.in_scope,
        r.sort.name()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_cut_at_a_char_boundary_with_a_note() {
        let text = "é".repeat(100);
        let cut = bounded(text.clone(), 51);
        assert!(cut.starts_with(&"é".repeat(25)));
        assert!(!cut.starts_with(&"é".repeat(26)));
        assert!(cut.contains("answer cut at 51 bytes"));
        assert_eq!(bounded("short".into(), 51), "short");
    }
}
