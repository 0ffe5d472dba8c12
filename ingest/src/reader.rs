//! Reading one file from where the last sync stopped: bounded line reading, format
//! sniffing, and the cursor that makes the next read incremental.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64;

use crate::claude::ClaudeParser;
use crate::codex::CodexParser;
use crate::discover::{SourceFile, SourceKind};
use crate::model::{FileBatch, PartRow, RecordRow, SessionRow, Skip};

/// Lines longer than this are skipped (with a reason), never buffered whole.
pub const MAX_LINE_BYTES: usize = 32 << 20;
/// How much of a file's start identifies it: a changed head means the file was replaced.
const HEAD_BYTES: u64 = 4096;

/// Where the last read of a file stopped, and what it had learnt by then.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileCursor {
    /// Bytes consumed: the next read starts here.
    pub offset: u64,
    /// Lines consumed.
    pub line: u64,
    pub size: u64,
    pub mtime_ns: i64,
    pub head_len: u64,
    pub head_hash: u64,
    /// `claude-code` or `codex` once sniffed.
    pub format: Option<String>,
    pub session_id: Option<String>,
    pub parent_id: Option<String>,
    pub project: Option<String>,
    pub last_ts: Option<i64>,
    /// The last bytes consumed (up to `TAIL_BYTES`, ending at `offset`) and their hash:
    /// with the head, what identifies the file next time (a rewrite in place that keeps the
    /// head and does not shrink changes them).
    #[serde(default)]
    pub tail_len: u64,
    #[serde(default)]
    pub tail_hash: u64,
    /// The last line consumed had no newline (it was whole JSON): the newline that
    /// completes it later is not a line of its own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub open_line: bool,
    /// The read stopped at its byte budget with lines left: the sync reads on from here
    /// before it commits.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
}

/// How much of the end of what was consumed identifies a file with its head.
const TAIL_BYTES: u64 = 4096;

/// How a file was read this time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadMode {
    /// Same size and mtime as last time: not opened.
    Unchanged,
    /// First time seen: read from the start.
    New,
    /// Grew since last time: read only the new lines.
    Appended,
    /// Shrank or its head changed: read again from the start (the store dedupes).
    Rewritten,
    /// The rest of a read that stopped at its byte budget, in the same sync.
    Continued,
    /// Could not be read at all (vanished, permissions): reported, nothing stored.
    Failed,
}

#[derive(Debug)]
pub struct ReadOutcome {
    pub mode: ReadMode,
    pub batch: FileBatch,
    pub cursor: FileCursor,
    /// Lines read in this pass (stored or skipped), not counting a held-back last line.
    pub lines_read: u64,
}

pub(crate) fn path_string(file: &SourceFile) -> String {
    crate::paths::path_key(&file.path)
}

impl ReadOutcome {
    /// A file not read, with the reason (the caller decided to skip it).
    pub fn skipped(file: &SourceFile, prev: Option<&FileCursor>, reason: String) -> ReadOutcome {
        failed(file, prev, prev.map_or(0, |c| c.line), reason)
    }
}

fn failed(file: &SourceFile, prev: Option<&FileCursor>, line: u64, reason: String) -> ReadOutcome {
    let mut batch = FileBatch::default();
    let skip = Skip {
        path: path_string(file),
        line,
        reason,
    };
    batch.skip(skip, 0);
    ReadOutcome {
        mode: ReadMode::Failed,
        batch,
        cursor: prev.cloned().unwrap_or_default(),
        lines_read: 0,
    }
}

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

/// Open without blocking (a path swapped for a FIFO after discovery must not hang the
/// sync), and only a regular file.
fn open_regular(path: &std::path::Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(f)
}

/// Read `file` from where `prev` left it. Never fails: problems become skips, and a panic
/// in a parser (a bug) fails this file alone, with a reason, so the rest of a sync goes on.
pub fn read_file(file: &SourceFile, prev: Option<&FileCursor>) -> ReadOutcome {
    read_file_part(file, prev, u64::MAX)
}

/// [`read_file`], stopping at the first line boundary past `budget` bytes read: the cursor
/// is then `partial`, and the next call with it reads on (mode `Continued`). A sync reads a
/// large file in such parts, so its memory follows the part, not the file.
pub fn read_file_part(file: &SourceFile, prev: Option<&FileCursor>, budget: u64) -> ReadOutcome {
    let read = std::panic::AssertUnwindSafe(|| read_file_unguarded(file, prev, budget));
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
        if !p.partial && p.size == size && p.mtime_ns == mtime_ns {
            return ReadOutcome {
                mode: ReadMode::Unchanged,
                batch: FileBatch::default(),
                cursor: p.clone(),
                lines_read: 0,
            };
        }
    }
    // Resume only if the bytes we already consumed are still there, unchanged.
    let (mode, mut cursor) = match prev {
        Some(p) if still_holds(&f, size, p) => {
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
            // it is already a whole JSON object, otherwise leave it for the next sync.
            if !is_json_object(&buf) {
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

/// The per-format parser of a file, decided by the caller's hint or by sniffing.
enum Parser {
    Claude(ClaudeParser),
    Codex(CodexParser),
}

/// State shared by both parsers for one pass over one file.
pub(crate) struct Common {
    pub path: String,
    pub session: SessionRow,
    pub last_ts: Option<i64>,
    pub fallback_ts: i64,
}

impl Common {
    /// Note a record's timestamp; returns the timestamp to give a message on this line.
    pub fn touch(&mut self, ts: Option<i64>) -> i64 {
        if let Some(t) = ts {
            self.last_ts = Some(t);
            self.session.created_at = Some(self.session.created_at.map_or(t, |c| c.min(t)));
            self.session.updated_at = Some(self.session.updated_at.map_or(t, |c| c.max(t)));
        }
        self.last_ts
            .or(self.session.created_at)
            .unwrap_or(self.fallback_ts)
    }
}

struct Pass<'a> {
    file: &'a SourceFile,
    common: Common,
    parser: Option<Parser>,
    batch: FileBatch,
    /// Lines stored as records in this pass (drained batches included).
    records: u64,
    /// Lines skipped in this pass, for the cap on the ones kept in full.
    skip_examples: usize,
}

impl<'a> Pass<'a> {
    fn new(file: &'a SourceFile, cursor: &FileCursor, fallback_ts: i64) -> Self {
        let common = Common {
            path: path_string(file),
            session: SessionRow {
                id: cursor.session_id.clone().unwrap_or_default(),
                parent_id: cursor.parent_id.clone(),
                project: cursor.project.clone(),
                source_path: path_string(file),
                ..SessionRow::default()
            },
            last_ts: cursor.last_ts,
            fallback_ts,
        };
        let kind = match cursor.format.as_deref() {
            Some(f) => SourceKind::parse(f),
            None => file.kind,
        };
        let mut pass = Pass {
            file,
            common,
            parser: None,
            batch: FileBatch::default(),
            records: 0,
            skip_examples: 0,
        };
        if let Some(k) = kind {
            pass.start_parser(k);
        }
        pass
    }

    fn start_parser(&mut self, kind: SourceKind) {
        self.parser = Some(match kind {
            SourceKind::ClaudeCode => {
                Parser::Claude(ClaudeParser::new(self.file, &mut self.common))
            }
            SourceKind::Codex => Parser::Codex(CodexParser::new(self.file, &mut self.common)),
        });
    }

    fn skip(&mut self, line: u64, reason: String) {
        let skip = Skip {
            path: self.common.path.clone(),
            line,
            reason,
        };
        self.batch.skip(skip, self.skip_examples);
        self.skip_examples += 1;
    }

    fn line(&mut self, line_no: u64, offset: u64, bytes: &[u8], consumed: usize) {
        if bytes.len() > MAX_LINE_BYTES {
            return self.skip(
                line_no,
                format!("line too long: {consumed} bytes, over the {MAX_LINE_BYTES}-byte limit"),
            );
        }
        let text = match std::str::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => {
                return self.skip(
                    line_no,
                    format!("invalid UTF-8 (first bad byte at {})", e.valid_up_to()),
                )
            }
        };
        let text = text.strip_suffix('\r').unwrap_or(text);
        if text.trim().is_empty() {
            return self.skip(line_no, "empty line".into());
        }
        let (value, cut) = match crate::json::parse_line(text) {
            Ok(v) => v,
            Err(e) => return self.skip(line_no, format!("malformed JSON: {e}")),
        };
        let messages_before = self.batch.messages.len();
        if !value.is_object() {
            return self.skip(line_no, "not a JSON object".into());
        }
        if self.parser.is_none() {
            if let Some(kind) = sniff(&value) {
                self.start_parser(kind);
            }
        }
        let record_type = match &mut self.parser {
            Some(Parser::Claude(p)) => {
                p.line(&mut self.common, line_no, &value, text, &mut self.batch)
            }
            Some(Parser::Codex(p)) => {
                p.line(&mut self.common, line_no, &value, text, &mut self.batch)
            }
            None => value.get("type").and_then(Value::as_str).map(str::to_owned),
        };
        if cut && self.batch.messages.len() > messages_before {
            self.note_cut(line_no);
        }
        let session_id =
            (!self.common.session.id.is_empty()).then(|| self.common.session.id.clone());
        self.records += 1;
        self.batch.records.push(RecordRow {
            source_path: self.common.path.clone(),
            line: line_no,
            byte_offset: offset,
            session_id,
            record_type,
            raw: text.to_owned(),
        });
    }

    /// The line's message had more blocks than were parsed: its last part says so (the
    /// record holds the line whole).
    fn note_cut(&mut self, line_no: u64) {
        let m = self.batch.messages.last().expect("a message of this line");
        let ordinal = self
            .batch
            .parts
            .iter()
            .rev()
            .take_while(|p| p.message_id == m.id && p.source_line == line_no)
            .count() as u32;
        let note = PartRow {
            session_id: m.session_id.clone(),
            message_id: m.id.clone(),
            source_line: line_no,
            ordinal,
            part_type: "truncated".into(),
            tool_name: None,
            call_id: None,
            is_error: None,
            text: Some(format!(
                "[only the first {} items of each list in this line were read; the whole line is in records (source line {line_no})]",
                crate::json::MAX_ITEMS
            )),
            body: None,
        };
        self.batch.parts.push(note);
    }

    /// Name the tool results whose call came later in the file (Claude Code sometimes
    /// writes a result's line before its call's).
    fn name_late_results(&mut self) {
        let calls: std::collections::HashMap<&str, &str> = self
            .batch
            .parts
            .iter()
            .filter(|p| p.part_type == "tool_call")
            .filter_map(|p| Some((p.call_id.as_deref()?, p.tool_name.as_deref()?)))
            .collect();
        let named: Vec<(usize, String)> = self
            .batch
            .parts
            .iter()
            .enumerate()
            .filter(|(_, p)| p.part_type == "tool_result" && p.tool_name.is_none())
            .filter_map(|(i, p)| Some((i, calls.get(p.call_id.as_deref()?)?.to_string())))
            .collect();
        for (i, name) in named {
            self.batch.parts[i].tool_name = Some(name);
        }
    }

    fn finish(mut self, cursor: &mut FileCursor) -> FileBatch {
        self.name_late_results();
        cursor.format = match &self.parser {
            Some(Parser::Claude(_)) => Some(SourceKind::ClaudeCode.as_str().into()),
            Some(Parser::Codex(_)) => Some(SourceKind::Codex.as_str().into()),
            None => None,
        };
        let source_agent = match &self.parser {
            Some(Parser::Claude(p)) => p.source_agent(),
            Some(Parser::Codex(_)) => crate::model::AGENT_CODEX,
            None => "",
        };
        let s = &mut self.common.session;
        cursor.session_id = (!s.id.is_empty()).then(|| s.id.clone());
        cursor.parent_id.clone_from(&s.parent_id);
        cursor.project.clone_from(&s.project);
        cursor.last_ts = self.common.last_ts;
        // A file with no recognisable session keeps its records (session_id null) only.
        if !s.id.is_empty() && self.parser.is_some() && self.records > 0 {
            s.source_agent = source_agent.to_owned();
            self.batch.sessions.push(std::mem::take(s));
        }
        self.batch
    }
}

/// Parses lines a store already holds (its `records`), in line order, with the same parsers
/// and state as [`read_file`]: how a store re-derives its sessions, messages and parts
/// without the source file. The rows come out in batches ([`LineParser::drain`]), so a
/// long file is never held whole; records are not repeated (the caller has them).
pub struct LineParser<'a> {
    pass: Pass<'a>,
    cursor: FileCursor,
}

impl<'a> LineParser<'a> {
    /// `format` is the stored cursor's (`claude-code`, `codex`), `None` to sniff again;
    /// `mtime_ns` the stored file time (the timestamp of messages that carry none).
    pub fn new(file: &'a SourceFile, format: Option<&str>, mtime_ns: i64) -> LineParser<'a> {
        let cursor = FileCursor {
            format: format.map(str::to_owned),
            ..FileCursor::default()
        };
        LineParser {
            pass: Pass::new(file, &cursor, mtime_ns / 1_000_000),
            cursor,
        }
    }

    /// One stored line: its 1-based number, byte offset and text.
    pub fn line(&mut self, line_no: u64, offset: u64, text: &str) {
        self.pass
            .line(line_no, offset, text.as_bytes(), text.len() + 1);
        self.pass.batch.records.clear();
    }

    /// The rows parsed so far (without the session row, which [`LineParser::finish`] gives).
    pub fn drain(&mut self) -> FileBatch {
        std::mem::take(&mut self.pass.batch)
    }

    /// The remaining rows and the file's session row.
    pub fn finish(mut self) -> FileBatch {
        self.pass.finish(&mut self.cursor)
    }
}

/// Guess a file's client from one record.
fn sniff(v: &Value) -> Option<SourceKind> {
    let has = |k: &str| v.get(k).is_some();
    if has("payload") && v.get("type").is_some_and(Value::is_string) {
        return Some(SourceKind::Codex);
    }
    if has("id") && (has("instructions") || has("git")) && !has("type") {
        return Some(SourceKind::Codex);
    }
    if has("sessionId") || has("uuid") || has("parentUuid") || has("leafUuid") {
        return Some(SourceKind::ClaudeCode);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
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
        assert_eq!(
            sniff(&json!({"type":"session_meta","payload":{}})),
            Some(SourceKind::Codex)
        );
        assert_eq!(
            sniff(&json!({"id":"x","timestamp":"t","instructions":null})),
            Some(SourceKind::Codex)
        );
        assert_eq!(
            sniff(&json!({"type":"user","uuid":"u"})),
            Some(SourceKind::ClaudeCode)
        );
        assert_eq!(sniff(&json!({"created_at":"x"})), None);
    }
}
