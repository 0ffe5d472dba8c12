//! `pond install` / `pond uninstall` against a temp HOME holding each client's own config
//! (other servers, comments, unknown keys): pond added, everything else byte-identical,
//! a backup of the file changed, a second install changes nothing, uninstall gives the
//! original back.

use serde_json::Value;

use crate::common::{pond_bin, Env};

/// Each client's file under HOME and what a user already has in it.
const CLIENTS: [(&str, &str, &str); 8] = [
    (
        "claude-code",
        ".claude.json",
        "{\n  \"numStartups\": 42,\n  \"mcpServers\": {\n    \"github\": {\n      \"type\": \"stdio\",\n      \"command\": \"gh-mcp\",\n      \"args\": []\n    }\n  },\n  \"projects\": {}\n}\n",
    ),
    (
        "codex",
        ".codex/config.toml",
        "# my codex\nmodel = \"gpt-5\"  # the best\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\nargs = [\"--stdio\"]\n\n[profiles.fast]\nmodel = \"o4-mini\"\n",
    ),
    (
        "gemini",
        ".gemini/settings.json",
        "{\n  \"theme\": \"GitHub\",\n  \"selectedAuthType\": \"oauth-personal\"\n}\n",
    ),
    ("cursor", ".cursor/mcp.json", "{\n  \"mcpServers\": {}\n}\n"),
    (
        "copilot",
        ".copilot/mcp-config.json",
        "{\n  \"mcpServers\": {\n    \"playwright\": { \"type\": \"local\", \"command\": \"npx\", \"args\": [\"@playwright/mcp\"], \"tools\": [\"*\"] }\n  }\n}\n",
    ),
    (
        "vscode",
        ".config/Code/User/mcp.json",
        "{\n\t// servers for every workspace\n\t\"servers\": {\n\t\t\"memory\": {\n\t\t\t\"type\": \"stdio\",\n\t\t\t\"command\": \"mem\",\n\t\t},\n\t},\n\t\"inputs\": []\n}\n",
    ),
    (
        "opencode",
        ".config/opencode/opencode.json",
        "{\n  \"$schema\": \"https://opencode.ai/config.json\",\n  \"theme\": \"opencode\"\n}\n",
    ),
    (
        "claude-desktop",
        ".config/Claude/claude_desktop_config.json",
        "{\"globalShortcut\":\"\",\"mcpServers\":{\"fs\":{\"command\":\"fs-mcp\",\"args\":[\"/\"]}}}",
    ),
];

fn install(env: &Env, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    // No `claude` on this PATH: Claude Code's config file is edited directly.
    env.json_with(&all, &[("PATH", "/usr/bin:/bin")])
}

fn backups(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".pond-backup-"))
        .collect()
}

/// JSONC as JSON: comments and trailing commas dropped (enough for these fixtures).
fn jsonc(text: &str) -> Value {
    let no_comments: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut s = no_comments;
    for (a, b) in [
        (",\n\t\t}", "\n\t\t}"),
        (",\n\t}", "\n\t}"),
        (",\n}", "\n}"),
    ] {
        s = s.replace(a, b);
    }
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("{e}: {s}"))
}

#[test]
fn every_client_gets_pond_and_keeps_everything_else() {
    let env = Env::new();
    let home = env.dir.path();
    let exe = std::fs::canonicalize(pond_bin()).unwrap();
    let exe = exe.to_str().unwrap();
    for (client, rel, original) in CLIENTS {
        let path = home.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, original).unwrap();

        // A dry run and --print change nothing.
        let dry = install(&env, &["install", client, "--dry-run"]);
        assert_eq!(
            dry["changes"][0]["action"], "would be added",
            "{client}: {dry}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
        let printed = env.ok_with(
            &["install", client, "--print"],
            &[("PATH", "/usr/bin:/bin")],
        );
        assert!(printed.contains(exe), "{client}: {printed}");

        let r = install(&env, &["install", client]);
        assert_eq!(r["changes"][0]["action"], "added", "{client}: {r}");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(exe), "{client}: {text}");
        // The original, as it was, in the backup.
        let b = backups(path.parent().unwrap());
        assert_eq!(b.len(), 1, "{client}: {b:?}");
        let backup = std::fs::read_to_string(path.parent().unwrap().join(&b[0])).unwrap();
        assert_eq!(backup, original);
        // The client reads pond's entry, and everything that was there.
        if client == "codex" {
            assert!(
                text.starts_with("# my codex\nmodel = \"gpt-5\"  # the best\n"),
                "{text}"
            );
            assert!(
                text.contains("[mcp_servers.docs]\ncommand = \"docs-mcp\""),
                "{text}"
            );
            assert!(text.contains("[mcp_servers.pond]"), "{text}");
            assert!(text.contains("args = [\"mcp\"]"), "{text}");
            assert!(text.contains("startup_timeout_sec"), "{text}");
        } else {
            let v = jsonc(&text);
            let before = jsonc(original);
            let (servers, entry) = match client {
                "vscode" => ("servers", &v["servers"]["pond"]),
                "opencode" => ("mcp", &v["mcp"]["pond"]),
                _ => ("mcpServers", &v["mcpServers"]["pond"]),
            };
            if client == "opencode" {
                assert_eq!(entry["command"], serde_json::json!([exe, "mcp"]), "{text}");
            } else {
                assert_eq!(entry["command"], exe, "{client}: {text}");
                assert_eq!(entry["args"], serde_json::json!(["mcp"]), "{client}");
            }
            let mut without = v.clone();
            without[servers].as_object_mut().unwrap().remove("pond");
            if before.get(servers).is_none() {
                without.as_object_mut().unwrap().remove(servers);
            }
            assert_eq!(without, before, "{client}: something else changed");
        }
        if client == "vscode" {
            assert!(text.contains("// servers for every workspace"), "{text}");
        }

        // Twice: nothing changes, no second backup.
        let r = install(&env, &["install", client]);
        assert_eq!(r["changes"][0]["action"], "unchanged", "{client}: {r}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        assert_eq!(backups(path.parent().unwrap()).len(), 1);

        // Uninstall gives the original back, byte for byte.
        let r = install(&env, &["uninstall", client]);
        assert_eq!(r["changes"][0]["action"], "removed", "{client}: {r}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            original,
            "{client}"
        );
        let r = install(&env, &["uninstall", client]);
        assert_eq!(r["changes"][0]["action"], "unchanged", "{client}: {r}");
    }
}

#[test]
fn the_skill_goes_where_agents_read_it_and_a_broken_file_is_left_alone() {
    let env = Env::new();
    let home = env.dir.path();
    let skill = env.ok(&["skill"]);
    assert!(skill.starts_with("---\nname: pond\n"), "{skill}");
    assert!(skill.contains("pond_search"));

    // No config file yet: created, with the skill beside the client.
    install(&env, &["install", "claude-code"]);
    let claude = std::fs::read_to_string(home.join(".claude.json")).unwrap();
    let v: Value = serde_json::from_str(&claude).unwrap();
    assert_eq!(v["mcpServers"]["pond"]["type"], "stdio");
    let written = std::fs::read_to_string(home.join(".claude/skills/pond/SKILL.md")).unwrap();
    assert_eq!(written, skill);
    install(&env, &["install", "codex"]);
    assert!(home.join(".agents/skills/pond/SKILL.md").is_file());
    install(&env, &["uninstall", "claude-code"]);
    assert!(!home.join(".claude/skills/pond/SKILL.md").exists());

    // A file that is not JSON is named, and not touched.
    let cursor = home.join(".cursor/mcp.json");
    std::fs::create_dir_all(cursor.parent().unwrap()).unwrap();
    std::fs::write(&cursor, "{ \"mcpServers\": ").unwrap();
    let err = env.fails_with(&["install", "cursor"], &[("PATH", "/usr/bin:/bin")]);
    assert!(err.contains("mcp.json") && err.contains("--print"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&cursor).unwrap(),
        "{ \"mcpServers\": "
    );
    let err = env.fails(&["install", "notepad"]);
    assert!(err.contains("claude-code"), "{err}");
}

#[test]
fn init_sets_up_the_clients_found_keeps_claude_sessions_and_syncs() {
    let env = Env::new();
    let home = env.dir.path();
    crate::common::copy_dir(
        &crate::common::fixtures().join("claude"),
        &home.join(".claude"),
    );
    crate::common::copy_dir(
        &crate::common::fixtures().join("codex"),
        &home.join(".codex"),
    );
    let settings = home.join(".claude/settings.json");
    std::fs::write(&settings, "{\n  \"model\": \"opus\"\n}\n").unwrap();
    let vars = [("PATH", "/usr/bin:/bin")];

    let err = env.fails_with(&["init"], &vars);
    assert!(err.contains("--yes"), "{err}");
    let dry = env.ok_with(&["init", "--dry-run"], &vars);
    assert!(dry.contains("found: claude-code, codex"), "{dry}");
    assert!(dry.contains("30 days"), "{dry}");
    assert!(!home.join(".claude.json").exists(), "a dry run wrote");
    assert!(!home.join(".config/pond/config.toml").exists());
    assert!(!env.store().exists(), "a dry run opened the store");
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        "{\n  \"model\": \"opus\"\n}\n"
    );

    let out = env.ok_with(&["init", "--yes"], &vars);
    let claude: Value =
        serde_json::from_str(&std::fs::read_to_string(home.join(".claude.json")).unwrap()).unwrap();
    assert!(claude["mcpServers"]["pond"].is_object(), "{out}");
    let codex = std::fs::read_to_string(home.join(".codex/config.toml")).unwrap();
    assert!(codex.contains("[mcp_servers.pond]"), "{codex}");
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(s["cleanupPeriodDays"], 3650);
    assert_eq!(s["model"], "opus");
    assert!(home.join(".config/pond/config.toml").is_file());
    assert!(env.count("sessions") > 0, "{out}");
    env.ok(&["config", "show"]);

    // Again: nothing left to change.
    let again = env.ok_with(&["init", "--yes"], &vars);
    assert!(
        !again.contains(": added") && !again.contains(": updated"),
        "{again}"
    );
    assert!(again.contains("kept as it is"), "{again}");
}

const NO_CLAUDE: [(&str, &str); 1] = [("PATH", "/usr/bin:/bin")];

#[test]
fn uninstall_keeps_the_skill_a_registered_client_still_reads() {
    let env = Env::new();
    let home = env.dir.path();
    let shared = home.join(".agents/skills/pond/SKILL.md");
    install(&env, &["install", "codex"]);
    install(&env, &["install", "gemini"]);
    let r = install(&env, &["uninstall", "gemini"]);
    assert!(shared.is_file(), "codex still reads it: {r}");
    assert_eq!(
        r["changes"][1]["action"], "kept (codex reads it too)",
        "{r}"
    );
    let r = install(&env, &["uninstall", "codex"]);
    assert!(!shared.exists(), "{r}");
}

#[test]
fn a_symlinked_config_is_changed_where_it_points() {
    let env = Env::new();
    let home = env.dir.path();
    let dotfiles = home.join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    let target = dotfiles.join("claude.json");
    std::fs::write(&target, "{\"a\": 1}").unwrap();
    let link = home.join(".claude.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();

    install(&env, &["install", "claude-code"]);
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&target).unwrap()).unwrap();
    assert!(v["mcpServers"]["pond"].is_object(), "{v}");
    assert_eq!(backups(&dotfiles).len(), 1, "the backup is beside the file");
    install(&env, &["uninstall", "claude-code"]);
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "{\"a\": 1}");

    // A link to nothing is named, and left as it is.
    std::fs::remove_file(&target).unwrap();
    let err = env.fails_with(&["install", "claude-code"], &NO_CLAUDE);
    assert!(err.contains("symbolic link"), "{err}");
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert!(!target.exists());
}

#[test]
fn comments_beside_pond_stay_when_it_goes() {
    let env = Env::new();
    let home = env.dir.path();
    let cursor = home.join(".cursor/mcp.json");
    std::fs::create_dir_all(cursor.parent().unwrap()).unwrap();
    let jsonc = "{\n  \"mcpServers\": {\n    \"other\": {\"command\": \"o\"}, // keep me: other is mine\n    // pond below was added by hand\n    \"pond\": {\"command\": \"p\"}\n  }\n}\n";
    std::fs::write(&cursor, jsonc).unwrap();
    install(&env, &["uninstall", "cursor"]);
    assert_eq!(
        std::fs::read_to_string(&cursor).unwrap(),
        "{\n  \"mcpServers\": {\n    \"other\": {\"command\": \"o\"} // keep me: other is mine\n    // pond below was added by hand\n  }\n}\n"
    );
    let first = "{\n  \"mcpServers\": {\n    \"pond\": {\"command\": \"p\"},\n    // the next one is important\n    \"other\": {\"command\": \"o\"}\n  }\n}\n";
    std::fs::write(&cursor, first).unwrap();
    install(&env, &["uninstall", "cursor"]);
    assert_eq!(
        std::fs::read_to_string(&cursor).unwrap(),
        "{\n  \"mcpServers\": {\n    // the next one is important\n    \"other\": {\"command\": \"o\"}\n  }\n}\n"
    );

    let codex = home.join(".codex/config.toml");
    std::fs::create_dir_all(codex.parent().unwrap()).unwrap();
    std::fs::write(
        &codex,
        "# my config\n[mcp_servers.pond] # pond!\ncommand = \"p\"\n",
    )
    .unwrap();
    install(&env, &["uninstall", "codex"]);
    assert_eq!(std::fs::read_to_string(&codex).unwrap(), "# my config\n");
    std::fs::write(
        &codex,
        "# my config\n[mcp_servers.pond]\ncommand = \"p\"\n\n# fast\n[profiles.fast]\nmodel = \"m\"\n",
    )
    .unwrap();
    install(&env, &["uninstall", "codex"]);
    assert_eq!(
        std::fs::read_to_string(&codex).unwrap(),
        "# my config\n\n# fast\n[profiles.fast]\nmodel = \"m\"\n"
    );
}

#[test]
fn line_ends_and_a_byte_order_mark_are_kept() {
    let env = Env::new();
    let home = env.dir.path();
    for (client, rel, original) in [
        (
            "gemini",
            ".gemini/settings.json",
            "\u{feff}{\r\n  \"theme\": \"GitHub\"\r\n}\r\n",
        ),
        (
            "codex",
            ".codex/config.toml",
            "\u{feff}# mine\r\nmodel = \"gpt-5\"\r\n",
        ),
    ] {
        let path = home.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, original).unwrap();
        let r = install(&env, &["install", client]);
        assert_eq!(r["changes"][0]["action"], "added", "{client}: {r}");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with('\u{feff}'), "{client}: {text:?}");
        assert_eq!(
            text.matches('\n').count(),
            text.matches("\r\n").count(),
            "{client}: {text:?}"
        );
        assert!(text.contains("pond"), "{client}: {text:?}");
        install(&env, &["uninstall", client]);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            original,
            "{client}"
        );
    }
}

#[test]
fn a_repeated_key_is_edited_where_the_client_reads_it() {
    let env = Env::new();
    let path = env.dir.path().join(".claude.json");
    let exe = std::fs::canonicalize(pond_bin()).unwrap();
    // Two mcpServers: JSON.parse keeps the second.
    std::fs::write(
        &path,
        "{\"mcpServers\": {\"a\": {}}, \"mcpServers\": {\"b\": {}}}",
    )
    .unwrap();
    let r = install(&env, &["install", "claude-code"]);
    assert_eq!(r["changes"][0]["action"], "added", "{r}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v["mcpServers"]["pond"]["command"], exe.to_str().unwrap());
    assert!(v["mcpServers"]["b"].is_object());
    install(&env, &["uninstall", "claude-code"]);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{\"mcpServers\": {\"a\": {}}, \"mcpServers\": {\"b\": {}}}"
    );

    // Two pond members: the second is the one read, so the one updated; both go.
    std::fs::write(
        &path,
        "{\"mcpServers\": {\"pond\": {\"command\": \"old1\"}, \"pond\": {\"command\": \"old2\"}}}",
    )
    .unwrap();
    let r = install(&env, &["install", "claude-code"]);
    assert_eq!(r["changes"][0]["action"], "updated", "{r}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v["mcpServers"]["pond"]["command"], exe.to_str().unwrap());
    let r = install(&env, &["uninstall", "claude-code"]);
    assert_eq!(r["changes"][0]["action"], "removed", "{r}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("pond"), "{text}");
}

#[test]
fn a_read_only_config_is_refused_and_backups_are_pruned() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let path = env.dir.path().join(".cursor/mcp.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "{}\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let err = env.fails_with(&["install", "cursor"], &NO_CLAUDE);
    assert!(err.contains("read-only") && err.contains("chmod"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}\n");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o444);
    assert!(backups(path.parent().unwrap()).is_empty());

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    for _ in 0..5 {
        install(&env, &["install", "cursor"]);
        install(&env, &["uninstall", "cursor"]);
    }
    assert_eq!(backups(path.parent().unwrap()).len(), 3);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}\n");
}

#[test]
fn a_failed_claude_mcp_add_leaves_the_entry_that_was_there() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let home = env.dir.path();
    let config = home.join(".claude.json");
    let original =
        "{\"mcpServers\": {\"pond\": {\"command\": \"/old/pond\", \"args\": [\"mcp\"]}}}";
    std::fs::write(&config, original).unwrap();
    // A `claude` whose remove works and whose add fails.
    let bin = home.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let claude = bin.join("claude");
    std::fs::write(
        &claude,
        "#!/bin/sh\ncase \"$2\" in\n  remove) echo '{\"mcpServers\": {}}' > \"$HOME/.claude.json\" ;;\n  add) echo 'add: boom' >&2; exit 1 ;;\nesac\n",
    )
    .unwrap();
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let err = env.fails_with(&["install", "claude-code"], &[("PATH", &path)]);
    assert!(
        err.contains("boom") && err.contains("back as it was"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), original);

    // A `claude` that cannot be run is no command: the file is edited instead.
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o644)).unwrap();
    let r = env.json_with(&["install", "claude-code", "--json"], &[("PATH", &path)]);
    assert_eq!(r["changes"][0]["path"], config.display().to_string(), "{r}");
    assert_eq!(r["changes"][0]["action"], "updated", "{r}");
}
