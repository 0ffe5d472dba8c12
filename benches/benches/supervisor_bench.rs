//! The supervisor's costs: IPC round trip, worker spawn + handshake, and the front's idle
//! footprint after full-text + SQL + get, multi-process versus `--in-process`.
//!
//! `cargo bench --workspace --bench supervisor_bench -- [--messages N] [--pings P] [--spawns S]
//!  [--queries Q] [--idle-secs T] [--no-rowmap] [--work DIR]`
//!
//! This bench belongs to the root `pond` package (it needs the real binary, which cargo
//! builds for it as `CARGO_BIN_EXE_pond`); it lives here beside the other benches.
//! - spawn: S times, a fresh actor spawns `pond worker sql`, completes the handshake and
//!   answers one ping (cold), then shuts down.
//! - round trip: P pings to one warm worker through the actor (front -> actor -> IPC ->
//!   worker -> IPC -> reader thread -> actor -> caller).
//! - front: `pond mcp` (a child process over stdio, driven by rmcp's client) on the store of
//!   N generated messages; Q full-text searches, SQL of several shapes (a full-scan aggregate
//!   included), gets; then T seconds idle. Footprint = `RssAnon + VmSwap` from `/proc`,
//!   sampled every 50 ms; pond never calls `malloc_trim`, so the figures are with trim off.

use std::time::{Duration, Instant};

use pond_benches::corpus::Rng;
use pond_benches::report::r2;
use pond_benches::work::num;
use pond_benches::{report, work};
use pond_front::{JobOptions, WorkerCommand, Workers, WorkersConfig};
use pond_protocol::footprint;
use pond_protocol::{Job, WorkerKind};
use serde_json::{json, Value};

// Shared with serve_mem_bench, which uses all of it.
#[allow(dead_code)]
#[path = "front.rs"]
mod front;
use front::{Front, SQL};

const POND: &str = env!("CARGO_BIN_EXE_pond");

fn config(store: &std::path::Path) -> WorkersConfig {
    WorkersConfig::new(WorkerCommand {
        exe: POND.into(),
        args: vec!["--store".into(), store.into()],
    })
}

async fn ipc(store: &std::path::Path, spawns: u64, pings: u64) -> Value {
    let mut cold = Vec::new();
    for _ in 0..spawns {
        let w = Workers::start(config(store));
        let t = Instant::now();
        w.run(Job::Ping, JobOptions::default()).await.expect("ping");
        cold.push(t.elapsed().as_secs_f64() * 1000.0);
        w.shutdown().await;
    }
    let w = Workers::start(config(store));
    w.run(Job::Ping, JobOptions::default()).await.expect("ping");
    let mut rtt = Vec::new();
    for _ in 0..pings {
        let t = Instant::now();
        w.run(Job::Ping, JobOptions::default()).await.expect("ping");
        rtt.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let worker_kib = w
        .status()
        .iter()
        .find(|s| s.kind == WorkerKind::Sql)
        .and_then(|s| s.footprint_kib)
        .unwrap_or(0);
    w.shutdown().await;
    json!({
        "spawns": spawns,
        "spawn_handshake_ping_p50_ms": r2(report::percentile(&mut cold, 50.0)),
        "spawn_handshake_ping_max_ms": r2(report::percentile(&mut cold, 100.0)),
        "pings": pings,
        "round_trip_p50_ms": (report::percentile(&mut rtt, 50.0) * 1000.0).round() / 1000.0,
        "round_trip_p99_ms": (report::percentile(&mut rtt, 99.0) * 1000.0).round() / 1000.0,
        "idle_sql_worker_footprint_mib": worker_kib >> 10,
    })
}

/// The front's footprint through one serving run; returns figures for `mode`.
async fn front(store: &std::path::Path, in_process: bool, queries: u64, idle: u64) -> Value {
    let mut cmd = tokio::process::Command::new(POND);
    cmd.arg("--store").arg(store);
    if in_process {
        cmd.arg("--in-process");
    }
    // Serving only: no background sync of this machine's homes into the bench store.
    cmd.args(["mcp", "--standalone"])
        .env("POND_AUTO_SYNC_MINS", "0");
    let front = Front::start(cmd, |_| {}).await;
    let pid = front.pid;
    let call = |name: &'static str, args: Value| front.call(name, args);
    let started = footprint::of_pid(pid).unwrap_or_default();
    let mut peak = 0u64;
    let mut sample = || {
        let f = footprint::of_pid(pid).unwrap_or_default().footprint_kib();
        peak = peak.max(f);
        f
    };
    let mut rng = Rng::new(7);
    let mut fts = Vec::new();
    for _ in 0..queries {
        let q = rng.pick(work::QUERY_TERMS).to_string();
        fts.push(
            call("pond_search", json!({"query": q, "limit": 10}))
                .await
                .0,
        );
        sample();
    }
    let after_fts = sample();
    let mut sql = Vec::new();
    for q in SQL {
        sql.push(
            call("pond_sql", json!({"query": q, "timeout_seconds": 120}))
                .await
                .0,
        );
        sample();
    }
    let after_sql = sample();
    let ids = front.message_ids(20).await;
    let mut get = Vec::new();
    for row in &ids {
        let (ms, _) = call("pond_get_message", json!({"id": row["id"]})).await;
        get.push(ms);
        let (ms, _) = call(
            "pond_get_session",
            json!({"id": row["session_id"], "limit": 20}),
        )
        .await;
        get.push(ms);
        sample();
    }
    let after_get = sample();
    let idle_start = Instant::now();
    while idle_start.elapsed() < Duration::from_secs(idle) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        sample();
    }
    let end = footprint::of_pid(pid).unwrap_or_default();
    let workers: u64 = worker_footprints(pid);
    front.close().await;
    let mode = if in_process { "in_process" } else { "multi" };
    json!({
        format!("{mode}_front_start_mib"): started.footprint_kib() >> 10,
        format!("{mode}_front_after_fts_mib"): after_fts >> 10,
        format!("{mode}_front_after_sql_mib"): after_sql >> 10,
        format!("{mode}_front_after_get_mib"): after_get >> 10,
        format!("{mode}_front_idle_mib"): end.footprint_kib() >> 10,
        format!("{mode}_front_peak_mib"): peak >> 10,
        format!("{mode}_front_vmhwm_mib"): end.hwm_kib >> 10,
        format!("{mode}_workers_idle_mib"): workers >> 10,
        format!("{mode}_fts_p50_ms"): r2(report::percentile(&mut fts, 50.0)),
        format!("{mode}_sql_p50_ms"): r2(report::percentile(&mut sql, 50.0)),
        format!("{mode}_get_p50_ms"): r2(report::percentile(&mut get, 50.0)),
    })
}

/// Footprint of the front's live children, KiB.
fn worker_footprints(front: u32) -> u64 {
    footprint::children(front)
        .into_iter()
        .filter_map(footprint::of_pid)
        .map(|f| f.footprint_kib())
        .sum()
}

fn main() {
    pond_benches::work::accept(
        &[
            "--messages",
            "--pings",
            "--spawns",
            "--queries",
            "--idle-secs",
        ],
        &["--no-rowmap"],
    );
    let messages = num("--messages", 100_000);
    let pings = num("--pings", 2000);
    let spawns = num("--spawns", 20);
    let queries = num("--queries", 100);
    let idle = num("--idle-secs", 10);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let figures = rt.block_on(async {
        let store = work::synced_store(messages).await;
        // `--no-rowmap`: the fronts serve without the row map (every hit from Lance), for
        // the before/after comparison; the map is put back at the end.
        let map = store.join("messages.rmm");
        let aside = store.join("messages.rmm.aside");
        let no_rowmap = work::flag("--no-rowmap");
        if no_rowmap {
            std::fs::rename(&map, &aside).expect("move the row map aside");
        }
        let mut figures = json!({
            "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
            "messages": messages,
            "malloc_trim": "off",
            "rowmap": !no_rowmap,
        });
        let parts = [
            ipc(&store, spawns, pings).await,
            front(&store, false, queries, idle).await,
            front(&store, true, queries, idle).await,
        ];
        if no_rowmap {
            std::fs::rename(&aside, &map).expect("put the row map back");
        }
        let obj = figures.as_object_mut().unwrap();
        for p in parts {
            obj.extend(p.as_object().unwrap().clone());
        }
        let multi = obj["multi_front_idle_mib"].as_f64().unwrap_or(0.0);
        let single = obj["in_process_front_idle_mib"].as_f64().unwrap_or(0.0);
        if single > 0.0 {
            obj.insert("front_idle_ratio".into(), json!(r2(multi / single)));
        }
        figures
    });
    report::print("supervisor_bench", &figures);
}
