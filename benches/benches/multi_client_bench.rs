//! Many agents on one machine: 1, 4 and 8 concurrent MCP clients running the same mixed
//! workload (full-text and vector search, SQL, get) through one shared server (`pond mcp`
//! bridges to one `pond serve`) and through as many standalone fronts (`pond mcp
//! --standalone`, one process tree per client), in one run, with a plot of the tree's
//! footprint over time for the largest count.
//!
//! `cargo bench --workspace --bench multi_client_bench -- [--messages N] [--clients 1,4,8]
//!  [--rounds R] [--think-ms P] [--idle-secs T] [--worker-idle-secs W] [--malloc-arenas N]
//!  [--plot FILE.svg] [--work DIR]`
//!
//! `--think-ms` pauses each client P ms after each call, as an agent does between tool calls
//! (default 0: back to back, every client always waiting on the server).
//!
//! `--malloc-arenas` is the serving processes' `POND_MALLOC_ARENAS` (default 2, pond's own
//! default; 0: glibc's, up to 8 per core).
//!
//! The store is `serve_mem_bench`'s (built once, reused): N generated messages, a
//! random-weight model of multilingual-e5-small's shape embedding the queries in the real
//! embed worker, stand-in vectors for the messages. Each run starts from no pond process:
//! the clients start at once; one client makes an untimed pass over the workload (so the
//! figures are of a warm server); then each runs R rounds (default 22: every query word and
//! one of 22 messages once, from its own starting place) of (full-text search, vector
//! search, one of six SQL shapes, get a message, get a session page) concurrently with the
//! others, then all stay connected and idle for T seconds (workers exit after W). A sampler reads `/proc`
//! every 100 ms for every pond process of the store (bridges, server, fronts, workers):
//! the tree's footprint is the sum of their `RssAnon + VmSwap`. pond never calls
//! `malloc_trim`: trim is off throughout.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pond_benches::report::{percentile, r2};
use pond_benches::work::{self, num};
use pond_protocol::footprint;
use serde_json::{json, Value};

// Not every helper of the shared front is used here.
#[allow(dead_code)]
#[path = "front.rs"]
mod front;
#[path = "serving.rs"]
mod serving;
use front::{Front, SQL};
use serving::{serve_store, MODEL_NAME};

const POND: &str = env!("CARGO_BIN_EXE_pond");
const TOOLS: [&str; 5] = ["fts", "vector", "sql", "get_message", "get_session"];

fn mib(kib: u64) -> f64 {
    (kib as f64 / 102.4).round() / 10.0
}

/// What a pond process of the store is, from its command line.
fn role(args: &[String]) -> &'static str {
    if args[0].ends_with("pond-bridge") {
        "bridge"
    } else if args.iter().any(|a| a == "worker") {
        "worker"
    } else if args.iter().any(|a| a == "serve") {
        "server"
    } else {
        "front"
    }
}

/// Every pond process whose command line names `store`: (pid, role).
fn processes(store: &str) -> Vec<(u32, &'static str)> {
    pond_benches::procs::all()
        .into_iter()
        .filter(|(pid, args)| {
            let pond = args[0].ends_with("pond") || args[0].ends_with("pond-bridge");
            pond && args.iter().any(|a| a == store) && !pond_benches::procs::zombie(*pid)
        })
        .map(|(pid, args)| (pid, role(&args)))
        .collect()
}

/// The tree at one moment: footprint per role, KiB.
struct Sample {
    ms: u64,
    by_role: BTreeMap<&'static str, u64>,
    bridges: Vec<u64>,
}

impl Sample {
    fn total(&self) -> u64 {
        self.by_role.values().sum()
    }
}

fn sampler(
    store: String,
    started: Instant,
    stop: Arc<AtomicBool>,
    out: Arc<Mutex<Vec<Sample>>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let mut s = Sample {
                ms: started.elapsed().as_millis() as u64,
                by_role: BTreeMap::new(),
                bridges: Vec::new(),
            };
            for (pid, role) in processes(&store) {
                let kib = footprint::of_pid(pid).map_or(0, |f| f.footprint_kib());
                *s.by_role.entry(role).or_default() += kib;
                if role == "bridge" {
                    s.bridges.push(kib);
                }
            }
            out.lock().unwrap().push(s);
            std::thread::sleep(Duration::from_millis(100));
        }
    })
}

/// One run: a mode and a client count, its samples, when the work ended, the latencies.
struct Run {
    mode: &'static str,
    clients: usize,
    samples: Vec<Sample>,
    started_ms: u64,
    worked_ms: u64,
    latencies: BTreeMap<&'static str, Vec<f64>>,
}

impl Run {
    fn peak_kib(&self) -> u64 {
        self.samples.iter().map(Sample::total).max().unwrap_or(0)
    }

    /// The samples of the idle phase's last 2 s (every worker exited by then).
    fn idle(&self) -> impl Iterator<Item = &Sample> {
        let end = self.samples.last().map_or(0, |s| s.ms);
        self.samples.iter().filter(move |s| s.ms + 2000 >= end)
    }

    /// The tree's mean while idle.
    fn idle_kib(&self) -> u64 {
        mean(self.idle().map(Sample::total))
    }

    /// A bridge's mean footprint while idle (shared mode).
    fn bridge_kib(&self) -> u64 {
        mean(self.idle().flat_map(|s| s.bridges.iter().copied()))
    }
}

fn mean(values: impl Iterator<Item = u64>) -> u64 {
    let (sum, n) = values.fold((0, 0), |(s, n), v| (s + v, n + 1));
    sum / n.max(1)
}

/// One client's R rounds of the mixed workload; latencies by tool. Every client goes through
/// the same query words and messages (starting at its own place), so that 1 and 8 clients
/// read the same data and differ only in how many ask at once.
async fn workload(
    front: &Front,
    c: usize,
    rounds: usize,
    ids: &[Value],
    think: Duration,
) -> Vec<(&'static str, f64)> {
    let mut out = Vec::new();
    for r in 0..rounds {
        let term = work::QUERY_TERMS[(c * 7 + r) % work::QUERY_TERMS.len()];
        let m = &ids[(c * 7 + r) % ids.len()];
        let calls = [
            ("pond_search", json!({"query": term, "limit": 10})),
            (
                "pond_search",
                json!({"query": term, "mode": "vector", "limit": 10}),
            ),
            ("pond_sql", json!({"query": SQL[(c + r) % SQL.len()]})),
            ("pond_get_message", json!({"id": m["id"]})),
            (
                "pond_get_session",
                json!({"id": m["session_id"], "limit": 20}),
            ),
        ];
        for (tool, (name, args)) in TOOLS.iter().zip(calls) {
            let (ms, _) = front.call(name, args).await;
            out.push((*tool, ms));
            tokio::time::sleep(think).await;
        }
    }
    out
}

/// What every run does besides its mode and client count.
struct Load {
    rounds: usize,
    /// Pause after each call (an agent's thinking between calls); zero: back to back.
    think: Duration,
    idle: u64,
    worker_idle: u64,
    arenas: String,
}

async fn run(store: &Path, shared: bool, clients: usize, load: &Load) -> Run {
    let Load {
        rounds,
        idle,
        worker_idle,
        ..
    } = *load;
    let store_arg = store.to_string_lossy().into_owned();
    let home = std::env::temp_dir().join(format!("multi-client-home-{}", std::process::id()));
    let runtime = home.join("run");
    std::fs::create_dir_all(&runtime).expect("temp dir");
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let samples = Arc::new(Mutex::new(Vec::new()));
    let sampling = sampler(store_arg.clone(), started, stop.clone(), samples.clone());
    let command = || {
        let mut cmd = tokio::process::Command::new(POND);
        cmd.arg("--store")
            .arg(store)
            .args(["--worker-idle-secs", &worker_idle.to_string()])
            .args(["mcp", "--auto-sync-mins", "0"])
            .env("HOME", &home)
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("POND_MALLOC_ARENAS", &load.arenas)
            .env_remove("POND_STANDALONE")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME");
        if !shared {
            cmd.arg("--standalone");
        }
        cmd
    };
    let fronts: Vec<Front> =
        futures::future::join_all((0..clients).map(|_| Front::start(command(), |_| {}))).await;
    let started_ms = started.elapsed().as_millis() as u64;
    let ids = fronts[0].message_ids(work::QUERY_TERMS.len()).await;
    // One client's pass first (not timed): the figures are of a warm server, not of the
    // first query of each word.
    workload(&fronts[0], 0, rounds, &ids, Duration::ZERO).await;
    let results = futures::future::join_all(
        fronts
            .iter()
            .enumerate()
            .map(|(c, f)| workload(f, c, rounds, &ids, load.think)),
    )
    .await;
    let worked_ms = started.elapsed().as_millis() as u64;
    let mut latencies: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    for (tool, ms) in results.into_iter().flatten() {
        latencies.entry(tool).or_default().push(ms);
    }
    tokio::time::sleep(Duration::from_secs(idle)).await;
    stop.store(true, Ordering::Relaxed);
    sampling.join().expect("sampler");
    for f in fronts {
        f.close().await;
    }
    // The shared server outlives its bridges until its idle time: stop it, and wait until
    // nothing of this run is left.
    for (pid, _) in processes(&store_arg) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    let gone = Instant::now() + Duration::from_secs(30);
    while !processes(&store_arg).is_empty() && Instant::now() < gone {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = std::fs::remove_dir_all(&home);
    let samples = std::mem::take(&mut *samples.lock().unwrap());
    Run {
        mode: if shared { "shared" } else { "standalone" },
        clients,
        samples,
        started_ms,
        worked_ms,
        latencies,
    }
}

/// The tree's footprint over time for each run given, one line each.
fn plot(runs: &[&Run], messages: usize) -> String {
    let (w, h, left, right, top, bottom) = (900.0, 440.0, 70.0, 20.0, 80.0, 50.0);
    let max_ms = runs
        .iter()
        .flat_map(|r| r.samples.last().map(|s| s.ms))
        .max()
        .unwrap_or(1) as f64;
    let max_mib = runs.iter().map(|r| mib(r.peak_kib())).fold(1.0, f64::max) * 1.1;
    let x = |ms: f64| left + (w - left - right) * ms / max_ms;
    let y = |m: f64| top + (h - top - bottom) * (1.0 - m / max_mib);
    let colours = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd"];
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{left}\" y=\"22\" font-size=\"14\">pond process tree footprint (RssAnon + VmSwap), {} clients, {messages} messages, trim off</text>\n",
        runs.first().map_or(0, |r| r.clients)
    );
    let step = if max_mib > 2000.0 {
        500.0
    } else if max_mib > 500.0 {
        200.0
    } else {
        50.0
    };
    let mut m = 0.0;
    while m <= max_mib {
        let (x2, ym, tx, ty) = (w - right, y(m), left - 6.0, y(m) + 4.0);
        svg += &format!(
            "<line x1=\"{left}\" x2=\"{x2}\" y1=\"{ym}\" y2=\"{ym}\" stroke=\"#ddd\"/><text x=\"{tx}\" y=\"{ty}\" text-anchor=\"end\">{m} MiB</text>\n"
        );
        m += step;
    }
    let secs = (max_ms / 1000.0).ceil() as u64;
    let tick = (secs / 10).max(1);
    for s in (0..=secs)
        .step_by(tick as usize)
        .filter(|&s| s as f64 * 1000.0 <= max_ms)
    {
        let px = x(s as f64 * 1000.0);
        svg += &format!(
            "<text x=\"{px}\" y=\"{}\" text-anchor=\"middle\">{s} s</text>\n",
            h - bottom + 18.0
        );
    }
    for (i, r) in runs.iter().enumerate() {
        let c = colours[i % colours.len()];
        let points: Vec<String> = r
            .samples
            .iter()
            .map(|s| format!("{:.1},{:.1}", x(s.ms as f64), y(mib(s.total()))))
            .collect();
        svg += &format!(
            "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"1.5\" points=\"{}\"/>\n",
            points.join(" ")
        );
        let wx = x(r.worked_ms as f64);
        svg += &format!(
            "<line x1=\"{wx}\" x2=\"{wx}\" y1=\"{top}\" y2=\"{}\" stroke=\"{c}\" stroke-dasharray=\"4 3\"/>\n",
            h - bottom
        );
        svg += &format!(
            "<text x=\"{}\" y=\"{}\" fill=\"{c}\">{}: peak {} MiB, idle {} MiB (dashed: workload done)</text>\n",
            left,
            44.0 + 16.0 * i as f64,
            r.mode,
            mib(r.peak_kib()),
            mib(r.idle_kib())
        );
    }
    svg += &format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">time since the clients were started</text>\n",
        left + (w - left - right) / 2.0,
        h - 12.0
    );
    svg + "</svg>\n"
}

fn main() {
    work::accept(
        &[
            "--messages",
            "--clients",
            "--rounds",
            "--idle-secs",
            "--worker-idle-secs",
            "--plot",
            "--malloc-arenas",
            "--think-ms",
        ],
        &[],
    );
    let arenas = work::arg("--malloc-arenas").unwrap_or_else(|| "2".into());
    let messages = num("--messages", 100_000);
    let counts: Vec<usize> = work::arg("--clients")
        .unwrap_or_else(|| "1,4,8".into())
        .split(',')
        .map(|n| n.parse().expect("--clients takes counts like 1,4,8"))
        .collect();
    let load = Load {
        rounds: num("--rounds", work::QUERY_TERMS.len() as u64) as usize,
        think: Duration::from_millis(num("--think-ms", 0)),
        idle: num("--idle-secs", 15),
        worker_idle: num("--worker-idle-secs", 10),
        arenas,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let runs = rt.block_on(async {
        let store = serve_store(&messages.to_string(), None, messages).await;
        let mut runs = Vec::new();
        for &n in &counts {
            for shared in [true, false] {
                eprintln!("{} x {n}", if shared { "shared" } else { "standalone" });
                runs.push(run(&store, shared, n, &load).await);
            }
        }
        runs
    });

    let mut figures = json!({
        "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
        "messages": messages,
        "embedding_model": format!("{MODEL_NAME} (random weights, e5-small shape) for queries; stand-in vectors for messages"),
        "malloc_trim": "off",
        "rounds_per_client": load.rounds,
        "think_ms": load.think.as_millis() as u64,
        "worker_idle_secs": load.worker_idle,
        "malloc_arenas": load.arenas,
    });
    let obj = figures.as_object_mut().unwrap();
    let mut table = Vec::new();
    for r in &runs {
        let key = format!("{}_{}", r.mode, r.clients);
        obj.insert(format!("{key}_idle_mib"), json!(mib(r.idle_kib())));
        obj.insert(format!("{key}_peak_mib"), json!(mib(r.peak_kib())));
        obj.insert(format!("{key}_start_ms"), json!(r.started_ms));
        let mut row = format!(
            "| {} | {} | {} | {} | {} |",
            r.mode,
            r.clients,
            r.started_ms,
            mib(r.idle_kib()),
            mib(r.peak_kib())
        );
        for tool in TOOLS {
            let mut l = r.latencies.get(tool).cloned().unwrap_or_default();
            let (p50, p95) = (percentile(&mut l, 50.0), percentile(&mut l, 95.0));
            obj.insert(format!("{key}_{tool}_p50_ms"), json!(r2(p50)));
            obj.insert(format!("{key}_{tool}_p95_ms"), json!(r2(p95)));
            row += &format!(" {:.1} / {:.1} |", p50, p95);
        }
        if r.mode == "shared" {
            obj.insert(format!("{key}_bridge_kib"), json!(r.bridge_kib()));
        }
        table.push(row);
    }
    let find = |mode: &str, n: usize| runs.iter().find(|r| r.mode == mode && r.clients == n);
    let (lo, hi) = (counts[0], *counts.last().unwrap_or(&1));
    if let (Some(a), Some(b)) = (find("shared", lo), find("shared", hi)) {
        obj.insert(
            format!("shared_idle_{hi}_over_{lo}"),
            json!(r2(b.idle_kib() as f64 / a.idle_kib().max(1) as f64)),
        );
        let p95 = |r: &Run| {
            let mut l: Vec<f64> = ["fts", "vector"]
                .iter()
                .flat_map(|t| r.latencies.get(t).cloned().unwrap_or_default())
                .collect();
            percentile(&mut l, 95.0)
        };
        obj.insert(
            format!("shared_search_p95_{hi}_over_{lo}"),
            json!(r2(p95(b) / p95(a).max(0.001))),
        );
    }
    if let (Some(a), Some(b)) = (find("standalone", lo), find("standalone", hi)) {
        obj.insert(
            format!("standalone_idle_{hi}_over_{lo}"),
            json!(r2(b.idle_kib() as f64 / a.idle_kib().max(1) as f64)),
        );
    }
    pond_benches::report::print("multi_client_bench", &figures);
    println!();
    println!("| mode | clients | start ms | tree idle MiB | tree peak MiB | fts p50/p95 ms | vector | sql | get_message | get_session |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in table {
        println!("{row}");
    }
    if let Some(path) = work::arg("--plot").map(PathBuf::from) {
        let pair: Vec<&Run> = ["shared", "standalone"]
            .iter()
            .filter_map(|m| find(m, hi))
            .collect();
        std::fs::write(&path, plot(&pair, messages as usize)).expect("write the plot");
        eprintln!("plot: {}", path.display());
    }
}
