//! Masking that neither JSON nor SQL slips past: a secret right after a JSON escape (`\n`,
//! `\t`) is masked in every rendering that shows JSON; SQL cannot return a secret
//! transformed (upper, reverse, hex, a letter before it, one character per row), because it
//! reads masked views; an error that quotes a value is masked. And the SQL answers around
//! it: the byte cap counts what is printed, and a query that cannot work is the caller's
//! mistake with a hint, not "retry".

use std::path::Path;

use rmcp::model::CallToolRequestParams;
use serde_json::{json, Value};

use crate::common::Env;
use crate::mcp::{connect, runtime, Client};

const SID: &str = "5ec7e75a-0000-4000-8000-00000000f3f4";

/// One secret of each rule's shape (its first example): the text that makes it one (the
/// secret alone for a key with its prefix, `NAME=value` for an assignment), and the secret.
fn secrets() -> Vec<(String, String)> {
    pond_mask::RULES
        .iter()
        .map(|rule| {
            let hit = rule.hits[0];
            let start = hit.find('«').unwrap();
            let end = hit.find('»').unwrap();
            let secret = hit[start + '«'.len_utf8()..end].to_owned();
            let alone = pond_mask::find(&secret)
                .first()
                .is_some_and(|f| f.end - f.start == secret.len());
            let text = if alone {
                secret.clone()
            } else {
                hit.replace(['«', '»'], "")
            };
            (text, secret)
        })
        .collect()
}

/// A Claude Code session with every secret at the start of a line: in a prompt, in a Bash
/// command after `printf`'s `\n`, and in a tool result of tab-separated `NAME\tVALUE` lines.
fn write_session(dir: &Path) {
    let secrets = secrets();
    let lines_of = |sep: &str| {
        secrets
            .iter()
            .map(|(text, _)| format!("{sep}{text}"))
            .collect::<String>()
    };
    let t = "2026-05-01T10:00:0";
    let line = |n: usize, kind: &str, message: Value| {
        json!({
            "type": kind, "uuid": format!("{SID}-m{n}"), "sessionId": SID,
            "parentUuid": if n == 0 { Value::Null } else { json!(format!("{SID}-m{}", n - 1)) },
            "cwd": "/home/dev/vault", "timestamp": format!("{t}{n}.000Z"), "message": message,
        })
        .to_string()
    };
    let lines = [
        line(
            0,
            "user",
            json!({"role": "user", "content": format!("use these for the deploy:{}", lines_of("\n"))}),
        ),
        line(
            1,
            "assistant",
            json!({"role": "assistant", "model": "m", "content": [
                {"type": "tool_use", "id": "t1", "name": "Bash",
                 "input": {"command": format!("printf 'x{}\\n' | gh auth login --with-token", lines_of("\\n"))}}]}),
        ),
        line(
            2,
            "user",
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": format!("NAME\tVALUE{}", lines_of("\nKEY\t"))}]}),
        ),
    ];
    let project = dir.join("projects/-home-dev-vault");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join(format!("{SID}.jsonl")),
        lines.join("\n") + "\n",
    )
    .unwrap();
}

fn env_with_secrets() -> Env {
    let env = Env::new();
    let src = env.dir.path().join("secrets");
    write_session(&src);
    env.sync(&src);
    env
}

/// The secret `out` shows whole, as itself, JSON-escaped (once or twice) or `f` of it.
fn leaked(out: &str, f: impl Fn(&str) -> String) -> Option<String> {
    secrets().into_iter().map(|(_, s)| s).find(|s| {
        let once = serde_json::to_string(s).unwrap();
        let twice = serde_json::to_string(&once).unwrap();
        [
            s.clone(),
            once[1..once.len() - 1].to_owned(),
            twice[3..twice.len() - 3].to_owned(),
        ]
        .iter()
        .any(|v| out.contains(&f(v)))
    })
}

fn assert_masked(what: &str, out: &str) {
    if let Some(s) = leaked(out, str::to_owned) {
        panic!("{what} shows {s}:\n{out}");
    }
}

#[test]
fn a_secret_after_a_json_escape_is_masked_in_every_json_rendering() {
    let env = env_with_secrets();
    let raw = env.ok(&["--reveal-secrets", "export", SID, "--format", "jsonl"]);
    assert!(
        leaked(&raw, str::to_owned).is_some(),
        "the fixture holds the secrets: {raw}"
    );
    let a1 = format!("{SID}-m1");
    for args in [
        vec!["get-session", SID, "--json"],
        vec!["get-session", SID],
        vec!["get-message", &a1, "--json"],
        vec!["get-message", &a1],
        vec!["export", SID, "--format", "jsonl"],
        vec!["export", SID, "--format", "markdown"],
        vec!["sql", "SELECT raw FROM records", "--format", "json"],
        vec!["sql", "SELECT text, body FROM parts", "--format", "json"],
        vec!["sql", "SELECT header FROM sessions", "--format", "json"],
    ] {
        assert_masked(&format!("{args:?}"), &env.ok(&args));
    }
    runtime().block_on(async {
        let c: Client = connect(&env, &[]).await;
        for (tool, args) in [
            ("pond_get_session", json!({"id": SID})),
            ("pond_get_message", json!({"id": a1})),
            (
                "pond_sql",
                json!({"query": "SELECT raw FROM records", "format": "json"}),
            ),
            (
                "pond_sql",
                json!({"query": "SELECT body FROM parts", "format": "json"}),
            ),
        ] {
            assert_masked(&format!("{tool} {args}"), &c.ok(tool, args.clone()).await);
        }
    });
}

/// Every transformation the review used to take a secret past the output's masker, as
/// (query, what it does to a secret).
#[allow(clippy::type_complexity)]
fn transformations() -> Vec<(&'static str, Box<dyn Fn(&str) -> String>)> {
    let hex = |s: &str| s.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    vec![
        ("SELECT upper(search_text) AS v FROM messages", Box::new(|s: &str| s.to_uppercase())),
        ("SELECT lower(text) AS v FROM parts", Box::new(|s: &str| s.to_lowercase())),
        ("SELECT reverse(raw) AS v FROM records", Box::new(|s: &str| s.chars().rev().collect())),
        ("SELECT replace(text, '_', '') AS v FROM parts", Box::new(|s: &str| s.replace('_', ""))),
        ("SELECT replace(text, '-', '') AS v FROM parts", Box::new(|s: &str| s.replace('-', ""))),
        (
            r"SELECT regexp_replace(text, '(.)', '\1 ', 'g') AS v FROM parts",
            Box::new(|s: &str| s.chars().map(|c| format!("{c} ")).collect()),
        ),
        ("SELECT encode(text, 'hex') AS v FROM parts", Box::new(move |s: &str| hex(s))),
        ("SELECT CAST(text AS BYTEA) AS v FROM parts", Box::new(move |s: &str| hex(s))),
        (
            "SELECT concat('x', substr(search_text, strpos(search_text, 'ghp_'), 60)) AS v FROM messages",
            Box::new(|s: &str| format!("x{s}")),
        ),
        (
            "SELECT concat('x', substr(search_text, strpos(search_text, 'AKIA'), 60)) AS v FROM messages",
            Box::new(|s: &str| format!("x{s}")),
        ),
        ("SELECT make_array(text) AS v FROM parts", Box::new(str::to_owned)),
        ("SELECT named_struct('a', text) AS v FROM parts", Box::new(str::to_owned)),
        (
            "SELECT arrow_cast(text, 'Dictionary(Int32, Utf8)') AS v FROM parts",
            Box::new(str::to_owned),
        ),
        (
            "SELECT raw AS v FROM records WHERE raw LIKE '%ghp_%' OR raw LIKE '%AKIA%'",
            Box::new(str::to_owned),
        ),
    ]
}

#[test]
fn sql_cannot_return_a_secret_transformed() {
    let env = env_with_secrets();
    let before = env.ok(&[
        "--reveal-secrets",
        "sql",
        "SELECT upper(search_text) AS v FROM messages",
        "--format",
        "json",
    ]);
    assert!(
        leaked(&before, |s| s.to_uppercase()).is_some(),
        "--reveal-secrets reads the tables as stored: {before}"
    );
    for (q, f) in transformations() {
        // CSV has no nested cells.
        let nested = q.contains("make_array") || q.contains("named_struct");
        for format in ["table", "json", "csv"] {
            if nested && format == "csv" {
                continue;
            }
            let out = env.ok(&["sql", q, "--format", format, "--max-rows", "1000"]);
            if let Some(s) = leaked(&out, &f) {
                panic!("{q} as {format} shows {s} transformed:\n{out}");
            }
        }
    }
    // One character a row, put back together.
    let q = format!(
        "SELECT substr(search_text, i, 1) AS c FROM messages, unnest(range(1, 3000)) AS t(i) WHERE id = '{SID}-m0' ORDER BY i"
    );
    let rows = env.json(&["sql", &q, "--format", "json", "--max-rows", "5000"]);
    let joined: String = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["c"].as_str().unwrap_or(""))
        .collect();
    assert!(joined.contains("use these for the deploy"), "{joined}");
    assert_masked(&q, &joined);
    // An error that quotes the value it could not convert.
    for q in [
        "SELECT CAST(search_text AS INT) FROM messages".to_owned(),
        "SELECT CAST(reverse(search_text) AS INT) FROM messages".to_owned(),
        format!("SELECT CAST('{}' AS INT)", secrets()[4].1),
    ] {
        let err = env.fails(&["sql", &q]);
        assert!(err.contains("ast"), "{q}: {err}");
        assert_masked(&q, &err);
        if let Some(s) = leaked(&err, |s| s.chars().rev().collect()) {
            panic!("{q} shows {s} reversed: {err}");
        }
    }
    runtime().block_on(async {
        let c: Client = connect(&env, &[]).await;
        for (q, f) in transformations() {
            let out = c
                .ok("pond_sql", json!({"query": q, "format": "json"}))
                .await;
            if let Some(s) = leaked(&out, &f) {
                panic!("pond_sql {q} shows {s} transformed:\n{out}");
            }
        }
    });
}

/// Many short rows: 1,500 messages of a few words each.
fn env_with_many_rows() -> Env {
    let env = Env::new();
    let dir = env.dir.path().join("many/projects/-home-dev-many");
    std::fs::create_dir_all(&dir).unwrap();
    let sid = "3a11c0de-0000-4000-8000-000000000001";
    let padding = "a line of a long tool result that repeats itself. ".repeat(100);
    let lines: Vec<String> = (0..1500)
        .map(|n| {
            json!({
                "type": "user", "uuid": format!("m{n:05}"), "sessionId": sid,
                "parentUuid": if n == 0 { Value::Null } else { json!(format!("m{:05}", n - 1)) },
                "cwd": "/home/dev/many", "timestamp": format!("2026-05-01T10:{:02}:{:02}.000Z", n / 60, n % 60),
                "message": {"role": "user", "content": format!("message {n} {padding}")},
            })
            .to_string()
        })
        .collect();
    std::fs::write(dir.join(format!("{sid}.jsonl")), lines.join("\n") + "\n").unwrap();
    env.sync(&env.dir.path().join("many"));
    env
}

#[test]
fn the_sql_byte_cap_counts_the_bytes_printed() {
    let env = env_with_many_rows();
    for q in [
        "SELECT id FROM messages",
        "SELECT substr(raw, 1, 100) AS r FROM records",
    ] {
        let out = env.run(&["sql", q, "--max-rows", "1000", "--format", "csv"]);
        assert!(out.status.success());
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(stdout.lines().count(), 1001, "{q}: {stderr}");
        assert!(stderr.contains("row cap"), "{q}: {stderr}");
    }
    // Past the cap, the rows printed come close to it.
    let out = env.run(&[
        "sql",
        "SELECT raw FROM records",
        "--max-rows",
        "1000",
        "--format",
        "csv",
    ]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(stderr.contains("byte cap"), "{stderr}");
    assert!(
        stdout.len() > 200 << 10 && stdout.len() < 300 << 10,
        "{}",
        stdout.len()
    );
}

#[test]
fn a_query_that_cannot_work_is_the_callers_mistake_with_a_hint() {
    let env = env_with_many_rows();
    let cases = [
        ("SELECT * FROM session", "the tables are sessions, messages"),
        ("SELECT nosuch FROM messages", "nosuch"),
        ("SELECT 'a' + 1", ""),
        (
            "SELECT count(*) FROM messages WHERE timestamp > 'yesterday'",
            "yesterday",
        ),
        ("SELECT regexp_replace('a', '(', 'b')", "regex parse error"),
        (
            "SELECT count(*) FROM messages WHERE search_text ~ '('",
            "regex parse error",
        ),
    ];
    for (q, hint) in cases {
        let err = env.fails(&["sql", q]);
        assert!(err.contains(hint), "{q}: {err}");
    }
    runtime().block_on(async {
        let c: Client = connect(&env, &[]).await;
        for (q, hint) in cases {
            let Value::Object(args) = json!({"query": q}) else {
                unreachable!()
            };
            let r = c
                .service
                .call_tool(CallToolRequestParams::new("pond_sql").with_arguments(args))
                .await
                .unwrap();
            let text = serde_json::to_string(&r.content).unwrap();
            assert_eq!(r.is_error, Some(true), "{q}: {text}");
            assert!(!text.contains("retry"), "{q}: {text}");
            assert!(
                text.contains("pond://schema") && text.contains(hint),
                "{q}: {text}"
            );
        }
    });
}
