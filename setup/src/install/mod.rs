//! `pond install <client>` / `pond uninstall <client>`: `pond mcp` registered where each
//! client reads its MCP servers, and the agent skill that says when to use it.
//!
//! Only pond's own entry is touched: a JSON file is edited in place ([`json`]: comments,
//! order and formatting survive; where a key repeats, the last one, which the clients read),
//! Codex's TOML with `toml_edit` (a comment above pond's table stays when the table goes).
//! Line ends (`\r\n`) and a byte-order mark stay as they were. A config that is a symbolic
//! link is changed where it points (the link stays a link); a read-only one is refused. Every
//! file changed gets a backup beside it first (`<name>.pond-backup-<time>`, the newest
//! [`BACKUPS_KEPT`] kept); a second install that would change nothing writes nothing. The
//! skill file Codex, Gemini, OpenCode and Copilot share stays while one of them is
//! registered.

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
        return toml_edited(text, |doc| {
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
            Ok(())
        })
        .map(|(text, ())| text);
    }
    json::set(text, &client.json_path(), &client.json_entry(exe))
}

/// The text of `client`'s config file without pond, and whether pond was there.
pub fn unregistered(client: Client, text: &str) -> Result<(String, bool), String> {
    if client == Client::Codex {
        return toml_edited(text, |doc| {
            let Some(servers) = doc.get_mut("mcp_servers").and_then(|s| s.as_table_mut()) else {
                return Ok(false);
            };
            let Some(gone) = servers.remove("pond") else {
                return Ok(false);
            };
            // The comments above pond's header are the user's (pond writes none): they stay,
            // above the table that came next, or at the end.
            let Some(table) = gone.as_table() else {
                return Ok(true);
            };
            let above = table
                .decor()
                .prefix()
                .and_then(|p| p.as_str())
                .unwrap_or("");
            if above.contains('#') {
                let above = above.to_owned();
                let next = table.position().and_then(|at| next_table_after(doc, at));
                match next {
                    Some(at) => each_table(doc.as_table_mut(), &mut |t| {
                        if t.position() == Some(at) {
                            let was = t.decor().prefix().and_then(|p| p.as_str()).unwrap_or("");
                            let joined = format!("{above}{was}");
                            t.decor_mut().set_prefix(joined);
                        }
                    }),
                    None => {
                        let trailing = doc.trailing().as_str().unwrap_or("").to_owned();
                        doc.set_trailing(format!("{above}{trailing}"));
                    }
                }
            }
            Ok(true)
        });
    }
    json::remove(text, &client.json_path())
}

/// Edit a TOML file's text with `edit`, its line ends (`\r\n` throughout) and byte-order mark
/// kept: `toml_edit` writes `\n` and reads no mark.
fn toml_edited<R>(
    text: &str,
    edit: impl FnOnce(&mut toml_edit::DocumentMut) -> Result<R, String>,
) -> Result<(String, R), String> {
    let (bom, body) = match text.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", text),
    };
    let crlf = body.contains("\r\n") && body.matches('\n').count() == body.matches("\r\n").count();
    let body = if crlf {
        body.replace("\r\n", "\n")
    } else {
        body.to_owned()
    };
    let mut doc: toml_edit::DocumentMut = body.parse().map_err(|e| format!("{e}"))?;
    let r = edit(&mut doc)?;
    let mut out = doc.to_string();
    if crlf {
        out = out.replace('\n', "\r\n");
    }
    Ok((format!("{bom}{out}"), r))
}

/// Call `f` on every table under `t` (array-of-tables entries too).
fn each_table(t: &mut toml_edit::Table, f: &mut dyn FnMut(&mut toml_edit::Table)) {
    for (_, item) in t.iter_mut() {
        match item {
            toml_edit::Item::Table(sub) => {
                f(sub);
                each_table(sub, f);
            }
            toml_edit::Item::ArrayOfTables(list) => {
                for sub in list.iter_mut() {
                    f(sub);
                    each_table(sub, f);
                }
            }
            _ => {}
        }
    }
}

/// The position of the first table written after position `at`, if any.
fn next_table_after(doc: &mut toml_edit::DocumentMut, at: isize) -> Option<isize> {
    let mut next = None;
    each_table(doc.as_table_mut(), &mut |t| {
        if let Some(p) = t.position().filter(|p| *p > at && !t.is_implicit()) {
            next = Some(next.map_or(p, |n: isize| n.min(p)));
        }
    });
    next
}

/// How many of pond's backups of one file are kept (the newest).
pub const BACKUPS_KEPT: usize = 3;

/// The file a client's config path names: where a symbolic link points (so the link stays a
/// link and its target gets the change), else the path itself.
pub fn resolved(path: &Path) -> Result<PathBuf, String> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return Ok(path.to_owned());
    }
    std::fs::canonicalize(path).map_err(|e| {
        let to = std::fs::read_link(path)
            .map(|t| t.display().to_string())
            .unwrap_or_default();
        format!(
            "{} is a symbolic link to {to}, which cannot be read ({e}); create the file it points to, or remove the link",
            path.display()
        )
    })
}

/// `path`'s backups by pond, oldest first (the time in their names sorts).
fn backups_of(path: &Path) -> Vec<PathBuf> {
    let (Some(name), Some(dir)) = (path.file_name(), path.parent()) else {
        return Vec::new();
    };
    let prefix = format!("{}.pond-backup-", name.to_string_lossy());
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
        })
        .collect();
    found.sort();
    found
}

/// A copy of `old` (the text of `path`) beside it, and the older copies beyond the newest
/// [`BACKUPS_KEPT`] removed; the copy's path.
pub fn backup(path: &Path, old: &str) -> std::io::Result<PathBuf> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3f");
    let b = path.with_file_name(format!("{name}.pond-backup-{stamp}"));
    std::fs::write(&b, old)?;
    let all = backups_of(path);
    for stale in &all[..all.len().saturating_sub(BACKUPS_KEPT)] {
        let _ = std::fs::remove_file(stale);
    }
    Ok(b)
}

/// Write `text` to `path` (a file, not a link: see [`resolved`]) beside it first and renamed
/// over it, so a client never reads half a file; its permissions kept.
pub fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_file_name(format!(".{name}.pond-tmp"));
    std::fs::write(&tmp, text)?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&tmp, meta.permissions());
    }
    std::fs::rename(&tmp, path)
}

/// The newest backup pond made of `path`, if any.
fn newest_backup(path: &Path) -> Option<String> {
    std::fs::read_to_string(backups_of(path).last()?).ok()
}

fn read_opt(path: &Path) -> Result<Option<String>, String> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Whether pond is registered in `client`'s config file (through pond or by hand).
fn is_registered(client: Client, home: &Path) -> bool {
    let Ok(path) = resolved(&client.config_file(home)) else {
        return false;
    };
    let text = read_opt(&path).ok().flatten().unwrap_or_default();
    unregistered(client, &text).is_ok_and(|(_, was)| was)
}

/// Register pond with `client` (and install the skill where the client reads skills).
/// `dry_run` says what would change.
pub fn install(client: Client, home: &Path, exe: &str, dry_run: bool) -> Result<Installed, String> {
    let path = resolved(&client.config_file(home))?;
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

/// Remove pond from `client`'s config (the skill too, unless another registered client
/// reads the same file). The rest of the file stays as it is.
pub fn uninstall(client: Client, home: &Path, dry_run: bool) -> Result<Installed, String> {
    let path = resolved(&client.config_file(home))?;
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
/// that is not pond's (edited by the user) is never removed, nor one that another client
/// with pond registered reads too.
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
    let users: Vec<&str> = Client::ALL
        .into_iter()
        .filter(|c| *c != client && c.skill_file(home).as_deref() == Some(path.as_path()))
        .filter(|c| is_registered(*c, home))
        .map(Client::name)
        .collect();
    if !users.is_empty() {
        return Ok(Some(Change {
            path: path.display().to_string(),
            action: format!("kept ({} reads it too)", users.join(", ")),
            backup: None,
        }));
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

/// Write `new` over `path` (whose text is `old`) with a backup, unless `action` is
/// `unchanged` or this is a dry run; refused if the file is read-only.
fn apply(
    path: &Path,
    old: Option<&str>,
    new: &str,
    action: &str,
    dry_run: bool,
) -> Result<Change, String> {
    if action != "unchanged" && std::fs::metadata(path).is_ok_and(|m| m.permissions().readonly()) {
        return Err(format!(
            "{} is read-only, so pond leaves it alone; make it writable (chmod u+w) and run again, or add pond by hand (`pond install CLIENT --print`)",
            path.display()
        ));
    }
    let mut saved = None;
    if !dry_run && action != "unchanged" {
        let written = old
            .map(|old| backup(path, old))
            .transpose()
            .and_then(|b| write_atomic(path, new).map(|()| b));
        saved = written
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?
            .map(|b| b.display().to_string());
    }
    Ok(Change {
        path: path.display().to_string(),
        action: if dry_run && action != "unchanged" {
            format!("would be {action}")
        } else {
            action.to_owned()
        },
        backup: saved,
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
    let path = resolved(&claude_settings(home))?;
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
