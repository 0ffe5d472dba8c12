//! The process tree's memory while `pond mcp` serves a store of N messages through every
//! phase of its life, multi-process (the default) against `--in-process` (the same jobs in
//! the front), with a plot of footprint over time.
//!
//! `cargo bench --workspace --bench serve_mem_bench -- [--messages N | --corpus DIR]
//!  [--queries Q] [--idle-secs T] [--worker-idle-secs W] [--modes multi,in-process]
//!  [--plot FILE.svg] [--work DIR]`
//!
//! The store (built once, reused: `<work>/serve-store-N`): the generated corpus of N
//! messages (or the session files under `--corpus DIR`) synced, full-text index and row map built; a random-weight model of
//! multilingual-e5-small's exact shape imported (queries are embedded by the real embed
//! worker running it); every searchable message given a *stand-in* vector (drawn, not
//! embedded: embedding millions of messages takes hours on this CPU) and the vector index
//! built over them at their real count.
//!
//! Each mode starts a fresh `pond mcp` (over stdio, driven by rmcp's client) with the row
//! map deleted, so its start-up sync (a sync worker, or the front itself in-process)
//! rebuilds it, and goes through the phases: `cold_open` (spawn to the first full-text
//! answer), `rowmap_rebuild` (until the start-up sync is done), `fts_steady` (Q searches),
//! `vector_first` (the embed worker starts and loads the model), `vector_steady` (Q vector
//! searches), `sql_steady` (six shapes twice, a full-scan aggregate among them),
//! `get_steady` (20 messages and 20 session pages), `idle` (T seconds), and
//! `idle_workers_exited` (until every worker has exited after W idle seconds, then 5 s).
//!
//! A sampler reads `/proc` every 50 ms for the front and each of its workers: footprint
//! (`RssAnon + VmSwap`), PSS, VmHWM, and the tree's sum. pond never calls `malloc_trim`:
//! every figure is with trim off.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pond_benches::corpus::Rng;
use pond_benches::report::r2;
use pond_benches::work::num;
use pond_benches::{report, work};
use pond_protocol::footprint;
use pond_store::{vectors, Store, StoreConfig};
use serde_json::{json, Value};

#[path = "front.rs"]
mod front;
#[path = "serving.rs"]
mod serving;
use front::{Front, SQL};
use serving::{serve_store, MODEL_NAME};

const POND: &str = env!("CARGO_BIN_EXE_pond");

const PHASES: &[&str] = &[
    "cold_open",
    "rowmap_rebuild",
    "fts_steady",
    "vector_first",
    "vector_steady",
    "sql_steady",
    "get_steady",
    "idle",
    "idle_workers_exited",
];

fn mib(kib: u64) -> f64 {
    (kib as f64 / 102.4).round() / 10.0
}

/// One process in one sample.
#[derive(Clone)]
struct Proc {
    pid: u32,
    role: String,
    footprint_kib: u64,
    pss_kib: u64,
    hwm_kib: u64,
}

struct Sample {
    ms: u64,
    phase: usize,
    procs: Vec<Proc>,
}

impl Sample {
    fn tree_kib(&self) -> u64 {
        self.procs.iter().map(|p| p.footprint_kib).sum()
    }
    fn front_kib(&self) -> u64 {
        self.procs.first().map_or(0, |p| p.footprint_kib)
    }
}

/// `front`, or `worker <kind>`, from a process's command line.
fn role(pid: u32) -> String {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let args: Vec<String> = cmdline
        .split(|&b| b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    match args.iter().position(|a| a == "worker") {
        Some(i) => format!("worker {}", args.get(i + 1).map_or("?", |s| s.as_str())),
        None => "front".into(),
    }
}

fn pss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Pss:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

fn read_proc(pid: u32, role: String) -> Option<Proc> {
    let f = footprint::of_pid(pid)?;
    Some(Proc {
        pid,
        role,
        footprint_kib: f.footprint_kib(),
        pss_kib: pss_kib(pid),
        hwm_kib: f.hwm_kib,
    })
}

/// Samples the tree under `front` every 50 ms until `stop`.
fn sampler(
    front: u32,
    started: Instant,
    phase: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    out: Arc<Mutex<Vec<Sample>>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut roles: BTreeMap<u32, String> = BTreeMap::new();
        while !stop.load(Ordering::Relaxed) {
            let mut procs = Vec::new();
            if let Some(p) = read_proc(front, "front".into()) {
                procs.push(p);
            }
            for child in footprint::children(front) {
                let r = roles.entry(child).or_insert_with(|| role(child)).clone();
                procs.extend(read_proc(child, r).filter(|p| p.footprint_kib > 0));
            }
            out.lock().unwrap().push(Sample {
                ms: started.elapsed().as_millis() as u64,
                phase: phase.load(Ordering::Relaxed),
                procs,
            });
            std::thread::sleep(Duration::from_millis(50));
        }
    })
}

/// One mode's run: its samples, the phases' (start, end) in ms, latencies per phase.
struct Run {
    mode: &'static str,
    samples: Vec<Sample>,
    bounds: Vec<(u64, u64)>,
    latencies: Vec<Vec<f64>>,
}

async fn run_mode(
    store: &Path,
    in_process: bool,
    queries: u64,
    idle: u64,
    worker_idle: u64,
) -> Run {
    let home = tempfile_dir("serve-home");
    let _ = std::fs::remove_file(store.join("messages.rmm"));
    let mut cmd = tokio::process::Command::new(POND);
    cmd.arg("--store")
        .arg(store)
        .args(["--worker-idle-secs", &worker_idle.to_string()]);
    if in_process {
        cmd.arg("--in-process");
    }
    // The start-up sync reads an empty home, finds no new files and rebuilds the row map;
    // the next one would come a day later.
    cmd.args(["mcp", "--standalone"])
        .env("POND_AUTO_SYNC_MINS", "1440")
        .env("HOME", &home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME");
    let started = Instant::now();
    let phase = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let samples = Arc::new(Mutex::new(Vec::new()));
    let mut sampling = None;
    let front = Front::start(cmd, |pid| {
        sampling = Some(sampler(
            pid,
            started,
            phase.clone(),
            stop.clone(),
            samples.clone(),
        ))
    })
    .await;
    let pid = front.pid;
    let call = |name: &'static str, args: Value| front.call(name, args);
    let mut bounds = vec![(0, 0)];
    let mut latencies: Vec<Vec<f64>> = vec![Vec::new(); PHASES.len()];
    let mark = |i: usize, bounds: &mut Vec<(u64, u64)>| {
        let now = started.elapsed().as_millis() as u64;
        if let Some(last) = bounds.last_mut() {
            last.1 = now;
        }
        bounds.push((now, now));
        phase.store(i, Ordering::Relaxed);
    };
    let mut rng = Rng::new(7);
    let term = |rng: &mut Rng| rng.pick(work::QUERY_TERMS).to_string();

    // cold_open began at the spawn (bounds start at (0, 0)).
    call("pond_search", json!({"query": "timeout", "limit": 10})).await;
    latencies[0].push(started.elapsed().as_secs_f64() * 1000.0);

    mark(1, &mut bounds);
    let sync_started = Instant::now();
    while !front.status().await.contains("last background sync:") {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    latencies[1].push(sync_started.elapsed().as_secs_f64() * 1000.0);
    assert!(
        store.join("messages.rmm").exists(),
        "the start-up sync rebuilt no row map"
    );

    mark(2, &mut bounds);
    for _ in 0..queries {
        let (ms, _) = call("pond_search", json!({"query": term(&mut rng), "limit": 10})).await;
        latencies[2].push(ms);
    }

    mark(3, &mut bounds);
    let (ms, _) = call(
        "pond_search",
        json!({"query": "why does the retry loop time out", "mode": "vector", "limit": 10}),
    )
    .await;
    latencies[3].push(ms);

    mark(4, &mut bounds);
    for _ in 0..queries {
        let q = format!("{} {}", term(&mut rng), term(&mut rng));
        let (ms, _) = call(
            "pond_search",
            json!({"query": q, "mode": "vector", "limit": 10}),
        )
        .await;
        latencies[4].push(ms);
    }

    mark(5, &mut bounds);
    for _ in 0..2 {
        for q in SQL {
            let (ms, _) = call("pond_sql", json!({"query": q, "timeout_seconds": 300})).await;
            latencies[5].push(ms);
        }
    }

    mark(6, &mut bounds);
    let ids = front.message_ids(20).await;
    for row in &ids {
        let (ms, _) = call("pond_get_message", json!({"id": row["id"]})).await;
        latencies[6].push(ms);
        let (ms, _) = call(
            "pond_get_session",
            json!({"id": row["session_id"], "limit": 20}),
        )
        .await;
        latencies[6].push(ms);
    }

    mark(7, &mut bounds);
    tokio::time::sleep(Duration::from_secs(idle)).await;

    mark(8, &mut bounds);
    let until = Instant::now() + Duration::from_secs(worker_idle + 60);
    while !footprint::children(pid).is_empty() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        footprint::children(pid).is_empty(),
        "a worker outlived its idle time"
    );
    tokio::time::sleep(Duration::from_secs(5)).await;
    let end = started.elapsed().as_millis() as u64;
    if let Some(last) = bounds.last_mut() {
        last.1 = end;
    }
    stop.store(true, Ordering::Relaxed);
    if let Some(s) = sampling.take() {
        s.join().expect("sampler");
    }
    front.close().await;
    let _ = std::fs::remove_dir_all(&home);
    let samples = std::mem::take(&mut *samples.lock().unwrap());
    Run {
        mode: if in_process { "in_process" } else { "multi" },
        samples,
        bounds,
        latencies,
    }
}

fn tempfile_dir(prefix: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{prefix}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Figures of one phase: front start/end/peak, tree peak, latency.
struct PhaseFigures {
    front_start: u64,
    front_end: u64,
    front_peak: u64,
    tree_peak: u64,
    p50: f64,
    p95: f64,
    n: usize,
    ms: u64,
}

fn phase_figures(run: &Run) -> Vec<PhaseFigures> {
    (0..PHASES.len())
        .map(|i| {
            let s: Vec<&Sample> = run.samples.iter().filter(|s| s.phase == i).collect();
            let mut lat = run.latencies[i].clone();
            PhaseFigures {
                front_start: s.first().map_or(0, |s| s.front_kib()),
                front_end: s.last().map_or(0, |s| s.front_kib()),
                front_peak: s.iter().map(|s| s.front_kib()).max().unwrap_or(0),
                tree_peak: s.iter().map(|s| s.tree_kib()).max().unwrap_or(0),
                p50: r2(report::percentile(&mut lat, 50.0)),
                p95: r2(report::percentile(&mut lat, 95.0)),
                n: lat.len(),
                ms: run.bounds.get(i).map_or(0, |b| b.1 - b.0),
            }
        })
        .collect()
}

/// Footprint over time per process and the tree's sum, one panel per mode, phases marked.
fn plot(runs: &[Run], messages: usize) -> String {
    let (w, h, left, top, bottom) = (1100.0, 380.0, 70.0, 40.0, 40.0);
    let plot_w = w - left - 200.0;
    let plot_h = h - top - bottom;
    let colours = [
        "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
    ];
    let mut svg = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{}' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n",
        h * runs.len() as f64
    );
    for (k, run) in runs.iter().enumerate() {
        let y0 = h * k as f64;
        let max_ms = run.samples.last().map_or(1, |s| s.ms.max(1)) as f64;
        let max_kib = run.samples.iter().map(Sample::tree_kib).max().unwrap_or(1) as f64;
        let step = [64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0]
            .into_iter()
            .find(|s| max_kib / 1024.0 / s <= 6.0)
            .unwrap_or(4096.0);
        let top_mib = ((max_kib / 1024.0 / step).ceil() * step).max(step);
        let x = |ms: f64| left + ms / max_ms * plot_w;
        let y = |kib: f64| y0 + top + plot_h - kib / 1024.0 / top_mib * plot_h;
        svg += &format!(
            "<text x='{left}' y='{}' font-size='14' font-weight='bold'>pond mcp, {} mode, {messages} messages: footprint (RssAnon + VmSwap), malloc_trim off</text>\n",
            y0 + 22.0,
            run.mode.replace('_', "-")
        );
        let mut m = 0.0;
        while m <= top_mib {
            svg += &format!(
                "<line x1='{left}' x2='{}' y1='{yy}' y2='{yy}' stroke='#ddd'/><text x='{}' y='{}' text-anchor='end'>{m} MiB</text>\n",
                left + plot_w,
                left - 6.0,
                y(m * 1024.0) + 4.0,
                yy = y(m * 1024.0)
            );
            m += step;
        }
        for (i, (start, _)) in run.bounds.iter().enumerate() {
            let xx = x(*start as f64);
            svg += &format!(
                "<line x1='{xx}' x2='{xx}' y1='{}' y2='{}' stroke='#999' stroke-dasharray='3,3'/><text transform='translate({},{}) rotate(-90)' font-size='10' fill='#555'>{}</text>\n",
                y0 + top,
                y0 + top + plot_h,
                xx + 10.0,
                y0 + top + plot_h - 4.0,
                PHASES[i]
            );
        }
        svg += &format!(
            "<text x='{}' y='{}' text-anchor='middle'>seconds</text>\n",
            left + plot_w / 2.0,
            y0 + h - 6.0,
        );
        let tick = [1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0]
            .into_iter()
            .find(|t| max_ms / 1000.0 / t <= 12.0)
            .unwrap_or(300.0);
        let mut sec = 0.0;
        while sec * 1000.0 <= max_ms {
            svg += &format!(
                "<text x='{}' y='{}' text-anchor='middle' font-size='10'>{sec}</text>\n",
                x(sec * 1000.0),
                y0 + top + plot_h + 14.0
            );
            sec += tick;
        }
        // One line per process (a worker's pid is its own line), then the tree's sum.
        let mut lines: BTreeMap<(u32, String), Vec<(f64, f64)>> = BTreeMap::new();
        for s in &run.samples {
            for p in &s.procs {
                lines
                    .entry((p.pid, p.role.clone()))
                    .or_default()
                    .push((x(s.ms as f64), y(p.footprint_kib as f64)));
            }
        }
        let tree: Vec<(f64, f64)> = run
            .samples
            .iter()
            .map(|s| (x(s.ms as f64), y(s.tree_kib() as f64)))
            .collect();
        let mut roles: Vec<String> = Vec::new();
        let points = |pts: &[(f64, f64)]| {
            pts.iter()
                .map(|(a, b)| format!("{a:.1},{b:.1}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        for ((_, role), pts) in &lines {
            if !roles.contains(role) {
                roles.push(role.clone());
            }
            let c = colours[roles.iter().position(|r| r == role).unwrap() % colours.len()];
            svg += &format!(
                "<polyline fill='none' stroke='{c}' stroke-width='1.5' points='{}'/>\n",
                points(pts)
            );
        }
        if roles.len() > 1 {
            svg += &format!(
                "<polyline fill='none' stroke='black' stroke-width='1' stroke-dasharray='5,3' points='{}'/>\n",
                points(&tree)
            );
            roles.push("tree (sum)".into());
        }
        for (i, role) in roles.iter().enumerate() {
            let c = if role == "tree (sum)" {
                "black"
            } else {
                colours[i % colours.len()]
            };
            let ly = y0 + top + 14.0 + 18.0 * i as f64;
            let lx = left + plot_w + 20.0;
            svg += &format!(
                "<line x1='{lx}' x2='{}' y1='{ly}' y2='{ly}' stroke='{c}' stroke-width='2'/><text x='{}' y='{}'>{role}</text>\n",
                lx + 20.0,
                lx + 26.0,
                ly + 4.0,
            );
        }
    }
    svg + "</svg>\n"
}

fn main() {
    pond_benches::work::accept(
        &[
            "--corpus",
            "--messages",
            "--queries",
            "--idle-secs",
            "--worker-idle-secs",
            "--modes",
            "--plot",
        ],
        &[],
    );
    let corpus = work::arg("--corpus").map(PathBuf::from);
    let label = match &corpus {
        Some(c) => c
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "corpus".into()),
        None => num("--messages", 100_000).to_string(),
    };
    let queries = num("--queries", 100);
    let idle = num("--idle-secs", 10);
    let worker_idle = num("--worker-idle-secs", 10);
    let modes = work::arg("--modes").unwrap_or_else(|| "multi,in-process".into());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (runs, vectors, messages) = rt.block_on(async {
        let store = serve_store(&label, corpus.as_deref(), num("--messages", 100_000)).await;
        let s = Store::open(&store, StoreConfig::default()).expect("open store");
        let messages = s
            .require("messages")
            .await
            .expect("messages")
            .count_rows(None)
            .await
            .expect("count");
        let counts = vectors::counts(&s).await.unwrap_or_default();
        let mut runs = Vec::new();
        for mode in modes.split(',') {
            let in_process = match mode {
                "multi" => false,
                "in-process" => true,
                other => panic!("--modes: {other:?} is neither multi nor in-process"),
            };
            runs.push(run_mode(&store, in_process, queries, idle, worker_idle).await);
        }
        (runs, counts, messages)
    });

    let mut figures = json!({
        "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
        "messages": messages,
        "embedding_model": format!("{MODEL_NAME} (random weights, e5-small shape) for queries; stand-in vectors for messages"),
        "vectors": format!("{vectors:?}"),
        "malloc_trim": "off",
        "queries": queries,
        "worker_idle_secs": worker_idle,
    });
    let obj = figures.as_object_mut().unwrap();
    let mut table = Vec::new();
    for run in &runs {
        let m = run.mode;
        let f = phase_figures(run);
        let serving = [2, 3, 4, 5, 6];
        obj.insert(format!("{m}_front_idle_mib"), json!(mib(f[8].front_end)));
        obj.insert(
            format!("{m}_front_peak_max_mib"),
            json!(mib(f.iter().map(|p| p.front_peak).max().unwrap_or(0))),
        );
        obj.insert(
            format!("{m}_tree_peak_serving_mib"),
            json!(mib(serving
                .iter()
                .map(|&i| f[i].tree_peak)
                .max()
                .unwrap_or(0))),
        );
        obj.insert(
            format!("{m}_tree_peak_rebuild_mib"),
            json!(mib(f[0].tree_peak.max(f[1].tree_peak))),
        );
        let pss_end = run
            .samples
            .last()
            .and_then(|s| s.procs.first())
            .map_or(0, |p| p.pss_kib);
        obj.insert(format!("{m}_front_idle_pss_mib"), json!(mib(pss_end)));
        let hwm = run
            .samples
            .iter()
            .flat_map(|s| s.procs.first())
            .map(|p| p.hwm_kib)
            .max()
            .unwrap_or(0);
        obj.insert(format!("{m}_front_vmhwm_mib"), json!(mib(hwm)));
        for (i, p) in f.iter().enumerate() {
            obj.insert(format!("{m}_{}_p50_ms", PHASES[i]), json!(p.p50));
            obj.insert(
                format!("{m}_{}_front_peak_mib", PHASES[i]),
                json!(mib(p.front_peak)),
            );
            obj.insert(
                format!("{m}_{}_tree_peak_mib", PHASES[i]),
                json!(mib(p.tree_peak)),
            );
            table.push(format!(
                "  {:<10} {:<20} {:>7} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>5} {:>9.1} {:>9.1}",
                m,
                PHASES[i],
                p.ms,
                mib(p.front_start),
                mib(p.front_end),
                mib(p.front_peak),
                mib(p.tree_peak),
                p.n,
                p.p50,
                p.p95
            ));
        }
    }
    if let (Some(multi), Some(single)) = (
        obj.get("multi_front_idle_mib").and_then(Value::as_f64),
        obj.get("in_process_front_idle_mib").and_then(Value::as_f64),
    ) {
        obj.insert(
            "front_idle_ratio".into(),
            json!(r2(multi / single.max(0.1))),
        );
    }
    let plot_path = work::arg("--plot")
        .map(PathBuf::from)
        .unwrap_or_else(|| work::work_dir().join(format!("serve-mem-{label}.svg")));
    std::fs::write(&plot_path, plot(&runs, messages)).expect("write the plot");
    obj.insert("plot".into(), json!(plot_path.display().to_string()));
    report::print("serve_mem_bench", &figures);
    println!(
        "\n  {:<10} {:<20} {:>7} {:>9} {:>9} {:>9} {:>9} {:>5} {:>9} {:>9}",
        "mode", "phase", "ms", "front0", "front1", "front^", "tree^", "n", "p50 ms", "p95 ms"
    );
    println!("  (MiB; front0/front1: footprint at the phase's start/end; ^: peak)");
    for line in table {
        println!("{line}");
    }
}
