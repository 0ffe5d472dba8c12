//! Source files written back from `records`: what `pond restore` and `pond export` read.
//!
//! A record keeps its line without the newline (and without a `\r` before it), with the
//! line's number and byte offset. Two neighbouring records therefore say what lay between
//! them: one byte is `\n`, two with no line between are `\r\n`, and lines a sync did not
//! store (blank, malformed JSON, invalid UTF-8, over the size limit) leave a gap that only
//! blank lines can be written back into exactly. [`write_file`] writes the original bytes
//! wherever the records allow, and says where they did not.

use std::collections::HashMap;
use std::io::Write;

use arrow_array::types::UInt64Type;
use futures::TryStreamExt;
use pond_rows::{FileCursor, SessionRow};

use crate::error::Result;
use crate::read::{primitive_col, string_col};
use crate::records::StoredLine;
use crate::schema::{sql_str, FILES, RECORDS};
use crate::store::Store;

/// One stored source file: its lines in line order and the cursor its last sync left.
#[derive(Debug, Clone)]
pub struct StoredFile {
    pub path: String,
    pub session: SessionRow,
    pub lines: Vec<StoredLine>,
    pub cursor: Option<FileCursor>,
    /// Lines of an earlier version of the file (rewritten between syncs): a line number
    /// stored twice keeps its newest version, and lines past the last read's end are left
    /// out.
    pub superseded: u64,
}

/// How close a written file is to the one that was read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fidelity {
    pub lines: u64,
    pub bytes: u64,
    /// Lines of the original that were never stored, and could not be written back (blank
    /// lines are: they are written as they were).
    pub lines_missing: u64,
}

impl Fidelity {
    pub fn exact(&self) -> bool {
        self.lines_missing == 0
    }
}

/// A stored line with its line number and row id (which orders two versions of a line).
type Versioned = (u64, u64, StoredLine);

/// The stored files of `sessions` (one file per session), in the order given.
pub async fn session_files(store: &Store, sessions: &[SessionRow]) -> Result<Vec<StoredFile>> {
    let mut by_path: HashMap<String, (Vec<Versioned>, Option<FileCursor>)> = sessions
        .iter()
        .map(|s| (s.source_path.clone(), (Vec::new(), None)))
        .collect();
    let quoted: Vec<String> = by_path.keys().map(|p| sql_str(p)).collect();
    if let Some(ds) = store.dataset(RECORDS).await? {
        for chunk in quoted.chunks(200) {
            let mut scan = ds.scan();
            scan.with_row_id()
                .project(&["source_path", "line", "byte_offset", "raw"])?
                .filter(&format!("source_path IN ({})", chunk.join(",")))?;
            let mut stream = scan.try_into_stream().await?;
            while let Some(b) = stream.try_next().await? {
                let path = string_col(&b, "source_path")?;
                let line = primitive_col::<UInt64Type>(&b, "line")?;
                let offset = primitive_col::<UInt64Type>(&b, "byte_offset")?;
                let raw = string_col(&b, "raw")?;
                let row = primitive_col::<UInt64Type>(&b, "_rowid")?;
                for i in 0..b.num_rows() {
                    if let Some((lines, _)) = by_path.get_mut(path.value(i)) {
                        let l = StoredLine {
                            line: line.value(i),
                            byte_offset: offset.value(i),
                            raw: raw.value(i).to_owned(),
                        };
                        lines.push((l.line, row.value(i), l));
                    }
                }
            }
        }
    }
    if let Some(ds) = store.dataset(FILES).await? {
        for chunk in quoted.chunks(200) {
            let mut scan = ds.scan();
            scan.project(&["path", "cursor"])?
                .filter(&format!("path IN ({})", chunk.join(",")))?;
            let mut stream = scan.try_into_stream().await?;
            while let Some(b) = stream.try_next().await? {
                let path = string_col(&b, "path")?;
                let cursor = string_col(&b, "cursor")?;
                for i in 0..b.num_rows() {
                    if let Some((_, c)) = by_path.get_mut(path.value(i)) {
                        *c = serde_json::from_str(cursor.value(i)).ok();
                    }
                }
            }
        }
    }
    let mut out = Vec::with_capacity(sessions.len());
    for s in sessions {
        let Some((mut lines, cursor)) = by_path.remove(&s.source_path) else {
            continue;
        };
        // Line order; of two versions of one line, the later row (the newer read) wins.
        lines.sort_unstable_by_key(|(line, row, _)| (*line, std::cmp::Reverse(*row)));
        let before = lines.len();
        lines.dedup_by_key(|(line, _, _)| *line);
        // Lines past the end of the file's last read belong to an earlier, longer version.
        if let Some(c) = &cursor {
            lines.retain(|(line, _, _)| *line <= c.line);
        }
        out.push(StoredFile {
            path: s.source_path.clone(),
            session: s.clone(),
            superseded: (before - lines.len()) as u64,
            lines: lines.into_iter().map(|(_, _, l)| l).collect(),
            cursor,
        });
    }
    Ok(out)
}

/// Write `file`'s lines to `w` as the source file held them when it was last read, as far
/// as the records tell.
pub fn write_file(file: &StoredFile, w: &mut impl Write) -> std::io::Result<Fidelity> {
    let mut f = Fidelity::default();
    // Where the previous line's text ended and its number (0: the start of the file).
    let (mut end, mut line) = (0u64, 0u64);
    let mut crlf = false;
    for l in &file.lines {
        let missing = l.line.saturating_sub(line + 1);
        let newlines = missing + u64::from(line > 0);
        let gap = l.byte_offset.saturating_sub(end);
        fill(w, gap, newlines, missing, &mut crlf, &mut f, line > 0)?;
        w.write_all(l.raw.as_bytes())?;
        f.lines += 1;
        f.bytes += l.raw.len() as u64;
        (end, line) = (l.byte_offset + l.raw.len() as u64, l.line);
    }
    if line > 0 {
        match &file.cursor {
            Some(c) if c.line >= line => {
                // A last line consumed without a newline has none.
                let open = c.open_line && c.line == line;
                let missing = c.line - line;
                let gap = c.offset.saturating_sub(end);
                fill(
                    w,
                    gap,
                    missing + u64::from(!open),
                    missing,
                    &mut crlf,
                    &mut f,
                    !open,
                )?;
            }
            _ => fill(w, u64::MAX, 1, 0, &mut crlf, &mut f, true)?,
        }
    }
    Ok(f)
}

/// What lies between two stored lines: `gap` bytes holding `newlines` line ends, of which
/// `missing` close lines that were not stored. Written exactly when those lines were blank;
/// otherwise they are counted as missing and only the stored line's own end is written
/// (`own_end`).
fn fill(
    w: &mut impl Write,
    gap: u64,
    newlines: u64,
    missing: u64,
    crlf: &mut bool,
    f: &mut Fidelity,
    own_end: bool,
) -> std::io::Result<()> {
    let end: &[u8] = if gap == newlines {
        *crlf &= newlines == 0;
        b"\n"
    } else if gap == 2 * newlines {
        *crlf = true;
        b"\r\n"
    } else {
        f.lines_missing += missing;
        if own_end {
            let end: &[u8] = if *crlf { b"\r\n" } else { b"\n" };
            w.write_all(end)?;
            f.bytes += end.len() as u64;
        }
        return Ok(());
    };
    let bytes = end.repeat(newlines as usize);
    f.bytes += bytes.len() as u64;
    w.write_all(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a sync stores of `bytes`: each line that is a JSON object, without its line end
    /// (the rules of `pond_ingest`'s reader, simplified), and the cursor it ends with.
    fn stored(bytes: &str) -> StoredFile {
        let mut lines = Vec::new();
        let (mut offset, mut line) = (0u64, 0u64);
        let mut open = false;
        for piece in bytes.split_inclusive('\n') {
            line += 1;
            let text = piece.strip_suffix('\n').unwrap_or(piece);
            open = !piece.ends_with('\n');
            let text = text.strip_suffix('\r').unwrap_or(text);
            if text.starts_with('{') && text.ends_with('}') {
                lines.push(StoredLine {
                    line,
                    byte_offset: offset,
                    raw: text.to_owned(),
                });
            }
            offset += piece.len() as u64;
        }
        let cursor = FileCursor {
            offset,
            line,
            open_line: open,
            ..FileCursor::default()
        };
        StoredFile {
            path: "f.jsonl".into(),
            session: SessionRow::default(),
            lines,
            cursor: Some(cursor),
            superseded: 0,
        }
    }

    fn written(file: &StoredFile) -> (String, Fidelity) {
        let mut out = Vec::new();
        let f = write_file(file, &mut out).unwrap();
        (String::from_utf8(out).unwrap(), f)
    }

    #[test]
    fn line_ends_blank_lines_and_a_last_line_without_newline_come_back_exactly() {
        for original in [
            "{\"a\":1}\n{\"b\":2}\n",
            "{\"a\":1}\r\n{\"b\":2}\r\n",
            "{\"a\":1}\n\n\n{\"b\":2}\n\n",
            "\n{\"a\":1}\n{\"b\":2}",
            "{\"a\":1}\r\n\r\n{\"b\":2}",
        ] {
            let (back, f) = written(&stored(original));
            assert_eq!(back, original);
            assert!(f.exact());
            assert_eq!(f.bytes, original.len() as u64);
        }
    }

    #[test]
    fn lines_never_stored_are_counted_and_left_out() {
        let (back, f) = written(&stored("{\"a\":1}\n{not json\n{\"b\":2}\nnope\n"));
        assert_eq!(back, "{\"a\":1}\n{\"b\":2}\n");
        assert_eq!(f.lines_missing, 2);
        assert!(!f.exact());
    }

    #[test]
    fn without_a_cursor_every_line_ends_with_a_newline() {
        let mut file = stored("{\"a\":1}\n{\"b\":2}");
        file.cursor = None;
        assert_eq!(written(&file).0, "{\"a\":1}\n{\"b\":2}\n");
    }
}
