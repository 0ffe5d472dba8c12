//! The model asset: `model.safetensors` (the encoder layers' linear weights in int8 with one
//! f32 scale per output, everything else in f16), `tokenizer.json`, `config.json` and
//! `manifest.json`, written by [`import`].

use std::borrow::Cow;
use std::fs::File;
use std::path::Path;

use pond_protocol::model::ModelSource;

pub use pond_protocol::model::Manifest;
use safetensors::tensor::{Dtype, TensorView, View};
use safetensors::SafeTensors;
use serde::Deserialize;

use crate::encoder::{float_reader, floats, is_linear_weight, BertConfig, SCALE_SUFFIX};
use crate::{EmbedError, Result};

/// The weight type `pond model import` writes: int8 encoder layers, f16 tables.
pub const ASSET_DTYPE: &str = "int8";
/// The weight type of assets imported before int8 (all f16); the embedder still loads them,
/// quantizing the layers as they load.
pub const LEGACY_DTYPE: &str = "f16";

/// Tokens of a text the embedder reads (the rest is cut). Chosen by hybrid_bench against the
/// f32 model at 512 (docs/benchmarks.md): 256 found known messages as well as 512 on the
/// shared real corpus and the generated one (MRR@10 within 0.01), 128 lost up to 0.026; a
/// long message's first 256 tokens cost half the products of 512 and a quarter of the
/// attention.
pub const PASSAGE_TOKENS: usize = 256;

/// The parts of `config.json` pond checks (the encoder reads the whole file).
#[derive(Deserialize)]
struct ConfigHead {
    hidden_size: usize,
    max_position_embeddings: usize,
}

/// xxh3-64 of a file, read a MiB at a time, as 16 hex digits.
fn file_hash(path: &Path) -> Result<String> {
    use std::io::Read;
    let mut f = File::open(path)?;
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(format!("{:016x}", h.digest()));
        }
        h.update(&buf[..n]);
    }
}

fn dtype_name(d: Dtype) -> String {
    format!("{d:?}").to_lowercase()
}

/// What one asset tensor is made of: converted when the writer asks for its bytes, so the
/// conversion holds one tensor at a time.
enum Stored<'a> {
    /// A float tensor as f16 (any other type as it is).
    F16(TensorView<'a>),
    /// A linear layer's weight quantized per output row.
    Int8(TensorView<'a>),
    /// The per-output scales of that weight (`[rows]`).
    Scales(TensorView<'a>, [usize; 1]),
}

impl Stored<'_> {
    fn quantized(view: &TensorView) -> (Vec<i8>, Vec<f32>) {
        let k = view.shape()[1];
        crate::int8::quantize_rows(&floats(view).unwrap_or_default(), k)
    }
}

impl View for Stored<'_> {
    fn dtype(&self) -> Dtype {
        match self {
            Stored::F16(v) if float_reader(v.dtype()).is_some() => Dtype::F16,
            Stored::F16(v) => v.dtype(),
            Stored::Int8(_) => Dtype::I8,
            Stored::Scales(..) => Dtype::F32,
        }
    }

    fn shape(&self) -> &[usize] {
        match self {
            Stored::F16(v) | Stored::Int8(v) => v.shape(),
            Stored::Scales(_, rows) => rows,
        }
    }

    fn data(&self) -> Cow<'_, [u8]> {
        match self {
            // Element by element into the f16 bytes: no f32 copy of a table (the word table
            // of E5-small is 384 MB in f32).
            Stored::F16(v) => match float_reader(v.dtype()) {
                Some((width, read)) if v.dtype() != Dtype::F16 => Cow::Owned(
                    v.data()
                        .chunks_exact(width)
                        .flat_map(|b| half::f16::from_f32(read(b)).to_le_bytes())
                        .collect(),
                ),
                _ => Cow::Borrowed(v.data()),
            },
            Stored::Int8(v) => {
                Cow::Owned(Self::quantized(v).0.into_iter().map(|q| q as u8).collect())
            }
            Stored::Scales(v, _) => Cow::Owned(
                Self::quantized(v)
                    .1
                    .into_iter()
                    .flat_map(f32::to_le_bytes)
                    .collect(),
            ),
        }
    }

    fn data_len(&self) -> usize {
        match self {
            Stored::F16(v) if float_reader(v.dtype()).is_some() => {
                v.shape().iter().product::<usize>() * 2
            }
            Stored::F16(v) => v.data().len(),
            Stored::Int8(v) => v.shape().iter().product(),
            Stored::Scales(_, rows) => rows[0] * 4,
        }
    }
}

/// Import the BERT-shaped sentence embedder in `src` (`config.json`, `tokenizer.json`,
/// `model.safetensors`) as the asset at `dst`, replacing any asset there only once the new
/// one is complete. `name` is recorded with every vector; E5 models (a name containing
/// `e5`) get the `query: ` / `passage: ` prefixes unless `prefixes` says otherwise.
pub fn import(
    src: &Path,
    dst: &Path,
    name: &str,
    prefixes: Option<(String, String)>,
) -> Result<Manifest> {
    let need = |f: &str| {
        let p = src.join(f);
        if p.is_file() {
            Ok(p)
        } else {
            Err(EmbedError::Invalid(format!(
                "{} has no {f}: a model folder holds config.json, tokenizer.json and model.safetensors",
                src.display()
            )))
        }
    };
    let (config_path, tokenizer_path, weights_path) = (
        need("config.json")?,
        need("tokenizer.json")?,
        need("model.safetensors")?,
    );
    let config_text = std::fs::read_to_string(&config_path)?;
    let head: ConfigHead = serde_json::from_str(&config_text)
        .map_err(|e| EmbedError::Invalid(format!("config.json: {e}")))?;
    // The encoder must be able to run the config, and the tokenizer must load.
    BertConfig::read(src)?;
    tokenizers::Tokenizer::from_file(&tokenizer_path)
        .map_err(|e| EmbedError::Tokenizer(format!("{}: {e}", tokenizer_path.display())))?;

    let file = File::open(&weights_path)?;
    // SAFETY: read-only map of a file nobody writes while we convert it.
    let map = unsafe { memmap2::Mmap::map(&file)? };
    let tensors = SafeTensors::deserialize(&map)?;
    let word = tensors
        .iter()
        .find(|(n, _)| n.ends_with("embeddings.word_embeddings.weight"))
        .map(|(_, v)| v.shape().to_vec())
        .ok_or_else(|| {
            EmbedError::Invalid("model.safetensors has no embeddings.word_embeddings.weight: not a BERT-shaped model".into())
        })?;
    if word.len() != 2 || word[1] != head.hidden_size {
        return Err(EmbedError::Invalid(format!(
            "word embeddings are {word:?}, config.json says hidden_size {}",
            head.hidden_size
        )));
    }
    let mut source_dtype = None;
    let mut parameters = 0u64;
    let mut views = Vec::new();
    for (name, view) in tensors.iter() {
        // Buffers some checkpoints carry (position ids) are not weights.
        if name.ends_with("position_ids") {
            continue;
        }
        let float = float_reader(view.dtype()).is_some();
        if float {
            source_dtype.get_or_insert(view.dtype());
            parameters += view.shape().iter().product::<usize>() as u64;
        }
        if float && view.shape().len() == 2 && is_linear_weight(name) {
            let rows = [view.shape()[0]];
            views.push((
                format!("{name}{SCALE_SUFFIX}"),
                Stored::Scales(view.clone(), rows),
            ));
            views.push((name.to_owned(), Stored::Int8(view)));
        } else {
            views.push((name.to_owned(), Stored::F16(view)));
        }
    }

    let staging = dst.with_extension("importing");
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging)?;
    safetensors::serialize_to_file(views, None, &staging.join("model.safetensors"))?;
    let weights = file_hash(&staging.join("model.safetensors"))?;
    std::fs::copy(&tokenizer_path, staging.join("tokenizer.json"))?;
    std::fs::copy(&config_path, staging.join("config.json"))?;
    let e5 = name.to_lowercase().contains("e5");
    let (query_prefix, passage_prefix) = prefixes.unwrap_or_else(|| {
        if e5 {
            ("query: ".into(), "passage: ".into())
        } else {
            (String::new(), String::new())
        }
    });
    let manifest = Manifest {
        name: name.to_owned(),
        dims: head.hidden_size,
        max_tokens: head.max_position_embeddings.min(PASSAGE_TOKENS),
        query_prefix,
        passage_prefix,
        pooling: "mean".into(),
        dtype: ASSET_DTYPE.into(),
        source_dtype: source_dtype.map_or_else(|| "none".into(), dtype_name),
        parameters,
        weights: Some(weights),
        revision: None,
    };
    manifest.write(&staging)?;
    for f in std::fs::read_dir(&staging)? {
        File::open(f?.path())?.sync_all()?;
    }
    if dst.exists() {
        let old = dst.with_extension("replaced");
        let _ = std::fs::remove_dir_all(&old);
        std::fs::rename(dst, &old)?;
        std::fs::rename(&staging, dst)?;
        std::fs::remove_dir_all(&old)?;
    } else {
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::rename(&staging, dst)?;
    }
    Ok(manifest)
}

/// The import job: `source` (a folder, or a hub repository downloaded into `download`, a
/// scratch folder removed after) made the asset in `asset`. `progress(file, bytes, total)`
/// follows a download.
pub async fn import_from(
    source: ModelSource,
    asset: &Path,
    download: &Path,
    progress: &mut (dyn FnMut(&str, u64, Option<u64>) + Send),
) -> Result<Manifest> {
    match source {
        ModelSource::Folder {
            dir,
            name,
            prefixes,
        } => {
            let name = name.unwrap_or_else(|| folder_name(&dir));
            import(&dir, asset, &name, prefixes)
        }
        ModelSource::Hub { repo, revision } => {
            let revision =
                revision.unwrap_or_else(|| crate::fetch::default_revision(&repo).to_owned());
            let fetched = crate::fetch::download(&repo, &revision, download, progress).await;
            let imported = fetched.and_then(|f| {
                let mut m = import(download, asset, &repo, None)?;
                m.revision = Some(f.revision);
                m.write(asset)?;
                Ok(m)
            });
            let _ = std::fs::remove_dir_all(download);
            imported
        }
    }
}

/// A folder's own name (after resolving `.` and links), else "model".
fn folder_name(dir: &Path) -> String {
    dir.canonicalize()
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "model".into())
}
