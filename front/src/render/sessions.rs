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

pub fn list(l: &SessionList) -> String {
    let mut out = String::new();
    if l.sessions.is_empty() {
        let _ = writeln!(
            out,
            "No sessions{} ({} match the filters). Widen the filters, or run `pond sync`.",
            if l.offset > 0 { " on this page" } else { "" },
            l.total
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
            "{}. {}\n   {} · {} · {span} · {} messages{}\n   session {}{}",
            l.offset + n + 1,
            s.title.as_deref().unwrap_or(UNTITLED),
            s.source_agent,
            s.project.as_deref().unwrap_or("-"),
            s.messages,
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
    let _ = write!(
        out,
        "sessions {}-{shown_to} of {}, newest first",
        l.offset + 1,
        l.total
    );
    if shown_to < l.total {
        let _ = write!(out, "; next page: offset {shown_to}");
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::size;

    #[test]
    fn sizes_read_in_their_unit() {
        assert_eq!(size(512), "512 B");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(3 << 20), "3.0 MiB");
    }
}
