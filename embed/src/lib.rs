//! Sentence embeddings from a BERT-shaped model kept as an f16 safetensors asset.
//!
//! What it is for: [`import`] converts a Hugging Face style folder (`config.json`,
//! `tokenizer.json`, `model.safetensors` in f32, f16 or bf16) into pond's model asset, tensor
//! by tensor, so the conversion never holds more than one tensor; [`Embedder`] maps the f16
//! asset and embeds texts (prefix, tokenize with truncation, encoder, mean pooling over the
//! attention mask, L2 norm). [`random_bert`] writes random-weight models of any BERT shape for
//! tests and benchmarks.
//!
//! What it is not: a process. The embed worker (`pond-workers`) owns an [`Embedder`] and
//! exits when idle, which is how the model is unloaded.

mod asset;
pub mod fetch;
mod model;
pub mod random_bert;
#[cfg(test)]
mod tests;

pub use asset::{import, Manifest, ASSET_DTYPE};
pub use model::{Embedder, TextKind, MAX_BATCH_TOKENS};

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("{0}")]
    Invalid(String),
    #[error("model: {0}")]
    Model(#[from] candle_core::Error),
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    #[error("safetensors: {0}")]
    Safetensors(#[from] safetensors::SafeTensorError),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
}

pub type Result<T> = std::result::Result<T, EmbedError>;
