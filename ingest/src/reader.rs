//! Reading one file from where the last sync stopped: bounded line reading, format
//! sniffing, and the cursor that makes the next read incremental.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::time::UNIX_EPOCH;

use xxhash_rust::xxh3::xxh3_64;

pub use crate::common::MAX_LINE_BYTES;
pub use crate::database::HeldDatabases;
pub use crate::file_cursor::FileCursor;
use crate::model::FileBatch;
pub(crate) use crate::outcome::failed;
pub use crate::outcome::{ReadMode, ReadOutcome};
pub use crate::pass::LineParser;
use crate::pass::Pass;
use crate::side::open_regular;
use crate::source::SourceFile;

/// How much of a file's start identifies it: a changed head means the file was replaced.
const HEAD_BYTES: u64 = 4096;

/// How much of the end of what was consumed identifies a file with its head.
const TAIL_BYTES: u64 = 4096;

/// xxh3 of `len` bytes of `f` from `at` (a corrupt cursor cannot ask for more than the
/// head or tail limits: the caller checks).
fn hash_at(f: &File, at: u64, len: u64) -> std::io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; len as usize];
    f.read_exact_at(&mut buf, at)?;
    Ok(xxh3_64(&buf))
}

/// Whether the bytes `prev` consumed are still there: the file is no shorter, and its head
/// and the tail of what was consumed hash as they did.
fn still_holds(f: &File, size: u64, prev: &FileCursor) -> bool {
    if prev.offset == 0
        || size < prev.offset
        || prev.head_len > HEAD_BYTES
        || prev.tail_len > TAIL_BYTES.min(prev.offset)
    {
        return false;
    }
    let head = hash_at(f, 0, prev.head_len).is_ok_and(|h| h == prev.head_hash);
    let tail =
        hash_at(f, prev.offset - prev.tail_len, prev.tail_len).is_ok_and(|h| h == prev.tail_hash);
    head && tail
}

/// Read `file` from where `prev` left it. Never fails: problems become skips, and a panic
/// in a parser (a bug) fails this file alone, with a reason, so the rest of a sync goes on.
pub fn read_file(file: &SourceFile, prev: Option<&FileCursor>) -> ReadOutcome {
    read_file_part(file, prev, u64::MAX, &HeldDatabases::default())
}

/// [`read_file`], stopping at the first line boundary past `budget` bytes read: the cursor
/// is then `partial`, and the next call with it reads on (mode `Continued`). A sync reads a
/// large file in such parts, so its memory follows the part, not the file. `held`: the
/// databases found locked earlier in the same sync, shared by its reads.
pub fn read_file_part(
    file: &SourceFile,
    prev: Option<&FileCursor>,
    budget: u64,
    held: &HeldDatabases,
) -> ReadOutcome {
    let read = std::panic::AssertUnwindSafe(|| match file.database() {
        Some(db) => crate::database::read(file, db, prev, held),
        None => read_file_unguarded(file, prev, budget),
    });
    std::panic::catch_unwind(read).unwrap_or_else(|_| {
        failed(
            file,
            prev,
            prev.map_or(0, |c| c.line),
            "pond's parser failed on this file (a bug, please report it); the file is tried again on the next sync"
                .into(),
        )
    })
}

fn read_file_unguarded(file: &SourceFile, prev: Option<&FileCursor>, budget: u64) -> ReadOutcome {
    let f = match open_regular(&file.path) {
        Ok(f) => f,
        Err(e) => return failed(file, prev, 0, format!("cannot open: {e}")),
    };
    let meta = match f.metadata() {
        Ok(m) => m,
        Err(e) => return failed(file, prev, 0, format!("cannot stat: {e}")),
    };
    let size = meta.len();
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i64);

    if let Some(p) = prev {
        if !p.partial && !p.held && p.size == size && p.mtime_ns == mtime_ns {
            return ReadOutcome {
                mode: ReadMode::Unchanged,
                batch: FileBatch::default(),
                cursor: p.clone(),
                lines_read: 0,
            };
        }
    }
    let whole = file.read_whole();
    // A replayed file's session (or a document) is what the whole file says: never read
    // in parts.
    let budget = if whole { u64::MAX } else { budget };
    // Resume only if the bytes we already consumed are still there, unchanged (a file read
    // whole is read again from the start: the store keeps only the lines it has not seen).
    let (mode, mut cursor) = match prev {
        Some(p) if !whole && still_holds(&f, size, p) => {
            let mode = if p.partial {
                ReadMode::Continued
            } else {
                ReadMode::Appended
            };
            (mode, p.clone())
        }
        Some(_) => (ReadMode::Rewritten, FileCursor::default()),
        None => (ReadMode::New, FileCursor::default()),
    };
    cursor.size = size;
    cursor.mtime_ns = mtime_ns;
    cursor.partial = false;
    let mut f = f;
    if let Err(e) = f.seek(SeekFrom::Start(cursor.offset)) {
        return failed(file, prev, cursor.line, format!("cannot seek: {e}"));
    }

    let fallback_ts = mtime_ns / 1_000_000;
    let mut pass = Pass::new(file, &cursor, fallback_ts);
    // Only what the file held when it was looked at: a file growing as fast as it is read
    // does not keep one sync reading.
    let mut reader = BufReader::with_capacity(1 << 20, f.take(size - cursor.offset));
    if cursor.open_line {
        // The newline that completes a line consumed without one.
        if reader.fill_buf().is_ok_and(|b| b.first() == Some(&b'\n')) {
            reader.consume(1);
            cursor.offset += 1;
        }
        cursor.open_line = false;
    }
    let start = cursor.offset;
    let mut buf = Vec::new();
    let mut lines_read = 0;
    if file.is_document() {
        // One JSON document (not lines): one record, the file as it is.
        match read_document(&mut reader, &mut buf) {
            Ok(consumed) if consumed > MAX_LINE_BYTES as u64 => pass.skip(
                1,
                format!(
                    "document too large: {consumed} bytes, over the {MAX_LINE_BYTES}-byte limit"
                ),
            ),
            Ok(_) if !is_json_object(&buf) => pass.skip(
                1,
                "not a whole JSON document (being written?); read again when it changes".into(),
            ),
            Ok(consumed) => {
                (cursor.offset, cursor.line, lines_read) = (consumed, 1, 1);
                // Stored as a line is: without its last newline.
                if buf.last() == Some(&b'\n') {
                    buf.pop();
                }
                pass.line(1, 0, &buf, consumed as usize);
            }
            Err(e) => pass.skip(1, format!("read error: {e}; read again on the next sync")),
        }
    } else {
        loop {
            if cursor.offset - start >= budget {
                cursor.partial = true;
                break;
            }
            let line_start = cursor.offset;
            let line_no = cursor.line + 1;
            let read = match read_bounded_line(&mut reader, &mut buf) {
                Ok(r) => r,
                Err(e) => {
                    pass.skip(
                        line_no,
                        format!("read error: {e}; rest of file left for next sync"),
                    );
                    break;
                }
            };
            let Some(LineRead { consumed, complete }) = read else {
                break;
            };
            if !complete && buf.len() <= MAX_LINE_BYTES {
                // A last line with no newline: a writer may still be appending it. Keep it if
                // it is already a whole JSON object (or a text transcript's line: the file is
                // read whole again when it changes), otherwise leave it for the next sync.
                if !file.is_text() && !is_json_object(&buf) {
                    pass.skip(
                        line_no,
                        "incomplete last line (no newline yet); read again on the next sync".into(),
                    );
                    break;
                }
                cursor.open_line = true;
            }
            cursor.offset += consumed as u64;
            cursor.line = line_no;
            lines_read += 1;
            pass.line(line_no, line_start, &buf, consumed);
        }
    }
    // The head and the tail of what was consumed identify the file next time.
    let head_len = cursor.offset.min(HEAD_BYTES);
    let tail_len = cursor.offset.min(TAIL_BYTES);
    if let Ok(f) = File::open(&file.path) {
        if head_len != cursor.head_len {
            if let Ok(h) = hash_at(&f, 0, head_len) {
                (cursor.head_len, cursor.head_hash) = (head_len, h);
            }
        }
        if let Ok(h) = hash_at(&f, cursor.offset - tail_len, tail_len) {
            (cursor.tail_len, cursor.tail_hash) = (tail_len, h);
        }
    }
    let batch = pass.finish(&mut cursor);
    ReadOutcome {
        mode,
        batch,
        cursor,
        lines_read,
    }
}

/// Read a whole document into `buf`, keeping at most [`MAX_LINE_BYTES`] + 1 bytes of it;
/// returns the bytes consumed.
fn read_document<R: BufRead>(r: &mut R, buf: &mut Vec<u8>) -> std::io::Result<u64> {
    buf.clear();
    let kept = r
        .by_ref()
        .take(MAX_LINE_BYTES as u64 + 1)
        .read_to_end(buf)? as u64;
    Ok(kept + std::io::copy(r, &mut std::io::sink())?)
}

/// Whether `bytes` are one whole JSON object (checked without building it).
fn is_json_object(bytes: &[u8]) -> bool {
    bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
        && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
}

struct LineRead {
    /// Bytes consumed from the file, newline included.
    consumed: usize,
    /// Whether the line ended with a newline.
    complete: bool,
}

/// Read one line into `buf` (without its newline). Past [`MAX_LINE_BYTES`] the rest of the
/// line is consumed but not kept, so a huge line costs no more memory than the limit.
fn read_bounded_line<R: BufRead>(
    r: &mut R,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<LineRead>> {
    buf.clear();
    let mut consumed = 0usize;
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            return Ok((consumed > 0).then_some(LineRead {
                consumed,
                complete: false,
            }));
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let keep = if done { take - 1 } else { take };
        if buf.len() <= MAX_LINE_BYTES {
            let room = (MAX_LINE_BYTES + 1).saturating_sub(buf.len());
            buf.extend_from_slice(&chunk[..keep.min(room)]);
        }
        r.consume(take);
        consumed += take;
        if done {
            return Ok(Some(LineRead {
                consumed,
                complete: true,
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::sniff;
    use std::io::Cursor;

    #[test]
    fn bounded_lines() {
        let mut r = BufReader::with_capacity(4, Cursor::new(b"ab\ncdefgh\n\nlast".to_vec()));
        let mut buf = Vec::new();
        let mut got = Vec::new();
        while let Some(l) = read_bounded_line(&mut r, &mut buf).unwrap() {
            got.push((
                String::from_utf8(buf.clone()).unwrap(),
                l.consumed,
                l.complete,
            ));
        }
        assert_eq!(
            got,
            vec![
                ("ab".into(), 3, true),
                ("cdefgh".into(), 7, true),
                ("".into(), 1, true),
                ("last".into(), 4, false)
            ]
        );
    }

    #[test]
    fn sniffing() {
        use serde_json::json;
        let name = |v| sniff(&v).map(|s| s.name);
        assert_eq!(
            name(json!({"type":"session_meta","payload":{}})),
            Some("codex")
        );
        assert_eq!(
            name(json!({"id":"x","timestamp":"t","instructions":null})),
            Some("codex")
        );
        assert_eq!(name(json!({"type":"user","uuid":"u"})), Some("claude-code"));
        assert_eq!(
            name(json!({"type":"session.start","data":{"sessionId":"s"},"id":"e"})),
            Some("copilot")
        );
        // Claude Code's progress records carry `data` too: their uuid decides.
        assert_eq!(
            name(json!({"type":"progress","data":{},"uuid":"u"})),
            Some("claude-code")
        );
        assert_eq!(name(json!({"created_at":"x"})), None);
    }
}
