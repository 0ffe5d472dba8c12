//! Ingest throughput and no-op re-sync time.
//!
//! `cargo bench --workspace --bench ingest_bench -- [--messages N] [--clients] [--work DIR]`
//! Generates (once) a corpus of N messages, syncs it into a fresh store, then syncs again
//! (nothing new). With `../shared/corpus` present, does the same on the real files. With
//! `--clients`, also one corpus of N messages per client the generator writes (Claude Code,
//! Codex, GitHub Copilot CLI and VS Code Copilot Chat, Cursor agent and IDE, Gemini CLI,
//! OpenCode), for each client's throughput.
//! Runs the sync job in this process, the same code `pond sync` runs.
//!
//! Messages per second do not compare clients: a message is a different amount of
//! conversation in each format (Claude Code writes a tool call and its result as two messages,
//! Gemini CLI folds a turn's calls and results into one). The generator gives every client the
//! same turn (a prompt, up to four tool calls with their output, an answer), so prompts per
//! second (`{label}_prompts_per_s`) is the rate at which the same conversation is archived.

use std::path::Path;
use std::time::Instant;

use pond_benches::{report, work};
use pond_protocol::sync::{SyncRequest, SyncSource};
use pond_store::{Store, StoreConfig};
use serde_json::json;

async fn sync_once(store: &Store, path: &Path) -> (f64, pond_protocol::sync::SyncReport) {
    let req = SyncRequest {
        sources: vec![SyncSource {
            agent: None,
            path: path.to_path_buf(),
        }],
        skip_index: false,
        exclude_projects: Vec::new(),
    };
    let t = Instant::now();
    let r = pond_workers::sync::run(store, &req, &mut |_| {})
        .await
        .expect("sync");
    (t.elapsed().as_secs_f64(), r)
}

async fn bench(
    label: &str,
    corpus: &Path,
    figures: &mut serde_json::Map<String, serde_json::Value>,
) {
    let store_dir = work::work_dir().join(format!("ingest-store-{label}"));
    let _ = std::fs::remove_dir_all(&store_dir);
    let store = Store::open(&store_dir, StoreConfig::default()).expect("store");
    let (secs, r) = sync_once(&store, corpus).await;
    let (noop, r2) = sync_once(&store, corpus).await;
    assert_eq!(r2.messages_added, 0);
    figures.insert(format!("{label}_messages"), json!(r.messages_added));
    let prompts = store
        .require("messages")
        .await
        .expect("messages")
        .count_rows(Some("role = 'user' AND searchable".into()))
        .await
        .expect("count prompts");
    figures.insert(format!("{label}_prompts"), json!(prompts));
    figures.insert(
        format!("{label}_prompts_per_s"),
        json!((prompts as f64 / secs).round()),
    );
    figures.insert(
        format!("{label}_mib"),
        json!((r.bytes_read as f64 / (1 << 20) as f64).round()),
    );
    figures.insert(format!("{label}_sync_s"), json!(report::r2(secs)));
    figures.insert(
        format!("{label}_messages_per_s"),
        json!((r.messages_added as f64 / secs).round()),
    );
    let secs_of = |ms: u64| json!(ms as f64 / 1000.0);
    figures.insert(format!("{label}_read_parse_s"), secs_of(r.read_ms));
    figures.insert(format!("{label}_write_s"), secs_of(r.write_ms));
    figures.insert(format!("{label}_index_s"), secs_of(r.index_ms));
    figures.insert(
        format!("{label}_noop_resync_s"),
        json!((noop * 1000.0).round() / 1000.0),
    );
    figures.insert(
        format!("{label}_store_mib"),
        json!((work::dir_bytes(&store_dir) as f64 / (1 << 20) as f64).round()),
    );
}

fn main() {
    pond_benches::work::accept(&["--messages"], &["--clients"]);
    let messages = work::num("--messages", 100_000);
    // The sync runs in this process, set up as pond's sync worker is.
    pond_workers::process::few_arenas();
    pond_store::indexes::size_build_threads();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut figures = serde_json::Map::new();
    figures.insert(
        "profile".into(),
        json!(if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }),
    );
    rt.block_on(async {
        let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus");
        if shared.is_dir() {
            bench("shared", &shared, &mut figures).await;
        }
        let (corpus, _) = work::corpus(messages).expect("corpus");
        bench("generated", &corpus, &mut figures).await;
        if work::flag("--clients") {
            for client in [
                "claude-code",
                "codex",
                "copilot",
                "cursor",
                "cursor-ide",
                "gemini",
                "opencode",
                "vscode-copilot",
            ] {
                let (corpus, _) = work::client_corpus(client, messages).expect("corpus");
                bench(client, &corpus, &mut figures).await;
            }
        }
    });
    let peak = pond_front::footprint::of_self().map_or(0, |f| f.hwm_kib);
    figures.insert("bench_process_peak_rss_mib".into(), json!(peak / 1024));
    report::print("ingest_bench", &serde_json::Value::Object(figures));
}
