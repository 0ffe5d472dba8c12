//! Nearest-neighbour search over the `embeddings` dataset: exact scan against the index
//! kinds Lance offers, on recall@10, latency, build time and size.
//!
//! `cargo bench --workspace --bench vector_bench -- [--vectors N] [--queries Q]`
//!
//! Stand-in vectors (embedding N real messages takes hours on this CPU): 384-dim unit
//! vectors drawn around 512 random centres, so they cluster the way sentence embeddings do;
//! queries are drawn the same way and are not in the set. Ground truth is the exact scan
//! (no index). Each index kind is built in turn (replacing the last), then queried through
//! `vectors::nearest` exactly as the front does (20 probes, re-rank 4k on the stored vectors),
//! from a freshly opened store with pond's cache caps.

use std::collections::HashSet;
use std::time::Instant;

use lance::index::vector::VectorIndexParams;
use lance::index::DatasetIndexExt;
use lance_index::vector::hnsw::builder::HnswBuildParams;
use lance_index::vector::ivf::IvfBuildParams;
use lance_index::vector::sq::builder::SQBuildParams;
use lance_linalg::distance::MetricType;
use pond_benches::corpus::Rng;
use pond_benches::report::r2;
use pond_benches::standin::{StandIn, DIMS};
use pond_benches::{report, work};
use pond_store::search::SearchFilters;
use pond_store::vectors::{self, Pending, EMBEDDINGS};
use pond_store::{Store, StoreConfig};
use serde_json::json;

const MODEL: &str = "stand-in";

fn dir_bytes(p: &std::path::Path) -> u64 {
    std::fs::read_dir(p)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

fn main() {
    pond_benches::work::accept(&["--vectors", "--queries"], &[]);
    let n = work::num("--vectors", 100_000);
    let queries: usize = work::arg("--queries").map_or(200, |q| q.parse().expect("--queries Q"));
    let dir = work::work_dir().join(format!("vector-bench-{n}"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let figures = rt.block_on(async {
        let mut rng = Rng::new(11);
        let standin = StandIn::new(&mut rng);
        if !dir.join(".complete").exists() {
            let _ = std::fs::remove_dir_all(&dir);
            let store = Store::open(&dir, StoreConfig::default()).unwrap();
            let mut row = 0u64;
            while row < n {
                let chunk: Vec<(Pending, Vec<f32>)> = (row..(row + 20_000).min(n))
                    .map(|i| {
                        let p = Pending {
                            row_id: i,
                            message_id: format!("m{i}"),
                            session_id: format!("s{}", i / 150),
                            timestamp: 1_700_000_000_000 + i as i64,
                            role: if i % 2 == 0 { "user" } else { "assistant" }.into(),
                            source_agent: "claude-code".into(),
                            project: Some(format!("/home/dev/p{}", i % 7)),
                            text: String::new(),
                        };
                        (p, standin.draw(&mut rng))
                    })
                    .collect();
                vectors::append(&store, MODEL, DIMS, &chunk).await.unwrap();
                row += chunk.len() as u64;
            }
            std::fs::write(dir.join(".complete"), "").unwrap();
        }
        let qs: Vec<Vec<f32>> = (0..queries).map(|_| standin.draw(&mut rng)).collect();
        let none = SearchFilters::default();

        // Drop any index a previous run left: the exact scan is the ground truth.
        let drop_index = || async {
            let store = Store::open(&dir, StoreConfig::default()).unwrap();
            let mut ds = store.dataset(EMBEDDINGS).await.unwrap().unwrap();
            for i in ds.load_indices().await.unwrap().iter() {
                let name = i.name.clone();
                ds.drop_index(&name).await.unwrap();
            }
        };
        drop_index().await;
        let run = |label: &'static str| {
            let qs = &qs;
            let dir = &dir;
            let none = &none;
            async move {
                let store = Store::open(dir, StoreConfig::default()).unwrap();
                let before = pond_protocol::footprint::of_self().map_or(0, |f| f.footprint_kib());
                let mut lat = Vec::new();
                let mut found = Vec::new();
                for q in qs {
                    let t = Instant::now();
                    let (hits, _) = vectors::nearest(&store, MODEL, q, none, 10).await.unwrap();
                    lat.push(t.elapsed().as_secs_f64() * 1000.0);
                    found.push(hits.into_iter().map(|h| h.0).collect::<Vec<u64>>());
                }
                let after = pond_protocol::footprint::of_self().map_or(0, |f| f.footprint_kib());
                let _ = label;
                (lat, found, after.saturating_sub(before))
            }
        };
        let (mut exact_lat, truth, exact_grow) = run("exact").await;
        let mut out = json!({
            "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
            "vectors": n,
            "dims": DIMS,
            "vector_type": "f16, stand-in (clustered random)",
            "queries": queries,
            "exact_p50_ms": r2(report::percentile(&mut exact_lat, 50.0)),
            "exact_footprint_growth_mib": exact_grow >> 10,
        });
        let partitions = ((n as f64).sqrt() as usize).clamp(1, 4096);
        let kinds: Vec<(&str, VectorIndexParams)> = vec![
            (
                "ivf_pq",
                VectorIndexParams::ivf_pq(partitions, 8, DIMS / 8, MetricType::Cosine, 50),
            ),
            (
                "ivf_sq",
                VectorIndexParams::with_ivf_sq_params(
                    MetricType::Cosine,
                    IvfBuildParams::new(partitions),
                    SQBuildParams {
                        num_bits: 8,
                        sample_rate: 256,
                    },
                ),
            ),
            (
                "ivf_hnsw_sq",
                VectorIndexParams::with_ivf_hnsw_sq_params(
                    MetricType::Cosine,
                    IvfBuildParams::new((partitions / 8).max(1)),
                    HnswBuildParams::default(),
                    SQBuildParams {
                        num_bits: 8,
                        sample_rate: 256,
                    },
                ),
            ),
        ];
        for (name, params) in kinds {
            drop_index().await;
            let store = Store::open(&dir, StoreConfig::default()).unwrap();
            let mut ds = store.dataset(EMBEDDINGS).await.unwrap().unwrap();
            let indices = dir.join(format!("{EMBEDDINGS}.lance/_indices"));
            let before = dir_bytes(&indices);
            let t = Instant::now();
            ds.create_index(
                &["vector"],
                lance_index::IndexType::Vector,
                Some(vectors::VECTOR_INDEX.into()),
                &params,
                true,
            )
            .await
            .unwrap();
            let build_s = t.elapsed().as_secs_f64();
            let size = dir_bytes(&indices).saturating_sub(before);
            let (mut lat, found, grow) = run(name).await;
            let recall: f64 = found
                .iter()
                .zip(&truth)
                .map(|(f, t)| {
                    let t: HashSet<&u64> = t.iter().collect();
                    f.iter().filter(|x| t.contains(x)).count() as f64 / t.len().max(1) as f64
                })
                .sum::<f64>()
                / queries as f64;
            let o = out.as_object_mut().unwrap();
            o.insert(
                format!("{name}_build_s"),
                json!((build_s * 10.0).round() / 10.0),
            );
            o.insert(
                format!("{name}_index_mib"),
                json!(r2(size as f64 / 1048576.0)),
            );
            o.insert(
                format!("{name}_recall_at_10"),
                json!((recall * 1000.0).round() / 1000.0),
            );
            o.insert(
                format!("{name}_p50_ms"),
                json!(r2(report::percentile(&mut lat, 50.0))),
            );
            o.insert(
                format!("{name}_p95_ms"),
                json!(r2(report::percentile(&mut lat, 95.0))),
            );
            o.insert(format!("{name}_footprint_growth_mib"), json!(grow >> 10));
        }
        drop_index().await;
        out
    });
    report::print("vector_bench", &figures);
}
