//! `pond install <client>` / `pond uninstall <client>`: `pond mcp` registered where each
//! client reads its MCP servers, and the agent skill that says when to use it.
//!
//! Only pond's own entry is touched: a JSON file is edited in place ([`json`]: comments,
//! order and formatting survive), Codex's TOML with `toml_edit`. Every file changed gets a
//! backup beside it first (`<name>.pond-backup-<time>`); a second install that would change
//! nothing writes nothing.

pub mod json;

use std::path::{Path, PathBuf};

use serde::Serialize;

/// A client pond can register with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    ClaudeCode,
    Codex,
    Gemini,
    Cursor,
    Copilot,
    VsCode,
    OpenCode,
    ClaudeDesktop,
}

impl Client {
    pub const ALL: [Client; 8] = [
        Client::ClaudeCode,
        Client::Codex,
        Client::Gemini,
        Client::Cursor,
        Client::Copilot,
        Client::VsCode,
        Client::OpenCode,
        Client::ClaudeDesktop,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
            Client::Cursor => "cursor",
            Client::Copilot => "copilot",
            Client::VsCode => "vscode",
            Client::OpenCode => "opencode",
            Client::ClaudeDesktop => "claude-desktop",
        }
    }

    pub fn named(name: &str) -> Option<Client> {
        Client::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The file this client reads its MCP servers from (user scope).
    pub fn config_file(self, home: &Path) -> PathBuf {
        let env_dir = |var: &str, default: &str| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join(default))
        };
        let xdg = env_dir("XDG_CONFIG_HOME", ".config");
        let mac = cfg!(target_os = "macos");
        match self {
            // User-scope servers live in ~/.claude.json (what `claude mcp add -s user` edits).
            Client::ClaudeCode => match std::env::var_os("CLAUDE_CONFIG_DIR") {
                Some(d) => PathBuf::from(d).join(".claude.json"),
                None => home.join(".claude.json"),
            },
            Client::Codex => env_dir("CODEX_HOME", ".codex").join("config.toml"),
            Client::Gemini => home.join(".gemini/settings.json"),
            Client::Cursor => home.join(".cursor/mcp.json"),
            Client::Copilot => env_dir("COPILOT_HOME", ".copilot").join("mcp-config.json"),
            Client::VsCode if mac => home.join("Library/Application Support/Code/User/mcp.json"),
            Client::VsCode => xdg.join("Code/User/mcp.json"),
            Client::OpenCode => xdg.join("opencode/opencode.json"),
            Client::ClaudeDesktop if mac => {
                home.join("Library/Application Support/Claude/claude_desktop_config.json")
            }
            Client::ClaudeDesktop => xdg.join("Claude/claude_desktop_config.json"),
        }
    }

    /// Whether the client looks installed: its home folder exists.
    pub fn detected(self, home: &Path) -> bool {
        let file = self.config_file(home);
        match self {
            Client::ClaudeCode => file.exists() || home.join(".claude").is_dir(),
            _ => file.parent().is_some_and(Path::is_dir),
        }
    }

    /// Where the member for pond sits in the client's JSON file.
    fn json_path(self) -> [&'static str; 2] {
        match self {
            Client::VsCode => ["servers", "pond"],
            Client::OpenCode => ["mcp", "pond"],
            _ => ["mcpServers", "pond"],
        }
    }

    /// pond's entry in this client's terms.
    fn json_entry(self, exe: &str) -> serde_json::Value {
        use serde_json::json;
        match self {
            Client::ClaudeCode => {
                json!({"type": "stdio", "command": exe, "args": ["mcp"], "env": {}})
            }
            Client::VsCode => json!({"type": "stdio", "command": exe, "args": ["mcp"]}),
            Client::OpenCode => json!({"type": "local", "command": [exe, "mcp"], "enabled": true}),
            Client::Copilot => {
                json!({"type": "local", "command": exe, "args": ["mcp"], "tools": ["*"]})
            }
            // Gemini gives a server 10 minutes by default; Cursor and Claude Desktop take the
            // plain form.
            _ => json!({"command": exe, "args": ["mcp"]}),
        }
    }

    /// Where the agent skill goes for this client, if it reads skills from a folder.
    pub fn skill_file(self, home: &Path) -> Option<PathBuf> {
        match self {
            Client::ClaudeCode => Some(home.join(".claude/skills/pond/SKILL.md")),
            Client::Codex | Client::OpenCode | Client::Copilot | Client::Gemini => {
                Some(home.join(".agents/skills/pond/SKILL.md"))
            }
            _ => None,
        }
    }
}

/// The agent skill: when and how to use pond's tools.
pub const SKILL: &str = include_str!("SKILL.md");

/// What an install or uninstall did to one file.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    pub path: String,
    /// `added`, `updated`, `removed`, `unchanged`, `absent`, or `would …` in a dry run.
    pub action: String,
    pub backup: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Installed {
    pub client: &'static str,
    pub changes: Vec<Change>,
}

/// The text of `client`'s config file with pond registered (`exe mcp`).
pub fn registered(client: Client, text: &str, exe: &str) -> Result<String, String> {
    if client == Client::Codex {
        let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| format!("{e}"))?;
        let servers = doc
            .entry("mcp_servers")
            .or_insert_with(|| {
                let mut t = toml_edit::Table::new();
                t.set_implicit(true);
                toml_edit::Item::Table(t)
            })
            .as_table_mut()
            .ok_or("mcp_servers is not a table")?;
        let mut pond = toml_edit::Table::new();
        pond["command"] = toml_edit::value(exe);
        let mut args = toml_edit::Array::new();
        args.push("mcp");
        pond["args"] = toml_edit::value(args);
        // The first answer can take a few seconds on a cold store; Codex allows 10.
        pond["startup_timeout_sec"] = toml_edit::value(30);
        match servers.get_mut("pond").and_then(|i| i.as_table_mut()) {
            Some(existing) => {
                for (k, v) in pond.iter() {
                    if existing.get(k).map(|e| e.to_string()) != Some(v.to_string()) {
                        existing[k] = v.clone();
                    }
                }
            }
            None => {
                servers.insert("pond", toml_edit::Item::Table(pond));
            }
        }
        return Ok(doc.to_string());
    }
    json::set(text, &client.json_path(), &client.json_entry(exe))
}

/// The text of `client`'s config file without pond, and whether pond was there.
pub fn unregistered(client: Client, text: &str) -> Result<(String, bool), String> {
    if client == Client::Codex {
        let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| format!("{e}"))?;
        let was = doc
            .get_mut("mcp_servers")
            .and_then(|s| s.as_table_mut())
            .and_then(|s| s.remove("pond"))
            .is_some();
        return Ok((doc.to_string(), was));
    }
    json::remove(text, &client.json_path())
}

/// Write `text` to `path`, after a backup of `old` (the file as it was, if there was one)
/// beside it; the backup's path.
fn write_with_backup(
    path: &Path,
    old: Option<&str>,
    text: &str,
) -> std::io::Result<Option<String>> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let backup = match old {
        Some(old) => {
            let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3f");
            let b = path.with_file_name(format!("{name}.pond-backup-{stamp}"));
            std::fs::write(&b, old)?;
            Some(b.display().to_string())
        }
        None => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            None
        }
    };
    // Beside it, then renamed over it: a client never reads half a file.
    let tmp = path.with_file_name(format!(".{name}.pond-tmp"));
    std::fs::write(&tmp, text)?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&tmp, meta.permissions());
    }
    std::fs::rename(&tmp, path)?;
    Ok(backup)
}

/// The newest backup pond made of `path`, if any.
fn newest_backup(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let prefix = format!("{name}.pond-backup-");
    let mut found: Vec<PathBuf> = std::fs::read_dir(path.parent()?)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
        })
        .collect();
    found.sort();
    std::fs::read_to_string(found.last()?).ok()
}

fn read_opt(path: &Path) -> Result<Option<String>, String> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Register pond with `client` (and install the skill where the client reads skills).
/// `dry_run` says what would change.
pub fn install(client: Client, home: &Path, exe: &str, dry_run: bool) -> Result<Installed, String> {
    let path = client.config_file(home);
    let old = read_opt(&path)?;
    let new = registered(client, old.as_deref().unwrap_or(""), exe).map_err(|e| {
        format!(
            "{}: {e}; fix the file, or add pond by hand (`pond install {} --print`)",
            path.display(),
            client.name()
        )
    })?;
    let action = match (&old, old.as_deref() == Some(new.as_str())) {
        (_, true) => "unchanged",
        (Some(o), false) if unregistered(client, o).map(|(_, was)| was).unwrap_or(false) => {
            "updated"
        }
        _ => "added",
    };
    let mut changes = vec![apply(&path, old.as_deref(), &new, action, dry_run)?];
    changes.extend(skill(client, home, dry_run, true)?);
    Ok(Installed {
        client: client.name(),
        changes,
    })
}

/// Remove pond from `client`'s config (the skill too). The rest of the file stays as it is.
pub fn uninstall(client: Client, home: &Path, dry_run: bool) -> Result<Installed, String> {
    let path = client.config_file(home);
    let mut changes = Vec::new();
    match read_opt(&path)? {
        None => changes.push(Change {
            path: path.display().to_string(),
            action: "absent".into(),
            backup: None,
        }),
        Some(old) => {
            let (mut new, was) =
                unregistered(client, &old).map_err(|e| format!("{}: {e}", path.display()))?;
            // The servers object pond's install created goes too (the file before pond had
            // none), so an install and an uninstall leave the file as it was.
            if client != Client::Codex && was {
                let container = &client.json_path()[..1];
                let empty = json::get(&new, container)?
                    .is_some_and(|v| v.chars().all(|c| c == '{' || c == '}' || c.is_whitespace()));
                let before = newest_backup(&path);
                let created = before
                    .as_deref()
                    .is_none_or(|b| json::get(b, container).ok().flatten().is_none());
                if empty && created {
                    new = json::remove(&new, container)?.0;
                }
            }
            let action = if was { "removed" } else { "unchanged" };
            changes.push(apply(&path, Some(&old), &new, action, dry_run)?);
        }
    }
    changes.extend(skill(client, home, dry_run, false)?);
    Ok(Installed {
        client: client.name(),
        changes,
    })
}

/// Install (`add`) or remove the agent skill where `client` reads skills. A skill file
/// that is not pond's (edited by the user) is never removed.
pub fn skill(
    client: Client,
    home: &Path,
    dry_run: bool,
    add: bool,
) -> Result<Option<Change>, String> {
    let Some(path) = client.skill_file(home) else {
        return Ok(None);
    };
    let old = read_opt(&path)?;
    if add {
        let action = match old.as_deref() {
            Some(s) if s == SKILL => "unchanged",
            Some(_) => "updated",
            None => "added",
        };
        return apply(&path, old.as_deref(), SKILL, action, dry_run).map(Some);
    }
    if old.as_deref() != Some(SKILL) {
        return Ok(None);
    }
    if !dry_run {
        std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if let Some(dir) = path.parent() {
            let _ = std::fs::remove_dir(dir);
        }
    }
    Ok(Some(Change {
        path: path.display().to_string(),
        action: if dry_run {
            "would be removed"
        } else {
            "removed"
        }
        .into(),
        backup: None,
    }))
}

fn apply(
    path: &Path,
    old: Option<&str>,
    new: &str,
    action: &str,
    dry_run: bool,
) -> Result<Change, String> {
    let mut backup = None;
    if !dry_run && action != "unchanged" {
        backup = write_with_backup(path, old, new)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(Change {
        path: path.display().to_string(),
        action: if dry_run && action != "unchanged" {
            format!("would be {action}")
        } else {
            action.to_owned()
        },
        backup,
    })
}

/// The entry to paste by hand (`pond install CLIENT --print`): the file and what goes in it.
pub fn snippet(client: Client, home: &Path, exe: &str) -> String {
    let path = client.config_file(home);
    let body = registered(client, "", exe).unwrap_or_default();
    format!("# {}\n{body}", path.display())
}

/// Claude Code's user settings file.
pub fn claude_settings(home: &Path) -> PathBuf {
    std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".claude"))
        .join("settings.json")
}

/// Claude Code deletes sessions older than this many days (unset: 30).
pub const CLAUDE_DEFAULT_CLEANUP_DAYS: i64 = 30;

/// Claude Code's `cleanupPeriodDays`, if set.
pub fn cleanup_period_days(home: &Path) -> Result<Option<i64>, String> {
    let path = claude_settings(home);
    let text = read_opt(&path)?.unwrap_or_default();
    let value =
        json::get(&text, &["cleanupPeriodDays"]).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(value.and_then(|v| v.trim().parse().ok()))
}

/// Set Claude Code's `cleanupPeriodDays`, every other setting kept (with a backup).
pub fn set_cleanup_period_days(home: &Path, days: i64, dry_run: bool) -> Result<Change, String> {
    let path = claude_settings(home);
    let old = read_opt(&path)?;
    let new = json::set(
        old.as_deref().unwrap_or(""),
        &["cleanupPeriodDays"],
        &days.into(),
    )
    .map_err(|e| format!("{}: {e}", path.display()))?;
    let action = match old.as_deref() {
        Some(o) if o == new => "unchanged",
        Some(_) => "updated",
        None => "added",
    };
    apply(&path, old.as_deref(), &new, action, dry_run)
}
