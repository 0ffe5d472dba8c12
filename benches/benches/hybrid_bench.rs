//! Hybrid search's fusion, measured on known-item queries: which of reciprocal rank fusion
//! and min-max score fusion finds a known message more often, against full-text and vector
//! search alone.
//!
//! `cargo bench --workspace --bench hybrid_bench -- [--corpus DIR | --messages N]
//!  [--model DIR] [--queries Q] [--work DIR]`
//!
//! - The store: the corpus (a folder of session files, default the generated corpus of N
//!   messages) synced, the model (default all-MiniLM-L6-v2 from `scripts/fetch-test-model.sh`)
//!   imported and every searchable message embedded, in this process; kept in the work dir
//!   and reused.
//! - Known-item queries (simulated as in Azzopardi et al., "Building simulated queries for
//!   known-item topics", SIGIR 2007): a target message of 20 to 400 words, then 3 to 5 of its
//!   words drawn without replacement with probability proportional to tf x idf. `noisy`
//!   queries replace one of those words with a word drawn from the whole corpus, as a user
//!   misremembering. A hit is the target or a message with the same text.
//! - Per method, over Q clean and Q noisy queries: MRR@10 and success@10. The arms are the
//!   real searches (50 hits each, as hybrid asks for a limit of 10); the real hybrid search's
//!   top 10 is checked against its fusion of those arms (`hybrid_differs_from_its_fusion`
//!   counts the queries where the scores differ).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use futures::TryStreamExt;
use pond_benches::corpus::Rng;
use pond_benches::{report, work};
use pond_embed::{Embedder, TextKind};
use pond_protocol::job::BackfillRequest;
use pond_protocol::Job;
use pond_store::search::{
    fuse, search, Fusion, QueryVector, SearchFilters, SearchMode, SearchRequest, SortBy,
    HYBRID_FUSION,
};
use pond_store::{Store, StoreConfig};
use pond_workers::jobs::Jobs;
use serde_json::json;

const ARM: usize = 50;
const CUTOFF: usize = 10;

fn model_dir() -> PathBuf {
    work::arg("--model")
        .or_else(|| std::env::var("POND_TEST_MINILM").ok())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default();
            home.join(".cache/pond/models/all-MiniLM-L6-v2")
        })
}

/// The synced, embedded store for `corpus` and `model`, built once.
async fn store(corpus: &std::path::Path, model: &std::path::Path) -> Arc<Store> {
    let label = |p: &std::path::Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let dir = work::work_dir().join(format!("hybrid-store-{}-{}", label(corpus), label(model)));
    let dir = work::synced_store_of(corpus, dir).await;
    // The sync marks the store `.complete`; the embedding is done once `.embedded` exists.
    let ready = dir.join(".embedded");
    if !ready.exists() {
        let store = Arc::new(Store::open(&dir, StoreConfig::default()).expect("open store"));
        pond_embed::import(model, &store.model_dir(), &label(model), None).expect("import");
        let t = std::time::Instant::now();
        let out = Jobs::new(store.clone())
            .execute(Job::Backfill(BackfillRequest { limit: 0 }), &mut |_| {})
            .await
            .expect("backfill");
        eprintln!("embedded in {:.0} s: {out:?}", t.elapsed().as_secs_f64());
        std::fs::write(&ready, "").expect("mark the store complete");
    }
    Arc::new(Store::open(&dir, StoreConfig::default()).expect("open store"))
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3 && !w.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_lowercase)
        .collect()
}

/// Every searchable message: (id, text).
async fn messages(store: &Store) -> Vec<(String, String)> {
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

struct Topic {
    query: String,
    noisy: bool,
    /// Messages with the target's text.
    relevant: HashSet<String>,
}

fn topics(msgs: &[(String, String)], n: usize, rng: &mut Rng) -> Vec<Topic> {
    let docs: Vec<Vec<String>> = msgs.iter().map(|m| words(&m.1)).collect();
    let mut df: HashMap<&str, u32> = HashMap::new();
    for d in &docs {
        for w in d.iter().map(String::as_str).collect::<HashSet<_>>() {
            *df.entry(w).or_default() += 1;
        }
    }
    let vocab: Vec<&str> = df.keys().copied().collect();
    let mut by_text: HashMap<&str, Vec<&str>> = HashMap::new();
    for (id, text) in msgs {
        by_text.entry(text.as_str()).or_default().push(id);
    }
    let candidates: Vec<usize> = (0..msgs.len())
        .filter(|&i| (20..=400).contains(&docs[i].len()))
        .collect();
    let total = msgs.len() as f64;
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    while out.len() < 2 * n && seen.len() < candidates.len() {
        let i = *rng.pick(&candidates);
        if !seen.insert(msgs[i].1.as_str()) {
            continue;
        }
        let mut tf: HashMap<&str, f64> = HashMap::new();
        for w in &docs[i] {
            *tf.entry(w).or_default() += 1.0;
        }
        let mut terms: Vec<(&str, f64)> = tf
            .into_iter()
            .map(|(w, c)| (w, c * (total / f64::from(df[w])).ln()))
            .filter(|t| t.1 > 0.0)
            .collect();
        terms.sort_by(|a, b| a.0.cmp(b.0));
        let k = rng.range(3, 6) as usize;
        if terms.len() < k + 1 {
            continue;
        }
        let mut picked = Vec::new();
        for _ in 0..k {
            let sum: f64 = terms.iter().map(|t| t.1).sum();
            let mut at = rng.unit() * sum;
            let j = terms
                .iter()
                .position(|t| {
                    at -= t.1;
                    at <= 0.0
                })
                .unwrap_or(terms.len() - 1);
            picked.push(terms.remove(j).0.to_owned());
        }
        let noisy = out.len() % 2 == 1;
        if noisy {
            let j = rng.below(k as u64) as usize;
            picked[j] = rng.pick(&vocab).to_string();
        }
        out.push(Topic {
            query: picked.join(" "),
            noisy,
            relevant: by_text[msgs[i].1.as_str()]
                .iter()
                .map(|s| s.to_string())
                .collect(),
        });
    }
    out
}

/// One search's hits, best first: (message id, score).
async fn arm(
    store: &Store,
    query: &str,
    mode: SearchMode,
    v: Option<&QueryVector>,
    limit: usize,
) -> Vec<(String, f32)> {
    let req = SearchRequest {
        query: query.to_owned(),
        filters: SearchFilters::default(),
        sort: SortBy::Relevance,
        limit,
        mode,
        reveal_secrets: false,
    };
    let r = search(store, &req, v).await.expect("search");
    let mut hits: Vec<(String, f32)> = r
        .sessions
        .iter()
        .flat_map(|s| s.hits.iter().map(|h| (h.row.message_id.clone(), h.score)))
        .collect();
    hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    hits
}

/// Reciprocal rank of the first relevant hit in the top [`CUTOFF`], 0 if none.
fn rr(ranked: &[(String, f32)], relevant: &HashSet<String>) -> f64 {
    ranked
        .iter()
        .take(CUTOFF)
        .position(|h| relevant.contains(&h.0))
        .map_or(0.0, |p| 1.0 / (p + 1) as f64)
}

fn main() {
    pond_benches::work::accept(&["--model", "--queries", "--corpus", "--messages"], &[]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let queries = work::arg("--queries").map_or(200, |v| v.parse().expect("--queries"));
    let model = model_dir();
    assert!(
        model.join("model.safetensors").exists(),
        "no model at {}: run scripts/fetch-test-model.sh or pass --model DIR",
        model.display()
    );
    let corpus = match work::arg("--corpus") {
        Some(dir) => PathBuf::from(dir),
        None => {
            work::corpus(work::num("--messages", 20_000))
                .expect("corpus")
                .0
        }
    };
    let figures = rt.block_on(async {
        let store = store(&corpus, &model).await;
        let embedder = Embedder::load(&store.model_dir()).expect("load the model");
        let msgs = messages(&store).await;
        let topics = topics(&msgs, queries, &mut Rng::new(11));
        const METHODS: [&str; 4] = ["fts", "vector", "rrf", "minmax"];
        // (method, noisy) -> reciprocal ranks
        let mut ranks: HashMap<(&str, bool), Vec<f64>> = HashMap::new();
        let mut mismatches = 0;
        for t in &topics {
            let v = QueryVector {
                model: embedder.manifest().name.clone(),
                vector: embedder
                    .embed(&[t.query.as_str()], TextKind::Query)
                    .expect("embed")
                    .remove(0),
            };
            let text = arm(&store, &t.query, SearchMode::Fts, None, ARM).await;
            let near = arm(&store, &t.query, SearchMode::Vector, Some(&v), ARM).await;
            let rrf = fuse(Fusion::Rrf, &[&text, &near]);
            let minmax = fuse(Fusion::MinMax, &[&text, &near]);
            let hybrid = arm(&store, &t.query, SearchMode::Hybrid, Some(&v), CUTOFF).await;
            let expect = if HYBRID_FUSION == Fusion::Rrf {
                &rrf
            } else {
                &minmax
            };
            // Scores, not ids: hits with equal scores may come in either order (and under
            // RRF, equal full-text scores make the arms' ranks, hence the fused scores,
            // depend on that order: the check is exact for min-max only).
            let scores =
                |r: &[(String, f32)]| r.iter().take(CUTOFF).map(|h| h.1).collect::<Vec<_>>();
            let (got, want) = (scores(&hybrid), scores(expect));
            if got.len() != want.len() || got.iter().zip(&want).any(|(a, b)| (a - b).abs() > 1e-5) {
                mismatches += 1;
            }
            for (m, ranked) in METHODS.iter().zip([&text, &near, &rrf, &minmax]) {
                ranks
                    .entry((m, t.noisy))
                    .or_default()
                    .push(rr(ranked, &t.relevant));
            }
        }
        let mut figures = json!({
            "corpus": corpus.display().to_string(),
            "searchable_messages": msgs.len(),
            "model": embedder.manifest().name,
            "queries_clean": topics.iter().filter(|t| !t.noisy).count(),
            "queries_noisy": topics.iter().filter(|t| t.noisy).count(),
            "hybrid_fusion": format!("{HYBRID_FUSION:?}").to_lowercase(),
            "hybrid_differs_from_its_fusion": mismatches,
        });
        let obj = figures.as_object_mut().unwrap();
        for m in METHODS {
            for (noisy, set) in [(false, "clean"), (true, "noisy")] {
                let r = ranks.get(&(m, noisy)).cloned().unwrap_or_default();
                let n = r.len().max(1) as f64;
                let mrr = r.iter().sum::<f64>() / n;
                let success = r.iter().filter(|&&x| x > 0.0).count() as f64 / n;
                obj.insert(
                    format!("{m}_{set}_mrr10"),
                    json!((mrr * 1000.0).round() / 1000.0),
                );
                obj.insert(
                    format!("{m}_{set}_success10"),
                    json!((success * 1000.0).round() / 1000.0),
                );
            }
        }
        figures
    });
    report::print("hybrid_bench", &figures);
}
