//! A session's title derived from its first real prompt, for sessions whose client gave
//! none: the prompt cleaned of what a person did not type as a question (harness wrappers
//! such as Claude Code's `<command-name>` or `<local-command-stdout>`, IDE selections,
//! system reminders, pasted code blocks and logs, image placeholders, JSON, a slash
//! command's name), then its first line of prose, cut to about [`TITLE_COLUMNS`] columns.
//! A client's own title is shown the same way ([`shown`]).
//!
//! Every title is one line (control characters and line ends are spaces, terminal escape
//! sequences left out: a title is printed in lists where a line end would read as another
//! entry) and is masked before it is cut: cut first, a secret loses the shape the masker
//! knows it by (`ghp_` and 26 characters, a URL without its `@`) and would be shown in
//! part. Titles are masked whatever the caller reveals: a title is a label, the message
//! holds the secret.
//!
//! Derived when read, not stored: a client's own title (`sessions.title`) then always wins,
//! whenever it arrives; stores synced before titles existed have them at once; and a
//! better cleaning rule applies to every stored session without a re-sync.

/// The widest title, in terminal columns (a CJK character takes two).
pub const TITLE_COLUMNS: usize = 80;

/// The title a prompt gives, or `None` when nothing of it reads as a request (a bare slash
/// command, a pasted log, an image alone, punctuation).
pub fn from_prompt(text: &str) -> Option<String> {
    // Masked whole first too: a rule may need what is around a secret on other lines (a
    // key's name on the line before it).
    let text = pond_mask::mask(text);
    let text = without_wrappers(&text);
    let text = without_placeholders(&text);
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if let Some(t) = prose(line) {
            return shown(&t);
        }
    }
    None
}

/// A title as shown: one line, masked, cut to about [`TITLE_COLUMNS`] columns; `None` when
/// nothing but white space and control characters is left. A client's own title is shown
/// through it as it is, a derived one once its prompt is cleaned.
pub fn shown(title: &str) -> Option<String> {
    let line = one_line(title);
    (!line.is_empty()).then(|| shorten(&pond_mask::mask(&line), TITLE_COLUMNS))
}

/// `s` as one line of text, as a terminal would show it ([`plain`]), runs of white space
/// one space.
fn one_line(s: &str) -> String {
    plain(s).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `s` as plain text safe to print: an escape sequence (`ESC [ … m`, `ESC ] … BEL`) and a
/// text direction override left out, every other control character (a line end, a tab, a
/// carriage return) a space. Titles and exact search's matched lines are shown through it.
pub fn plain(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next_if(|&n| n == '[' || n == ']') {
                // A CSI sequence: parameters up to one final byte.
                Some('[') => while chars.next().is_some_and(|p| !('@'..='~').contains(&p)) {},
                // An OSC sequence: up to BEL or ESC \.
                Some(_) => {
                    while let Some(p) = chars.next() {
                        if p == '\u{7}' || (p == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                None => {}
            },
            '\u{200e}'
            | '\u{200f}'
            | '\u{61c}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}' => {}
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// How the masker's placeholder opens (`[secret:github-token:…e1f8]`).
const MASKED: &str = "[secret:";

/// Whether a tag is a harness's wrapper rather than text a person typed: Claude Code's
/// (`command-name`, `local-command-stdout`, `system-reminder`, `ide_selection`), Codex's
/// (`environment_context`, `user_instructions`) and the like all have a `-` or a `_`.
fn is_wrapper(name: &str) -> bool {
    name.contains(['-', '_']) || name.eq_ignore_ascii_case("INSTRUCTIONS")
}

/// What a slash command's arguments were: kept, they are what the person asked for.
const KEPT_WRAPPERS: [&str; 1] = ["command-args"];

/// `text` without harness wrappers (`<name …>…</name>`, the content too, but for
/// [`KEPT_WRAPPERS`]); an unclosed wrapper takes the rest of the text with it.
fn without_wrappers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(after.len());
        let name = &after[..name_len];
        let tag_end = after[name_len..].find('>').map(|i| name_len + i + 1);
        let (Some(tag_end), true) = (tag_end, !name.is_empty() && is_wrapper(name)) else {
            out.push('<');
            rest = after;
            continue;
        };
        let body = &after[tag_end..];
        let close = format!("</{name}>");
        let (inner, next) = match body.find(&close) {
            Some(i) => (&body[..i], &body[i + close.len()..]),
            None => (body, ""),
        };
        if KEPT_WRAPPERS.contains(&name) {
            out.push_str(inner);
        }
        out.push('\n');
        rest = next;
    }
    out.push_str(rest);
    out
}

/// Placeholders a client writes in a prompt's place: `[Image #1]`, `[Pasted text #2 +40
/// lines]`, `[Request interrupted by user]`.
const PLACEHOLDERS: [&str; 4] = [
    "[Image",
    "[Pasted text",
    "[Request interrupted",
    "[REDACTED",
];

fn without_placeholders(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = PLACEHOLDERS.iter().filter_map(|p| rest.find(p)).min() {
        out.push_str(&rest[..at]);
        match rest[at..].find(']') {
            Some(end) => rest = &rest[at + end + 1..],
            None => rest = "",
        }
    }
    out.push_str(rest);
    out
}

/// One line as a title, if it reads as something a person wrote: not JSON, not a log line,
/// not a bare command or flag; markdown markers and a slash command's name taken off.
fn prose(line: &str) -> Option<String> {
    let mut s = line.trim();
    s = s.trim_start_matches(['#', '>', '*', '-', ' ', '\t']).trim();
    let opens_data = s.starts_with(['{', '[', '"', '$', '|']) && !s.starts_with(MASKED);
    if opens_data || looks_like_log(s) {
        return None;
    }
    if s.starts_with("Caveat: The messages below were generated") {
        return None;
    }
    // JSON pasted or quoted after some words (an error's body): the words stay.
    if let Some(json) = s.find(" {").or_else(|| s.find("{\"")) {
        s = s[..json].trim_end();
    }
    if let Some(cmd) = s.strip_prefix('/') {
        let (name, args) = cmd.split_once(char::is_whitespace).unwrap_or((cmd, ""));
        let is_command = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, ':' | '-' | '_'));
        if is_command {
            s = args.trim();
        }
    }
    if !s.chars().any(char::is_alphanumeric) {
        return None;
    }
    Some(s.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// A line that opens with a time or a date (`11:12:12`, `2026-04-02`): a pasted log.
fn looks_like_log(s: &str) -> bool {
    let head: Vec<char> = s.chars().take(10).collect();
    head.first().is_some_and(char::is_ascii_digit)
        && head.iter().filter(|c| matches!(c, ':' | '-' | '/')).count() >= 2
        && head
            .iter()
            .all(|c| c.is_ascii_digit() || ":-/ T.".contains(*c))
}

/// Terminal columns a character takes: two for the wide East Asian ranges.
fn columns(c: char) -> usize {
    match c as u32 {
        0x1100..=0x115F
        | 0x2E80..=0xA4CF
        | 0xAC00..=0xD7A3
        | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F
        | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6
        | 0x20000..=0x3FFFD => 2,
        _ => 1,
    }
}

/// `s` in at most `max` columns: whole if it fits, else cut at the last space in its
/// second half (at a character otherwise, never inside a masked secret's placeholder) with
/// an ellipsis.
fn shorten(s: &str, max: usize) -> String {
    let mut used = 0;
    let mut cut = None;
    for (i, c) in s.char_indices() {
        used += columns(c);
        if used > max.saturating_sub(1) && cut.is_none() {
            cut = Some(i);
        }
        if used > max {
            break;
        }
    }
    if used <= max {
        return s.to_owned();
    }
    let cut = outside_placeholder(s, cut.unwrap_or(s.len()));
    let head = &s[..cut];
    let at_word_end = s[cut..].starts_with(char::is_whitespace);
    let head = match head.rfind(' ') {
        Some(space) if !at_word_end && space >= cut / 2 => &head[..space],
        _ => head,
    };
    let head = head.trim_end_matches(|c: char| c.is_whitespace() || ",.;:-".contains(c));
    format!("{head}…")
}

/// `cut`, or where the placeholder it falls inside opens.
fn outside_placeholder(s: &str, cut: usize) -> usize {
    match s[..cut].rfind(MASKED) {
        Some(open) if s[open..].find(']').is_none_or(|close| open + close >= cut) => open,
        _ => cut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_prompt_is_its_own_title() {
        assert_eq!(
            from_prompt("  Why does the parser drop the last line?\n\nIt is in src/x.rs")
                .as_deref(),
            Some("Why does the parser drop the last line?")
        );
    }

    #[test]
    fn harness_wrappers_and_commands_are_left_out() {
        let claude = "<command-message>review is running…</command-message>\n<command-name>/review</command-name>\n<command-args>the cache eviction change</command-args>";
        assert_eq!(
            from_prompt(claude).as_deref(),
            Some("the cache eviction change")
        );
        let stdout = "<local-command-stdout>Set model to opus</local-command-stdout>";
        assert_eq!(from_prompt(stdout), None);
        let caveat = "<local-command-caveat>Caveat: The messages below were generated by the user while running local commands.</local-command-caveat>";
        assert_eq!(from_prompt(caveat), None);
        let ide = "<ide_selection>The user selected the lines 1 to 3 from /a/b.go:\nfunc x() {}\n</ide_selection>\n\nfix this loop";
        assert_eq!(from_prompt(ide).as_deref(), Some("fix this loop"));
        let reminder =
            "<system-reminder>\nAs you answer, use the tools.\n</system-reminder>\nadd a test";
        assert_eq!(from_prompt(reminder).as_deref(), Some("add a test"));
        let codex = "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>";
        assert_eq!(from_prompt(codex), None);
        assert_eq!(from_prompt("/usage"), None);
        assert_eq!(from_prompt("/usage\n/usage"), None);
        assert_eq!(
            from_prompt("/plan add paging to the list").as_deref(),
            Some("add paging to the list")
        );
        // A path is not a command.
        assert_eq!(
            from_prompt("/etc/hosts is ignored").as_deref(),
            Some("/etc/hosts is ignored")
        );
        // Text that only looks like a tag stays.
        assert_eq!(
            from_prompt("is a < b here?").as_deref(),
            Some("is a < b here?")
        );
    }

    #[test]
    fn pasted_blocks_placeholders_and_json_are_left_out() {
        let fenced = "```\nerror[E0382]: borrow of moved value\n```\nwhat does this mean";
        assert_eq!(from_prompt(fenced).as_deref(), Some("what does this mean"));
        let unclosed = "```rust\nfn main() {}\n";
        assert_eq!(from_prompt(unclosed), None);
        let log = "[11:12:12:741] [597759] [INFO] connect\n2026-04-02 12:00:01 WARN no map\nwhy does rdp warn";
        assert_eq!(from_prompt(log).as_deref(), Some("why does rdp warn"));
        assert_eq!(
            from_prompt("[Image #1] what is on this screen").as_deref(),
            Some("what is on this screen")
        );
        assert_eq!(from_prompt("[Image #4]"), None);
        assert_eq!(
            from_prompt("[Request interrupted by user for tool use]"),
            None
        );
        assert_eq!(from_prompt("{\"a\": 1}"), None);
        assert_eq!(
            from_prompt("API Error: 403 {\"error\":{\"type\":\"forbidden\"}}").as_deref(),
            Some("API Error: 403")
        );
        assert_eq!(from_prompt("."), None);
        assert_eq!(
            from_prompt("## Background\nrefactor storage").as_deref(),
            Some("Background")
        );
    }

    /// A made-up GitHub token: `ghp_` and 36 letters and digits.
    const GHP: &str = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8";

    fn cols(t: &str) -> usize {
        t.chars().map(columns).sum()
    }

    #[test]
    fn secrets_are_masked_before_the_title_is_cut() {
        let a = "a".repeat(34);
        let t = from_prompt(&format!("{a} GITHUB_TOKEN={GHP} thanks")).unwrap();
        assert_eq!(t, format!("{a} GITHUB_TOKEN=[secret:github-token:…q7R8]…"));

        let aws = "wJalrXUtnFEMIK7MDENGbPxRfiCYzQ8vN2kL5pT9";
        let t = from_prompt(&format!(
            "{} aws_secret_access_key={aws} set",
            "a".repeat(30)
        ))
        .unwrap();
        assert!(!t.contains(&aws[..6]), "{t}");
        assert!(cols(&t) <= TITLE_COLUMNS, "{t}");

        let pg = "postgres://admin:Vq8zR2mK7xT4pL9wN3bY6cF1hJ5dS0gA@db.internal:5432/app";
        let t = from_prompt(&format!("{} {pg} fails", "a".repeat(40))).unwrap();
        assert!(!t.contains("Vq8zR2"), "{t}");
        assert!(cols(&t) <= TITLE_COLUMNS, "{t}");

        // A long key is masked whole, so its placeholder shows its own last four
        // characters, never four from its middle (the end of a key cut short).
        let long = format!("{GHP}Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg");
        let b = "b".repeat(20);
        let t = from_prompt(&format!("{b} token {long} ok")).unwrap();
        assert_eq!(t, format!("{b} token [secret:github-token:…i1Hg] ok"));

        // A key on the line after its name is masked too (the whole prompt is read).
        let t = from_prompt(&format!(
            "$ export AWS_SECRET_ACCESS_KEY=\n{aws} is what it says"
        ))
        .unwrap();
        assert!(
            t.starts_with("[secret:") && t.ends_with("pT9] is what it says"),
            "{t}"
        );
        let t = from_prompt(&format!("{GHP} is rejected, why?")).unwrap();
        assert_eq!(t, "[secret:github-token:…q7R8] is rejected, why?");
    }

    #[test]
    fn every_title_is_one_clean_line() {
        assert_eq!(
            shown("Release notes\n2. fake second session\r\n\tend").as_deref(),
            Some("Release notes 2. fake second session end")
        );
        assert_eq!(
            shown("\u{1b}[31mred\u{1b}[0m alert \u{1b}]0;owned\u{7}done \u{202e}txt.exe")
                .as_deref(),
            Some("red alert done txt.exe")
        );
        assert_eq!(shown(" \n\u{1b}[0m\t"), None);
        let t = shown(&"word ".repeat(40)).unwrap();
        assert!(t.ends_with('…') && cols(&t) <= TITLE_COLUMNS, "{t}");
        let t = shown(&format!("Deploy with {GHP}")).unwrap();
        assert_eq!(t, "Deploy with [secret:github-token:…q7R8]");
        // A masked client title cut inside its placeholder loses the placeholder whole.
        let t = shown(&format!("{} {GHP}", "c".repeat(70))).unwrap();
        assert_eq!(t, format!("{}…", "c".repeat(70)));
    }

    #[test]
    fn long_titles_are_cut_at_a_word_or_a_character_with_an_ellipsis() {
        let long = "please look at the way the importer handles very long lines and tell me whether it should stream them instead";
        let t = from_prompt(long).unwrap();
        assert!(t.ends_with('…'), "{t}");
        assert!(t.chars().count() <= TITLE_COLUMNS, "{t}");
        assert!(long.starts_with(t.trim_end_matches('…')), "{t}");
        assert!(!t.trim_end_matches('…').ends_with(' '));
        assert_eq!(
            t,
            "please look at the way the importer handles very long lines and tell me whether…"
        );
        let cjk = "当前的项目中关于查询开发机状态的接口的实现逻辑比较简单直接返回了是否我希望有更清晰和详细的状态信息比如的生命周期";
        let t = from_prompt(cjk).unwrap();
        assert!(t.ends_with('…'));
        let cols: usize = t.chars().map(columns).sum();
        assert!(cols <= TITLE_COLUMNS, "{cols}: {t}");
        assert!(cols >= TITLE_COLUMNS - 2, "{cols}: {t}");
        assert_eq!(from_prompt("short").as_deref(), Some("short"));
    }
}
