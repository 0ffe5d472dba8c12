//! Parser tests over the fixtures in `tests/fixtures` (synthetic files written for pond).

use std::io::Write;
use std::path::PathBuf;

use crate::discover::discover;
use crate::model::Role;
use crate::reader::{read_file, ReadMode};
use crate::sources::{SourceKind, CLAUDE_CODE, CODEX, COPILOT, CURSOR, GEMINI};
use crate::SourceFile;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

/// The fixtures of the clients added through the registry (`tests/clients`).
fn clients() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/clients")
}

fn read_all(dir: &str, kind: Option<SourceKind>) -> crate::FileBatch {
    read_tree(&fixtures().join(dir), kind)
}

fn read_tree(root: &std::path::Path, kind: Option<SourceKind>) -> crate::FileBatch {
    let dir = root.display();
    let mut all = crate::FileBatch::default();
    let found = crate::discover_all(root, kind);
    assert!(found.unreadable.is_empty(), "{:?}", found.unreadable);
    // The path is compiled in: a test binary built from another checkout (a CI clone
    // sharing the target dir) looks there, and says so here.
    assert!(
        !found.files.is_empty(),
        "no files under the fixtures at {dir}"
    );
    for f in found.files {
        all.append(read_file(&f, None).batch);
    }
    all
}

#[test]
fn claude_sessions_messages_parts() {
    let b = read_all("claude", Some(CLAUDE_CODE));
    assert!(b.skips.is_empty(), "{:?}", b.skips);
    assert_eq!(b.sessions.len(), 3);
    let main = b
        .sessions
        .iter()
        .find(|s| s.id.starts_with("1111"))
        .unwrap();
    assert_eq!(main.project.as_deref(), Some("/home/dev/shop"));
    assert_eq!(
        main.title.as_deref(),
        Some("Fix cent drift in checkout total")
    );
    assert_eq!(main.source_agent, "claude-code");
    let sub = b.sessions.iter().find(|s| s.id == "agent-a1b2c3").unwrap();
    assert_eq!(sub.parent_id.as_deref(), Some(main.id.as_str()));
    assert_eq!(sub.source_agent, "claude-code/subagent");
    let legacy = b
        .sessions
        .iter()
        .find(|s| s.id.starts_with("2222"))
        .unwrap();
    assert_eq!(legacy.title.as_deref(), Some("Legacy parser refactor"));

    // Every line is a record; the duplicate uuid is still two records, one id twice.
    assert_eq!(b.records.len(), 13 + 2 + 3);
    let by_id = |id: &str| b.messages.iter().filter(|m| m.id == id).collect::<Vec<_>>();
    assert_eq!(by_id("c-a3").len(), 2, "dedupe is the store's job");
    let meta = &by_id("c-u1")[0];
    assert_eq!(meta.search_text, None, "isMeta rows are harness text");
    let q = &by_id("c-u2")[0];
    assert_eq!(q.role, Role::User);
    assert_eq!(
        q.search_text.as_deref(),
        Some("why does the checkout total drift by a cent?")
    );
    assert_eq!(
        by_id("c-a1")[0].search_text,
        None,
        "thinking is not search text"
    );
    let result = &by_id("c-u3")[0];
    assert_eq!(result.role, Role::Tool);
    let rp = b.parts.iter().find(|p| p.message_id == "c-u3").unwrap();
    assert_eq!(rp.tool_name.as_deref(), Some("Bash"));
    assert_eq!(rp.is_error, Some(false));
    let multi = &by_id("c-a3")[0];
    assert!(multi
        .search_text
        .as_ref()
        .unwrap()
        .contains("quantize to cents"));
    assert_eq!(multi.model.as_deref(), Some("claude-test"));
    let img = b.parts.iter().find(|p| p.part_type == "image").unwrap();
    assert!(img.body.as_ref().unwrap().contains("image/png"));
    assert_eq!(by_id("c-s1")[0].role, Role::System);
    let unknown = b
        .records
        .iter()
        .find(|r| r.record_type.as_deref() == Some("brand-new-record-kind"))
        .unwrap();
    assert!(unknown.raw.contains("\"x\":1"));
}

#[test]
fn codex_current_and_legacy() {
    let b = read_all("codex", Some(CODEX));
    assert!(b.skips.is_empty(), "{:?}", b.skips);
    assert_eq!(b.sessions.len(), 2);
    let cur = b
        .sessions
        .iter()
        .find(|s| s.id.starts_with("3333"))
        .unwrap();
    assert_eq!(cur.project.as_deref(), Some("/home/dev/api"));
    assert!(cur.header.as_ref().unwrap().contains("session_meta"));
    let searchable: Vec<_> = b
        .messages
        .iter()
        .filter(|m| m.session_id == cur.id && m.search_text.is_some())
        .collect();
    // The user prompt once (not the event_msg copy, not the environment block) + the answer.
    assert_eq!(searchable.len(), 2);
    assert_eq!(searchable[0].id, format!("{}:4", cur.id));
    let out = b
        .parts
        .iter()
        .find(|p| p.part_type == "tool_result" && p.session_id == cur.id)
        .unwrap();
    assert_eq!(out.tool_name.as_deref(), Some("shell"));
    assert_eq!(out.text.as_deref(), Some("001_invoices.sql\n002_users.sql"));
    assert_eq!(out.is_error, Some(false));

    let legacy = b
        .sessions
        .iter()
        .find(|s| s.id.starts_with("4444"))
        .unwrap();
    let lm: Vec<_> = b
        .messages
        .iter()
        .filter(|m| m.session_id == legacy.id)
        .collect();
    assert_eq!(lm.len(), 5);
    assert!(lm.iter().all(|m| m.timestamp == legacy.created_at.unwrap()));
    let failed = b
        .parts
        .iter()
        .find(|p| p.part_type == "tool_result" && p.session_id == legacy.id)
        .unwrap();
    assert_eq!(failed.is_error, Some(true));
}

#[test]
fn copilot_events_become_messages_parts_and_records() {
    let b = read_tree(&clients().join("copilot"), Some(COPILOT));
    assert!(b.skips.is_empty(), "{:?}", b.skips);
    // Both layouts: a folder per session, and the flat file of older builds.
    assert_eq!(b.sessions.len(), 2);
    let s = b
        .sessions
        .iter()
        .find(|s| s.id.starts_with("5555"))
        .unwrap();
    assert_eq!(s.source_agent, "copilot");
    assert_eq!(s.project.as_deref(), Some("/home/dev/garden"));
    assert!(s.header.as_ref().unwrap().contains("session.start"));
    assert_eq!(s.created_at, Some(1_777_885_200_000), "startTime");
    assert_eq!(
        s.title.as_deref(),
        Some("Configurable rest days"),
        "workspace.yaml"
    );
    let flat = b
        .sessions
        .iter()
        .find(|s| s.id.starts_with("6666"))
        .unwrap();
    assert_eq!(flat.project.as_deref(), Some("/home/dev/kiln"));

    // Every line is a record, unknown event types too.
    assert_eq!(b.records.len(), 19 + 3);
    let unknown = b
        .records
        .iter()
        .find(|r| r.line == 18 && r.session_id.as_deref() == Some(s.id.as_str()))
        .unwrap();
    assert_eq!(unknown.record_type.as_deref(), Some("future.event"));

    let mine: Vec<_> = b.messages.iter().filter(|m| m.session_id == s.id).collect();
    let lines: Vec<(u64, &str)> = mine
        .iter()
        .map(|m| (m.source_line, m.role.as_str()))
        .collect();
    assert_eq!(
        lines,
        [
            (3, "user"),
            (5, "assistant"),
            (7, "tool"),
            (8, "assistant"),
            (11, "user"),
            (12, "user"),
            (13, "assistant"),
            (14, "assistant"),
            (15, "assistant"),
            (16, "tool"),
            (17, "system"),
        ]
    );
    assert!(mine.iter().all(|m| m.id.starts_with("c-e")), "event ids");
    // Search text: what the user typed and the answers, not skill bodies or tool traffic.
    let searchable: Vec<u64> = mine
        .iter()
        .filter(|m| m.search_text.is_some())
        .map(|m| m.source_line)
        .collect();
    assert_eq!(searchable, [3, 8, 12, 14]);
    let model = |line: u64| {
        mine.iter()
            .find(|m| m.source_line == line)
            .unwrap()
            .model
            .clone()
    };
    assert_eq!(model(5).as_deref(), Some("claude-sonnet-4.6"));
    assert_eq!(
        model(14).as_deref(),
        Some("gpt-5.4"),
        "after session.model_change"
    );

    let parts = |line: u64| -> Vec<&crate::PartRow> {
        b.parts
            .iter()
            .filter(|p| p.session_id == s.id && p.source_line == line)
            .collect()
    };
    let first = parts(5);
    let kinds: Vec<&str> = first.iter().map(|p| p.part_type.as_str()).collect();
    assert_eq!(kinds, ["thinking", "tool_call"], "no empty text part");
    assert_eq!(first[1].tool_name.as_deref(), Some("bash"));
    assert_eq!(first[1].call_id.as_deref(), Some("call_1"));
    assert!(first[1].body.as_ref().unwrap().contains("grep -n monday"));
    let result = parts(7);
    assert_eq!(
        result[0].tool_name.as_deref(),
        Some("bash"),
        "named by its call"
    );
    assert_eq!(
        result[0].text.as_deref(),
        Some("12:    if day == 'monday': continue")
    );
    assert_eq!(result[0].is_error, Some(false));
    // Arguments written as JSON in a string are stored as that JSON.
    let edit = parts(14);
    assert_eq!(
        edit.len(),
        2,
        "the thinking already stored at line 13 is not repeated"
    );
    let body: serde_json::Value = serde_json::from_str(edit[1].body.as_ref().unwrap()).unwrap();
    assert_eq!(body["path"], "schedule.py");
    // A started call that no message requested is a call of its own.
    assert_eq!(parts(15)[0].tool_name.as_deref(), Some("view"));
    let failed = parts(16);
    assert_eq!(failed[0].tool_name.as_deref(), Some("edit"));
    assert_eq!(failed[0].is_error, Some(true));
    assert!(failed[0].text.as_ref().unwrap().contains("changed on disk"));
    assert!(parts(17)[0].text.as_ref().unwrap().contains("Rate limit"));
}

#[test]
fn copilot_events_read_in_two_passes_give_what_one_gives() {
    let src =
        clients().join("copilot/session-state/55555555-5555-4555-8555-555555555555/events.jsonl");
    let text = std::fs::read_to_string(&src).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let d = tempfile::tempdir().unwrap();
    let dir = d
        .path()
        .join("session-state/55555555-5555-4555-8555-555555555555");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("events.jsonl");
    std::fs::write(&path, lines[..9].join("\n") + "\n").unwrap();
    let f = discover(d.path(), Some(COPILOT)).remove(0);
    let one = read_file(&f, None);
    assert_eq!(one.mode, ReadMode::New);
    let mut f2 = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f2.write_all((lines[9..].join("\n") + "\n").as_bytes())
        .unwrap();
    drop(f2);
    let two = read_file(&f, Some(&one.cursor));
    assert_eq!(two.mode, ReadMode::Appended);
    assert_eq!(two.cursor.format.as_deref(), Some("copilot"));
    // The session's identity and project carry over in the cursor.
    assert_eq!(
        two.batch.sessions[0].id,
        "55555555-5555-4555-8555-555555555555"
    );
    assert_eq!(
        two.batch.sessions[0].project.as_deref(),
        Some("/home/dev/garden")
    );
    let whole = read_file(&f, None);
    let ids = |b: &crate::FileBatch| b.messages.iter().map(|m| m.id.clone()).collect::<Vec<_>>();
    let mut split = ids(&one.batch);
    split.extend(ids(&two.batch));
    assert_eq!(split, ids(&whole.batch));
    assert_eq!(one.batch.records.len() + two.batch.records.len(), 19);
}

/// Copy the folder `from` to `to`, each file last written at `when` (else now).
pub(crate) fn copy_tree(
    from: &std::path::Path,
    to: &std::path::Path,
    when: Option<std::time::SystemTime>,
) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target, when);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
            if let Some(when) = when {
                let f = std::fs::File::options().write(true).open(&target).unwrap();
                f.set_modified(when).unwrap();
            }
        }
    }
}

/// The ids of a batch's messages, in order.
pub(crate) fn message_ids(b: &crate::FileBatch) -> Vec<&str> {
    b.messages.iter().map(|m| m.id.as_str()).collect()
}

/// A copy of the fixture folder `name` of `tests/clients` whose files were last written
/// `age` ago.
fn aged_copy(name: &str, age: std::time::Duration) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let when = std::time::SystemTime::now() - age;
    copy_tree(&clients().join(name), d.path(), Some(when));
    d
}

const TEXT_SESSION: &str = "aaaaaaaa-1111-4aaa-8aaa-aaaaaaaaaaaa";
/// A late-2025 text transcript: thinking in `<think>` tags, a `StrReplace` whose code starts
/// at column 0.
const THINK_SESSION: &str = "dddddddd-4444-4ddd-8ddd-dddddddddddd";

#[test]
fn cursor_transcripts_in_plain_text() {
    let old = aged_copy("cursor-text", std::time::Duration::from_secs(3600));
    for kind in [Some(CURSOR), None] {
        let found = crate::discover_all(old.path(), kind);
        let names: Vec<String> = found
            .files
            .iter()
            .map(|f| f.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        // The `.txt` beside a `.jsonl` of the same name is left to it.
        assert_eq!(
            names,
            [
                format!("{TEXT_SESSION}.txt"),
                "cccccccc-3333-4ccc-8ccc-cccccccccccc.jsonl".to_owned(),
                format!("{THINK_SESSION}.txt"),
            ],
            "{kind:?}"
        );
        assert!(found.files[0].is_text());
    }
    let b = read_tree(old.path(), Some(CURSOR));
    assert!(b.skips.is_empty(), "{:?}", b.skips);
    assert_eq!(b.sessions.len(), 3);
    let s = b.sessions.iter().find(|s| s.id == TEXT_SESSION).unwrap();
    assert_eq!(s.source_agent, "cursor");
    assert_eq!(
        s.project.as_deref(),
        Some("/home/dev/greenhouse"),
        "the workspace the first turn states"
    );
    // Every line but the blank ones is a record, as written.
    let records: Vec<_> = b
        .records
        .iter()
        .filter(|r| r.session_id.as_deref() == Some(TEXT_SESSION))
        .collect();
    assert_eq!(records.len(), 30);
    assert_eq!(records[1].raw, "<user_info>");
    let mine: Vec<_> = b
        .messages
        .iter()
        .filter(|m| m.session_id == TEXT_SESSION)
        .collect();
    let turns: Vec<(u64, &str)> = mine
        .iter()
        .map(|m| (m.source_line, m.role.as_str()))
        .collect();
    assert_eq!(
        turns,
        [
            (1, "user"),
            (11, "assistant"),
            (20, "assistant"),
            (23, "user"),
            (28, "assistant"),
            (36, "assistant")
        ]
    );
    assert_eq!(mine[0].id, format!("{TEXT_SESSION}:1"));
    assert_eq!(mine[0].timestamp, 1_772_439_300_000, "<timestamp>, UTC+1");
    assert_eq!(
        mine[0].search_text.as_deref(),
        Some("The greenhouse vent opens at night when it is cold. Why?")
    );
    assert_eq!(mine[1].search_text, None, "thinking and a tool call only");
    assert!(mine[2]
        .search_text
        .as_deref()
        .unwrap()
        .contains("Fahrenheit"));
    let parts = |m: &crate::model::MessageRow| -> Vec<(String, Option<String>, Option<String>)> {
        b.parts
            .iter()
            .filter(|p| p.message_id == m.id)
            .map(|p| {
                (
                    p.part_type.clone(),
                    p.tool_name.clone(),
                    p.text.clone().or(p.body.clone()),
                )
            })
            .collect()
    };
    assert_eq!(
        parts(mine[1]),
        [
            (
                "thinking".into(),
                None,
                Some(
                    "The controller may compare a Celsius reading with a Fahrenheit limit.".into()
                )
            ),
            (
                "tool_call".into(),
                Some("Read".into()),
                Some(r#"{"path":"vent/controller.py"}"#.into())
            ),
            (
                "tool_result".into(),
                Some("Read".into()),
                Some("THRESHOLD_F = 25\nif sensor.celsius() > THRESHOLD_F:".into())
            ),
        ]
    );
    assert_eq!(
        parts(mine[4])[0].2.as_deref(),
        Some(r#"{"command":"pytest vent","cwd":"/home/dev/greenhouse"}"#)
    );
}

/// `<think>` ... `</think>` is thinking, not answer text (a turn of it alone is no answer);
/// a call's arguments whose code starts at column 0 are the call's input, not text.
#[test]
fn cursor_text_thinking_tags_and_code_at_column_zero() {
    let old = aged_copy("cursor-text", std::time::Duration::from_secs(3600));
    let b = read_tree(old.path(), Some(CURSOR));
    let mine: Vec<_> = b
        .messages
        .iter()
        .filter(|m| m.session_id == THINK_SESSION)
        .collect();
    let turns: Vec<(u64, &str, bool)> = mine
        .iter()
        .map(|m| (m.source_line, m.role.as_str(), m.search_text.is_some()))
        .collect();
    assert_eq!(
        turns,
        [
            (1, "user", true),
            (11, "assistant", true),
            (26, "assistant", false),
            (31, "assistant", false),
            (43, "assistant", true)
        ]
    );
    assert_eq!(
        mine[1].search_text.as_deref(),
        Some("I will read the gate driver first.")
    );
    assert_eq!(
        mine[4].search_text.as_deref(),
        Some("The gate now stops at its closed limit switch, not halfway at the open one.")
    );
    let parts = |m: &crate::model::MessageRow| -> Vec<(String, Option<String>)> {
        b.parts
            .iter()
            .filter(|p| p.message_id == m.id)
            .map(|p| (p.part_type.clone(), p.text.clone().or(p.body.clone())))
            .collect()
    };
    let first = parts(mine[1]);
    assert_eq!(first[0].0, "thinking");
    assert_eq!(
        first[0].1.as_deref(),
        Some("The motor stops when a limit switch reads high.\n\nMaybe the reed switch is wired the other way round:\n- closed: reads low\n- open: reads high")
    );
    let kinds: Vec<&str> = first.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["thinking", "text", "tool_call", "tool_result"]);
    assert_eq!(
        parts(mine[2]),
        [(
            "thinking".into(),
            Some(
                "While closing, the driver checks the open limit. Swap it for the closed one."
                    .into()
            )
        )]
    );
    let call = parts(mine[3]);
    assert_eq!(call.len(), 2, "{call:?}");
    let input: serde_json::Value = serde_json::from_str(call[0].1.as_deref().unwrap()).unwrap();
    assert_eq!(
        input,
        serde_json::json!({
            "path": "/home/dev/weir/gate/driver.py",
            "old_string": "if self.limit_open.read():\nsump.stop()",
            "new_string": "if self.limit_closed.read():\nsump.stop()\n\n    log.info(\"gate closed\")"
        })
    );
    let last = parts(mine[4]);
    assert_eq!(
        last[0],
        (
            "thinking".into(),
            Some("The closing check reads the closed limit now.".into())
        )
    );
}

/// A plain-text transcript still being written: its last turn waits until it is followed
/// or the file stops changing; the file is read again whole when it grows.
#[test]
fn a_text_transcript_being_written_is_read_turn_by_turn() {
    let fresh = aged_copy("cursor-text", std::time::Duration::ZERO);
    let found = crate::discover_all(fresh.path(), Some(CURSOR));
    let f = &found.files[0];
    let first = read_file(f, None);
    assert_eq!(first.batch.messages.len(), 5, "the last answer waits");
    assert!(first.cursor.held);
    // Unchanged but held: looked at again (still waiting).
    let again = read_file(f, Some(&first.cursor));
    assert_ne!(again.mode, ReadMode::Unchanged);
    assert_eq!(again.batch.messages.len(), 5);
    // A new prompt follows: the answer before it is read, the prompt waits.
    let mut text = std::fs::read_to_string(&f.path).unwrap();
    text.push_str("\nuser:\n<user_query>\nNow log each opening.\n</user_query>\n");
    std::fs::write(&f.path, text).unwrap();
    let grown = read_file(f, Some(&again.cursor));
    assert_eq!(grown.mode, ReadMode::Rewritten);
    let ids: Vec<&str> = grown.batch.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids.len(), 6);
    assert_eq!(ids[5], format!("{TEXT_SESSION}:36"));
    assert!(grown.cursor.held);
}

#[test]
fn cursor_transcripts_in_both_layouts() {
    let b = read_tree(&clients().join("cursor"), Some(CURSOR));
    assert!(b.skips.is_empty(), "{:?}", b.skips);
    // The terminals' state beside the transcripts is not a session.
    assert_eq!(b.sessions.len(), 3, "{:?}", b.sessions);
    assert!(b
        .records
        .iter()
        .all(|r| r.source_path.contains("agent-transcripts")));
    let s = b
        .sessions
        .iter()
        .find(|s| s.id.starts_with("7777"))
        .unwrap();
    assert_eq!(s.source_agent, "cursor");
    assert_eq!(
        s.project.as_deref(),
        Some("/home/dev/orchard"),
        "from worker.log"
    );
    assert_eq!(s.title.as_deref(), Some("Pear trees pruned twice in March"));
    let flat = b
        .sessions
        .iter()
        .find(|s| s.id.starts_with("8888"))
        .unwrap();
    assert_eq!(
        flat.project.as_deref(),
        Some("tmp-scratch"),
        "no worker.log: the slug"
    );

    let mine: Vec<_> = b.messages.iter().filter(|m| m.session_id == s.id).collect();
    let lines: Vec<(u64, &str)> = mine
        .iter()
        .map(|m| (m.source_line, m.role.as_str()))
        .collect();
    assert_eq!(
        lines,
        [
            (2, "user"),
            (3, "assistant"),
            (4, "assistant"),
            (6, "user"),
            (7, "assistant"),
            (8, "system")
        ]
    );
    assert_eq!(mine[0].id, format!("{}:2", s.id));
    // The time the user turn carried, for it and the answers after it.
    assert_eq!(mine[0].timestamp, 1_785_060_360_000);
    assert_eq!(mine[2].timestamp, 1_785_060_360_000);
    // Only what the user typed is searchable, not the context blocks around it.
    assert_eq!(
        mine[0].search_text.as_deref(),
        Some("Why are the pear trees pruned twice in March?")
    );
    assert_eq!(
        mine[3].search_text.as_deref(),
        Some("Drop it and add a regression test.")
    );
    assert!(mine[1]
        .search_text
        .as_deref()
        .unwrap()
        .contains("pruning calendar"));
    assert_eq!(mine[4].search_text, None, "a tool call only");
    let call = b
        .parts
        .iter()
        .find(|p| p.message_id == mine[1].id && p.part_type == "tool_call")
        .unwrap();
    assert_eq!(call.tool_name.as_deref(), Some("Shell"));
    assert_eq!(call.call_id.as_deref(), Some("toolu_1"));
    let ended = b.parts.iter().find(|p| p.message_id == mine[5].id).unwrap();
    assert_eq!(
        ended.text.as_deref(),
        Some("turn ended: error: Connection lost")
    );
    // Every line is a record, control lines too.
    assert_eq!(b.records.len(), 8 + 2 + 2);
    let flat_answer = b
        .messages
        .iter()
        .find(|m| m.session_id == flat.id && m.role == Role::Assistant)
        .unwrap();
    assert!(flat_answer
        .search_text
        .as_deref()
        .unwrap()
        .contains("git branch -m"));
}

/// A side file that is huge (a 3 GB `worker.log`, sparse) or a device (a `.project_root`
/// that links to /dev/zero) is not read whole: the sessions beside it are read as ever,
/// without what it would have said.
#[test]
fn huge_or_device_side_files_do_not_stop_a_read() {
    let d = tempfile::tempdir().unwrap();
    let (cursor, gemini) = (d.path().join("cursor"), d.path().join("gemini"));
    copy_tree(&clients().join("cursor"), &cursor, None);
    copy_tree(&clients().join("gemini"), &gemini, None);
    let log = cursor.join("projects/home-dev-orchard/worker.log");
    std::fs::File::create(&log)
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    let root = gemini.join("tmp/4f1c2e/.project_root");
    std::fs::remove_file(&root).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &root).unwrap();
    // In a thread: read whole, these files take the test's memory or never end.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let read = (
            read_tree(&cursor, Some(CURSOR)),
            read_tree(&gemini, Some(GEMINI)),
        );
        tx.send(read).unwrap();
    });
    let (c, g) = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the side files were read whole");
    assert!(c.skips.is_empty() && g.skips.is_empty());
    assert_eq!((c.sessions.len(), g.sessions.len()), (3, 6));
    let orchard = c
        .sessions
        .iter()
        .find(|s| s.id.starts_with("7777"))
        .unwrap();
    assert_eq!(
        orchard.project.as_deref(),
        Some("home-dev-orchard"),
        "the slug"
    );
    assert_eq!(
        c.messages
            .iter()
            .filter(|m| m.session_id == orchard.id)
            .count(),
        6
    );
    let aquarium = g
        .sessions
        .iter()
        .find(|s| s.id.starts_with("aaaa"))
        .unwrap();
    assert_eq!(aquarium.project, None);
    assert_eq!(
        g.messages
            .iter()
            .filter(|m| m.session_id == aquarium.id)
            .count(),
        7
    );
}

#[test]
fn gemini_chats_replayed_with_replacements_rewinds_and_checkpoints() {
    for kind in [Some(GEMINI), None] {
        let b = read_tree(&clients().join("gemini"), kind);
        assert!(b.skips.is_empty(), "{:?}", b.skips);
        // A row per file: the resumed legacy chat's `.json` and `.jsonl` are one session.
        assert_eq!(b.sessions.len(), 6, "{kind:?}: {:?}", b.sessions);
        let ids: std::collections::BTreeSet<&str> =
            b.sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids.len(), 5, "{ids:?}");
        assert_eq!(
            b.records.len(),
            13 + 3 + 4 + 1 + 1 + 5,
            "every line a record, control lines too, a legacy chat one record"
        );
        let s = b
            .sessions
            .iter()
            .find(|s| s.id.starts_with("aaaa"))
            .unwrap();
        assert_eq!(s.source_agent, "gemini");
        assert_eq!(
            s.project.as_deref(),
            Some("/home/dev/aquarium"),
            ".project_root"
        );
        assert_eq!(
            s.title.as_deref(),
            Some("Heater cycling: wider hysteresis"),
            "$set"
        );
        let ids: Vec<&str> = b
            .messages
            .iter()
            .filter(|m| m.session_id == s.id)
            .map(|m| m.id.as_str())
            .collect();
        // g1's later copy replaced the first; the rewind to u2 took u2 and g3.
        assert_eq!(ids, ["u1", "g1", "k1", "g2", "u3", "g4", "i1"], "{kind:?}");
        let part = |id: &str, ty: &str| {
            b.parts
                .iter()
                .find(|p| p.message_id == id && p.part_type == ty)
                .unwrap_or_else(|| panic!("{id} {ty}"))
        };
        assert_eq!(
            part("g1", "tool_result").text.as_deref(),
            Some("hysteresis = 0.1")
        );
        assert_eq!(part("g1", "tool_result").is_error, Some(false));
        assert!(part("g1", "thinking")
            .text
            .as_ref()
            .unwrap()
            .starts_with("Thermostat:"));
        assert_eq!(b.parts.iter().filter(|p| p.message_id == "g1").count(), 4);
        assert_eq!(
            part("g4", "tool_result").text.as_deref(),
            Some("permission denied")
        );
        assert_eq!(part("g4", "tool_result").is_error, Some(true));
        let msg = |id: &str| b.messages.iter().find(|m| m.id == id).unwrap();
        // What the user typed, not the file contents the client pasted after it.
        assert_eq!(
            msg("u3").search_text.as_deref(),
            Some("Raise it to 0.5 then, and log each switch. @heater.toml")
        );
        assert_eq!(msg("i1").role, Role::System);
        assert_eq!(msg("i1").search_text, None);
        // What the client sent by itself after a tool call: not the user's prompt.
        assert_eq!(msg("k1").role, Role::System);
        assert_eq!(msg("k1").search_text, None);
        assert_eq!(
            part("k1", "text").text.as_deref(),
            Some("System: Please continue.")
        );
        assert_eq!(msg("g2").model.as_deref(), Some("gemini-2.5-pro"));

        let sub = b
            .sessions
            .iter()
            .find(|s| s.id.starts_with("bbbb"))
            .unwrap();
        assert_eq!(sub.source_agent, "gemini/subagent");
        assert_eq!(sub.parent_id.as_deref(), Some(s.id.as_str()));
        let kiosk = b
            .sessions
            .iter()
            .find(|s| s.id.starts_with("cccc"))
            .unwrap();
        assert_eq!(
            kiosk.project.as_deref(),
            Some("/home/dev/kiosk"),
            "projects.json"
        );
        let ids: Vec<&str> = b
            .messages
            .iter()
            .filter(|m| m.session_id == kiosk.id)
            .map(|m| m.id.as_str())
            .collect();
        assert_eq!(ids, ["x2", "y2"], "a checkpoint replaces every message");

        // An older build's whole chat: one record, its messages, the project by its id.
        let legacy = b
            .sessions
            .iter()
            .find(|s| s.id.starts_with("dddd"))
            .unwrap();
        assert_eq!(legacy.source_agent, "gemini");
        assert_eq!(legacy.project.as_deref(), Some("/home/dev/kiosk"));
        let header: serde_json::Value =
            serde_json::from_str(legacy.header.as_deref().unwrap()).unwrap();
        assert!(header.get("messages").is_none(), "{header}");
        assert_eq!(header["projectHash"], "9c0ffee");
        let ids: Vec<&str> = b
            .messages
            .iter()
            .filter(|m| m.session_id == legacy.id)
            .map(|m| m.id.as_str())
            .collect();
        assert_eq!(ids, ["d1", "d2", "d3"]);
        assert_eq!(msg("d2").role, Role::Assistant);
        assert_eq!(msg("d2").model.as_deref(), Some("gemini-2.5-flash"));
        assert_eq!(
            part("d2", "tool_result").text.as_deref(),
            Some("Coordinate Transformation Matrix: 0.98 0 0.01")
        );
        assert!(part("d2", "thinking")
            .text
            .as_deref()
            .unwrap()
            .starts_with("Calibration: "));
        assert_eq!(msg("d3").role, Role::System);
        // Resumed by a newer build: the `.jsonl` goes on under the same session id.
        let resumed: std::collections::BTreeSet<&str> = b
            .messages
            .iter()
            .filter(|m| m.session_id.starts_with("eeee"))
            .map(|m| m.id.as_str())
            .collect();
        assert_eq!(
            resumed.into_iter().collect::<Vec<_>>(),
            ["e1", "e2", "e3", "e4"]
        );
    }
}

/// A chat whose lists multiply (2000 messages, each with 2000 empty tool calls: 16 MB that
/// parsed whole took the sync worker past 2 GiB) is parsed up to the line's cap on items:
/// its first messages are read, the last one read says what was not, and the record holds
/// the document whole.
#[test]
fn a_gemini_chat_of_nested_lists_is_read_up_to_the_lines_cap() {
    let d = tempfile::tempdir().unwrap();
    let chats = d.path().join("tmp/5a5a5a/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let calls = vec!["{}"; 2000].join(",");
    let messages: Vec<String> = (0..2000)
        .map(|i| {
            format!(r#"{{"id":"w{i}","type":"gemini","content":"turn {i}","toolCalls":[{calls}]}}"#)
        })
        .collect();
    let doc = format!(
        r#"{{"sessionId":"wide","projectHash":"5a5a5a","startTime":"2025-11-20T10:00:00Z","messages":[{}]}}"#,
        messages.join(",")
    );
    std::fs::write(chats.join("session-2025-11-20T10-00-wide.json"), &doc).unwrap();
    let b = read_tree(d.path(), Some(GEMINI));
    assert!(b.skips.is_empty(), "{:?}", b.skips);
    assert_eq!(b.records.len(), 1);
    assert_eq!(b.records[0].raw.len(), doc.len(), "the document whole");
    let read = b.messages.len();
    assert!(read > 100 && read < 2000, "{read} messages");
    assert!(
        b.parts.len() <= crate::json::MAX_LINE_ITEMS,
        "{}",
        b.parts.len()
    );
    let last = b.parts.last().unwrap();
    assert_eq!(last.part_type, "truncated");
    assert_eq!(last.message_id, b.messages[read - 1].id);
    assert!(
        last.text.as_deref().unwrap().contains("later messages too"),
        "{last:?}"
    );
}

/// A legacy chat is written again whole as it grows: a changed file is read again from its
/// start, and one cut short (being written) is left for the next sync.
#[test]
fn a_legacy_gemini_chat_is_read_whole_each_time_it_changes() {
    let d = tempfile::tempdir().unwrap();
    let chats = d.path().join("tmp/p1/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let path = chats.join("session-2025-11-01T10-00-ffffffff.json");
    let doc = |n: usize| {
        let messages: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    r#"{{"id":"m{i}","timestamp":"2025-11-01T10:00:0{i}Z","type":"user","content":"note {i}"}}"#
                )
            })
            .collect();
        format!(
            "{{\n  \"sessionId\": \"f1\",\n  \"projectHash\": \"p1\",\n  \"messages\": [{}]\n}}\n",
            messages.join(",\n")
        )
    };
    std::fs::write(&path, doc(2)).unwrap();
    let found = crate::discover_all(d.path(), Some(GEMINI));
    assert_eq!(found.files.len(), 1, "{:?}", found.files);
    let file = &found.files[0];
    assert!(file.is_document());
    let first = read_file(file, None);
    assert_eq!(first.mode, ReadMode::New);
    assert_eq!(first.batch.records.len(), 1);
    assert_eq!(first.batch.messages.len(), 2);
    assert_eq!(first.cursor.line, 1);

    // Rewritten with a third message: read again from its start, whole.
    std::fs::write(&path, doc(3)).unwrap();
    let again = read_file(file, Some(&first.cursor));
    assert_eq!(again.mode, ReadMode::Rewritten);
    let ids: Vec<&str> = again.batch.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["m0", "m1", "m2"]);
    assert!(!again.cursor.partial);

    // Cut short while being written: nothing read, the next sync tries again.
    let whole = doc(4);
    std::fs::write(&path, &whole[..whole.len() / 2]).unwrap();
    let cut = read_file(file, Some(&again.cursor));
    assert!(cut.batch.messages.is_empty());
    assert_eq!(cut.batch.skips.len(), 1, "{:?}", cut.batch.skips);
    assert!(cut.batch.skips[0].reason.contains("read again"));

    // The folder's other JSON (a checkpoint) is not a session.
    std::fs::write(chats.join("checkpoint-x.json"), "{}").unwrap();
    assert_eq!(crate::discover_all(d.path(), Some(GEMINI)).files.len(), 1);
    assert_eq!(crate::discover_all(d.path(), None).files.len(), 1);
}

#[test]
fn sniffs_format_without_a_hint() {
    let b = read_all("", None);
    assert_eq!(b.sessions.len(), 5);
    assert!(b.sessions.iter().any(|s| s.source_agent == "codex"));
    assert!(b
        .sessions
        .iter()
        .any(|s| s.source_agent == "claude-code/subagent"));
}

fn temp_file(content: &[u8]) -> (tempfile::TempDir, SourceFile) {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("s.jsonl");
    std::fs::write(&path, content).unwrap();
    let f = SourceFile {
        path,
        kind: Some(CLAUDE_CODE),
        parent_session: None,
        is_subagent: false,
    };
    (d, f)
}

const LINE: &str = r#"{"type":"user","uuid":"UID","sessionId":"s","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hello"}}"#;

fn line(uid: &str) -> String {
    format!("{}\n", LINE.replace("UID", uid))
}

#[test]
fn bad_lines_are_skipped_with_reasons() {
    let mut content = Vec::new();
    content.extend(line("a").as_bytes());
    content.extend(b"{not json\n");
    content.extend(b"[1,2]\n");
    content.extend(b"\xff\xfe{\"type\":\"user\"}\n");
    content.extend(b"\n");
    content.extend(line("b").as_bytes());
    content.extend(br#"{"type":"user","uuid":"c","message":{"ro"#);
    let (_d, f) = temp_file(&content);
    let out = read_file(&f, None);
    let reasons: Vec<_> = out
        .batch
        .skips
        .iter()
        .map(|s| (s.line, s.reason.clone()))
        .collect();
    assert_eq!(out.batch.records.len(), 2);
    assert_eq!(out.batch.messages.len(), 2);
    assert_eq!(reasons.len(), 5, "{reasons:?}");
    assert!(reasons[0].1.starts_with("malformed JSON"));
    assert!(reasons[1].1.starts_with("not a JSON object"));
    assert!(reasons[2].1.starts_with("invalid UTF-8"));
    assert_eq!(reasons[3].1, "empty line");
    assert_eq!(reasons[4].0, 7);
    assert!(reasons[4].1.starts_with("incomplete last line"));
    assert_eq!(out.cursor.line, 6, "the incomplete line is not consumed");
    assert_eq!(out.lines_read, 6);
}

#[test]
fn huge_line_is_skipped_without_buffering_it() {
    let (_d, f) = temp_file(b"");
    {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&f.path).unwrap());
        w.write_all(line("a").as_bytes()).unwrap();
        w.write_all(b"{\"type\":\"user\",\"pad\":\"").unwrap();
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..40 {
            w.write_all(&chunk).unwrap();
        }
        w.write_all(b"\"}\n").unwrap();
        w.write_all(line("b").as_bytes()).unwrap();
    }
    let out = read_file(&f, None);
    assert_eq!(out.batch.messages.len(), 2);
    assert_eq!(out.batch.skips.len(), 1);
    assert_eq!(out.batch.skips[0].line, 2);
    assert!(out.batch.skips[0].reason.contains("over the"));
}

#[test]
fn incremental_reads() {
    let (_d, f) = temp_file(line("a").as_bytes());
    let first = read_file(&f, None);
    assert_eq!(first.mode, ReadMode::New);
    assert_eq!(first.batch.messages.len(), 1);
    let again = read_file(&f, Some(&first.cursor));
    assert_eq!(again.mode, ReadMode::Unchanged);
    assert!(again.batch.is_empty());

    // Grow: only the new line is read, with its true line number.
    let mut fh = std::fs::OpenOptions::new()
        .append(true)
        .open(&f.path)
        .unwrap();
    fh.write_all(line("b").as_bytes()).unwrap();
    drop(fh);
    let grown = read_file(&f, Some(&first.cursor));
    assert_eq!(grown.mode, ReadMode::Appended);
    assert_eq!(grown.batch.messages.len(), 1);
    assert_eq!(grown.batch.messages[0].id, "b");
    assert_eq!(grown.batch.records[0].line, 2);

    // Replace with different content: read again from the start.
    std::fs::write(&f.path, line("z")).unwrap();
    let rewritten = read_file(&f, Some(&grown.cursor));
    assert_eq!(rewritten.mode, ReadMode::Rewritten);
    assert_eq!(rewritten.batch.messages[0].id, "z");
}

#[test]
fn vanished_file_is_reported() {
    let f = SourceFile {
        path: PathBuf::from("/nonexistent/pond/s.jsonl"),
        kind: None,
        parent_session: None,
        is_subagent: false,
    };
    let out = read_file(&f, None);
    assert_eq!(out.mode, ReadMode::Failed);
    assert!(out.batch.skips[0].reason.starts_with("cannot open"));
}

#[test]
fn a_repeated_codex_meta_does_not_change_the_session() {
    let meta = |id: &str| {
        format!(
            r#"{{"timestamp":"2026-03-01T10:00:00Z","type":"session_meta","payload":{{"id":"{id}","cwd":"/w"}}}}"#
        )
    };
    let msg = |t: &str| {
        format!(
            r#"{{"timestamp":"2026-03-01T10:00:01Z","type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{t}"}}]}}}}"#
        )
    };
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("rollout-x.jsonl");
    std::fs::write(&path, format!("{}\n{}\n", meta("A"), msg("one"))).unwrap();
    let f = SourceFile {
        path: path.clone(),
        kind: Some(CODEX),
        parent_session: None,
        is_subagent: false,
    };
    let first = read_file(&f, None);
    assert_eq!(first.batch.messages[0].id, "A:2");
    let mut fh = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(fh, "{}\n{}", meta("ORIGIN"), msg("two")).unwrap();
    drop(fh);
    let second = read_file(&f, Some(&first.cursor));
    assert_eq!(second.mode, ReadMode::Appended);
    assert_eq!(second.batch.messages[0].id, "A:4");
    assert_eq!(second.batch.sessions[0].id, "A");
    // The same file read in one pass agrees.
    let whole = read_file(&f, None);
    let ids: Vec<_> = whole.batch.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["A:2", "A:4"]);
}

/// The `FileBatch` contract the store relies on: each message's parts are contiguous, in
/// message order, numbered from 0.
#[test]
fn parts_follow_their_messages_in_order() {
    let b = read_all("", None);
    let mut parts = b.parts.iter().peekable();
    for m in &b.messages {
        let mut ordinal = 0;
        while let Some(p) =
            parts.next_if(|p| p.message_id == m.id && p.source_line == m.source_line)
        {
            assert_eq!(p.ordinal, ordinal, "{}", m.id);
            ordinal += 1;
        }
    }
    assert!(
        parts.next().is_none(),
        "every part belongs to the message before it"
    );
}

#[test]
fn each_line_says_how_it_claims_its_message() {
    use crate::model::Origin;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/replays/projects");
    let mut all = crate::FileBatch::default();
    for f in discover(&root, Some(CLAUDE_CODE)) {
        all.append(read_file(&f, None).batch);
    }
    let origin = |session: &str, id: &str| {
        all.messages
            .iter()
            .find(|m| m.session_id.starts_with(session) && m.id == id)
            .map(|m| m.origin)
    };
    // A session's own line; the compaction agent's replay of it, and its own work.
    assert_eq!(
        origin("aaaaaaaa-0000-4000-8000-000000000001", "p-u1"),
        Some(Origin::Own)
    );
    assert_eq!(
        origin("agent-acompact-1111", "p-u1"),
        Some(Origin::Sidechain)
    );
    assert_eq!(
        origin("agent-acompact-1111", "k-u1"),
        Some(Origin::Sidechain)
    );
    // A resumed session's copy names the first session; its own lines are its own.
    assert_eq!(
        origin("aaaaaaaa-0000-4000-8000-0000000000b0", "r-u1"),
        Some(Origin::Copied)
    );
    assert_eq!(
        origin("aaaaaaaa-0000-4000-8000-0000000000b0", "r-u2"),
        Some(Origin::Own)
    );
    assert_eq!(
        origin("aaaaaaaa-0000-4000-8000-0000000000a0", "r-u1"),
        Some(Origin::Own)
    );
    // Discovery reads session files before the subagent files that replay them.
    let files = discover(&root, Some(CLAUDE_CODE));
    let first_sub = files.iter().position(|f| f.is_subagent).unwrap();
    assert!(files[..first_sub].iter().all(|f| !f.is_subagent));
    assert!(files[first_sub..].iter().all(|f| f.is_subagent));
}

#[test]
fn stored_lines_parse_as_the_file_did() {
    use crate::reader::LineParser;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    for f in discover(&root, None) {
        let out = read_file(&f, None);
        // What the reader knew when it started: the kind discovery gave (none: sniffed).
        let mut p = LineParser::new(&f, f.kind.map(|k| k.name), out.cursor.mtime_ns);
        let mut again = crate::FileBatch::default();
        for (i, r) in out.batch.records.iter().enumerate() {
            p.line(r.line, r.byte_offset, &r.raw);
            if i % 3 == 0 {
                again.append(p.drain());
            }
        }
        again.append(p.finish());
        assert_eq!(again.messages, out.batch.messages, "{:?}", f.path);
        assert_eq!(again.parts, out.batch.parts, "{:?}", f.path);
        assert_eq!(again.sessions, out.batch.sessions, "{:?}", f.path);
        assert!(again.records.is_empty());
    }
}

#[test]
fn a_result_written_before_its_call_is_named() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("s.jsonl");
    std::fs::write(
        &path,
        concat!(
            r#"{"type":"user","uuid":"r","sessionId":"s","timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"c","sessionId":"s","timestamp":"2026-01-01T00:00:01Z","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Edit","input":{}}]}}"#,
            "\n"
        ),
    )
    .unwrap();
    let f = SourceFile {
        path,
        kind: Some(CLAUDE_CODE),
        parent_session: None,
        is_subagent: false,
    };
    let b = read_file(&f, None).batch;
    let result = b
        .parts
        .iter()
        .find(|p| p.part_type == "tool_result")
        .unwrap();
    assert_eq!(result.tool_name.as_deref(), Some("Edit"));
}

fn claude_line(uuid: &str, text: &str) -> String {
    format!(
        r#"{{"type":"user","uuid":"{uuid}","sessionId":"s","timestamp":"2026-01-01T00:00:00Z","message":{{"role":"user","content":"{text}"}}}}"#
    )
}

fn claude_file(path: &std::path::Path) -> SourceFile {
    SourceFile {
        path: path.to_path_buf(),
        kind: Some(CLAUDE_CODE),
        parent_session: None,
        is_subagent: false,
    }
}

#[test]
fn a_rewrite_in_place_that_keeps_the_head_and_size_is_read_again() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("s.jsonl");
    let pad = "p".repeat(5000);
    let first = format!(
        "{}\n{}\n",
        claude_line("u1", &pad),
        claude_line("u2", "the old ending")
    );
    std::fs::write(&path, &first).unwrap();
    let f = claude_file(&path);
    let one = read_file(&f, None);
    // Same head, same length, another last line; then one more line appended.
    let second = format!(
        "{}\n{}\n",
        claude_line("u1", &pad),
        claude_line("u3", "the new ending")
    );
    assert_eq!(second.len(), first.len());
    let grown = format!("{second}{}\n", claude_line("u4", "and more"));
    std::fs::write(&path, grown).unwrap();
    let two = read_file(&f, Some(&one.cursor));
    assert_eq!(two.mode, ReadMode::Rewritten, "not taken for an append");
    let ids: Vec<&str> = two.batch.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["u1", "u3", "u4"]);
}

#[test]
fn a_last_line_completed_later_keeps_every_line_number() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("s.jsonl");
    std::fs::write(
        &path,
        format!("{}\n{}", claude_line("u1", "a"), claude_line("u2", "b")),
    )
    .unwrap();
    let f = claude_file(&path);
    let one = read_file(&f, None);
    assert_eq!(
        one.lines_read, 2,
        "a whole last line without newline is read"
    );
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(file).unwrap();
    writeln!(file, "{}", claude_line("u3", "c")).unwrap();
    drop(file);
    let two = read_file(&f, Some(&one.cursor));
    assert_eq!(two.mode, ReadMode::Appended);
    assert!(two.batch.skipped.is_empty(), "{:?}", two.batch.skipped);
    let m = &two.batch.messages[0];
    assert_eq!((m.id.as_str(), m.source_line), ("u3", 3));
    assert_eq!(two.batch.records[0].line, 3);
}

#[test]
fn a_fifo_is_a_failed_file_not_a_hang() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("s.jsonl");
    nix_mkfifo(&path);
    let started = std::time::Instant::now();
    let out = read_file(&claude_file(&path), None);
    assert_eq!(out.mode, ReadMode::Failed);
    assert!(
        out.batch.skips[0].reason.contains("not a regular file"),
        "{:?}",
        out.batch.skips
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

fn nix_mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn a_file_read_in_parts_gives_what_one_read_gives() {
    use crate::reader::{read_file_part, HeldDatabases};
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("s.jsonl");
    let lines: Vec<String> = (0..300)
        .map(|i| claude_line(&format!("u{i}"), &"w".repeat(i)))
        .collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let f = claude_file(&path);
    let whole = read_file(&f, None);
    let mut cursor: Option<crate::FileCursor> = None;
    let mut parts = crate::FileBatch::default();
    let mut calls = 0;
    loop {
        let out = read_file_part(&f, cursor.as_ref(), 4096, &HeldDatabases::default());
        calls += 1;
        let more = out.cursor.partial;
        parts.append(out.batch);
        cursor = Some(out.cursor);
        if !more {
            break;
        }
    }
    assert!(calls > 5, "{calls}");
    assert_eq!(parts.messages, whole.batch.messages);
    assert_eq!(parts.records, whole.batch.records);
    let (a, b) = (cursor.unwrap(), whole.cursor);
    assert_eq!(
        (a.offset, a.line, a.head_hash, a.tail_hash),
        (b.offset, b.line, b.head_hash, b.tail_hash)
    );
    let again = read_file(&f, Some(&a));
    assert_eq!(again.mode, ReadMode::Unchanged);
}

#[test]
fn blank_lines_are_counted_not_kept_one_by_one() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("s.jsonl");
    std::fs::write(&path, "\n".repeat(100_000) + &claude_line("u1", "x") + "\n").unwrap();
    let out = read_file(&claude_file(&path), None);
    assert_eq!(out.batch.skipped.get("empty line"), Some(&100_000));
    assert_eq!(out.batch.skips.len(), crate::model::SKIP_EXAMPLES_PER_FILE);
    assert_eq!(out.batch.messages.len(), 1);
}

#[test]
fn a_line_of_millions_of_blocks_is_stored_whole_and_parsed_in_part() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("s.jsonl");
    let blocks = vec![r#"{"type":"text","text":"x"}"#; 50_000].join(",");
    let line = format!(
        r#"{{"type":"user","uuid":"u1","sessionId":"s","timestamp":"2026-01-01T00:00:00Z","message":{{"role":"user","content":[{blocks}]}}}}"#
    );
    std::fs::write(&path, format!("{line}\n")).unwrap();
    let out = read_file(&claude_file(&path), None);
    assert_eq!(out.batch.records[0].raw, line, "the line is stored whole");
    assert_eq!(out.batch.parts.len(), 10_001);
    let note = out.batch.parts.last().unwrap();
    assert_eq!(
        (note.part_type.as_str(), note.ordinal),
        ("truncated", 10_000)
    );
}

use proptest::strategy::Strategy;

/// Whether `b` keeps the [`crate::FileBatch`] contract the writer relies on: each message's
/// parts follow it, contiguous, numbered 0, 1, 2, ... (a part out of place is dropped).
pub(crate) fn parts_follow_messages(b: &crate::FileBatch) -> bool {
    let mut parts = b.parts.iter().peekable();
    for m in &b.messages {
        let mut next = 0;
        while parts
            .next_if(|p| {
                p.message_id == m.id && p.source_line == m.source_line && p.ordinal == next
            })
            .is_some()
        {
            next += 1;
        }
    }
    parts.next().is_none()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(96))]

    #[test]
    fn any_lines_are_stored_or_skipped_and_never_crash_the_parser(
        lines in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::prelude::any::<Vec<u8>>(),
                "[ -~]{0,80}".prop_map(String::into_bytes),
                r#"\{"type":"(user|assistant|system|response_item|session_meta)","(uuid|payload|message|content|sessionId)":(1|null|"x"|\[\]|\{\}|\{"content":\[\{"type":"(text|tool_use|tool_result|image)"\}\]\})\}"#.prop_map(String::into_bytes),
                // The shapes of the clients added through the registry, with ids that repeat.
                // OpenCode's lines (a database's rows as `crate::database` writes them).
                r#"\{"db":"opencode","table":"(session|message|part)","row":(1|null|\{\}|\{"id":"(a|b)","data":(1|\{\}|\{"role":"(user|assistant)","error":\{\}\})\})(,"parts":(1|\[\]|\[1,\{"data":\{"type":"(text|tool|file|x)","text":"t","state":\{"status":"(completed|error)"\}\}\}\]))?\}"#.prop_map(String::into_bytes),
                // Cursor IDE's lines (its key-value rows, and older builds' inline bubbles).
                r#"\{"db":"cursor","(row|bubble|composer)":(1|null|"x"|\{\}|\{"key":"(composerData:c|bubbleId:c:(a|b)|bubbleId:|x)","value":(1|null|"v"|\{\}|\{"type":(1|2|"x"),"bubbleId":(1|"(a|b)"),"text":(1|"t"),"toolFormerData":(1|\{\}|\{"status":"error","result":\{\}\}),"createdAt":(1|"x"),"workspaceUris":(1|\["file://"\]|\["file:///a%"\])\})\}|\{"type":1,"bubbleId":"a","text":"t"\})\}"#.prop_map(String::into_bytes),
                r#"\{"(type|role|id|\$rewindTo|sessionId)":"(session\.start|user\.message|assistant\.message|tool\.execution_complete|gemini|user|assistant|turn_ended|metadata|a|b)"(,"(data|message|content|toolCalls|toolRequests|\$set|projectHash|id)":(1|null|"x"|\[\]|\{\}|\{"content":"y"\}|\[\{"id":"(a|b)","name":"n","status":"error"\}\]|\{"messages":\[\{"id":"(a|b)","type":"user","content":"z"\}\]\}))\}"#.prop_map(String::into_bytes),
            ],
            0..40,
        ),
        kind in proptest::option::of(proptest::sample::select(crate::SOURCES)),
    ) {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("s.jsonl");
        let mut bytes = Vec::new();
        for l in &lines {
            bytes.extend(l.iter().filter(|&&b| b != b'\n'));
            bytes.push(b'\n');
        }
        std::fs::write(&path, &bytes).unwrap();
        let f = SourceFile { path, kind, parent_session: None, is_subagent: false };
        let out = read_file(&f, None);
        proptest::prop_assert_eq!(
            out.batch.records.len() as u64 + out.batch.skipped_lines(),
            lines.len() as u64
        );
        proptest::prop_assert!(parts_follow_messages(&out.batch), "{:?}", out.batch);
    }
}

/// The sessions of the database client `kind` found under `home` (nothing unreadable).
pub(crate) fn db_sessions(home: &std::path::Path, kind: SourceKind) -> Vec<SourceFile> {
    let found = crate::discover_all(home, Some(kind));
    assert!(found.unreadable.is_empty(), "{:?}", found.unreadable);
    found.files
}

/// The session `id` of the database client `kind` under `home`.
pub(crate) fn db_session(home: &std::path::Path, kind: SourceKind, id: &str) -> SourceFile {
    let found = db_sessions(home, kind).into_iter().find(|f| f.stem() == id);
    found.unwrap_or_else(|| panic!("no session {id} under {}", home.display()))
}

/// Every session of `kind` under `home` re-derived from the lines its read stored parses to
/// the same rows as the read from the database did.
pub(crate) fn db_lines_rederive(home: &std::path::Path, kind: SourceKind) {
    for f in db_sessions(home, kind) {
        let out = read_file(&f, None);
        let mut p = crate::reader::LineParser::new(&f, Some(kind.name), out.cursor.mtime_ns);
        for r in &out.batch.records {
            p.line(r.line, r.byte_offset, &r.raw);
        }
        let again = p.finish();
        assert_eq!(again.messages, out.batch.messages, "{:?}", f.path);
        assert_eq!(again.parts, out.batch.parts, "{:?}", f.path);
        assert_eq!(again.sessions, out.batch.sessions, "{:?}", f.path);
    }
}
