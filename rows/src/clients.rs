//! The clients pond reads, by name: each one's name, the other names it answers to, the
//! `source_agent` values its sessions carry, and where it keeps them (its homes, pure data:
//! [`default_homes`]). The parsers' registry (`pond_ingest::SOURCES`) adds to each its
//! layout and parsers, in this order; the store reads the names alone (the search filter's
//! agents, the sessions counted by client in `pond status`), the front the homes (which
//! folders a sync reads).

use std::path::PathBuf;

/// The `source_agent` of each client's sessions, and of its subagents' where they differ.
pub const AGENT_CLAUDE: &str = "claude-code";
pub const AGENT_CLAUDE_SUBAGENT: &str = "claude-code/subagent";
pub const AGENT_CODEX: &str = "codex";
pub const AGENT_COPILOT: &str = "copilot";
pub const AGENT_CURSOR: &str = "cursor";
pub const AGENT_CURSOR_IDE: &str = "cursor-ide";
pub const AGENT_CURSOR_IDE_SUBAGENT: &str = "cursor-ide/subagent";
pub const AGENT_GEMINI: &str = "gemini";
pub const AGENT_GEMINI_SUBAGENT: &str = "gemini/subagent";
pub const AGENT_OPENCODE: &str = "opencode";
pub const AGENT_OPENCODE_SUBAGENT: &str = "opencode/subagent";
pub const AGENT_VSCODE_COPILOT: &str = "vscode-copilot";

/// One client's names and homes.
#[derive(Debug, PartialEq, Eq)]
pub struct Client {
    /// The name its sessions are stored under (`source_agent`) and `--source` takes.
    pub name: &'static str,
    /// The client as people call it, in text for people and agents (the MCP instructions,
    /// help texts, the README's tables; tests hold them to this).
    pub title: &'static str,
    /// Other names `--source` and the search filter accept for it.
    pub aliases: &'static [&'static str],
    /// Further `source_agent` values its sessions may carry (subagents), each also matched
    /// by the client's own name in a search filter.
    pub agents: &'static [&'static str],
    /// The variable by which the client moves its home.
    pub home_var: &'static str,
    /// The home's folder under that variable's value ("": the variable names the home).
    pub home_in_var: &'static str,
    /// Its home under `$HOME` when that variable is not set.
    pub home_default: &'static str,
    /// Other builds of the client that keep the same layout in a home of their own (VS Code
    /// Insiders, VSCodium): each its (`home_in_var`, `home_default`), read like the first.
    pub editions: &'static [(&'static str, &'static str)],
}

/// Every client pond reads, in the order `pond sync` and `pond status` list them.
pub static CLIENTS: &[&Client] = &[
    &CLAUDE_CODE,
    &CODEX,
    &COPILOT,
    &CURSOR,
    &CURSOR_IDE,
    &GEMINI,
    &OPENCODE,
    &VSCODE_COPILOT,
];

pub static CLAUDE_CODE: Client = Client {
    name: AGENT_CLAUDE,
    title: "Claude Code",
    aliases: &["claude"],
    agents: &[AGENT_CLAUDE_SUBAGENT],
    home_var: "CLAUDE_CONFIG_DIR",
    home_in_var: "",
    home_default: ".claude",
    editions: &[],
};
pub static CODEX: Client = Client {
    name: AGENT_CODEX,
    title: "Codex",
    aliases: &[],
    agents: &[],
    home_var: "CODEX_HOME",
    home_in_var: "",
    home_default: ".codex",
    editions: &[],
};
pub static COPILOT: Client = Client {
    name: AGENT_COPILOT,
    title: "GitHub Copilot CLI",
    aliases: &["copilot-cli", "github-copilot"],
    agents: &[],
    home_var: "COPILOT_HOME",
    home_in_var: "",
    home_default: ".copilot",
    editions: &[],
};
pub static CURSOR: Client = Client {
    name: AGENT_CURSOR,
    title: "Cursor",
    aliases: &["cursor-agent", "cursor-cli"],
    agents: &[],
    home_var: "CURSOR_CONFIG_DIR",
    home_in_var: "",
    home_default: ".cursor",
    editions: &[],
};
pub static CURSOR_IDE: Client = Client {
    name: AGENT_CURSOR_IDE,
    title: "Cursor IDE",
    aliases: &["cursor-vscdb"],
    agents: &[AGENT_CURSOR_IDE_SUBAGENT],
    home_var: "XDG_CONFIG_HOME",
    home_in_var: "Cursor/User",
    home_default: if cfg!(target_os = "macos") {
        "Library/Application Support/Cursor/User"
    } else {
        ".config/Cursor/User"
    },
    editions: &[],
};
pub static GEMINI: Client = Client {
    name: AGENT_GEMINI,
    title: "Gemini CLI",
    aliases: &["gemini-cli"],
    agents: &[AGENT_GEMINI_SUBAGENT],
    home_var: "GEMINI_CLI_HOME",
    home_in_var: ".gemini",
    home_default: ".gemini",
    editions: &[],
};
pub static OPENCODE: Client = Client {
    name: AGENT_OPENCODE,
    title: "OpenCode",
    aliases: &[],
    agents: &[AGENT_OPENCODE_SUBAGENT],
    home_var: "XDG_DATA_HOME",
    home_in_var: "opencode",
    home_default: ".local/share/opencode",
    editions: &[],
};
pub static VSCODE_COPILOT: Client = Client {
    name: AGENT_VSCODE_COPILOT,
    title: "VS Code Copilot Chat",
    aliases: &["copilot-chat", "vscode"],
    agents: &[],
    home_var: "XDG_CONFIG_HOME",
    home_in_var: "Code/User",
    home_default: if cfg!(target_os = "macos") {
        "Library/Application Support/Code/User"
    } else {
        ".config/Code/User"
    },
    // Insiders, the open-source build and VSCodium keep their user dirs beside Code's.
    editions: if cfg!(target_os = "macos") {
        &[
            (
                "Code - Insiders/User",
                "Library/Application Support/Code - Insiders/User",
            ),
            (
                "Code - OSS/User",
                "Library/Application Support/Code - OSS/User",
            ),
            ("VSCodium/User", "Library/Application Support/VSCodium/User"),
        ]
    } else {
        &[
            ("Code - Insiders/User", ".config/Code - Insiders/User"),
            ("Code - OSS/User", ".config/Code - OSS/User"),
            ("VSCodium/User", ".config/VSCodium/User"),
        ]
    },
};

impl Client {
    /// The client a name (or alias) names.
    pub fn parse(name: &str) -> Option<&'static Client> {
        CLIENTS
            .iter()
            .copied()
            .find(|c| c.name == name || c.aliases.contains(&name))
    }

    /// The client whose sessions carry a `source_agent` (its name or a variant's).
    pub fn of_agent(agent: &str) -> Option<&'static Client> {
        CLIENTS
            .iter()
            .copied()
            .find(|c| c.name == agent || c.agents.contains(&agent))
    }

    /// Its homes: its variable (with `home_in_var` under it), else `home_default` under
    /// `$HOME`; then its other editions' the same way.
    pub fn homes(&self) -> Vec<PathBuf> {
        let var = std::env::var_os(self.home_var).filter(|v| !v.is_empty());
        let home = std::env::var_os("HOME");
        std::iter::once((self.home_in_var, self.home_default))
            .chain(self.editions.iter().copied())
            .filter_map(|(in_var, default)| match (&var, &home) {
                (Some(v), _) => Some(PathBuf::from(v).join(in_var)),
                (None, Some(h)) => Some(PathBuf::from(h).join(default)),
                (None, None) => None,
            })
            .collect()
    }

    /// Whether its own variable moves its home (set and not empty).
    pub fn home_moved(&self) -> bool {
        std::env::var_os(self.home_var).is_some_and(|v| !v.is_empty())
    }
}

/// Every client's homes (see [`Client::homes`]), in registry order.
pub fn default_homes() -> Vec<(&'static Client, PathBuf)> {
    CLIENTS
        .iter()
        .flat_map(|c| c.homes().into_iter().map(move |h| (*c, h)))
        .collect()
}

/// Every `source_agent` a stored session may have: the clients' names and their variants.
pub fn agent_names() -> Vec<&'static str> {
    CLIENTS
        .iter()
        .flat_map(|c| std::iter::once(c.name).chain(c.agents.iter().copied()))
        .collect()
}

/// Every client's title, in registry order: `Claude Code, Codex, ... and VS Code Copilot
/// Chat`.
pub fn titles() -> String {
    let titles: Vec<&str> = CLIENTS.iter().map(|c| c.title).collect();
    match titles.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => titles.concat(),
    }
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
        for c in CLIENTS {
            assert_eq!(Client::parse(c.name), Some(*c));
            for a in c.aliases.iter().chain([&c.name]) {
                assert!(seen.insert(*a), "{a} names two clients");
            }
        }
        assert_eq!(Client::parse("claude").map(|c| c.name), Some("claude-code"));
        assert_eq!(Client::parse("nope"), None);
        assert_eq!(name_list(&["a", "b", "c"]), "a, b or c");
        assert!(titles().starts_with("Claude Code, Codex, "), "{}", titles());
        assert!(
            titles().ends_with(" and VS Code Copilot Chat"),
            "{}",
            titles()
        );
    }

    #[test]
    fn agents_name_their_client() {
        assert_eq!(Client::of_agent("gemini/subagent"), Some(&GEMINI));
        assert_eq!(Client::of_agent("codex"), Some(&CODEX));
        assert_eq!(
            Client::of_agent("claude"),
            None,
            "an alias is no source_agent"
        );
        assert_eq!(agent_names()[..2], ["claude-code", "claude-code/subagent"]);
    }

    /// A client's variable moves all its homes (each edition's folder under it); without
    /// it, each is under `$HOME`. The default homes are every client's, in order.
    #[test]
    fn homes_follow_the_clients_variable_else_home() {
        let c = Client {
            home_var: "POND_ROWS_TEST_HOME",
            home_in_var: "User",
            home_default: ".app/User",
            editions: &[("Beta/User", ".app-beta/User")],
            ..CLAUDE_CODE
        };
        std::env::remove_var(c.home_var);
        let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
        if std::env::var_os("HOME").is_some() {
            assert_eq!(
                c.homes(),
                [home.join(".app/User"), home.join(".app-beta/User")]
            );
        }
        assert!(!c.home_moved());
        std::env::set_var(c.home_var, "/moved");
        assert!(c.home_moved());
        assert_eq!(
            c.homes(),
            [
                PathBuf::from("/moved/User"),
                PathBuf::from("/moved/Beta/User")
            ]
        );
        std::env::remove_var(c.home_var);
        let homes = default_homes();
        assert_eq!(homes[0].0, &CLAUDE_CODE);
        assert!(homes.iter().any(|(c, _)| *c == &VSCODE_COPILOT));
    }
}
