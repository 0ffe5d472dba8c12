//! `gen-corpus --messages N --out DIR [--seed S]`: write a synthetic session tree.

use std::path::PathBuf;

use pond_benches::corpus::{generate, Spec};

fn main() -> anyhow::Result<()> {
    let mut messages = 100_000u64;
    let mut seed = 1u64;
    let mut out: Option<PathBuf> = None;
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
            other => anyhow::bail!(
                "unknown argument {other}; usage: gen-corpus --messages N --out DIR [--seed S]"
            ),
        }
    }
    let out = out.ok_or_else(|| anyhow::anyhow!("--out DIR is required"))?;
    let started = std::time::Instant::now();
    let s = generate(&out, &Spec::new(messages, seed))?;
    eprintln!(
        "wrote {} messages ({} searchable) in {} sessions, {} files ({} subagent), {} lines, {:.1} MiB to {} in {:.1} s",
        s.messages, s.searchable_messages, s.sessions, s.files, s.subagent_files, s.lines,
        s.bytes as f64 / (1 << 20) as f64, out.display(), started.elapsed().as_secs_f64()
    );
    Ok(())
}
