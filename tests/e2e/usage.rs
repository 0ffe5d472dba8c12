//! `pond usage`: token counts per client from fixtures with known counts, each model call
//! counted once (a response over several lines, a subagent's replay, a Codex count written
//! twice, never the cumulative total), a model without a price, a forgotten session's
//! usage gone, and an older store filled from its records by `pond rebuild --usage`.

use std::path::Path;

use crate::common::Env;

/// Session A (claude-opus-4-6): one response over two lines (the first line's counts are
/// the ones counted, as ccusage counts them), one more response. Its subagent replays the
/// response's first line and makes one call of its own with a model without a price.
const MAIN: &str = r#"{"type":"user","uuid":"a1","sessionId":"AAAA","timestamp":"2026-03-01T10:00:00Z","cwd":"/w/shop","message":{"role":"user","content":"total the cart"}}
{"type":"assistant","uuid":"a2","sessionId":"AAAA","requestId":"r1","timestamp":"2026-03-01T10:00:01Z","message":{"id":"m1","role":"assistant","model":"claude-opus-4-6","content":[{"type":"thinking","thinking":"sum"}],"usage":{"input_tokens":100,"output_tokens":10,"cache_creation_input_tokens":1000,"cache_read_input_tokens":20000}}}
{"type":"assistant","uuid":"a3","sessionId":"AAAA","requestId":"r1","timestamp":"2026-03-01T10:00:02Z","message":{"id":"m1","role":"assistant","model":"claude-opus-4-6","content":[{"type":"text","text":"the cart totals 12"}],"usage":{"input_tokens":100,"output_tokens":90,"cache_creation_input_tokens":1000,"cache_read_input_tokens":20000}}}
{"type":"assistant","uuid":"a4","sessionId":"AAAA","requestId":"r2","timestamp":"2026-03-01T10:01:00Z","message":{"id":"m2","role":"assistant","model":"claude-opus-4-6","content":[{"type":"text","text":"done"}],"usage":{"input_tokens":5,"output_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":21000}}}
"#;

const SUB: &str = r#"{"type":"assistant","uuid":"a2","sessionId":"AAAA","isSidechain":true,"requestId":"r1","timestamp":"2026-03-01T10:00:01Z","message":{"id":"m1","role":"assistant","model":"claude-opus-4-6","content":[{"type":"thinking","thinking":"sum"}],"usage":{"input_tokens":100,"output_tokens":10,"cache_creation_input_tokens":1000,"cache_read_input_tokens":20000}}}
{"type":"assistant","uuid":"s1","sessionId":"AAAA","isSidechain":true,"cwd":"/w/shop","requestId":"r9","timestamp":"2026-03-01T10:02:00Z","message":{"id":"m9","role":"assistant","model":"local-model-7b","content":[{"type":"text","text":"searched"}],"usage":{"input_tokens":7,"output_tokens":3}}}
"#;

/// Codex (gpt-5): two turns on 2026-03-02, the first count written twice; the second
/// turn's cumulative total (330) must not be counted as a turn.
const CODEX: &str = r#"{"timestamp":"2026-03-02T09:00:00Z","type":"session_meta","payload":{"id":"cccccccc-0000-0000-0000-000000000001","timestamp":"2026-03-02T09:00:00Z","cwd":"/w/api"}}
{"timestamp":"2026-03-02T09:00:01Z","type":"turn_context","payload":{"cwd":"/w/api","model":"gpt-5"}}
{"timestamp":"2026-03-02T09:00:02Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"list routes"}]}}
{"timestamp":"2026-03-02T09:00:03Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10,"reasoning_output_tokens":4,"total_tokens":110},"last_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10,"reasoning_output_tokens":4,"total_tokens":110}}}}
{"timestamp":"2026-03-02T09:00:04Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10,"reasoning_output_tokens":4,"total_tokens":110},"last_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10,"reasoning_output_tokens":4,"total_tokens":110}}}}
{"timestamp":"2026-03-02T09:00:05Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":300,"cached_input_tokens":140,"output_tokens":30,"reasoning_output_tokens":4,"total_tokens":330},"last_token_usage":{"input_tokens":200,"cached_input_tokens":100,"output_tokens":20,"reasoning_output_tokens":0,"total_tokens":220}}}}
"#;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn homes(env: &Env) -> (std::path::PathBuf, std::path::PathBuf) {
    let claude = env.dir.path().join("claude");
    let project = claude.join("projects/-w-shop");
    write(&project.join("AAAA.jsonl"), MAIN);
    write(&project.join("AAAA/subagents/agent-s.jsonl"), SUB);
    let codex = env.dir.path().join("codex");
    write(
        &codex.join("sessions/2026/03/02/rollout-2026-03-02T09-00-00-cccccccc-0000-0000-0000-000000000001.jsonl"),
        CODEX,
    );
    (claude, codex)
}

fn tokens(row: &serde_json::Value) -> [u64; 4] {
    [
        "input_tokens",
        "output_tokens",
        "cache_write_tokens",
        "cache_read_tokens",
    ]
    .map(|k| row[k].as_u64().unwrap_or_else(|| panic!("{k} in {row}")))
}

fn daily(env: &Env) -> serde_json::Value {
    env.json(&["usage", "daily", "--json"])
}

#[test]
fn usage_counts_each_call_once_per_client_and_prices_what_it_can() {
    let env = Env::new();
    let (claude, codex) = homes(&env);
    env.sync_with(&claude.join("projects"), &["--source", "claude-code"]);
    env.sync_with(&codex.join("sessions"), &["--source", "codex"]);
    let d = daily(&env);
    let rows = d["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{d:#}");
    // Claude: m1 once (its first line's 10 output tokens), m2, the subagent's own call.
    assert_eq!(rows[0]["group"], "2026-03-01");
    assert_eq!(
        tokens(&rows[0]),
        [100 + 5 + 7, 10 + 20 + 3, 1000, 20000 + 21000]
    );
    assert_eq!(rows[0]["calls"], 3);
    // Opus at $5/$25/$6.25/$0.50 per million; the local model has no price.
    let opus = 105.0 * 5.0 + 30.0 * 25.0 + 1000.0 * 6.25 + 41000.0 * 0.5;
    let cost = rows[0]["cost_usd"].as_f64().unwrap();
    assert!((cost - opus / 1e6).abs() < 1e-9, "{cost} {d:#}");
    let local = rows[0]["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == "local-model-7b")
        .unwrap();
    assert_eq!(local["cost_usd"], serde_json::Value::Null, "{local}");
    assert_eq!(d["unpriced_models"], serde_json::json!(["local-model-7b"]));
    // Codex: 60 + 100 fresh input, 40 + 100 cached, 10 + 20 output (4 of it reasoning).
    assert_eq!(rows[1]["group"], "2026-03-02");
    assert_eq!(tokens(&rows[1]), [160, 30, 0, 140]);
    assert_eq!(rows[1]["reasoning_tokens"], 4);
    assert_eq!(rows[1]["calls"], 2);
    let table = env.ok(&["usage"]);
    assert!(table.lines().all(|l| l.chars().count() <= 80), "{table}");
    assert!(
        table.contains("no price") && table.contains("local-model-7b"),
        "{table}"
    );
    // The same numbers by client, in SQL, and filtered.
    let by = env.json(&["usage", "client", "--json"]);
    let clients: Vec<&str> = by["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["group"].as_str().unwrap())
        .collect();
    assert_eq!(clients, ["claude-code", "codex"], "{by:#}");
    let sql = env.sql_json("SELECT sum(output_tokens) AS o, count(*) AS n FROM usage");
    assert_eq!(
        (sql[0]["o"].as_i64(), sql[0]["n"].as_i64()),
        (Some(63), Some(5)),
        "{sql}"
    );
    let codex_only = env.json(&[
        "usage",
        "--client",
        "codex",
        "--since",
        "2026-03-02",
        "--json",
    ]);
    assert_eq!(codex_only["rows"].as_array().unwrap().len(), 1);
    let csv = env.ok(&["usage", "model", "--csv"]);
    assert!(csv.starts_with("group,model,input_tokens"), "{csv}");
    // A line per model, its model named (a model group's rows have no models under them).
    assert_eq!(csv.lines().count(), 4, "{csv}");
    assert!(csv.contains("\ngpt-5,gpt-5,160,30,0,140,4,330,2,"), "{csv}");
    // An agent asks over MCP: the same numbers, and the schema resource names the table.
    crate::mcp::runtime().block_on(async {
        let c = crate::mcp::connect(&env, &[]).await;
        let shop = c
            .ok(
                "pond_usage",
                serde_json::json!({"project": "shop", "from_date": "2026-03-01", "format": "json"}),
            )
            .await;
        let shop: serde_json::Value = serde_json::from_str(&shop).unwrap();
        assert_eq!(tokens(&shop["totals"]), tokens(&rows[0]), "{shop:#}");
        let table = c
            .ok("pond_usage", serde_json::json!({"group": "model"}))
            .await;
        assert!(
            table.contains("claude-opus-4-6") && table.contains("gpt-5"),
            "{table}"
        );
        let csv = c
            .ok(
                "pond_usage",
                serde_json::json!({"group": "model", "format": "csv"}),
            )
            .await;
        assert!(csv.contains("\ngpt-5,gpt-5,160,"), "{csv}");
        let e = c
            .mistake("pond_usage", serde_json::json!({"group": "yearly"}))
            .await;
        assert!(e.contains("daily"), "{e}");
        let schema = c.resource("pond://schema").await;
        assert!(schema.contains("## usage\n") && schema.contains("`cache_read_tokens`"));
    });

    // Forgetting the Claude session takes its calls (its subagent's too) with it.
    env.ok(&["forget", "--session", "AAAA", "--yes"]);
    let d = daily(&env);
    let rows = d["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{d:#}");
    assert_eq!(rows[0]["group"], "2026-03-02");
}

/// A store whose lines were never read for usage (written before pond read tokens) gets
/// them from its records: by the next sync, and again by `pond rebuild --usage`.
#[test]
fn an_older_store_is_filled_from_its_records() {
    let env = Env::new();
    let (claude, codex) = homes(&env);
    env.sync_with(&claude.join("projects"), &["--source", "claude-code"]);
    env.sync_with(&codex.join("sessions"), &["--source", "codex"]);
    let want = daily(&env)["totals"].clone();
    // As an older pond left it: no usage rows, no marker.
    std::fs::remove_dir_all(env.store().join("usage.lance")).unwrap();
    std::fs::remove_file(env.store().join("usage.filled")).unwrap();
    let partial = env.ok(&["usage"]);
    assert!(partial.contains("pond rebuild --usage"), "{partial}");
    let r = env.sync_with(&codex.join("sessions"), &["--source", "codex"]);
    assert_eq!(r["usage_filled"], 5, "{r:#}");
    assert_eq!(daily(&env)["totals"], want);
    env.ok(&["rebuild", "--usage"]);
    assert_eq!(daily(&env)["totals"], want);
    assert_eq!(daily(&env)["complete"], true);
}

/// One absurd count a client wrote (over u64, or 1e30 as a float) is not summed: the
/// call is noted as skipped by the sync and every usage answer still comes, with the
/// other calls counted.
#[test]
fn an_absurd_token_count_is_ignored_not_summed() {
    let env = Env::new();
    let project = env.dir.path().join("claude/projects/-w-shop");
    let line = |uuid: &str, req: &str, usage: &str| {
        format!(
            r#"{{"type":"assistant","uuid":"{uuid}","sessionId":"BBBB","requestId":"{req}","timestamp":"2026-03-01T10:00:00Z","message":{{"id":"{req}","role":"assistant","model":"claude-opus-4-6","content":[{{"type":"text","text":"ok"}}],"usage":{usage}}}}}"#
        )
    };
    let text = [
        line(
            "b1",
            "r1",
            r#"{"input_tokens":18446744073709551615,"output_tokens":1}"#,
        ),
        line(
            "b2",
            "r2",
            r#"{"input_tokens":18446744073709551615,"output_tokens":18446744073709551615}"#,
        ),
        line(
            "b3",
            "r3",
            r#"{"input_tokens":1,"output_tokens":1,"cache_read_input_tokens":1e30}"#,
        ),
        line("b4", "r4", r#"{"input_tokens":7,"output_tokens":3}"#),
    ]
    .join("\n");
    write(&project.join("BBBB.jsonl"), &text);
    let r = env.sync_with(&project, &["--source", "claude-code"]);
    assert_eq!(r["skipped_by_reason"]["usage ignored"], 3, "{r:#}");
    let d = daily(&env);
    assert_eq!(tokens(&d["totals"]), [7, 3, 0, 0], "{d:#}");
    assert_eq!(d["totals"]["calls"], 1, "{d:#}");
    for group in ["model", "session", "monthly"] {
        env.ok(&["usage", group]);
    }
    // The lines themselves are kept.
    let sql = env.sql_json("SELECT count(*) AS n FROM records");
    assert_eq!(sql[0]["n"].as_i64(), Some(4), "{sql}");
}

/// A `--prices` rate past the bound is refused, naming the model and the field (it made
/// `$inf` in the table and no price in JSON); a price file's model matches in any case.
#[test]
fn a_price_file_is_checked_and_matches_models_in_any_case() {
    let env = Env::new();
    let (claude, _) = homes(&env);
    env.sync_with(&claude.join("projects"), &["--source", "claude-code"]);
    let prices = env.dir.path().join("prices.json");
    let file = |model: &str, output: &str| {
        format!(
            r#"{{"date": "2027-01-01", "models": [{{"model": "{model}", "input": 0, "output": {output}, "cache_write": 0, "cache_read": 0, "source": "me", "date": "2027-01-01"}}]}}"#
        )
    };
    write(&prices, &file("LOCAL-Model-7B", "1e300"));
    let p = prices.to_str().unwrap();
    let e = env.fails(&["usage", "--prices", p, "--json"]);
    assert!(
        e.contains("LOCAL-Model-7B's output must be a number from 0 to 10000"),
        "{e}"
    );
    write(&prices, &file("LOCAL-Model-7B", "1000000"));
    let e = env.fails(&["usage", "--prices", p]);
    assert!(e.contains("output must be a number from 0"), "{e}");
    // The same model in another case is priced.
    write(&prices, &file("LOCAL-Model-7B", "1000"));
    let d = env.json(&["usage", "--prices", p, "--json"]);
    assert_eq!(d["unpriced_models"], serde_json::json!([]), "{d:#}");
}
