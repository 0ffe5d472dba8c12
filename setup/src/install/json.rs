//! Editing one member of a JSON (or JSONC: comments, trailing commas) config file in place:
//! every byte outside the member set or removed stays as it was, so the client's own
//! formatting, key order, comments, line ends (`\r\n`) and byte-order mark survive. Where a
//! key repeats in an object, the last one is the member: the one `JSON.parse` (and so the
//! client) keeps.

use std::ops::Range;

/// One `"key": value` of an object, by byte offsets.
struct Member {
    key: String,
    /// From the key's opening quote.
    start: usize,
    value: Range<usize>,
}

/// An object: its braces and members.
struct Object {
    open: usize,
    close: usize,
    members: Vec<Member>,
}

pub type Result<T> = std::result::Result<T, String>;

fn skip_blank(t: &[u8], mut i: usize) -> usize {
    loop {
        while i < t.len() && t[i].is_ascii_whitespace() {
            i += 1;
        }
        if t[i..].starts_with(b"//") {
            while i < t.len() && t[i] != b'\n' {
                i += 1;
            }
        } else if t[i..].starts_with(b"/*") {
            i += 2;
            while i < t.len() && !t[i..].starts_with(b"*/") {
                i += 1;
            }
            i = (i + 2).min(t.len());
        } else {
            return i;
        }
    }
}

/// The end of the string starting at `i` (its opening quote), past the closing quote.
fn string_end(t: &[u8], mut i: usize) -> Result<usize> {
    i += 1;
    while i < t.len() {
        match t[i] {
            b'\\' => i += 2,
            b'"' => return Ok(i + 1),
            _ => i += 1,
        }
    }
    Err("a string is not closed".into())
}

/// The end of the value starting at `i`.
fn value_end(t: &[u8], i: usize) -> Result<usize> {
    match t.get(i) {
        Some(b'"') => string_end(t, i),
        Some(b'{') | Some(b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            while j < t.len() {
                match t[j] {
                    b'"' => {
                        j = string_end(t, j)?;
                        continue;
                    }
                    b'/' if t[j..].starts_with(b"//") || t[j..].starts_with(b"/*") => {
                        j = skip_blank(t, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            Err("an object or array is not closed".into())
        }
        Some(_) => {
            let mut j = i;
            while j < t.len() && !matches!(t[j], b',' | b'}' | b']') && !t[j].is_ascii_whitespace()
            {
                j += 1;
            }
            Ok(j)
        }
        None => Err("the file ends where a value should be".into()),
    }
}

fn object_at(text: &str, open: usize) -> Result<Object> {
    let t = text.as_bytes();
    if t.get(open) != Some(&b'{') {
        return Err("expected an object".into());
    }
    let mut members = Vec::new();
    let mut i = skip_blank(t, open + 1);
    loop {
        match t.get(i) {
            Some(b'}') => {
                return Ok(Object {
                    open,
                    close: i,
                    members,
                })
            }
            Some(b'"') => {
                let key_end = string_end(t, i)?;
                let key: String = serde_json::from_str(&text[i..key_end])
                    .map_err(|e| format!("a bad key at byte {i}: {e}"))?;
                let colon = skip_blank(t, key_end);
                if t.get(colon) != Some(&b':') {
                    return Err(format!("expected ':' at byte {colon}"));
                }
                let v = skip_blank(t, colon + 1);
                let end = value_end(t, v)?;
                members.push(Member {
                    key,
                    start: i,
                    value: v..end,
                });
                i = skip_blank(t, end);
                if t.get(i) == Some(&b',') {
                    i = skip_blank(t, i + 1);
                }
            }
            _ => return Err(format!("unexpected text at byte {i}")),
        }
    }
}

fn root(text: &str) -> Result<Object> {
    let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let open = skip_blank(text.as_bytes(), bom);
    object_at(text, open).map_err(|e| format!("not a JSON object file: {e}"))
}

/// The whitespace that starts the line `at` is on.
fn indent_of(text: &str, at: usize) -> &str {
    let line = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let ws = text[line..at].len() - text[line..at].trim_start().len();
    &text[line..line + ws]
}

/// The line end the file uses: `\r\n` if its lines end so, else `\n`.
fn newline(text: &str) -> &'static str {
    if text.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    }
}

/// `value` as pretty JSON whose lines after the first are indented by `indent`, ended by
/// `nl`.
fn rendered(value: &serde_json::Value, indent: &str, nl: &str) -> String {
    let pretty = serde_json::to_string_pretty(value).expect("a JSON value renders");
    pretty.replace('\n', &format!("{nl}{indent}"))
}

impl Object {
    /// The member `key`: the last of that name, as a JSON parser keeps.
    fn member(&self, key: &str) -> Option<&Member> {
        self.members.iter().rev().find(|m| m.key == key)
    }
}

/// The text with `obj.key` set to `value`: replaced where it is, else added as the last
/// member, indented like its siblings.
fn set_in(text: &str, obj: &Object, key: &str, value: &serde_json::Value) -> String {
    let nl = newline(text);
    let member_indent = match obj.members.last() {
        Some(m) => indent_of(text, m.start).to_owned(),
        None => format!("{}  ", indent_of(text, obj.open)),
    };
    if let Some(m) = obj.member(key) {
        let v = rendered(value, &member_indent, nl);
        return format!("{}{v}{}", &text[..m.value.start], &text[m.value.end..]);
    }
    let k = serde_json::to_string(key).expect("a key renders");
    let v = rendered(value, &member_indent, nl);
    match obj.members.last() {
        Some(last) => format!(
            "{},{nl}{member_indent}{k}: {v}{}",
            &text[..last.value.end],
            &text[last.value.end..]
        ),
        None => format!(
            "{}{nl}{member_indent}{k}: {v}{nl}{}{}",
            &text[..obj.open + 1],
            indent_of(text, obj.open),
            &text[obj.close..]
        ),
    }
}

/// The member `path` (objects, from the root) set to `value`, creating the objects on the
/// way. An empty text is an empty object.
pub fn set(text: &str, path: &[&str], value: &serde_json::Value) -> Result<String> {
    let text = if text.trim().is_empty() { "{}\n" } else { text };
    let mut obj = root(text)?;
    for (depth, key) in path.iter().enumerate() {
        let last = depth + 1 == path.len();
        match obj.member(key) {
            Some(m) if !last => {
                obj = object_at(text, m.value.start)
                    .map_err(|e| format!("{}: {e}", path[..=depth].join(".")))?
            }
            _ => {
                // Build the rest of the path as one value.
                let mut v = value.clone();
                for k in path[depth + 1..].iter().rev() {
                    v = serde_json::json!({ *k: v });
                }
                return Ok(set_in(text, &obj, key, &v));
            }
        }
    }
    unreachable!("a path has at least one key")
}

/// The text without the member at `path`, and whether it was there. A key pond's member
/// repeats under is removed every time, so no older copy takes its place.
pub fn remove(text: &str, path: &[&str]) -> Result<(String, bool)> {
    let mut out = text.to_owned();
    let mut was = false;
    while let Some(shorter) = remove_last(&out, path)? {
        out = shorter;
        was = true;
    }
    Ok((out, was))
}

/// The text without the (last) member at `path`, if there is one.
fn remove_last(text: &str, path: &[&str]) -> Result<Option<String>> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let mut obj = root(text)?;
    for (depth, key) in path.iter().enumerate() {
        let Some(i) = obj.members.iter().rposition(|m| m.key == *key) else {
            return Ok(None);
        };
        if depth + 1 < path.len() {
            obj = object_at(text, obj.members[i].value.start)?;
            continue;
        }
        return Ok(Some(without(text, &obj, i)));
    }
    Ok(None)
}

/// The index just past the whitespace from `i` on.
fn skip_space(t: &[u8], mut i: usize) -> usize {
    while i < t.len() && t[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The text without member `i` of `obj`, comments around it kept: only the member, one
/// comma, and the blank space that separates them go. Nothing left follows a line comment
/// on its line.
fn without(text: &str, obj: &Object, i: usize) -> String {
    let t = text.as_bytes();
    let m = &obj.members[i];
    let after = skip_space(t, m.value.end);
    let comma = (t.get(after) == Some(&b',')).then_some(after);
    // The start of the member's line when only blank space is before it there.
    let mut line = m.start;
    while line > 0 && matches!(t[line - 1], b' ' | b'\t') {
        line -= 1;
    }
    let whole_line = line > 0 && t[line - 1] == b'\n';
    let line = if whole_line { line } else { m.start };
    // Where the member's text ends: with its line's end, when it had its line to itself.
    let until = |end: usize| {
        let mut j = end;
        while j < t.len() && matches!(t[j], b' ' | b'\t' | b'\r') {
            j += 1;
        }
        if whole_line && t.get(j) == Some(&b'\n') {
            j + 1
        } else {
            end
        }
    };
    let blank = |r: Range<usize>| t[r].iter().all(u8::is_ascii_whitespace);
    // The text without the spans `(start, end)`, given in order.
    let cut = |spans: &[(usize, usize)]| {
        let mut out = String::with_capacity(text.len());
        let mut from = 0;
        for &(start, end) in spans {
            out.push_str(&text[from..start]);
            from = end;
        }
        out.push_str(&text[from..]);
        out
    };
    match (i.checked_sub(1), obj.members.get(i + 1), comma) {
        // Before another member: the member and its comma, up to what follows.
        (_, Some(_), Some(c)) => cut(&[(m.start, skip_space(t, c + 1))]),
        (_, Some(_), None) => cut(&[(m.start, m.value.end)]),
        // The last: the comma before it goes too. As pond's install wrote it (blank space
        // between), everything from that comma on; a trailing comma after it (JSONC) now
        // follows the previous member, as it did before.
        (Some(p), None, _) => match skip_blank(t, obj.members[p].value.end) {
            sep if t[sep] == b',' && blank(sep + 1..m.start) => cut(&[(sep, m.value.end)]),
            sep if t[sep] == b',' => cut(&[(sep, sep + 1), (line, until(m.value.end))]),
            _ => cut(&[(line, until(m.value.end))]),
        },
        // The only member: an object left with nothing but blank space is emptied.
        (None, None, _) => {
            let end = comma.map_or(m.value.end, |c| c + 1);
            if blank(obj.open + 1..m.start) && blank(end..obj.close) {
                cut(&[(obj.open + 1, obj.close)])
            } else {
                cut(&[(line, until(end))])
            }
        }
    }
}

/// The value at `path`, if there is one (comments are no obstacle: only the value's own
/// text is parsed).
pub fn get(text: &str, path: &[&str]) -> Result<Option<String>> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let mut obj = root(text)?;
    for (depth, key) in path.iter().enumerate() {
        let Some(m) = obj.member(key) else {
            return Ok(None);
        };
        if depth + 1 == path.len() {
            return Ok(Some(text[m.value.clone()].to_owned()));
        }
        obj = object_at(text, m.value.start)?;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_member_is_added_where_its_siblings_are_and_nothing_else_moves() {
        let text = "{\n  // mine\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"other\": { \"command\": \"x\" }\n  }\n}\n";
        let out = set(text, &["mcpServers", "pond"], &json!({"command": "pond"})).unwrap();
        assert_eq!(
            out,
            "{\n  // mine\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"other\": { \"command\": \"x\" },\n    \"pond\": {\n      \"command\": \"pond\"\n    }\n  }\n}\n"
        );
        let (back, was) = remove(&out, &["mcpServers", "pond"]).unwrap();
        assert!(was);
        assert_eq!(back, text);
        // Setting again changes nothing.
        let again = set(&out, &["mcpServers", "pond"], &json!({"command": "pond"})).unwrap();
        assert_eq!(again, out);
    }

    #[test]
    fn missing_objects_are_created_and_empty_files_start_one() {
        let out = set("", &["mcpServers", "pond"], &json!({"a": 1})).unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v, json!({"mcpServers": {"pond": {"a": 1}}}));
        let out = set(
            "{\"x\": [1, {\"y\": \"}\"}]}",
            &["servers", "pond"],
            &json!(2),
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v, json!({"x": [1, {"y": "}"}], "servers": {"pond": 2}}));
    }

    #[test]
    fn removing_the_first_or_only_member_keeps_the_rest_valid() {
        for (text, want) in [
            ("{\"a\": {\"pond\": 1, \"b\": 2}}", json!({"a": {"b": 2}})),
            ("{\"a\": {\"pond\": 1}}", json!({"a": {}})),
            ("{\"a\": {\"b\": 2, \"pond\": 1,}}", json!({"a": {"b": 2}})),
        ] {
            let (out, was) = remove(text, &["a", "pond"]).unwrap();
            assert!(was);
            let out = out.replace(",}", "}");
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!(v, want, "{out}");
        }
        assert!(!remove("{\"a\": {}}", &["a", "pond"]).unwrap().1);
        assert!(set("[1]", &["a"], &json!(1)).is_err());
    }

    #[test]
    fn line_ends_and_a_byte_order_mark_survive_a_set_and_a_remove() {
        for text in [
            "{\r\n  \"a\": 1\r\n}\r\n",
            "\u{feff}{\r\n  \"a\": 1\r\n}\r\n",
            "\u{feff}{}",
        ] {
            let out = set(text, &["mcpServers", "pond"], &json!({"command": "p"})).unwrap();
            assert_eq!(
                out.starts_with('\u{feff}'),
                text.starts_with('\u{feff}'),
                "{out:?}"
            );
            if text.contains('\r') {
                assert_eq!(
                    out.matches('\n').count(),
                    out.matches("\r\n").count(),
                    "{out:?}"
                );
            }
            let v: serde_json::Value =
                serde_json::from_str(out.trim_start_matches('\u{feff}')).unwrap();
            assert_eq!(v["mcpServers"]["pond"]["command"], "p");
            let (back, was) = remove(&out, &["mcpServers", "pond"]).unwrap();
            assert!(was);
            let (back, _) = remove(&back, &["mcpServers"]).unwrap();
            assert_eq!(back, text);
        }
    }

    #[test]
    fn a_repeated_key_is_read_and_edited_at_its_last_place() {
        let two = "{\"s\": {\"pond\": 1}, \"s\": {\"pond\": 2, \"x\": 3}}";
        assert_eq!(get(two, &["s", "pond"]).unwrap().as_deref(), Some("2"));
        assert_eq!(
            set(two, &["s", "pond"], &json!(9)).unwrap(),
            "{\"s\": {\"pond\": 1}, \"s\": {\"pond\": 9, \"x\": 3}}"
        );
        let twice = "{\"s\": {\"pond\": 1, \"x\": 3, \"pond\": 2}}";
        let (out, was) = remove(twice, &["s", "pond"]).unwrap();
        assert!(was);
        assert_eq!(out, "{\"s\": {\"x\": 3}}");
    }

    #[test]
    fn comments_before_and_after_a_removed_member_stay() {
        let text =
            "{\n  \"a\": 1, // a's\n  // about pond\n  \"pond\": 2, // pond's line\n  \"b\": 3\n}";
        let (out, _) = remove(text, &["pond"]).unwrap();
        assert_eq!(
            out,
            "{\n  \"a\": 1, // a's\n  // about pond\n  // pond's line\n  \"b\": 3\n}"
        );
        let last = "{\n  \"a\": 1, // a's\n  // about pond\n  \"pond\": 2}";
        assert_eq!(
            remove(last, &["pond"]).unwrap().0,
            "{\n  \"a\": 1 // a's\n  // about pond\n}"
        );
        let only = "{\n  // mine\n  \"pond\": 2\n}";
        assert_eq!(remove(only, &["pond"]).unwrap().0, "{\n  // mine\n}");
    }
}
