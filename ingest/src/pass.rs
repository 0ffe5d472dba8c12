//! One pass of a format's parser over a file's lines: the parser decided by the caller's
//! hint or by sniffing, the batch of rows it fills, and the same pass over lines a store
//! already holds ([`LineParser`]).

use serde_json::Value;

use crate::common::{Common, MAX_LINE_BYTES};
use crate::file_cursor::FileCursor;
use crate::model::{FileBatch, PartRow, RecordRow, SessionRow, Skip};
use crate::source::{RecordParser, Source, SourceFile, SourceKind};

/// The client's parser of a file, decided by the caller's hint or by sniffing.
struct Parser {
    kind: SourceKind,
    records: Box<dyn RecordParser>,
}

pub(crate) struct Pass<'a> {
    pub(crate) file: &'a SourceFile,
    pub(crate) common: Common,
    parser: Option<Parser>,
    pub(crate) batch: FileBatch,
    /// Lines stored as records in this pass (drained batches included).
    pub(crate) records: u64,
    /// Lines skipped in this pass, for the cap on the ones kept in full.
    pub(crate) skip_examples: usize,
}

impl<'a> Pass<'a> {
    pub(crate) fn new(file: &'a SourceFile, cursor: &FileCursor, fallback_ts: i64) -> Self {
        let common = Common {
            path: file.key(),
            session: SessionRow {
                id: cursor.session_id.clone().unwrap_or_default(),
                parent_id: cursor.parent_id.clone(),
                project: cursor.project.clone(),
                source_path: file.key(),
                ..SessionRow::default()
            },
            last_ts: cursor.last_ts,
            fallback_ts,
            held: false,
            model: cursor.model.clone(),
            usage_total: cursor.usage_total,
        };
        let kind = match cursor.format.as_deref() {
            Some(f) => Source::parse(f),
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

    pub(crate) fn start_parser(&mut self, kind: SourceKind) {
        self.parser = Some(Parser {
            kind,
            records: (kind.parser)(self.file, &mut self.common),
        });
    }

    pub(crate) fn skip(&mut self, line: u64, reason: String) {
        let skip = Skip {
            path: self.common.path.clone(),
            line,
            reason,
        };
        self.batch.skip(skip, self.skip_examples);
        self.skip_examples += 1;
    }

    pub(crate) fn line(&mut self, line_no: u64, offset: u64, bytes: &[u8], consumed: usize) {
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
        if self.file.is_text() {
            return self.text_line(line_no, offset, text);
        }
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
            if let Some(kind) = crate::sources::sniff(&value) {
                self.start_parser(kind);
            }
        }
        let record_type = match &mut self.parser {
            Some(p) => p
                .records
                .line(&mut self.common, line_no, &value, text, &mut self.batch),
            None => value.get("type").and_then(Value::as_str).map(str::to_owned),
        };
        if let Some(cut) = cut.filter(|_| self.batch.messages.len() > messages_before) {
            self.note_cut(line_no, cut);
        }
        self.record(line_no, offset, record_type, text);
    }

    /// A line of a plain-text transcript: a record as it is (a blank line is not one: the
    /// gap in the line numbers keeps its place), read by the parser.
    fn text_line(&mut self, line_no: u64, offset: u64, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        let record_type = match &mut self.parser {
            Some(p) => p
                .records
                .text_line(&mut self.common, line_no, text, &mut self.batch),
            None => None,
        };
        self.record(line_no, offset, record_type, text);
    }

    fn record(&mut self, line_no: u64, offset: u64, record_type: Option<String>, text: &str) {
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
    pub(crate) fn note_cut(&mut self, line_no: u64, cut: crate::json::Cut) {
        let m = self.batch.messages.last().expect("a message of this line");
        let ordinal = self
            .batch
            .parts
            .iter()
            .rev()
            .take_while(|p| p.message_id == m.id && p.source_line == line_no)
            .count() as u32;
        let read = match cut {
            crate::json::Cut::List => format!(
                "only the first {} items of each list in this line were read",
                crate::json::MAX_ITEMS
            ),
            crate::json::Cut::Line => format!(
                "only the first {} items of this line were read (what follows them, later messages too, was not)",
                crate::json::MAX_LINE_ITEMS
            ),
        };
        let note = PartRow {
            text: Some(format!(
                "[{read}; the whole line is in records (source line {line_no})]"
            )),
            ..PartRow::of(m, ordinal, "truncated")
        };
        self.batch.parts.push(note);
    }

    /// Name the tool results whose call came later in the file (Claude Code sometimes
    /// writes a result's line before its call's).
    pub(crate) fn name_late_results(&mut self) {
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

    pub(crate) fn finish(mut self, cursor: &mut FileCursor) -> FileBatch {
        if let Some(p) = &mut self.parser {
            p.records.finish(&mut self.common, &mut self.batch);
        }
        self.name_late_results();
        cursor.format = self.parser.as_ref().map(|p| p.kind.name.to_owned());
        let source_agent = self
            .parser
            .as_ref()
            .map_or("", |p| p.records.source_agent());
        let s = &mut self.common.session;
        cursor.session_id = (!s.id.is_empty()).then(|| s.id.clone());
        cursor.parent_id.clone_from(&s.parent_id);
        cursor.project.clone_from(&s.project);
        cursor.last_ts = self.common.last_ts;
        cursor.held = self.common.held;
        cursor.model.clone_from(&self.common.model);
        cursor.usage_total = self.common.usage_total;
        // A file with no recognisable session keeps its records (session_id null) only.
        if !s.id.is_empty() && self.parser.is_some() && self.records > 0 {
            s.source_agent = source_agent.to_owned();
            self.batch.sessions.push(std::mem::take(s));
        }
        self.batch
    }
}

/// Parses lines a store already holds (its `records`), in line order, with the same parsers
/// and state as [`read_file`](crate::reader::read_file): how a store re-derives its sessions, messages and parts
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
