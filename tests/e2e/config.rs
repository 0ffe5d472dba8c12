//! The config file: precedence flag > env > file > default, sources and exclusions read
//! from it, errors that name the key and the line; `config path`; shell completions.

use serde_json::Value;

use crate::common::{copy_dir, fixtures, Env};

fn write_config(env: &Env, text: &str) -> std::path::PathBuf {
    let p = env.dir.path().join(".config/pond/config.toml");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

fn setting<'a>(shown: &'a Value, key: &str) -> (&'a str, &'a str) {
    let s = &shown[key];
    (s["value"].as_str().unwrap(), s["from"].as_str().unwrap())
}

#[test]
fn flags_beat_variables_beat_the_file_beats_the_default() {
    let env = Env::new();
    let path = write_config(
        &env,
        "# pond\n[cache]\nindex_mib = 64\n\n[workers]\nidle_secs = 7\n\n[mcp]\nauto_sync_mins = 3\n",
    );
    assert_eq!(env.ok(&["config", "path"]).trim(), path.to_str().unwrap());
    let shown = env.json(&["config", "show", "--json"]);
    assert_eq!(setting(&shown, "cache.index_mib"), ("64", "file"));
    assert_eq!(setting(&shown, "workers.idle_secs"), ("7", "file"));
    assert_eq!(setting(&shown, "cache.metadata_mib"), ("32", "default"));
    assert_eq!(setting(&shown, "store").1, "flag");
    // `pond mcp`'s interval from the file (the tests' environment sets it to 0, so unset it).
    let out = env
        .cmd(&["config", "show", "--json"])
        .env_remove("POND_AUTO_SYNC_MINS")
        .output()
        .unwrap();
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(setting(&shown, "mcp.auto_sync_mins"), ("3", "file"));

    let vars = [("POND_INDEX_CACHE_MIB", "48")];
    let shown = env.json_with(&["config", "show", "--json"], &vars);
    assert_eq!(setting(&shown, "cache.index_mib"), ("48", "env"));
    let args = ["--index-cache-mib", "16", "config", "show", "--json"];
    let shown = env.json_with(&args, &vars);
    assert_eq!(setting(&shown, "cache.index_mib"), ("16", "flag"));

    // Another file named by the flag.
    let other = env.dir.path().join("other.toml");
    std::fs::write(&other, "[cache]\nindex_mib = 8\n").unwrap();
    let shown = env.json(&[
        "--config",
        other.to_str().unwrap(),
        "config",
        "show",
        "--json",
    ]);
    assert_eq!(setting(&shown, "cache.index_mib"), ("8", "file"));
    // The text form names the file and where each value came from.
    let text = env.ok(&["config", "show"]);
    assert!(
        text.contains(path.to_str().unwrap()) && text.contains("(file)"),
        "{text}"
    );
}

#[test]
fn a_bad_config_names_the_key_and_the_line() {
    let env = Env::new();
    write_config(&env, "[cache]\nindex_mib = 64\nindex_mb = 3\n");
    let err = env.fails(&["status"]);
    assert!(err.contains("index_mb") && err.contains("line 3"), "{err}");
    write_config(&env, "[workers]\n\nidle_secs = \"soon\"\n");
    let err = env.fails(&["config", "show"]);
    assert!(err.contains("line 3") && err.contains("idle_secs"), "{err}");
    write_config(&env, "[cache\nindex_mib = 1\n");
    let err = env.fails(&["status"]);
    assert!(
        err.contains("line 1") && err.contains("config.toml"),
        "{err}"
    );
    write_config(&env, "[sources.aider]\nenabled = true\n");
    let err = env.fails(&["status"]);
    assert!(
        err.contains("sources.aider") && err.contains("claude-code"),
        "{err}"
    );
}

#[test]
fn sync_reads_the_sources_and_exclusions_of_the_file() {
    let env = Env::new();
    // Claude Code's home moved, Codex's at its default but turned off.
    let claude = env.dir.path().join("elsewhere/claude");
    copy_dir(&fixtures().join("claude"), &claude);
    copy_dir(&fixtures().join("codex"), &env.dir.path().join(".codex"));
    write_config(
        &env,
        &format!(
            "[sources.claude-code]\npath = {:?}\n\n[sources.codex]\nenabled = false\n\n[sync]\nexclude_projects = [\"legacy\"]\n",
            claude.to_str().unwrap()
        ),
    );
    let report = env.json(&["sync", "--json"]);
    assert!(report["messages_added"].as_u64().unwrap() > 0, "{report}");
    let agents = env.sql_json("SELECT DISTINCT source_agent AS a FROM sessions ORDER BY a");
    let agents: Vec<&str> = agents
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["a"].as_str().unwrap())
        .collect();
    assert!(
        agents.iter().all(|a| a.starts_with("claude-code")),
        "{agents:?}"
    );
    let legacy = env.sql_json("SELECT count(*) AS n FROM sessions WHERE project LIKE '%legacy%'");
    assert_eq!(legacy[0]["n"], 0);
    // `--source codex` still reads it when asked by name.
    env.ok(&["sync", "--source", "codex"]);
    let codex = env.sql_json("SELECT count(*) AS n FROM sessions WHERE source_agent = 'codex'");
    assert!(codex[0]["n"].as_i64().unwrap() > 0);
}

#[test]
fn completions_cover_every_command() {
    let env = Env::new();
    for shell in ["bash", "zsh", "fish"] {
        let script = env.ok(&["completions", shell]);
        for word in ["restore", "export", "forget", "sync"] {
            assert!(script.contains(word), "{shell} lacks {word}");
        }
    }
    let version = env.ok(&["--version"]);
    assert!(version.starts_with("pond "), "{version}");
}
