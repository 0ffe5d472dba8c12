//! Messages that several sessions hold (a subagent replaying its parent's lines, a resumed
//! session copying its predecessor's): every session reads whole, search shows each message
//! once, in the session that owns it, and no answer depends on the order files were synced
//! in. Fixtures in `tests/replays/` (see its README).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::{copy_dir, Env};

const PARENT: &str = "aaaaaaaa-0000-4000-8000-000000000001";
const ORIGINAL: &str = "aaaaaaaa-0000-4000-8000-0000000000a0";
const RESUMED: &str = "aaaaaaaa-0000-4000-8000-0000000000b0";
const COMPACT: &str = "agent-acompact-1111";
const ASIDE: &str = "agent-aside_question-2222";
const TASK: &str = "agent-bbbb3333";

/// A copy of the replay fixtures, shared by every store of a test (paths appear in answers).
fn sources(dir: &Path) -> PathBuf {
    let dst = dir.join("replays");
    copy_dir(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/replays/projects"),
        &dst,
    );
    dst
}

fn session_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(session_files(&p));
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
    out.sort();
    out
}

fn ids(page: &Value) -> Vec<String> {
    page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Everything a reader can ask: every session's pages (with and without replayed context),
/// every message with its neighbours, and searches.
pub(crate) fn answers(env: &Env) -> Value {
    let mut out = serde_json::Map::new();
    let sessions = env.sql_json("SELECT id FROM sessions ORDER BY id");
    for s in sessions.as_array().unwrap() {
        let id = s["id"].as_str().unwrap();
        for extra in [None, Some("--include-replayed")] {
            let mut args = vec!["get-session", id, "--limit", "200", "--json"];
            args.extend(extra);
            out.insert(format!("session {id} {extra:?}"), env.json(&args));
        }
    }
    let messages = env.sql_json("SELECT DISTINCT id FROM messages ORDER BY id");
    for m in messages.as_array().unwrap() {
        let id = m["id"].as_str().unwrap();
        let args = ["get-message", id, "--context", "3", "--json"];
        out.insert(format!("message {id}"), env.json(&args));
    }
    for q in [
        "export stall",
        "progress counter",
        "billing invoicing",
        "database cursor",
        "summary",
        "PostgreSQL",
        "retry timeouts",
    ] {
        let args = ["search", q, "--limit", "50", "--json"];
        out.insert(format!("search {q}"), env.json(&args));
    }
    Value::Object(out)
}

#[test]
fn every_session_reads_whole_and_each_message_is_found_once_in_its_owner() {
    let env = Env::new();
    let src = sources(env.dir.path());
    let r = env.sync(&src);
    assert_eq!(r["skipped"], 0, "{r}");
    // Compaction replays 4 lines, the side question 6, the resumed session 2.
    assert_eq!(r["replayed_messages"], 12, "{r}");
    assert_eq!(
        r["demoted_messages"], 0,
        "parents are read before subagents: {r}"
    );

    let page = |id: &str, extra: &[&str]| {
        let mut args = vec!["get-session", id, "--limit", "200", "--json"];
        args.extend(extra);
        env.json(&args)
    };
    // The parent lists every line of its own file, in order, whatever replays them.
    assert_eq!(
        ids(&page(PARENT, &[])),
        ["p-u1", "p-a1", "p-u2", "p-a2", "p-s1", "p-u3", "p-a3"]
    );
    // A subagent lists its own work; its replayed context on request.
    let compact = page(COMPACT, &[]);
    assert_eq!(ids(&compact), ["k-u1", "k-a1"]);
    assert_eq!(compact["replayed_hidden"], 4);
    let text = env.ok(&["get-session", COMPACT]);
    assert!(
        text.contains("4 messages replayed from session aaaaaaaa-0000-4000-8000-000000000001"),
        "{text}"
    );
    let whole = page(COMPACT, &["--include-replayed"]);
    assert_eq!(
        ids(&whole),
        ["p-u1", "p-a1", "p-u2", "p-a2", "k-u1", "k-a1"]
    );
    assert_eq!(whole["messages"][0]["replayed"], true);
    assert_eq!(ids(&page(ASIDE, &[])), ["q-u1", "q-a1"]);
    assert_eq!(ids(&page(TASK, &[])), ["t-u1", "t-a1"]);
    // A resumed session lists its copy of the earlier lines, marked as copies.
    let resumed = page(RESUMED, &[]);
    assert_eq!(ids(&resumed), ["r-u1", "r-a1", "r-u2", "r-a2"]);
    assert_eq!(resumed["messages"][0]["replayed"], true);
    assert!(resumed["messages"][2].get("replayed").is_none());
    assert_eq!(ids(&page(ORIGINAL, &[])), ["r-u1", "r-a1"]);

    // Search shows each message once, in the session that owns it.
    let hit_sessions = |q: &str| {
        let v = env.json(&["search", q, "--limit", "50", "--json"]);
        let mut out = Vec::new();
        for s in v["sessions"].as_array().unwrap() {
            for h in s["hits"].as_array().unwrap() {
                out.push((
                    s["session_id"].as_str().unwrap().to_owned(),
                    h["message_id"].as_str().unwrap().to_owned(),
                ));
            }
        }
        out
    };
    for (q, owner, first) in [
        ("nightly export stall", PARENT, "p-u1"),
        ("rename billing", ORIGINAL, "r-u1"),
        ("summarize the conversation", COMPACT, "k-u1"),
        ("which database", ASIDE, "q-u1"),
    ] {
        let hits = hit_sessions(q);
        assert!(
            hits.contains(&(owner.to_owned(), first.to_owned())),
            "{q}: {hits:?}"
        );
        // The replayed lines are found in their owners only.
        for (session, id) in &hits {
            if id.starts_with("p-") {
                assert_eq!(session, PARENT, "{q}: {hits:?}");
            } else if ["r-u1", "r-a1"].contains(&id.as_str()) {
                assert_eq!(session, ORIGINAL, "{q}: {hits:?}");
            }
        }
        let mut ids: Vec<&String> = hits.iter().map(|h| &h.1).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(
            ids.len(),
            hits.len(),
            "{q}: a message found twice: {hits:?}"
        );
    }
    // get-message resolves an id to its owner.
    let m = env.json(&["get-message", "p-u2", "--json"]);
    assert_eq!(m["session"]["id"], PARENT);
    let m = env.json(&["get-message", "r-a1", "--json"]);
    assert_eq!(m["session"]["id"], ORIGINAL);
    let owned = env.sql_json("SELECT count(*) AS n FROM messages WHERE NOT replayed");
    let distinct = env.sql_json("SELECT count(DISTINCT id) AS n FROM messages");
    assert_eq!(owned, distinct, "one owner per message id");
}

#[test]
fn answers_do_not_depend_on_the_order_files_are_synced_in() {
    let dir = tempfile::tempdir().unwrap();
    let src = sources(dir.path());
    let files = session_files(&src);
    assert_eq!(files.len(), 6);

    let together = Env::new();
    together.sync(&src);
    let expected = answers(&together);

    let subagents_first: Vec<PathBuf> = {
        let mut f = files.clone();
        f.sort_by_key(|p| !p.to_string_lossy().contains("/agent-"));
        f.reverse();
        f
    };
    let mut shuffled = files.clone();
    shuffled.swap(0, 4);
    shuffled.swap(1, 3);
    let mut demoted = 0;
    for (name, order) in [
        (
            "file by file, reversed",
            files.iter().rev().cloned().collect(),
        ),
        ("subagents first", subagents_first),
        ("shuffled", shuffled),
    ] {
        let env = Env::new();
        for f in &order {
            let r = env.sync(f);
            demoted += r["demoted_messages"].as_u64().unwrap();
        }
        let got = answers(&env);
        for (k, v) in expected.as_object().unwrap() {
            assert_eq!(got.get(k), Some(v), "{name}: {k} differs");
        }
        assert_eq!(got, expected, "{name}");
    }
    assert!(demoted > 0, "some order read a copy before its original");
    assert_ne!(expected["search export stall"]["hits"], json!(0));
}
