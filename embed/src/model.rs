//! The embedder: tokenizer, the int8 encoder over the asset, mean pooling, L2 norm.

use std::path::Path;

use tokenizers::{Tokenizer, TruncationParams};

use crate::asset::{Manifest, ASSET_DTYPE, LEGACY_DTYPE};
use crate::encoder::{BertConfig, Encoder};
use crate::{EmbedError, Result};

/// Which prefix a text gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    Query,
    Passage,
}

/// A loaded model: the tokenizer and the encoder (int8 linear layers
/// packed in memory, the f16 word table read from the mapped asset). Dropping the embedder,
/// or the process exiting, frees the weights.
pub struct Embedder {
    manifest: Manifest,
    tokenizer: Tokenizer,
    encoder: Encoder,
}

/// Tokens in one forward pass at most (a longer single text still goes alone). Texts are
/// not padded, so this bounds the batch's buffers (about 15 KiB a token at E5-small's shape)
/// and nothing is spent on padding.
pub const MAX_BATCH_TOKENS: usize = 2048;

impl Embedder {
    /// Load the asset at `dir`: int8 encoder layers as `pond model import` writes them, or
    /// an asset imported before them (f16), whose layers are quantized as they load.
    pub fn load(dir: &Path) -> Result<Embedder> {
        let manifest = Manifest::read(dir)?;
        if manifest.dtype != ASSET_DTYPE && manifest.dtype != LEGACY_DTYPE {
            return Err(EmbedError::Invalid(format!(
                "the model asset at {} is {}, not {ASSET_DTYPE}; import it again with `pond model import`",
                dir.display(),
                manifest.dtype
            )));
        }
        let config = BertConfig::read(dir)?;
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: manifest.max_tokens.min(config.max_position_embeddings),
                ..Default::default()
            }))
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        // Texts are not padded: each runs over its own tokens.
        tokenizer.with_padding(None);
        let encoder = Encoder::load(&dir.join("model.safetensors"), &config)?;
        Ok(Embedder {
            manifest,
            tokenizer,
            encoder,
        })
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Unit vectors for `texts`. Texts go through the model in groups of at most
    /// [`MAX_BATCH_TOKENS`] tokens.
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
        let ids: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();
        let mut out = Vec::with_capacity(texts.len());
        let mut start = 0;
        while start < ids.len() {
            let (mut end, mut tokens) = (start, 0);
            while end < ids.len() && (end == start || tokens + ids[end].len() <= MAX_BATCH_TOKENS) {
                tokens += ids[end].len();
                end += 1;
            }
            out.extend(self.encoder.embed(&ids[start..end]));
            start = end;
        }
        Ok(out)
    }

    /// Tokens of `text` as a passage (with the prefix, truncated as embedding would).
    pub fn passage_tokens(&self, text: &str) -> Result<usize> {
        let input = format!("{}{text}", self.manifest.passage_prefix);
        Ok(self
            .tokenizer
            .encode(input, true)
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?
            .len())
    }
}
