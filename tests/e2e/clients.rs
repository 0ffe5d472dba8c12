//! The clients added through the source registry, end to end: each client's default home
//! synced by a plain `pond sync`, its sessions found by search and read whole over MCP.

use serde_json::json;

use crate::common::{clients, copy_dir, Env};
use crate::mcp::{connect, runtime};

const COPILOT_SESSION: &str = "55555555-5555-4555-8555-555555555555";

/// An environment whose `~/.copilot` is the Copilot fixture, synced by `pond sync`.
fn copilot_home() -> Env {
    let env = Env::new();
    copy_dir(&clients().join("copilot"), &env.dir.path().join(".copilot"));
    env
}

#[test]
fn copilot_default_home_is_synced_searched_and_read_over_mcp() {
    let env = copilot_home();
    let r = env.json(&["sync", "--json"]);
    assert_eq!(r["files_new"], 2, "{r}");
    assert_eq!(r["skipped"], 0, "{r}");
    assert_eq!(r["records_added"], 19 + 3, "every line is a record");
    let agents = env.sql_json("SELECT source_agent, count(*) AS n FROM sessions GROUP BY 1");
    assert_eq!(agents, json!([{"source_agent": "copilot", "n": 2}]));
    let status = env.ok(&["status"]);
    assert!(status.contains("sessions by source: copilot 2"), "{status}");

    // Idempotent: a second sync reads nothing.
    let again = env.json(&["sync", "--json"]);
    assert_eq!(again["files_unchanged"], 2);
    assert_eq!(again["records_added"], 0);

    // Found by what the user asked, in the right session; filtered by client.
    let hits = env.json(&["search", "sprinkler schedule Mondays", "--json"]);
    assert_eq!(hits["sessions"][0]["session_id"], COPILOT_SESSION, "{hits}");
    assert_eq!(hits["sessions"][0]["hits"][0]["message_id"], "c-e03");
    let mine = env.json(&["search", "glaze", "--agent", "copilot", "--json"]);
    assert_eq!(mine["sessions"].as_array().map(Vec::len), Some(1), "{mine}");
    let none = env.json(&["search", "glaze", "--agent", "codex", "--json"]);
    assert_eq!(none["sessions"].as_array().map(Vec::len), Some(0), "{none}");
    // A skill body injected as a user turn is stored but not searchable.
    let skill = env.json(&["search", "linter", "--json"]);
    assert_eq!(
        skill["sessions"].as_array().map(Vec::len),
        Some(0),
        "{skill}"
    );

    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let page = c
            .ok("pond_get_session", json!({"id": COPILOT_SESSION}))
            .await;
        for seen in [
            "Why does the sprinkler schedule skip Mondays?",
            "grep -n monday schedule.py",
            "if day == 'monday': continue",
            "rest day for the lawn",
            "rest_days",
            "changed on disk",
            "Rate limit exceeded",
        ] {
            assert!(page.contains(seen), "{seen:?} missing from:\n{page}");
        }
        let found = c
            .ok(
                "pond_search",
                json!({"query": "celadon silica", "source_agent": "copilot"}),
            )
            .await;
        assert!(
            found.contains("66666666-6666-4666-8666-666666666666"),
            "{found}"
        );
        let schema = c.resource("pond://schema").await;
        assert!(schema.contains("copilot"), "{schema}");
        c.service.cancel().await.unwrap();
    });
}

#[test]
fn copilot_source_flag_and_its_own_variable() {
    let env = Env::new();
    let home = env.dir.path().join("elsewhere");
    copy_dir(&clients().join("copilot"), &home);
    // The client's own variable moves its home, as it does for Copilot itself.
    let r = env.json_with(
        &["sync", "--source", "copilot", "--json"],
        &[("COPILOT_HOME", home.to_str().unwrap())],
    );
    assert_eq!(r["files_new"], 2, "{r}");
    // An unknown name is refused with the names pond knows.
    let err = env.fails(&["sync", "--source", "nope"]);
    assert!(err.contains("copilot"), "{err}");
    // A session that grows adds only its new lines.
    let file = home.join(format!("session-state/{COPILOT_SESSION}/events.jsonl"));
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(r#"{"type":"user.message","data":{"content":"Thanks, ship the rest-day setting."},"id":"c-e20","timestamp":"2026-05-04T09:03:00.000Z","parentId":"c-e19"}"#);
    text.push('\n');
    std::fs::write(&file, text).unwrap();
    let r = env.json_with(
        &["sync", "--source", "copilot", "--json"],
        &[("COPILOT_HOME", home.to_str().unwrap())],
    );
    assert_eq!(r["files_appended"], 1, "{r}");
    assert_eq!(r["messages_added"], 1, "{r}");
    let line = env.sql_json("SELECT source_line, session_id FROM messages WHERE id = 'c-e20'");
    assert_eq!(line[0]["source_line"], 20);
    assert_eq!(line[0]["session_id"], COPILOT_SESSION);
}

#[test]
fn a_generated_corpus_mixing_clients_syncs_to_its_counts() {
    let env = Env::new();
    let src = env.dir.path().join("corpus");
    let spec = pond_benches::corpus::Spec {
        copilot_share: 0.15,
        cursor_share: 0.15,
        gemini_share: 0.15,
        opencode_share: 0.1,
        cursor_ide_share: 0.1,
        vscode_copilot_share: 0.1,
        ..pond_benches::corpus::Spec::new(4000, 3)
    };
    let stats = pond_benches::corpus::generate(&src, &spec).unwrap();
    let r = env.sync(&src);
    assert_eq!(r["skipped"], 0, "{r}");
    assert_eq!(r["records_added"], stats.lines, "every line a record");
    assert_eq!(
        r["messages_added"], stats.messages,
        "the generator counts what pond stores"
    );
    let agents =
        env.sql_json("SELECT source_agent, count(*) AS n FROM sessions GROUP BY 1 ORDER BY 1");
    let names: Vec<&str> = agents
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["source_agent"].as_str().unwrap())
        .collect();
    assert!(
        [
            "copilot",
            "claude-code",
            "opencode",
            "cursor-ide",
            "vscode-copilot"
        ]
        .iter()
        .all(|n| names.contains(n)),
        "{agents}"
    );
}

#[test]
fn a_deleted_copilot_session_is_restored_byte_for_byte() {
    let env = copilot_home();
    env.ok(&["sync"]);
    let file = env.dir.path().join(format!(
        ".copilot/session-state/{COPILOT_SESSION}/events.jsonl"
    ));
    let before = std::fs::read(&file).unwrap();
    std::fs::remove_file(&file).unwrap();
    let r = env.json(&["restore", COPILOT_SESSION, "--json"]);
    assert_eq!(std::fs::read(&file).unwrap(), before, "{r}");
}

const CURSOR_SESSION: &str = "77777777-7777-4777-8777-777777777777";

#[test]
fn cursor_default_home_is_synced_searched_and_read_over_mcp() {
    let env = Env::new();
    copy_dir(&clients().join("cursor"), &env.dir.path().join(".cursor"));
    let r = env.json(&["sync", "--json"]);
    assert_eq!(
        r["files_new"], 3,
        "the transcripts, not the terminals' state: {r}"
    );
    assert_eq!(r["skipped"], 0, "{r}");
    let status = env.ok(&["status"]);
    assert!(status.contains("sessions by source: cursor 3"), "{status}");
    let hits = env.json(&["search", "pear trees pruned", "--agent", "cursor", "--json"]);
    assert_eq!(hits["sessions"][0]["session_id"], CURSOR_SESSION, "{hits}");
    let project = env.json(&["search", "pear", "--project", "orchard", "--json"]);
    assert_eq!(
        project["sessions"][0]["session_id"], CURSOR_SESSION,
        "{project}"
    );
    // The context Cursor adds to a user turn is not searchable.
    let context = env.json(&["search", "linux", "--json"]);
    assert_eq!(
        context["sessions"].as_array().map(Vec::len),
        Some(0),
        "{context}"
    );
    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let page = c
            .ok("pond_get_session", json!({"id": CURSOR_SESSION}))
            .await;
        for seen in [
            "Why are the pear trees pruned twice in March?",
            "rg -n march calendar.py",
            "Drop the pear row",
            "StrReplace",
            "Connection lost",
        ] {
            assert!(page.contains(seen), "{seen:?} missing from:\n{page}");
        }
        c.service.cancel().await.unwrap();
    });

    // Cursor rewrites a transcript whole, with the same lines or fewer (a pruned history):
    // read again from the start, nothing stored is lost and nothing is doubled.
    let file = env.dir.path().join(format!(
        ".cursor/projects/home-dev-orchard/agent-transcripts/{CURSOR_SESSION}/{CURSOR_SESSION}.jsonl"
    ));
    let text = std::fs::read_to_string(&file).unwrap();
    let messages = env.count("messages");
    std::fs::write(&file, &text).unwrap();
    let same = env.json(&["sync", "--json"]);
    assert_eq!(same["messages_added"], 0, "{same}");
    let pruned: Vec<&str> = text.lines().skip(4).collect();
    std::fs::write(&file, pruned.join("\n") + "\n").unwrap();
    let r = env.json(&["sync", "--json"]);
    assert_eq!(r["files_rewritten"], 1, "{r}");
    assert!(env.count("messages") >= messages, "{r}");
    let still = env.json(&["search", "pear trees pruned", "--json"]);
    assert_eq!(
        still["sessions"][0]["session_id"], CURSOR_SESSION,
        "{still}"
    );
}

/// The fixture's late-2025 text transcript: thinking in `<think>` tags, code at column 0.
const THINK_SESSION: &str = "dddddddd-4444-4ddd-8ddd-dddddddddddd";

#[test]
fn cursor_text_transcripts_are_synced_searched_and_read_over_mcp() {
    let env = Env::new();
    let home = env.dir.path().join(".cursor");
    copy_dir(&clients().join("cursor-text"), &home);
    let dir = home.join("projects/home-dev-greenhouse/agent-transcripts");
    let text = dir.join("aaaaaaaa-1111-4aaa-8aaa-aaaaaaaaaaaa.txt");
    let think = home.join(format!(
        "projects/home-dev-weir/agent-transcripts/{THINK_SESSION}.txt"
    ));
    // Written an hour ago: Cursor is done with them, their last answers are read too.
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for t in [&text, &think] {
        let f = std::fs::File::options().write(true).open(t).unwrap();
        f.set_modified(hour_ago).unwrap();
    }
    let r = env.json(&["sync", "--json"]);
    assert_eq!(
        r["files_new"], 3,
        "the text transcripts and the JSONL one: {r}"
    );
    assert_eq!(r["skipped"], 0, "{r}");
    assert_eq!(r["messages_added"], 6 + 2 + 5, "{r}");
    // A late build's transcript: `<think>` is thinking, not what was answered; the code of a
    // `StrReplace` whose lines start at column 0 is the call's input, not answer text.
    let of_think = |q: &str| {
        env.sql_json(&format!(
            "SELECT count(*) AS n FROM {q} AND session_id = '{THINK_SESSION}'"
        ))[0]["n"]
            .clone()
    };
    assert_eq!(of_think("parts WHERE part_type = 'thinking'"), 3);
    assert_eq!(
        of_think("messages WHERE role = 'assistant' AND search_text IS NOT NULL"),
        2
    );
    for said_elsewhere in ["reed switch", "sump.stop()"] {
        let q = format!("messages WHERE search_text LIKE '%{said_elsewhere}%'");
        assert_eq!(of_think(&q), 0, "{said_elsewhere}");
    }
    assert_eq!(
        of_think("parts WHERE part_type = 'tool_call' AND body LIKE '%sump.stop()%'"),
        1
    );
    let hits = env.json(&["search", "greenhouse vent opens at night", "--json"]);
    assert_eq!(
        hits["sessions"][0]["session_id"], "aaaaaaaa-1111-4aaa-8aaa-aaaaaaaaaaaa",
        "{hits}"
    );
    // The text copy beside the JSONL one is not read.
    let copy = env.json(&["search", "parsnip", "--json"]);
    assert_eq!(copy["sessions"].as_array().map(Vec::len), Some(0), "{copy}");
    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let page = c
            .ok(
                "pond_get_session",
                json!({"id": "aaaaaaaa-1111-4aaa-8aaa-aaaaaaaaaaaa"}),
            )
            .await;
        for seen in [
            "The greenhouse vent opens at night when it is cold. Why?",
            "vent/controller.py",
            "THRESHOLD_F = 25",
            "pytest vent",
            "3 passed in 0.41s",
            "All three vent tests pass.",
        ] {
            assert!(page.contains(seen), "{seen:?} missing from:\n{page}");
        }
        c.service.cancel().await.unwrap();
    });
    let again = env.json(&["sync", "--json"]);
    assert_eq!(again["files_unchanged"], 3, "{again}");
    // Restored as it was written, blank lines included.
    let out = env.dir.path().join("restored");
    env.ok(&[
        "restore",
        "aaaaaaaa-1111-4aaa-8aaa-aaaaaaaaaaaa",
        "--out",
        out.to_str().unwrap(),
    ]);
    let restored: Vec<_> = walk(&out);
    assert_eq!(restored.len(), 1, "{restored:?}");
    assert_eq!(
        std::fs::read(&restored[0]).unwrap(),
        std::fs::read(&text).unwrap()
    );
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

const GEMINI_SESSION: &str = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa";

#[test]
fn gemini_default_home_is_synced_searched_and_read_over_mcp() {
    let env = Env::new();
    copy_dir(&clients().join("gemini"), &env.dir.path().join(".gemini"));
    let r = env.json(&["sync", "--json"]);
    // Four logs, two older builds' whole chats (one resumed in a log of its own).
    assert_eq!(r["files_new"], 6, "{r}");
    assert_eq!(r["skipped"], 0, "{r}");
    let status = env.ok(&["status"]);
    assert!(
        status.contains("sessions by source: gemini 4, gemini/subagent 1"),
        "{status}"
    );
    let legacy = env.json(&[
        "search",
        "touchscreen ignores taps near the bezel",
        "--json",
    ]);
    assert_eq!(
        legacy["sessions"][0]["session_id"], "dddddddd-dddd-4ddd-8ddd-dddddddddddd",
        "{legacy}"
    );
    let hits = env.json(&[
        "search",
        "aquarium heater cycling",
        "--agent",
        "gemini",
        "--json",
    ]);
    assert_eq!(hits["sessions"][0]["session_id"], GEMINI_SESSION, "{hits}");
    // The turn the client sent by itself after a tool call is a system message, not a
    // prompt the user typed.
    let sent = env
        .sql_json("SELECT role, search_text IS NULL AS unsearchable FROM messages WHERE id = 'k1'");
    assert_eq!(sent, json!([{"role": "system", "unsearchable": true}]));
    // The rewound turn is not there to be found; the checkpoint's replaced draft neither.
    for gone in ["try 2.0 instead", "first draft of the kiosk"] {
        let none = env.json(&["search", gone, "--json"]);
        let found: Vec<&str> = none["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["hits"].as_array().unwrap())
            .filter_map(|h| h["message_id"].as_str())
            .collect();
        assert!(
            !found.contains(&"u2") && !found.contains(&"x1"),
            "{gone}: {none}"
        );
    }
    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let page = c
            .ok("pond_get_session", json!({"id": GEMINI_SESSION}))
            .await;
        for seen in [
            "Why is the aquarium heater cycling every minute?",
            "hysteresis = 0.1",
            "raise it to 0.5",
            "permission denied",
            "Request cancelled.",
        ] {
            assert!(page.contains(seen), "{seen:?} missing from:\n{page}");
        }
        assert!(!page.contains("Set it to 2.0."), "rewound:\n{page}");
        // A legacy chat resumed by a newer build reads whole, each message once.
        let resumed = c
            .ok(
                "pond_get_session",
                json!({"id": "eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee"}),
            )
            .await;
        // The messages, after the header (whose title is the first prompt).
        let messages = resumed.split_once("\n\n").map_or(&resumed[..], |(_, m)| m);
        for seen in ["five idle minutes", "show the date too", "weekday and date"] {
            assert_eq!(messages.matches(seen).count(), 1, "{seen:?} in:\n{resumed}");
        }
        c.service.cancel().await.unwrap();
    });
    // `$GEMINI_CLI_HOME` names the folder that holds `.gemini`, as the client reads it.
    let other = Env::new();
    copy_dir(
        &clients().join("gemini"),
        &other.dir.path().join("g/.gemini"),
    );
    let home = other.dir.path().join("g");
    let r = other.json_with(
        &["sync", "--source", "gemini", "--json"],
        &[("GEMINI_CLI_HOME", home.to_str().unwrap())],
    );
    assert_eq!(r["files_new"], 6, "{r}");
}

const OPENCODE_SESSION: &str = "ses_orchard1";

/// `~/.local/share/opencode/opencode.db` built from the fixture scripts; its path.
fn opencode_home(env: &Env) -> std::path::PathBuf {
    let home = env.dir.path().join(".local/share/opencode");
    std::fs::create_dir_all(&home).unwrap();
    let db = home.join("opencode.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    for script in ["schema.sql", "sessions.sql"] {
        let sql = std::fs::read_to_string(clients().join("opencode").join(script)).unwrap();
        conn.execute_batch(&sql).unwrap();
    }
    db
}

#[test]
fn a_database_its_client_keeps_locked_is_reported_as_such_and_read_once_let_go() {
    let env = Env::new();
    let db = opencode_home(&env);
    let writer = rusqlite::Connection::open(&db).unwrap();
    writer
        .execute_batch("PRAGMA journal_mode=DELETE; BEGIN EXCLUSIVE;")
        .unwrap();
    let out = env.run(&["sync", "--source", "opencode"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("could be read"), "{stderr}");
    assert!(!stderr.contains("no session files found"), "{stderr}");
    assert!(stdout.contains("database is locked"), "{stdout}");
    writer.execute_batch("COMMIT;").unwrap();
    let r = env.json(&["sync", "--source", "opencode", "--json"]);
    assert_eq!(r["skipped"], 0, "{r}");
    assert!(r["messages_added"].as_u64().unwrap() > 0, "{r}");
}

/// The first sync of a client's database (`[sessions, records, messages]` added: a record
/// per session row and message read), the sessions per agent and the status line it gives,
/// the database never written, and a second sync that finds nothing changed.
fn first_syncs_of_a_database(
    env: &Env,
    db: &std::path::Path,
    [sessions, records, messages]: [u64; 3],
    agents: serde_json::Value,
    status_line: &str,
) {
    let before = std::fs::read(db).unwrap();
    let r = env.json(&["sync", "--json"]);
    assert_eq!(r["files_new"], sessions, "one per session: {r}");
    assert_eq!(r["skipped"], 0, "{r}");
    assert_eq!(r["records_added"], records, "{r}");
    assert_eq!(r["messages_added"], messages, "{r}");
    let by_agent =
        env.sql_json("SELECT source_agent, count(*) AS n FROM sessions GROUP BY 1 ORDER BY 1");
    assert_eq!(by_agent, agents);
    let status = env.ok(&["status"]);
    assert!(status.contains(status_line), "{status}");
    assert_eq!(
        std::fs::read(db).unwrap(),
        before,
        "the database is never written"
    );
    let again = env.json(&["sync", "--json"]);
    assert_eq!(again["files_unchanged"], sessions, "{again}");
    assert_eq!(again["records_added"], 0);
}

/// Every file under `dir` with its bytes, to show a sync wrote none of them.
fn tree_bytes(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out: Vec<_> = walk(dir)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn an_older_opencode_storage_tree_is_synced_searched_and_read_over_mcp() {
    let env = Env::new();
    let db = opencode_home(&env);
    let storage = db.with_file_name("storage");
    copy_dir(&clients().join("opencode/storage"), &storage);
    let before = tree_bytes(&storage);
    // The database's three sessions, the tree's two (its copy of one the database has
    // gives way to the database's).
    first_syncs_of_a_database(
        &env,
        &db,
        [5, 5 + 12, 12],
        json!([{"source_agent": "opencode", "n": 3}, {"source_agent": "opencode/subagent", "n": 2}]),
        "opencode 3",
    );
    assert_eq!(tree_bytes(&storage), before, "the tree is never written");
    let hits = env.json(&["search", "drip irrigation Tuesdays", "--json"]);
    assert_eq!(hits["sessions"][0]["session_id"], "ses_drip1", "{hits}");
    let title = env.sql_json("SELECT title FROM sessions WHERE id = 'ses_orchard1'");
    assert_eq!(title[0]["title"], "Fix the uploader retrying forever");
    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let page = c.ok("pond_get_session", json!({"id": "ses_drip1"})).await;
        for seen in [
            "never waters on Tuesdays",
            "grep -n WEEKDAYS src/schedule.py",
            "WEEKDAYS = ['mon', 'wed'",
            "leaves out 'tue'",
        ] {
            assert!(page.contains(seen), "{seen:?} missing from:\n{page}");
        }
        c.service.cancel().await.unwrap();
    });
}

#[test]
fn opencode_database_is_synced_searched_and_read_over_mcp() {
    let env = Env::new();
    let db = opencode_home(&env);
    first_syncs_of_a_database(
        &env,
        &db,
        [3, 3 + 8, 8],
        json!([{"source_agent": "opencode", "n": 2}, {"source_agent": "opencode/subagent", "n": 1}]),
        "opencode 2",
    );

    let hits = env.json(&["search", "uploader retry forever bucket", "--json"]);
    assert_eq!(
        hits["sessions"][0]["session_id"], OPENCODE_SESSION,
        "{hits}"
    );
    // The client's name finds its subagents' sessions too.
    let sub = env.json(&[
        "search",
        "retry limits configured",
        "--agent",
        "opencode",
        "--json",
    ]);
    assert_eq!(sub["sessions"][0]["session_id"], "ses_explore1", "{sub}");
    // What OpenCode injected into a prompt is stored, not searchable.
    let injected = env.json(&["search", "following input", "--json"]);
    assert_eq!(
        injected["sessions"].as_array().map(Vec::len),
        Some(0),
        "{injected}"
    );

    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let page = c
            .ok("pond_get_session", json!({"id": OPENCODE_SESSION}))
            .await;
        for seen in [
            "why does the uploader retry forever when the bucket is missing?",
            "cargo test upload",
            "missing_bucket ... FAILED",
            "NoSuchBucket",
            "API key expired",
        ] {
            assert!(page.contains(seen), "{seen:?} missing from:\n{page}");
        }
        let found = c
            .ok(
                "pond_search",
                json!({"query": "opaque cursor paginate", "source_agent": "opencode"}),
            )
            .await;
        assert!(found.contains("ses_api1"), "{found}");
        let schema = c.resource("pond://schema").await;
        assert!(schema.contains("opencode"), "{schema}");
        c.service.cancel().await.unwrap();
    });

    // A new turn between syncs: only it is read.
    let w = rusqlite::Connection::open(&db).unwrap();
    w.execute_batch(
        "INSERT INTO message VALUES ('msg_a3', 'ses_api1', 1785001000000, 1785001000000,
           '{\"role\":\"user\",\"time\":{\"created\":1785001000000}}');
         INSERT INTO part VALUES ('prt_a3a', 'msg_a3', 'ses_api1', 1785001000001, 1785001000001,
           '{\"type\":\"text\",\"text\":\"document the cursor format in the API guide\"}');",
    )
    .unwrap();
    let grown = env.json(&["sync", "--json"]);
    assert_eq!(grown["files_appended"], 1, "{grown}");
    assert_eq!(grown["files_unchanged"], 2, "{grown}");
    assert_eq!(grown["messages_added"], 1, "{grown}");
    let hits = env.json(&["search", "API guide", "--json"]);
    assert_eq!(hits["sessions"][0]["session_id"], "ses_api1", "{hits}");

    // Never written back into the database; a copy of its lines elsewhere.
    let err = env.fails(&["restore", OPENCODE_SESSION]);
    assert!(err.contains("--out"), "{err}");
    let out = env.dir.path().join("copy");
    env.ok(&["restore", OPENCODE_SESSION, "--out", out.to_str().unwrap()]);
    let copy = std::fs::read_to_string(out.join(OPENCODE_SESSION)).unwrap();
    assert_eq!(copy.lines().count(), 5, "{copy}");
}

const CURSOR_IDE_SESSION: &str = "4c1e7a52-orchard";

/// Cursor's user dir in the test's home, its global database made by the fixture script.
fn cursor_ide_home(env: &Env) -> std::path::PathBuf {
    let home = env.dir.path().join(".config/Cursor/User/globalStorage");
    std::fs::create_dir_all(&home).unwrap();
    let db = home.join("state.vscdb");
    let sql = std::fs::read_to_string(clients().join("cursor-ide/state.sql")).unwrap();
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch(&sql)
        .unwrap();
    db
}

#[test]
fn cursor_ide_database_is_synced_searched_and_read_over_mcp() {
    let env = Env::new();
    let db = cursor_ide_home(&env);
    // One session per conversation with messages; a record per composer row and bubble.
    first_syncs_of_a_database(
        &env,
        &db,
        [3, 3 + 10, 9],
        json!([{"source_agent": "cursor-ide", "n": 2}, {"source_agent": "cursor-ide/subagent", "n": 1}]),
        "cursor-ide 2",
    );

    let hits = env.json(&["search", "uploader retries 503 backoff", "--json"]);
    assert_eq!(
        hits["sessions"][0]["session_id"], CURSOR_IDE_SESSION,
        "{hits}"
    );
    let sub = env.json(&[
        "search",
        "where are upload retries configured",
        "--agent",
        "cursor-ide",
        "--json",
    ]);
    assert_eq!(
        sub["sessions"][0]["session_id"], "9d2b61f0-explore",
        "{sub}"
    );
    // The abandoned branch is not read.
    let old = env.json(&["search", "abandoned first wording", "--json"]);
    assert_eq!(old["sessions"].as_array().map(Vec::len), Some(0), "{old}");

    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let page = c
            .ok("pond_get_session", json!({"id": CURSOR_IDE_SESSION}))
            .await;
        for seen in [
            "The uploader retries forever when the server returns 503",
            "cargo test upload",
            "retries_are_capped ... ok",
            "file is read-only",
            "capped at five with exponential backoff",
        ] {
            assert!(page.contains(seen), "{seen:?} missing from:\n{page}");
        }
        let found = c
            .ok(
                "pond_search",
                json!({"query": "borrow checker parse_header", "source_agent": "cursor-ide"}),
            )
            .await;
        assert!(found.contains("1a0b9c8d-legacy"), "{found}");
        c.service.cancel().await.unwrap();
    });

    // A new turn between syncs: only it is read (and the composer row, which changed).
    let w = rusqlite::Connection::open(&db).unwrap();
    w.execute_batch(&format!(
        "INSERT INTO cursorDiskKV VALUES ('bubbleId:{CURSOR_IDE_SESSION}:b-o7',
           '{{\"_v\":3,\"type\":1,\"bubbleId\":\"b-o7\",\"text\":\"now document the retry cap in the operator handbook\"}}');
         UPDATE cursorDiskKV SET value = json_set(value,
           '$.fullConversationHeadersOnly[#]', json_object('bubbleId', 'b-o7', 'type', 1),
           '$.lastUpdatedAt', 1786000500000)
         WHERE key = 'composerData:{CURSOR_IDE_SESSION}';"
    ))
    .unwrap();
    let grown = env.json(&["sync", "--json"]);
    assert_eq!(grown["files_appended"], 1, "{grown}");
    assert_eq!(grown["files_unchanged"], 2, "{grown}");
    assert_eq!(grown["messages_added"], 1, "{grown}");
    assert_eq!(grown["records_added"], 2, "{grown}");
    let hits = env.json(&["search", "operator handbook", "--json"]);
    assert_eq!(
        hits["sessions"][0]["session_id"], CURSOR_IDE_SESSION,
        "{hits}"
    );

    let err = env.fails(&["restore", CURSOR_IDE_SESSION]);
    assert!(err.contains("--out"), "{err}");
}

const VSCODE_SESSION: &str = "7d3b9a52-1c4e-4f6a-9b1d-2e8f0c7a5d41";

#[test]
fn vscode_copilot_chats_are_synced_searched_and_read_over_mcp() {
    let env = Env::new();
    let user = env.dir.path().join(".config/Code/User");
    copy_dir(&clients().join("vscode-copilot/User"), &user);
    // The snapshot is VSCodium's, in its own user dir beside Code's.
    let empty = "globalStorage/emptyWindowChatSessions";
    let codium = env.dir.path().join(".config/VSCodium/User").join(empty);
    std::fs::create_dir_all(&codium).unwrap();
    for f in std::fs::read_dir(user.join(empty)).unwrap() {
        let f = f.unwrap().path();
        std::fs::rename(&f, codium.join(f.file_name().unwrap())).unwrap();
    }
    let r = env.json(&["sync", "--json"]);
    assert_eq!(r["files_new"], 2, "a change log and a snapshot: {r}");
    assert_eq!(r["skipped"], 0, "{r}");
    let status = env.ok(&["status"]);
    assert!(
        status.contains("sessions by source: vscode-copilot 2"),
        "{status}"
    );
    let hits = env.json(&[
        "search",
        "anemometer night",
        "--agent",
        "copilot-chat",
        "--json",
    ]);
    assert_eq!(hits["sessions"][0]["session_id"], VSCODE_SESSION, "{hits}");
    let project = env.json(&[
        "search",
        "debounce",
        "--project",
        "weather station",
        "--json",
    ]);
    assert_eq!(
        project["sessions"][0]["session_id"], VSCODE_SESSION,
        "{project}"
    );
    let snapshot = env.json(&["search", "hectopascals mercury", "--json"]);
    assert_eq!(
        snapshot["sessions"][0]["session_id"], "c4e8f1a0-5b2d-4e7c-8a9f-3d6b1e0c2f75",
        "{snapshot}"
    );
    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let page = c
            .ok("pond_get_session", json!({"id": VSCODE_SESSION}))
            .await;
        for seen in [
            "Why does the anemometer read 200 km/h at night?",
            "set `DEBOUNCE_MS` to 15",
            "make test",
            "wind_test: 3 passed",
        ] {
            assert!(page.contains(seen), "{seen:?} missing from:\n{page}");
        }
        // The turn still being answered waits until it is over.
        assert!(!page.contains("rain gauge"), "{page}");
        c.service.cancel().await.unwrap();
    });

    // The answer completes: the log grows, the file is read again, only the new is stored.
    let log = user.join(format!(
        "workspaceStorage/5f2c1e8a9b/chatSessions/{VSCODE_SESSION}.jsonl"
    ));
    let records = env.count("records");
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str(
        &[
            json!({"kind":2,"k":["requests",2,"response"],"v":[{"value":" bucket: each tip is 0.2 mm."}]}),
            json!({"kind":1,"k":["requests",2,"result"],"v":{"timings":{"totalElapsed":3000}}}),
        ]
        .map(|l| format!("{l}\n"))
        .concat(),
    );
    std::fs::write(&log, text).unwrap();
    let r = env.json(&["sync", "--json"]);
    assert_eq!(r["files_rewritten"], 1, "{r}");
    assert_eq!(r["messages_added"], 2, "{r}");
    assert_eq!(env.count("records"), records + 2, "{r}");
    let rain = env.json(&["search", "rain gauge tipping bucket", "--json"]);
    assert_eq!(rain["sessions"][0]["session_id"], VSCODE_SESSION, "{rain}");
    let again = env.json(&["sync", "--json"]);
    assert_eq!(again["messages_added"], 0, "{again}");
}

/// A side file that is huge or a device (a 3 GB `worker.log`, sparse; a `.project_root`
/// and a `workspace.yaml` that link to /dev/zero) is not read whole: the sync succeeds at
/// once and stores every session, without what those files would have said.
#[test]
fn huge_or_device_side_files_do_not_stop_a_sync() {
    let env = Env::new();
    let home = env.dir.path();
    for (client, dir) in [
        ("cursor", ".cursor"),
        ("gemini", ".gemini"),
        ("copilot", ".copilot"),
    ] {
        copy_dir(&clients().join(client), &home.join(dir));
    }
    std::fs::File::create(home.join(".cursor/projects/home-dev-orchard/worker.log"))
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    for link in [
        ".gemini/tmp/4f1c2e/.project_root".to_owned(),
        format!(".copilot/session-state/{COPILOT_SESSION}/workspace.yaml"),
    ] {
        std::fs::remove_file(home.join(&link)).unwrap();
        std::os::unix::fs::symlink("/dev/zero", home.join(&link)).unwrap();
    }
    let started = std::time::Instant::now();
    let r = env.json(&["sync", "--json"]);
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
    assert_eq!(r["skipped"], 0, "{r}");
    let status = env.ok(&["status"]);
    assert!(
        status.contains("copilot 2, cursor 3, gemini 4, gemini/subagent 1"),
        "{status}"
    );
    let projects = env.sql_json(&format!(
        "SELECT id, coalesce(project, '-') AS project FROM sessions WHERE id IN ('{CURSOR_SESSION}', '{GEMINI_SESSION}') ORDER BY id"
    ));
    assert_eq!(
        projects,
        json!([
            {"id": CURSOR_SESSION, "project": "home-dev-orchard"},
            {"id": GEMINI_SESSION, "project": "-"}
        ])
    );
}

/// The words in backticks of a text.
fn quoted(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// Every list of clients a person or an agent reads is the registry's
/// (`pond_ingest::SOURCES`): the MCP instructions, the `source_agent` filters' descriptions,
/// `pond sync --help` and `pond search --help`, the skill, the README's table of clients;
/// and every `pond install` target but Claude Desktop (which keeps no sessions) is one of
/// its clients.
#[test]
fn every_list_of_clients_is_the_registry() {
    let registry = pond_ingest::SOURCES;
    let agents = pond_ingest::sources::agent_names();
    let env = Env::new();
    let sync = env.ok(&["sync", "--help"]);
    let search = env.ok(&["search", "--help"]);
    let skill = env.ok(&["skill"]);
    for s in registry {
        assert!(sync.contains(s.title), "pond sync --help: no {}", s.title);
        assert!(skill.contains(s.title), "SKILL.md: no {}", s.title);
    }
    for agent in &agents {
        assert!(search.contains(agent), "pond search --help: no {agent}");
    }

    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let info = c.service.peer_info().expect("server info");
        let instructions = info.instructions.as_deref().unwrap_or_default();
        for s in registry {
            assert!(
                instructions.contains(s.title),
                "instructions: no {}",
                s.title
            );
        }
        let tools = c.service.list_all_tools().await.unwrap();
        for tool in &tools {
            let Some(description) =
                tool.input_schema["properties"]["source_agent"]["description"].as_str()
            else {
                continue;
            };
            // The clients named (a word with `_` is a parameter's name).
            let named: Vec<&str> = quoted(description)
                .into_iter()
                .filter(|w| !w.contains('_'))
                .collect();
            for name in &named {
                assert!(
                    agents.contains(name),
                    "{}.source_agent: {name} is no client",
                    tool.name
                );
            }
            if tool.name == "pond_search" {
                for agent in &agents {
                    assert!(
                        named.contains(agent),
                        "pond_search.source_agent: no {agent}"
                    );
                }
            }
        }
    });

    // The README's table of what `pond sync` reads: a row per client, named by its title,
    // `--source` its name.
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let table = readme
        .split("| client | `--source` |")
        .nth(1)
        .expect("the README's table of clients");
    let rows: Vec<(&str, &str)> = table
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            (cells[0].trim_start_matches("| "), quoted(cells[1])[0])
        })
        .collect();
    let mut names: Vec<&str> = rows.iter().map(|(_, name)| *name).collect();
    names.sort_unstable();
    let mut expected: Vec<&str> = registry.iter().map(|s| s.name).collect();
    expected.sort_unstable();
    assert_eq!(names, expected, "the README's clients");
    for (title, name) in rows {
        let source = pond_ingest::Source::parse(name).unwrap();
        assert!(
            title.starts_with(source.title),
            "README: {title} is not {}",
            source.title
        );
    }

    for target in pond_setup::Client::ALL {
        let name = target.name();
        assert!(
            name == "claude-desktop" || pond_ingest::Source::parse(name).is_some(),
            "pond install {name} is no client of the registry"
        );
    }
}
