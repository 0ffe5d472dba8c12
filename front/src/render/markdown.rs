//! A session as Markdown, for reading and sharing (`pond export --format markdown`): a
//! header, then each message under a heading with its role and time. Written page by page,
//! so a long session never has to be held whole.

use std::fmt::Write;

use pond_store::get::{MessageView, SessionInfo};

use super::time;

/// The document's start: the session's title and what it was.
pub fn header(s: &SessionInfo) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", s.title.as_deref().unwrap_or(&s.id));
    let _ = writeln!(out, "- session: `{}`", s.id);
    if let Some(p) = &s.parent_session_id {
        let _ = writeln!(out, "- subagent of: `{p}`");
    }
    let _ = writeln!(out, "- agent: {}", s.source_agent);
    if let Some(p) = &s.project {
        let _ = writeln!(out, "- project: `{p}`");
    }
    let _ = writeln!(
        out,
        "- from {} to {}",
        s.created_at.map(time).unwrap_or_else(|| "-".into()),
        s.updated_at.map(time).unwrap_or_else(|| "-".into()),
    );
    out
}

/// One message: a heading with its role, time and model, then its text as the session page
/// shows it; tool output and system text in a fenced block, since they are not Markdown.
pub fn message(m: &MessageView) -> String {
    let mut out = String::new();
    let model = m
        .model
        .as_deref()
        .map(|x| format!(" · {x}"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "\n## {} · {}{model}\n",
        role_title(&m.role),
        time(m.timestamp)
    );
    if matches!(m.role.as_str(), "user" | "assistant") {
        let _ = writeln!(out, "{}", m.text.trim_end());
    } else if !m.text.is_empty() {
        let fence = fence_for(&m.text);
        let _ = writeln!(out, "{fence}text\n{}\n{fence}", m.text.trim_end());
    }
    if m.omitted_bytes > 0 {
        let _ = writeln!(
            out,
            "\n*… {} more bytes: `pond get-message {}` shows the whole message*",
            m.omitted_bytes, m.id
        );
    }
    out
}

fn role_title(role: &str) -> String {
    let mut c = role.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// A code fence longer than any run of backticks in `text`, so the text cannot close it.
fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

#[cfg(test)]
mod tests {
    use super::fence_for;

    #[test]
    fn a_fence_outlasts_the_backticks_inside() {
        assert_eq!(fence_for("plain"), "```");
        assert_eq!(fence_for("```rust\nfn x() {}\n```"), "````");
        assert_eq!(fence_for("a ````` b"), "``````");
    }
}
