//! The memory and latency gate: CI runs it after the tests, on a small generated store, and
//! it fails the run when a figure passes its limit. It prints every figure every run (one
//! JSON line and a table); docs/benchmarks.md keeps their history.
//!
//! `cargo test --bench gate_bench -- [--messages N] [--work DIR]` (the test profile, as CI
//! builds: the limits below are for that build; `cargo bench` would measure a release
//! build against them and is not what they are for).
//!
//! - memory (stable from run to run, so absolute MiB with a margin): the sync worker's peak
//!   (VmHWM) on a first sync of N messages and on a no-op sync after it, and the serving
//!   front's footprint (`RssAnon + VmSwap`) after full-text searches, SQL and gets.
//! - latency (machine-dependent, so ratios): search, get-session, get-message and SQL p50 over
//!   MCP, each divided by a reference measured in the same run (hashing the corpus's bytes,
//!   best of three), so a slower or busier machine moves both.
//!
//! A limit is a measured figure times a margin: when a change moves a figure on purpose, run
//! this, and set the limit from the new figure in the same commit (and say why).

use std::path::Path;
use std::time::{Duration, Instant};

use pond_benches::corpus::Rng;
use pond_benches::report::r2;
use pond_benches::{report, work};
use pond_protocol::footprint;
use serde_json::{json, Value};

#[allow(dead_code)]
#[path = "front.rs"]
mod front;
use front::{Front, SQL};

const POND: &str = env!("CARGO_BIN_EXE_pond");

/// (figure, limit): a figure over its limit fails the gate. Set from the test-profile build
/// on this project's 2-core machine at 50,000 messages (docs/benchmarks.md, "The gate"):
/// memory 25 % over the figure measured, ratios twice it (a latency that doubles fails).
const LIMITS: &[(&str, f64)] = &[
    ("sync_peak_mib", 470.0),
    ("noop_sync_peak_mib", 170.0),
    ("front_idle_mib", 40.0),
    ("search_ratio", 0.62),
    ("get_session_ratio", 1.0),
    ("get_message_ratio", 0.9),
    ("sql_ratio", 0.7),
];

/// The reference: FNV-1a over every byte of the corpus's files, best of three, ms.
fn reference_ms(corpus: &Path) -> f64 {
    let mut files = Vec::new();
    let mut stack = vec![corpus.to_owned()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("corpus folder").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(std::fs::read(&p).expect("corpus file"));
            }
        }
    }
    let mut best = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for f in &files {
            for &b in f {
                h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
            }
        }
        std::hint::black_box(h);
        best = best.min(t.elapsed().as_secs_f64() * 1000.0);
    }
    best
}

/// `pond sync` of `corpus` into `store`: (wall ms as the report says, worker peak MiB).
fn sync(store: &Path, corpus: &Path) -> (u64, u64) {
    let out = std::process::Command::new(POND)
        .arg("--store")
        .arg(store)
        .args(["sync", "--no-embed", "--json", "--path"])
        .arg(corpus)
        .env("POND_AUTO_SYNC_MINS", "0")
        .output()
        .expect("run pond sync");
    assert!(
        out.status.success(),
        "pond sync failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("sync report as JSON");
    (
        v["elapsed_ms"].as_u64().unwrap_or(0),
        v["peak_kib"].as_u64().unwrap_or(0) >> 10,
    )
}

/// The serving front: p50 ms of search, get-session, get-message and SQL, and its
/// footprint (MiB) after them and two seconds idle.
async fn serve(store: &Path) -> Value {
    let mut cmd = tokio::process::Command::new(POND);
    cmd.arg("--store")
        .arg(store)
        .args(["mcp", "--standalone"])
        .env("POND_AUTO_SYNC_MINS", "0");
    let front = Front::start(cmd, |_| {}).await;
    let mut rng = Rng::new(11);
    // One of each first: workers spawned, caches warm.
    front.call("pond_search", json!({"query": "parser"})).await;
    front.call("pond_sql", json!({"query": SQL[0]})).await;
    let mut search = Vec::new();
    for _ in 0..40 {
        let q = rng.pick(work::QUERY_TERMS).to_string();
        search.push(front.call("pond_search", json!({"query": q})).await.0);
    }
    let mut sql = Vec::new();
    for _ in 0..3 {
        for q in SQL {
            sql.push(front.call("pond_sql", json!({"query": q})).await.0);
        }
    }
    let (mut session, mut message) = (Vec::new(), Vec::new());
    for row in front.message_ids(30).await {
        message.push(
            front
                .call("pond_get_message", json!({"id": row["id"]}))
                .await
                .0,
        );
        let args = json!({"id": row["session_id"], "limit": 20});
        session.push(front.call("pond_get_session", args).await.0);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = footprint::of_pid(front.pid).unwrap_or_default();
    front.close().await;
    json!({
        "search_p50_ms": r2(report::percentile(&mut search, 50.0)),
        "get_session_p50_ms": r2(report::percentile(&mut session, 50.0)),
        "get_message_p50_ms": r2(report::percentile(&mut message, 50.0)),
        "sql_p50_ms": r2(report::percentile(&mut sql, 50.0)),
        "front_idle_mib": idle.footprint_kib() >> 10,
    })
}

fn main() {
    work::accept(&["--messages"], &[]);
    let messages = work::num("--messages", 50_000);
    let (corpus, _) = work::corpus(messages).expect("corpus");
    let store = work::work_dir().join(format!("gate-store-{messages}"));
    let _ = std::fs::remove_dir_all(&store);
    let reference = reference_ms(&corpus);
    let (sync_ms, sync_peak) = sync(&store, &corpus);
    let (noop_ms, noop_peak) = sync(&store, &corpus);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let served = rt.block_on(serve(&store));
    let _ = std::fs::remove_dir_all(&store);
    let ratio = |k: &str| r2(served[k].as_f64().unwrap_or(0.0) / reference);
    let mut figures = json!({
        "profile": if cfg!(debug_assertions) { "test (debug)" } else { "release" },
        "messages": messages,
        "malloc_trim": "off",
        "reference_ms": r2(reference),
        "sync_ms": sync_ms,
        "sync_peak_mib": sync_peak,
        "noop_sync_ms": noop_ms,
        "noop_sync_peak_mib": noop_peak,
        "search_ratio": ratio("search_p50_ms"),
        "get_session_ratio": ratio("get_session_p50_ms"),
        "get_message_ratio": ratio("get_message_p50_ms"),
        "sql_ratio": ratio("sql_p50_ms"),
    });
    figures
        .as_object_mut()
        .unwrap()
        .extend(served.as_object().unwrap().clone());
    let mut over = Vec::new();
    if cfg!(debug_assertions) {
        for (name, limit) in LIMITS {
            let v = figures[*name].as_f64().unwrap_or(f64::MAX);
            if *limit > 0.0 && v > *limit {
                over.push(format!("{name} = {v} is over its limit {limit}"));
            }
        }
    }
    figures["gate"] = json!(if over.is_empty() { "pass" } else { "fail" });
    report::print("gate_bench", &figures);
    if !over.is_empty() {
        eprintln!("gate_bench: {}", over.join("; "));
        std::process::exit(1);
    }
}
