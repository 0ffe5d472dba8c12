//! OpenCode's database read as sessions: the fixture script (`tests/clients/opencode`), a
//! database that changes between reads, and databases that cannot be read.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use crate::common::now_ms;
use crate::model::Role;
use crate::reader::{read_file, ReadMode};
use crate::sources::OPENCODE;
use crate::{discover_all, FileBatch, FileCursor, SourceFile};

/// A home holding `opencode.db` built from the fixture scripts.
fn home() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("opencode.db");
    let conn = Connection::open(&db).unwrap();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/clients/opencode");
    for script in ["schema.sql", "sessions.sql"] {
        let sql = std::fs::read_to_string(dir.join(script))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.join(script).display()));
        conn.execute_batch(&sql).unwrap();
    }
    (d, db)
}

fn sessions(home: &Path) -> Vec<SourceFile> {
    crate::tests::db_sessions(home, OPENCODE)
}

fn session(home: &Path, id: &str) -> SourceFile {
    crate::tests::db_session(home, OPENCODE, id)
}

fn read_all(files: &[SourceFile]) -> (FileBatch, Vec<FileCursor>) {
    let mut all = FileBatch::default();
    let mut cursors = Vec::new();
    for f in files {
        let out = read_file(f, None);
        assert_eq!(out.mode, ReadMode::New, "{:?}", out.batch.skips);
        all.append(out.batch);
        cursors.push(out.cursor);
    }
    (all, cursors)
}

#[test]
fn sessions_messages_parts_and_records() {
    let (d, db) = home();
    let files = sessions(d.path());
    let ids: Vec<String> = files.iter().map(|f| f.stem()).collect();
    // Parents first, the subagent's session last; each is a path under the database's.
    assert_eq!(ids, ["ses_api1", "ses_orchard1", "ses_explore1"]);
    assert!(files
        .iter()
        .all(|f| f.path.parent() == Some(db.canonicalize().unwrap().as_path())));
    let sub = &files[2];
    assert!(sub.is_subagent);
    assert_eq!(sub.parent_session.as_deref(), Some("ses_orchard1"));

    let (b, _) = read_all(&files);
    assert!(b.skips.is_empty(), "{:?}", b.skips);
    let session = |id: &str| b.sessions.iter().find(|s| s.id == id).unwrap();
    let main = session("ses_orchard1");
    assert_eq!(
        main.title.as_deref(),
        Some("Fix the uploader retrying forever")
    );
    assert_eq!(main.project.as_deref(), Some("/home/dev/orchard"));
    assert_eq!(main.source_agent, "opencode");
    assert_eq!(main.created_at, Some(1785000000000));
    // The global project's worktree is `/`: the session's directory names it.
    assert_eq!(session("ses_api1").project.as_deref(), Some("/srv/api"));
    let explore = session("ses_explore1");
    assert_eq!(explore.parent_id.as_deref(), Some("ses_orchard1"));
    assert_eq!(explore.source_agent, "opencode/subagent");

    // One record per session row and per message (with its parts), each verbatim.
    assert_eq!(b.records.len(), 3 + 8);
    let rec = b
        .records
        .iter()
        .find(|r| r.raw.contains("\"msg_o2\""))
        .unwrap();
    assert_eq!(rec.record_type.as_deref(), Some("message/assistant"));
    assert!(rec.raw.contains(r#""tokens":{"input":1200,"output":340"#));
    assert!(
        rec.raw.contains(r#""type":"step-finish""#),
        "parts kept whole in records"
    );

    let msg = |id: &str| b.messages.iter().find(|m| m.id == id).unwrap();
    let parts = |id: &str| {
        b.parts
            .iter()
            .filter(|p| p.message_id == id)
            .collect::<Vec<_>>()
    };
    let q = msg("msg_o1");
    assert_eq!(q.role, Role::User);
    assert_eq!(q.model.as_deref(), Some("claude-sonnet-4-5"));
    // What the client injected (`synthetic`) is a part, not searchable text.
    assert_eq!(
        q.search_text.as_deref(),
        Some("why does the uploader retry forever when the bucket is missing?")
    );
    assert_eq!(parts("msg_o1").len(), 2);
    let a = msg("msg_o2");
    assert_eq!(a.role, Role::Assistant);
    assert_eq!(a.timestamp, 1785000011000);
    assert!(a
        .search_text
        .as_deref()
        .unwrap()
        .starts_with("The retry loop treats NoSuchBucket"));
    let types: Vec<&str> = parts("msg_o2")
        .iter()
        .map(|p| p.part_type.as_str())
        .collect();
    assert_eq!(
        types,
        [
            "thinking",
            "tool_call",
            "tool_result",
            "tool_call",
            "tool_result",
            "tool_call",
            "tool_result",
            "text",
            "patch"
        ]
    );
    let result = |call: &str| {
        b.parts
            .iter()
            .find(|p| p.part_type == "tool_result" && p.call_id.as_deref() == Some(call))
            .unwrap()
    };
    assert_eq!(result("call_grep1").is_error, Some(false));
    assert_eq!(result("call_grep1").tool_name.as_deref(), Some("grep"));
    // A command that exited non-zero, and a call that failed, are errors.
    assert_eq!(result("call_bash1").is_error, Some(true));
    assert_eq!(result("call_edit1").is_error, Some(true));
    assert!(result("call_edit1")
        .text
        .as_deref()
        .unwrap()
        .contains("not found"));
    let call = b
        .parts
        .iter()
        .find(|p| p.part_type == "tool_call" && p.call_id.as_deref() == Some("call_bash1"))
        .unwrap();
    assert_eq!(
        call.body.as_deref(),
        Some(r#"{"command":"cargo test upload"}"#)
    );
    // A failed answer: its error is a part, and it has nothing to search.
    let failed = msg("msg_o4");
    assert_eq!(failed.search_text, None);
    let err = parts("msg_o4");
    assert_eq!(err[0].part_type, "error");
    assert_eq!(err[0].text.as_deref(), Some("API key expired"));
    // An inline attachment's bytes stay in records only.
    let file = parts("msg_o3")
        .into_iter()
        .find(|p| p.part_type == "file")
        .unwrap();
    assert_eq!(file.text.as_deref(), Some("trace.png"));
    assert!(!file.body.as_deref().unwrap().contains("base64"));
    let sub = parts("msg_a2");
    assert_eq!(sub[0].part_type, "subtask");
    assert_eq!(sub[0].tool_name.as_deref(), Some("explore"));
    assert!(crate::tests::parts_follow_messages(&b));
}

#[test]
fn stored_lines_parse_as_the_database_did() {
    let (d, _db) = home();
    crate::tests::db_lines_rederive(d.path(), OPENCODE);
}

#[test]
fn a_database_changed_between_reads_gives_only_what_is_new() {
    let (d, db) = home();
    let files = sessions(d.path());
    let main = files.iter().find(|f| f.stem() == "ses_orchard1").unwrap();
    let first = read_file(main, None);
    let lines = first.cursor.line;

    // Nothing changed: not read.
    let again = read_file(main, Some(&first.cursor));
    assert_eq!(again.mode, ReadMode::Unchanged);

    // A new prompt, and an answer still being written (no `time.completed`): the prompt is
    // read, the answer held back.
    let now = now_ms();
    let w = Connection::open(&db).unwrap();
    w.execute_batch(&format!(
        "INSERT INTO message VALUES ('msg_o5', 'ses_orchard1', {now}, {now},
           '{{\"role\":\"user\",\"time\":{{\"created\":{now}}}}}');
         INSERT INTO part VALUES ('prt_o5a', 'msg_o5', 'ses_orchard1', {now}, {now},
           '{{\"type\":\"text\",\"text\":\"and add a test for it\"}}');
         INSERT INTO message VALUES ('msg_o6', 'ses_orchard1', {t}, {t},
           '{{\"role\":\"assistant\",\"time\":{{\"created\":{t}}}}}');
         INSERT INTO part VALUES ('prt_o6a', 'msg_o6', 'ses_orchard1', {t}, {t},
           '{{\"type\":\"text\",\"text\":\"Adding a test that\"}}');",
        t = now + 1
    ))
    .unwrap();
    let grown = read_file(main, Some(&first.cursor));
    assert_eq!(grown.mode, ReadMode::Appended);
    let ids: Vec<&str> = grown.batch.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["msg_o5"]);
    assert_eq!(grown.batch.records.len(), 1);
    assert_eq!(
        grown.batch.records[0].line,
        lines + 1,
        "lines are numbered on"
    );
    assert_eq!(grown.cursor.rows.as_ref().unwrap().held, 1);

    // Held back, so looked at again though nothing changed; still nothing to read.
    let still = read_file(main, Some(&grown.cursor));
    assert_eq!(still.mode, ReadMode::Appended);
    assert!(still.batch.messages.is_empty() && still.batch.records.is_empty());

    // It completes: read whole, once.
    let done = now + 2;
    w.execute_batch(&format!(
        "UPDATE part SET data = '{{\"type\":\"text\",\"text\":\"Adding a test that covers a missing bucket.\"}}',
           time_updated = {done} WHERE id = 'prt_o6a';
         UPDATE message SET time_updated = {done}, data = '{{\"role\":\"assistant\",\"time\":{{\"created\":{now},\"completed\":{done}}}}}'
           WHERE id = 'msg_o6';"
    ))
    .unwrap();
    let completed = read_file(main, Some(&still.cursor));
    let m = &completed.batch.messages;
    assert_eq!(m.len(), 1);
    assert_eq!(
        m[0].search_text.as_deref(),
        Some("Adding a test that covers a missing bucket.")
    );
    let after = read_file(main, Some(&completed.cursor));
    assert_eq!(after.mode, ReadMode::Unchanged);

    // A message changed after it was read (OpenCode adds a prompt's summary later): read
    // again as a new line under the same id (the store keeps its first copy, and every
    // version in records).
    w.execute(
        "UPDATE message SET time_updated = ?1, data = json_set(data, '$.summary', json('{\"title\":\"Uploader retries\"}')) WHERE id = 'msg_o1'",
        [done + 1],
    )
    .unwrap();
    let changed = read_file(main, Some(&completed.cursor));
    let ids = crate::tests::message_ids(&changed.batch);
    assert_eq!(ids, ["msg_o1"]);
    assert!(changed.batch.records[0].raw.contains("Uploader retries"));
}

#[test]
fn an_answer_left_incomplete_is_read_once_it_stops_changing() {
    let (d, db) = home();
    let w = Connection::open(&db).unwrap();
    // Written long ago and never completed (the client died mid-turn).
    w.execute_batch(
        "INSERT INTO message VALUES ('msg_a3', 'ses_api1', 1785000950000, 1785000950000,
           '{\"role\":\"assistant\",\"time\":{\"created\":1785000950000}}');
         INSERT INTO part VALUES ('prt_a3a', 'msg_a3', 'ses_api1', 1785000950001, 1785000950001,
           '{\"type\":\"text\",\"text\":\"Half an answer\"}');",
    )
    .unwrap();
    let f = session(d.path(), "ses_api1");
    let out = read_file(&f, None);
    assert!(out.batch.messages.iter().any(|m| m.id == "msg_a3"));
    assert_eq!(out.cursor.rows.as_ref().unwrap().held, 0);
}

#[test]
fn databases_that_cannot_be_read_are_reported() {
    // Not a database.
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("opencode.db"),
        b"this is not sqlite, just text\n".repeat(200),
    )
    .unwrap();
    let found = discover_all(d.path(), Some(OPENCODE));
    assert!(found.files.is_empty());
    assert_eq!(found.unreadable.len(), 1, "{:?}", found.unreadable);
    assert!(
        found.unreadable[0].reason.contains("not a database"),
        "{:?}",
        found.unreadable
    );

    // A database without the tables: discovery says so.
    let e = tempfile::tempdir().unwrap();
    Connection::open(e.path().join("opencode.db"))
        .unwrap()
        .execute_batch("CREATE TABLE other (x);")
        .unwrap();
    let found = discover_all(e.path(), Some(OPENCODE));
    assert!(
        found.unreadable[0]
            .reason
            .contains("no such table: session"),
        "{:?}",
        found.unreadable
    );

    // A session whose database went away between discovery and the read: a failed read
    // with the reason, the cursor left as it was (read again next time).
    let (h, db) = home();
    let f = sessions(h.path()).remove(0);
    let first = read_file(&f, None);
    std::fs::remove_file(&db).unwrap();
    let gone = read_file(&f, Some(&first.cursor));
    assert_eq!(gone.mode, ReadMode::Failed);
    assert_eq!(gone.cursor, first.cursor);
    assert!(
        gone.batch.skips[0]
            .reason
            .starts_with("cannot open database"),
        "{:?}",
        gone.batch.skips
    );

    // A data column that is not JSON: stored as a string in the record, a message without
    // a role (a system note), never a crash.
    let (h, db) = home();
    Connection::open(&db)
        .unwrap()
        .execute(
            "UPDATE message SET data = '{not json' WHERE id = 'msg_a1'",
            [],
        )
        .unwrap();
    let f = session(h.path(), "ses_api1");
    let out = read_file(&f, None);
    let bad = out
        .batch
        .records
        .iter()
        .find(|r| r.raw.contains("msg_a1"))
        .unwrap();
    assert!(bad.raw.contains(r#""data":"{not json""#));
    let m = out
        .batch
        .messages
        .iter()
        .find(|m| m.id == "msg_a1")
        .unwrap();
    assert_eq!(m.role, Role::System);
}

#[test]
fn a_database_being_written_is_read_when_its_writer_lets_go() {
    let (d, db) = home();
    let f = sessions(d.path()).remove(0);
    // A rollback-journal database under an exclusive lock (a write in progress): the read
    // waits for it rather than failing at once.
    let w = Connection::open(&db).unwrap();
    w.execute_batch("PRAGMA journal_mode=DELETE; BEGIN EXCLUSIVE;")
        .unwrap();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(500));
        w.execute_batch("COMMIT;").unwrap();
    });
    let out = read_file(&f, None);
    writer.join().unwrap();
    assert_eq!(out.mode, ReadMode::New, "{:?}", out.batch.skips);
    assert!(!out.batch.messages.is_empty());
}

#[test]
fn a_database_held_locked_is_waited_for_once_in_a_sync_not_per_session() {
    use crate::reader::{read_file_part, HeldDatabases};
    let (d, db) = home();
    let files = sessions(d.path());
    assert!(files.len() >= 2);
    let w = Connection::open(&db).unwrap();
    w.execute_batch("PRAGMA journal_mode=DELETE; BEGIN EXCLUSIVE;")
        .unwrap();
    let held = HeldDatabases::default();
    let t = std::time::Instant::now();
    let first = read_file_part(&files[0], None, u64::MAX, &held);
    let waited = t.elapsed();
    assert_eq!(first.mode, ReadMode::Failed);
    let reason = &first.batch.skips[0].reason;
    assert!(
        reason.contains("locked") && reason.contains("next sync"),
        "{reason}"
    );
    assert!(waited >= std::time::Duration::from_secs(4), "{waited:?}");
    // The same sync's next session of that database: not waited for.
    let t = std::time::Instant::now();
    let second = read_file_part(&files[1], None, u64::MAX, &held);
    assert!(t.elapsed() < std::time::Duration::from_secs(1));
    assert_eq!(second.mode, ReadMode::Failed);
    assert!(second.batch.skips[0]
        .reason
        .contains("earlier in this sync"));
    assert!(second.batch.messages.is_empty());
    // The next sync, the lock let go: both sessions are read whole.
    w.execute_batch("COMMIT;").unwrap();
    let next = HeldDatabases::default();
    for f in &files[..2] {
        let out = read_file_part(f, None, u64::MAX, &next);
        assert_eq!(out.mode, ReadMode::New, "{:?}", out.batch.skips);
        assert!(!out.batch.records.is_empty());
    }
}

#[test]
fn a_database_in_wal_mode_is_read_while_its_client_holds_it_open() {
    let (d, db) = home();
    let w = Connection::open(&db).unwrap();
    w.execute_batch("PRAGMA journal_mode=WAL;").unwrap();
    // A write the client has committed to the log but not checkpointed into the file.
    w.execute(
        "UPDATE session SET title = 'Renamed in the log', time_updated = time_updated + 1 WHERE id = 'ses_api1'",
        [],
    )
    .unwrap();
    let f = session(d.path(), "ses_api1");
    let out = read_file(&f, None);
    assert_eq!(
        out.batch.sessions[0].title.as_deref(),
        Some("Renamed in the log")
    );
    drop(w);
}

#[test]
fn any_folder_with_a_database_is_found_without_naming_the_client() {
    let (d, _db) = home();
    let found = discover_all(d.path(), None);
    assert_eq!(found.files.len(), 3, "{:?}", found);
    assert!(found.files.iter().all(|f| f.kind == Some(OPENCODE)));
}

/// `storage/` (the fixture's tree of an older build) copied into `home`.
fn with_tree(home: &Path) -> PathBuf {
    let from = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/clients/opencode/storage");
    let to = home.join("storage");
    crate::tests::copy_tree(&from, &to, None);
    to
}

#[test]
fn an_older_builds_storage_tree_is_read_as_the_database_is() {
    let (d, db) = home();
    let storage = with_tree(d.path());
    let files = sessions(d.path());
    let ids: Vec<String> = files.iter().map(|f| f.stem()).collect();
    // The tree's copy of ses_orchard1 gives way to the database's.
    assert_eq!(
        ids,
        [
            "ses_api1",
            "ses_orchard1",
            "ses_drip1",
            "ses_explore1",
            "ses_drip2"
        ]
    );
    let canonical = storage.canonicalize().unwrap();
    let in_tree: Vec<String> = files
        .iter()
        .filter(|f| f.path.parent() == Some(canonical.as_path()))
        .map(|f| f.stem())
        .collect();
    assert_eq!(in_tree, ["ses_drip1", "ses_drip2"]);
    let orchard = files.iter().find(|f| f.stem() == "ses_orchard1").unwrap();
    assert_eq!(
        orchard.path.parent(),
        Some(db.canonicalize().unwrap().as_path())
    );

    let (b, cursors) = read_all(&files);
    assert!(b.skips.is_empty(), "{:?}", b.skips);
    let session = |id: &str| b.sessions.iter().find(|s| s.id == id).unwrap();
    let drip = session("ses_drip1");
    assert_eq!(
        drip.title.as_deref(),
        Some("Drip irrigation timer skips Tuesdays")
    );
    assert_eq!(drip.project.as_deref(), Some("/home/dev/garden"));
    assert_eq!(drip.source_agent, "opencode");
    assert_eq!(drip.created_at, Some(1760000000000));
    let sub = session("ses_drip2");
    assert_eq!(sub.parent_id.as_deref(), Some("ses_drip1"));
    assert_eq!(sub.source_agent, "opencode/subagent");
    assert_eq!(
        session("ses_orchard1").title.as_deref(),
        Some("Fix the uploader retrying forever")
    );
    // A record per session file and per message with its parts, the files' JSON inside.
    assert_eq!(b.records.len(), 3 + 8 + 3 + 3);
    let drip_records: Vec<_> = b
        .records
        .iter()
        .filter(|r| r.source_path.contains("storage/ses_drip1"))
        .collect();
    assert_eq!(drip_records.len(), 3);
    assert!(drip_records[0].raw.contains("\"version\": \"0.9.2\""));

    let msg = |id: &str| b.messages.iter().find(|m| m.id == id).unwrap();
    assert_eq!(msg("msg_drip1a").role, Role::User);
    assert_eq!(
        msg("msg_drip1a").search_text.as_deref(),
        Some("The drip irrigation timer never waters on Tuesdays. Why?")
    );
    let answer = msg("msg_drip1b");
    assert_eq!(answer.model.as_deref(), Some("claude-sonnet-4"));
    assert_eq!(answer.timestamp, 1760000005000);
    assert!(answer
        .search_text
        .as_deref()
        .unwrap()
        .contains("leaves out 'tue'"));
    let part = |ty: &str| {
        b.parts
            .iter()
            .find(|p| p.message_id == "msg_drip1b" && p.part_type == ty)
            .unwrap_or_else(|| panic!("{ty}"))
    };
    assert!(part("thinking").text.as_deref().unwrap().contains("Monday"));
    assert_eq!(part("tool_call").tool_name.as_deref(), Some("bash"));
    assert!(part("tool_result")
        .text
        .as_deref()
        .unwrap()
        .contains("WEEKDAYS"));
    assert_eq!(part("tool_result").is_error, Some(false));

    // Nothing changed: not read again.
    let drip1 = files.iter().position(|f| f.stem() == "ses_drip1").unwrap();
    let again = read_file(&files[drip1], Some(&cursors[drip1]));
    assert_eq!(again.mode, ReadMode::Unchanged);

    // The session grows by a prompt: only it is read, numbered on.
    let msgs = storage.join("message/ses_drip1");
    std::fs::write(
        msgs.join("msg_drip1c.json"),
        r#"{"id":"msg_drip1c","sessionID":"ses_drip1","role":"user","time":{"created":1760000400000}}"#,
    )
    .unwrap();
    let parts = storage.join("part/msg_drip1c");
    std::fs::create_dir_all(&parts).unwrap();
    std::fs::write(
        parts.join("prt_drip1c1.json"),
        r#"{"id":"prt_drip1c1","messageID":"msg_drip1c","sessionID":"ses_drip1","type":"text","text":"Now water twice on hot days"}"#,
    )
    .unwrap();
    // A part that is not JSON: a skip naming its file, the rest read.
    std::fs::write(parts.join("prt_drip1c2.json"), "{\"id\": \"prt_dr").unwrap();
    let grown = read_file(&files[drip1], Some(&cursors[drip1]));
    assert_eq!(grown.mode, ReadMode::Appended);
    let ids: Vec<&str> = grown.batch.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["msg_drip1c"]);
    assert_eq!(grown.batch.records[0].line, cursors[drip1].line + 1);
    assert_eq!(grown.batch.skips.len(), 1, "{:?}", grown.batch.skips);
    let skip = &grown.batch.skips[0];
    assert!(
        skip.reason.contains("prt_drip1c2.json") && skip.reason.contains("malformed JSON"),
        "{skip:?}"
    );
    // Stamped by its files' names and times: not read (nor the bad file reported) again.
    let still = read_file(&files[drip1], Some(&grown.cursor));
    assert_eq!(still.mode, ReadMode::Unchanged);

    // A message's file written again (OpenCode adds to an answer): that message is read
    // again, a new line under the same id.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    let answer = msgs.join("msg_drip1b.json");
    let text = std::fs::read_to_string(&answer).unwrap();
    std::fs::write(&answer, text.replace("0.012", "0.013")).unwrap();
    let f = std::fs::File::options().write(true).open(&answer).unwrap();
    f.set_modified(later).unwrap();
    let changed = read_file(&files[drip1], Some(&still.cursor));
    let ids = crate::tests::message_ids(&changed.batch);
    assert_eq!(ids, ["msg_drip1b"]);
    assert!(changed.batch.records[0].raw.contains("0.013"));
}

#[test]
fn a_storage_tree_alone_is_found_and_its_lines_parse_as_read() {
    let d = tempfile::tempdir().unwrap();
    let storage = with_tree(d.path());
    // The home, or the tree's folder itself.
    for dir in [d.path(), storage.as_path()] {
        let ids: Vec<String> = sessions(dir).iter().map(|f| f.stem()).collect();
        assert_eq!(ids, ["ses_drip1", "ses_orchard1", "ses_drip2"], "{dir:?}");
    }
    crate::tests::db_lines_rederive(d.path(), OPENCODE);
    // A session file that is not JSON: reported when the tree is listed.
    std::fs::write(storage.join("session/global/ses_bad.json"), "not json").unwrap();
    let found = discover_all(d.path(), Some(OPENCODE));
    assert_eq!(found.files.len(), 3);
    assert_eq!(found.unreadable.len(), 1, "{:?}", found.unreadable);
    assert!(found.unreadable[0].path.ends_with("ses_bad.json"));
}

/// A message whose rows are over the line limit (a 40 MB part) is skipped with the reason,
/// its size read from the rows' headers before anything is built; the session's other
/// messages are read, and the skipped one is not looked at again until it changes.
#[test]
fn a_message_too_large_to_be_a_line_is_skipped_before_it_is_built() {
    let (d, db) = home();
    Connection::open(&db)
        .unwrap()
        .execute_batch(
            "INSERT INTO part VALUES ('prt_o2z', 'msg_o2', 'ses_orchard1', 1785000199700,
                1785000199700, replace(hex(zeroblob(20000000)), '0', 'x'));",
        )
        .unwrap();
    let f = session(d.path(), "ses_orchard1");
    let out = read_file(&f, None);
    let reasons: Vec<&str> = out.batch.skips.iter().map(|s| s.reason.as_str()).collect();
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(
        reasons[0].starts_with("message too large: its rows hold 4000"),
        "{reasons:?}"
    );
    let ids = crate::tests::message_ids(&out.batch);
    assert!(
        !ids.contains(&"msg_o2") && ids.contains(&"msg_o1"),
        "{ids:?}"
    );
    assert!(!out.batch.records.iter().any(|r| r.raw.contains("msg_o2")));
    let again = read_file(&f, Some(&out.cursor));
    assert_eq!(again.mode, ReadMode::Unchanged);
}
