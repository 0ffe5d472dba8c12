//! Secrets planted in every place a session holds text (user prompts, assistant text,
//! thinking, tool inputs, tool results), one session per masking rule: no answer over MCP
//! (search, get-session, get-message, SQL over every table in every format, resources) and
//! no CLI output shows one whole; `--reveal-secrets` shows them on the CLI.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::Env;
use crate::mcp::{connect, runtime, Client};

/// A rule's example: the text around the secret, and the secret.
struct Planted {
    session: String,
    text: String,
    secret: String,
}

/// Every hit of every rule of the masker, its secret unmarked.
fn planted() -> Vec<Planted> {
    let mut out = Vec::new();
    for (r, rule) in pond_mask::RULES.iter().enumerate() {
        for (h, hit) in rule.hits.iter().enumerate() {
            let start = hit.find('«').unwrap();
            let end = hit.find('»').unwrap();
            out.push(Planted {
                session: format!("5ec0{r:04}-{h:04}-4000-8000-000000000000"),
                text: hit.replace(['«', '»'], ""),
                secret: hit[start + '«'.len_utf8()..end].to_owned(),
            });
        }
    }
    out
}

/// One Claude Code session holding `p`'s text in each place a session keeps text.
fn write_session(dir: &Path, p: &Planted) {
    let sid = &p.session;
    let t = "2026-05-01T10:00:0";
    let line = |n: usize, kind: &str, message: Value| {
        json!({
            "type": kind, "uuid": format!("{sid}-m{n}"), "sessionId": sid,
            "parentUuid": if n == 0 { Value::Null } else { json!(format!("{sid}-m{}", n - 1)) },
            "cwd": "/home/dev/vault", "timestamp": format!("{t}{n}.000Z"), "message": message,
        })
        .to_string()
    };
    let text = &p.text;
    let lines = [
        line(
            0,
            "user",
            json!({"role": "user", "content": format!("planted secret, see: {text}")}),
        ),
        line(
            1,
            "assistant",
            json!({"role": "assistant", "model": "m", "content": [
            {"type": "thinking", "thinking": format!("the user pasted {text}"), "signature": "s"}]}),
        ),
        line(
            2,
            "assistant",
            json!({"role": "assistant", "model": "m", "content": [
            {"type": "tool_use", "id": format!("{sid}-t"), "name": "Bash", "input": {"command": format!("echo '{text}'")}}]}),
        ),
        line(
            3,
            "user",
            json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("{sid}-t"), "content": format!("planted output {text}")}]}),
        ),
        line(
            4,
            "assistant",
            json!({"role": "assistant", "model": "m", "content": [
            {"type": "text", "text": format!("planted reply quoting {text} back")}]}),
        ),
    ];
    let project = dir.join("projects/-home-dev-vault");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join(format!("{sid}.jsonl")),
        lines.join("\n") + "\n",
    )
    .unwrap();
}

fn env_with_secrets() -> (Env, Vec<Planted>) {
    let env = Env::new();
    let planted = planted();
    let src = env.dir.path().join("secrets");
    for p in &planted {
        write_session(&src, p);
    }
    env.sync(&src);
    (env, planted)
}

/// Whether `out` shows `secret` whole, as itself or JSON-escaped (a multi-line key in a
/// JSON answer).
fn shows(out: &str, secret: &str) -> bool {
    let escaped = serde_json::to_string(secret).unwrap();
    out.contains(secret) || out.contains(&escaped[1..escaped.len() - 1])
}

fn assert_masked(what: &str, out: &str, planted: &[Planted]) {
    for p in planted {
        assert!(
            !shows(out, &p.secret),
            "{what} shows the secret of session {}:\n{out}",
            p.session
        );
    }
}

#[test]
fn no_mcp_answer_shows_a_planted_secret() {
    let (env, planted) = env_with_secrets();
    runtime().block_on(async {
        let c: Client = connect(&env, &[]).await;
        let mut seen_placeholders = 0;
        for p in &planted {
            let sid = p.session.as_str();
            let hits = c
                .ok(
                    "pond_search",
                    json!({"query": "planted", "session_id": sid}),
                )
                .await;
            assert!(hits.contains(sid), "{hits}");
            let page = c
                .ok("pond_get_session", json!({"id": sid, "limit": 200}))
                .await;
            seen_placeholders += page.matches("[secret:").count();
            let mut answers = vec![("search", hits), ("get-session", page)];
            for n in 0..5 {
                let id = format!("{sid}-m{n}");
                let m = c
                    .ok(
                        "pond_get_message",
                        json!({"id": id, "context_before": 0, "context_after": 0}),
                    )
                    .await;
                answers.push(("get-message", m));
            }
            for (what, out) in answers {
                assert_masked(what, &out, std::slice::from_ref(p));
            }
        }
        assert!(
            seen_placeholders >= planted.len() * 4,
            "{seen_placeholders}"
        );
        for table in ["sessions", "messages", "parts", "records", "files"] {
            for format in ["table", "json", "csv"] {
                for (k, p) in planted.iter().enumerate() {
                    let filter = match table {
                        "files" => format!("path LIKE '%{}%'", p.session),
                        "sessions" => format!("id = '{}'", p.session),
                        _ => format!("session_id = '{}'", p.session),
                    };
                    if table == "files" && k > 0 {
                        continue;
                    }
                    let q = format!("SELECT * FROM {table} WHERE {filter}");
                    let out = c
                        .ok(
                            "pond_sql",
                            json!({"query": q, "format": format, "max_rows": 1000}),
                        )
                        .await;
                    assert!(!out.contains("answer cut"), "{q}: {out}");
                    assert_masked(&format!("{q} as {format}"), &out, std::slice::from_ref(p));
                }
            }
        }
        for uri in ["pond://status", "pond://schema"] {
            assert_masked(uri, &c.resource(uri).await, &planted);
        }
    });
}

#[test]
fn the_cli_masks_unless_asked_to_reveal() {
    let (env, planted) = env_with_secrets();
    let records = "SELECT raw FROM records";
    let parts = "SELECT text, body FROM parts";
    let mut masked = String::new();
    for args in [
        vec!["search", "planted", "--limit", "200"],
        vec!["sql", records, "--format", "json", "--max-rows", "100000"],
        vec!["sql", parts, "--max-rows", "100000"],
    ] {
        masked.push_str(&env.ok(&args));
    }
    for p in &planted {
        masked.push_str(&env.ok(&["get-session", &p.session, "--limit", "100"]));
        masked.push_str(&env.ok(&["get-message", &format!("{}-m3", p.session), "--json"]));
    }
    assert_masked("the CLI", &masked, &planted);

    let revealed = env.ok(&[
        "--reveal-secrets",
        "sql",
        records,
        "--format",
        "json",
        "--max-rows",
        "100000",
    ]);
    for p in &planted {
        let escaped = serde_json::to_string(&serde_json::to_string(&p.secret).unwrap()).unwrap();
        let in_raw = &escaped[3..escaped.len() - 3];
        assert!(
            shows(&revealed, &p.secret) || revealed.contains(in_raw),
            "--reveal-secrets hides the secret of {}",
            p.session
        );
        let page = env.ok(&[
            "get-session",
            &p.session,
            "--limit",
            "100",
            "--reveal-secrets",
        ]);
        assert!(shows(&page, &p.secret), "{page}");
    }
}
