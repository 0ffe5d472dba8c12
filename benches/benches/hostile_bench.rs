//! What hostile input costs: the sync worker's peak on files built to blow it up, and the
//! long-lived front's footprint while it answers requests built to grow it.
//!
//! Sync: a fresh store per file, `pond sync --json` through a real sync worker, its peak
//! (VmHWM) from the report. Inputs: one 300 MB session file; one 8 MiB line of 2.8 million
//! content blocks; 10 MiB of blank lines. Front: `pond mcp` on a store whose session holds
//! 4 MB tool results, 8 concurrent `pond_get_session` calls of it, an 8 MB search query and
//! `SELECT repeat('x', 200000000)`; the front's footprint (RssAnon + VmSwap) sampled every
//! 20 ms before, during and after. `malloc_trim` is not called (pond never calls it).
//!
//! `cargo bench --workspace --bench hostile_bench` (release; about 2 minutes here).

// Shared with serve_mem_bench, which uses all of it.
#[allow(dead_code)]
#[path = "front.rs"]
mod front;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pond_benches::report;
use pond_protocol::footprint;
use serde_json::{json, Value};

fn pond() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pond"));
    c.env("POND_AUTO_SYNC_MINS", "0");
    c
}

fn user_line(uuid: &str, session: &str, content: &Value) -> String {
    json!({"type": "user", "uuid": uuid, "sessionId": session, "cwd": "/home/b",
        "timestamp": "2026-06-01T10:00:00Z", "message": {"role": "user", "content": content}})
    .to_string()
}

/// Sync `dir` into a fresh store: (worker peak MiB, seconds, the report).
fn sync_peak(work: &Path, dir: &Path) -> (f64, f64, Value) {
    let store = work.join(format!(
        "store-{}",
        dir.file_name().unwrap().to_string_lossy()
    ));
    let out = pond()
        .arg("--store")
        .arg(&store)
        .args(["sync", "--path", dir.to_str().unwrap(), "--json"])
        .output()
        .expect("run pond sync");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("report");
    let peak = r["peak_rss_kib"].as_f64().unwrap_or(0.0) / 1024.0;
    let secs = r["elapsed_ms"].as_f64().unwrap_or(0.0) / 1000.0;
    (peak, secs, r)
}

fn write_file(dir: &Path, name: &str, lines: impl Iterator<Item = String>) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for l in lines {
        f.write_all(l.as_bytes()).unwrap();
        f.write_all(b"\n").unwrap();
    }
    f.flush().unwrap();
    path
}

fn footprint_mib(pid: u32) -> f64 {
    footprint::of_pid(pid).map_or(0.0, |f| f.footprint_kib() as f64 / 1024.0)
}

/// Sample `pid`'s footprint every 20 ms while `f` runs: (peak during, after).
async fn watched<F: std::future::Future<Output = ()>>(pid: u32, f: F) -> (f64, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let kib = footprint::of_pid(pid).map_or(0, |f| f.footprint_kib());
                peak.fetch_max(kib, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    f.await;
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    (
        peak.load(Ordering::Relaxed) as f64 / 1024.0,
        footprint_mib(pid),
    )
}

/// A tool call that may be refused (a tool error), unlike [`front::Front::call`].
async fn raw_call(f: &front::Front, name: &str, args: Value) -> rmcp::model::CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let req = rmcp::model::CallToolRequestParams::new(name.to_owned()).with_arguments(args);
    f.client.call_tool(req).await.expect("tool call")
}

fn main() {
    pond_benches::work::accept(&[], &[]);
    let work = tempfile::tempdir().expect("temp dir");
    let work = work.path();
    let mut figures = serde_json::Map::new();

    // One 300 MB session file: 30,000 lines of 10 KB.
    let text = "lorem ipsum dolor sit amet ".repeat(380);
    let big = write_file(
        &work.join("big"),
        "s-big.jsonl",
        (0..30_000).map(|i| user_line(&format!("b{i}"), "s-big", &json!(text))),
    );
    let mb = std::fs::metadata(&big).unwrap().len() as f64 / 1e6;
    let (peak, secs, r) = sync_peak(work, &work.join("big"));
    assert_eq!(r["messages_added"], 30_000);
    figures.insert("big_file_mb".into(), json!(report::r2(mb)));
    figures.insert("big_file_sync_peak_mib".into(), json!(report::r2(peak)));
    figures.insert("big_file_sync_s".into(), json!(report::r2(secs)));

    // One 8 MiB line of 2.8 million content blocks.
    let blocks = vec!["{}"; 2_800_000].join(",");
    write_file(
        &work.join("line"),
        "s-line.jsonl",
        std::iter::once(
            user_line("l1", "s-line", &Value::Null).replace("null", &format!("[{blocks}]")),
        ),
    );
    let (peak, _, r) = sync_peak(work, &work.join("line"));
    assert_eq!(r["records_added"], 1);
    figures.insert("blocks_line_sync_peak_mib".into(), json!(report::r2(peak)));

    // 10 MiB of blank lines.
    std::fs::create_dir_all(work.join("blank")).unwrap();
    std::fs::write(work.join("blank/s-blank.jsonl"), "\n".repeat(10 << 20)).unwrap();
    let (peak, _, r) = sync_peak(work, &work.join("blank"));
    assert_eq!(r["skipped"], 10 << 20);
    figures.insert("blank_lines_sync_peak_mib".into(), json!(report::r2(peak)));

    // The front: a session of 20 messages, each with a 4 MB tool result.
    let result = "r".repeat(4 << 20);
    let session = "s-tools";
    write_file(
        &work.join("tools"),
        "s-tools.jsonl",
        (0..20).map(|i| {
            user_line(
                &format!("t{i}"),
                session,
                &json!([{"type": "tool_result", "tool_use_id": format!("c{i}"), "content": result}]),
            )
        }),
    );
    let store = work.join("store-front");
    let ok = pond()
        .arg("--store")
        .arg(&store)
        .args(["sync", "--path", work.join("tools").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(ok.status.success());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_pond"));
        cmd.env("POND_AUTO_SYNC_MINS", "0")
            .arg("--store")
            .arg(&store)
            .args(["mcp", "--standalone"]);
        let f = front::Front::start(cmd, |_| {}).await;
        f.call("pond_search", json!({"query": "warm up"})).await;
        let before = footprint_mib(f.pid);
        let (peak, after) = watched(f.pid, async {
            let calls =
                (0..8).map(|_| f.call("pond_get_session", json!({"id": session, "limit": 20})));
            futures::future::join_all(calls).await;
        })
        .await;
        figures.insert("front_before_mib".into(), json!(report::r2(before)));
        figures.insert(
            "front_get_session_x8_peak_mib".into(),
            json!(report::r2(peak)),
        );
        figures.insert(
            "front_get_session_x8_after_mib".into(),
            json!(report::r2(after)),
        );
        let (peak, after) = watched(f.pid, async {
            let huge = "needle ".repeat(8 << 17);
            let r = raw_call(&f, "pond_search", json!({ "query": huge })).await;
            assert_eq!(r.is_error, Some(true), "refused at the edge");
        })
        .await;
        figures.insert("front_8mb_query_peak_mib".into(), json!(report::r2(peak)));
        figures.insert("front_8mb_query_after_mib".into(), json!(report::r2(after)));
        let (peak, after) = watched(f.pid, async {
            let q = json!({"query": "SELECT repeat('x', 200000000) AS v"});
            let r = raw_call(&f, "pond_sql", q).await;
            assert_eq!(r.is_error, Some(true), "refused in the worker");
        })
        .await;
        figures.insert("front_repeat_sql_peak_mib".into(), json!(report::r2(peak)));
        figures.insert(
            "front_repeat_sql_after_mib".into(),
            json!(report::r2(after)),
        );
        f.close().await;
    });
    report::print("hostile_bench", &Value::Object(figures));
}
