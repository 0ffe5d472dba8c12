//! The embedder's costs with a model of multilingual-e5-small's exact shape (random weights:
//! the real ones cannot be downloaded here, and memory and speed depend on the shape only).
//!
//! `cargo bench --workspace --bench embed_bench -- [--queries Q] [--cold C] [--work DIR]`
//!
//! - import: `pond model import` of the ~470 MB f32 folder as a child process; time, asset
//!   size against the f32 file, the importer's peak footprint (`RssAnon + VmSwap`, sampled
//!   every 20 ms) and VmHWM (which also counts the mapped file pages it read).
//! - cold start: C times, a fresh actor spawns `pond worker embed`, which loads the asset and
//!   embeds one query (spawn + load + first query).
//! - warm: Q query embeddings through the actor and IPC, one to twelve words each.
//! - the embed worker's footprint after the warm queries and its peak (sampled), its VmHWM.

use std::time::{Duration, Instant};

use pond_benches::corpus::Rng;
use pond_benches::report::r2;
use pond_benches::work::num;
use pond_benches::{report, work};
use pond_embed::random_bert::{self, Shape};
use pond_front::{JobOptions, WorkerCommand, Workers, WorkersConfig};
use pond_protocol::footprint;
use pond_protocol::job::EmbedJob;
use pond_protocol::{Job, Output};
use serde_json::json;

const POND: &str = env!("CARGO_BIN_EXE_pond");

fn mib(kib: u64) -> f64 {
    r2(kib as f64 / 1024.0)
}

/// Sample a process's footprint every 20 ms until it exits: (peak footprint, last VmHWM).
fn watch(pid: u32) -> (u64, u64) {
    let (mut peak, mut hwm) = (0, 0);
    while footprint::running(pid) {
        let Some(f) = footprint::of_pid(pid) else {
            break;
        };
        peak = peak.max(f.footprint_kib());
        hwm = hwm.max(f.hwm_kib);
        std::thread::sleep(Duration::from_millis(20));
    }
    (peak, hwm)
}

fn main() {
    pond_benches::work::accept(&["--queries", "--cold"], &[]);
    let queries = num("--queries", 200) as usize;
    let colds = num("--cold", 5);
    let dir = work::work_dir().join("embed-bench");
    let model = dir.join("e5-small-random-f32");
    if !model.join("model.safetensors").exists() {
        let t = Instant::now();
        random_bert::write(&model, Shape::e5_small(), 42).expect("write the model");
        eprintln!(
            "wrote the random e5-small-shaped model in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    let store = dir.join("store");
    std::fs::create_dir_all(&store).unwrap();

    // Import, as the user runs it.
    let t = Instant::now();
    let mut child = std::process::Command::new(POND)
        .args(["--store", store.to_str().unwrap(), "model", "import"])
        .arg(&model)
        .args(["--name", "multilingual-e5-small-random"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("pond model import");
    let (import_peak, import_hwm) = watch(child.id());
    assert!(child.wait().unwrap().success(), "import failed");
    let import_s = t.elapsed().as_secs_f64();
    let f32_bytes = std::fs::metadata(model.join("model.safetensors"))
        .unwrap()
        .len();
    let asset_bytes = std::fs::metadata(store.join("model/model.safetensors"))
        .unwrap()
        .len();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let figures = rt.block_on(async {
        let config = || {
            WorkersConfig::new(WorkerCommand {
                exe: POND.into(),
                args: vec!["--store".into(), store.clone().into()],
            })
        };
        let embed = |text: String| {
            Job::Embed(EmbedJob {
                texts: vec![text],
                query: true,
            })
        };
        let mut cold = Vec::new();
        let mut cold_peak = 0;
        for _ in 0..colds {
            let w = Workers::start(config());
            let sampler = std::thread::spawn(|| {
                // The worker appears as our child shortly after the job is sent.
                let me = std::process::id();
                let deadline = Instant::now() + Duration::from_secs(30);
                loop {
                    if let Some(&pid) = footprint::children(me).first() {
                        return watch(pid);
                    }
                    if Instant::now() > deadline {
                        return (0, 0);
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
            let t = Instant::now();
            let out = w
                .run(
                    embed("how do I fix the flaky test".into()),
                    JobOptions::default(),
                )
                .await
                .expect("embed");
            cold.push(t.elapsed().as_secs_f64() * 1000.0);
            assert!(matches!(out, Output::Vectors(v) if v.dims == 384));
            w.shutdown().await;
            cold_peak = cold_peak.max(sampler.join().unwrap().0);
        }

        let w = Workers::start(config());
        w.run(embed("warm up".into()), JobOptions::default())
            .await
            .expect("embed");
        let pid = footprint::children(std::process::id())[0];
        let mut rng = Rng::new(7);
        let mut warm = Vec::new();
        let mut peak = 0;
        for _ in 0..queries {
            let words = 1 + rng.below(12) as usize;
            let q: Vec<&str> = (0..words).map(|_| *rng.pick(work::QUERY_TERMS)).collect();
            let t = Instant::now();
            w.run(embed(q.join(" ")), JobOptions::default())
                .await
                .expect("embed");
            warm.push(t.elapsed().as_secs_f64() * 1000.0);
            peak = peak.max(footprint::of_pid(pid).map_or(0, |f| f.footprint_kib()));
        }
        let after = footprint::of_pid(pid).expect("the embed worker is alive");
        w.shutdown().await;
        json!({
            "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
            "model_shape": "multilingual-e5-small (random weights)",
            "parameters": pond_embed::Manifest::read(&store.join("model")).unwrap().parameters,
            "f32_file_mib": mib(f32_bytes >> 10),
            "asset_mib": mib(asset_bytes >> 10),
            "asset_ratio": (asset_bytes as f64 / f32_bytes as f64 * 1000.0).round() / 1000.0,
            "import_s": r2(import_s),
            "import_peak_footprint_mib": mib(import_peak),
            "import_vmhwm_mib": mib(import_hwm),
            "cold_start_p50_ms": r2(report::percentile(&mut cold.clone(), 50.0)),
            "cold_start_max_ms": r2(cold.iter().cloned().fold(0.0, f64::max)),
            "cold_worker_peak_footprint_mib": mib(cold_peak),
            "warm_queries": queries,
            "warm_query_p50_ms": r2(report::percentile(&mut warm, 50.0)),
            "warm_query_p95_ms": r2(report::percentile(&mut warm, 95.0)),
            "worker_footprint_mib": mib(after.footprint_kib()),
            "worker_peak_footprint_mib": mib(peak.max(cold_peak)),
            "worker_vmhwm_mib": mib(after.hwm_kib),
            "goal_worker_peak_mib": mib((asset_bytes >> 10) + 150 * 1024),
        })
    });
    report::print("embed_bench", &figures);
}
