//! The embedder's arithmetic, in this process: how fast the backfill's forward passes run
//! and how close the int8 encoder's vectors are to candle's f32 BERT.
//!
//! `cargo bench --workspace --bench encoder_bench -- [--model minilm|e5] [--corpus DIR |
//!  --messages N] [--texts T] [--agree A] [--max-tokens M] [--work DIR]`
//!
//! - Models: `minilm` is all-MiniLM-L6-v2 (`scripts/fetch-test-model.sh`); `e5` is a
//!   random-weight model of multilingual-e5-small's exact shape (12 layers, 384 dims, 250k
//!   vocabulary) with MiniLM's WordPiece tokenizer, so texts split into as many tokens as a
//!   real subword tokenizer makes (the random model's own tokenizer spells most words letter
//!   by letter). Without `--model`, both.
//! - Texts: T searchable messages of the store synced from the corpus (default the generated
//!   corpus of N = 20,000 messages), every k-th, embedded as the backfill does: sorted by
//!   length, passages with the model's prefix, at most M tokens each (default the model's).
//! - Figures: messages/s and tokens/s of the whole run after one warm-up pass, the kernel
//!   (`POND_EMBED_KERNEL=avx2|portable` forces a slower one), a query's embedding p50/p95
//!   (1 to 12 words, alone, on this thread), and the cosine of each of the first A texts'
//!   vector with the f32 reference's (minimum, 1st percentile, mean).

use std::path::{Path, PathBuf};
use std::time::Instant;

use pond_benches::corpus::Rng;
use pond_benches::report::{percentile, r2};
use pond_benches::{report, work};
use pond_embed::random_bert::{self, Shape};
use pond_embed::reference::Reference;
use pond_embed::{Embedder, Manifest, TextKind};
use pond_store::{Store, StoreConfig};
use serde_json::json;

fn minilm() -> PathBuf {
    std::env::var_os("POND_TEST_MINILM")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default();
            home.join(".cache/pond/models/all-MiniLM-L6-v2")
        })
}

/// The source folder of `model`, written once for `e5`.
fn source(model: &str) -> PathBuf {
    let mini = minilm();
    assert!(
        mini.join("model.safetensors").exists(),
        "no all-MiniLM-L6-v2 at {}: run scripts/fetch-test-model.sh",
        mini.display()
    );
    match model {
        "minilm" => mini,
        "e5" => {
            let dir = work::work_dir().join("encoder-bench/e5-small-random-wordpiece");
            if !dir.join("model.safetensors").exists() {
                random_bert::write(&dir, Shape::e5_small(), 42).expect("write the model");
                std::fs::copy(mini.join("tokenizer.json"), dir.join("tokenizer.json"))
                    .expect("tokenizer");
            }
            dir
        }
        other => panic!("--model {other}: minilm or e5"),
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x * y) as f64).sum()
}

fn run(
    model: &str,
    texts: &[String],
    agree: usize,
    max_tokens: Option<usize>,
) -> serde_json::Value {
    let src = source(model);
    let asset = work::work_dir().join(format!("encoder-bench/asset-{model}"));
    let t = Instant::now();
    let mut manifest = pond_embed::import(&src, &asset, model, None).expect("import");
    let import_s = t.elapsed().as_secs_f64();
    if let Some(m) = max_tokens {
        manifest.max_tokens = m;
        std::fs::write(
            asset.join("manifest.json"),
            serde_json::to_vec_pretty(&manifest).unwrap(),
        )
        .unwrap();
    }
    let manifest = Manifest::read(&asset).unwrap();
    let e = Embedder::load(&asset).expect("load");

    // The backfill's order: sorted by length.
    let mut sorted: Vec<&str> = texts.iter().map(String::as_str).collect();
    sorted.sort_by_key(|t| t.len());
    let tokens: usize = sorted
        .iter()
        .map(|t| e.passage_tokens(t).expect("tokenize"))
        .sum();
    e.embed(&sorted[..sorted.len().min(64)], TextKind::Passage)
        .expect("warm up");
    let t = Instant::now();
    let vectors = e.embed(&sorted, TextKind::Passage).expect("embed");
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(vectors.len(), sorted.len());

    // Queries: 1 to 12 words of the texts, one at a time.
    let words: Vec<&str> = texts
        .iter()
        .flat_map(|t| t.split_whitespace())
        .filter(|w| w.len() > 2 && w.len() < 16)
        .collect();
    let mut rng = Rng::new(5);
    let mut query_ms = Vec::new();
    for _ in 0..200 {
        let n = 1 + rng.below(12) as usize;
        let q: Vec<&str> = (0..n)
            .map(|_| words[rng.below(words.len() as u64) as usize])
            .collect();
        let q = q.join(" ");
        let t = Instant::now();
        e.embed(&[q.as_str()], TextKind::Query).expect("query");
        query_ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }

    // Agreement with the f32 reference on the first texts.
    let sample: Vec<&str> = texts.iter().take(agree).map(String::as_str).collect();
    let reference = Reference::open(&src, manifest.clone()).expect("reference");
    let want = reference
        .embed(&sample, TextKind::Passage)
        .expect("reference embed");
    let got = e.embed(&sample, TextKind::Passage).expect("embed");
    let mut cos: Vec<f64> = got.iter().zip(&want).map(|(a, b)| cosine(a, b)).collect();
    let mean = cos.iter().sum::<f64>() / cos.len().max(1) as f64;
    let min = cos.iter().copied().fold(1.0, f64::min);
    let p1 = percentile(&mut cos, 1.0);

    json!({
        "model": model,
        "kernel": pond_embed::int8::Kernel::detect().name(),
        "threads": cores(),
        "max_tokens": manifest.max_tokens,
        "import_s": r2(import_s),
        "texts": sorted.len(),
        "tokens": tokens,
        "tokens_per_text": r2(tokens as f64 / sorted.len().max(1) as f64),
        "embed_s": r2(secs),
        "messages_per_s": r2(sorted.len() as f64 / secs),
        "tokens_per_s": r2(tokens as f64 / secs),
        "query_p50_ms": r2(percentile(&mut query_ms.clone(), 50.0)),
        "query_p95_ms": r2(percentile(&mut query_ms, 95.0)),
        "agree_texts": sample.len(),
        "cosine_min": (min * 10_000.0).round() / 10_000.0,
        "cosine_p1": (p1 * 10_000.0).round() / 10_000.0,
        "cosine_mean": (mean * 10_000.0).round() / 10_000.0,
    })
}

/// The cores the encoder's thread pool uses (rayon's default: one thread a core).
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// T searchable texts of the store, every k-th.
fn texts(store: &Path, n: usize, rt: &tokio::runtime::Runtime) -> Vec<String> {
    let store = Store::open(store, StoreConfig::default()).expect("open store");
    let all = rt.block_on(work::searchable_messages(&store));
    let step = (all.len() / n.max(1)).max(1);
    all.into_iter()
        .step_by(step)
        .take(n)
        .map(|(_, t)| t)
        .collect()
}

fn main() {
    work::accept(
        &[
            "--model",
            "--corpus",
            "--messages",
            "--texts",
            "--agree",
            "--max-tokens",
        ],
        &[],
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let corpus = work::corpus_arg();
    let label = corpus
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let store = rt.block_on(work::synced_store_of(
        &corpus,
        work::work_dir().join(format!("encoder-store-{label}")),
    ));
    let texts = texts(&store, work::num("--texts", 2000) as usize, &rt);
    let agree = work::num("--agree", 200) as usize;
    let max_tokens = work::arg("--max-tokens").map(|v| v.parse().expect("--max-tokens"));
    let models = match work::arg("--model") {
        Some(m) => vec![m],
        None => vec!["minilm".to_owned(), "e5".to_owned()],
    };
    for m in models {
        let mut figures = run(&m, &texts, agree, max_tokens);
        figures["corpus"] = json!(corpus.display().to_string());
        report::print("encoder_bench", &figures);
    }
}
