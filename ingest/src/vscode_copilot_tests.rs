//! VS Code's Copilot Chat read as sessions: the fixture user dir (`tests/clients/vscode-copilot`)
//! with a change log and a snapshot, a log that grows and is compacted between reads, a turn
//! still being answered, and files that cannot be read.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::model::Role;
use crate::reader::{read_file, ReadMode};
use crate::sources::VSCODE_COPILOT;
use crate::{discover_all, FileBatch, SourceFile};

const LOG: &str = "7d3b9a52-1c4e-4f6a-9b1d-2e8f0c7a5d41";
const SNAPSHOT: &str = "c4e8f1a0-5b2d-4e7c-8a9f-3d6b1e0c2f75";

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// A copy of the fixture user dir (its files just written: a turn in progress is recent).
fn home() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let from =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/clients/vscode-copilot/User");
    assert!(from.is_dir(), "no fixture at {}", from.display());
    let user = d.path().join("Code/User");
    copy_dir(&from, &user);
    (d, user)
}

fn files(user: &Path) -> Vec<SourceFile> {
    crate::tests::db_sessions(user, VSCODE_COPILOT)
}

fn file(user: &Path, id: &str) -> SourceFile {
    crate::tests::db_session(user, VSCODE_COPILOT, id)
}

fn ids(b: &FileBatch) -> Vec<&str> {
    b.messages.iter().map(|m| m.id.as_str()).collect()
}

fn part<'a>(b: &'a FileBatch, id: &str, ty: &str) -> Vec<&'a str> {
    b.parts
        .iter()
        .filter(|p| p.message_id == id && p.part_type == ty)
        .map(|p| p.text.as_deref().or(p.body.as_deref()).unwrap_or(""))
        .collect()
}

fn set_age(path: &Path, age: Duration) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - age).unwrap();
}

#[test]
fn a_log_and_a_snapshot_replay_to_their_sessions() {
    let (_d, user) = home();
    let found = files(&user);
    let mut names: Vec<String> = found.iter().map(|f| f.stem()).collect();
    names.sort();
    // The chat editing state beside the chats is not a session.
    assert_eq!(names, [LOG, SNAPSHOT]);

    let out = read_file(&file(&user, LOG), None);
    assert_eq!(out.mode, ReadMode::New);
    let b = &out.batch;
    assert!(b.skips.is_empty(), "{:?}", b.skips);
    let s = &b.sessions[0];
    assert_eq!(s.id, LOG);
    assert_eq!(s.source_agent, "vscode-copilot");
    assert_eq!(s.project.as_deref(), Some("/home/dev/weather station"));
    assert_eq!(s.title.as_deref(), Some("Anemometer spikes at night"));
    assert_eq!(s.created_at, Some(1760000000000));
    assert_eq!(s.updated_at, Some(1760000120000));
    // The third turn is still being answered: held back.
    assert_eq!(
        ids(b),
        [
            "request_a1",
            "request_a1/response",
            "request_a2",
            "response_a2"
        ]
    );
    assert_eq!(b.records.len(), 13, "every line a record");
    let types: Vec<&str> = b
        .records
        .iter()
        .map(|r| r.record_type.as_deref().unwrap_or(""))
        .collect();
    assert_eq!(
        types,
        [
            "initial",
            "push",
            "push",
            "push",
            "push",
            "set",
            "set",
            "push",
            "delete",
            "kind/7",
            "set/not-applied",
            "set",
            "push"
        ]
    );
    // The answer in the order VS Code shows it; the tool call cut and pushed again (`i`)
    // is there once, complete.
    let types: Vec<&str> = b
        .parts
        .iter()
        .filter(|p| p.message_id == "request_a1/response")
        .map(|p| p.part_type.as_str())
        .collect();
    assert_eq!(
        types,
        ["thinking", "text", "tool_call", "tool_result", "text"]
    );
    assert_eq!(
        part(b, "request_a1/response", "text"),
        [
            "The reed switch bounces when the cups turn slowly, ",
            "and the debounce is 0 ms: set `DEBOUNCE_MS` to 15."
        ]
    );
    assert_eq!(
        part(b, "request_a1/response", "tool_result"),
        ["src/wind.c:41: #define DEBOUNCE_MS 0"]
    );
    assert_eq!(part(b, "response_a2", "tool_call"), ["make test"]);
    assert_eq!(
        part(b, "response_a2", "tool_result"),
        ["wind_test: 3 passed"]
    );
    let answer = &b.messages[1];
    assert_eq!(answer.role, Role::Assistant);
    assert_eq!(answer.model.as_deref(), Some("copilot/gpt-4.1"));
    assert_eq!(answer.timestamp, 1760000005000 + 4200);
    assert_eq!(answer.source_line, 2, "the line that added the turn");
    // Search holds what was said, not tool input or output.
    let said = answer.search_text.as_deref().unwrap();
    assert!(said.contains("reed switch") && said.contains("DEBOUNCE_MS"));
    assert!(!said.contains("src/wind.c:41"));
    assert!(b.messages[3]
        .search_text
        .as_deref()
        .unwrap()
        .contains("All three pass"));

    // The snapshot: pretty-printed JSON, one record.
    let out = read_file(&file(&user, SNAPSHOT), None);
    let b = &out.batch;
    assert!(b.skips.is_empty(), "{:?}", b.skips);
    assert_eq!(b.records.len(), 1);
    assert_eq!(b.records[0].record_type.as_deref(), Some("snapshot"));
    let s = &b.sessions[0];
    assert_eq!((s.id.as_str(), s.project.as_deref()), (SNAPSHOT, None));
    // The cancelled last turn is over.
    assert_eq!(
        ids(b),
        [
            "request_b1",
            "request_b1/response",
            "request_b2",
            "request_b2/response"
        ]
    );
    assert_eq!(
        part(b, "request_b1/response", "text"),
        ["Multiply by 0.02953: 1013.25 hPa is 29.92 inHg."]
    );
    crate::tests::db_lines_rederive(&user, VSCODE_COPILOT);
}

#[test]
fn a_log_that_grows_and_is_compacted_keeps_every_line_and_gives_each_turn_once_over() {
    let (_d, user) = home();
    let f = file(&user, LOG);
    let first = read_file(&f, None);
    assert_eq!(ids(&first.batch).len(), 4);

    // The turn is answered: the log grows; the file is read again from its start.
    let mut log = std::fs::read_to_string(&f.path).unwrap();
    for op in [
        json!({"kind":2,"k":["requests",2,"response"],"v":[{"value":" bucket: each tip is 0.2 mm."}]}),
        json!({"kind":1,"k":["requests",2,"result"],"v":{"timings":{"totalElapsed":3000}}}),
    ] {
        log.push_str(&format!("{op}\n"));
    }
    std::fs::write(&f.path, &log).unwrap();
    let grown = read_file(&f, Some(&first.cursor));
    assert_eq!(grown.mode, ReadMode::Rewritten, "{:?}", grown.batch.skips);
    assert_eq!(
        grown.batch.records.len(),
        15,
        "the store keeps the new lines"
    );
    assert_eq!(
        &ids(&grown.batch)[4..],
        ["request_a3", "request_a3/response"]
    );
    assert_eq!(
        part(&grown.batch, "request_a3/response", "text"),
        ["Looking at the rain bucket: each tip is 0.2 mm."]
    );
    let unchanged = read_file(&f, Some(&grown.cursor));
    assert_eq!(unchanged.mode, ReadMode::Unchanged);

    // VS Code compacts a long log into one line, the document: the same turns.
    let doc = crate::vscode_copilot::replay(&log);
    std::fs::write(&f.path, format!("{}\n", json!({"kind":0,"v":doc}))).unwrap();
    let compacted = read_file(&f, Some(&grown.cursor));
    assert_eq!(compacted.batch.records.len(), 1);
    assert_eq!(ids(&compacted.batch), ids(&grown.batch));
    let said = |b: &FileBatch| -> Vec<(String, String, Option<String>)> {
        b.parts
            .iter()
            .map(|p| (p.message_id.clone(), p.part_type.clone(), p.text.clone()))
            .collect()
    };
    assert_eq!(said(&compacted.batch), said(&grown.batch));
    assert_eq!(compacted.batch.sessions, grown.batch.sessions);
}

#[test]
fn a_turn_left_unanswered_is_read_once_the_file_is_stale() {
    let (_d, user) = home();
    let f = file(&user, LOG);
    // Read a second before it goes stale: the last turn is held back, and the file is
    // looked at again next time.
    let stale = Duration::from_millis(crate::common::STALE_MS as u64);
    set_age(&f.path, stale - Duration::from_secs(1));
    let fresh = read_file(&f, None);
    assert_eq!(ids(&fresh.batch).len(), 4);
    assert!(fresh.cursor.held);
    // The file does not change again (same size and time): once stale, the turn is read.
    std::thread::sleep(Duration::from_millis(1100));
    let out = read_file(&f, Some(&fresh.cursor));
    assert_ne!(out.mode, ReadMode::Unchanged);
    assert_eq!(ids(&out.batch).len(), 6, "VS Code closed mid-answer");
    assert_eq!(
        part(&out.batch, "request_a3/response", "text"),
        ["Looking at the rain"]
    );
    assert!(!out.cursor.held);
    let again = read_file(&f, Some(&out.cursor));
    assert_eq!(again.mode, ReadMode::Unchanged);
}

#[test]
fn files_that_cannot_be_read_are_reported_and_bad_changes_kept() {
    let (_d, user) = home();
    let dir = user.join("globalStorage/emptyWindowChatSessions");
    // A snapshot cut short (VS Code writing it): not read, said why.
    let path = dir.join(format!("{SNAPSHOT}.json"));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, &text[..text.len() / 2]).unwrap();
    let out = read_file(&file(&user, SNAPSHOT), None);
    assert!(out.batch.records.is_empty() && out.batch.messages.is_empty());
    assert!(
        out.batch.skips[0]
            .reason
            .contains("not a whole JSON document"),
        "{:?}",
        out.batch.skips
    );
    // A log whose first line is lost: every change is kept, none applies, nothing breaks.
    let log = dir.join("0a1b2c3d.jsonl");
    let ops = [
        "{\"kind\":0,\"v\":{\"requ".to_owned(),
        json!({"kind":2,"k":["requests"],"v":[{"requestId":"r"}]}).to_string(),
        json!({"kind":1,"k":[],"v":1}).to_string(),
        json!({"kind":"1"}).to_string(),
        "[1,2]".to_owned(),
    ];
    std::fs::write(&log, ops.join("\n") + "\n").unwrap();
    let out = read_file(&file(&user, "0a1b2c3d"), None);
    assert!(out.batch.messages.is_empty());
    assert_eq!(out.batch.records.len(), 3, "{:?}", out.batch.skips);
    assert_eq!(out.batch.skips.len(), 2, "the broken line and the array");
    assert!(out.batch.sessions.is_empty(), "no document, no session");
}

#[test]
fn a_folder_of_copies_is_found_without_naming_the_client() {
    let (d, _user) = home();
    let found = discover_all(d.path(), None);
    let kinds: Vec<_> = found.files.iter().map(|f| f.kind.map(|k| k.name)).collect();
    assert_eq!(kinds, [Some("vscode-copilot"), Some("vscode-copilot")]);
}
