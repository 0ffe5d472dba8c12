//! Sentence embeddings from a BERT-shaped model kept as an f16 safetensors asset.
//!
//! What it is for: [`import`] converts a Hugging Face style folder (`config.json`,
//! `tokenizer.json`, `model.safetensors` in f32, f16 or bf16) into pond's model asset, tensor
//! by tensor (the encoder layers' linear weights quantized to int8 per output, the rest f16),
//! so the conversion never holds more than one tensor; [`Embedder`] maps the asset and embeds
//! texts (prefix, tokenize with truncation, the int8 encoder over unpadded batches, mean
//! pooling, L2 norm). [`reference::Reference`] is candle's f32 BERT, which tests and benches
//! measure the embedder against. [`random_bert`] writes random-weight models of any BERT
//! shape for tests and benchmarks.
//!
//! [`import_from`] is the import job (`pond model import` and `pond model fetch`): a folder,
//! or a download from the hub ([`fetch`]), made the store's asset. The asset's [`Manifest`]
//! is `pond-protocol`'s, so the front reads it without linking this crate.
//!
//! What it is not: a process. The embed worker (`pond-workers`) owns an [`Embedder`] and
//! exits when idle, which is how the model is unloaded.

mod asset;
mod cpu;
mod encoder;
mod f32k;
pub mod fetch;
pub mod int8;
mod model;
pub mod random_bert;
#[doc(hidden)]
pub mod reference;
#[cfg(test)]
mod tests;

pub use asset::{import, import_from, Manifest, ASSET_DTYPE, LEGACY_DTYPE};
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
    /// The asset's manifest is unreadable (`Manifest::read`'s error, kind kept).
    #[error("{0}")]
    Manifest(pond_protocol::JobError),
}

impl From<pond_protocol::JobError> for EmbedError {
    fn from(e: pond_protocol::JobError) -> EmbedError {
        match e.kind {
            pond_protocol::ErrorKind::Invalid => EmbedError::Invalid(e.message),
            _ => EmbedError::Manifest(e),
        }
    }
}

pub type Result<T> = std::result::Result<T, EmbedError>;
