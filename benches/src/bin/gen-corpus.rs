//! `gen-corpus --messages N --out DIR [--seed S] [--codex-share F] [--copilot-share F]
//! [--cursor-share F] [--gemini-share F] [--opencode-share F] [--cursor-ide-share F]
//! [--vscode-copilot-share F]`: write a synthetic session tree. The mix of clients is by share
//! of sessions: Codex 0.2, GitHub Copilot CLI, Cursor's agent, Gemini CLI, OpenCode (one
//! database, `opencode/opencode.db`), Cursor's IDE (one database,
//! `cursor-ide/globalStorage/state.vscdb`) and VS Code's Copilot Chat (change logs under
//! `vscode-copilot/workspaceStorage/`) 0 unless given, Claude Code the rest (with its subagent
//! files). DIR must be new or empty.

use std::path::PathBuf;

use pond_benches::corpus::{generate, Spec};

const USAGE: &str = "usage: gen-corpus --messages N --out DIR [--seed S] [--codex-share F] [--copilot-share F] [--cursor-share F] [--gemini-share F] [--opencode-share F] [--cursor-ide-share F] [--vscode-copilot-share F]\n(shares of sessions: Codex 0.2, the other clients 0 unless given, Claude Code the rest; DIR new or empty)";

fn main() -> anyhow::Result<()> {
    let mut messages = 100_000u64;
    let mut seed = 1u64;
    let mut out: Option<PathBuf> = None;
    let mut spec = Spec::new(0, 0);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| anyhow::anyhow!("{a} needs a value"))
        };
        match a.as_str() {
            "--messages" => messages = value()?.replace('_', "").parse()?,
            "--seed" => seed = value()?.parse()?,
            "--out" => out = Some(value()?.into()),
            "--codex-share" => spec.codex_share = value()?.parse()?,
            "--copilot-share" => spec.copilot_share = value()?.parse()?,
            "--cursor-share" => spec.cursor_share = value()?.parse()?,
            "--gemini-share" => spec.gemini_share = value()?.parse()?,
            "--opencode-share" => spec.opencode_share = value()?.parse()?,
            "--cursor-ide-share" => spec.cursor_ide_share = value()?.parse()?,
            "--vscode-copilot-share" => spec.vscode_copilot_share = value()?.parse()?,
            "--help" | "-h" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => anyhow::bail!("unknown argument {other}; {USAGE}"),
        }
    }
    let out = out.ok_or_else(|| anyhow::anyhow!("--out DIR is required"))?;
    // A second corpus over the first would mix them (files of both; the databases refuse).
    if std::fs::read_dir(&out).is_ok_and(|mut d| d.next().is_some()) {
        anyhow::bail!(
            "{} is not empty: give a new folder (or remove this one)",
            out.display()
        );
    }
    let started = std::time::Instant::now();
    let shares = [
        spec.codex_share,
        spec.copilot_share,
        spec.cursor_share,
        spec.gemini_share,
        spec.opencode_share,
        spec.cursor_ide_share,
        spec.vscode_copilot_share,
    ];
    if shares.iter().any(|s| *s < 0.0) || shares.iter().sum::<f64>() > 1.0 {
        anyhow::bail!(
            "the --*-share values are shares of sessions: each at least 0, together at most 1"
        );
    }
    let s = generate(
        &out,
        &Spec {
            messages,
            seed,
            ..spec
        },
    )?;
    eprintln!(
        "wrote {} messages ({} searchable) in {} sessions, {} files ({} subagent), {} lines, {:.1} MiB to {} in {:.1} s",
        s.messages, s.searchable_messages, s.sessions, s.files, s.subagent_files, s.lines,
        s.bytes as f64 / (1 << 20) as f64, out.display(), started.elapsed().as_secs_f64()
    );
    Ok(())
}
