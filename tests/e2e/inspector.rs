//! A third-party MCP client: the MCP Inspector's CLI (`npx @modelcontextprotocol/inspector
//! --cli`) lists pond's tools and calls `pond_search`. Skipped, with a message, where node
//! is absent or the package cannot be fetched.

use std::ffi::OsStr;
use std::process::Command;

use serde_json::Value;

use crate::common::{pond_bin, Env};

const INSPECTOR: &str = "@modelcontextprotocol/inspector";

/// `npx … --cli pond --store STORE mcp …` with `args`; `None` when the inspector cannot run.
fn inspector(env: &Env, args: &[&str]) -> Option<Value> {
    let store = env.store();
    let target = [pond_bin().as_ref(), "--store".as_ref(), store.as_os_str()]
        .into_iter()
        .chain(["mcp", "--standalone", "--auto-sync-mins", "0"].map(OsStr::new));
    run(target, args)
}

/// `npx … --cli TARGET… ARGS…` (the target: a command, or a URL and its transport); `None`
/// when the inspector cannot run.
pub fn run<'a>(target: impl IntoIterator<Item = &'a OsStr>, args: &[&str]) -> Option<Value> {
    let out = Command::new("npx")
        .args(["-y", INSPECTOR, "--cli"])
        .args(target)
        .args(args)
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            eprintln!("skipped: npx cannot run ({e}); install node to run the MCP Inspector test");
            return None;
        }
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && stderr.contains("npm ") && stderr.contains("ERR") {
        eprintln!("skipped: npx could not fetch {INSPECTOR}: {stderr}");
        return None;
    }
    assert!(out.status.success(), "inspector {args:?} failed: {stderr}");
    Some(serde_json::from_slice(&out.stdout).expect("the inspector prints JSON"))
}

#[test]
fn the_mcp_inspector_lists_the_tools_and_searches() {
    let env = Env::new();
    env.sync(&env.sources());
    let Some(tools) = inspector(&env, &["--method", "tools/list"]) else {
        return;
    };
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for want in [
        "pond_search",
        "pond_get_session",
        "pond_get_message",
        "pond_sql",
    ] {
        assert!(names.contains(&want), "{names:?}");
    }
    found_the_tokenizer_session(&inspector(&env, &SEARCH_TOKENIZER).unwrap());
    // A caller's mistake is a tool error with a hint, not a protocol error.
    let bad = [
        "--method",
        "tools/call",
        "--tool-name",
        "pond_search",
        "--tool-arg",
        "query=x",
        "--tool-arg",
        "mode=telepathy",
    ];
    let answer = inspector(&env, &bad).unwrap();
    assert_eq!(answer["isError"], true, "{answer}");
}

/// The inspector's arguments to search the fixtures for "tokenizer".
pub const SEARCH_TOKENIZER: [&str; 6] = [
    "--method",
    "tools/call",
    "--tool-name",
    "pond_search",
    "--tool-arg",
    "query=tokenizer",
];

/// A search for "tokenizer" over the fixtures found its session.
pub fn found_the_tokenizer_session(found: &Value) {
    assert_eq!(found["isError"], false, "{found}");
    let text = found["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("22222222-2222-4222-8222-222222222222"),
        "{text}"
    );
}
