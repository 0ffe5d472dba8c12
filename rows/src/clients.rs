//! The clients pond reads, by name: each one's name, the other names it answers to, and the
//! `source_agent` values its sessions carry. The parsers' registry (`pond_ingest::SOURCES`)
//! adds to each its homes and parsers, in this order; the store reads the names alone (the
//! search filter's agents, the sessions counted by client in `pond status`).

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

/// One client's names.
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
};
pub static CODEX: Client = Client {
    name: AGENT_CODEX,
    title: "Codex",
    aliases: &[],
    agents: &[],
};
pub static COPILOT: Client = Client {
    name: AGENT_COPILOT,
    title: "GitHub Copilot CLI",
    aliases: &["copilot-cli", "github-copilot"],
    agents: &[],
};
pub static CURSOR: Client = Client {
    name: AGENT_CURSOR,
    title: "Cursor",
    aliases: &["cursor-agent", "cursor-cli"],
    agents: &[],
};
pub static CURSOR_IDE: Client = Client {
    name: AGENT_CURSOR_IDE,
    title: "Cursor IDE",
    aliases: &["cursor-vscdb"],
    agents: &[AGENT_CURSOR_IDE_SUBAGENT],
};
pub static GEMINI: Client = Client {
    name: AGENT_GEMINI,
    title: "Gemini CLI",
    aliases: &["gemini-cli"],
    agents: &[AGENT_GEMINI_SUBAGENT],
};
pub static OPENCODE: Client = Client {
    name: AGENT_OPENCODE,
    title: "OpenCode",
    aliases: &[],
    agents: &[AGENT_OPENCODE_SUBAGENT],
};
pub static VSCODE_COPILOT: Client = Client {
    name: AGENT_VSCODE_COPILOT,
    title: "VS Code Copilot Chat",
    aliases: &["copilot-chat", "vscode"],
    agents: &[],
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
}
