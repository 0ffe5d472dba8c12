//! The clients pond reads, as one registry: each client is a module with one
//! [`Source`] (its names, a [`Client`] of `pond-rows`; where it keeps its sessions, how to
//! recognise and parse its records), listed once in [`SOURCES`]. Discovery, sniffing,
//! `--source`, the default homes and the search filter's agent names all come from this
//! list, so adding a client is its names (`pond_rows::clients`), its module and one line
//! here.

use std::path::PathBuf;

use serde_json::Value;

pub use pond_rows::clients::{agent_names, default_homes, name_list, titles, Client};

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
    /// The client a name (or alias) names ([`Client::parse`]).
    pub fn parse(name: &str) -> Option<SourceKind> {
        Client::parse(name).and_then(Source::of_client)
    }

    /// The client whose sessions carry a `source_agent` (its name or a variant's).
    pub fn of_agent(agent: &str) -> Option<SourceKind> {
        Client::of_agent(agent).and_then(Source::of_client)
    }

    /// The registry's entry for a client.
    fn of_client(client: &Client) -> Option<SourceKind> {
        SOURCES.iter().copied().find(|s| s.client == client)
    }
}

/// The client one record looks like it came from.
pub(crate) fn sniff(v: &Value) -> Option<SourceKind> {
    SOURCES.iter().copied().find(|s| (s.sniff)(v))
}

/// Every client's homes ([`pond_rows::clients::default_homes`]), in registry order, each
/// with its source.
pub fn default_sources() -> Vec<(SourceKind, PathBuf)> {
    pond_rows::clients::default_homes()
        .into_iter()
        .filter_map(|(c, h)| Some((Source::of_client(c)?, h)))
        .collect()
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
        assert_eq!(Source::of_agent("gemini/subagent"), Some(GEMINI));
    }

    /// The registry adds homes and parsers to `pond-rows`' clients: the same clients, in
    /// the same order.
    #[test]
    fn every_client_has_its_source() {
        let names = |v: Vec<&'static str>| v.join(" ");
        assert_eq!(
            names(SOURCES.iter().map(|s| s.name).collect()),
            names(pond_rows::CLIENTS.iter().map(|c| c.name).collect())
        );
        for (s, c) in SOURCES.iter().zip(pond_rows::CLIENTS) {
            assert!(std::ptr::eq(s.client, *c), "{} is not its client", s.name);
        }
    }
}
