//! Import and embed on a tiny random BERT written by the test.

use crate::random_bert::{self, Shape};
use crate::reference::Reference;
use crate::{import, Embedder, Manifest, TextKind};

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn tiny() -> (tempfile::TempDir, Manifest) {
    let dir = tempfile::tempdir().unwrap();
    random_bert::write(&dir.path().join("src"), Shape::tiny(), 7).unwrap();
    let m = import(
        &dir.path().join("src"),
        &dir.path().join("asset"),
        "tiny-e5",
        None,
    )
    .unwrap();
    (dir, m)
}

#[test]
fn import_writes_an_int8_asset_under_half_the_size() {
    let (dir, m) = tiny();
    assert_eq!(m.dims, 32);
    assert_eq!(m.dtype, "int8");
    assert_eq!(m.source_dtype, "f32");
    assert_eq!(
        (m.query_prefix.as_str(), m.passage_prefix.as_str()),
        ("query: ", "passage: ")
    );
    let size = |p: &str| std::fs::metadata(dir.path().join(p)).unwrap().len() as f64;
    let ratio = size("asset/model.safetensors") / size("src/model.safetensors");
    assert!(ratio < 0.51, "{ratio}");
    assert_eq!(Manifest::read(&dir.path().join("asset")).unwrap(), m);
    // Importing again replaces the asset whole.
    let again = import(
        &dir.path().join("src"),
        &dir.path().join("asset"),
        "tiny",
        None,
    )
    .unwrap();
    assert_eq!(again.query_prefix, "");
    assert!(!dir.path().join("asset.importing").exists());
    assert!(!dir.path().join("asset.replaced").exists());
}

#[test]
fn embeddings_are_unit_deterministic_and_match_the_f32_model() {
    let (dir, m) = tiny();
    let e = Embedder::load(&dir.path().join("asset")).unwrap();
    let texts = [
        "the parser fails on crlf input",
        "retry with backoff",
        "日本語 and ünïcode",
    ];
    let a = e.embed(&texts, TextKind::Passage).unwrap();
    let b = e.embed(&texts, TextKind::Passage).unwrap();
    assert_eq!(a, b, "deterministic");
    for v in &a {
        assert_eq!(v.len(), 32);
        assert!(v.iter().all(|x| x.is_finite()));
        let n: f32 = v.iter().map(|x| x * x).sum();
        assert!((n - 1.0).abs() < 1e-3, "unit norm: {n}");
    }
    // Padding in a batch does not change a text's vector.
    let alone = e.embed(&texts[1..2], TextKind::Passage).unwrap();
    assert!(
        cosine(&alone[0], &a[1]) > 0.999,
        "{}",
        cosine(&alone[0], &a[1])
    );
    // The prefix matters.
    let q = e.embed(&texts[..1], TextKind::Query).unwrap();
    assert!(cosine(&q[0], &a[0]) < 0.9999);
    // Against the f32 source model (candle's BERT): within int8 tolerance.
    let reference = Reference::open(&dir.path().join("src"), m).unwrap();
    let r = reference.embed(&texts, TextKind::Passage).unwrap();
    for (x, y) in a.iter().zip(&r) {
        assert!(cosine(x, y) > 0.99, "int8 vs f32 cosine {}", cosine(x, y));
    }
}

#[test]
fn a_batch_of_long_texts_is_split_by_token_budget_without_changing_vectors() {
    let (dir, _) = tiny();
    let e = Embedder::load(&dir.path().join("asset")).unwrap();
    // The tiny model truncates at 128 tokens: 40 long texts are 5,120 padded tokens, more
    // than one forward pass takes, so the batch is split; short texts ride along.
    let long: Vec<String> = (0..40)
        .map(|i| format!("{i} ") + &"retry the flaky upload with backoff ".repeat(30))
        .collect();
    let mut texts: Vec<&str> = vec!["short", "a bit longer text"];
    texts.extend(long.iter().map(String::as_str));
    const { assert!(40 * 128 > crate::MAX_BATCH_TOKENS) };
    let batch = e.embed(&texts, TextKind::Passage).unwrap();
    assert_eq!(batch.len(), texts.len());
    for (i, t) in texts.iter().enumerate() {
        let alone = e.embed(&[t], TextKind::Passage).unwrap();
        let c = cosine(&alone[0], &batch[i]);
        assert!(c > 0.999, "text {i}: {c}");
    }
}

#[test]
fn bad_models_and_assets_are_refused_with_reasons() {
    let (dir, _) = tiny();
    let src = dir.path().join("src");
    // The serving path refuses an asset it did not write (f32 weights).
    let f32_asset = dir.path().join("f32");
    std::fs::create_dir_all(&f32_asset).unwrap();
    for f in ["config.json", "tokenizer.json", "model.safetensors"] {
        std::fs::copy(src.join(f), f32_asset.join(f)).unwrap();
    }
    let mut m = Manifest::read(&dir.path().join("asset")).unwrap();
    std::fs::write(
        f32_asset.join("manifest.json"),
        serde_json::to_vec(&m).unwrap(),
    )
    .unwrap();
    let err = Embedder::load(&f32_asset).err().unwrap().to_string();
    assert!(err.contains("not F16"), "{err}");
    m.dtype = "f32".into();
    std::fs::write(
        f32_asset.join("manifest.json"),
        serde_json::to_vec(&m).unwrap(),
    )
    .unwrap();
    let err = Embedder::load(&f32_asset).err().unwrap().to_string();
    assert!(err.contains("not int8"), "{err}");
    let err = Embedder::load(&dir.path().join("nothing"))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("pond model import"), "{err}");

    // Import: missing files, foreign model types, garbage weights.
    let err = import(
        &dir.path().join("nothing"),
        &dir.path().join("x"),
        "m",
        None,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("config.json"), "{err}");
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    for f in ["config.json", "tokenizer.json", "model.safetensors"] {
        std::fs::copy(src.join(f), other.join(f)).unwrap();
    }
    let config = std::fs::read_to_string(src.join("config.json")).unwrap();
    std::fs::write(
        other.join("config.json"),
        config.replace("\"bert\"", "\"gpt2\""),
    )
    .unwrap();
    let err = import(&other, &dir.path().join("x"), "m", None)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("gpt2"), "{err}");
    std::fs::write(other.join("config.json"), &config).unwrap();
    std::fs::write(other.join("model.safetensors"), b"not a safetensors file").unwrap();
    assert!(import(&other, &dir.path().join("x"), "m", None).is_err());
    assert!(!dir.path().join("x").exists(), "nothing written on failure");
}

/// all-MiniLM-L6-v2, fetched by `scripts/fetch-test-model.sh` (`scripts/test.sh` sets
/// `POND_TEST_MINILM`); skipped when it is not there.
fn minilm() -> Option<std::path::PathBuf> {
    let dir = std::path::PathBuf::from(std::env::var_os("POND_TEST_MINILM")?);
    dir.join("model.safetensors").exists().then_some(dir)
}

#[test]
fn a_real_model_ranks_a_paraphrase_above_unrelated_text() {
    let Some(src) = minilm() else {
        eprintln!("skipped: POND_TEST_MINILM is not set (scripts/test.sh sets it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let m = import(&src, &dir.path().join("asset"), "all-MiniLM-L6-v2", None).unwrap();
    assert_eq!((m.dims, m.source_dtype.as_str()), (384, "f32"));
    assert_eq!(m.query_prefix, "");
    let e = Embedder::load(&dir.path().join("asset")).unwrap();
    let q = e
        .embed(
            &["how do I make the tests stop timing out"],
            TextKind::Query,
        )
        .unwrap();
    let docs = e
        .embed(
            &[
                "the test suite keeps hitting its time limit; raise the timeout or speed it up",
                "a recipe for lemon cake with powdered sugar",
                "the invoice total is rounded to two decimals",
            ],
            TextKind::Passage,
        )
        .unwrap();
    let s: Vec<f32> = docs.iter().map(|d| cosine(&q[0], d)).collect();
    assert!(s[0] > s[1] + 0.2 && s[0] > s[2] + 0.2, "{s:?}");
    // The int8 asset against the f32 original.
    let reference = Reference::open(&src, m).unwrap();
    let r = reference
        .embed(
            &["how do I make the tests stop timing out"],
            TextKind::Query,
        )
        .unwrap();
    assert!(cosine(&q[0], &r[0]) > 0.99, "{}", cosine(&q[0], &r[0]));
}

/// A store whose model was imported before int8 holds an all-f16 asset: it still loads (its
/// layers quantized as they load) and agrees with the f32 model.
#[test]
fn an_f16_asset_from_before_int8_still_serves() {
    let (dir, m) = tiny();
    let src = dir.path().join("src");
    let old = dir.path().join("f16-asset");
    std::fs::create_dir_all(&old).unwrap();
    let bytes = std::fs::read(src.join("model.safetensors")).unwrap();
    let tensors = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let converted: Vec<(String, Vec<u8>, Vec<usize>)> = tensors
        .iter()
        .map(|(name, v)| {
            let data = v
                .data()
                .chunks_exact(4)
                .flat_map(|b| {
                    half::f16::from_f32(f32::from_le_bytes([b[0], b[1], b[2], b[3]])).to_le_bytes()
                })
                .collect();
            (name.to_owned(), data, v.shape().to_vec())
        })
        .collect();
    let views: Vec<(&str, safetensors::tensor::TensorView)> = converted
        .iter()
        .map(|(n, d, s)| {
            let v = safetensors::tensor::TensorView::new(safetensors::Dtype::F16, s.clone(), d)
                .unwrap();
            (n.as_str(), v)
        })
        .collect();
    safetensors::serialize_to_file(views, None, &old.join("model.safetensors")).unwrap();
    for f in ["config.json", "tokenizer.json"] {
        std::fs::copy(src.join(f), old.join(f)).unwrap();
    }
    let mut legacy = m.clone();
    legacy.dtype = crate::LEGACY_DTYPE.into();
    std::fs::write(
        old.join("manifest.json"),
        serde_json::to_vec(&legacy).unwrap(),
    )
    .unwrap();
    let e = Embedder::load(&old).unwrap();
    let texts = ["the parser fails on crlf input", "retry with backoff"];
    let got = e.embed(&texts, TextKind::Passage).unwrap();
    let want = Reference::open(&src, m)
        .unwrap()
        .embed(&texts, TextKind::Passage)
        .unwrap();
    for (a, b) in got.iter().zip(&want) {
        assert!(cosine(a, b) > 0.99, "{}", cosine(a, b));
    }
}
