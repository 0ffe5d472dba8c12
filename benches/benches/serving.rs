//! The serving store that `serve_mem_bench` and `multi_client_bench` share (`#[path]`-included
//! by both): the generated corpus synced, a random-weight model of multilingual-e5-small's
//! shape imported, stand-in vectors for every searchable message and their index.

use std::path::{Path, PathBuf};
use std::time::Instant;

use pond_benches::corpus::Rng;
use pond_benches::standin::StandIn;
use pond_benches::work;
use pond_embed::random_bert::{self, Shape};
use pond_store::{vectors, Store, StoreConfig};

pub const MODEL_NAME: &str = "multilingual-e5-small-random";

/// The serving store: the synced store copied, the model imported, stand-in vectors and
/// their index. Built once.
/// `label` names the store: the generated corpus's size, or the `--corpus` folder's name.
pub async fn serve_store(label: &str, corpus: Option<&Path>, messages: u64) -> PathBuf {
    let dir = work::work_dir().join(format!("serve-store-{label}"));
    if dir.join(".complete").exists() {
        return dir;
    }
    let synced = match corpus {
        Some(c) => {
            work::synced_store_of(c, work::work_dir().join(format!("fts-store-{label}"))).await
        }
        None => work::synced_store(messages).await,
    };
    let _ = std::fs::remove_dir_all(&dir);
    let t = Instant::now();
    let ok = std::process::Command::new("cp")
        .arg("-a")
        .arg(&synced)
        .arg(&dir)
        .status()
        .expect("cp");
    assert!(ok.success(), "copying {} failed", synced.display());
    eprintln!(
        "copied the synced store in {:.0} s",
        t.elapsed().as_secs_f64()
    );

    let model = work::work_dir().join("embed-bench/e5-small-random-f32");
    if !model.join("model.safetensors").exists() {
        random_bert::write(&model, Shape::e5_small(), 42).expect("write the model");
    }
    let store = Store::open(&dir, StoreConfig::default()).expect("open store");
    let manifest =
        pond_embed::import(&model, &store.model_dir(), MODEL_NAME, None).expect("import");

    let t = Instant::now();
    let standin = StandIn::new(&mut Rng::new(11));
    let mut embed = |texts: &[&str]| {
        Ok::<_, pond_store::StoreError>(texts.iter().map(|t| standin.of_text(t)).collect())
    };
    let mut shown = 0;
    let mut progress = |done: u64, total: u64| {
        if done >= shown + 100_000 || done == total {
            shown = done;
            eprintln!("stand-in vectors: {done} of {total}");
        }
    };
    let _lock = store.embed_lock().expect("embed lock");
    let stats = vectors::backfill(
        &store,
        &manifest.name,
        manifest.dims,
        0,
        vectors::CHUNK_ROWS * 8,
        &mut embed,
        &mut progress,
    )
    .await
    .expect("stand-in vectors");
    eprintln!(
        "{} stand-in vectors in {:.0} s",
        stats.embedded,
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let index = vectors::ensure_index(&store, vectors::VECTOR_INDEX_MIN_ROWS, true)
        .await
        .expect("vector index");
    eprintln!(
        "vector index {index:?} in {:.0} s",
        t.elapsed().as_secs_f64()
    );
    std::fs::write(dir.join(".complete"), "").expect("mark the store complete");
    dir
}
