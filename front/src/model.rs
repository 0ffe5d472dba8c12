//! The model operations: show the store's embedding model, import one from a folder, fetch
//! one from the hub. They run in the calling process: an import streams the weights to the
//! asset (int8 encoder layers, f16 tables; bounded memory), and none of them touches Lance but the vector counts.

use std::path::{Path, PathBuf};

use pond_embed::{EmbedError, Manifest};
use pond_protocol::ErrorKind;
use pond_store::vectors;

use crate::ops::{Error, Front};

/// The store's model and the vectors the store holds, by model.
#[derive(Debug, Clone)]
pub struct ModelInfo {
    pub manifest: Manifest,
    pub vectors: Vec<(String, usize)>,
}

/// Where a model comes from.
#[derive(Debug, Clone)]
pub enum ModelSource {
    /// A local folder (config.json, tokenizer.json, model.safetensors); `name` defaults to
    /// the folder's, `prefixes` (query, passage) to the E5 convention by name.
    Folder {
        dir: PathBuf,
        name: Option<String>,
        prefixes: Option<(String, String)>,
    },
    /// A hub repository at a revision (None: pinned for the default model, else main).
    Hub {
        repo: String,
        revision: Option<String>,
    },
}

fn embed_error(e: EmbedError) -> Error {
    let kind = match e {
        // A folder that is not a model, a missing asset: the caller named the wrong thing
        // or has not imported one.
        EmbedError::Invalid(_) => ErrorKind::Invalid,
        _ => ErrorKind::Internal,
    };
    Error::new(kind, e.to_string())
}

impl Front {
    /// The store's model directory.
    pub fn model_dir(&self) -> PathBuf {
        self.store().model_dir()
    }

    pub async fn model_show(&self) -> Result<ModelInfo, Error> {
        let manifest = Manifest::read(&self.model_dir()).map_err(embed_error)?;
        let vectors = vectors::counts(self.store()).await?;
        Ok(ModelInfo { manifest, vectors })
    }

    /// Import a model as the store's asset; `progress(file, bytes, total)` follows a
    /// download.
    pub async fn model_import(
        &self,
        source: ModelSource,
        progress: &mut (dyn FnMut(&str, u64, Option<u64>) + Send),
    ) -> Result<Manifest, Error> {
        let dst = self.model_dir();
        match source {
            ModelSource::Folder {
                dir,
                name,
                prefixes,
            } => {
                let name = name.unwrap_or_else(|| folder_name(&dir));
                pond_embed::import(&dir, &dst, &name, prefixes).map_err(embed_error)
            }
            ModelSource::Hub { repo, revision } => {
                let download = self.store().root().join("model.download");
                let revision = revision
                    .unwrap_or_else(|| pond_embed::fetch::default_revision(&repo).to_owned());
                let fetched =
                    pond_embed::fetch::download(&repo, &revision, &download, progress).await;
                let imported = fetched.and_then(|f| {
                    pond_embed::import(&download, &dst, &repo, None)?;
                    Manifest::set_revision(&dst, &f.revision)
                });
                let _ = std::fs::remove_dir_all(&download);
                imported.map_err(embed_error)
            }
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
