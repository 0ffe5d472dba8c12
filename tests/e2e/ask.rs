//! Asking like a person: ids by prefix, `--to` a whole day, projects in any case, and only
//! the roles search can match offered.

use std::path::Path;

use serde_json::json;

use crate::common::Env;
use crate::mcp::{connect, runtime};

/// Two sessions whose ids share their first 8 characters, in a project spelled with a
/// capital, on 2026-04-29; their messages' ids share their first 6.
const VOLCANO_A: &str = "abcdef12-aaaa-4000-8000-000000000001";
const VOLCANO_B: &str = "abcdef12-bbbb-4000-8000-000000000002";

fn line(
    session: &str,
    uuid: &str,
    parent: Option<&str>,
    role: &str,
    text: &str,
    ts: &str,
) -> String {
    let message = if role == "user" {
        json!({"role": "user", "content": text})
    } else {
        json!({"id": format!("msg_{uuid}"), "type": "message", "role": "assistant",
               "model": "claude-test", "content": [{"type": "text", "text": text}]})
    };
    json!({"parentUuid": parent, "isSidechain": false, "userType": "external",
           "cwd": "/home/x/Volcano", "sessionId": session, "version": "1.0.89",
           "type": role, "message": message, "uuid": uuid, "timestamp": ts})
    .to_string()
}

fn write_volcano(sources: &Path) {
    let dir = sources.join("claude/projects/-home-x-Volcano");
    std::fs::create_dir_all(&dir).unwrap();
    let a = [
        line(
            VOLCANO_A,
            "msgpre-1111",
            None,
            "user",
            "how hot is volcanic lava",
            "2026-04-29T15:00:00.000Z",
        ),
        line(
            VOLCANO_A,
            "msgpre-2222",
            Some("msgpre-1111"),
            "assistant",
            "Basaltic lava erupts near 1200 degrees.",
            "2026-04-29T15:00:30.000Z",
        ),
    ];
    let b = [line(
        VOLCANO_B,
        "other-3333",
        None,
        "user",
        "list the volcanic islands",
        "2026-04-30T09:00:00.000Z",
    )];
    std::fs::write(dir.join(format!("{VOLCANO_A}.jsonl")), a.join("\n") + "\n").unwrap();
    std::fs::write(dir.join(format!("{VOLCANO_B}.jsonl")), b.join("\n") + "\n").unwrap();
}

fn synced() -> Env {
    let env = Env::new();
    let src = env.sources();
    write_volcano(&src);
    env.sync(&src);
    env
}

#[test]
fn ids_are_taken_by_an_unambiguous_prefix_in_every_verb() {
    let env = synced();
    // A whole id, and a prefix of it.
    let v = env.json(&["get-session", "22222222", "--json"]);
    assert_eq!(v["session"]["id"], "22222222-2222-4222-8222-222222222222");
    let v = env.json(&["get-message", "msgpre-1", "--json"]);
    assert_eq!(v["message"]["id"], "msgpre-1111");
    assert_eq!(v["session"]["id"], VOLCANO_A);
    // Paging continues from a prefix of a message id too.
    let v = env.json(&["get-session", VOLCANO_A, "--after", "msgpre-1", "--json"]);
    assert_eq!(v["messages"][0]["id"], "msgpre-2222", "{v}");

    // Ambiguous: the candidates and their count; too short: says so.
    let e = env.fails(&["get-session", "abcdef12"]);
    assert!(
        e.contains("2 session ids") && e.contains(VOLCANO_A) && e.contains(VOLCANO_B),
        "{e}"
    );
    let e = env.fails(&["get-message", "msgpre"]);
    assert!(
        e.contains("2 message ids") && e.contains("msgpre-1111"),
        "{e}"
    );
    let e = env.fails(&["get-session", "22222"]);
    assert!(e.contains("too short") && e.contains('6'), "{e}");
    // A prefix of nothing is not found, as a whole id is.
    let e = env.fails(&["get-session", "ffffffff"]);
    assert!(e.contains("no session"), "{e}");

    // search --session, export, restore, forget.
    let v = env.json(&["search", "lava", "--session", "abcdef12-a", "--json"]);
    assert_eq!(v["hits"], 2, "{v}");
    let v = env.json(&["search", "volcanic", "--session", "abcdef12-b", "--json"]);
    assert_eq!(v["hits"], 1, "{v}");
    let e = env.fails(&["search", "volcanic", "--session", "abcdef12"]);
    assert!(e.contains("2 session ids"), "{e}");
    let md = env.ok(&["export", "222222"]);
    assert!(md.contains("tokenizer"), "{md}");
    let jsonl = env.ok(&["export", "222222", "--format", "jsonl"]);
    assert!(jsonl.contains("rename the tokenizer module"), "{jsonl}");
    let v = env.json(&["restore", "222222", "--dry-run", "--json"]);
    assert!(
        v.to_string()
            .contains("22222222-2222-4222-8222-222222222222"),
        "{v}"
    );
    let v = env.json(&["forget", "--session", "222222", "--dry-run", "--json"]);
    assert!(
        v.to_string()
            .contains("22222222-2222-4222-8222-222222222222"),
        "{v}"
    );
    let e = env.fails(&["forget", "--session", "abcdef", "--dry-run"]);
    assert!(e.contains("2 session ids"), "{e}");
}

#[test]
fn to_includes_its_whole_day_and_a_reversed_range_is_refused() {
    let env = synced();
    let v = env.json(&[
        "search",
        "lava",
        "--from",
        "2026-04-29",
        "--to",
        "2026-04-29",
        "--json",
    ]);
    assert_eq!(v["hits"], 2, "{v}");
    // A time is still an exclusive bound.
    let v = env.json(&["search", "lava", "--to", "2026-04-29T15:00:30Z", "--json"]);
    assert_eq!(v["hits"], 1, "{v}");
    let e = env.fails(&[
        "search",
        "lava",
        "--from",
        "2026-04-30",
        "--to",
        "2026-04-29",
    ]);
    assert!(e.contains("reversed"), "{e}");
}

#[test]
fn projects_match_in_any_case_and_wildcards_are_literal() {
    let env = synced();
    for p in ["volcano", "VOLCANO", "x/Volc"] {
        let v = env.json(&["search", "lava", "--project", p, "--json"]);
        assert_eq!(v["hits"], 2, "{p}: {v}");
    }
    let v = env.json(&["search", "lava", "--project", "v_lcano", "--json"]);
    assert_eq!(v["hits"], 0, "{v}");
}

#[test]
fn roles_that_nothing_searchable_has_are_refused() {
    let env = synced();
    for role in ["system", "tool"] {
        let e = env.fails(&["search", "lava", "--role", role]);
        assert!(e.contains("user or assistant"), "{role}: {e}");
    }
    let v = env.json(&["search", "lava", "--role", "assistant", "--json"]);
    assert_eq!(v["hits"], 1, "{v}");
    let help = env.ok(&["search", "--help"]);
    assert!(
        !help.contains("system or tool") && help.contains("whole day"),
        "{help}"
    );
}

#[test]
fn mcp_takes_id_prefixes_any_case_projects_and_whole_days() {
    let env = synced();
    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let t = c.ok("pond_get_session", json!({"id": "222222"})).await;
        assert!(t.contains("tokenizer"), "{t}");
        let t = c.ok("pond_get_message", json!({"id": "msgpre-2"})).await;
        assert!(t.contains("1200 degrees"), "{t}");
        let t = c.mistake("pond_get_session", json!({"id": "abcdef"})).await;
        assert!(t.contains(VOLCANO_A) && t.contains(VOLCANO_B), "{t}");
        let t = c
            .ok(
                "pond_search",
                json!({"query": "lava", "session_id": "abcdef12-aa"}),
            )
            .await;
        assert!(t.contains("1200 degrees"), "{t}");
        let t = c
            .ok(
                "pond_search",
                json!({"query": "lava", "project": "volcano",
                                      "from_date": "2026-04-29", "to_date": "2026-04-29"}),
            )
            .await;
        assert!(t.contains("1200 degrees"), "{t}");
        let t = c
            .mistake("pond_search", json!({"query": "lava", "role": "tool"}))
            .await;
        assert!(t.contains("user or assistant"), "{t}");
    });
}

#[test]
fn the_query_language_reaches_the_cli_and_mcp_alike() {
    let env = synced();
    // A phrase keeps its order; the same words apart or reversed do not match it.
    let v = env.json(&["search", "\"volcanic lava\"", "--json"]);
    assert_eq!(v["hits"], 1, "{v}");
    let v = env.json(&["search", "\"lava volcanic\"", "--json"]);
    assert_eq!(v["hits"], 0, "{v}");
    // Exclusion, OR, prefix, inline filters equal to their flags, relative dates.
    // A query may begin with an exclusion (not read as an option).
    let v = env.json(&["search", "-lava volcanic", "--json"]);
    assert_eq!(v["hits"], 1, "{v}");
    let v = env.json(&["search", "volcanic -lava", "--json"]);
    assert_eq!(v["sessions"][0]["session_id"], VOLCANO_B, "{v}");
    assert_eq!(v["hits"], 1, "{v}");
    let v = env.json(&["search", "islands OR basaltic", "--json"]);
    assert_eq!(v["hits"], 2, "{v}");
    let v = env.json(&["search", "isl*", "--json"]);
    assert_eq!(v["hits"], 1, "{v}");
    let inline = env.json(&["search", "volcanic role:user project:volcano", "--json"]);
    let flags = env.json(&[
        "search",
        "volcanic",
        "--role",
        "user",
        "--project",
        "volcano",
        "--json",
    ]);
    assert_eq!(inline["hits"], 2, "{inline}");
    assert_eq!(inline["sessions"], flags["sessions"]);
    let v = env.json(&["search", "volcanic after:2026-04-30", "--json"]);
    assert_eq!(v["hits"], 1, "{v}");
    let v = env.json(&["search", "volcanic", "--since", "1d", "--json"]);
    assert_eq!(v["hits"], 0, "{v}");
    let v = env.json(&[
        "search", "volcanic", "--since", "100y", "--to", "today", "--json",
    ]);
    assert_eq!(v["hits"], 2, "{v}");

    // Forgiving: a stop word is said, a query with no message holding every word is
    // loosened and says so, a misspelling gets a respelling.
    let t = env.ok(&["search", "the"]);
    assert!(t.contains("stop word") && t.contains("No matches"), "{t}");
    let t = env.ok(&["search", "basaltic islands"]);
    assert!(
        t.contains("no message holds all of basaltic, islands"),
        "{t}"
    );
    assert!(t.contains("2 hits"), "{t}");
    let t = env.ok(&["search", "volcanik"]);
    assert!(t.contains("Did you mean: volcanic"), "{t}");
    let err = env.fails(&["search", "\"lava"]);
    assert!(
        err.contains("quote is not closed") && err.contains("exact phrase"),
        "{err}"
    );

    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let t = c
            .ok(
                "pond_search",
                json!({"query": "\"volcanic lava\" project:volcano"}),
            )
            .await;
        assert!(t.contains("1 hits"), "{t}");
        let t = c.ok("pond_search", json!({"query": "basalticc"})).await;
        assert!(t.contains("Did you mean: basaltic"), "{t}");
        let t = c.mistake("pond_search", json!({"query": "lava OR"})).await;
        assert!(t.contains("OR needs a word on each side"), "{t}");
        let t = c
            .mistake(
                "pond_search",
                json!({"query": "lava", "from_date": "last tuesday"}),
            )
            .await;
        assert!(t.contains("from_date") && t.contains("3d"), "{t}");
    });
}
