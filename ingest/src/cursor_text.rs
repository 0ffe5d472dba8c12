//! Cursor's older agent transcripts in plain text (`agent-transcripts/<id>.txt`, beside or
//! instead of the `.jsonl` of newer builds). A turn starts with a line that is only `user:`
//! or `assistant:`; an assistant turn's lines are its text, with sections that start with a
//! marker at the start of a line:
//!
//! - `[Thinking] ...`: the model's reasoning, up to a blank line or the next marker;
//! - `<think>` ... `</think>` (late 2025 builds): the model's reasoning, over as many lines
//!   as it takes (blank ones too), up to `</think>` or the next marker; text after
//!   `</think>` on its line is the answer's;
//! - `[Tool call] NAME`: a call, its arguments on the lines that follow up to the next marker
//!   or turn: an argument starts on an indented `key: value` (or `key=value`) line and goes
//!   on over the lines after it, as they are (a `StrReplace`'s code, whose lines may start
//!   at column 0, or be blank);
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

    /// A call's arguments: an object of its arguments (each from its `key: value` or
    /// `key=value` line through the lines before the next one), else its text.
    pub fn arguments(&self) -> Value {
        let mut args: Vec<(&str, String)> = Vec::new();
        for l in &self.lines {
            let seen = |k: &str| args.iter().any(|(a, _)| *a == k);
            match argument(l, !args.is_empty()).filter(|(k, _)| !seen(k)) {
                Some((k, v)) => args.push((k, v.to_owned())),
                None => match args.last_mut() {
                    Some((_, v)) => {
                        v.push('\n');
                        v.push_str(l);
                    }
                    None if l.trim().is_empty() => {}
                    None => return Value::String(self.lines.join("\n").trim().to_owned()),
                },
            }
        }
        let args: Map<String, Value> = args
            .into_iter()
            .map(|(k, v)| (k.to_owned(), Value::String(v.trim().to_owned())))
            .collect();
        Value::Object(args)
    }
}

/// An argument's first line, `key: value` or `key=value` indented, as its key and the start
/// of its value. Once a call has an argument, only a line indented as Cursor indents its
/// keys (two spaces) starts another: a deeper one is code of the value before.
fn argument(line: &str, after_another: bool) -> Option<(&str, &str)> {
    let body = line.trim_start_matches([' ', '\t']);
    let indent = &line[..line.len() - body.len()];
    if indent.is_empty() || (after_another && indent != "  ") {
        return None;
    }
    let is_key = |k: &str| {
        k.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let body = body.trim_end_matches(['\r']);
    [body.split_once(": "), body.split_once('=')]
        .into_iter()
        .flatten()
        .chain(body.strip_suffix(':').map(|k| (k, "")))
        .find(|(k, _)| is_key(k))
}

/// The sections of an assistant turn's lines (each with its line number; a gap in the
/// numbers is a blank line).
pub(crate) fn sections(lines: &[(u64, String)]) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::new();
    let mut last_line = None;
    // Inside `<think>`, not yet at its `</think>`; and just past a `</think>` (what follows
    // is not thinking, as the line after `[Thinking]` is).
    let mut thinking = false;
    let mut thought = false;
    for (n, line) in lines {
        let blank_before = last_line.is_some_and(|l| *n > l + 1);
        last_line = Some(*n);
        let marker = |m: &str| line.strip_prefix(m).map(|rest| rest.trim().to_owned());
        let is_marker = ["[Thinking]", "[Tool call]", "[Tool result]"]
            .iter()
            .any(|m| line.starts_with(m));
        let mut line = line.as_str();
        if !thinking && !is_marker {
            if let Some(rest) = line.trim_start().strip_prefix("<think>") {
                out.push(section("thinking", None));
                (thinking, line) = (true, rest);
            }
        }
        if thinking && !is_marker {
            let (inside, after) = match line.find("</think>") {
                Some(at) => (&line[..at], Some(line[at + "</think>".len()..].trim())),
                None => (line, None),
            };
            if !inside.is_empty() {
                let s = out.last_mut().expect("the thinking section");
                push_line(s, blank_before, inside);
            }
            match after {
                None => continue,
                Some("") => {
                    (thinking, thought) = (false, true);
                    continue;
                }
                // What follows `</think>` on its line: the answer's text.
                Some(rest) => {
                    thinking = false;
                    out.push(section("text", None));
                    push_line(out.last_mut().expect("a section"), false, rest);
                    continue;
                }
            }
        }
        thinking = false;
        let after_think = std::mem::take(&mut thought);
        if let Some(rest) = marker("[Thinking]") {
            out.push(Section {
                lines: vec![rest],
                ..section("thinking", None)
            });
            continue;
        }
        if let Some(name) = marker("[Tool call]") {
            out.push(section("tool_call", Some(name)));
            continue;
        }
        if let Some(name) = marker("[Tool result]") {
            out.push(section("tool_result", Some(name)));
            continue;
        }
        let goes_on = match out.last() {
            // A call's input and a result run to the next marker.
            Some(s) => match s.kind {
                "tool_result" | "text" | "tool_call" => true,
                _ => !blank_before && !after_think,
            },
            None => false,
        };
        if !goes_on {
            out.push(section("text", None));
        }
        push_line(out.last_mut().expect("a section"), blank_before, line);
    }
    out
}

/// A section of `kind` with no lines yet (a tool's name given when there is one).
fn section(kind: &'static str, name: Option<String>) -> Section {
    Section {
        kind,
        name: name.filter(|n| !n.is_empty()),
        lines: Vec::new(),
    }
}

/// Add `line` to `s`, after a blank line when one came before it (not at its start).
fn push_line(s: &mut Section, blank_before: bool, line: &str) {
    if blank_before && !s.lines.is_empty() {
        s.lines.push(String::new());
    }
    s.lines.push(line.to_owned());
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
        let answer = "[Thinking] The pump runs dry.\nCheck the float switch.\n\nI will read the config.\n[Tool call] Read\n  path: pump.toml\n  limit=20\n[Tool result] Read\nfloat = \"inverted\"\n\nmore output\n[Tool call] Shell\n  echo a b\n[Thinking] Inverted.\n\nThe float switch was inverted; fixed.";
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
                "thinking",
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
            s[6].text().as_deref(),
            Some("The float switch was inverted; fixed.")
        );
        assert_eq!(joined(&numbered("a\nb\n\n\nc")), "a\nb\n\nc");
        assert_eq!(turn("user:"), Some(Role::User));
        assert_eq!(turn("assistant:  "), Some(Role::Assistant));
        assert_eq!(turn("user: hi"), None);
    }

    #[test]
    fn thinking_in_think_tags_over_many_lines() {
        let answer = "<think>\nThe gate latch sticks.\n\n1. Read the latch code\n   - Latch: closed\n</think>\nThe latch sticks; I will read its code.\n\n[Tool call] Read\n  path: gate/latch.py\n\n[Tool result] Read";
        let s = sections(&numbered(answer));
        let kinds: Vec<&str> = s.iter().map(|s| s.kind).collect();
        assert_eq!(kinds, ["thinking", "text", "tool_call", "tool_result"]);
        assert_eq!(
            s[0].text().as_deref(),
            Some("The gate latch sticks.\n\n1. Read the latch code\n   - Latch: closed")
        );
        assert_eq!(
            s[1].text().as_deref(),
            Some("The latch sticks; I will read its code.")
        );
        // On one line, with the answer after it; left open, up to the next marker.
        let s = sections(&numbered(
            "<think>Short.</think> Done.\n<think>open\nstill\n[Tool call] Ls",
        ));
        let got: Vec<(&str, Option<String>)> = s.iter().map(|s| (s.kind, s.text())).collect();
        assert_eq!(
            got,
            [
                ("thinking", Some("Short.".into())),
                ("text", Some("Done.".into())),
                ("thinking", Some("open\nstill".into())),
                ("tool_call", None)
            ]
        );
        // A turn of thinking only has no text.
        let s = sections(&numbered("<think>\nOnly this.\n</think>"));
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].kind, "thinking");
    }

    #[test]
    fn a_calls_arguments_run_over_lines_at_column_zero_to_the_next_marker() {
        let answer = "[Tool call] StrReplace\n  path: /srv/gate/latch.py\n  old_string: def close(self):\nself.open = False\n\n    return self\n  new_string: def close(self):\n    self.open = False\n  limit=3\n\n[Tool result] StrReplace";
        let s = sections(&numbered(answer));
        let kinds: Vec<&str> = s.iter().map(|s| s.kind).collect();
        assert_eq!(kinds, ["tool_call", "tool_result"]);
        assert_eq!(
            s[0].arguments(),
            serde_json::json!({
                "path": "/srv/gate/latch.py",
                "old_string": "def close(self):\nself.open = False\n\n    return self",
                "new_string": "def close(self):\n    self.open = False",
                "limit": "3"
            })
        );
        // A key line twice: the second is the value's (code that looks like an argument).
        let twice = Section {
            kind: "tool_call",
            name: None,
            lines: vec!["  code: a".into(), "  code: b".into()],
        };
        assert_eq!(
            twice.arguments(),
            serde_json::json!({"code": "a\n  code: b"})
        );
    }
}
