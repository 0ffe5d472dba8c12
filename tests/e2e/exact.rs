//! Exact and regex search (`search --mode exact|regex`, `pond_search`): strings full-text
//! search cannot find (in tool output, identifiers split into words), case rules, regexes
//! with and without literals, refusals, masking, paging, forget.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::Env;
use crate::mcp::{connect, runtime};

const NEW: &str = "aaaaaaaa-0000-4000-8000-000000000001";
const OLD: &str = "bbbbbbbb-0000-4000-8000-000000000002";

/// A Claude Code line: a user or assistant message with `content` blocks.
fn line(session: &str, uuid: &str, role: &str, time: &str, content: Value) -> String {
    json!({
        "type": role, "uuid": uuid, "sessionId": session, "timestamp": time,
        "cwd": "/home/dev/grep",
        "message": {"role": role, "content": content},
    })
    .to_string()
}

/// Two sessions of their own: the newer one's tool result holds the strings people look
/// for again; the older one holds the lockfile error too, in another case.
fn home(root: &Path) -> PathBuf {
    let dir = root.join("claude/projects/-home-dev-grep");
    std::fs::create_dir_all(&dir).unwrap();
    let output = "ERR_PNPM_OUTDATED_LOCKFILE  Cannot install with \"frozen-lockfile\"\n\
        error[E0502]: cannot borrow `map` as mutable\n  \
        --> src/store/rowmap/writer.rs:240:9\n\
        frame 0x7ffd3c2a at deadbeefcafe1234\n\
        数据库连接失败，请检查配置\n\
        export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY # zqxsecretline";
    let new = [
        line(
            NEW,
            "n-u1",
            "user",
            "2026-03-02T10:00:00.000Z",
            json!([{"type": "text", "text": "why does the install fail?"}]),
        ),
        line(
            NEW,
            "n-a1",
            "assistant",
            "2026-03-02T10:00:01.000Z",
            json!([{"type": "tool_use", "id": "tu_9", "name": "Bash", "input": {"command": "pnpm install --frozen-lockfile --filter=@shop/web"}}]),
        ),
        line(
            NEW,
            "n-u2",
            "user",
            "2026-03-02T10:00:02.000Z",
            json!([{"type": "tool_result", "tool_use_id": "tu_9", "content": output, "is_error": true}]),
        ),
        line(
            NEW,
            "n-a2",
            "assistant",
            "2026-03-02T10:00:03.000Z",
            json!([{"type": "text", "text": "The lockfile is outdated: run pnpm install without the flag."}]),
        ),
    ];
    let old = [
        line(
            OLD,
            "o-u1",
            "user",
            "2026-02-01T09:00:00.000Z",
            json!([{"type": "text", "text": "the CI says err_pnpm_outdated_lockfile again"}]),
        ),
        line(
            OLD,
            "o-a1",
            "assistant",
            "2026-02-01T09:00:01.000Z",
            json!([{"type": "text", "text": "Then the lockfile drifted from package.json."}]),
        ),
        line(
            OLD,
            "o-u2",
            "user",
            "2026-02-01T09:00:02.000Z",
            json!([{"type": "text", "text": "ok thanks"}]),
        ),
    ];
    std::fs::write(dir.join(format!("{NEW}.jsonl")), new.join("\n") + "\n").unwrap();
    std::fs::write(dir.join(format!("{OLD}.jsonl")), old.join("\n") + "\n").unwrap();
    root.join("claude")
}

fn synced() -> Env {
    let env = Env::new();
    let claude = home(env.dir.path());
    env.sync(&claude);
    env
}

fn exact(env: &Env, pattern: &str, extra: &[&str]) -> Value {
    let mut args = vec!["search", "--mode", "exact", "--json"];
    args.extend_from_slice(extra);
    // After `--`, a pattern may begin with a dash.
    args.extend(["--", pattern]);
    env.json(&args)
}

/// The message ids of the hits, in order.
fn ids(v: &Value) -> Vec<String> {
    v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["hits"].as_array().unwrap().iter())
        .map(|h| h["message_id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn exact_finds_in_tool_output_what_full_text_cannot() {
    let env = synced();
    // Full-text search covers prose only: the tool result's strings are not there.
    let fts = env.json(&["search", "0x7ffd3c2a", "--json"]);
    assert_eq!(fts["hits"], 0, "{fts}");
    for (needle, want) in [
        ("ERR_PNPM_OUTDATED_LOCKFILE", vec!["n-u2", "o-u1"]),
        ("src/store/rowmap/writer.rs:240", vec!["n-u2"]),
        ("0x7ffd3c2a", vec!["n-u2"]),
        ("E0502", vec!["n-u2"]),
        ("deadbeefcafe", vec!["n-u2"]),
        // A tool call's input, with its dashes, @ and /.
        ("--filter=@shop/web", vec!["n-a1"]),
        // A CJK substring (no ASCII trigram: the small store is read whole).
        ("连接失败", vec!["n-u2"]),
        // A string across two lines of the tool result.
        ("mutable\n  --> src/store", vec!["n-u2"]),
    ] {
        let v = exact(&env, needle, &[]);
        assert_eq!(ids(&v), want, "{needle}: {v}");
    }
    let v = exact(&env, "src/store/rowmap/writer.rs:240", &[]);
    let hit = &v["sessions"][0]["hits"][0];
    assert_eq!(v["sessions"][0]["session_id"], NEW);
    assert_eq!(hit["part_type"], "tool_result");
    assert_eq!(hit["line_number"], 3);
    assert_eq!(hit["line"], "  --> src/store/rowmap/writer.rs:240:9");
    // Nothing holds it: no hit, said plainly.
    let text = env.ok(&["search", "--mode", "exact", "src/store/rowmap/reader.rs"]);
    assert!(text.contains("No messages match"), "{text}");
}

#[test]
fn exact_is_any_case_unless_asked_and_a_regex_is_as_written() {
    let env = synced();
    let v = exact(&env, "Err_Pnpm_Outdated_Lockfile", &[]);
    assert_eq!(ids(&v), ["n-u2", "o-u1"]);
    let v = exact(&env, "ERR_PNPM_OUTDATED_LOCKFILE", &["--case-sensitive"]);
    assert_eq!(ids(&v), ["n-u2"]);
    let regex = |p: &str| env.json(&["search", "--mode", "regex", "--json", p]);
    assert_eq!(ids(&regex("err_pnpm_[a-z]+_lockfile")), ["o-u1"]);
    assert_eq!(
        ids(&regex("(?i)err_pnpm_[a-z]+_lockfile")),
        ["n-u2", "o-u1"]
    );
    assert_eq!(ids(&regex(r"rowmap/\w+\.rs:\d+:\d+")), ["n-u2"]);
    // Newest first, paged.
    let text = env.ok(&["search", "--mode", "exact", "lockfile", "--limit", "2"]);
    assert!(text.contains("More: --offset 2"), "{text}");
    let v = exact(&env, "lockfile", &["--limit", "2"]);
    assert_eq!(ids(&v), ["n-a2", "n-u2"]);
    assert_eq!(v["more"], true);
    let v = exact(&env, "lockfile", &["--limit", "2", "--offset", "2"]);
    assert_eq!(ids(&v), ["n-a1", "o-a1"]);
    // Tool calls and results left out on request.
    let v = exact(&env, "lockfile", &["--no-tools"]);
    assert_eq!(ids(&v), ["n-a2", "o-a1", "o-u1"]);
    // The shared filters.
    let v = exact(
        &env,
        "lockfile",
        &["--session", &NEW[..8], "--role", "assistant"],
    );
    assert_eq!(ids(&v), ["n-a2", "n-a1"]);
    let v = exact(&env, "lockfile", &["--to", "2026-02-15"]);
    assert_eq!(ids(&v), ["o-a1", "o-u1"]);
    // Options of these modes are refused with another.
    let err = env.fails(&["search", "lockfile", "--case-sensitive"]);
    assert!(
        err.contains("--case-sensitive is for exact and regex search"),
        "{err}"
    );
}

#[test]
fn a_pattern_without_a_literal_needs_a_small_scope_and_a_huge_one_is_refused() {
    let env = synced();
    let small = [("POND_GREP_SCAN_MAX_MESSAGES", "5")];
    // Seven messages in the store: past the scope a scan may read.
    let err = env.fails_with(&["search", "--mode", "regex", "[0-9a-f]{16}"], &small);
    assert!(
        err.contains("holds no literal of 3 or more letters"),
        "{err}"
    );
    assert!(err.contains("narrow the scope"), "{err}");
    // The session alone (four messages) may be read whole.
    let v = env.json_with(
        &[
            "search",
            "--mode",
            "regex",
            "--json",
            "[0-9a-f]{16}",
            "--session",
            NEW,
        ],
        &small,
    );
    assert_eq!(ids(&v), ["n-u2"]);
    // So may a literal without letters or digits, in a small scope.
    let v = env.json_with(
        &[
            "search",
            "--mode",
            "exact",
            "--json",
            "--session",
            NEW,
            "--",
            "-->",
        ],
        &small,
    );
    assert_eq!(ids(&v), ["n-u2"]);
    // A regex whose program would be huge is refused before it is built; a nested star
    // runs in linear time.
    let err = env.fails(&["search", "--mode", "regex", "x(a{1000}){1000}"]);
    assert!(err.contains("compiles to more than"), "{err}");
    let v = env.json(&["search", "--mode", "regex", "--json", "lock(a*)*file"]);
    assert!(!ids(&v).is_empty());
    let err = env.fails(&["search", "--mode", "regex", r"(lock)\1"]);
    assert!(err.contains("backreferences"), "{err}");
}

#[test]
fn matched_lines_are_masked_and_forget_removes_them() {
    let env = synced();
    let text = env.ok(&["search", "--mode", "exact", "zqxsecretline"]);
    assert!(text.contains("zqxsecretline"), "{text}");
    assert!(text.contains("[secret:"), "{text}");
    assert!(!text.contains("wJalrXUtnFEMI"), "{text}");
    let shown = env.ok(&[
        "--reveal-secrets",
        "search",
        "--mode",
        "exact",
        "zqxsecretline",
    ]);
    assert!(shown.contains("wJalrXUtnFEMI"), "{shown}");
    env.ok(&["forget", "--session", NEW, "--yes"]);
    let v = exact(&env, "ERR_PNPM_OUTDATED_LOCKFILE", &[]);
    assert_eq!(ids(&v), ["o-u1"]);
    let v = exact(&env, "zqxsecretline", &[]);
    assert_eq!(v["hits"], 0, "{v}");
}

#[test]
fn mcp_search_finds_exact_text_and_regexes() {
    let env = synced();
    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let t = c
            .ok("pond_search", json!({"query": "0x7ffd3c2a", "mode": "exact"}))
            .await;
        assert!(t.contains(NEW) && t.contains("frame 0x7ffd3c2a"), "{t}");
        let t = c
            .ok(
                "pond_search",
                json!({"query": "ERR_PNPM_OUTDATED_LOCKFILE", "mode": "exact", "case_sensitive": true}),
            )
            .await;
        assert!(t.contains(NEW) && !t.contains(OLD), "{t}");
        let t = c
            .ok("pond_search", json!({"query": "lockfile", "mode": "exact", "limit": 1}))
            .await;
        assert!(t.contains("More: offset 1"), "{t}");
        let t = c
            .ok(
                "pond_search",
                json!({"query": "lockfile", "mode": "exact", "include_tools": false, "offset": 1, "limit": 1}),
            )
            .await;
        assert!(t.contains("o-a1"), "{t}");
        let t = c
            .ok("pond_search", json!({"query": "zqxsecretline", "mode": "exact"}))
            .await;
        assert!(!t.contains("wJalrXUtnFEMI") && t.contains("[secret:"), "{t}");
        let t = c
            .mistake("pond_search", json!({"query": "x(a{1000}){1000}", "mode": "regex"}))
            .await;
        assert!(t.contains("compiles to more than"), "{t}");
        let t = c
            .mistake("pond_search", json!({"query": "lockfile", "offset": 3}))
            .await;
        assert!(t.contains("offset is for exact and regex search"), "{t}");
    });
}

/// A store of one session whose tool result is `output` (a user's question, then the
/// result).
fn store_of(output: &str) -> Env {
    let env = Env::new();
    let dir = env.dir.path().join("claude/projects/-home-dev-grep");
    std::fs::create_dir_all(&dir).unwrap();
    let lines = [
        line(
            NEW,
            "s-u1",
            "user",
            "2026-03-02T10:00:00.000Z",
            json!([{"type": "text", "text": "what does the log say?"}]),
        ),
        line(
            NEW,
            "s-u2",
            "user",
            "2026-03-02T10:00:01.000Z",
            json!([{"type": "tool_result", "tool_use_id": "tu_1", "content": output}]),
        ),
    ];
    std::fs::write(dir.join(format!("{NEW}.jsonl")), lines.join("\n") + "\n").unwrap();
    env.sync(&env.dir.path().join("claude"));
    env
}

#[test]
fn a_match_inside_a_secret_is_no_hit_so_a_secret_cannot_be_read_by_guessing() {
    let env = synced();
    // The secret's characters, as exact and regex patterns: no hit, not counted.
    for pattern in ["wJalrXUtnFEMI", "EXAMPLEKEY"] {
        let v = exact(&env, pattern, &[]);
        assert_eq!(v["hits"], 0, "{pattern}: {v}");
        assert_eq!(v["sessions"], json!([]), "{v}");
    }
    let v = env.json(&["search", "--mode", "regex", "--json", "wJalr[X]UtnF"]);
    assert_eq!(v["hits"], 0, "{v}");
    // The text around it still matches, and revealed, the secret does.
    assert_eq!(ids(&exact(&env, "zqxsecretline", &[])), ["n-u2"]);
    let v = env.json(&[
        "--reveal-secrets",
        "search",
        "--mode",
        "exact",
        "--json",
        "wJalrXUtnFEMI",
    ]);
    assert_eq!(ids(&v), ["n-u2"]);
    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let t = c
            .ok(
                "pond_search",
                json!({"query": "wJalrXUtnFEMI", "mode": "exact"}),
            )
            .await;
        assert!(t.contains("No messages match"), "{t}");
        assert!(!t.contains("[secret:"), "{t}");
    });
}

#[test]
fn a_secret_far_back_on_a_long_line_is_masked_whole() {
    // A secret, then 16 KiB on the same line, then an access key: the key's match is
    // masked, and the first secret's tail is never shown (a region cut 16 KiB before the
    // match used to start inside it).
    let secret = "El2hpChYgCfrL1spNxnyVmihA+2O76UMFxFkM+R5";
    let output = format!(
        "aws_secret_access_key = {secret} {} AKIAUJZDE8GXD6NCF10E zqxafter",
        "x".repeat(16_362)
    );
    let env = store_of(&output);
    let v = exact(&env, "AKIAUJZDE8GXD6NC", &[]);
    assert_eq!(v["hits"], 0, "{v}");
    let text = env.ok(&["search", "--mode", "exact", "AKIAUJZDE8GXD6NC"]);
    assert!(!text.contains("UMFxFkM"), "{text}");
    // Found beside it, the line shows placeholders only.
    let v = exact(&env, "zqxafter", &[]);
    assert_eq!(ids(&v), ["s-u2"]);
    let line = v["sessions"][0]["hits"][0]["line"].as_str().unwrap();
    assert!(line.contains("[secret:aws-access-key:"), "{line}");
    assert!(
        !line.contains("UMFxFkM") && !line.contains("AKIAUJZ"),
        "{line}"
    );
}

#[test]
fn a_matched_line_is_shown_without_control_characters() {
    let env = store_of(
        "ok\n\u{1b}[31mzqxred\u{1b}[0m then \u{202e}evil\rover\u{1b}]0;title\u{7} end\nnext",
    );
    let v = exact(&env, "zqxred", &[]);
    assert_eq!(ids(&v), ["s-u2"]);
    let hit = &v["sessions"][0]["hits"][0];
    assert_eq!(hit["line"], "zqxred then evil over end", "{v}");
    assert_eq!(hit["line_number"], 2);
    let text = env.ok(&["search", "--mode", "exact", "zqxred"]);
    for c in ['\u{1b}', '\u{202e}', '\r', '\u{7}'] {
        assert!(!text.contains(c), "{c:?} in {text:?}");
    }
}

#[test]
fn without_the_n_gram_index_the_scan_limit_applies_and_says_to_sync() {
    let env = Env::new();
    let claude = home(env.dir.path());
    env.sync_with(&claude, &["--no-index"]);
    let small = [("POND_GREP_SCAN_MAX_MESSAGES", "1")];
    for pattern in ["ab", "lockfile"] {
        let err = env.fails_with(&["search", "--mode", "exact", pattern], &small);
        assert!(
            err.contains("index for exact and regex search is not built"),
            "{err}"
        );
        assert!(err.contains("pond sync"), "{err}");
    }
    // Within the limit, the scan finds it.
    let v = env.json(&["search", "--mode", "exact", "--json", "ERR_PNPM_OUTDATED"]);
    assert_eq!(ids(&v), ["n-u2", "o-u1"]);
    // Once synced with the index, the literal is looked up.
    env.sync(&claude);
    let v = env.json_with(&["search", "--mode", "exact", "--json", "lockfile"], &small);
    assert!(!ids(&v).is_empty(), "{v}");
}

#[test]
fn an_offset_past_the_last_match_says_where_the_last_page_starts() {
    let env = synced();
    // Five messages hold "lockfile".
    let text = env.ok(&[
        "search", "--mode", "exact", "lockfile", "--limit", "2", "--offset", "99999",
    ]);
    assert!(
        text.contains("offset 99999 is past the last of the 5 that match \"lockfile\"")
            && text.contains("the last page starts at offset 4."),
        "{text}"
    );
    // Nothing past an offset when nothing matches at all.
    let text = env.ok(&["search", "--mode", "exact", "zqxnowhere", "--offset", "3"]);
    assert!(text.contains("No messages match \"zqxnowhere\""), "{text}");
    assert!(!text.contains("past the"), "{text}");
    // One session is one session.
    let text = env.ok(&["search", "--mode", "exact", "0x7ffd3c2a"]);
    assert!(text.contains("in 1 session, newest first."), "{text}");
    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let t = c
            .ok(
                "pond_search",
                json!({"query": "lockfile", "mode": "exact", "offset": 99999}),
            )
            .await;
        assert!(
            t.contains("offset 99999 is past the last of the 5 that match")
                && t.contains("the last page starts at offset 0."),
            "{t}"
        );
    });
}
