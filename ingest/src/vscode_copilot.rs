//! VS Code's Copilot Chat: `$XDG_CONFIG_HOME/Code/User` or `~/.config/Code/User`
//! (`~/Library/Application Support/Code/User` on macOS), and the user dirs of Insiders,
//! Code - OSS and VSCodium beside it (`Source::editions`). A window's chats are in
//! `workspaceStorage/<hash>/chatSessions/<session id>.jsonl` (`<hash>/workspace.json` names
//! the folder the window was opened on: the project), chats of a window with no folder in
//! `globalStorage/emptyWindowChatSessions/` and `globalStorage/transferredChatSessions/`.
//!
//! A session is one document: `sessionId`, `creationDate`, `lastMessageDate`, `customTitle`
//! and `requests`, each a turn: the prompt (`message.text`), the answer (`response`, a list
//! of items: markdown, thinking, tool invocations with their results, edits, references),
//! `modelId`, `timestamp`, and `result` once the turn is over. Older builds write the
//! document itself (`<id>.json`, rewritten whole); current ones a log of changes to it
//! (`<id>.jsonl`): a first line `{"kind":0,"v":document}`, then `kind` 1 (set the value at
//! the key path `k` to `v`), 2 (push the items `v` onto the list at `k`, first cutting it to
//! `i` items when `i` is given) and 3 (delete at `k`); VS Code rewrites the file as one
//! `kind` 0 line when the log grows long.
//!
//! The file is replayed whole at every read (`Source::replayed`): each line (a `.json`
//! document: the file) is kept in `records` once, and the session's messages come from the
//! document the whole file makes: a user message per prompt, an assistant message per
//! answer (thinking, its text, each tool call with its result), in the order of the
//! conversation. A turn is read once it is over (it has a `result`, was cancelled, or a
//! later turn follows); the last one still being answered is held back until it is, or
//! until the file has not changed for 30 minutes (`STALE_MS`: VS Code closed mid-answer).

use std::path::Path;

use pond_rows::clients::{self, AGENT_VSCODE_COPILOT};
use serde_json::Value;

use crate::common::{now_ms, Common, STALE_MS};
use crate::model::{FileBatch, MessageRow, Origin, PartRow, Role};
use crate::source::{RecordParser, Source, SourceFile};
use crate::text::{join_search, str_field};

/// The folders of VS Code's user dir that hold chat sessions.
const CHAT_FOLDERS: &[&str] = &[
    "chatSessions",
    "emptyWindowChatSessions",
    "transferredChatSessions",
];

/// VS Code's Copilot Chat: the user dir of VS Code, chats under its storage folders.
pub static SOURCE: Source = Source {
    client: &clients::VSCODE_COPILOT,
    layout: &[
        "workspaceStorage",
        "globalStorage/emptyWindowChatSessions",
        "globalStorage/transferredChatSessions",
    ],
    transcript: is_chat,
    sniff,
    parser: |file, common| Box::new(VsCodeParser::new(file, common)),
    database: None,
    replayed: true,
    documents: true,
    text: false,
};

/// A `.json` or `.jsonl` file in one of the chat folders.
fn is_chat(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e == "json" || e == "jsonl")
        && path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|d| CHAT_FOLDERS.iter().any(|f| d == *f))
}

/// A log's first line (`kind` 0 with the document), or the document itself.
fn sniff(v: &Value) -> bool {
    let document = |d: &Value| {
        d.get("requests").is_some_and(Value::is_array)
            && (d.get("sessionId").is_some() || d.get("requesterUsername").is_some())
    };
    (v.get("kind").and_then(Value::as_u64) == Some(0) && v.get("v").is_some_and(document))
        || document(v)
}

pub struct VsCodeParser {
    /// The session's id until its document says (VS Code names the file after it).
    stem: String,
    /// The document the lines so far make.
    doc: Option<Value>,
    /// For each request of the document, the line that added it (its messages' line).
    request_lines: Vec<u64>,
}

impl VsCodeParser {
    fn new(file: &SourceFile, c: &mut Common) -> Self {
        if c.session.project.is_none() {
            // `workspaceStorage/<hash>/chatSessions/<id>.jsonl`: the window's folder.
            c.session.project = file
                .path
                .parent()
                .filter(|d| d.file_name().is_some_and(|n| n == "chatSessions"))
                .and_then(Path::parent)
                .and_then(crate::paths::workspace_folder);
        }
        VsCodeParser {
            stem: file.stem(),
            doc: None,
            request_lines: Vec::new(),
        }
    }

    /// A whole document at `line_no`: a snapshot, or a log's first line. A file with no
    /// document has no session (its lines are kept as records).
    fn start(&mut self, c: &mut Common, line_no: u64, doc: &Value) {
        c.session.id = str_field(doc, "sessionId")
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| self.stem.clone());
        let n = requests(doc).map_or(0, Vec::len);
        self.request_lines = vec![line_no; n];
        self.doc = Some(doc.clone());
    }

    /// Apply one change of a log; whether it applied (its path was there).
    fn apply(&mut self, line_no: u64, kind: u64, op: &Value) -> bool {
        let Some(doc) = self.doc.as_mut() else {
            return false;
        };
        let Some(path) = op
            .get("k")
            .and_then(Value::as_array)
            .filter(|k| !k.is_empty())
        else {
            return false;
        };
        let applied = match kind {
            1 => set(doc, path, op.get("v").cloned().unwrap_or(Value::Null)),
            2 => push(doc, path, op.get("v"), op.get("i").and_then(Value::as_u64)),
            3 => delete(doc, path),
            _ => false,
        };
        if applied {
            self.track_requests(line_no, kind, path, op);
        }
        applied
    }

    /// Keep [`Self::request_lines`] in step with the document's requests.
    fn track_requests(&mut self, line_no: u64, kind: u64, path: &[Value], op: &Value) {
        if path.first().and_then(Value::as_str) != Some("requests") {
            return;
        }
        let n = self.doc.as_ref().and_then(requests).map_or(0, Vec::len);
        if path.len() == 1 && kind != 2 {
            // The whole list set (or deleted).
            self.request_lines = vec![line_no; n];
            return;
        }
        if path.len() == 1 {
            let kept = op
                .get("i")
                .and_then(Value::as_u64)
                .map_or(self.request_lines.len(), |i| i as usize);
            self.request_lines.truncate(kept);
        }
        if path.len() == 2 && kind == 1 {
            if let Some(line) = path[1]
                .as_u64()
                .and_then(|i| self.request_lines.get_mut(i as usize))
            {
                *line = line_no;
            }
        }
        self.request_lines.resize(n, line_no);
    }

    /// One turn: the prompt, then the answer.
    fn request(&self, c: &mut Common, line_no: u64, r: &Value, out: &mut FileBatch) {
        let Some(id) = str_field(r, "requestId").filter(|s| !s.is_empty()) else {
            return;
        };
        let model = str_field(r, "modelId").filter(|m| !m.is_empty());
        let asked = r.get("timestamp").and_then(Value::as_i64);
        let ts = c.touch(asked);
        // Ids are VS Code's own, one turn per request.
        let user = c.message(
            id.clone(),
            ts,
            Role::User,
            AGENT_VSCODE_COPILOT,
            line_no,
            Origin::Own,
        );
        let prompt = r
            .pointer("/message/text")
            .and_then(Value::as_str)
            .filter(|t| !t.trim().is_empty());
        if let Some(t) = prompt {
            let parts = vec![PartRow::with_text(&user, 0, "text", Some(t.to_owned()))];
            let user = MessageRow {
                search_text: join_search(vec![t.to_owned()]),
                ..user.clone()
            };
            out.push_message(user, parts);
        }
        let elapsed = r
            .pointer("/result/timings/totalElapsed")
            .and_then(Value::as_i64);
        let answered = match (asked, elapsed) {
            (Some(t), Some(e)) if e >= 0 => Some(t + e),
            _ => None,
        };
        let answer = MessageRow {
            id: str_field(r, "responseId")
                .filter(|s| !s.is_empty() && *s != id)
                .unwrap_or_else(|| format!("{id}/response")),
            timestamp: c.touch(answered),
            role: Role::Assistant,
            model,
            ..user
        };
        let (parts, said) = answer_parts(&answer, r);
        if parts.is_empty() {
            return;
        }
        let answer = MessageRow {
            search_text: join_search(said),
            ..answer
        };
        out.push_message(answer, parts);
    }
}

/// The document's requests.
fn requests(doc: &Value) -> Option<&Vec<Value>> {
    doc.get("requests").and_then(Value::as_array)
}

/// Whether a turn is over: answered (`result`), cancelled, or marked complete.
fn is_over(r: &Value) -> bool {
    r.get("result").is_some_and(|v| !v.is_null())
        || r.get("isCanceled").and_then(Value::as_bool) == Some(true)
        || r.pointer("/modelState/value")
            .and_then(Value::as_i64)
            .is_some_and(|s| s != 0)
}

/// An answer's parts in order (runs of markdown as text, thinking, tool calls with their
/// results), and what it said (the markdown), for search.
fn answer_parts(m: &MessageRow, r: &Value) -> (Vec<PartRow>, Vec<String>) {
    let mut parts = Vec::new();
    let mut said = Vec::new();
    let mut run = String::new();
    let flush = |run: &mut String, parts: &mut Vec<PartRow>, said: &mut Vec<String>| {
        if !run.trim().is_empty() {
            said.push(run.clone());
            parts.push(PartRow::with_text(m, 0, "text", Some(run.clone())));
        }
        run.clear();
    };
    let items = r.get("response").and_then(Value::as_array);
    for item in items.into_iter().flatten() {
        match item.get("kind").and_then(Value::as_str) {
            None => run.push_str(str_field(item, "value").as_deref().unwrap_or("")),
            Some("markdownContent" | "markdownVuln") => run.push_str(
                item.pointer("/content/value")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            ),
            Some("thinking") => {
                flush(&mut run, &mut parts, &mut said);
                let text = match item.get("value") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
                    _ => String::new(),
                };
                if !text.trim().is_empty() {
                    parts.push(PartRow::with_text(m, 0, "thinking", Some(text)));
                }
            }
            Some("toolInvocationSerialized") => {
                flush(&mut run, &mut parts, &mut said);
                tool_parts(m, item, &mut parts);
            }
            // References, edits, code block links, undo stops, progress: not conversation.
            Some(_) => {}
        }
    }
    flush(&mut run, &mut parts, &mut said);
    (parts, said)
}

/// A tool invocation's call (its input: the command line of a terminal tool, else its
/// input as the result details keep it, else what VS Code showed), and its result once
/// complete.
fn tool_parts(m: &MessageRow, t: &Value, parts: &mut Vec<PartRow>) {
    let mut call = PartRow::of(m, 0, "tool_call");
    call.call_id = str_field(t, "toolCallId");
    call.tool_name = str_field(t, "toolId");
    let data = t.get("toolSpecificData");
    call.body = data
        .and_then(|d| {
            d.pointer("/commandLine/userEdited")
                .or_else(|| d.pointer("/commandLine/toolEdited"))
                .or_else(|| d.pointer("/commandLine/original"))
                .or_else(|| d.get("command"))
        })
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| match t.pointer("/resultDetails/input") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) if !v.is_null() => Some(v.to_string()),
            _ => None,
        })
        .or_else(|| shown(t.get("invocationMessage")));
    let (call_id, name) = (call.call_id.clone(), call.tool_name.clone());
    parts.push(call);
    if t.get("isComplete").and_then(Value::as_bool) != Some(true) {
        return;
    }
    let output: Vec<&str> = t
        .pointer("/resultDetails/output")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|o| o.get("value").and_then(Value::as_str))
        .collect();
    let text = if output.is_empty() {
        data.and_then(|d| d.pointer("/terminalCommandOutput/text"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| shown(t.get("pastTenseMessage")))
    } else {
        Some(output.join("\n"))
    };
    let mut result = PartRow::with_text(m, 0, "tool_result", text);
    result.call_id = call_id;
    result.tool_name = name;
    result.is_error = t.pointer("/resultDetails/isError").and_then(Value::as_bool);
    parts.push(result);
}

/// A message VS Code showed: a string, or markdown (`{"value": ...}`).
fn shown(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        v => str_field(v, "value"),
    }
    .filter(|s| !s.trim().is_empty())
}

/// The value at `path` (object keys and list indexes).
fn at<'a>(doc: &'a mut Value, path: &[Value]) -> Option<&'a mut Value> {
    path.iter().try_fold(doc, |v, k| match (v, k) {
        (Value::Object(o), Value::String(k)) => o.get_mut(k),
        (Value::Array(a), Value::Number(i)) => a.get_mut(i.as_u64()? as usize),
        _ => None,
    })
}

/// Set the value at `path` (a new key of an object, or an index of a list up to its end).
fn set(doc: &mut Value, path: &[Value], v: Value) -> bool {
    let (last, parent) = path.split_last().expect("a non-empty path");
    match (at(doc, parent), last) {
        (Some(Value::Object(o)), Value::String(k)) => {
            o.insert(k.clone(), v);
            true
        }
        (Some(Value::Array(a)), Value::Number(i)) => match i.as_u64().map(|i| i as usize) {
            Some(i) if i < a.len() => {
                a[i] = v;
                true
            }
            Some(i) if i == a.len() => {
                a.push(v);
                true
            }
            _ => false,
        },
        _ => false,
    }
}

/// Push `items` onto the list at `path` (made when absent), first cutting it to `cut`.
fn push(doc: &mut Value, path: &[Value], items: Option<&Value>, cut: Option<u64>) -> bool {
    if at(doc, path).is_none() && !set(doc, path, Value::Array(Vec::new())) {
        return false;
    }
    let Some(Value::Array(list)) = at(doc, path) else {
        return false;
    };
    if let Some(cut) = cut {
        list.truncate(cut as usize);
    }
    list.extend(
        items
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .cloned(),
    );
    true
}

/// Delete the value at `path` (a list's item becomes null, as VS Code leaves it).
fn delete(doc: &mut Value, path: &[Value]) -> bool {
    let (last, parent) = path.split_last().expect("a non-empty path");
    match (at(doc, parent), last) {
        (Some(Value::Object(o)), Value::String(k)) => {
            o.remove(k);
            true
        }
        (Some(Value::Array(a)), Value::Number(i)) => {
            match i.as_u64().and_then(|i| a.get_mut(i as usize)) {
                Some(item) => {
                    *item = Value::Null;
                    true
                }
                None => false,
            }
        }
        _ => false,
    }
}

impl RecordParser for VsCodeParser {
    fn source_agent(&self) -> &'static str {
        AGENT_VSCODE_COPILOT
    }

    fn line(
        &mut self,
        c: &mut Common,
        line_no: u64,
        v: &Value,
        _raw: &str,
        _out: &mut FileBatch,
    ) -> Option<String> {
        let Some(kind) = v.get("kind").and_then(Value::as_u64) else {
            if v.get("requests").is_some_and(Value::is_array) {
                self.start(c, line_no, v);
                return Some("snapshot".into());
            }
            return None;
        };
        let name = match kind {
            0 => "initial",
            1 => "set",
            2 => "push",
            3 => "delete",
            _ => return Some(format!("kind/{kind}")),
        };
        if kind == 0 {
            return match v.get("v").filter(|d| d.is_object()) {
                Some(d) => {
                    self.start(c, line_no, d);
                    Some(name.into())
                }
                None => Some("initial/not-a-document".into()),
            };
        }
        if self.apply(line_no, kind, v) {
            Some(name.into())
        } else {
            // A change to a path the document does not have (or no document yet): kept in
            // records, not applied.
            Some(format!("{name}/not-applied"))
        }
    }

    fn finish(&mut self, c: &mut Common, out: &mut FileBatch) {
        let Some(doc) = &self.doc else {
            return;
        };
        if let Some(t) = str_field(doc, "customTitle").filter(|t| !t.trim().is_empty()) {
            c.session.title = Some(t);
        }
        let ms = |k: &str| doc.get(k).and_then(Value::as_i64);
        c.span(ms("creationDate"), ms("lastMessageDate"));
        let all = requests(doc).map(Vec::as_slice).unwrap_or_default();
        // The file's time (ms): a turn still being answered in a file this old is read.
        let stale = now_ms() - c.fallback_ts >= STALE_MS;
        for (i, r) in all.iter().enumerate() {
            let last = i + 1 == all.len();
            if last && !is_over(r) && !stale {
                // Looked at again next sync, changed or not.
                c.held = true;
                break;
            }
            let line = self.request_lines.get(i).copied().unwrap_or(1);
            self.request(c, line, r, out);
        }
    }
}

/// The document a log's lines make (its first line the document), for the tests.
#[cfg(test)]
pub(crate) fn replay(log: &str) -> Value {
    let mut lines = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap());
    let first = lines.next().expect("a first line");
    let mut p = VsCodeParser {
        stem: String::new(),
        doc: Some(first["v"].clone()),
        request_lines: Vec::new(),
    };
    for (n, op) in lines.enumerate() {
        if let Some(kind) = op["kind"].as_u64() {
            p.apply(n as u64 + 2, kind, &op);
        }
    }
    p.doc.unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn apply_all(doc: Value, ops: &[Value]) -> Value {
        let mut p = VsCodeParser {
            stem: String::new(),
            doc: Some(doc),
            request_lines: Vec::new(),
        };
        for (n, op) in ops.iter().enumerate() {
            let kind = op["kind"].as_u64().unwrap();
            p.apply(n as u64 + 2, kind, op);
        }
        p.doc.unwrap()
    }

    #[test]
    fn changes_replay_as_vs_code_applies_them() {
        let doc = json!({"requests": [], "title": "a"});
        let got = apply_all(
            doc,
            &[
                json!({"kind":2,"k":["requests"],"v":[{"requestId":"r1","response":[]}]}),
                json!({"kind":2,"k":["requests",0,"response"],"v":[{"value":"a"},{"value":"b"}]}),
                // Cut to one item, then push: the second is replaced.
                json!({"kind":2,"k":["requests",0,"response"],"v":[{"value":"c"}],"i":1}),
                json!({"kind":1,"k":["requests",0,"result"],"v":{"timings":{}}}),
                json!({"kind":3,"k":["title"]}),
                json!({"kind":1,"k":["customTitle"],"v":"named"}),
                // A path that is not there changes nothing.
                json!({"kind":1,"k":["requests",5,"result"],"v":{}}),
            ],
        );
        assert_eq!(
            got,
            json!({
                "requests": [{"requestId":"r1","response":[{"value":"a"},{"value":"c"}],"result":{"timings":{}}}],
                "customTitle": "named"
            })
        );
    }

    #[test]
    fn request_lines_follow_the_list() {
        let mut p = VsCodeParser {
            stem: String::new(),
            doc: Some(json!({"requests": [{"requestId":"a"}]})),
            request_lines: vec![1],
        };
        let push = json!({"kind":2,"k":["requests"],"v":[{"requestId":"b"},{"requestId":"c"}]});
        assert!(p.apply(2, 2, &push));
        assert_eq!(p.request_lines, vec![1, 2, 2]);
        let splice = json!({"kind":2,"k":["requests"],"v":[{"requestId":"d"}],"i":1});
        assert!(p.apply(3, 2, &splice));
        assert_eq!(p.request_lines, vec![1, 3]);
        assert!(!p.apply(4, 1, &json!({"kind":1,"k":["requests",9],"v":{}})));
        assert_eq!(p.request_lines, vec![1, 3]);
    }
}
