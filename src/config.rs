//! The config file, `$XDG_CONFIG_HOME/pond/config.toml` (else `~/.config/pond/config.toml`;
//! `--config` or `POND_CONFIG` name another): every setting of the command line, read
//! where neither a flag nor an environment variable gave one. Precedence: flag > env >
//! file > default. A bad file is an error that names the key and the line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::parser::ValueSource;
use clap::ArgMatches;
use serde::Deserialize;

use crate::Cli;

/// The file as written. Every key is optional; an unknown key is an error (a typo must not
/// be silently ignored).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConfigFile {
    store: Option<PathBuf>,
    #[serde(default)]
    cache: Cache,
    #[serde(default)]
    workers: Workers,
    #[serde(default)]
    mcp: Mcp,
    #[serde(default)]
    sync: Sync,
    #[serde(default)]
    display: Display,
    /// Per client (`claude-code`, `codex`, `copilot`): whether `pond sync` reads it and where.
    #[serde(default)]
    sources: BTreeMap<String, Source>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Cache {
    index_mib: Option<usize>,
    metadata_mib: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Workers {
    idle_secs: Option<u64>,
    sql_memory_mib: Option<u64>,
    sync_memory_mib: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Mcp {
    auto_sync_mins: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Sync {
    exclude_projects: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Display {
    utc: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Source {
    pub enabled: Option<bool>,
    pub path: Option<PathBuf>,
}

/// The client names a `[sources.NAME]` table may have.
fn source_names() -> Vec<&'static str> {
    pond_ingest::SOURCES.iter().map(|s| s.name).collect()
}

/// Where the config file is: `--config`/`POND_CONFIG`, else the XDG config folder.
pub(crate) fn path(cli: &Cli) -> PathBuf {
    if let Some(p) = &cli.config {
        return p.clone();
    }
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .unwrap_or_else(|| PathBuf::from("."))
        .join("pond/config.toml")
}

/// The file at `path`; none there is an empty config.
pub(crate) fn load(path: &Path) -> Result<ConfigFile> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ConfigFile::default()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut file: ConfigFile = toml_edit::de::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.to_string().trim_end()))?;
    file.store = file.store.map(home_relative);
    for source in file.sources.values_mut() {
        source.path = source.path.take().map(home_relative);
    }
    for name in file.sources.keys() {
        if !source_names().contains(&name.as_str()) {
            bail!(
                "{}: unknown source [sources.{name}]; pond reads {}",
                path.display(),
                source_names().join(", ")
            );
        }
    }
    Ok(file)
}

/// Where one setting's value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    Flag,
    Env,
    File,
    Default,
}

impl Origin {
    fn of(matches: &ArgMatches, id: &str) -> Origin {
        // An argument another subcommand defines (mcp's auto-sync, asked of `pond sync`).
        if matches.try_contains_id(id).is_err() {
            return Origin::Default;
        }
        match matches.value_source(id) {
            Some(ValueSource::CommandLine) => Origin::Flag,
            Some(ValueSource::EnvVariable) => Origin::Env,
            _ => Origin::Default,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Flag => "flag",
            Origin::Env => "env",
            Origin::File => "file",
            Origin::Default => "default",
        }
    }
}

/// One setting as `pond config show` lists it.
pub(crate) struct Shown {
    pub key: String,
    pub value: String,
    pub origin: Origin,
}

/// Fill every setting of `cli` that no flag or variable gave from `file`, and say where
/// each value came from.
pub(crate) fn apply(cli: &mut Cli, matches: &ArgMatches, file: ConfigFile) -> Vec<Shown> {
    let mut shown = Vec::new();
    let m = matches;
    let out = &mut shown;
    setting(
        out,
        m,
        "store",
        "store",
        &mut cli.store,
        file.store.map(Some),
    );
    let c = file.cache;
    setting(
        out,
        m,
        "cache.index_mib",
        "index_cache_mib",
        &mut cli.index_cache_mib,
        c.index_mib,
    );
    let (id, v) = ("metadata_cache_mib", c.metadata_mib);
    setting(
        out,
        m,
        "cache.metadata_mib",
        id,
        &mut cli.metadata_cache_mib,
        v,
    );
    let w = file.workers;
    setting(
        out,
        m,
        "workers.idle_secs",
        "worker_idle_secs",
        &mut cli.worker_idle_secs,
        w.idle_secs,
    );
    let (id, v) = ("sql_memory_mib", w.sql_memory_mib);
    setting(
        out,
        m,
        "workers.sql_memory_mib",
        id,
        &mut cli.sql_memory_mib,
        v,
    );
    let (id, v) = ("sync_memory_mib", w.sync_memory_mib);
    setting(
        out,
        m,
        "workers.sync_memory_mib",
        id,
        &mut cli.sync_memory_mib,
        v,
    );
    let (id, v) = ("exclude_projects", file.sync.exclude_projects);
    setting(
        out,
        m,
        "sync.exclude_projects",
        id,
        &mut cli.exclude_projects,
        v,
    );
    let (id, v) = ("utc", file.display.utc);
    setting(out, m, "display.utc", id, &mut cli.utc, v);
    // The MCP server's auto-sync is an argument of its subcommand; other commands show
    // what `pond mcp` would use.
    let mut auto_sync = AUTO_SYNC_MINS;
    let mcp = matches.subcommand_matches("mcp");
    let serve = matches.subcommand_matches("serve");
    let value = match &mut cli.command {
        crate::Command::Mcp { auto_sync_mins, .. }
        | crate::Command::Serve { auto_sync_mins, .. } => auto_sync_mins,
        _ => &mut auto_sync,
    };
    let m = mcp.or(serve).unwrap_or(matches);
    setting(
        out,
        m,
        "mcp.auto_sync_mins",
        "auto_sync_mins",
        value,
        file.mcp.auto_sync_mins,
    );
    for name in source_names() {
        let s = file.sources.get(name).cloned().unwrap_or_default();
        let path = s
            .path
            .as_deref()
            .map_or("the client's default home".into(), |p| {
                p.display().to_string()
            });
        shown.push(Shown {
            key: format!("sources.{name}"),
            value: format!("enabled = {}, path = {path}", s.enabled.unwrap_or(true)),
            origin: if file.sources.contains_key(name) {
                Origin::File
            } else {
                Origin::Default
            },
        });
    }
    cli.sources = file.sources;
    shown
}

/// The largest value each numeric setting takes, by flag and config key: anything larger is
/// refused before it is used (a MiB count shifted into bytes or KiB, or seconds added to a
/// clock, must not wrap or overflow).
const MAXIMA: [(&str, &str, u64); 7] = [
    ("--index-cache-mib", "cache.index_mib", 1 << 20),
    ("--metadata-cache-mib", "cache.metadata_mib", 1 << 20),
    ("--worker-idle-secs", "workers.idle_secs", 365 * 24 * 3600),
    ("--sql-memory-mib", "workers.sql_memory_mib", 1 << 30),
    ("--sync-memory-mib", "workers.sync_memory_mib", 1 << 30),
    ("--auto-sync-mins", "mcp.auto_sync_mins", 365 * 24 * 60),
    ("--idle-exit-mins", "", 365 * 24 * 60),
];

/// Every numeric setting in effect within its range (see [`MAXIMA`]), whichever of flag,
/// variable or file gave it; the error names the setting and its range.
pub(crate) fn check(cli: &Cli) -> Result<()> {
    let (auto_sync, idle_exit) = match &cli.command {
        crate::Command::Serve {
            auto_sync_mins,
            idle_exit_mins,
            ..
        } => (*auto_sync_mins, *idle_exit_mins),
        crate::Command::Mcp { auto_sync_mins, .. } => (*auto_sync_mins, 0),
        _ => (0, 0),
    };
    let values = [
        cli.index_cache_mib as u64,
        cli.metadata_cache_mib as u64,
        cli.worker_idle_secs,
        cli.sql_memory_mib,
        cli.sync_memory_mib,
        auto_sync,
        idle_exit,
    ];
    for ((flag, key, max), value) in MAXIMA.iter().zip(values) {
        if value > *max {
            let name = match *key {
                "" => flag.to_string(),
                key => format!("{flag} ({key} in the config file)"),
            };
            bail!("{name} is {value}, out of range: it takes 0 to {max}");
        }
    }
    Ok(())
}

/// `pond mcp`'s default auto-sync interval, minutes.
pub(crate) const AUTO_SYNC_MINS: u64 = 10;

/// One setting: the file's value where no flag or variable gave one.
fn setting<T: Shows>(
    out: &mut Vec<Shown>,
    matches: &ArgMatches,
    key: &'static str,
    id: &str,
    value: &mut T,
    file: Option<T>,
) {
    let mut origin = Origin::of(matches, id);
    if origin == Origin::Default {
        if let Some(v) = file {
            *value = v;
            origin = Origin::File;
        }
    }
    out.push(Shown {
        key: key.to_owned(),
        value: value.shows(),
        origin,
    });
}

/// A setting's value as `pond config show` prints it.
trait Shows {
    fn shows(&self) -> String;
}

impl Shows for bool {
    fn shows(&self) -> String {
        self.to_string()
    }
}

impl Shows for usize {
    fn shows(&self) -> String {
        self.to_string()
    }
}

impl Shows for u64 {
    fn shows(&self) -> String {
        self.to_string()
    }
}

impl Shows for Option<PathBuf> {
    fn shows(&self) -> String {
        self.as_deref().map_or_else(
            || format!("{} (default)", crate::default_store().display()),
            |p| p.display().to_string(),
        )
    }
}

impl Shows for Vec<String> {
    fn shows(&self) -> String {
        format!("{self:?}")
    }
}

/// `~/x` as a path under `$HOME`, as a shell would read it.
fn home_relative(p: PathBuf) -> PathBuf {
    match (p.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => p,
    }
}

/// What `pond init` writes: every setting at its default, commented out.
pub(crate) const TEMPLATE: &str = r#"# pond's settings. A flag or an environment variable overrides each; `pond config show`
# lists what is in effect and where it came from.

# store = "~/.local/share/pond"

[cache]
# index_mib = 128
# metadata_mib = 32

[workers]
# idle_secs = 60
# sql_memory_mib = 1536
# sync_memory_mib = 2048

[mcp]
# auto_sync_mins = 10

[sync]
# exclude_projects = []

[display]
# utc = false

# [sources.claude-code]
# enabled = true
# path = "~/.claude"

# [sources.codex]
# enabled = true
# path = "~/.codex"
"#;

#[cfg(test)]
mod tests {
    #[test]
    fn the_template_is_a_valid_empty_config() {
        let file: super::ConfigFile = toml_edit::de::from_str(super::TEMPLATE).unwrap();
        assert!(file.store.is_none() && file.sources.is_empty());
    }
}
