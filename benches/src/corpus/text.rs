//! The words, prompts, answers and tool traffic the generator writes (fixed vocabularies,
//! drawn by the seeded [`Rng`]).

use std::fmt::Write as _;

use serde_json::json;

use super::Rng;

pub(super) const WORDS: &[&str] = &[
    "the",
    "test",
    "build",
    "error",
    "function",
    "file",
    "config",
    "module",
    "request",
    "user",
    "value",
    "cache",
    "index",
    "query",
    "parser",
    "server",
    "client",
    "database",
    "schema",
    "migration",
    "handler",
    "route",
    "token",
    "session",
    "memory",
    "thread",
    "process",
    "worker",
    "queue",
    "timeout",
    "retry",
    "backoff",
    "upload",
    "download",
    "stream",
    "buffer",
    "socket",
    "header",
    "payload",
    "response",
    "status",
    "field",
    "column",
    "table",
    "row",
    "batch",
    "commit",
    "branch",
    "merge",
    "rebase",
    "release",
    "version",
    "dependency",
    "crate",
    "package",
    "import",
    "export",
    "type",
    "trait",
    "struct",
    "enum",
    "closure",
    "iterator",
    "future",
    "async",
    "await",
    "lock",
    "mutex",
    "channel",
    "signal",
    "panic",
    "overflow",
    "allocation",
    "leak",
    "profile",
    "benchmark",
    "latency",
    "throughput",
    "deploy",
    "container",
    "cluster",
    "pipeline",
    "workflow",
    "lint",
    "format",
    "warning",
    "fixture",
    "snapshot",
    "assertion",
    "mock",
    "coverage",
    "regression",
    "flaky",
    "timezone",
    "locale",
    "encoding",
    "unicode",
    "newline",
    "checksum",
    "hash",
    "signature",
    "certificate",
    "permission",
    "sandbox",
    "environment",
    "variable",
    "secret",
    "credential",
    "endpoint",
    "pagination",
    "cursor",
    "offset",
    "limit",
    "filter",
    "sort",
    "aggregate",
    "join",
    "invoice",
    "checkout",
    "cart",
    "price",
    "discount",
    "currency",
    "rounding",
    "decimal",
    "float",
    "integer",
    "string",
    "slice",
    "vector",
    "matrix",
    "embedding",
    "tokenizer",
    "prompt",
    "model",
    "agent",
    "tool",
    "result",
    "log",
    "trace",
    "span",
    "metric",
    "alert",
    "dashboard",
    "webhook",
    "callback",
    "event",
    "listener",
    "subscriber",
    "publisher",
    "scheduler",
    "cron",
    "job",
    "task",
    "daemon",
    "front",
    "restart",
    "shutdown",
    "graceful",
    "healthcheck",
    "readiness",
    "liveness",
    "probe",
    "ingress",
    "proxy",
    "gateway",
    "compression",
    "zstd",
    "gzip",
    "archive",
    "backup",
    "restore",
    "replica",
    "shard",
    "partition",
    "compaction",
    "vacuum",
    "transaction",
    "rollback",
    "deadlock",
    "isolation",
];
pub(super) const VERBS: &[&str] = &[
    "fails",
    "breaks",
    "hangs",
    "crashes",
    "returns",
    "drops",
    "leaks",
    "times out",
    "blocks",
    "duplicates",
    "skips",
    "retries",
    "parses",
    "rejects",
    "accepts",
    "overflows",
    "truncates",
    "rounds",
    "ignores",
    "caches",
    "flushes",
    "reorders",
    "corrupts",
    "misses",
    "panics",
];
pub(super) const TOOLS: &[&str] = &["Bash", "Read", "Edit", "Grep", "Glob", "Write", "TodoWrite"];
pub(super) const EXTS: &[&str] = &["rs", "py", "ts", "go", "sql", "toml", "md", "yaml"];
pub(super) const PROJECT_WORDS: &[&str] = &[
    "shop",
    "api",
    "billing",
    "infra",
    "dotfiles",
    "web",
    "mobile",
    "search",
    "ledger",
    "scheduler",
    "gateway",
    "notebook",
    "etl",
    "auth",
    "docs",
    "cli",
    "engine",
    "portal",
    "metrics",
    "chat",
];

pub(super) fn sentence(r: &mut Rng, out: &mut String, min: u64, max: u64) {
    let n = r.range(min, max);
    for i in 0..n {
        if i > 0 {
            out.push(' ');
        }
        if i == n / 2 && r.chance(0.5) {
            out.push_str(r.pick::<&str>(VERBS));
        } else if r.chance(0.04) {
            let _ = write!(out, "`{}_{}()`", r.zipf(WORDS), r.zipf(WORDS));
        } else if r.chance(0.03) {
            let _ = write!(
                out,
                "src/{}/{}.{}",
                r.zipf(WORDS),
                r.zipf(WORDS),
                r.pick(EXTS)
            );
        } else {
            out.push_str(r.zipf::<&str>(WORDS));
        }
    }
}

pub(super) fn prompt(r: &mut Rng) -> String {
    let mut s = String::new();
    let openers = [
        "why does the",
        "can you fix the",
        "please look at the",
        "how do I make the",
        "the",
        "add a",
        "refactor the",
        "explain the",
    ];
    s.push_str(r.pick::<&str>(&openers));
    s.push(' ');
    sentence(r, &mut s, 5, 30);
    s.push(if r.chance(0.6) { '?' } else { '.' });
    if r.chance(0.25) {
        s.push_str("\n\n");
        sentence(r, &mut s, 10, 60);
        s.push('.');
    }
    s
}

pub(super) fn answer(r: &mut Rng) -> String {
    let mut s = String::new();
    for p in 0..r.range(1, 4) {
        if p > 0 {
            s.push_str("\n\n");
        }
        for _ in 0..r.range(1, 4) {
            sentence(r, &mut s, 8, 28);
            s.push_str(". ");
        }
    }
    if r.chance(0.4) {
        s.push_str("\n\n");
        for i in 1..=r.range(2, 5) {
            let _ = write!(s, "{i}. ");
            sentence(r, &mut s, 4, 12);
            s.push('\n');
        }
    }
    if r.chance(0.25) {
        let _ = write!(s, "\n```{}\n", r.pick(EXTS));
        for _ in 0..r.range(2, 12) {
            let _ = writeln!(
                s,
                "let {} = {}({});",
                r.zipf(WORDS),
                r.zipf(WORDS),
                r.zipf(WORDS)
            );
        }
        s.push_str("```");
    }
    s
}

pub(super) fn tool_output(r: &mut Rng) -> String {
    let mut s = String::new();
    for i in 0..r.range(1, 40) {
        let _ = writeln!(
            s,
            "src/{}/{}.{}:{}: {} {} {}",
            r.zipf(WORDS),
            r.zipf(WORDS),
            r.pick(EXTS),
            i * 7 + 1,
            r.zipf(WORDS),
            r.zipf(WORDS),
            r.zipf(WORDS)
        );
    }
    s
}

pub(super) fn tool_input(r: &mut Rng, tool: &str) -> serde_json::Value {
    let path = format!("src/{}/{}.{}", r.zipf(WORDS), r.zipf(WORDS), r.pick(EXTS));
    match tool {
        "Bash" => {
            json!({"command": format!("cargo test {}", r.zipf(WORDS)), "description": "Run the tests"})
        }
        "Grep" => json!({"pattern": r.zipf(WORDS), "path": "src"}),
        "Edit" => {
            json!({"file_path": path, "old_string": r.zipf(WORDS), "new_string": r.zipf(WORDS)})
        }
        _ => json!({"file_path": path}),
    }
}
