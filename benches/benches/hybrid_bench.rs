//! Hybrid search's fusion, measured on known-item queries: which of reciprocal rank fusion
//! and min-max score fusion finds a known message more often, against full-text and vector
//! search alone.
//!
//! `cargo bench --workspace --bench hybrid_bench -- [--corpus DIR | --messages N]
//!  [--model DIR] [--queries Q] [--max-tokens M] [--work DIR]`
//!
//! - The store: the corpus (a folder of session files, default the generated corpus of N
//!   messages) synced, the model (default all-MiniLM-L6-v2 from `scripts/fetch-test-model.sh`)
//!   imported and every searchable message embedded, in this process; kept in the work dir
//!   and reused. `--max-tokens M` embeds each message's first M tokens (the passage cap under
//!   test; default the model's limit, 512), in a store of its own.
//! - Known-item queries (simulated as in Azzopardi et al., "Building simulated queries for
//!   known-item topics", SIGIR 2007): a target message of 20 to 400 words, then 3 to 5 of its
//!   words drawn without replacement with probability proportional to tf x idf. `noisy`
//!   queries replace one of those words with a word drawn from the whole corpus, as a user
//!   misremembering. A hit is the target or a message with the same text.
//! - Per method, over Q clean and Q noisy queries: MRR@10 and success@10. The arms are the
//!   real searches (50 hits each, as hybrid asks for a limit of 10); the real hybrid search's
//!   top 10 is checked against its fusion of those arms (`hybrid_differs_from_its_fusion`
//!   counts the queries where the scores differ).
//! - `vector_f32` and `minmax_f32`: the same with candle's f32 BERT at full length instead of
//!   the store's int8 vectors (exact nearest neighbours over every message; computed once per
//!   corpus and kept in the work dir): the baseline for the int8 encoder and the passage cap.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use pond_benches::corpus::Rng;
use pond_benches::{report, work};
use pond_embed::reference::Reference;
use pond_embed::{Embedder, Manifest, TextKind};
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
    let max_tokens = work::arg("--max-tokens");
    let dir = work::work_dir().join(format!(
        "hybrid-store-{}-{}{}",
        label(corpus),
        label(model),
        max_tokens
            .as_ref()
            .map_or(String::new(), |m| format!("-{m}"))
    ));
    let dir = work::synced_store_of(corpus, dir).await;
    // The sync marks the store `.complete`; the embedding is done once `.embedded` exists.
    let ready = dir.join(".embedded");
    if !ready.exists() {
        let store = Arc::new(Store::open(&dir, StoreConfig::default()).expect("open store"));
        let mut manifest =
            pond_embed::import(model, &store.model_dir(), &label(model), None).expect("import");
        if let Some(m) = &max_tokens {
            // The passage cap under test: what the backfill truncates each text to.
            manifest.max_tokens = m.parse().expect("--max-tokens");
            std::fs::write(
                store.model_dir().join("manifest.json"),
                serde_json::to_vec_pretty(&manifest).unwrap(),
            )
            .unwrap();
        }
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
    // Sorted: the noisy words must not depend on the hash map's order, which changes run to run.
    let mut vocab: Vec<&str> = df.keys().copied().collect();
    vocab.sort_unstable();
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

/// The f32 reference's vectors of every message (candle's BERT, each text at the model's
/// full length, 512 tokens at most): the baseline the store's int8, possibly shortened,
/// vectors are measured against. Computed once per corpus and model and kept in the work dir
/// by message id (stores of other passage caps share it).
fn reference_vectors(
    store: &Store,
    corpus: &std::path::Path,
    model: &std::path::Path,
    msgs: &[(String, String)],
) -> (Vec<Vec<f32>>, Manifest) {
    let mut manifest = Manifest::read(&store.model_dir()).expect("manifest");
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(model.join("config.json")).unwrap()).unwrap();
    manifest.max_tokens = config["max_position_embeddings"]
        .as_u64()
        .unwrap_or(512)
        .min(512) as usize;
    let name = |p: &std::path::Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let cache = work::work_dir().join(format!(
        "hybrid-reference-{}-{}.json",
        name(corpus),
        name(model)
    ));
    if let Ok(bytes) = std::fs::read(&cache) {
        let by_id: HashMap<String, Vec<f32>> = serde_json::from_slice(&bytes).expect("cache");
        let got: Option<Vec<Vec<f32>>> = msgs.iter().map(|m| by_id.get(&m.0).cloned()).collect();
        if let Some(vectors) = got {
            return (vectors, manifest);
        }
    }
    let t = std::time::Instant::now();
    let reference = Reference::open(model, manifest.clone()).expect("reference");
    let texts: Vec<&str> = msgs.iter().map(|m| m.1.as_str()).collect();
    let vectors = reference
        .embed(&texts, TextKind::Passage)
        .expect("reference embed");
    eprintln!(
        "f32 reference vectors in {:.0} s",
        t.elapsed().as_secs_f64()
    );
    let by_id: HashMap<&str, &Vec<f32>> = msgs.iter().map(|m| m.0.as_str()).zip(&vectors).collect();
    std::fs::write(&cache, serde_json::to_vec(&by_id).unwrap()).expect("cache the reference");
    (vectors, manifest)
}

/// The `limit` messages nearest `q` by cosine (exact), best first.
fn nearest(
    vectors: &[Vec<f32>],
    msgs: &[(String, String)],
    q: &[f32],
    limit: usize,
) -> Vec<(String, f32)> {
    let mut scored: Vec<(String, f32)> = vectors
        .iter()
        .zip(msgs)
        .map(|(v, m)| (m.0.clone(), v.iter().zip(q).map(|(a, b)| a * b).sum()))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    scored.truncate(limit);
    scored
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
    pond_benches::work::accept(
        &[
            "--model",
            "--queries",
            "--corpus",
            "--messages",
            "--max-tokens",
        ],
        &[],
    );
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
    let corpus = work::corpus_arg();
    let figures = rt.block_on(async {
        let store = store(&corpus, &model).await;
        let embedder = Embedder::load(&store.model_dir()).expect("load the model");
        let msgs = work::searchable_messages(&store).await;
        let topics = topics(&msgs, queries, &mut Rng::new(11));
        let reference = reference_vectors(&store, &corpus, &model, &msgs);
        let reference_model = Reference::open(&model, reference.1.clone()).expect("reference");
        const METHODS: [&str; 6] = ["fts", "vector", "rrf", "minmax", "vector_f32", "minmax_f32"];
        // (method, noisy) -> reciprocal ranks
        let mut ranks: HashMap<(&str, bool), Vec<f64>> = HashMap::new();
        let mut mismatches = 0;
        for t in &topics {
            let v = QueryVector {
                model: embedder.manifest().vector_key(),
                vector: embedder
                    .embed(&[t.query.as_str()], TextKind::Query)
                    .expect("embed")
                    .remove(0),
            };
            let text = arm(&store, &t.query, SearchMode::Fts, None, ARM).await;
            let near = arm(&store, &t.query, SearchMode::Vector, Some(&v), ARM).await;
            let rrf = fuse(Fusion::Rrf, &[&text, &near]);
            let minmax = fuse(Fusion::MinMax, &[&text, &near]);
            let q = reference_model
                .embed(&[t.query.as_str()], TextKind::Query)
                .expect("reference query")
                .remove(0);
            let near_f32 = nearest(&reference.0, &msgs, &q, ARM);
            let minmax_f32 = fuse(Fusion::MinMax, &[&text, &near_f32]);
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
            for (m, ranked) in
                METHODS
                    .iter()
                    .zip([&text, &near, &rrf, &minmax, &near_f32, &minmax_f32])
            {
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
            "max_tokens": embedder.manifest().max_tokens,
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
