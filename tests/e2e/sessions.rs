//! Sessions as things: titles (the client's, else derived from the first real prompt),
//! `pond sessions` (newest first, filtered as search is, paged, JSON) and the
//! `pond_sessions` MCP tool.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::Env;
use crate::mcp::{connect, runtime};

/// One Claude Code line: a user or assistant message of `session` in `cwd` at `ts`.
fn line(session: &str, uuid: &str, role: &str, ts: &str, cwd: &str, text: &str) -> String {
    json!({
        "type": role, "uuid": uuid, "sessionId": session, "timestamp": ts, "cwd": cwd,
        "message": {"role": role, "content": text},
    })
    .to_string()
}

fn write(dir: &Path, session: &str, lines: &[String]) {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(format!("{session}.jsonl"));
    let mut text = std::fs::read_to_string(&path).unwrap_or_default();
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

const PASTED: &str = "/review\n```\nTraceback (most recent call last):\n  File \"importer.py\", line 3\nIndexError: list index out of range\n```\nwhy does the importer panic on empty files";

/// Three sessions: alpha (oldest, a first prompt with a slash command and a pasted block),
/// beta (a plain prompt), gamma (newest, in a project spelled in capitals).
fn three(env: &Env) -> std::path::PathBuf {
    let dir = env.dir.path().join("home/projects/p");
    write(
        &dir,
        "aaaaaaaa-0000-4000-8000-000000000001",
        &[
            line(
                "aaaaaaaa-0000-4000-8000-000000000001",
                "a1",
                "user",
                "2026-03-01T10:00:00Z",
                "/work/alpha",
                PASTED,
            ),
            line(
                "aaaaaaaa-0000-4000-8000-000000000001",
                "a2",
                "assistant",
                "2026-03-01T10:01:00Z",
                "/work/alpha",
                "It indexes the first row of an empty list.",
            ),
            line(
                "aaaaaaaa-0000-4000-8000-000000000001",
                "a3",
                "user",
                "2026-03-01T10:02:00Z",
                "/work/alpha",
                "fix it",
            ),
        ],
    );
    write(
        &dir,
        "bbbbbbbb-0000-4000-8000-000000000002",
        &[
            line(
                "bbbbbbbb-0000-4000-8000-000000000002",
                "b1",
                "user",
                "2026-03-05T09:00:00Z",
                "/work/beta",
                "tidy the release notes",
            ),
            line(
                "bbbbbbbb-0000-4000-8000-000000000002",
                "b2",
                "assistant",
                "2026-03-05T09:30:00Z",
                "/work/beta",
                "Done.",
            ),
        ],
    );
    write(
        &dir,
        "cccccccc-0000-4000-8000-000000000003",
        &[
            line(
                "cccccccc-0000-4000-8000-000000000003",
                "c1",
                "user",
                "2026-03-09T08:00:00Z",
                "/work/GAMMA",
                "[Image #1] what does this chart show",
            ),
            line(
                "cccccccc-0000-4000-8000-000000000003",
                "c2",
                "assistant",
                "2026-03-09T08:05:00Z",
                "/work/GAMMA",
                "Sales per month.",
            ),
        ],
    );
    dir
}

fn ids(list: &Value) -> Vec<String> {
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap()[..8].to_owned())
        .collect()
}

#[test]
fn a_title_is_derived_from_the_first_real_prompt_and_shown_everywhere() {
    let env = Env::new();
    let dir = three(&env);
    env.sync_with(&dir, &["--source", "claude-code"]);
    let list = env.json(&["sessions", "--json"]);
    let alpha = &list["sessions"][2];
    assert_eq!(
        alpha["title"], "why does the importer panic on empty files",
        "{list}"
    );
    assert_eq!(alpha["title_derived"], true);
    assert_eq!(alpha["messages"], 3);
    assert!(alpha["bytes"].as_u64().unwrap() > 200, "{alpha}");
    assert_eq!(
        list["sessions"][0]["title"], "what does this chart show",
        "{list}"
    );

    // Search hits and session pages carry the same title.
    let hits = env.ok(&["search", "importer"]);
    assert!(
        hits.contains("· why does the importer panic on empty files"),
        "{hits}"
    );
    let page = env.ok(&["get-session", "aaaaaaaa-0000"]);
    assert!(
        page.lines()
            .next()
            .unwrap()
            .ends_with("· why does the importer panic on empty files"),
        "{page}"
    );
    let json = env.json(&["get-session", "aaaaaaaa-0000", "--json"]);
    assert_eq!(
        json["session"]["title"],
        "why does the importer panic on empty files"
    );
}

#[test]
fn a_client_title_wins_over_a_derived_one_when_it_arrives_in_a_later_sync() {
    let env = Env::new();
    let dir = three(&env);
    env.sync_with(&dir, &["--source", "claude-code"]);
    let beta = |env: &Env| {
        let list = env.json(&["sessions", "--project", "beta", "--json"]);
        assert_eq!(list["total"], 1, "{list}");
        list["sessions"][0].clone()
    };
    assert_eq!(beta(&env)["title"], "tidy the release notes");
    assert_eq!(beta(&env)["title_derived"], true);

    let id = "bbbbbbbb-0000-4000-8000-000000000002";
    let title =
        json!({"type": "custom-title", "customTitle": "Release notes for 2.0", "sessionId": id});
    write(&dir, id, &[title.to_string()]);
    env.sync_with(&dir, &["--source", "claude-code"]);
    assert_eq!(beta(&env)["title"], "Release notes for 2.0");
    assert_eq!(beta(&env)["title_derived"], false);

    // A later window without a title keeps it.
    let more = line(
        id,
        "b3",
        "user",
        "2026-03-05T10:00:00Z",
        "/work/beta",
        "one more thing",
    );
    write(&dir, id, &[more]);
    env.sync_with(&dir, &["--source", "claude-code"]);
    let b = beta(&env);
    assert_eq!(b["title"], "Release notes for 2.0");
    assert_eq!(b["messages"], 3);
    let page = env.ok(&["get-session", id]);
    assert!(
        page.lines()
            .next()
            .unwrap()
            .ends_with("· Release notes for 2.0"),
        "{page}"
    );
}

#[test]
fn sessions_are_listed_newest_first_filtered_and_paged() {
    let env = Env::new();
    let dir = three(&env);
    env.sync_with(&dir, &["--source", "claude-code"]);

    let all = env.json(&["sessions", "--json"]);
    assert_eq!(ids(&all), ["cccccccc", "bbbbbbbb", "aaaaaaaa"], "{all}");
    assert_eq!(all["total"], 3);
    assert_eq!(all["sessions"][1]["source_agent"], "claude-code");
    assert_eq!(all["sessions"][1]["project"], "/work/beta");
    assert_eq!(all["sessions"][1]["first_at"], 1_772_701_200_000_i64);
    assert_eq!(all["sessions"][1]["last_at"], 1_772_703_000_000_i64);

    // Project: a substring in any case.
    let gamma = env.json(&["sessions", "--project", "gamma", "--json"]);
    assert_eq!(ids(&gamma), ["cccccccc"]);
    // Agent: as search names it.
    assert_eq!(
        env.json(&["sessions", "--agent", "codex", "--json"])["total"],
        0
    );
    assert_eq!(
        env.json(&["sessions", "--agent", "claude-code", "--json"])["total"],
        3
    );
    let bad = env.fails(&["sessions", "--agent", "nobody"]);
    assert!(bad.contains("unknown agent"), "{bad}");
    // Dates: a session is in when its span (first to last message) meets the range.
    let early = env.json(&["sessions", "--to", "2026-03-05T09:15:00Z", "--json"]);
    assert_eq!(ids(&early), ["bbbbbbbb", "aaaaaaaa"]);
    let late = env.json(&["sessions", "--from", "2026-03-05T09:15:00Z", "--json"]);
    assert_eq!(ids(&late), ["cccccccc", "bbbbbbbb"]);
    // Pages: the next starts where the last said.
    let first = env.ok(&["sessions", "--limit", "2"]);
    assert!(
        first.contains("sessions 1-2 of 3, newest first; next page: offset 2"),
        "{first}"
    );
    assert!(
        first.starts_with("1. what does this chart show\n"),
        "{first}"
    );
    let second = env.json(&["sessions", "--limit", "2", "--offset", "2", "--json"]);
    assert_eq!(ids(&second), ["aaaaaaaa"]);
    assert!(env
        .fails(&["sessions", "--limit", "0"])
        .contains("limit must be between 1 and 200"));
}

#[test]
fn the_sessions_tool_answers_in_one_call() {
    let env = Env::new();
    let dir = three(&env);
    env.sync_with(&dir, &["--source", "claude-code"]);
    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let tools = c.service.list_all_tools().await.unwrap();
        assert!(tools.iter().any(|t| t.name == "pond_sessions"));
        let info = c.service.peer_info().unwrap();
        assert!(info.instructions.as_deref().unwrap().contains("pond_sessions"));

        let all = c.ok("pond_sessions", json!({})).await;
        let at = |t: &str| all.find(t).unwrap_or_else(|| panic!("{t} missing: {all}"));
        assert!(at("what does this chart show") < at("tidy the release notes"));
        assert!(at("tidy the release notes") < at("why does the importer panic"));
        assert!(all.contains("session aaaaaaaa-0000-4000-8000-000000000001"), "{all}");

        let alpha = c
            .ok(
                "pond_sessions",
                json!({"project": "ALPHA", "source_agent": "claude-code", "from_date": "2026-03-01T00:00:00Z", "to_date": "2026-03-02T00:00:00Z", "limit": "5"}),
            )
            .await;
        assert!(alpha.contains("why does the importer panic"), "{alpha}");
        assert!(alpha.contains("session 1 of 1"), "{alpha}");
        let paged = c.ok("pond_sessions", json!({"limit": 1, "offset": 1})).await;
        assert!(paged.starts_with("2. tidy the release notes"), "{paged}");
        assert!(paged.contains("next page: offset 2"), "{paged}");

        let bad = c.mistake("pond_sessions", json!({"role": "user"})).await;
        assert!(bad.contains("Accepted arguments"), "{bad}");
        let bad = c.mistake("pond_sessions", json!({"from_date": "someday"})).await;
        assert!(bad.contains("from_date"), "{bad}");
    });
}

/// Made-up secrets (none a real key): a GitHub token, an AWS secret key, a database password
/// and a GitHub token of 70 characters.
const GHP: &str = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8";
const AWS: &str = "wJalrXUtnFEMIK7MDENGbPxRfiCYzQ8vN2kL5pT9";
const PG_PASS: &str = "Vq8zR2mK7xT4pL9wN3bY6cF1hJ5dS0gA";
const LONG_GHP: &str = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg";

/// One session of one prompt, at a minute of its own.
fn one_prompt(dir: &Path, n: u32, text: &str) -> String {
    let id = format!("dddddddd-0000-4000-8000-00000000000{n}");
    let ts = format!("2026-04-01T10:0{n}:00Z");
    write(
        dir,
        &id,
        &[line(&id, &format!("d{n}"), "user", &ts, "/work/keys", text)],
    );
    id
}

/// A piece of six characters of one of the secrets that `out` shows, if any.
fn leak(out: &str) -> Option<String> {
    let values = [&GHP[4..], AWS, PG_PASS, &LONG_GHP[4..]];
    values.iter().find_map(|v| {
        let v: Vec<char> = v.chars().collect();
        v.windows(6)
            .map(|w| w.iter().collect::<String>())
            .find(|w| out.contains(w.as_str()))
    })
}

#[test]
fn a_secret_in_a_title_is_masked_before_the_title_is_cut() {
    let env = Env::new();
    let dir = env.dir.path().join("home/projects/keys");
    // Each prompt is cut at 80 columns inside its secret.
    let ids = [
        one_prompt(
            &dir,
            1,
            &format!("{} GITHUB_TOKEN={GHP} deployment", "a".repeat(34)),
        ),
        one_prompt(
            &dir,
            2,
            &format!("{} aws_secret_access_key={AWS} deployment", "a".repeat(30)),
        ),
        one_prompt(
            &dir,
            3,
            &format!(
                "{} postgres://admin:{PG_PASS}@db.internal:5432/app deployment",
                "a".repeat(40)
            ),
        ),
        one_prompt(
            &dir,
            4,
            &format!("{} token {LONG_GHP} deployment", "b".repeat(20)),
        ),
    ];
    env.sync_with(&dir, &["--source", "claude-code"]);

    let mut outs = vec![
        env.ok(&["sessions"]),
        env.ok(&["sessions", "--json"]),
        env.ok(&["search", "deployment"]),
        env.ok(&["search", "deployment", "--json"]),
    ];
    for id in &ids {
        outs.push(env.ok(&["get-session", id]));
        outs.push(env.ok(&["get-session", id, "--json"]));
        outs.push(env.ok(&["export", id, "--format", "markdown"]));
    }
    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        outs.push(c.ok("pond_sessions", json!({})).await);
        outs.push(c.ok("pond_search", json!({"query": "deployment"})).await);
    });
    for out in &outs {
        assert_eq!(leak(out), None, "{out}");
    }

    let list = env.json(&["sessions", "--json"]);
    let title = |n: usize| {
        list["sessions"][4 - n]["title"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        title(1),
        format!(
            "{} GITHUB_TOKEN=[secret:github-token:…q7R8]…",
            "a".repeat(34)
        )
    );
    // A long key's placeholder shows its own last four characters, not four from the middle
    // of the key where a cut ended it.
    assert_eq!(
        title(4),
        format!(
            "{} token [secret:github-token:…i1Hg] deployment",
            "b".repeat(20)
        )
    );
    for n in 1..=4 {
        assert!(title(n).chars().count() <= 80, "{}", title(n));
    }
}

#[test]
fn a_client_title_is_one_line_cut_as_a_derived_one() {
    let env = Env::new();
    let dir = three(&env);
    let custom = |id: &str, title: &str| {
        let line = json!({"type": "custom-title", "customTitle": title, "sessionId": id});
        write(&dir, id, &[line.to_string()]);
    };
    custom(
        "bbbbbbbb-0000-4000-8000-000000000002",
        "Release notes\n2. fake second session\u{1b}[31m red\u{1b}]0;owned\u{7}",
    );
    let long = "the one where we moved every importer to streaming reads and measured it twice";
    custom(
        "aaaaaaaa-0000-4000-8000-000000000001",
        &format!("{long} over the weekend"),
    );
    env.sync_with(&dir, &["--source", "claude-code"]);

    let shown = "Release notes 2. fake second session red";
    let list = env.ok(&["sessions"]);
    assert!(!list.contains('\u{1b}'), "{list:?}");
    assert!(!list.lines().any(|l| l.starts_with("2. fake")), "{list}");
    assert!(list.contains(&format!("2. {shown}\n")), "{list}");
    let cut = format!("{long}…");
    assert!(list.contains(&format!("3. {cut}\n")), "{list}");

    let json = env.json(&["sessions", "--json"]);
    assert_eq!(json["sessions"][1]["title"], shown);
    assert_eq!(json["sessions"][2]["title"], cut.as_str());
    let page = env.ok(&["get-session", "bbbbbbbb-0000"]);
    assert!(
        page.lines()
            .next()
            .unwrap()
            .ends_with(&format!("· {shown}")),
        "{page}"
    );
    let md = env.ok(&["export", "aaaaaaaa-0000", "--format", "markdown"]);
    assert!(md.starts_with(&format!("# {cut}\n")), "{md}");
    let hits = env.ok(&["search", "release"]);
    assert!(!hits.contains('\u{1b}') && hits.contains(shown), "{hits}");
    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let all = c.ok("pond_sessions", json!({})).await;
        assert!(!all.contains('\u{1b}'), "{all:?}");
        assert!(all.contains(&format!("2. {shown}\n")), "{all}");
    });
}

#[test]
fn an_offset_past_the_end_says_so_and_counts_read_as_words() {
    let env = Env::new();
    let dir = three(&env);
    env.sync_with(&dir, &["--source", "claude-code"]);
    let past = "No sessions on this page: offset 99999 is past the last of the 3 that match the filters; the last page starts at offset 0.";
    let out = env.ok(&["sessions", "--offset", "99999"]);
    assert_eq!(out.trim_end(), past);
    let out = env.ok(&["sessions", "--offset", "5", "--limit", "2"]);
    assert!(out.contains("the last page starts at offset 2."), "{out}");
    let none = env.ok(&["sessions", "--project", "nowhere"]);
    assert!(none.contains("Widen the filters"), "{none}");

    let one = env.ok(&["sessions", "--limit", "1", "--offset", "1"]);
    assert!(one.contains(" · 2 messages · "), "{one}");
    assert!(
        one.contains("session 2 of 3, newest first; next page: offset 2"),
        "{one}"
    );
    let dir = env.dir.path().join("home/projects/p");
    one_prompt(&dir, 1, "a session of one message");
    env.sync_with(&dir, &["--source", "claude-code"]);
    let out = env.ok(&["sessions", "--project", "keys"]);
    assert!(out.contains(" · 1 message · "), "{out}");
    assert!(out.contains("session 1 of 1, newest first"), "{out}");

    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let out = c.ok("pond_sessions", json!({"offset": 99999})).await;
        assert!(
            out.contains("offset 99999 is past the last of the 4"),
            "{out}"
        );
        // Out of range limits are taken as the nearest, as pond_search takes its own.
        let tools = c.service.list_all_tools().await.unwrap();
        let t = tools.iter().find(|t| t.name == "pond_sessions").unwrap();
        let limit = t.input_schema["properties"]["limit"]["description"].to_string();
        assert!(limit.contains("taken as"), "{limit}");
        let all = c.ok("pond_sessions", json!({"limit": 9999})).await;
        assert!(all.contains("sessions 1-4 of 4"), "{all}");
    });
}
