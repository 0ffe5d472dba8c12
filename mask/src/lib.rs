//! Secrets out of answers. pond stores every line of every session as it was written, keys
//! and passwords included; before any of it reaches a reader (an MCP answer, which goes on
//! into a model's context, or the CLI), [`mask`] replaces each secret it recognizes with a
//! typed placeholder such as `[secret:github-token:…e1f8]`: what it was stays clear, the
//! secret does not. The stored data is never changed.
//!
//! The rules are data ([`rules::RULES`]): fixed-prefix provider keys, private key blocks,
//! credentials in URLs, and values assigned to secret-like names that look random (an
//! entropy threshold). What this crate is not: a guarantee. A secret with no recognizable
//! shape or name (a bare password in prose) passes.

pub mod rules;

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;
pub use rules::{Check, Rule, RULES};

struct Compiled {
    rule: &'static Rule,
    regex: Regex,
}

static COMPILED: LazyLock<Vec<Compiled>> = LazyLock::new(|| {
    RULES
        .iter()
        .map(|rule| Compiled {
            rule,
            // Word boundaries are ASCII: a Unicode `\b` sends the fast engines back to the
            // slow one on any text that is not ASCII, and every rule's edges are ASCII.
            regex: Regex::new(&rule.pattern.replace(r"\b", r"(?-u:\b)"))
                .expect("every rule's pattern compiles (tested)"),
        })
        .collect()
});

/// One secret found: its byte range and the rule that found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    pub start: usize,
    pub end: usize,
    pub rule: &'static str,
}

/// Every secret in `text`, in order, none overlapping (where two rules claim overlapping
/// text, the one that starts first wins, then the rule listed first).
///
/// The rules read the text as it is and, where it holds escapes, once more with them read
/// as spaces (`escapes_as_spaces`): the second reading finds a key right after an escape,
/// the first a value with an escape inside (`p%40ss` in a URL's password). A rule's two
/// claims at one place keep the longer.
pub fn find(text: &str) -> Vec<Found> {
    let spaced = escapes_as_spaces(text);
    let readings = match &spaced {
        Cow::Borrowed(_) => vec![text],
        Cow::Owned(s) => vec![text, s.as_str()],
    };
    let mut all: Vec<(Found, usize)> = Vec::new();
    for (i, c) in COMPILED.iter().enumerate() {
        for reading in &readings {
            all.extend(find_by(c, reading).into_iter().map(|f| (f, i)));
        }
    }
    all.sort_by_key(|(f, i)| (f.start, *i, std::cmp::Reverse(f.end)));
    let mut kept: Vec<Found> = Vec::with_capacity(all.len());
    for (f, _) in all {
        if kept.last().is_none_or(|k| f.start >= k.end) {
            kept.push(f);
        }
    }
    kept
}

/// `text` as the rules read it: each escape that stands for white space or another
/// character turned into as many spaces, so every offset holds for `text` too: JSON's and
/// a shell's `\n`, `\t`, `\r`, `\uXXXX`, a terminal's colour and cursor codes
/// (`ESC[32m`, as coloured tool output carries them) and a URL's `%XX`. A secret right after
/// one (`"a\nghp_…"`, `printf 'a\nghp_…'`, `ESC[32mghp_…`, `token%3Dghp_…`) follows a
/// letter or digit, where the rules' word boundary (`\b`) does not hold; after a space it
/// does.
fn escapes_as_spaces(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let hex = |from: usize, n: usize| {
        bytes.len() >= from + n && bytes[from..from + n].iter().all(u8::is_ascii_hexdigit)
    };
    let escape_at = |i: usize| match (bytes[i], bytes.get(i + 1)) {
        (b'\\', Some(b'n' | b't' | b'r')) => 2,
        (b'\\', Some(b'u')) if hex(i + 2, 4) => 6,
        (b'%', _) if hex(i + 1, 2) => 3,
        // A CSI sequence: ESC [, parameters, one final byte.
        (0x1b, Some(b'[')) => {
            let params = bytes[i + 2..]
                .iter()
                .take_while(|b| matches!(b, b'0'..=b'9' | b';' | b'?' | b':'))
                .count();
            match bytes.get(i + 2 + params) {
                Some(0x40..=0x7e) => 3 + params,
                _ => 2 + params,
            }
        }
        _ => 0,
    };
    let (mut out, mut at): (Option<Vec<u8>>, usize) = (None, 0);
    while let Some(i) = text[at..].find(['\\', '%', '\x1b']).map(|p| at + p) {
        let n = escape_at(i);
        if n > 0 {
            out.get_or_insert_with(|| bytes.to_vec())[i..i + n].fill(b' ');
        }
        at = i + n.max(1);
    }
    match out {
        // Only ASCII bytes were replaced, by ASCII: still UTF-8.
        Some(v) => Cow::Owned(String::from_utf8(v).expect("ASCII replaced by ASCII")),
        None => Cow::Borrowed(text),
    }
}

fn find_by(c: &Compiled, text: &str) -> Vec<Found> {
    let mut out = Vec::new();
    // Matches first (the fast engines), then the groups of each match alone.
    for whole in c.regex.find_iter(text) {
        let m = if c.rule.group == 0 {
            whole
        } else {
            let caps = c.regex.captures_at(&text[..whole.end()], whole.start());
            match caps.and_then(|caps| caps.get(c.rule.group)) {
                Some(m) => m,
                None => whole,
            }
        };
        let quoted = text[..m.start()].ends_with(['"', '\'', '`']);
        if passes(c.rule.check, m.as_str(), quoted) {
            out.push(Found {
                start: m.start(),
                end: m.end(),
                rule: c.rule.name,
            });
        }
    }
    out
}

/// `text` with every secret replaced by its placeholder; borrowed when there is none.
pub fn mask(text: &str) -> Cow<'_, str> {
    let found = find(text);
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in found {
        out.push_str(&text[at..f.start]);
        out.push_str(&placeholder(f.rule, &text[f.start..f.end]));
        at = f.end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// `[secret:RULE]`, with `:…` and the last four characters for a long secret of a rule
/// that shows them.
fn placeholder(rule: &'static str, secret: &str) -> String {
    let shows_tail = RULES.iter().any(|r| r.name == rule && r.tail);
    let chars = secret.chars().count();
    if shows_tail && chars >= 20 {
        let tail: String = secret.chars().skip(chars - 4).collect();
        format!("[secret:{rule}:…{tail}]")
    } else {
        format!("[secret:{rule}]")
    }
}

/// Whether a match passes its rule's check; `quoted`: the value follows a quote.
fn passes(check: Check, value: &str, quoted: bool) -> bool {
    match check {
        Check::Shape => true,
        Check::NotPlaceholder => !placeholder_like(value),
        Check::Random => looks_random(value, quoted),
    }
}

/// A template's stand-in for a secret rather than one: `${X}`, `<password>`, `xxxx`,
/// `your-key-here`, or a placeholder of ours.
fn placeholder_like(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    v.starts_with(['$', '%', '{', '<', '*', '['])
        || v.contains("${")
        || [
            "xxxx",
            "****",
            "...",
            "…",
            "your",
            "example",
            "placeholder",
            "changeme",
        ]
        .iter()
        .any(|p| lower.contains(p))
        || ["password", "pass", "secret", "token"].contains(&lower.as_str())
}

/// A value that reads as generated rather than written: long enough, letters mixed with
/// digits or symbols (an identifier such as `self.tokenizer` or `CancellationToken` has
/// neither), not a path, URL or UUID, not code (names with a digit or two at most: a dotted
/// path such as `info.s3Key`, or outside quotes a name such as `s3Secret`), and with enough entropy
/// per character.
fn looks_random(v: &str, quoted: bool) -> bool {
    if v.len() < 8 || placeholder_like(v) {
        return false;
    }
    let letters = v.chars().any(|c| c.is_ascii_alphabetic());
    let digits = v.chars().any(|c| c.is_ascii_digit());
    let symbols = v
        .chars()
        .any(|c| c.is_ascii_punctuation() && !matches!(c, '_' | '-' | '.' | '/'));
    if !(letters && (digits || symbols)) {
        return false;
    }
    let path = v.starts_with(['/', '~']) || v.starts_with("./") || v.starts_with("../");
    if path || v.contains("://") || is_uuid(v) {
        return false;
    }
    let names: Vec<&str> = v.split('.').collect();
    let is_name = |n: &&str| {
        n.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let few_digits = v.chars().filter(char::is_ascii_digit).count() <= 2;
    if few_digits && names.iter().all(is_name) && (names.len() > 1 || !quoted) {
        return false;
    }
    let threshold = if v.len() >= 12 { 3.0 } else { 2.5 };
    entropy(v) >= threshold
}

fn is_uuid(v: &str) -> bool {
    let groups: Vec<&str> = v.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Shannon entropy of `v`'s characters, in bits per character.
fn entropy(v: &str) -> f64 {
    let mut counts = std::collections::HashMap::<char, usize>::new();
    for c in v.chars() {
        *counts.entry(c).or_default() += 1;
    }
    let n = v.chars().count() as f64;
    counts
        .values()
        .map(|&k| {
            let p = k as f64 / n;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rule's example with its secret marked by « and »: the text, and the secret's range.
    fn marked(example: &str) -> (String, std::ops::Range<usize>) {
        let start = example.find('«').expect("a hit marks its secret with «");
        let text = example.replacen('«', "", 1);
        let end = text.find('»').expect("a hit marks its secret's end with »");
        (text.replacen('»', "", 1), start..end)
    }

    #[test]
    fn every_rule_finds_its_hits_exactly_and_leaves_its_near_misses() {
        for c in COMPILED.iter() {
            let rule = c.rule;
            assert!(
                !rule.hits.is_empty() && !rule.misses.is_empty(),
                "{}",
                rule.name
            );
            for hit in rule.hits {
                let (text, secret) = marked(hit);
                let found = find_by(c, &text);
                assert_eq!(
                    found.iter().map(|f| f.start..f.end).collect::<Vec<_>>(),
                    vec![secret.clone()],
                    "{}: {text:?}",
                    rule.name
                );
                let masked = mask(&text);
                assert!(
                    !masked.contains(&text[secret.clone()]),
                    "{}: {masked}",
                    rule.name
                );
                assert!(
                    masked.contains(&format!("[secret:{}", rule.name)),
                    "{masked}"
                );
                assert_eq!(mask(&masked), masked, "masking twice changes nothing");
            }
            for miss in rule.misses {
                assert_eq!(find_by(c, miss), vec![], "{}: {miss:?}", rule.name);
            }
        }
    }

    /// `text` as a JSON string's body: what a JSON line, `--format json` or a tool call's
    /// input shows.
    fn json_body(text: &str) -> String {
        let mut out = String::new();
        for c in text.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c => out.push(c),
            }
        }
        out
    }

    #[test]
    fn a_secret_right_after_an_escape_is_masked_in_json_and_in_shell_text() {
        for rule in RULES {
            for hit in rule.hits {
                let (text, secret) = marked(hit);
                let (before, key, after) = (
                    &text[..secret.start],
                    &text[secret.clone()],
                    &text[secret.end..],
                );
                // Right before the secret where the secret alone is one (a key with its
                // prefix), else right before the text that makes it one (`NAME=value`).
                let alone = find(key)
                    .first()
                    .is_some_and(|f| f.end - f.start == key.len());
                for escape in ["\n", "\t", "\r", "\"", "\\n", "\\t"] {
                    let decoded = match alone {
                        true => format!("{before}{escape}{key}{after}"),
                        false => format!("{escape}{text}"),
                    };
                    let encoded = json_body(&decoded);
                    let masked = mask(&encoded);
                    assert!(
                        !masked.contains(&json_body(key)),
                        "{}: {escape:?} before the secret: {masked}",
                        rule.name
                    );
                    if escape.starts_with('\\') {
                        assert!(
                            !mask(&decoded).contains(key),
                            "{}: {escape:?} in the text: {decoded}",
                            rule.name
                        );
                    }
                }
            }
        }
        assert_eq!(
            mask(r#"{"command":"printf 'x\\nghp_sMehGAkWvj7FAc9QeWJKY40uvSwMFLZDe1f8\\n'"}"#),
            r#"{"command":"printf 'x\\n[secret:github-token:…e1f8]\\n'"}"#,
            "the escape stays, only the secret goes"
        );
        assert_eq!(
            mask(r"a\u0027AKIAUJZDE8GXD6NCF10E"),
            r"a\u0027[secret:aws-access-key:…F10E]"
        );
    }

    #[test]
    fn a_secret_after_a_terminal_colour_or_a_url_escape_is_masked() {
        for rule in RULES {
            for hit in rule.hits {
                let (text, secret) = marked(hit);
                let key = &text[secret.clone()];
                let alone = find(key)
                    .first()
                    .is_some_and(|f| f.end - f.start == key.len());
                if !alone {
                    continue;
                }
                let (before, after) = (&text[..secret.start], &text[secret.end..]);
                for escape in ["\x1b[32m", "\x1b[1;31m", "\x1b[0m", "\x1b[K", "%3D", "%3a"] {
                    let shown = format!("{before}{escape}{key}\x1b[0m{after}");
                    assert!(
                        !mask(&shown).contains(key),
                        "{}: {escape:?} before the secret: {shown:?}",
                        rule.name
                    );
                }
            }
        }
        assert_eq!(
            mask("\x1b[32mghp_sMehGAkWvj7FAc9QeWJKY40uvSwMFLZDe1f8\x1b[0m done"),
            "\x1b[32m[secret:github-token:…e1f8]\x1b[0m done",
            "the colour codes stay, only the secret goes"
        );
        // An escape inside a value is the value's: the whole of it is masked.
        for text in [
            "postgres://app:p%40ssw0rd9x@db.internal:5432/app",
            "API_KEY=Zk3%2Bq9Lm2Rt8Vw4Ky6Nb1Hc3",
        ] {
            let masked = mask(text);
            assert!(
                !masked.contains("ssw0rd9x") && !masked.contains("Vw4Ky6Nb1Hc3"),
                "{text} -> {masked}"
            );
        }
        // A percent sign that escapes nothing is text.
        assert_eq!(mask("100% done, 5%off"), "100% done, 5%off");
    }

    #[test]
    fn identifiers_that_look_random_are_left_alone() {
        let innocent = [
            "commit 9fc73e3a1b2c4d5e6f708192a3b4c5d6e7f80912 on main",
            "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "\"sessionId\":\"3f1e2d4c-5b6a-4978-8a9b-0c1d2e3f4a5b\",\"uuid\":\"7e0c7d4a-1b2c-4d5e-8f90-a1b2c3d4e5f6\"",
            "\"id\":\"msg_01XFDUDYJgAACzvnptvVoYEL\",\"tool_use_id\":\"toolu_01A09q90qw90lq917835lq9\"",
            "\"data\":\"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==\"",
            "\"media_type\":\"image/png\",\"data\":\"/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAAgGBgcGBQgHBwcJCQgKDAsKCQsKDAsQDBAQEBAREhMSExUYFQ==\"",
            "integrity sha512-Xk9mQ2vL8pZr8kQ2mX9vLp4TnWJOF8EFd0Nhcy1a1b2c3d4e5f6g7h8i9j0==",
            "docker pull ghcr.io/owner/image@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        ];
        for text in innocent {
            assert_eq!(find(text), vec![], "{text}");
        }
    }

    #[test]
    fn placeholders_keep_a_long_secrets_tail_only() {
        assert_eq!(
            mask("id AKIAUJZDE8GXD6NCF10E here"),
            "id [secret:aws-access-key:…F10E] here"
        );
        assert_eq!(
            mask("DB_PASSWORD=JOF8EFd0Nhcy#1"),
            "DB_PASSWORD=[secret:secret-assignment]"
        );
        assert!(matches!(mask("nothing to see"), Cow::Borrowed(_)));
    }

    #[test]
    fn overlapping_claims_go_to_the_first_rule() {
        let text = "GITHUB_TOKEN=ghp_sMehGAkWvj7FAc9QeWJKY40uvSwMFLZDe1f8";
        assert_eq!(
            find(text).iter().map(|f| f.rule).collect::<Vec<_>>(),
            ["github-token"]
        );
    }
}
