//! Every setting of the command line, defined once in `settings!`'s table: its flag, its
//! environment variable, its config key, its default, its range, its help, and which
//! processes pond starts are given it. From the table come clap's global arguments, the
//! config file's keys (`crate::config`), `pond config show`, the arguments a worker and the
//! store's server are started with, and the README's settings table (checked by a test).
//! Adding a setting is one row here and the code that uses its value.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Arg, ArgAction, ArgMatches, Args, FromArgMatches};

/// Which of the processes pond starts are given a setting as a flag. The store itself is
/// given apart (as the path the starting process resolved).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Passed {
    /// Neither: only the process it was given to uses it.
    No,
    /// Every worker, and the store's server (which starts workers of its own).
    Workers,
    /// The store's server only.
    Server,
}

/// One row of the table: everything about a setting but its type and its value.
#[derive(Debug)]
pub(crate) struct Setting {
    /// Its name in `Settings` and clap's id.
    pub id: &'static str,
    /// The long flag, without its dashes.
    pub flag: &'static str,
    pub short: Option<char>,
    pub env: Option<&'static str>,
    /// Its key in the config file (`section.name`, or `name` at the top); none: flag only.
    pub key: Option<&'static str>,
    /// The largest value a numeric setting takes: anything larger is refused before it is
    /// used (a MiB count shifted into bytes or KiB, or seconds added to a clock, must not
    /// wrap or overflow).
    pub max: Option<u64>,
    pub passed: Passed,
    /// The subcommands that define it; none: every command takes it (a global flag).
    pub commands: &'static [&'static str],
    /// The setting it cannot be given with.
    pub conflicts: Option<&'static str>,
    /// The value's name in `--help` [default: the id in capitals].
    pub value_name: Option<&'static str>,
    /// The help text, as the lines of its doc comment.
    pub help: &'static [&'static str],
    /// Its default as `--help` and the README show it (a number's); none: not shown.
    pub default: fn() -> Option<String>,
    /// Its default as a value in the config file.
    pub toml: fn() -> String,
    /// Its default as the config template writes it, where the value's own TOML is not
    /// what a user would write (the store's path).
    pub example: Option<&'static str>,
}

impl Setting {
    /// What every row has unless it says otherwise.
    const BASE: Setting = Setting {
        id: "",
        flag: "",
        short: None,
        env: None,
        key: None,
        max: None,
        passed: Passed::No,
        commands: &[],
        conflicts: None,
        value_name: None,
        help: &[],
        default: || None,
        toml: String::new,
        example: None,
    };

    /// The help text as one paragraph (as clap's derive joins a doc comment's lines).
    pub fn help(&self) -> String {
        let lines: Vec<&str> = self.help.iter().map(|l| l.trim()).collect();
        lines.join(" ")
    }

    /// Where its key sits in the config file: the top's first, then each section's in the
    /// order of `SECTIONS` (a key of any other section is a bug the tests catch).
    pub fn file_rank(&self) -> usize {
        match self.key.and_then(|k| k.split_once('.')) {
            None => 0,
            Some((section, _)) => SECTIONS
                .iter()
                .position(|s| *s == section)
                .map_or(usize::MAX, |i| i + 1),
        }
    }

    /// Whether every command takes it.
    pub fn global(&self) -> bool {
        self.commands.is_empty()
    }

    /// Its clap argument, of a value of type `T`.
    fn arg<T: Value>(&'static self) -> Arg {
        let mut arg = T::arg(Arg::new(self.id).long(self.flag).help(self.help()));
        if let Some(short) = self.short {
            arg = arg.short(short);
        }
        if let Some(env) = self.env {
            arg = arg.env(env);
        }
        if let Some(id) = self.conflicts {
            arg = arg.conflicts_with(id);
        }
        // Clap keeps `&'static str`s: these are built once per parse (or completion
        // script), a few bytes.
        let leak = |s: String| &*Box::leak(s.into_boxed_str());
        if let Some(default) = (self.default)() {
            arg = arg.default_value(leak(default));
        }
        if T::TAKES_VALUE {
            let name = self
                .value_name
                .unwrap_or_else(|| leak(self.id.to_uppercase()));
            arg = arg.value_name(name);
        }
        arg.global(true)
    }
}

/// The config file's sections, in the order the template writes them (and an unknown key's
/// error lists them).
pub(crate) const SECTIONS: &[&str] = &["cache", "workers", "mcp", "sync", "display"];

/// The settings the config file holds, in its order.
pub(crate) fn in_file() -> Vec<&'static Setting> {
    let mut rows: Vec<&'static Setting> = SETTINGS
        .iter()
        .copied()
        .filter(|s| s.key.is_some())
        .collect();
    rows.sort_by_key(|s| s.file_rank());
    rows
}

/// The type of a setting's value: how clap reads it, how `pond config show` shows it, and
/// how it is passed on as flags.
pub(crate) trait Value: Sized {
    /// Whether the flag takes a value (else it is a switch, or counted).
    const TAKES_VALUE: bool = true;
    /// `arg` reading a value of this type.
    fn arg(arg: Arg) -> Arg;
    /// The value clap read (or its default).
    fn read(matches: &ArgMatches, id: &str) -> Self;
    /// As `pond config show` prints it.
    fn shows(&self) -> String;
    /// As flags for a process pond starts (none: the default, which needs none).
    fn pass(&self, flag: &str, out: &mut Vec<OsString>);
    /// As a number, to check against its maximum.
    fn number(&self) -> Option<u64> {
        None
    }
    /// As `--help` shows a default (only a number's is shown).
    fn default_text(&self) -> Option<String> {
        self.number().map(|n| n.to_string())
    }
    /// As a value in the config file.
    fn toml(&self) -> String {
        self.shows()
    }
}

macro_rules! number {
    ($t:ty) => {
        impl Value for $t {
            fn arg(arg: Arg) -> Arg {
                arg.value_parser(clap::value_parser!($t))
                    .action(ArgAction::Set)
            }
            fn read(matches: &ArgMatches, id: &str) -> Self {
                *matches.get_one::<$t>(id).expect("a default")
            }
            fn shows(&self) -> String {
                self.to_string()
            }
            fn pass(&self, flag: &str, out: &mut Vec<OsString>) {
                out.extend([format!("--{flag}").into(), self.to_string().into()]);
            }
            fn number(&self) -> Option<u64> {
                Some(*self as u64)
            }
        }
    };
}
number!(usize);
number!(u64);

impl Value for bool {
    const TAKES_VALUE: bool = false;
    fn arg(arg: Arg) -> Arg {
        arg.value_parser(clap::value_parser!(bool))
            .action(ArgAction::SetTrue)
    }
    fn read(matches: &ArgMatches, id: &str) -> Self {
        matches.get_flag(id)
    }
    fn shows(&self) -> String {
        self.to_string()
    }
    fn pass(&self, flag: &str, out: &mut Vec<OsString>) {
        if *self {
            out.push(format!("--{flag}").into());
        }
    }
}

/// A count of repeated flags (`-vv`).
impl Value for u8 {
    const TAKES_VALUE: bool = false;
    fn arg(arg: Arg) -> Arg {
        arg.action(ArgAction::Count)
    }
    fn read(matches: &ArgMatches, id: &str) -> Self {
        matches.get_count(id)
    }
    fn shows(&self) -> String {
        self.to_string()
    }
    fn pass(&self, flag: &str, out: &mut Vec<OsString>) {
        out.extend((0..*self).map(|_| format!("--{flag}").into()));
    }
}

impl Value for Option<PathBuf> {
    fn arg(arg: Arg) -> Arg {
        arg.value_parser(clap::value_parser!(PathBuf))
            .action(ArgAction::Set)
    }
    fn read(matches: &ArgMatches, id: &str) -> Self {
        matches.get_one::<PathBuf>(id).cloned()
    }
    fn shows(&self) -> String {
        self.as_deref().map_or_else(
            || format!("{} (default)", crate::default_store().display()),
            |p| p.display().to_string(),
        )
    }
    fn pass(&self, flag: &str, out: &mut Vec<OsString>) {
        if let Some(p) = self {
            out.extend([format!("--{flag}").into(), p.into()]);
        }
    }
}

/// A list, given by repeating the flag or separated with commas.
impl Value for Vec<String> {
    fn arg(arg: Arg) -> Arg {
        arg.value_parser(clap::value_parser!(String))
            .action(ArgAction::Append)
            .value_delimiter(',')
    }
    fn read(matches: &ArgMatches, id: &str) -> Self {
        matches
            .get_many::<String>(id)
            .map(|v| v.cloned().collect())
            .unwrap_or_default()
    }
    fn shows(&self) -> String {
        format!("{self:?}")
    }
    fn toml(&self) -> String {
        let items: Vec<String> = self.iter().map(|v| format!("{v:?}")).collect();
        format!("[{}]", items.join(", "))
    }
    fn pass(&self, flag: &str, out: &mut Vec<OsString>) {
        for v in self {
            out.extend([format!("--{flag}").into(), v.into()]);
        }
    }
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
            Some(clap::parser::ValueSource::CommandLine) => Origin::Flag,
            Some(clap::parser::ValueSource::EnvVariable) => Origin::Env,
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

/// The matches of the subcommand that defines a setting, when this command is one of
/// them; the command's own for a global setting.
fn matches_of<'a>(row: &Setting, matches: &'a ArgMatches) -> Option<&'a ArgMatches> {
    if row.global() {
        return Some(matches);
    }
    row.commands
        .iter()
        .find_map(|c| matches.subcommand_matches(c))
}

macro_rules! settings {
    ($(
        $(#[doc = $doc:literal])+
        $field:ident: $ty:ty = $default:expr, $row:ident {
            flag: $flag:literal,
            $($name:ident: $value:expr,)*
        }
    )+) => {
        /// The value in effect of every setting.
        #[derive(Debug, Clone)]
        pub(crate) struct Settings {
            $($(#[doc = $doc])+ pub $field: $ty,)+
        }

        $(
            #[doc = concat!("The row of `--", $flag, "`.")]
            pub(crate) static $row: Setting = Setting {
                id: stringify!($field),
                flag: $flag,
                help: &[$($doc),+],
                default: || <$ty as Value>::default_text(&$default),
                toml: || <$ty as Value>::toml(&$default),
                $($name: $value,)*
                ..Setting::BASE
            };
        )+

        /// Every setting, in the order `--help` and `pond config show` list them.
        pub(crate) static SETTINGS: &[&Setting] = &[$(&$row),+];

        /// The config file's value of every setting it names.
        #[derive(Debug, Default)]
        pub(crate) struct FileSettings {
            $(pub $field: Option<$ty>,)+
        }

        impl FileSettings {
            /// Read the value of the setting whose config key is `key` (one of the table's).
            pub(crate) fn read<'de, A: serde::de::MapAccess<'de>>(
                &mut self,
                key: &str,
                map: &mut A,
            ) -> Result<(), A::Error> {
                $(if $row.key == Some(key) {
                    self.$field = Some(map.next_value()?);
                    return Ok(());
                })+
                unreachable!("{key} is not a config key")
            }
        }

        impl Default for Settings {
            fn default() -> Settings {
                Settings { $($field: $default,)+ }
            }
        }

        impl Settings {
            /// Fill every setting no flag or variable gave from `file`, and say where each
            /// config key's value came from: the global settings first, then those of a
            /// subcommand (which other commands show as that command would take them).
            pub(crate) fn apply(&mut self, matches: &ArgMatches, file: FileSettings) -> Vec<Shown> {
                let (mut global, mut command) = (Vec::new(), Vec::new());
                let rank = |key: &str| SETTINGS.iter().find(|s| s.key == Some(key)).map_or(0, |s| s.file_rank());
                $({
                    let m = matches_of(&$row, matches);
                    let mut origin = m.map_or(Origin::Default, |m| Origin::of(m, $row.id));
                    if origin == Origin::Default {
                        if let Some(v) = file.$field {
                            self.$field = v;
                            origin = Origin::File;
                        }
                    }
                    if let Some(key) = $row.key {
                        let shown = Shown { key: key.to_owned(), value: self.$field.shows(), origin };
                        if $row.global() { global.push(shown) } else { command.push(shown) }
                    }
                })+
                global.sort_by_key(|s: &Shown| rank(&s.key));
                global.extend(command);
                global
            }

            /// Every numeric setting this command takes within its range, whichever of
            /// flag, variable or file gave it; the error names the setting and its range.
            pub(crate) fn check(&self, matches: &ArgMatches) -> anyhow::Result<()> {
                $(if let (Some(max), Some(value), Some(_)) =
                    ($row.max, self.$field.number(), matches_of(&$row, matches))
                {
                    out_of_range(&$row, value, max)?;
                })+
                Ok(())
            }

            /// The flags that give a process pond starts the settings it is `passed`.
            pub(crate) fn pass(&self, to: &[Passed]) -> Vec<OsString> {
                let mut out = Vec::new();
                $(if to.contains(&$row.passed) {
                    self.$field.pass($row.flag, &mut out);
                })+
                out
            }
        }

        impl FromArgMatches for Settings {
            fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
                let mut s = Settings::default();
                s.update_from_arg_matches(matches)?;
                Ok(s)
            }

            fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
                $(if let Some(m) = matches_of(&$row, matches) {
                    if m.try_contains_id($row.id).is_ok() {
                        self.$field = <$ty as Value>::read(m, $row.id);
                    }
                })+
                Ok(())
            }
        }

        impl Args for Settings {
            fn augment_args(cmd: clap::Command) -> clap::Command {
                let mut cmd = cmd;
                $(if $row.global() {
                    cmd = cmd.arg($row.arg::<$ty>());
                })+
                cmd
            }

            fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
                Settings::augment_args(cmd)
            }
        }
    };
}

fn out_of_range(row: &Setting, value: u64, max: u64) -> anyhow::Result<()> {
    if value <= max {
        return Ok(());
    }
    let name = match row.key {
        None => format!("--{}", row.flag),
        Some(key) => format!("--{} ({key} in the config file)", row.flag),
    };
    anyhow::bail!("{name} is {value}, out of range: it takes 0 to {max}")
}

settings! {
    /// Store directory [default: $XDG_DATA_HOME/pond, else ~/.local/share/pond]
    store: Option<PathBuf> = None, STORE {
        flag: "store",
        env: Some("POND_STORE"),
        key: Some("store"),
        example: Some("\"~/.local/share/pond\""),
    }
    /// The config file [default: $XDG_CONFIG_HOME/pond/config.toml, else
    /// ~/.config/pond/config.toml]; flags and environment variables override it
    config: Option<PathBuf> = None, CONFIG {
        flag: "config",
        env: Some("POND_CONFIG"),
        passed: Passed::Server,
    }
    /// Lance index cache cap, MiB
    index_cache_mib: usize = 128, INDEX_CACHE_MIB {
        flag: "index-cache-mib",
        env: Some("POND_INDEX_CACHE_MIB"),
        key: Some("cache.index_mib"),
        max: Some(1 << 20),
        passed: Passed::Workers,
    }
    /// Lance metadata cache cap, MiB
    metadata_cache_mib: usize = 32, METADATA_CACHE_MIB {
        flag: "metadata-cache-mib",
        env: Some("POND_METADATA_CACHE_MIB"),
        key: Some("cache.metadata_mib"),
        max: Some(1 << 20),
        passed: Passed::Workers,
    }
    /// Run heavy jobs (sync, rebuild, SQL) inside this process instead of worker processes:
    /// the single-process baseline, and a debugging aid
    in_process: bool = false, IN_PROCESS {
        flag: "in-process",
        env: Some("POND_IN_PROCESS"),
    }
    /// More log lines on stderr (-v: info, -vv: debug, -vvv: trace); `RUST_LOG` or `POND_LOG`
    /// set a filter of their own
    verbose: u8 = 0, VERBOSE {
        flag: "verbose",
        short: Some('v'),
        passed: Passed::Workers,
    }
    /// Errors only on stderr
    quiet: bool = false, QUIET {
        flag: "quiet",
        short: Some('q'),
        conflicts: Some("verbose"),
        passed: Passed::Workers,
    }
    /// Print secrets as they were stored (answers mask them by default: keys, tokens, private
    /// keys, passwords; `pond mcp` always masks)
    reveal_secrets: bool = false, REVEAL_SECRETS {
        flag: "reveal-secrets",
    }
    /// Show times in UTC instead of the local time zone (`TZ`, else /etc/localtime) in text
    /// answers, MCP answers and Markdown exports, and read a day given to a date filter as a
    /// UTC day; JSON always carries UTC and epoch values
    utc: bool = false, UTC {
        flag: "utc",
        key: Some("display.utc"),
        passed: Passed::Server,
    }
    /// Do not store sessions whose project (working directory) contains this; repeat it or
    /// separate with commas (`sync` and `mcp`'s background sync; what is stored already
    /// stays until `pond forget --project`)
    exclude_projects: Vec<String> = Vec::new(), EXCLUDE_PROJECTS {
        flag: "exclude-project",
        env: Some("POND_EXCLUDE_PROJECTS"),
        key: Some("sync.exclude_projects"),
        value_name: Some("SUBSTRING"),
        passed: Passed::Server,
    }
    /// An idle SQL worker exits after this many seconds
    worker_idle_secs: u64 = 60, WORKER_IDLE_SECS {
        flag: "worker-idle-secs",
        env: Some("POND_WORKER_IDLE_SECS"),
        key: Some("workers.idle_secs"),
        max: Some(365 * 24 * 3600),
        passed: Passed::Server,
    }
    /// Kill the SQL worker if its footprint passes this many MiB (0: no budget)
    sql_memory_mib: u64 = 1536, SQL_MEMORY_MIB {
        flag: "sql-memory-mib",
        env: Some("POND_SQL_MEMORY_MIB"),
        key: Some("workers.sql_memory_mib"),
        max: Some(1 << 30),
        passed: Passed::Server,
    }
    /// Kill a sync worker if its footprint passes this many MiB (0: no budget); a file it
    /// was reading when killed twice is skipped until it changes
    sync_memory_mib: u64 = 2048, SYNC_MEMORY_MIB {
        flag: "sync-memory-mib",
        env: Some("POND_SYNC_MEMORY_MIB"),
        key: Some("workers.sync_memory_mib"),
        max: Some(1 << 30),
        passed: Passed::Server,
    }
    /// Sync the default homes at start and then every N minutes, in a worker (0: never)
    auto_sync_mins: u64 = 10, AUTO_SYNC_MINS {
        flag: "auto-sync-mins",
        env: Some("POND_AUTO_SYNC_MINS"),
        key: Some("mcp.auto_sync_mins"),
        max: Some(365 * 24 * 60),
        commands: &["mcp", "serve"],
    }
    /// Exit after this many minutes with no client connected
    idle_exit_mins: u64 = 30, IDLE_EXIT_MINS {
        flag: "idle-exit-mins",
        env: Some("POND_IDLE_EXIT_MINS"),
        max: Some(365 * 24 * 60),
        commands: &["serve"],
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;

    /// The README's table of settings, as the table here writes it.
    fn readme_table() -> String {
        let mut text = String::from(
            "| flag | variable | config key | default | what it sets |\n|---|---|---|---|---|\n",
        );
        let code = |s: &str| format!("`{s}`");
        for row in SETTINGS {
            let mut flag = format!("`--{}`", row.flag);
            if let Some(short) = row.short {
                flag = format!("`-{short}`, {flag}");
            }
            if !row.global() {
                let commands: Vec<String> = row
                    .commands
                    .iter()
                    .map(|c| code(&format!("pond {c}")))
                    .collect();
                flag = format!("{flag} ({})", commands.join(", "));
            }
            text += &format!(
                "| {flag} | {} | {} | {} | {} |\n",
                row.env.map(code).unwrap_or_default(),
                row.key.map(code).unwrap_or_default(),
                (row.default)().unwrap_or_default(),
                row.help(),
            );
        }
        text
    }

    #[test]
    fn the_readme_lists_every_setting_as_the_table_does() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
        let readme = std::fs::read_to_string(path).unwrap();
        let table = readme_table();
        assert!(
            readme.contains(&table),
            "README.md's settings table (### Options) should read:\n{table}"
        );
    }

    #[test]
    fn every_key_is_in_a_section_of_the_file() {
        for row in SETTINGS {
            assert_ne!(
                row.file_rank(),
                usize::MAX,
                "{:?}: add its section to SECTIONS",
                row.key
            );
        }
        let keys: Vec<&str> = in_file().iter().filter_map(|s| s.key).collect();
        assert_eq!(
            keys[..3],
            ["store", "cache.index_mib", "cache.metadata_mib"]
        );
        assert_eq!(keys.last(), Some(&"display.utc"));
    }

    /// A subcommand's setting is an argument of that subcommand: the same flag, variable
    /// and default as the table's.
    #[test]
    fn subcommand_settings_are_their_commands_arguments() {
        let cli = crate::Cli::command();
        for row in SETTINGS.iter().filter(|s| !s.global()) {
            for name in row.commands {
                let command = cli.find_subcommand(name).unwrap();
                let arg = command
                    .get_arguments()
                    .find(|a| a.get_id() == row.id)
                    .unwrap_or_else(|| panic!("pond {name} has no {}", row.id));
                assert_eq!(arg.get_long(), Some(row.flag), "pond {name}");
                assert_eq!(
                    arg.get_env().and_then(|e| e.to_str()),
                    row.env,
                    "pond {name}"
                );
                let default: Vec<String> = arg
                    .get_default_values()
                    .iter()
                    .map(|v| v.to_string_lossy().into_owned())
                    .collect();
                assert_eq!(default, Vec::from_iter((row.default)()), "pond {name}");
            }
        }
    }

    #[test]
    fn workers_and_the_server_get_the_settings_passed_to_them() {
        let cli = crate::Cli::try_parse_from([
            "pond",
            "-vv",
            "--utc",
            "--exclude-project",
            "a,b",
            "--config",
            "/c.toml",
            "--in-process",
            "--reveal-secrets",
            "status",
        ])
        .unwrap();
        let words = |to: &[Passed]| -> Vec<String> {
            cli.settings
                .pass(to)
                .into_iter()
                .map(|s| s.into_string().unwrap())
                .collect()
        };
        let workers = "--index-cache-mib 128 --metadata-cache-mib 32 --verbose --verbose";
        assert_eq!(words(&[Passed::Workers]).join(" "), workers);
        assert_eq!(
            words(&[Passed::Workers, Passed::Server]).join(" "),
            "--config /c.toml --index-cache-mib 128 --metadata-cache-mib 32 --verbose --verbose \
             --utc --exclude-project a --exclude-project b --worker-idle-secs 60 \
             --sql-memory-mib 1536 --sync-memory-mib 2048"
        );
        // What the server is started with reads back as the same settings.
        let mut argv = vec!["pond".to_owned()];
        argv.extend(words(&[Passed::Workers, Passed::Server]));
        argv.push("serve".into());
        let served = crate::Cli::try_parse_from(argv).unwrap().settings;
        assert_eq!(served.verbose, 2);
        assert_eq!(served.exclude_projects, ["a", "b"]);
        assert!(served.utc && !served.in_process && !served.reveal_secrets);
    }
}
