//! Claude Code registered through its own command (`claude mcp add -s user`), when it is
//! installed: what the command writes is what Claude Code reads. Its config file is backed
//! up first, and an `add` that fails after the `remove` before it puts the file back.

use std::path::{Path, PathBuf};

use crate::install::{self, Change, Client, Installed};

/// pond's entry for Claude Code added (or removed) through `claude mcp`, when `claude` is
/// an executable on PATH and this is no dry run; `None` to edit its config file instead.
pub fn registered(
    client: Client,
    home: &Path,
    exe: &str,
    dry_run: bool,
    add: bool,
) -> Option<Result<Installed, String>> {
    if client != Client::ClaudeCode || dry_run {
        return None;
    }
    let claude = on_path()?;
    Some(run_registration(&claude, client, home, exe, add))
}

/// The `claude` executable on PATH.
fn on_path() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|d| d.join("claude"))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Back up the config, run `claude mcp` (remove, then add), put the file back if that
/// failed, then install or remove the skill.
fn run_registration(
    claude: &Path,
    client: Client,
    home: &Path,
    exe: &str,
    add: bool,
) -> Result<Installed, String> {
    let config = install::resolved(&client.config_file(home))?;
    let before = std::fs::read_to_string(&config).ok();
    let saved = match &before {
        Some(text) => Some(
            install::backup(&config, text)
                .map_err(|e| format!("cannot back up {}: {e}", config.display()))?,
        ),
        None => None,
    };
    let done = if add {
        // Replace an older entry: `add` refuses one that exists.
        let _ = run(claude, &["mcp", "remove", "-s", "user", "pond"]);
        run(
            claude,
            &["mcp", "add", "-s", "user", "pond", "--", exe, "mcp"],
        )
    } else {
        run(claude, &["mcp", "remove", "-s", "user", "pond"])
    };
    if let Err(e) = done {
        return Err(format!("{e}{}", put_back(&config, before.as_deref())));
    }
    let skill = install::skill(client, home, false, add)?;
    Ok(Installed {
        client: client.name(),
        changes: std::iter::once(Change {
            path: format!(
                "{} mcp {} -s user pond",
                claude.display(),
                if add { "add" } else { "remove" }
            ),
            action: if add { "added" } else { "removed" }.into(),
            backup: saved.map(|b| b.display().to_string()),
        })
        .chain(skill)
        .collect(),
    })
}

/// Run `claude ARGS`; its error output when it fails.
fn run(claude: &Path, args: &[&str]) -> Result<(), String> {
    let out = std::process::Command::new(claude)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", claude.display()))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "`{} {}` failed: {}",
        claude.display(),
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// The config put back as it was `before` a failed command, when the command changed it:
/// what to add to the error.
fn put_back(config: &Path, before: Option<&str>) -> String {
    let now = std::fs::read_to_string(config).ok();
    match before {
        Some(text) if now.as_deref() != Some(text) => install::write_atomic(config, text)
            .map(|()| format!("; {} is back as it was", config.display()))
            .unwrap_or_else(|w| {
                format!(
                    "; {} could not be put back ({w}): its backup is beside it",
                    config.display()
                )
            }),
        _ => String::new(),
    }
}
