//! Editing one member of a JSON (or JSONC: comments, trailing commas) config file in place:
//! every byte outside the member set or removed stays as it was, so the client's own
//! formatting, key order and comments survive.

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
    let open = skip_blank(text.as_bytes(), 0);
    object_at(text, open).map_err(|e| format!("not a JSON object file: {e}"))
}

/// The whitespace that starts the line `at` is on.
fn indent_of(text: &str, at: usize) -> &str {
    let line = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let ws = text[line..at].len() - text[line..at].trim_start().len();
    &text[line..line + ws]
}

/// `value` as pretty JSON whose lines after the first are indented by `indent`.
fn rendered(value: &serde_json::Value, indent: &str) -> String {
    let pretty = serde_json::to_string_pretty(value).expect("a JSON value renders");
    pretty.replace('\n', &format!("\n{indent}"))
}

/// The text with `obj.key` set to `value`: replaced where it is, else added as the last
/// member, indented like its siblings.
fn set_in(text: &str, obj: &Object, key: &str, value: &serde_json::Value) -> String {
    let member_indent = match obj.members.last() {
        Some(m) => indent_of(text, m.start).to_owned(),
        None => format!("{}  ", indent_of(text, obj.open)),
    };
    if let Some(m) = obj.members.iter().find(|m| m.key == key) {
        let v = rendered(value, &member_indent);
        return format!("{}{v}{}", &text[..m.value.start], &text[m.value.end..]);
    }
    let k = serde_json::to_string(key).expect("a key renders");
    let v = rendered(value, &member_indent);
    match obj.members.last() {
        Some(last) => format!(
            "{},\n{member_indent}{k}: {v}{}",
            &text[..last.value.end],
            &text[last.value.end..]
        ),
        None => format!(
            "{}\n{member_indent}{k}: {v}\n{}{}",
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
        match obj.members.iter().find(|m| m.key == *key) {
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

/// The text without the member at `path`, and whether it was there.
pub fn remove(text: &str, path: &[&str]) -> Result<(String, bool)> {
    if text.trim().is_empty() {
        return Ok((text.to_owned(), false));
    }
    let mut obj = root(text)?;
    for (depth, key) in path.iter().enumerate() {
        let Some(i) = obj.members.iter().position(|m| m.key == *key) else {
            return Ok((text.to_owned(), false));
        };
        if depth + 1 < path.len() {
            obj = object_at(text, obj.members[i].value.start)?;
            continue;
        }
        let m = &obj.members[i];
        // From the end of the previous member (its comma) when there is one; else up to the
        // next member's start.
        let cut = match (i.checked_sub(1), obj.members.get(i + 1)) {
            (Some(p), _) => obj.members[p].value.end..m.value.end,
            (None, Some(next)) => m.start..next.start,
            (None, None) => obj.open + 1..obj.close,
        };
        // A trailing comma after the removed member (JSONC) now follows the previous one,
        // as it did before pond's member was added.
        let out = format!("{}{}", &text[..cut.start], &text[cut.end..]);
        return Ok((out, true));
    }
    Ok((text.to_owned(), false))
}

/// The value at `path`, if there is one (comments are no obstacle: only the value's own
/// text is parsed).
pub fn get(text: &str, path: &[&str]) -> Result<Option<String>> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let mut obj = root(text)?;
    for (depth, key) in path.iter().enumerate() {
        let Some(m) = obj.members.iter().find(|m| m.key == *key) else {
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
}
