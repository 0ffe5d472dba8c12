//! Where benches keep their generated corpora and stores, so a second run reuses them.

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use futures::TryStreamExt;
use pond_protocol::sync::{SyncRequest, SyncSource};
use pond_store::{Store, StoreConfig};

use crate::corpus::{generate, Spec, Stats};

/// The bench's arguments as clap read them ([`accept`]).
static ARGS: std::sync::OnceLock<clap::ArgMatches> = std::sync::OnceLock::new();

/// Declare the bench's arguments: `options` take a value (`--messages N`), `flags` do not;
/// `--work DIR` is every bench's. An argument not declared (a typo) fails the bench with
/// clap's error, which names the closest declared one. Call first thing in `main`.
pub fn accept(options: &[&'static str], flags: &[&'static str]) {
    let name = std::env::args()
        .next()
        .and_then(|a| {
            Path::new(&a)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "bench".into());
    let long = |o: &'static str| o.trim_start_matches("--");
    let name: &'static str = Box::leak(name.into_boxed_str());
    let mut cmd = clap::Command::new(name)
        // cargo bench passes `--bench` to every bench binary.
        .arg(
            clap::Arg::new("bench")
                .long("bench")
                .action(clap::ArgAction::SetTrue)
                .hide(true),
        )
        .arg(clap::Arg::new("work").long("work").value_name("DIR"));
    for o in options {
        cmd = cmd.arg(clap::Arg::new(long(o)).long(long(o)).value_name("VALUE"));
    }
    for f in flags {
        cmd = cmd.arg(
            clap::Arg::new(long(f))
                .long(long(f))
                .action(clap::ArgAction::SetTrue),
        );
    }
    let matches = cmd.get_matches();
    ARGS.set(matches).expect("accept is called once");
}

fn matches() -> &'static clap::ArgMatches {
    ARGS.get()
        .expect("the bench declares its arguments first (work::accept)")
}

/// `--name value`, if given (`name` must be declared in [`accept`]).
pub fn arg(name: &str) -> Option<String> {
    matches()
        .get_one::<String>(name.trim_start_matches("--"))
        .cloned()
}

/// `--name N` as a number (`2_100_000` allowed), or `default`.
pub fn num(name: &str, default: u64) -> u64 {
    arg(name).map_or(default, |v| {
        v.replace('_', "")
            .parse()
            .unwrap_or_else(|_| panic!("{name} takes a number, not {v:?}"))
    })
}

/// Whether the flag `name` (declared in [`accept`]) was given.
pub fn flag(name: &str) -> bool {
    matches().get_flag(name.trim_start_matches("--"))
}

/// `--work DIR`, default `$CARGO_TARGET_DIR/pond-bench` (else `target/pond-bench`).
pub fn work_dir() -> PathBuf {
    arg("--work").map(PathBuf::from).unwrap_or_else(|| {
        std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("target"))
            .join("pond-bench")
    })
}

/// The generated corpus of `messages` messages (seed 1), written once and reused.
pub fn corpus(messages: u64) -> std::io::Result<(PathBuf, Option<Stats>)> {
    cached(&format!("corpus-{messages}"), &Spec::new(messages, 1))
}

/// The corpus a bench reads: `--corpus DIR`, else the generated corpus of `--messages N`
/// (default 20,000).
pub fn corpus_arg() -> PathBuf {
    match arg("--corpus") {
        Some(dir) => PathBuf::from(dir),
        None => corpus(num("--messages", 20_000)).expect("corpus").0,
    }
}

/// A generated corpus of one client's sessions only (`claude-code`, `codex`, `copilot`,
/// `cursor`, `cursor-ide`, `gemini`, `opencode` or `vscode-copilot`),
/// `messages` messages, seed 1, written once and reused.
pub fn client_corpus(client: &str, messages: u64) -> std::io::Result<(PathBuf, Option<Stats>)> {
    let base = Spec::new(messages, 1);
    let spec = match client {
        "claude-code" => Spec {
            codex_share: 0.0,
            ..base
        },
        "codex" => Spec {
            codex_share: 1.0,
            ..base
        },
        "copilot" => Spec {
            codex_share: 0.0,
            copilot_share: 1.0,
            ..base
        },
        "cursor" => Spec {
            codex_share: 0.0,
            cursor_share: 1.0,
            ..base
        },
        "gemini" => Spec {
            codex_share: 0.0,
            gemini_share: 1.0,
            ..base
        },
        "opencode" => Spec {
            codex_share: 0.0,
            opencode_share: 1.0,
            ..base
        },
        "cursor-ide" => Spec {
            codex_share: 0.0,
            cursor_ide_share: 1.0,
            ..base
        },
        "vscode-copilot" => Spec {
            codex_share: 0.0,
            vscode_copilot_share: 1.0,
            ..base
        },
        other => panic!(
            "the generator writes claude-code, codex, copilot, cursor, cursor-ide, gemini, opencode or vscode-copilot, not {other}"
        ),
    };
    cached(&format!("corpus-{client}-{messages}"), &spec)
}

fn cached(name: &str, spec: &Spec) -> std::io::Result<(PathBuf, Option<Stats>)> {
    let dir = work_dir().join(name);
    let done = dir.join(".complete");
    if done.exists() {
        return Ok((dir, None));
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    let stats = generate(&dir, spec)?;
    std::fs::write(&done, format!("{stats:?}\n"))?;
    Ok((dir, Some(stats)))
}

pub fn dir_bytes(p: &Path) -> u64 {
    let mut n = 0;
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => n += dir_bytes(&e.path()),
                Ok(_) => n += e.metadata().map_or(0, |m| m.len()),
                Err(_) => {}
            }
        }
    }
    n
}

/// A store holding the generated corpus of `messages` messages, synced (in this process)
/// once and reused: `<work>/fts-store-<messages>`.
pub async fn synced_store(messages: u64) -> PathBuf {
    let (corpus, _) = corpus(messages).expect("corpus");
    synced_store_of(&corpus, work_dir().join(format!("fts-store-{messages}"))).await
}

/// `store_dir` holding the session files under `corpus`, synced (in this process) once and
/// reused; its row map is brought up to date.
pub async fn synced_store_of(corpus: &Path, store_dir: PathBuf) -> PathBuf {
    let ready = store_dir.join(".complete");
    if !ready.exists() {
        let _ = std::fs::remove_dir_all(&store_dir);
        let store = Store::open(&store_dir, StoreConfig::default()).expect("open store");
        let req = SyncRequest {
            sources: vec![SyncSource {
                agent: None,
                path: corpus.to_owned(),
            }],
            skip_index: false,
            exclude_projects: Vec::new(),
        };
        pond_workers::sync::run(&store, &req, &mut |_| {})
            .await
            .expect("sync");
        std::fs::write(&ready, "").expect("mark the store complete");
    }
    // Stores made before sync built the row map get one here.
    let store = Store::open(&store_dir, StoreConfig::default()).expect("open store");
    let lock = store.lock().expect("store lock");
    store.refresh_rowmap(&lock).await.expect("row map");
    store_dir
}

/// Words the query benches search for: one to three of them per query.
pub const QUERY_TERMS: &[&str] = &[
    "timeout",
    "retry backoff",
    "checkout total",
    "migration",
    "deadlock",
    "tokenizer",
    "cache",
    "flaky test",
    "invoice rounding",
    "memory leak",
    "webhook",
    "compaction",
    "graceful shutdown",
    "pagination cursor",
    "unicode",
    "certificate",
    "parser error",
    "decimal",
    "replica",
    "zstd compression",
    "scheduler cron",
    "sandbox permission",
];

/// Every searchable message: (id, text).
pub async fn searchable_messages(store: &Store) -> Vec<(String, String)> {
    let ds = store.require("messages").await.expect("messages");
    let mut scan = ds.scan();
    scan.project(&["id", "search_text"])
        .unwrap()
        .filter("searchable")
        .unwrap();
    let batches: Vec<_> = scan
        .try_into_stream()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut out = Vec::new();
    for b in &batches {
        let id = b.column_by_name("id").unwrap().as_string::<i32>();
        let text = b.column_by_name("search_text").unwrap().as_string::<i32>();
        for i in 0..b.num_rows() {
            out.push((id.value(i).to_owned(), text.value(i).to_owned()));
        }
    }
    out
}
