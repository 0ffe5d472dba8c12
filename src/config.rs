//! The config file, `$XDG_CONFIG_HOME/pond/config.toml` (else `~/.config/pond/config.toml`;
//! `--config` or `POND_CONFIG` name another): every setting of the command line, read
//! where neither a flag nor an environment variable gave one. Precedence: flag > env >
//! file > default. A bad file is an error that names the key and the line.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{bail, Context, Result};
use clap::ArgMatches;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

pub(crate) use crate::settings::Shown;
use crate::settings::{FileSettings, Origin, SETTINGS};
use crate::Cli;

/// The file as written: a value for any setting of the table that has a config key
/// (`crate::settings`), and the sources. Every key is optional; an unknown key is an
/// error (a typo must not be silently ignored) that lists the keys there are.
#[derive(Debug, Default)]
pub(crate) struct ConfigFile {
    settings: FileSettings,
    /// Per client (`[sources.NAME]`, a name of the client registry): whether `pond sync`
    /// reads it and where.
    sources: BTreeMap<String, Source>,
}

/// The table that holds a client's settings.
const SOURCES: &str = "sources";

/// The keys at the top of the file: the settings' there and their sections', in the
/// table's order, then `sources`.
fn top_keys() -> &'static [&'static str] {
    static KEYS: OnceLock<Vec<&'static str>> = OnceLock::new();
    KEYS.get_or_init(|| {
        let mut keys: Vec<&'static str> = Vec::new();
        for key in crate::settings::in_file().iter().filter_map(|s| s.key) {
            let top = key.split_once('.').map_or(key, |(section, _)| section);
            if !keys.contains(&top) {
                keys.push(top);
            }
        }
        keys.push(SOURCES);
        keys
    })
}

/// The keys of one section (`cache`: `index_mib`, `metadata_mib`).
fn section_keys(section: &str) -> &'static [&'static str] {
    static KEYS: OnceLock<BTreeMap<&'static str, Vec<&'static str>>> = OnceLock::new();
    let all = KEYS.get_or_init(|| {
        let mut all: BTreeMap<&'static str, Vec<&'static str>> = BTreeMap::new();
        for key in SETTINGS.iter().filter_map(|s| s.key) {
            if let Some((section, name)) = key.split_once('.') {
                all.entry(section).or_default().push(name);
            }
        }
        all
    });
    all.get(section).map_or(&[], Vec::as_slice)
}

impl<'de> Deserialize<'de> for ConfigFile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_struct("ConfigFile", top_keys(), Section { name: "" })
    }
}

/// A key of a table whose keys are `keys`: any other is an error that lists them.
struct Key(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for Key {
    type Value = &'static str;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<&'static str, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl Visitor<'_> for Key {
    type Value = &'static str;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("field identifier")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<&'static str, E> {
        self.0
            .iter()
            .find(|k| **k == v)
            .copied()
            .ok_or_else(|| E::unknown_field(v, self.0))
    }
}

/// The top of the file (`name` empty) or one of its sections.
struct Section {
    name: &'static str,
}

impl Section {
    /// What a value that is not a table is said not to be (the names serde gives structs).
    fn title(&self) -> String {
        let mut chars = self.name.chars();
        match chars.next() {
            None => "ConfigFile".to_owned(),
            Some(c) => c.to_uppercase().chain(chars).collect(),
        }
    }
}

impl<'de> Visitor<'de> for Section {
    type Value = ConfigFile;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "struct {}", self.title())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ConfigFile, A::Error> {
        let mut file = ConfigFile::default();
        self.read(&mut map, &mut file)?;
        Ok(file)
    }
}

impl Section {
    fn read<'de, A: MapAccess<'de>>(
        &self,
        map: &mut A,
        file: &mut ConfigFile,
    ) -> Result<(), A::Error> {
        let top = self.name.is_empty();
        let keys = if top {
            top_keys()
        } else {
            section_keys(self.name)
        };
        while let Some(key) = map.next_key_seed(Key(keys))? {
            if !top {
                file.settings.read(&format!("{}.{key}", self.name), map)?;
            } else if key == SOURCES {
                file.sources = map.next_value()?;
            } else if section_keys(key).is_empty() {
                file.settings.read(key, map)?;
            } else {
                map.next_value_seed(Nested {
                    name: key,
                    file: &mut *file,
                })?;
            }
        }
        Ok(())
    }
}

/// A section, read into the file being read.
struct Nested<'a> {
    name: &'static str,
    file: &'a mut ConfigFile,
}

impl<'de> DeserializeSeed<'de> for Nested<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let keys = section_keys(self.name);
        d.deserialize_struct(self.name, keys, self)
    }
}

impl<'de> Visitor<'de> for Nested<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "struct {}", Section { name: self.name }.title())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        Section { name: self.name }.read(&mut map, self.file)
    }
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
    if let Some(p) = &cli.settings.config {
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
    file.settings.store = file.settings.store.map(|s| s.map(home_relative));
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

/// Fill every setting of `cli` that no flag or variable gave from `file`, and say where
/// each value came from.
pub(crate) fn apply(cli: &mut Cli, matches: &ArgMatches, file: ConfigFile) -> Vec<Shown> {
    let mut shown = cli.settings.apply(matches, file.settings);
    // The MCP server's auto-sync is an argument of its subcommand, which takes the value
    // in effect.
    if let crate::Command::Mcp { auto_sync_mins, .. }
    | crate::Command::Serve { auto_sync_mins, .. } = &mut cli.command
    {
        *auto_sync_mins = cli.settings.auto_sync_mins;
    }
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

/// `~/x` as a path under `$HOME`, as a shell would read it.
fn home_relative(p: PathBuf) -> PathBuf {
    match (p.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => p,
    }
}

/// What `pond init` writes: every setting of the config file at its default, commented
/// out, by section; then the first two clients' tables, as examples.
pub(crate) fn template() -> String {
    let mut text = String::from(
        "# pond's settings. A flag or an environment variable overrides each; `pond config show`\n\
         # lists what is in effect and where it came from.\n",
    );
    let mut section = None;
    for row in crate::settings::in_file() {
        let key = row.key.unwrap_or_default();
        let (here, name) = key
            .split_once('.')
            .map_or((None, key), |(s, n)| (Some(s), n));
        if here != section || section.is_none() {
            text.push('\n');
            if let Some(here) = here.filter(|h| Some(*h) != section) {
                text += &format!("[{here}]\n");
            }
            section = here;
        }
        let value = row.example.map_or_else(row.toml, str::to_owned);
        text += &format!("# {name} = {value}\n");
    }
    for source in pond_ingest::SOURCES.iter().take(2) {
        text += &format!(
            "\n# [sources.{}]\n# enabled = true\n# path = \"~/{}\"\n",
            source.name, source.home_default
        );
    }
    text
}

#[cfg(test)]
mod tests {
    /// What `pond init` wrote before the template came from the table of settings.
    const TEMPLATE: &str = r#"# pond's settings. A flag or an environment variable overrides each; `pond config show`
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

    #[test]
    fn the_template_is_what_it_was() {
        assert_eq!(super::template(), TEMPLATE);
    }

    #[test]
    fn an_unknown_key_lists_the_keys_of_its_table() {
        let top = toml_edit::de::from_str::<super::ConfigFile>("bogus = 1").unwrap_err();
        let keys = "`store`, `cache`, `workers`, `mcp`, `sync`, `display`, `sources`";
        assert!(top.to_string().contains(keys), "{top}");
        let section =
            toml_edit::de::from_str::<super::ConfigFile>("[workers]\nidle = 1").unwrap_err();
        let keys = "`idle_secs`, `sql_memory_mib`, `sync_memory_mib`";
        assert!(section.to_string().contains(keys), "{section}");
        let file: super::ConfigFile = toml_edit::de::from_str(
            "[mcp]\nauto_sync_mins = 3\n[sync]\nexclude_projects = [\"x\"]",
        )
        .unwrap();
        assert_eq!(file.settings.auto_sync_mins, Some(3));
        assert_eq!(file.settings.exclude_projects, Some(vec!["x".to_owned()]));
    }

    #[test]
    fn the_template_is_a_valid_empty_config() {
        let file: super::ConfigFile = toml_edit::de::from_str(&super::template()).unwrap();
        assert!(file.settings.store.is_none() && file.sources.is_empty());
    }
}
