//! `pond sync`: discovery, idempotence, growth, deletion, bad input.

use std::io::Write;

use crate::common::Env;

#[test]
fn syncs_fixtures_and_is_idempotent() {
    let env = Env::new();
    let src = env.sources();
    let r = env.sync(&src);
    assert_eq!(r["files_new"], 5);
    assert_eq!(r["messages_added"], 23);
    assert_eq!(r["records_added"], 37, "every line is a record");
    assert_eq!(
        r["duplicate_messages"], 1,
        "the replayed uuid is stored once"
    );
    assert_eq!(r["skipped"], 0);
    // Messages' full-text and three B-trees, parts' B-tree and two n-gram indexes.
    assert_eq!(r["indexes_created"], 7);
    assert_eq!(env.count("sessions"), 5);
    assert_eq!(env.count("messages"), 23);

    let again = env.sync(&src);
    assert_eq!(again["files_unchanged"], 5);
    assert_eq!(again["messages_added"], 0);
    assert_eq!(again["records_added"], 0);
    assert_eq!(env.count("messages"), 23);
    assert_eq!(env.count("records"), 37);
}

#[test]
fn default_homes_are_discovered() {
    let env = Env::new();
    let src = env.sources();
    let (claude, codex) = (src.join("claude"), src.join("codex"));
    let homes = [
        ("CLAUDE_CONFIG_DIR", claude.to_str().unwrap()),
        ("CODEX_HOME", codex.to_str().unwrap()),
    ];
    let r = env.json_with(&["sync", "--json"], &homes);
    assert_eq!(r["files_new"], 5);
    let agents = env.sql_json(
        "SELECT source_agent, count(*) AS n FROM sessions GROUP BY source_agent ORDER BY source_agent",
    );
    assert_eq!(
        agents,
        serde_json::json!([
            {"source_agent": "claude-code", "n": 2},
            {"source_agent": "claude-code/subagent", "n": 1},
            {"source_agent": "codex", "n": 2}
        ])
    );
    let sub = env.sql_json("SELECT parent_session_id FROM sessions WHERE id = 'agent-a1b2c3'");
    assert_eq!(
        sub[0]["parent_session_id"],
        "11111111-1111-4111-8111-111111111111"
    );
}

#[test]
fn source_flag_limits_discovery() {
    let env = Env::new();
    let src = env.sources();
    let r = env.json(&[
        "sync",
        "--source",
        "codex",
        "--path",
        src.join("codex").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(r["files_new"], 2);
    assert_eq!(env.count("sessions"), 2);
}

#[test]
fn grown_file_adds_only_new_lines_and_vanished_file_keeps_its_data() {
    let env = Env::new();
    let src = env.sources();
    env.sync(&src);
    let file =
        src.join("claude/projects/-home-dev-legacy/22222222-2222-4222-8222-222222222222.jsonl");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    writeln!(f, r#"{{"type":"user","uuid":"l-u2","parentUuid":"l-a1","sessionId":"22222222-2222-4222-8222-222222222222","cwd":"/home/dev/legacy","timestamp":"2025-08-24T04:20:00.000Z","message":{{"role":"user","content":"now update the lexer docs"}}}}"#).unwrap();
    drop(f);
    let r = env.sync(&src);
    assert_eq!(r["files_appended"], 1);
    assert_eq!(r["messages_added"], 1);
    assert_eq!(r["records_added"], 1);
    let line = env.sql_json("SELECT source_line FROM messages WHERE id = 'l-u2'");
    assert_eq!(line[0]["source_line"], 4);
    // The new message is searchable at once (the index was updated at the end of sync).
    let hits = env.json(&["search", "lexer docs", "--json"]);
    assert_eq!(hits["sessions"][0]["hits"][0]["message_id"], "l-u2");

    std::fs::remove_file(&file).unwrap();
    let r = env.sync(&src);
    assert_eq!(r["messages_added"], 0);
    assert_eq!(
        env.count("messages"),
        24,
        "a deleted source never deletes stored data"
    );
}

#[test]
fn rewritten_file_stores_only_changed_lines() {
    let env = Env::new();
    let src = env.sources();
    env.sync(&src);
    let file =
        src.join("claude/projects/-home-dev-legacy/22222222-2222-4222-8222-222222222222.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    // Same first lines, a changed last line: the file was rewritten, not appended to.
    let changed = text.replace(
        "Renamed the tokenizer module to lexer.",
        "Renamed it to scanner.",
    );
    let changed = changed.replace("\"uuid\":\"l-a1\"", "\"uuid\":\"l-a1b\"");
    std::fs::write(&file, format!("{}\n", changed.trim_end())).unwrap();
    let r = env.sync(&src);
    assert_eq!(
        r["files_rewritten"].as_u64().unwrap() + r["files_appended"].as_u64().unwrap(),
        1
    );
    assert_eq!(r["records_added"], 1, "{r}");
    assert_eq!(r["messages_added"], 1);
    assert_eq!(env.count("records"), 38);
}

#[test]
fn bad_input_is_reported_and_the_rest_ingested() {
    let env = Env::new();
    let dir = env.dir.path().join("bad/projects/-tmp-x");
    std::fs::create_dir_all(&dir).unwrap();
    let good = |uuid: &str, text: &str| {
        format!(
            r#"{{"type":"user","uuid":"{uuid}","sessionId":"bad","cwd":"/tmp/x","timestamp":"2026-01-01T00:00:00Z","message":{{"role":"user","content":"{text}"}}}}"#
        )
    };
    let mut f = std::io::BufWriter::new(std::fs::File::create(dir.join("bad.jsonl")).unwrap());
    writeln!(f, "{}", good("g1", "first good line about zebras")).unwrap();
    writeln!(f, "{{\"type\":\"user\", broken").unwrap();
    f.write_all(b"{\"type\":\"user\",\"x\":\"\xff\xfe\"}\n")
        .unwrap();
    writeln!(
        f,
        r#"{{"type":"hologram","sessionId":"bad","data":[1,2,3]}}"#
    )
    .unwrap();
    writeln!(f, "42").unwrap();
    // A 100 MiB line.
    f.write_all(b"{\"type\":\"user\",\"pad\":\"").unwrap();
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..100 {
        f.write_all(&chunk).unwrap();
    }
    f.write_all(b"\"}\n").unwrap();
    writeln!(f, "{}", good("g2", "second good line about giraffes")).unwrap();
    write!(f, "{{\"type\":\"user\",\"uuid\":\"g3\",\"mess").unwrap();
    drop(f);

    let bad_root = env.dir.path().join("bad");
    let sync_bad = || {
        env.json(&[
            "sync",
            "--source",
            "claude-code",
            "--path",
            bad_root.to_str().unwrap(),
            "--json",
        ])
    };
    let r = sync_bad();
    assert_eq!(r["messages_added"], 2, "{r}");
    assert_eq!(
        r["records_added"], 3,
        "two messages and the unknown record type"
    );
    assert_eq!(r["skipped"], 5, "{r}");
    let reasons = &r["skipped_by_reason"];
    assert_eq!(reasons["malformed JSON"], 1, "{r}");
    assert_eq!(reasons["invalid UTF-8"], 1, "{r}");
    assert_eq!(reasons["not a JSON object"], 1);
    assert_eq!(reasons["incomplete last line"], 1);
    let huge = r["skip_examples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["line"] == 6)
        .expect("the huge line is reported");
    assert!(huge["reason"]
        .as_str()
        .unwrap()
        .starts_with("line too long"));
    assert!(
        r["peak_rss_kib"].as_u64().unwrap() < 400 * 1024,
        "a 100 MiB line is never held whole: {}",
        r["peak_rss_kib"]
    );
    let unknown =
        env.sql_json("SELECT record_type, line FROM records WHERE record_type = 'hologram'");
    assert_eq!(unknown[0]["line"], 4);
    let text = env.ok(&["search", "giraffes"]);
    assert!(text.contains("g2"), "{text}");

    // Finishing the truncated last line stores it on the next sync.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join("bad.jsonl"))
        .unwrap();
    writeln!(f, r#"age":{{"role":"user","content":"third line about okapis"}},"sessionId":"bad","timestamp":"2026-01-01T00:00:01Z"}}"#).unwrap();
    drop(f);
    let r = sync_bad();
    assert_eq!(r["messages_added"], 1, "{r}");
    assert_eq!(r["skipped"], 0, "{r}");
    assert!(env.ok(&["search", "okapis"]).contains("g3"));
}

#[test]
fn second_writer_is_refused_while_the_lock_is_held() {
    let env = Env::new();
    let src = env.sources();
    env.sync(&src);
    let lock = std::fs::File::options()
        .write(true)
        .open(env.store().join("pond.lock"))
        .unwrap();
    lock.lock().unwrap();
    let err = env.fails(&["sync", "--path", src.to_str().unwrap()]);
    assert!(err.contains("holds the store lock"), "{err}");
    drop(lock);
    env.sync(&src);
}

#[test]
fn rows_not_yet_indexed_are_still_found() {
    let env = Env::new();
    let src = env.sources();
    let r = env.sync_with(&src, &["--no-index"]);
    assert_eq!(r["indexes_created"], 0);
    let v = env.json(&["search", "invoices", "--json"]);
    assert_eq!(v["hits"], 2, "{v}");
    env.sync(&src);
    let status = env.json(&["status", "--json"]);
    assert_eq!(status["unindexed_rows"], 0);
}

#[test]
fn a_resumed_copy_at_the_same_lines_keeps_its_session_whole_and_is_searched_once() {
    let env = Env::new();
    let src = env.sources();
    let dir = src.join("claude/projects/-home-dev-shop");
    let original = dir.join("11111111-1111-4111-8111-111111111111.jsonl");
    // A resumed session replays the original's lines (same uuids, same line numbers).
    std::fs::copy(
        &original,
        dir.join("99999999-9999-4999-8999-999999999999.jsonl"),
    )
    .unwrap();
    env.sync(&src);
    let per_message = env.sql_json(
        "SELECT session_id, message_id, count(*) AS n FROM parts GROUP BY session_id, message_id, ordinal HAVING count(*) > 1",
    );
    assert_eq!(
        per_message,
        serde_json::json!([]),
        "no part stored twice in a session"
    );
    let owners = env.sql_json("SELECT count(*) AS n FROM messages WHERE NOT replayed");
    assert_eq!(owners[0]["n"], 23, "each message owned once");
    let page = |id: &str| {
        let p = env.json(&["get-session", id, "--json", "--limit", "200"]);
        p["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let copy = page("99999999-9999-4999-8999-999999999999");
    assert!(!copy.is_empty());
    assert_eq!(copy, page("11111111-1111-4111-8111-111111111111"));
    // Each message once (c-u2 and c-a3), in the session that owns it.
    let hits = env.json(&["search", "drift OR cent", "--json"]);
    assert_eq!(hits["hits"], 2, "{hits}");
    assert_eq!(hits["sessions"].as_array().unwrap().len(), 1, "{hits}");
    assert_eq!(
        hits["sessions"][0]["session_id"],
        "11111111-1111-4111-8111-111111111111"
    );
}

/// Every row the fixtures store, as text: each table in a fixed order, the sources folder
/// written `$SRC`, and the file times (which a copy of the fixtures changes) left out.
fn stored_rows(env: &Env, src: &std::path::Path) -> String {
    let queries = [
        "SELECT * FROM sessions ORDER BY id",
        "SELECT * FROM messages ORDER BY source_path, source_line, id",
        "SELECT * FROM parts ORDER BY session_id, message_id, ordinal",
        "SELECT * FROM records ORDER BY source_path, line",
        "SELECT path, cursor FROM files ORDER BY path",
    ];
    let root = std::fs::canonicalize(src).unwrap();
    let mut out = String::new();
    for q in queries {
        let mut rows = env.sql_json(q);
        for row in rows.as_array_mut().unwrap() {
            if let Some(c) = row.get("cursor").and_then(|c| c.as_str()) {
                let mut cursor: serde_json::Value = serde_json::from_str(c).unwrap();
                let cursor_fields = cursor.as_object_mut().unwrap();
                cursor_fields.remove("mtime_ns");
                // What a Codex file's usage needs on its next read (issue 40): new state in
                // the cursor, not a change to what is stored of the file.
                cursor_fields.remove("model");
                cursor_fields.remove("usage_total");
                row["cursor"] = cursor;
            }
        }
        out.push_str(&rows.to_string().replace(root.to_str().unwrap(), "$SRC"));
        out.push('\n');
    }
    out
}

/// The digest of [`stored_rows`] as the pond before the source registry (commit 3c4095c)
/// stored the fixtures: Claude Code and Codex moved behind the registry without changing a
/// stored row, cursor or record.
const FIXTURE_ROWS_SHA256: &str =
    "dca56af4824f7efdf8c96143499715114aac9eed5875d357fae74d1972b05c6c";

#[test]
fn the_fixtures_store_the_rows_they_always_did() {
    use sha2::Digest;
    let env = Env::new();
    let src = env.sources();
    env.sync(&src);
    let rows = stored_rows(&env, &src);
    let digest = sha2::Sha256::digest(rows.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, FIXTURE_ROWS_SHA256, "rows now:\n{rows}");
}
