//! The reference the int8 encoder is measured against: candle's f32 BERT over a source
//! model folder, padded batches, mean pooling. Tests and benchmarks only; serving runs
//! [`crate::Embedder`].

use std::path::Path;

use candle_core::{DType, Device, Tensor, D};
use candle_nn::{Embedding, LayerNorm, Module, VarBuilder};
use candle_transformers::models::bert::{BertEncoder, Config};
use tokenizers::{Tokenizer, TruncationParams};

use crate::asset::Manifest;
use crate::{EmbedError, Result, TextKind};

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

/// The f32 model of a Hugging Face BERT folder.
pub struct Reference {
    manifest: Manifest,
    tokenizer: Tokenizer,
    embeddings: Embeddings,
    encoder: BertEncoder,
}

impl Reference {
    /// The model in `dir` (f32, f16 or bf16 weights, computed in f32), with the prefixes and
    /// token limit of `manifest`.
    pub fn open(dir: &Path, manifest: Manifest) -> Result<Reference> {
        let config: Config = serde_json::from_slice(&std::fs::read(dir.join("config.json"))?)?;
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: manifest.max_tokens,
                ..Default::default()
            }))
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        tokenizer.with_padding(Some(Default::default()));
        let weights = dir.join("model.safetensors");
        // SAFETY: read-only map of a model folder nobody writes while it loads.
        let vb = unsafe {
            VarBuilder::from_mmaped_safetensors(
                std::slice::from_ref(&weights),
                DType::F32,
                &Device::Cpu,
            )?
        };
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb
        };
        Ok(Reference {
            embeddings: Embeddings::load(vb.pp("embeddings"), vb.pp("embeddings"), &config)?,
            encoder: BertEncoder::load(vb.pp("encoder"), &config)?,
            tokenizer,
            manifest,
        })
    }

    /// Unit vectors for `texts`, eight at a time.
    pub fn embed(&self, texts: &[&str], kind: TextKind) -> Result<Vec<Vec<f32>>> {
        let prefix = match kind {
            TextKind::Query => &self.manifest.query_prefix,
            TextKind::Passage => &self.manifest.passage_prefix,
        };
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(8) {
            let inputs: Vec<String> = chunk.iter().map(|t| format!("{prefix}{t}")).collect();
            let encodings = self
                .tokenizer
                .encode_batch(inputs, true)
                .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
            let (n, len) = (encodings.len(), encodings[0].len());
            let ids: Vec<u32> = encodings
                .iter()
                .flat_map(|e| e.get_ids().to_vec())
                .collect();
            let mask: Vec<u32> = encodings
                .iter()
                .flat_map(|e| e.get_attention_mask().to_vec())
                .collect();
            let device = Device::Cpu;
            let ids = Tensor::from_vec(ids, (n, len), &device)?;
            let mask = Tensor::from_vec(mask, (n, len), &device)?.to_dtype(DType::F32)?;
            let additive = ((1.0 - &mask)? * -10_000.0)?.unsqueeze(1)?.unsqueeze(1)?;
            let hidden = self
                .encoder
                .forward(&self.embeddings.forward(&ids, DType::F32)?, &additive)?;
            let weights = mask.unsqueeze(2)?;
            let mean = hidden
                .broadcast_mul(&weights)?
                .sum(1)?
                .broadcast_div(&weights.sum(1)?.clamp(1.0, f64::MAX)?)?;
            let norm = mean
                .sqr()?
                .sum_keepdim(D::Minus1)?
                .sqrt()?
                .clamp(1e-12, f64::MAX)?;
            out.extend(mean.broadcast_div(&norm)?.to_vec2::<f32>()?);
        }
        Ok(out)
    }
}
