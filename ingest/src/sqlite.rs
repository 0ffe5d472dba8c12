//! SQLite for the clients that keep their sessions in a database (`crate::database`): opened
//! for reading only while the client may hold it, and a row as one JSON object, every column
//! as the client wrote it.

use std::path::Path;
use std::time::Duration;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

/// How long a read waits for a client's write lock before it gives up on the session (it is
/// read again on the next sync, and the database's other sessions are not waited for in this
/// one: `database::HeldDatabases`).
pub(crate) const BUSY: Duration = Duration::from_secs(5);

/// Open a database for reading only, waiting up to [`BUSY`] for a writer's lock.
pub(crate) fn open(path: &Path) -> Result<Connection, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot open database: {e}"))?;
    if !meta.is_file() {
        return Err("cannot open database: not a regular file".into());
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|e| format!("cannot open database: {e}"))?;
    conn.busy_timeout(BUSY).map_err(unreadable)?;
    Ok(conn)
}

pub(crate) fn unreadable(e: rusqlite::Error) -> String {
    format!("cannot read database: {e}")
}

/// One row as a JSON object, column by column: numbers as numbers, the columns named in
/// `json` as the JSON they hold (verbatim) when they hold an object or array, other text as
/// strings, a blob as its text when it is UTF-8 (else as hex).
pub(crate) fn row_json(row: &rusqlite::Row<'_>, json: &[&str]) -> rusqlite::Result<String> {
    let stmt = row.as_ref();
    let mut out = String::from("{");
    for i in 0..stmt.column_count() {
        let name = stmt.column_name(i)?;
        if i > 0 {
            out.push(',');
        }
        push_string(&mut out, name);
        out.push(':');
        let text = match row.get_ref(i)? {
            ValueRef::Null => {
                out.push_str("null");
                continue;
            }
            ValueRef::Integer(n) => {
                out.push_str(&n.to_string());
                continue;
            }
            ValueRef::Real(f) => {
                match serde_json::Number::from_f64(f) {
                    Some(n) => out.push_str(&n.to_string()),
                    None => out.push_str("null"),
                }
                continue;
            }
            ValueRef::Text(t) | ValueRef::Blob(t) => match std::str::from_utf8(t) {
                Ok(s) => s,
                Err(_) => {
                    out.push_str("{\"hex\":\"");
                    crate::common::push_hex(&mut out, t);
                    out.push_str("\"}");
                    continue;
                }
            },
        };
        if json.contains(&name) && is_composite_json(text) {
            out.push_str(text.trim());
        } else {
            push_string(&mut out, text);
        }
    }
    out.push('}');
    Ok(out)
}

/// An SQL expression of the bytes a row of `table` holds (every column's, as stored, read
/// from the row's header, not its contents): at least what its line would hold, known
/// before the row is built.
pub(crate) fn row_bytes_sql(conn: &Connection, table: &str) -> rusqlite::Result<String> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({table})"))?;
    let names = stmt
        .query_map([], |r| r.get::<_, String>(1))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let terms: Vec<String> = names
        .iter()
        .map(|n| format!("coalesce(octet_length(\"{}\"), 0)", n.replace('"', "\"\"")))
        .collect();
    Ok(if terms.is_empty() {
        "0".to_owned()
    } else {
        terms.join(" + ")
    })
}

/// Append `s` as a JSON string, serialized straight from the `str` (a row's text columns are
/// most of what a database read copies; going through a `serde_json::Value` copied each once
/// more).
pub(crate) fn push_string(out: &mut String, s: &str) {
    out.push_str(&serde_json::to_string(s).expect("a str serializes"));
}

/// Whether `s` is a JSON object or array (checked without building it).
fn is_composite_json(s: &str) -> bool {
    matches!(s.trim_start().as_bytes().first(), Some(b'{' | b'['))
        && serde_json::from_str::<serde::de::IgnoredAny>(s).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut every: String = (0u8..0x80).map(char::from).collect();
        every.push_str("é 漢字 \u{2028} 🦀 end");
        for s in [every.as_str(), "", "plain", "\"", "a\\b", "\u{7f}"] {
            let mut out = String::from("x");
            push_string(&mut out, s);
            assert_eq!(out[1..], serde_json::Value::from(s).to_string(), "{s:?}");
        }
    }

    #[test]
    fn rows_as_json() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE t (id TEXT, n INTEGER, f REAL, data TEXT, title TEXT, b BLOB, z TEXT);
             INSERT INTO t VALUES ('a\"b', 3, 1.5, '{\"k\": [1, 2]}', '[1]', x'ff00', NULL);",
        )
        .unwrap();
        let line = conn
            .query_row("SELECT * FROM t", [], |r| row_json(r, &["data"]))
            .unwrap();
        assert_eq!(
            line,
            r#"{"id":"a\"b","n":3,"f":1.5,"data":{"k": [1, 2]},"title":"[1]","b":{"hex":"ff00"},"z":null}"#
        );
        serde_json::from_str::<serde_json::Value>(&line).unwrap();
    }
}
