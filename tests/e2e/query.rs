//! search, get-session, get-message, sql on the fixtures.

use crate::common::Env;

fn synced() -> Env {
    let env = Env::new();
    let src = env.sources();
    env.sync(&src);
    env
}

#[test]
fn search_groups_by_session_with_filters_and_totals() {
    let env = synced();
    let text = env.ok(&["search", "invoices table"]);
    assert!(
        text.contains("33333333-3333-4333-8333-333333333333"),
        "{text}"
    );
    assert!(text.contains("messages in scope"), "{text}");
    // The harness-injected environment block and the event_msg copy are not search text.
    let v = env.json(&["search", "invoices", "--json"]);
    let hits = &v["sessions"][0]["hits"];
    assert_eq!(hits.as_array().unwrap().len(), 2, "{v}");
    assert_eq!(v["in_scope"], 11);

    // Stemming: "drifting" finds "drift"; ASCII folding: "décimal" finds "Decimal".
    let v = env.json(&["search", "drifting", "--json"]);
    assert_eq!(v["sessions"][0]["hits"][0]["message_id"], "c-u2");
    let v = env.json(&["search", "décimal", "--json"]);
    assert_eq!(v["sessions"][0]["hits"][0]["message_id"], "c-a3");

    // Filters.
    let v = env.json(&[
        "search", "the", "--agent", "codex", "--json", "--limit", "50",
    ]);
    for s in v["sessions"].as_array().unwrap() {
        assert_eq!(s["source_agent"], "codex");
    }
    let v = env.json(&[
        "search",
        "tokenizer",
        "--project",
        "legacy",
        "--role",
        "assistant",
        "--json",
    ]);
    assert_eq!(v["hits"], 1);
    assert_eq!(v["sessions"][0]["hits"][0]["message_id"], "l-a1");
    let v = env.json(&["search", "tokenizer", "--from", "2026-01-01", "--json"]);
    assert_eq!(v["hits"], 0);
    let v = env.json(&["search", "tokenizer", "--to", "2026-01-01", "--json"]);
    assert_eq!(v["hits"], 2);
    let v = env.json(&["search", "prices", "--agent", "claude-code", "--json"]);
    assert!(v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["source_agent"] == "claude-code/subagent"));
    let v = env.json(&[
        "search",
        "table OR tokenizer OR cart",
        "--sort",
        "recency",
        "--json",
    ]);
    let times: Vec<i64> = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| {
            s["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h["timestamp"].as_i64().unwrap())
        })
        .collect();
    assert!(times.len() >= 3);
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");

    let err = env.fails(&["search", "x", "--role", "robot"]);
    assert!(err.contains("unknown role"), "{err}");
    let err = env.fails(&["search", "x", "--from", "last tuesday"]);
    assert!(err.contains("YYYY-MM-DD"), "{err}");
    let err = env.fails(&["search", "   "]);
    assert!(err.contains("empty"), "{err}");
}

#[test]
fn get_session_pages_never_split_messages() {
    let env = synced();
    let id = "11111111-1111-4111-8111-111111111111";
    let all = env.json(&["get-session", id, "--limit", "100", "--json"]);
    assert_eq!(all["total_messages"], 8);
    let ids: Vec<String> = all["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.first().unwrap(), "c-u1");
    assert_eq!(ids.last().unwrap(), "c-s1");

    // Page forward three at a time and get the same sequence.
    let mut paged = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut args = vec!["get-session", id, "--limit", "3", "--json"];
        if let Some(a) = &after {
            args.extend(["--after", a.as_str()]);
        }
        let p = env.json(&args);
        for m in p["messages"].as_array().unwrap() {
            paged.push(m["id"].as_str().unwrap().to_owned());
        }
        match p["more_after"].as_str() {
            Some(a) => after = Some(a.to_owned()),
            None => break,
        }
    }
    assert_eq!(paged, ids);

    // From the end, and backwards with --before.
    let tail = env.json(&["get-session", id, "--from", "end", "--limit", "2", "--json"]);
    let tail_ids: Vec<&str> = tail["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(tail_ids, ["c-u4", "c-s1"]);
    let before = tail["more_before"].as_str().unwrap();
    let prev = env.json(&[
        "get-session",
        id,
        "--before",
        before,
        "--limit",
        "2",
        "--json",
    ]);
    let prev_ids: Vec<&str> = prev["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(prev_ids, ["c-u3", "c-a3"]);

    // A tiny byte budget still shows whole messages (or one shortened with a pointer).
    let small = env.json(&[
        "get-session",
        id,
        "--limit",
        "100",
        "--max-bytes",
        "600",
        "--json",
    ]);
    let n = small["messages"].as_array().unwrap().len();
    assert!((1..8).contains(&n), "{n}");
    assert!(small["more_after"].is_string());

    let text = env.ok(&["get-session", id]);
    assert!(text.contains("[tool call: Bash]"), "{text}");
    assert!(text.contains("[tool result: Bash]"), "{text}");
    assert!(text.contains("messages 0-7 of 8"), "{text}");
    let err = env.fails(&["get-session", "no-such-session"]);
    assert!(err.contains("no session"), "{err}");
}

#[test]
fn get_message_shows_parts_and_neighbours() {
    let env = synced();
    let v = env.json(&["get-message", "c-a2", "--context", "1", "--json"]);
    assert_eq!(v["message"]["id"], "c-a2");
    assert_eq!(v["before"][0]["id"], "c-a1");
    assert_eq!(v["after"][0]["id"], "c-u3");
    let part = &v["message"]["parts"][0];
    assert_eq!(part["part_type"], "tool_call");
    assert_eq!(part["tool_name"], "Bash");
    assert!(part["body"].as_str().unwrap().contains("grep -rn total"));
    let text = env.ok(&["get-message", "33333333-3333-4333-8333-333333333333:8"]);
    assert!(text.contains("001_invoices.sql"), "{text}");
    let err = env.fails(&["get-message", "nope"]);
    assert!(err.contains("no message with id"), "{err}");
}

#[test]
fn sql_is_read_only_and_bounded() {
    let env = synced();
    let v = env.sql_json("SELECT role, count(*) AS n FROM messages GROUP BY role ORDER BY role");
    assert_eq!(v.as_array().unwrap().len(), 4);
    let v = env.sql_json(
        "SELECT p.tool_name, count(*) AS n FROM parts p JOIN messages m ON p.message_id = m.id \
         WHERE m.role = 'tool' GROUP BY p.tool_name ORDER BY p.tool_name",
    );
    assert_eq!(
        v,
        serde_json::json!([{"tool_name": "Bash", "n": 1}, {"tool_name": "shell", "n": 2}])
    );
    let csv = env.ok(&[
        "sql",
        "SELECT id FROM sessions ORDER BY id LIMIT 2",
        "--format",
        "csv",
    ]);
    assert_eq!(csv.lines().next(), Some("id"));
    assert_eq!(csv.lines().count(), 3);
    let table = env.ok(&["sql", "SELECT raw FROM records LIMIT 1"]);
    assert!(table.contains('+'), "{table}");

    for bad in [
        "DELETE FROM messages",
        "DROP TABLE messages",
        "INSERT INTO sessions SELECT * FROM sessions",
        "SELECT 1; DROP TABLE messages",
        "CREATE TABLE t AS SELECT 1",
    ] {
        let err = env.fails(&["sql", bad]);
        assert!(
            err.contains("refused") || err.contains("statements"),
            "{bad}: {err}"
        );
    }
    assert_eq!(env.count("messages"), 23, "nothing was changed");

    let out = env.run(&[
        "sql",
        "SELECT * FROM records",
        "--max-rows",
        "5",
        "--format",
        "json",
    ]);
    assert!(out.status.success());
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 5);
    assert!(String::from_utf8_lossy(&out.stderr).contains("row cap"));

    let err = env.fails(&["sql", "SELECT * FROM nowhere"]);
    assert!(err.contains("nowhere"), "{err}");
}

#[test]
fn runaway_sql_is_stopped_by_the_timeout() {
    let env = synced();
    let started = std::time::Instant::now();
    let err = env.fails(&[
        "sql",
        "SELECT count(*) FROM records a, records b, records c, records d, records e \
         WHERE length(a.raw || e.raw) < 0",
        "--timeout-seconds",
        "1",
    ]);
    assert!(err.contains("timed out"), "{err}");
    assert!(started.elapsed().as_secs() < 20);
}

#[test]
fn status_reports_counts() {
    let env = synced();
    let v = env.json(&["status", "--json"]);
    assert_eq!(v["counts"]["messages"], 23);
    assert_eq!(v["counts"]["searchable_messages"], 11);
    assert_eq!(v["unindexed_rows"], 0);
}

#[test]
fn words_inside_chinese_text_are_found() {
    let env = Env::new();
    let dir = env.dir.path().join("zh/projects/-w");
    std::fs::create_dir_all(&dir).unwrap();
    let line = r#"{"type":"user","uuid":"zh-1","sessionId":"zh","cwd":"/w","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"请修复这个服务的兼容问题，然后运行测试"}}"#;
    std::fs::write(dir.join("zh.jsonl"), format!("{line}\n")).unwrap();
    env.sync(&env.dir.path().join("zh"));
    // "兼容" stands inside a run of Chinese with no spaces: it is found as a word.
    let v = env.json(&["search", "兼容", "--json"]);
    assert_eq!(v["hits"], 1, "{v}");
    let v = env.json(&["search", "测试", "--json"]);
    assert_eq!(v["hits"], 1, "{v}");
}
