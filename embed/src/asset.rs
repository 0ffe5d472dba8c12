//! The model asset: `model.safetensors` (f16), `tokenizer.json`, `config.json` and
//! `manifest.json`, written by [`import`].

use std::borrow::Cow;
use std::fs::File;
use std::path::Path;

use candle_transformers::models::bert::Config;
use safetensors::tensor::{Dtype, TensorView, View};
use safetensors::SafeTensors;
use serde::{Deserialize, Serialize};

use crate::{EmbedError, Result};

/// The only weight type an asset holds; the embedder refuses anything else.
pub const ASSET_DTYPE: &str = "f16";

/// What the embedder needs to know besides the weights.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Stored with every vector (`embedding_model`), so vectors of two models never mix.
    pub name: String,
    pub dims: usize,
    /// Tokens per text, longer texts are truncated.
    pub max_tokens: usize,
    /// Prepended to queries and to stored texts (E5: `query: ` and `passage: `).
    pub query_prefix: String,
    pub passage_prefix: String,
    /// `mean`: the mean of the last hidden states over the attention mask, then L2 norm.
    pub pooling: String,
    pub dtype: String,
    /// The weight type of the imported file.
    pub source_dtype: String,
    pub parameters: u64,
    /// xxh3 of the asset's weights file, as 16 hex digits: vectors are keyed by it too, so
    /// a changed model under the same name never serves the old one's vectors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights: Option<String>,
    /// The hub commit a fetched model came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}

impl Manifest {
    /// What vectors of this model are stored under: the name and its weights' hash (the
    /// name alone for an asset imported before weights were hashed).
    pub fn vector_key(&self) -> String {
        match &self.weights {
            Some(h) => format!("{}@{}", self.name, &h[..h.len().min(12)]),
            None => self.name.clone(),
        }
    }

    /// Record the hub commit a fetched asset came from.
    pub fn set_revision(dir: &Path, revision: &str) -> Result<Manifest> {
        let mut m = Manifest::read(dir)?;
        m.revision = Some(revision.to_owned());
        std::fs::write(dir.join("manifest.json"), serde_json::to_vec_pretty(&m)?)?;
        Ok(m)
    }

    pub fn read(dir: &Path) -> Result<Manifest> {
        let path = dir.join("manifest.json");
        let bytes = std::fs::read(&path).map_err(|e| {
            EmbedError::Invalid(format!(
                "no model asset at {} ({e}); import one with `pond model import DIR` or `pond model fetch`",
                dir.display()
            ))
        })?;
        Ok(serde_json::from_slice(&bytes)?)
    }
}

/// The parts of `config.json` pond checks (the encoder reads the whole file).
#[derive(Deserialize)]
struct ConfigHead {
    hidden_size: usize,
    max_position_embeddings: usize,
    #[serde(default)]
    model_type: Option<String>,
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

/// A source tensor as f16, converted when the writer asks for its bytes: the conversion
/// holds one tensor at a time.
struct AsF16<'a> {
    view: TensorView<'a>,
}

impl View for AsF16<'_> {
    fn dtype(&self) -> Dtype {
        match self.view.dtype() {
            Dtype::F32 | Dtype::BF16 | Dtype::F16 => Dtype::F16,
            other => other,
        }
    }

    fn shape(&self) -> &[usize] {
        self.view.shape()
    }

    fn data(&self) -> Cow<'_, [u8]> {
        let raw = self.view.data();
        match self.view.dtype() {
            Dtype::F32 => Cow::Owned(
                raw.chunks_exact(4)
                    .flat_map(|b| {
                        let x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                        half::f16::from_f32(x).to_le_bytes()
                    })
                    .collect(),
            ),
            Dtype::BF16 => Cow::Owned(
                raw.chunks_exact(2)
                    .flat_map(|b| {
                        let x = half::bf16::from_le_bytes([b[0], b[1]]).to_f32();
                        half::f16::from_f32(x).to_le_bytes()
                    })
                    .collect(),
            ),
            _ => Cow::Borrowed(raw),
        }
    }

    fn data_len(&self) -> usize {
        let n: usize = self.view.shape().iter().product();
        match self.view.dtype() {
            Dtype::F32 | Dtype::BF16 | Dtype::F16 => n * 2,
            _ => self.view.data().len(),
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
    if let Some(t) = &head.model_type {
        if t != "bert" {
            return Err(EmbedError::Invalid(format!(
                "config.json says model_type {t:?}: pond embeds with BERT encoders (model_type bert)"
            )));
        }
    }
    // The encoder must be able to read the config, and the tokenizer must load.
    let config = serde_json::from_str::<candle_transformers::models::bert::Config>(&config_text)
        .map_err(|e| EmbedError::Invalid(format!("config.json is not a BERT config: {e}")))?;
    check_config(&config)?;
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
        if matches!(view.dtype(), Dtype::F32 | Dtype::F16 | Dtype::BF16) {
            source_dtype.get_or_insert(view.dtype());
            parameters += view.shape().iter().product::<usize>() as u64;
        }
        views.push((name.to_owned(), AsF16 { view }));
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
        max_tokens: head.max_position_embeddings.min(512),
        query_prefix,
        passage_prefix,
        pooling: "mean".into(),
        dtype: ASSET_DTYPE.into(),
        source_dtype: source_dtype.map_or_else(|| "none".into(), dtype_name),
        parameters,
        weights: Some(weights),
        revision: None,
    };
    std::fs::write(
        staging.join("manifest.json"),
        serde_json::to_vec_pretty(&manifest)?,
    )?;
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

/// Refuse a config the encoder cannot be built from (a zero head count divides by zero in
/// the attention layers: a panic, not an error, in the worker).
pub(crate) fn check_config(c: &Config) -> Result<()> {
    let bad = |what: String| {
        Err(EmbedError::Invalid(format!(
            "config.json: {what}; import a BERT-shaped model"
        )))
    };
    if c.hidden_size == 0 || c.num_attention_heads == 0 || c.num_hidden_layers == 0 {
        return bad(format!(
            "hidden_size {}, num_attention_heads {}, num_hidden_layers {} must all be positive",
            c.hidden_size, c.num_attention_heads, c.num_hidden_layers
        ));
    }
    if !c.hidden_size.is_multiple_of(c.num_attention_heads) {
        return bad(format!(
            "hidden_size {} is not a multiple of num_attention_heads {}",
            c.hidden_size, c.num_attention_heads
        ));
    }
    if c.vocab_size == 0 || c.intermediate_size == 0 || c.max_position_embeddings == 0 {
        return bad(
            "vocab_size, intermediate_size and max_position_embeddings must be positive".into(),
        );
    }
    if c.num_hidden_layers > 256 || c.hidden_size > 65_536 {
        return bad(format!(
            "{} layers of {} dims is not a sentence embedder pond can serve",
            c.num_hidden_layers, c.hidden_size
        ));
    }
    Ok(())
}
