//! Cursor's older agent transcripts in plain text (`agent-transcripts/<id>.txt`, beside or
//! instead of the `.jsonl` of newer builds). A turn starts with a line that is only `user:`
//! or `assistant:`; an assistant turn's lines are its text, with sections that start with a
//! marker at the start of a line:
//!
//! - `[Thinking] ...`: the model's reasoning, up to a blank line or the next marker;
//! - `[Tool call] NAME`: a call, its arguments on the indented lines that follow
//!   (`key: value` or `key=value`);
//! - `[Tool result] NAME`: what the call returned, up to the next marker or turn.
//!
//! Blank lines are not stored as records (a store keeps a file's lines by number, so the gap
//! is still there): sections are told apart by the line numbers, and read the same from the
//! file or from the store.

use serde_json::{Map, Value};

use crate::model::Role;

/// The turn a line starts (`user:`, `assistant:`), if it starts one.
pub(crate) fn turn(line: &str) -> Option<Role> {
    match line.trim_end() {
        "user:" => Some(Role::User),
        "assistant:" => Some(Role::Assistant),
        _ => None,
    }
}

/// Numbered lines as one text, a gap in the numbers a blank line.
pub(crate) fn joined(lines: &[(u64, String)]) -> String {
    let mut out = String::new();
    let mut last = None;
    for (n, line) in lines {
        if let Some(l) = last {
            out.push('\n');
            if *n > l + 1 {
                out.push('\n');
            }
        }
        out.push_str(line);
        last = Some(*n);
    }
    out
}

/// One section of an assistant turn: `text`, `thinking`, `tool_call` or `tool_result`, the
/// tool's name for the last two, and its lines.
#[derive(Debug, PartialEq)]
pub(crate) struct Section {
    pub kind: &'static str,
    pub name: Option<String>,
    pub lines: Vec<String>,
}

impl Section {
    /// Its lines as one text (`None`: only blank).
    pub fn text(&self) -> Option<String> {
        let text = self.lines.join("\n");
        let text = text.trim_matches('\n');
        (!text.trim().is_empty()).then(|| text.to_owned())
    }

    /// A call's arguments: an object of its `key: value` (or `key=value`) lines, else their
    /// text.
    pub fn arguments(&self) -> Value {
        let mut args = Map::new();
        for l in self.lines.iter().filter(|l| !l.trim().is_empty()) {
            let l = l.trim();
            let split = l.split_once(": ").or_else(|| l.split_once('='));
            match split {
                Some((k, v)) if !k.is_empty() && !k.contains(' ') => {
                    args.insert(k.to_owned(), Value::String(v.trim().to_owned()));
                }
                _ => return Value::String(self.lines.join("\n").trim().to_owned()),
            }
        }
        Value::Object(args)
    }
}

/// The sections of an assistant turn's lines (each with its line number; a gap in the
/// numbers is a blank line).
pub(crate) fn sections(lines: &[(u64, String)]) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::new();
    let mut last_line = None;
    for (n, line) in lines {
        let blank_before = last_line.is_some_and(|l| *n > l + 1);
        last_line = Some(*n);
        let marker = |m: &str| line.strip_prefix(m).map(|rest| rest.trim().to_owned());
        if let Some(rest) = marker("[Thinking]") {
            out.push(Section {
                kind: "thinking",
                name: None,
                lines: vec![rest],
            });
            continue;
        }
        for (m, kind) in [
            ("[Tool call]", "tool_call"),
            ("[Tool result]", "tool_result"),
        ] {
            if let Some(name) = marker(m) {
                out.push(Section {
                    kind,
                    name: Some(name).filter(|n| !n.is_empty()),
                    lines: Vec::new(),
                });
            }
        }
        if line.starts_with("[Tool call]") || line.starts_with("[Tool result]") {
            continue;
        }
        let indented = line.starts_with([' ', '\t']);
        let goes_on = match out.last() {
            Some(s) => match s.kind {
                "tool_result" | "text" => true,
                "tool_call" => indented && !blank_before,
                _ => !blank_before,
            },
            None => false,
        };
        if !goes_on {
            out.push(Section {
                kind: "text",
                name: None,
                lines: Vec::new(),
            });
        }
        let s = out.last_mut().expect("a section");
        if blank_before && !s.lines.is_empty() {
            s.lines.push(String::new());
        }
        s.lines.push(line.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(text: &str) -> Vec<(u64, String)> {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| (i as u64 + 1, l.to_owned()))
            .collect()
    }

    #[test]
    fn an_assistant_turn_in_sections() {
        let answer = "[Thinking] The pump runs dry.\nCheck the float switch.\n\nI will read the config.\n[Tool call] Read\n  path: pump.toml\n  limit=20\n[Tool result] Read\nfloat = \"inverted\"\n\nmore output\n[Tool call] Shell\n  echo a b\nThe float switch was inverted; fixed.";
        let s = sections(&numbered(answer));
        let kinds: Vec<&str> = s.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            [
                "thinking",
                "text",
                "tool_call",
                "tool_result",
                "tool_call",
                "text"
            ]
        );
        assert_eq!(
            s[0].text().as_deref(),
            Some("The pump runs dry.\nCheck the float switch.")
        );
        assert_eq!(s[2].name.as_deref(), Some("Read"));
        assert_eq!(
            s[2].arguments(),
            serde_json::json!({"path": "pump.toml", "limit": "20"})
        );
        assert_eq!(
            s[3].text().as_deref(),
            Some("float = \"inverted\"\n\nmore output")
        );
        assert_eq!(s[4].arguments(), serde_json::json!("echo a b"));
        assert_eq!(
            s[5].text().as_deref(),
            Some("The float switch was inverted; fixed.")
        );
        assert_eq!(joined(&numbered("a\nb\n\n\nc")), "a\nb\n\nc");
        assert_eq!(turn("user:"), Some(Role::User));
        assert_eq!(turn("assistant:  "), Some(Role::Assistant));
        assert_eq!(turn("user: hi"), None);
    }
}
