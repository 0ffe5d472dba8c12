//! The model operations: show the store's embedding model, import one from a folder, fetch
//! one from the hub. Show reads the asset's manifest here; an import (the weights converted
//! tensor by tensor) and a fetch (the hub download, then the import) are a job of an index
//! worker, so this crate links no model code.

use std::path::PathBuf;

pub use pond_protocol::model::{Manifest, ModelSource};
use pond_store::vectors;

use crate::ops::{Error, Front, ProgressSink};
use crate::pool::JobOptions;

/// The store's model and the vectors the store holds, by model.
#[derive(Debug, Clone)]
pub struct ModelInfo {
    pub manifest: Manifest,
    pub vectors: Vec<(String, usize)>,
}

impl Front {
    /// The store's model directory.
    pub fn model_dir(&self) -> PathBuf {
        self.store().model_dir()
    }

    pub async fn model_show(&self) -> Result<ModelInfo, Error> {
        let manifest = Manifest::read(&self.model_dir())?;
        let vectors = vectors::counts(self.store()).await?;
        Ok(ModelInfo { manifest, vectors })
    }

    /// Import a model as the store's asset, in an index worker; a download's progress goes
    /// to `progress` (`Progress::Download`). The manifest is the one the job wrote.
    pub async fn model_import(
        &self,
        source: ModelSource,
        progress: ProgressSink,
    ) -> Result<Manifest, Error> {
        // The worker's directory need not be the caller's.
        let source = match source {
            ModelSource::Folder {
                dir,
                name,
                prefixes,
            } => ModelSource::Folder {
                dir: std::path::absolute(&dir).unwrap_or(dir),
                name,
                prefixes,
            },
            hub => hub,
        };
        let opts = JobOptions {
            progress,
            ..JobOptions::default()
        };
        self.runner().call(source, opts).await?;
        Manifest::read(&self.model_dir())
    }
}

#[cfg(test)]
mod tests {
    /// The front links no model code (candle, tokenizers, the HTTP client): the model's
    /// jobs run in a worker and the manifest is the protocol's.
    #[test]
    fn the_front_does_not_depend_on_the_model_crate() {
        let manifest = include_str!("../Cargo.toml");
        let deps = manifest
            .split("\n[")
            .find(|table| table.starts_with("[dependencies]") || table.starts_with("dependencies]"))
            .expect("a [dependencies] table");
        assert!(
            !deps
                .lines()
                .any(|l| l.trim_start().starts_with("pond-embed")),
            "pond-front depends on pond-embed:\n{deps}"
        );
    }
}
