//! Hostile and careless input through the CLI: every one gets an answer or a clear error,
//! and nothing crashes, hangs or is lost.

use std::os::unix::fs::PermissionsExt;

use crate::common::Env;

fn write_claude(dir: &std::path::Path, name: &str, texts: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    let lines: Vec<String> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            serde_json::json!({
                "type": "user", "uuid": format!("{name}-{i}"), "sessionId": name,
                "timestamp": "2026-05-01T10:00:00Z", "cwd": "/home/x",
                "message": {"role": "user", "content": t}
            })
            .to_string()
        })
        .collect();
    std::fs::write(dir.join(format!("{name}.jsonl")), lines.join("\n") + "\n").unwrap();
}

#[test]
fn paging_past_either_end_of_a_session_is_an_empty_page() {
    let env = Env::new();
    env.sync(&env.sources());
    let id = "11111111-1111-4111-8111-111111111111";
    let all = env.json(&["get-session", id, "--json", "--limit", "200"]);
    let ids: Vec<&str> = all["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    let (first, last) = (ids[0], *ids.last().unwrap());
    for (flag, at) in [("--after", last), ("--before", first)] {
        let page = env.json(&["get-session", id, flag, at, "--json"]);
        assert_eq!(page["messages"], serde_json::json!([]), "{flag}");
        assert!(page["more_after"].is_null() && page["more_before"].is_null());
        let text = env.ok(&["get-session", id, flag, at]);
        assert!(text.contains("no messages in this page"), "{text}");
    }
}

#[test]
fn odd_text_and_odd_names_are_read_and_searched() {
    let env = Env::new();
    let dir = env.dir.path().join("odd");
    // Wide spaces right before the match, where the snippet window used to start.
    let pad = "x".repeat(79);
    let texts = [
        format!("{pad}\u{3000}\u{3000}needle in the haystack"),
        format!("{pad}\u{a0}needle again"),
    ];
    write_claude(&dir.join("claude"), "s-odd", &[&texts[0], &texts[1]]);
    // A Codex rollout whose name has a character that a byte slice would cut in half.
    let codex = dir.join("codex");
    std::fs::create_dir_all(&codex).unwrap();
    let meta = serde_json::json!({"timestamp": "2026-05-01T10:00:00Z", "type": "session_meta",
        "payload": {"id": "", "cwd": "/home/x"}});
    let msg = serde_json::json!({"timestamp": "2026-05-01T10:00:01Z", "type": "response_item",
        "payload": {"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "needle from codex"}]}});
    std::fs::write(
        codex.join("rollout-éééééééééééééééééééééééééééééééééé.jsonl"),
        format!("{meta}\n{msg}\n"),
    )
    .unwrap();
    let r = env.sync(&dir);
    assert_eq!(
        (r["files_new"].as_u64(), r["files_failed"].as_u64()),
        (Some(2), Some(0)),
        "{r}"
    );
    let hits = env.json(&["search", "needle", "--json"]);
    assert_eq!(hits["hits"], 3, "{hits}");
}

#[test]
fn sql_from_the_cli_runs_in_its_worker_under_its_caps() {
    let env = Env::new();
    env.sync(&env.sources());
    // A value that would be huge is refused, a long one cut to the output cap.
    let err = env.fails(&["sql", "SELECT repeat('x', 200000000) AS v"]);
    assert!(err.contains("repeat"), "{err}");
    let out = env.ok(&[
        "sql",
        "SELECT repeat('y', 1000000) AS v",
        "--format",
        "json",
    ]);
    assert!(out.len() < 300 * 1024, "{}", out.len());
    assert!(out.contains("more bytes"));
    for deep in [
        format!("SELECT {}", vec!["1"; 500].join("+")),
        format!("SELECT 1 WHERE {}", vec!["true"; 1000].join(" OR ")),
    ] {
        let err = env.fails(&["sql", &deep]);
        assert!(err.contains("nests expressions"), "{err}");
    }
    let err = env.fails(&["sql", "SELECT * INTO t FROM sessions"]);
    assert!(err.contains("read-only"), "{err}");
    // Spill directories of processes that are gone are swept.
    let stale = env.store().join("tmp/sql-4999999");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("spill"), "archive text").unwrap();
    env.ok(&["sql", "SELECT count(*) FROM messages"]);
    assert!(!stale.exists());
}

#[test]
fn the_store_is_its_owners_alone_and_is_a_directory() {
    let env = Env::new();
    env.sync(&env.sources());
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&env.store()), 0o700);
    let mut stack = vec![env.store()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            assert_eq!(mode(&p) & 0o077, 0, "{} is open to others", p.display());
            if p.is_dir() {
                stack.push(p);
            }
        }
    }
    // An older store made by a looser umask is closed when opened.
    std::fs::set_permissions(env.store(), std::fs::Permissions::from_mode(0o755)).unwrap();
    env.ok(&["status"]);
    assert_eq!(mode(&env.store()), 0o700);
    // A URL is not a store.
    let elsewhere = |store: &str, args: &[&str]| {
        std::process::Command::new(crate::common::pond_bin())
            .arg("--store")
            .arg(store)
            .args(args)
            .env("HOME", env.dir.path())
            .env("POND_AUTO_SYNC_MINS", "0")
            .output()
            .unwrap()
    };
    let out = elsewhere("memory://foo", &["status"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("local directories"));
    // A name Lance could take for a URL is a directory here.
    let odd = env.dir.path().join("memory:foo");
    let sources = env.sources();
    let out = elsewhere(
        odd.to_str().unwrap(),
        &["sync", "--path", sources.to_str().unwrap(), "--json"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["messages_added"], 23);
    assert!(odd.join("messages.lance").is_dir());
}

#[test]
fn a_big_file_and_a_file_of_blank_lines_are_read_in_parts_and_counted() {
    let env = Env::new();
    let dir = env.dir.path().join("big");
    // Over the 32 MiB a sync reads of one file at a time.
    let text = "z".repeat(40_000);
    let texts: Vec<&str> = (0..1000).map(|_| text.as_str()).collect();
    write_claude(&dir, "s-big", &texts);
    std::fs::write(dir.join("blank.jsonl"), "\n".repeat(2_000_000)).unwrap();
    let r = env.sync(&dir);
    assert_eq!(r["messages_added"], 1000, "{r}");
    assert_eq!(r["skipped_by_reason"]["empty line"], 2_000_000, "{r}");
    assert!(r["skip_examples"].as_array().unwrap().len() <= 50);
    // Status says what the last sync skipped and why.
    let status = env.ok(&["status"]);
    assert!(
        status.contains("last sync") && status.contains("2000000 empty line"),
        "{status}"
    );
    let again = env.sync(&dir);
    assert_eq!(again["files_unchanged"], 2, "{again}");
}

#[test]
fn a_file_that_takes_the_sync_worker_over_its_budget_is_set_aside_after_two_deaths() {
    let env = Env::new();
    let dir = env.dir.path().join("heavy");
    let text = "w ".repeat(15_000);
    let texts: Vec<&str> = (0..1000).map(|_| text.as_str()).collect();
    write_claude(&dir, "s-heavy", &texts);
    write_claude(
        &dir,
        "s-light",
        &["a small session that must still be archived"],
    );
    let tight = [("POND_SYNC_MEMORY_MIB", "60")];
    let path = dir.to_str().unwrap();
    for _ in 0..2 {
        let err = env.fails_with(&["sync", "--path", path], &tight);
        assert!(err.contains("budget"), "{err}");
    }
    let r = env.json_with(&["sync", "--path", path, "--json"], &tight);
    assert_eq!(r["files_failed"], 1, "{r}");
    assert_eq!(r["messages_added"], 1, "the other file is archived: {r}");
    let why = r["skip_examples"].to_string();
    assert!(why.contains("died 2 times"), "{why}");
    assert_eq!(r["set_aside"].as_array().unwrap().len(), 1, "{r}");
    // With room it is read again once it changes.
    let heavy = dir.join("s-heavy.jsonl");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&heavy)
        .unwrap();
    std::io::Write::write_all(&mut f, b"\n").unwrap();
    drop(f);
    let r = env.json(&["sync", "--path", path, "--json"]);
    assert_eq!(r["messages_added"], 1000, "{r}");
    assert_eq!(r["set_aside"], serde_json::json!([]), "{r}");
}

#[test]
fn names_that_differ_only_in_bytes_that_are_not_utf8_stay_two_files() {
    use std::os::unix::ffi::OsStrExt;
    let env = Env::new();
    let dir = env.dir.path().join("bytes");
    std::fs::create_dir_all(&dir).unwrap();
    for (i, name) in [&b"s\xff.jsonl"[..], &b"s\xfe.jsonl"[..]]
        .iter()
        .enumerate()
    {
        let line = serde_json::json!({"type": "user", "uuid": format!("u{i}"), "sessionId": "x",
            "timestamp": "2026-05-01T10:00:00Z", "message": {"role": "user", "content": format!("file {i}")}});
        std::fs::write(
            dir.join(std::ffi::OsStr::from_bytes(name)),
            format!("{line}\n"),
        )
        .unwrap();
    }
    let r = env.sync(&dir);
    assert_eq!(
        (r["files_new"].as_u64(), r["records_added"].as_u64()),
        (Some(2), Some(2)),
        "{r}"
    );
    assert_eq!(env.count("files"), 2);
    assert_eq!(env.count("sessions"), 2);
    assert_eq!(env.sync(&dir)["files_unchanged"], 2);
}

#[test]
fn many_small_syncs_are_compacted_and_answers_stay_whole() {
    let env = Env::new();
    // With a model, each sync also appends vectors: those are compacted too.
    crate::embed::import_tiny_model(&env);
    let few = [("POND_MAX_FRAGMENTS", "2")];
    let mut compacted = 0;
    for i in 0..4 {
        let dir = env.dir.path().join(format!("part{i}"));
        write_claude(
            &dir,
            &format!("s{i}"),
            &[&format!("compaction check number {i}")],
        );
        let r = env.json_with(&["sync", "--path", dir.to_str().unwrap(), "--json"], &few);
        compacted += r["compacted"].as_u64().unwrap();
    }
    assert!(compacted > 0);
    let hits = env.json(&["search", "compaction check", "--json", "--limit", "10"]);
    assert_eq!(hits["hits"], 4, "{hits}");
    let page = env.json(&["get-session", "s2", "--json"]);
    assert_eq!(page["messages"].as_array().unwrap().len(), 1);
    let status = env.ok(&["status"]);
    assert!(status.contains("0 rows not yet indexed"), "{status}");
    // The row map was rebuilt over the compacted fragments and serves them.
    assert!(status.contains("row map: 4 rows, 4 sessions"), "{status}");
    assert!(status.contains("current"), "{status}");
    // Every message still has its vector (a hit needs one).
    let v = env.json(&["search", "--mode", "vector", "compaction check", "--json"]);
    assert_eq!(v["hits"], 4, "{v}");
}

#[test]
fn logs_are_plain_text_and_follow_the_flags() {
    let env = Env::new();
    env.sync(&env.sources());
    let stderr = |args: &[&str], vars: &[(&str, &str)]| {
        let out = env.run_with(args, vars);
        assert!(out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let sql = "SELECT count(*) FROM messages";
    // Stderr is a pipe here, as under an MCP host: no colour codes. (`pond sql` prints its
    // footer, "1 rows in N ms", on stderr too.)
    let verbose = stderr(&["-v", "sql", sql], &[]);
    assert!(verbose.contains("job done"), "{verbose}");
    assert!(verbose.contains("INFO"), "{verbose}");
    assert!(!verbose.contains('\u{1b}'), "{verbose:?}");
    let quiet = stderr(&["sql", sql], &[]);
    assert!(
        !quiet.contains("job done") && !quiet.contains("INFO"),
        "{quiet}"
    );
    assert!(stderr(&["sql", sql], &[("RUST_LOG", "info")]).contains("job done"));
    assert!(stderr(&["sql", sql], &[("POND_LOG", "info")]).contains("job done"));
    let errors_only = stderr(&["-q", "sql", sql], &[]);
    assert!(!errors_only.contains("job done"), "{errors_only}");
}
