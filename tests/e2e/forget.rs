//! `pond forget` and exclusions: a forgotten session is gone from search (full-text and
//! vector), get, SQL and the disk, and no later sync stores it again; a forget killed
//! midway is completed by the next sync; excluded projects are not stored.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::common::Env;

const SHOP: &str = "11111111-1111-4111-8111-111111111111";
const LEGACY: &str = "22222222-2222-4222-8222-222222222222";
const CODEX: &str = "33333333-3333-4333-8333-333333333333";
/// Text only the shop session holds.
const SHOP_TEXT: &str = "why does the checkout total drift by a cent?";

fn rows_of(env: &Env, sessions: &[String]) -> i64 {
    let list: Vec<String> = sessions.iter().map(|s| format!("'{s}'")).collect();
    let list = list.join(",");
    let mut n = 0;
    for q in [
        format!("SELECT count(*) AS n FROM messages WHERE session_id IN ({list})"),
        format!("SELECT count(*) AS n FROM parts WHERE session_id IN ({list})"),
        format!("SELECT count(*) AS n FROM records WHERE session_id IN ({list})"),
        format!("SELECT count(*) AS n FROM sessions WHERE id IN ({list})"),
        // The files of the session as synced (a copy elsewhere keeps a cursor, no rows).
        format!("SELECT count(*) AS n FROM files WHERE path LIKE '%/sources/%{SHOP}%'"),
    ] {
        n += env.sql_json(&q)[0]["n"].as_i64().unwrap();
    }
    n
}

fn sessions_in(v: &Value) -> Vec<String> {
    v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap().to_owned())
        .collect()
}

/// Whether any file under `dir` holds `needle`'s bytes.
fn on_disk(dir: &Path, needle: &str) -> bool {
    crate::common::files_under(dir)
        .values()
        .any(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
}

#[test]
fn a_forgotten_session_is_gone_everywhere_and_stays_gone() {
    let env = Env::new();
    let src = env.sources();
    env.sync(&src);
    crate::embed::import_tiny_model(&env);
    env.ok(&["embed"]);
    let subagents = env.sql_json(&format!(
        "SELECT id FROM sessions WHERE parent_session_id = '{SHOP}'"
    ));
    let mut shop = vec![SHOP.to_owned()];
    shop.extend(
        subagents
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_owned()),
    );
    assert_eq!(shop.len(), 2, "the fixture's shop session has a subagent");
    let before = rows_of(&env, &shop);
    assert!(before > 10);
    let others = env.count("messages")
        - env.sql_json(&format!(
            "SELECT count(*) AS n FROM messages WHERE session_id IN ('{}', '{}')",
            shop[0], shop[1]
        ))[0]["n"]
            .as_i64()
            .unwrap();
    assert!(
        on_disk(&env.store(), SHOP_TEXT),
        "the test looks for text Lance stores plainly"
    );

    let dry = env.json(&["forget", "--session", SHOP, "--dry-run", "--json"]);
    assert_eq!(dry["sessions"].as_array().unwrap().len(), 2, "{dry}");
    assert!(dry["messages"].as_u64().unwrap() > 0);
    assert_eq!(rows_of(&env, &shop), before, "a dry run changes nothing");

    let done = env.json(&["forget", "--session", SHOP, "--yes", "--json"]);
    assert_eq!(done["sessions"].as_array().unwrap().len(), 2, "{done}");
    assert!(done["vectors"].as_u64().unwrap() > 0, "{done}");
    assert!(done["bytes_reclaimed"].as_u64().unwrap() > 0, "{done}");

    let check_gone = |env: &Env| {
        assert_eq!(rows_of(env, &shop), 0);
        for mode in ["fts", "vector", "hybrid"] {
            let hits = env.json(&[
                "search",
                "--mode",
                mode,
                "checkout total drift",
                "--limit",
                "50",
                "--json",
            ]);
            assert!(
                !sessions_in(&hits).iter().any(|s| shop.contains(s)),
                "{mode}: {hits}"
            );
        }
        assert!(env.fails(&["get-session", SHOP]).contains("no session"));
        env.fails(&["get-message", "c-u2"]);
        assert_eq!(
            env.count("messages"),
            others,
            "the other sessions are whole"
        );
        let codex = env.json(&["get-session", CODEX, "--json"]);
        assert!(!codex["messages"].as_array().unwrap().is_empty());
    };
    check_gone(&env);
    assert!(!on_disk(&env.store(), SHOP_TEXT), "the text left the disk");

    // The files are still there: a sync reads them no more, grown or not, and a copy of
    // the session under another path is not stored either.
    let again = env.sync(&src);
    assert_eq!(again["files_forgotten"], 2, "{again}");
    assert_eq!(again["messages_added"], 0, "{again}");
    let shop_file = src.join(format!("claude/projects/-home-dev-shop/{SHOP}.jsonl"));
    let mut text = std::fs::read_to_string(&shop_file).unwrap();
    text.push_str(&format!(
        r#"{{"type":"user","uuid":"c-late","sessionId":"{SHOP}","timestamp":"2026-03-02T00:00:00Z","cwd":"/home/dev/shop","message":{{"role":"user","content":"one more checkout question"}}}}"#
    ));
    text.push('\n');
    std::fs::write(&shop_file, &text).unwrap();
    let moved = env.dir.path().join("moved/projects/-home-dev-shop");
    std::fs::create_dir_all(&moved).unwrap();
    std::fs::write(moved.join(format!("{SHOP}.jsonl")), &text).unwrap();
    env.sync(&src);
    let copy = env.sync_with(&env.dir.path().join("moved"), &["--source", "claude-code"]);
    assert_eq!(copy["files_excluded"], 1, "{copy}");
    check_gone(&env);
}

#[test]
fn forget_by_project_and_by_date_keeps_the_rest() {
    let env = Env::new();
    env.sync(&env.sources());
    let total = env.count("sessions");
    let r = env.json(&["forget", "--project", "legacy", "--yes", "--json"]);
    assert_eq!(r["sessions"][0][0], LEGACY, "{r}");
    assert_eq!(env.count("sessions"), total - 1);
    env.fails(&["get-session", LEGACY]);
    // Before 2025-10-01: only the Codex session of September 2025 is left that old.
    let r = env.json(&["forget", "--before", "2025-10-01", "--yes", "--json"]);
    let gone: Vec<&str> = r["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s[0].as_str().unwrap())
        .collect();
    assert_eq!(gone, ["44444444-4444-4444-8444-444444444444"], "{r}");
    assert_eq!(env.count("sessions"), total - 2);
    let hits = env.json(&["search", "invoices table", "--json"]);
    assert!(sessions_in(&hits).contains(&CODEX.to_owned()), "{hits}");
    let none = env.ok(&["forget", "--project", "no-such-project"]);
    assert!(none.contains("nothing to forget"), "{none}");
    assert!(env.fails(&["forget"]).contains("--session"));
    assert!(env
        .fails(&["forget", "--session", "nope"])
        .contains("no stored session"));
}

#[test]
fn a_forget_killed_midway_is_completed_by_the_next_sync() {
    let corpus_env = Env::new();
    let corpus = corpus_env.dir.path().join("corpus");
    pond_benches::corpus::generate(&corpus, &pond_benches::corpus::Spec::new(4_000, 5)).unwrap();
    let project = "/home/dev/";
    let clean = Env::new();
    clean.sync(&corpus);
    let projects = clean.sql_json("SELECT DISTINCT project FROM sessions ORDER BY project");
    let victim = projects[0]["project"].as_str().unwrap().to_owned();
    assert!(victim.starts_with(project));
    let chosen = clean.sql_json(&format!(
        "SELECT id, source_path FROM sessions WHERE project = '{victim}' OR parent_session_id IN (SELECT id FROM sessions WHERE project = '{victim}')"
    ));
    let report = clean.json(&["forget", "--project", &victim, "--yes", "--json"]);
    assert_eq!(
        report["sessions"].as_array().unwrap().len(),
        chosen.as_array().unwrap().len()
    );
    let expect = (
        clean.count("messages"),
        clean.count("records"),
        clean.count("sessions"),
    );

    // Killed right after its tombstones were written (what a kill at any later step
    // leaves too): the next sync completes it before reading.
    let env = Env::new();
    env.sync(&corpus);
    let pending = serde_json::json!({
        "sessions": chosen.as_array().unwrap().iter().map(|r| r["id"].clone()).collect::<Vec<_>>(),
        "paths": chosen.as_array().unwrap().iter().map(|r| r["source_path"].clone()).collect::<Vec<_>>(),
        "pending": true,
    });
    std::fs::write(env.store().join("forgotten.json"), pending.to_string()).unwrap();
    let r = env.sync(&corpus);
    assert_eq!(r["forget_completed"], true, "{r}");
    let got = (
        env.count("messages"),
        env.count("records"),
        env.count("sessions"),
    );
    assert_eq!(got, expect);

    for delay_ms in [300u64, 900, 2000] {
        let env = Env::new();
        env.sync(&corpus);
        env.kill_after(
            &["forget", "--project", &victim, "--yes"],
            Duration::from_millis(delay_ms),
        );
        // The store opens and answers between the kill and the next sync.
        env.ok(&["status"]);
        env.sync(&corpus);
        let got = (
            env.count("messages"),
            env.count("records"),
            env.count("sessions"),
        );
        // Killed before its tombstones were written, the forget did nothing: run it again.
        if got != expect {
            env.json(&["forget", "--project", &victim, "--yes", "--json"]);
        }
        let got = (
            env.count("messages"),
            env.count("records"),
            env.count("sessions"),
        );
        assert_eq!(got, expect, "killed after {delay_ms} ms");
        let left = env.sql_json(&format!(
            "SELECT count(*) AS n FROM sessions WHERE project = '{victim}'"
        ));
        assert_eq!(left[0]["n"], 0);
        let tombstones: Value =
            serde_json::from_slice(&std::fs::read(env.store().join("forgotten.json")).unwrap())
                .unwrap();
        assert_eq!(tombstones["pending"], false);
    }
}

#[test]
fn excluded_projects_are_not_stored_until_the_exclusion_goes() {
    let env = Env::new();
    let src = env.sources();
    let r = env.sync_with(&src, &["--exclude-project", "shop"]);
    assert_eq!(r["files_excluded"], 2, "{r}");
    let shop = env.sql_json("SELECT count(*) AS n FROM sessions WHERE project LIKE '%shop%'");
    assert_eq!(shop[0]["n"], 0);
    // Lifted: the files are read again and stored.
    env.sync(&src);
    let shop = env.sql_json("SELECT count(*) AS n FROM sessions WHERE project LIKE '%shop%'");
    assert_eq!(shop[0]["n"], 2);
    // Excluded after they were stored: the sync says how to forget them.
    let out = env.run_with(
        &["sync", "--path", src.to_str().unwrap()],
        &[("POND_EXCLUDE_PROJECTS", "shop,api")],
    );
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("pond forget --project \"shop\""), "{err}");
}

/// Two projects excluded after they were stored: the sync's report counts each one's
/// sessions (with subagents) and messages, and the offer to forget them says each count; a
/// project with nothing stored is not named.
#[test]
fn the_offer_to_forget_counts_each_excluded_project() {
    let env = Env::new();
    let src = env.sources();
    env.sync(&src);
    let stored = |project: &str| {
        let n = env.sql_json(&format!(
            "SELECT count(*) AS n FROM sessions WHERE project LIKE '%{project}%'"
        ));
        let m = env.sql_json(&format!(
            "SELECT count(*) AS n FROM messages WHERE session_id IN \
             (SELECT id FROM sessions WHERE project LIKE '%{project}%')"
        ));
        (n[0]["n"].as_u64().unwrap(), m[0]["n"].as_u64().unwrap())
    };
    let (shop, api) = (stored("shop"), stored("api"));
    assert_eq!(shop.0, 2, "a session and its subagent");
    assert!(api.0 > 0 && api.1 > 0 && shop.1 > 0, "{shop:?} {api:?}");
    let out = env.run_with(
        &["sync", "--path", src.to_str().unwrap(), "--json"],
        &[("POND_EXCLUDE_PROJECTS", "api,nowhere,shop")],
    );
    assert!(out.status.success(), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let counted: Vec<(String, u64, u64)> = report["excluded_stored"]
        .as_array()
        .unwrap_or_else(|| panic!("{report}"))
        .iter()
        .map(|e| {
            (
                e["project"].as_str().unwrap().to_owned(),
                e["sessions"].as_u64().unwrap(),
                e["messages"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        counted,
        [
            ("api".to_owned(), api.0, api.1),
            ("shop".to_owned(), shop.0, shop.1)
        ]
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let offers: Vec<&str> = err.lines().filter(|l| l.contains("pond forget")).collect();
    assert_eq!(
        offers,
        [
            format!(
                "pond: {} sessions stored before are in projects matching \"api\"; `pond forget --project \"api\"` removes them",
                api.0
            ),
            "pond: 2 sessions stored before are in projects matching \"shop\"; `pond forget --project \"shop\"` removes them".to_owned(),
        ],
        "{err}"
    );
    // Without exclusions the list is empty (always sent: postcard cannot skip a field).
    assert_eq!(env.sync(&src)["excluded_stored"], serde_json::json!([]));
}

/// Run `pond args` with `input` on its stdin (a pipe); its status and stderr.
fn piped(env: &Env, args: &[&str], input: Option<&str>) -> (bool, String) {
    use std::io::Write;
    use std::process::Stdio;
    let mut cmd = env.cmd(args);
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if let Some(text) = input {
        let _ = child.stdin.take().unwrap().write_all(text.as_bytes());
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Run `pond args` on a terminal (`script` gives it a pty) that types `answers`; its status
/// and what the terminal showed.
fn on_terminal(env: &Env, args: &[&str], answers: &str) -> (bool, String) {
    use std::io::Write;
    use std::process::Stdio;
    let cmd = env.cmd(args);
    let quote = |s: &std::ffi::OsStr| format!("'{}'", s.to_str().unwrap().replace('\'', r"'\''"));
    let line: Vec<String> = std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(quote)
        .collect();
    let mut script = std::process::Command::new("script");
    script.args(["-qec", &line.join(" "), "/dev/null"]);
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => script.env(k, v),
            None => script.env_remove(k),
        };
    }
    let mut child = script
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script(1) runs");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(answers.as_bytes()).unwrap();
    // Kept open until pond is done: `script` ends the session when its input ends.
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn forget_without_a_terminal_deletes_nothing_unless_told_yes() {
    let env = Env::new();
    env.sync(&env.sources());
    let total = (env.count("sessions"), env.count("messages"));
    for input in [Some("n\n"), Some("y\n"), None] {
        let (ok, err) = piped(&env, &["forget", "--project", "legacy"], input);
        assert!(!ok, "{input:?}: {err}");
        assert!(
            err.contains("--yes") && err.contains("not a terminal"),
            "{err}"
        );
        assert!(err.contains("nothing forgotten"), "{err}");
        assert!(err.contains(LEGACY), "it says what would go: {err}");
        assert!(!err.contains("without --dry-run"), "{err}");
        assert_eq!((env.count("sessions"), env.count("messages")), total);
    }
    // A dry run needs no consent, and says how to do it.
    let dry = env.ok(&["forget", "--project", "legacy", "--dry-run"]);
    assert!(dry.contains("run again without --dry-run"), "{dry}");
    assert_eq!(env.count("sessions"), total.0);

    // On a terminal: asked, and "n" (or nothing) is a refusal that exits non-zero.
    for answer in ["n\n", "\n"] {
        let (ok, shown) = on_terminal(&env, &["forget", "--project", "legacy"], answer);
        assert!(!ok, "{shown}");
        assert!(shown.contains("for good? [y/N]"), "{shown}");
        assert!(shown.contains("nothing forgotten"), "{shown}");
        assert!(!shown.contains("without --dry-run"), "{shown}");
        assert_eq!(env.count("sessions"), total.0);
    }
    let (ok, shown) = on_terminal(&env, &["forget", "--project", "legacy"], "y\n");
    assert!(ok, "{shown}");
    assert!(shown.contains("forgot 1 sessions"), "{shown}");
    assert_eq!(env.count("sessions"), total.0 - 1);

    let r = env.json(&["forget", "--project", "shop", "--yes", "--json"]);
    assert_eq!(r["sessions"].as_array().unwrap().len(), 2, "{r}");
    assert_eq!(env.count("sessions"), total.0 - 3);
}

const FIRST: &str = "aaaaaaaa-0000-4000-8000-0000000000f1";
const RESUMED: &str = "aaaaaaaa-0000-4000-8000-0000000000f2";
/// A word only the first session's lines hold (and the resumed session's copy of them).
const WORD: &str = "xylophonequartz";

/// A Claude Code project with a session and its resumed successor, whose file begins with
/// the first session's two lines (their `sessionId` names the first).
fn resumed_pair(env: &Env) -> std::path::PathBuf {
    let dir = env.dir.path().join("pair/projects/-home-dev-music");
    std::fs::create_dir_all(&dir).unwrap();
    let line = |session: &str, uuid: &str, kind: &str, text: &str| {
        let message = if kind == "user" {
            serde_json::json!({"role": "user", "content": text})
        } else {
            serde_json::json!({"role": "assistant", "model": "m", "content": [{"type": "text", "text": text}]})
        };
        format!(
            "{}\n",
            serde_json::json!({"type": kind, "uuid": uuid, "sessionId": session, "cwd": "/home/dev/music",
                "timestamp": "2026-04-02T10:00:00.000Z", "message": message})
        )
    };
    let first = line(
        FIRST,
        "f-u1",
        "user",
        &format!("tune the {WORD} for the concert"),
    ) + &line(
        FIRST,
        "f-a1",
        "assistant",
        &format!("The {WORD} is tuned to A."),
    );
    std::fs::write(dir.join(format!("{FIRST}.jsonl")), &first).unwrap();
    let resumed = first + &line(RESUMED, "r-u1", "user", "now the drums");
    std::fs::write(dir.join(format!("{RESUMED}.jsonl")), resumed).unwrap();
    env.dir.path().join("pair")
}

#[test]
fn forget_names_the_sessions_that_copy_it_and_forgets_them_on_request() {
    let hits = |env: &Env| sessions_in(&env.json(&["search", WORD, "--json"]));

    // Without --with-copies: the copies are named, and stay.
    let env = Env::new();
    let pair = resumed_pair(&env);
    env.sync_with(&pair, &["--source", "claude-code"]);
    assert_eq!(hits(&env), [FIRST], "the first session owns its lines");
    let dry = env.ok(&["forget", "--session", FIRST, "--dry-run"]);
    assert!(
        dry.contains(&format!(
            "2 of their messages would remain in sessions {RESUMED}"
        )),
        "{dry}"
    );
    let done = env.ok(&["forget", "--session", FIRST, "--yes"]);
    assert!(
        done.contains(&format!("2 of their messages remain in sessions {RESUMED}"))
            && done.contains("--with-copies"),
        "{done}"
    );
    assert_eq!(hits(&env), [RESUMED], "the copies own the text now");

    // With it: the sessions that copy them go too, and the word leaves the disk.
    let env = Env::new();
    let pair = resumed_pair(&env);
    env.sync_with(&pair, &["--source", "claude-code"]);
    let r = env.json(&[
        "forget",
        "--session",
        FIRST,
        "--with-copies",
        "--yes",
        "--json",
    ]);
    let gone: Vec<&str> = r["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s[0].as_str().unwrap())
        .collect();
    assert_eq!(gone, [FIRST, RESUMED], "{r}");
    assert_eq!(r["copies"], serde_json::json!([]), "{r}");
    assert!(hits(&env).is_empty());
    assert_eq!(env.count("messages"), 0);
    assert!(
        !on_disk(&env.store(), WORD),
        "the word is still in the store's files"
    );
    // And a sync does not bring them back.
    env.sync_with(&pair, &["--source", "claude-code"]);
    assert!(hits(&env).is_empty());
}
