//! A page of sessions (`pond sessions`, the `pond_sessions` tool), newest first: each
//! session's title, client, project, span, message count, size and id, then a totals line
//! saying how to get the next page.

use std::fmt::Write;

use pond_store::sessions::SessionList;

use super::time;

/// What an untitled session is called: it holds no prompt a title could come from.
const UNTITLED: &str = "(no prompt)";

/// `bytes` as a person reads a size.
fn size(bytes: u64) -> String {
    match bytes {
        b if b < 1 << 10 => format!("{b} B"),
        b if b < 1 << 20 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0)),
    }
}

/// `n` and what it counts, plural but for one.
pub(super) fn count(n: usize, what: &str) -> String {
    match n {
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    }
}

pub fn list(l: &SessionList) -> String {
    let mut out = String::new();
    if l.sessions.is_empty() && l.total > 0 {
        let last_page = (l.total - 1) / l.limit.max(1) * l.limit.max(1);
        let _ = writeln!(
            out,
            "No sessions on this page: offset {} is past the last of the {} that match the filters; the last page starts at offset {last_page}.",
            l.offset,
            l.total
        );
        return out;
    }
    if l.sessions.is_empty() {
        let _ = writeln!(
            out,
            "No sessions{} (0 match the filters). Widen the filters, or run `pond sync`.",
            if l.offset > 0 { " on this page" } else { "" },
        );
        return out;
    }
    for (n, s) in l.sessions.iter().enumerate() {
        let span = match (s.first_at, s.last_at) {
            (Some(f), Some(t)) => format!("{} → {}", time(f), time(t)),
            _ => "-".to_owned(),
        };
        let _ = writeln!(
            out,
            "{}. {}\n   {} · {} · {span} · {}{}\n   session {}{}",
            l.offset + n + 1,
            s.title.as_deref().unwrap_or(UNTITLED),
            s.source_agent,
            s.project.as_deref().unwrap_or("-"),
            count(s.messages, "message"),
            s.bytes
                .map(|b| format!(" · {}", size(b)))
                .unwrap_or_default(),
            s.id,
            s.parent_session_id
                .as_deref()
                .map(|p| format!(" · parent {p}"))
                .unwrap_or_default(),
        );
    }
    let shown_to = l.offset + l.sessions.len();
    let _ = match l.sessions.len() {
        1 => write!(out, "session {shown_to} of {}", l.total),
        _ => write!(out, "sessions {}-{shown_to} of {}", l.offset + 1, l.total),
    };
    out.push_str(", newest first");
    if shown_to < l.total {
        let _ = write!(out, "; next page: offset {shown_to}");
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::{count, size};

    #[test]
    fn counts_are_plural_but_for_one() {
        assert_eq!(count(1, "message"), "1 message");
        assert_eq!(count(0, "message"), "0 messages");
        assert_eq!(count(2, "message"), "2 messages");
    }

    #[test]
    fn sizes_read_in_their_unit() {
        assert_eq!(size(512), "512 B");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(3 << 20), "3.0 MiB");
    }
}
