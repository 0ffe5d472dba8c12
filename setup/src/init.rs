//! `pond init`'s steps before its first sync: the MCP clients found under the home, pond
//! registered with each (asked one by one), Claude Code's cleanup of old sessions put off
//! to [`KEEP_DAYS`], and the config file written with every setting commented out. Each
//! question goes to the caller's `ask`, each result to its `say`, in order.

use std::path::Path;

use crate::install::{self, Client, Installed};

/// Claude Code's `cleanupPeriodDays` that `pond init` proposes: ten years.
pub const KEEP_DAYS: i64 = 3650;

/// Where init works and what it writes.
pub struct Init<'a> {
    /// The folder the clients live under.
    pub home: &'a Path,
    /// The pond executable the clients are to start.
    pub exe: &'a str,
    /// Say what would change, change nothing.
    pub dry_run: bool,
    /// pond's config file, written when it is not there.
    pub config: &'a Path,
    /// What a new config file holds.
    pub template: &'a str,
}

/// One thing init reports, in order.
pub enum Said {
    /// A line of text.
    Line(String),
    /// What a registration (or the cleanup's setting) changed.
    Installed(Installed),
}

/// Run init's steps. `ask` answers a yes/no question (with `--yes` or `--dry-run`, yes).
pub fn run(
    init: &Init,
    ask: &mut dyn FnMut(&str) -> Result<bool, String>,
    say: &mut dyn FnMut(Said),
) -> Result<(), String> {
    let found: Vec<Client> = Client::ALL
        .into_iter()
        .filter(|c| c.detected(init.home))
        .collect();
    say(Said::Line(found_line(&found, init.home)));
    for client in found {
        if ask(&format!("register pond with {}?", client.name()))? {
            let done = crate::register(client, init.home, init.exe, true, init.dry_run)?;
            say(Said::Installed(done));
        }
    }
    if init.home.join(".claude").is_dir() || std::env::var_os("CLAUDE_CONFIG_DIR").is_some() {
        claude_cleanup(init, ask, say)?;
    }
    say(Said::Line(config_file(init)?));
    Ok(())
}

/// What init found: the clients pond can register with, and the ones it archives.
fn found_line(found: &[Client], home: &Path) -> String {
    if found.is_empty() {
        return format!(
            "no MCP client found under {}; `pond install CLIENT` registers one later",
            home.display()
        );
    }
    let names: Vec<&str> = found.iter().map(|c| c.name()).collect();
    let archived: Vec<&str> = pond_rows::CLIENTS.iter().map(|c| c.name).collect();
    format!(
        "found: {} (pond archives the sessions of {})",
        names.join(", "),
        pond_rows::clients::name_list(&archived)
    )
}

/// Claude Code's cleanup said, and put off to [`KEEP_DAYS`] if it is shorter and the
/// answer is yes.
fn claude_cleanup(
    init: &Init,
    ask: &mut dyn FnMut(&str) -> Result<bool, String>,
    say: &mut dyn FnMut(Said),
) -> Result<(), String> {
    let days = install::cleanup_period_days(init.home)?;
    let shown = days.unwrap_or(install::CLAUDE_DEFAULT_CLEANUP_DAYS);
    say(Said::Line(format!(
        "Claude Code deletes sessions older than {shown} days (cleanupPeriodDays{}); pond keeps its copy either way, and `pond restore` brings one back",
        if days.is_none() { ", unset" } else { "" }
    )));
    if shown < KEEP_DAYS && ask(&format!("keep them for {KEEP_DAYS} days instead?"))? {
        let c = install::set_cleanup_period_days(init.home, KEEP_DAYS, init.dry_run)?;
        say(Said::Installed(Installed {
            client: "claude-code",
            changes: vec![c],
        }));
    }
    Ok(())
}

/// The config file kept, or written from the template (not in a dry run): what was done.
fn config_file(init: &Init) -> Result<String, String> {
    let config = init.config;
    if config.exists() {
        return Ok(format!(
            "{}: kept as it is (`pond config show` lists every setting)",
            config.display()
        ));
    }
    if init.dry_run {
        return Ok(format!(
            "{}: would be written (every setting, commented out)",
            config.display()
        ));
    }
    if let Some(dir) = config.parent() {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    std::fs::write(config, init.template).map_err(|e| e.to_string())?;
    Ok(format!(
        "{}: written (every setting, commented out)",
        config.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With no client under the home: said so, nothing asked; the config file written
    /// from the template (only said in a dry run), then kept.
    #[test]
    fn init_with_no_client_writes_the_config_once() {
        let dir = std::env::temp_dir().join(format!("pond-setup-init-{}", std::process::id()));
        let config = dir.join("pond/config.toml");
        let mut init = Init {
            home: &dir,
            exe: "/bin/pond",
            dry_run: true,
            config: &config,
            template: "# settings\n",
        };
        let mut said = Vec::new();
        let mut run_once = |init: &Init| {
            let mut ask = |q: &str| -> Result<bool, String> { Err(format!("asked {q}")) };
            let mut say = |s: Said| match s {
                Said::Line(l) => said.push(l),
                Said::Installed(i) => said.push(format!("installed {}", i.client)),
            };
            run(init, &mut ask, &mut say).unwrap();
        };
        run_once(&init);
        assert!(!config.exists());
        init.dry_run = false;
        run_once(&init);
        assert_eq!(std::fs::read_to_string(&config).unwrap(), "# settings\n");
        run_once(&init);
        let _ = std::fs::remove_dir_all(&dir);
        let no_client = format!(
            "no MCP client found under {}; `pond install CLIENT` registers one later",
            dir.display()
        );
        let c = config.display();
        assert_eq!(
            said,
            [
                no_client.clone(),
                format!("{c}: would be written (every setting, commented out)"),
                no_client.clone(),
                format!("{c}: written (every setting, commented out)"),
                no_client,
                format!("{c}: kept as it is (`pond config show` lists every setting)"),
            ]
        );
    }
}
