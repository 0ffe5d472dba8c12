//! The clients pond reads, as one registry: each client is a module with one
//! [`Source`] (its names, where it keeps its sessions, how to
//! recognise and parse its records), listed once in [`SOURCES`]. Discovery, sniffing,
//! `--source`, the default homes and the search filter's agent names all come from this
//! list, so adding a client is its module and one line here.

use std::path::PathBuf;

use serde_json::Value;

pub use crate::source::{Source, SourceKind};

/// Every client pond reads, in the order `pond sync` and `pond status` list them (and
/// records are sniffed in).
pub static SOURCES: &[SourceKind] = &[
    CLAUDE_CODE,
    CODEX,
    COPILOT,
    CURSOR,
    CURSOR_IDE,
    GEMINI,
    OPENCODE,
    VSCODE_COPILOT,
];

/// The clients by name, for the code that must name one.
pub static CLAUDE_CODE: SourceKind = &crate::claude::SOURCE;
pub static CODEX: SourceKind = &crate::codex::SOURCE;
pub static COPILOT: SourceKind = &crate::copilot::SOURCE;
pub static CURSOR: SourceKind = &crate::cursor_agent::SOURCE;
pub static CURSOR_IDE: SourceKind = &crate::cursor_ide::SOURCE;
pub static GEMINI: SourceKind = &crate::gemini::SOURCE;
pub static OPENCODE: SourceKind = &crate::opencode::SOURCE;
pub static VSCODE_COPILOT: SourceKind = &crate::vscode_copilot::SOURCE;

impl Source {
    /// The client a name (or alias) names.
    pub fn parse(name: &str) -> Option<SourceKind> {
        SOURCES
            .iter()
            .copied()
            .find(|s| s.name == name || s.aliases.contains(&name))
    }
}

impl Source {
    /// The client whose sessions carry a `source_agent` (its name or a variant's).
    pub fn of_agent(agent: &str) -> Option<SourceKind> {
        SOURCES
            .iter()
            .copied()
            .find(|s| s.name == agent || s.agents.contains(&agent))
    }
}

/// The client one record looks like it came from.
pub(crate) fn sniff(v: &Value) -> Option<SourceKind> {
    SOURCES.iter().copied().find(|s| (s.sniff)(v))
}

/// Every client's homes (see [`Source::homes`]), in registry order.
pub fn default_sources() -> Vec<(SourceKind, PathBuf)> {
    SOURCES
        .iter()
        .flat_map(|s| s.homes().into_iter().map(move |h| (*s, h)))
        .collect()
}

/// Every `source_agent` a stored session may have: the clients' names and their variants.
pub fn agent_names() -> Vec<&'static str> {
    SOURCES
        .iter()
        .flat_map(|s| std::iter::once(s.name).chain(s.agents.iter().copied()))
        .collect()
}

/// The names as a list for a message: `a, b or c`.
pub fn name_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_resolve_once() {
        let mut seen = std::collections::HashSet::new();
        for s in SOURCES {
            assert_eq!(Source::parse(s.name), Some(*s));
            for a in s.aliases.iter().chain([&s.name]) {
                assert!(seen.insert(*a), "{a} names two clients");
            }
        }
        assert_eq!(Source::parse("claude").map(|s| s.name), Some("claude-code"));
        assert_eq!(Source::parse("nope"), None);
        assert_eq!(name_list(&["a", "b", "c"]), "a, b or c");
    }
}
