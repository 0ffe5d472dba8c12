//! Cursor's IDE database read as sessions: the fixture script (`tests/clients/cursor-ide`),
//! a database that changes between reads, and rows and databases that cannot be read.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use crate::model::Role;
use crate::reader::{read_file, ReadMode};
use crate::sources::CURSOR_IDE;
use crate::{discover_all, SourceFile};

/// A Cursor user dir holding `globalStorage/state.vscdb` built from the fixture script.
fn home() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("globalStorage")).unwrap();
    let db = d.path().join("globalStorage/state.vscdb");
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/clients/cursor-ide/state.sql");
    let sql =
        std::fs::read_to_string(&script).unwrap_or_else(|e| panic!("{}: {e}", script.display()));
    Connection::open(&db).unwrap().execute_batch(&sql).unwrap();
    (d, db)
}

fn sessions(home: &Path) -> Vec<SourceFile> {
    crate::tests::db_sessions(home, CURSOR_IDE)
}

fn session(home: &Path, id: &str) -> SourceFile {
    crate::tests::db_session(home, CURSOR_IDE, id)
}

const ORCHARD: &str = "4c1e7a52-orchard";

#[test]
fn composers_are_sessions_and_bubbles_their_messages() {
    let (d, _db) = home();
    let files = sessions(d.path());
    let ids: Vec<String> = files.iter().map(|f| f.stem()).collect();
    // The empty panel is not a session; the sub-composer comes last, with its parent.
    assert_eq!(ids, ["1a0b9c8d-legacy", ORCHARD, "9d2b61f0-explore"]);
    assert_eq!(files[2].parent_session.as_deref(), Some(ORCHARD));

    let out = read_file(&files[1], None);
    assert_eq!(out.mode, ReadMode::New, "{:?}", out.batch.skips);
    let b = &out.batch;
    let s = b.sessions.last().unwrap();
    assert_eq!(s.id, ORCHARD);
    assert_eq!(s.title.as_deref(), Some("Uploader retries forever"));
    assert_eq!(s.project.as_deref(), Some("/home/dev/orchard app"));
    assert_eq!(s.source_agent, "cursor-ide");
    assert_eq!(s.created_at, Some(1786000000000));
    // Header order; the empty UI bubble is a record only; the abandoned branch is not read.
    let ids: Vec<&str> = b.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["b-o1", "b-o2", "b-o3", "b-o5", "b-o6"]);
    assert_eq!(b.records.len(), 7, "composer and six bubbles");
    assert!(!b.records.iter().any(|r| r.raw.contains("b-old")));
    let composer = &b.records[0].raw;
    assert_eq!(b.records[0].record_type.as_deref(), Some("composer"));
    for gone in [
        "also check the t",
        "originalFileStates",
        "fullConversationHeadersOnly",
    ] {
        assert!(!composer.contains(gone), "{gone} stored: {composer}");
    }
    assert!(composer.contains("createdOnBranch"));
    assert_eq!(
        b.records[4].record_type.as_deref(),
        Some("bubble/assistant/empty")
    );

    let m = &b.messages;
    assert_eq!(m[0].role, Role::User);
    assert_eq!(m[0].model.as_deref(), Some("claude-4.5-sonnet"));
    assert_eq!(
        m[0].timestamp,
        chrono::DateTime::parse_from_rfc3339("2026-08-10T08:26:40Z")
            .unwrap()
            .timestamp_millis()
    );
    assert!(m[0].search_text.as_deref().unwrap().contains("503"));
    assert_eq!(m[1].role, Role::Assistant);
    let parts_of = |id: &str| -> Vec<_> { b.parts.iter().filter(|p| p.message_id == id).collect() };
    let p2 = parts_of("b-o2");
    assert_eq!(p2[0].part_type, "thinking");
    assert_eq!(p2[1].part_type, "text");
    // Thinking is not search text.
    assert!(!m[1].search_text.as_deref().unwrap().contains("Look for"));
    let p3 = parts_of("b-o3");
    assert_eq!(p3[0].part_type, "tool_call");
    assert_eq!(p3[0].tool_name.as_deref(), Some("run_terminal_cmd"));
    assert!(p3[0].body.as_deref().unwrap().contains("cargo test upload"));
    assert_eq!(p3[1].part_type, "tool_result");
    assert_eq!(p3[1].call_id.as_deref(), Some("toolu_01"));
    assert_eq!(p3[1].is_error, Some(false));
    assert_eq!(m[2].search_text, None, "a tool bubble says nothing");
    assert_eq!(parts_of("b-o5")[1].is_error, Some(true));
    assert!(crate::tests::parts_follow_messages(b));

    let sub = read_file(&files[2], None).batch;
    assert_eq!(sub.sessions[0].parent_id.as_deref(), Some(ORCHARD));
    assert_eq!(sub.sessions[0].source_agent, "cursor-ide/subagent");
    assert_eq!(
        sub.sessions[0].project.as_deref(),
        Some("/home/dev/orchard")
    );
    assert!(sub
        .messages
        .iter()
        .all(|m| m.source_agent == "cursor-ide/subagent"));

    // An older build's composer, its messages inline.
    let legacy = read_file(&files[0], None).batch;
    let ids: Vec<&str> = legacy.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["l-1", "l-2"]);
    assert!(legacy.messages[1]
        .search_text
        .as_deref()
        .unwrap()
        .contains("owned String"));
}

#[test]
fn stored_lines_parse_as_the_database_did() {
    let (d, _db) = home();
    crate::tests::db_lines_rederive(d.path(), CURSOR_IDE);
}

fn bubble(db: &Connection, id: &str, value: &str) {
    db.execute(
        "INSERT INTO cursorDiskKV VALUES (?1, ?2)",
        [format!("bubbleId:{ORCHARD}:{id}"), value.to_owned()],
    )
    .unwrap();
}

/// Append bubbles to the composer's headers and set its status and `generatingBubbleIds`.
fn headers(db: &Connection, ids: &[&str], status: &str, generating: &[&str]) {
    let now = chrono::Utc::now().timestamp_millis();
    let mut sql = format!("json_set(value, '$.status', '{status}', '$.lastUpdatedAt', {now}");
    for id in ids {
        sql.push_str(&format!(
            ", '$.fullConversationHeadersOnly[#]', json_object('bubbleId', '{id}', 'type', 2)"
        ));
    }
    let generating = serde_json::to_string(generating).unwrap();
    sql.push_str(&format!(", '$.generatingBubbleIds', json('{generating}'))"));
    db.execute(
        &format!("UPDATE cursorDiskKV SET value = {sql} WHERE key = 'composerData:{ORCHARD}'"),
        [],
    )
    .unwrap();
}

#[test]
fn a_conversation_changed_between_reads_gives_only_what_is_new() {
    let (d, db) = home();
    let f = session(d.path(), ORCHARD);
    let first = read_file(&f, None);
    let lines = first.cursor.line;

    // Nothing changed: not read.
    let again = read_file(&f, Some(&first.cursor));
    assert_eq!(again.mode, ReadMode::Unchanged);

    // A new answer Cursor is still writing: held back; the composer row changed, so it is
    // stored again.
    let w = Connection::open(&db).unwrap();
    bubble(
        &w,
        "b-o7",
        r#"{"_v":3,"type":2,"bubbleId":"b-o7","text":"Now adding"}"#,
    );
    headers(&w, &["b-o7"], "generating", &["b-o7"]);
    let grown = read_file(&f, Some(&first.cursor));
    assert_eq!(grown.mode, ReadMode::Appended);
    assert!(grown.batch.messages.is_empty());
    assert_eq!(grown.batch.records.len(), 1);
    assert_eq!(
        grown.batch.records[0].record_type.as_deref(),
        Some("composer")
    );
    assert_eq!(
        grown.batch.records[0].line,
        lines + 1,
        "lines are numbered on"
    );
    assert_eq!(grown.cursor.rows.as_ref().unwrap().held, 1);

    // It finishes: read whole, once.
    w.execute(
        &format!(
            "UPDATE cursorDiskKV SET value = json_set(value, '$.text', 'Now adding a test for the cap.')
             WHERE key = 'bubbleId:{ORCHARD}:b-o7'"
        ),
        [],
    )
    .unwrap();
    headers(&w, &[], "completed", &[]);
    let done = read_file(&f, Some(&grown.cursor));
    let ids: Vec<&str> = done.batch.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["b-o7"]);
    assert_eq!(
        done.batch.messages[0].search_text.as_deref(),
        Some("Now adding a test for the cap.")
    );
    assert_eq!(done.cursor.rows.as_ref().unwrap().held, 0);
    let after = read_file(&f, Some(&done.cursor));
    assert_eq!(after.mode, ReadMode::Unchanged);

    // A bubble rewritten after it was read (Cursor fills a tool's result later): read again
    // as a new version, the others not.
    w.execute(
        &format!(
            "UPDATE cursorDiskKV SET value = json_set(value, '$.text', 'The retry loop has no cap at all.')
             WHERE key = 'bubbleId:{ORCHARD}:b-o2'"
        ),
        [],
    )
    .unwrap();
    let changed = read_file(&f, Some(&done.cursor));
    let ids = crate::tests::message_ids(&changed.batch);
    assert_eq!(ids, ["b-o2"]);
    assert!(changed.batch.records[0].raw.contains("no cap at all"));
}

#[test]
fn rows_and_databases_that_cannot_be_read_are_reported_or_kept() {
    // A composer whose value is not JSON: listed, its row stored as read, no messages; a
    // bubble that is not JSON: a record, not a message.
    let (d, db) = home();
    let w = Connection::open(&db).unwrap();
    w.execute_batch(&format!(
        "INSERT INTO cursorDiskKV VALUES ('composerData:5e5e5e5e-broken', '{{\"composerId\": truncated');
         UPDATE cursorDiskKV SET value = 'not json' WHERE key = 'bubbleId:{ORCHARD}:b-o6';
         INSERT INTO cursorDiskKV VALUES ('composerData:6f6f6f6f-null', NULL);"
    ))
    .unwrap();
    let files = sessions(d.path());
    let broken = files
        .iter()
        .find(|f| f.stem() == "5e5e5e5e-broken")
        .unwrap();
    let out = read_file(broken, None);
    assert!(out.batch.messages.is_empty());
    assert!(out.batch.records[0]
        .raw
        .contains(r#""value":"{\"composerId\": truncated""#));
    let out = read_file(&session(d.path(), ORCHARD), None);
    let ids: Vec<&str> = out.batch.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["b-o1", "b-o2", "b-o3", "b-o5"]);
    assert!(out
        .batch
        .records
        .iter()
        .any(|r| r.raw.contains(r#""value":"not json""#)));
    assert!(!files.iter().any(|f| f.stem() == "6f6f6f6f-null"));

    // VS Code's own state.vscdb (no cursorDiskKV): no sessions, nothing to report.
    let v = tempfile::tempdir().unwrap();
    let vdb = v.path().join("state.vscdb");
    Connection::open(&vdb)
        .unwrap()
        .execute_batch("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);")
        .unwrap();
    assert!(sessions(v.path()).is_empty());

    // Not a database: reported with the reason.
    let g = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(g.path().join("globalStorage")).unwrap();
    std::fs::write(
        g.path().join("globalStorage/state.vscdb"),
        "garbage, not SQLite",
    )
    .unwrap();
    let found = discover_all(g.path(), Some(CURSOR_IDE));
    assert!(found.files.is_empty());
    assert!(
        found.unreadable[0].reason.contains("database"),
        "{:?}",
        found.unreadable
    );
}

#[test]
fn the_window_a_conversation_was_opened_in_is_its_project() {
    let (d, _db) = home();
    // Cursor's workspace databases: one names the legacy conversation's folder (a path with
    // a space), one is not a database, one has no workspace.json; none is read as sessions.
    let ws = d.path().join("workspaceStorage");
    for (hash, folder, composers) in [
        (
            "a1b2",
            Some(r#"{"folder":"file:///home/dev/http%20parser"}"#),
            "1a0b9c8d-legacy",
        ),
        (
            "c3d4",
            Some(r#"{"folder":"file:///home/dev/other"}"#),
            "garbage",
        ),
        ("e5f6", None, "4c1e7a52-orchard"),
    ] {
        std::fs::create_dir_all(ws.join(hash)).unwrap();
        if let Some(f) = folder {
            std::fs::write(ws.join(hash).join("workspace.json"), f).unwrap();
        }
        let db = ws.join(hash).join("state.vscdb");
        if composers == "garbage" {
            std::fs::write(&db, "not SQLite").unwrap();
            continue;
        }
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);",
        )
        .unwrap();
        conn.execute(
            "INSERT INTO ItemTable VALUES ('composer.composerData', ?1)",
            [format!(
                r#"{{"allComposers":[{{"composerId":"{composers}"}}]}}"#
            )],
        )
        .unwrap();
    }
    let files = sessions(d.path());
    assert_eq!(files.len(), 3);
    let project = |id: &str| {
        let f = files.iter().find(|f| f.stem() == id).unwrap();
        read_file(f, None)
            .batch
            .sessions
            .last()
            .unwrap()
            .project
            .clone()
    };
    assert_eq!(
        project("1a0b9c8d-legacy").as_deref(),
        Some("/home/dev/http parser")
    );
    // No folder named for it: the one its prompt names.
    assert_eq!(project(ORCHARD).as_deref(), Some("/home/dev/orchard app"));
}

#[test]
fn a_user_dir_is_found_by_a_walk_of_any_folder() {
    let (d, db) = home();
    let found = discover_all(d.path(), None);
    assert!(found.unreadable.is_empty(), "{:?}", found.unreadable);
    assert_eq!(found.files.len(), 3);
    assert!(found.files.iter().all(|f| f.kind == Some(CURSOR_IDE)
        && f.path.parent() == Some(db.canonicalize().unwrap().as_path())));
}

/// A bubble over the line limit is skipped with the reason, its size read from its row's
/// header before it is built; the conversation's other bubbles are read.
#[test]
fn a_bubble_too_large_to_be_a_line_is_skipped_before_it_is_built() {
    let (d, db) = home();
    Connection::open(&db)
        .unwrap()
        .execute(
            &format!(
                "UPDATE cursorDiskKV SET value = replace(hex(zeroblob(20000000)), '0', 'x')
                 WHERE key = 'bubbleId:{ORCHARD}:b-o6'"
            ),
            [],
        )
        .unwrap();
    let out = read_file(&session(d.path(), ORCHARD), None);
    let reasons: Vec<&str> = out.batch.skips.iter().map(|s| s.reason.as_str()).collect();
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(
        reasons[0].starts_with("message too large: its rows hold 40000000 bytes"),
        "{reasons:?}"
    );
    let ids = crate::tests::message_ids(&out.batch);
    assert_eq!(ids, ["b-o1", "b-o2", "b-o3", "b-o5"]);
}
