//! The embedder: a BERT encoder over the f16 asset, mean pooling, L2 norm.

use std::path::Path;

use candle_core::{DType, Device, Tensor, D};
use candle_nn::{Embedding, LayerNorm, Module, VarBuilder};
use candle_transformers::models::bert::{BertEncoder, Config};
use tokenizers::{Encoding, Tokenizer, TruncationParams};

use crate::asset::{check_config, Manifest, ASSET_DTYPE};
use crate::{EmbedError, Result};

/// Which prefix a text gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    Query,
    Passage,
}

/// Token, position and token-type embeddings, then layer norm (BERT's input layer).
struct Embeddings {
    word: Embedding,
    position: Embedding,
    token_type: Embedding,
    norm: LayerNorm,
}

impl Embeddings {
    /// The lookup tables from `tables` (kept in the asset's f16: the word table is most of
    /// the model), the layer norm from `norm`.
    fn load(tables: VarBuilder, norm: VarBuilder, c: &Config) -> Result<Embeddings> {
        let vb = tables;
        Ok(Embeddings {
            word: candle_nn::embedding(c.vocab_size, c.hidden_size, vb.pp("word_embeddings"))?,
            position: candle_nn::embedding(
                c.max_position_embeddings,
                c.hidden_size,
                vb.pp("position_embeddings"),
            )?,
            token_type: candle_nn::embedding(
                c.type_vocab_size,
                c.hidden_size,
                vb.pp("token_type_embeddings"),
            )?,
            norm: candle_nn::layer_norm(c.hidden_size, c.layer_norm_eps, norm.pp("LayerNorm"))?,
        })
    }

    /// Embedded tokens in `dtype` (the encoder's).
    fn forward(&self, ids: &Tensor, dtype: DType) -> Result<Tensor> {
        let (_, len) = ids.dims2()?;
        let positions = Tensor::arange(0u32, len as u32, ids.device())?.unsqueeze(0)?;
        let x = self
            .word
            .forward(ids)?
            .to_dtype(dtype)?
            .broadcast_add(&self.position.forward(&positions)?.to_dtype(dtype)?)?
            .broadcast_add(
                &self
                    .token_type
                    .forward(&ids.zeros_like()?)?
                    .to_dtype(dtype)?,
            )?;
        Ok(self.norm.forward(&x)?)
    }
}

/// A loaded model. The embedding tables (for E5-small 83 % of the parameters) stay in the
/// asset's f16; the encoder layers (17 %) are widened to f32 at load, because this CPU has
/// no f16 arithmetic: at E5-small's shape a query took 102 ms p50 with f16 products and 33 ms
/// with f32 ones, for 43 MB more (measured by embed_bench). The mapping is dropped after
/// loading; dropping the embedder, or the process exiting, frees the weights.
pub struct Embedder {
    manifest: Manifest,
    tokenizer: Tokenizer,
    embeddings: Embeddings,
    encoder: BertEncoder,
    /// The encoder's compute type.
    dtype: DType,
    /// The token a batch is padded with (the tokenizer pads nothing itself).
    pad_id: u32,
}

/// Padded tokens in one forward pass at most (a longer single text still goes alone): with
/// 512-token texts, 4 at a time (docs/benchmarks.md: 2,048 against 4,096).
pub const MAX_BATCH_TOKENS: usize = 2048;

impl Embedder {
    /// Load the asset at `dir`. Only an f16 asset is served: no f32 copy of a model ever
    /// exists in the process that embeds.
    pub fn load(dir: &Path) -> Result<Embedder> {
        let manifest = Manifest::read(dir)?;
        if manifest.dtype != ASSET_DTYPE {
            return Err(EmbedError::Invalid(format!(
                "the model asset at {} is {}, not f16; import it again with `pond model import`",
                dir.display(),
                manifest.dtype
            )));
        }
        let weights = dir.join("model.safetensors");
        let file = std::fs::File::open(&weights)?;
        // SAFETY: read-only map of the asset, which is only ever replaced by rename.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        let (_, meta) = safetensors::SafeTensors::read_metadata(&map)?;
        if let Some((name, info)) = meta
            .tensors()
            .into_iter()
            .find(|(_, t)| t.dtype != safetensors::Dtype::F16)
        {
            return Err(EmbedError::Invalid(format!(
                "tensor {name} of the model asset is {:?}, not F16; import the model again with `pond model import`",
                info.dtype
            )));
        }
        drop(map);
        Self::open(dir, manifest, DType::F16)
    }

    /// Load any BERT folder in `dtype`, with a manifest given by the caller: the reference
    /// the tests compare the f16 asset against. Serving uses [`Embedder::load`].
    #[doc(hidden)]
    pub fn open(dir: &Path, manifest: Manifest, dtype: DType) -> Result<Embedder> {
        let config: Config = serde_json::from_slice(&std::fs::read(dir.join("config.json"))?)?;
        check_config(&config)?;
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: manifest.max_tokens,
                ..Default::default()
            }))
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        // Batches are padded per forward pass (`forward`), not by the tokenizer: grouping
        // texts by length needs each one's own length.
        let pad_id = match tokenizer.get_padding() {
            Some(p) => p.pad_id,
            None => ["[PAD]", "<pad>"]
                .iter()
                .find_map(|t| tokenizer.token_to_id(t))
                .unwrap_or(0),
        };
        tokenizer.with_padding(None);
        let weights = dir.join("model.safetensors");
        // SAFETY: as above; candle copies each tensor out of the map as it loads it, and the
        // maps are dropped with the builders at the end of this function.
        let open = |dtype| -> Result<VarBuilder> {
            let vb = unsafe {
                VarBuilder::from_mmaped_safetensors(
                    std::slice::from_ref(&weights),
                    dtype,
                    &Device::Cpu,
                )?
            };
            Ok(
                if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
                    vb.pp("bert")
                } else {
                    vb
                },
            )
        };
        let (tables, compute) = (open(dtype)?, open(DType::F32)?);
        Ok(Embedder {
            embeddings: Embeddings::load(
                tables.pp("embeddings"),
                compute.pp("embeddings"),
                &config,
            )?,
            encoder: BertEncoder::load(compute.pp("encoder"), &config)?,
            tokenizer,
            manifest,
            dtype: DType::F32,
            pad_id,
        })
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Unit vectors for `texts`. Texts go through the model in groups of at most
    /// [`MAX_BATCH_TOKENS`] padded tokens, so a batch of long texts costs no more memory than
    /// a few (attention holds batch x heads x length^2 scores per layer); callers sort texts
    /// by length so little goes to padding.
    pub fn embed(&self, texts: &[&str], kind: TextKind) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let prefix = match kind {
            TextKind::Query => &self.manifest.query_prefix,
            TextKind::Passage => &self.manifest.passage_prefix,
        };
        let inputs: Vec<String> = texts.iter().map(|t| format!("{prefix}{t}")).collect();
        let encodings = self
            .tokenizer
            .encode_batch(inputs, true)
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        let mut out = Vec::with_capacity(texts.len());
        let mut start = 0;
        while start < encodings.len() {
            // The longest run of the rest whose padded size fits (always at least one text).
            let (mut end, mut longest) = (start, 0);
            while end < encodings.len() {
                let l = longest.max(encodings[end].len().max(1));
                if end > start && l * (end - start + 1) > MAX_BATCH_TOKENS {
                    break;
                }
                longest = l;
                end += 1;
            }
            out.extend(self.forward(&encodings[start..end])?);
            start = end;
        }
        Ok(out)
    }

    /// One batch through the model, padded to its longest text: mean-pooled unit vectors.
    fn forward(&self, encodings: &[Encoding]) -> Result<Vec<Vec<f32>>> {
        let len = encodings.iter().map(|e| e.len()).max().unwrap_or(0).max(1);
        let (mut ids, mut mask) = (Vec::new(), Vec::new());
        for e in encodings {
            let pad = len - e.len();
            ids.extend(
                e.get_ids()
                    .iter()
                    .copied()
                    .chain(std::iter::repeat_n(self.pad_id, pad)),
            );
            mask.extend(
                e.get_attention_mask()
                    .iter()
                    .copied()
                    .chain(std::iter::repeat_n(0, pad)),
            );
        }
        let device = Device::Cpu;
        let n = encodings.len();
        let ids = Tensor::from_vec(ids, (n, len), &device)?;
        let mask = Tensor::from_vec(mask, (n, len), &device)?.to_dtype(DType::F32)?;
        // BERT's additive mask: 0 where attended, -10,000 where padded (also representable in
        // f16, unlike the f32 minimum, which overflows to -inf there and turns 0 x -inf into
        // NaN: candle's own BertModel does that).
        let additive = ((1.0 - &mask)? * -10_000.0)?
            .to_dtype(self.dtype)?
            .unsqueeze(1)?
            .unsqueeze(1)?;
        let hidden = self
            .encoder
            .forward(&self.embeddings.forward(&ids, self.dtype)?, &additive)?
            .to_dtype(DType::F32)?;
        let weights = mask.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&weights)?.sum(1)?;
        let counts = weights.sum(1)?.clamp(1.0, f64::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norm = mean
            .sqr()?
            .sum_keepdim(D::Minus1)?
            .sqrt()?
            .clamp(1e-12, f64::MAX)?;
        Ok(mean.broadcast_div(&norm)?.to_vec2::<f32>()?)
    }
}
