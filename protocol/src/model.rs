//! The embedding model's job and its asset's manifest. `pond model import` and `pond model
//! fetch` are one job ([`Job::ImportModel`](crate::Job::ImportModel)), run by an index
//! worker: the import converts the weights tensor by tensor and the fetch downloads from the
//! hub, heavy work the front does not do. The front reads only [`Manifest`] (`pond model
//! show`), so it links no model code.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{ErrorKind, JobError};

/// Where a model comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// A download's progress: `bytes` of `file` so far, of `total` if the hub said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DownloadProgress {
    pub file: String,
    pub bytes: u64,
    pub total: Option<u64>,
}

/// What the embedder needs to know besides the weights: the asset's `manifest.json`, which
/// `pond model show` prints. A file's shape, never sent over IPC (so an absent field is left
/// out, as the file has always had it): the import job answers only that it finished, and
/// the front reads the manifest the job wrote.
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

    /// The manifest of the asset in `dir`: `Invalid` when there is none (the remedy is an
    /// import), `Internal` when it does not parse.
    pub fn read(dir: &Path) -> Result<Manifest, JobError> {
        let path = dir.join("manifest.json");
        let bytes = std::fs::read(&path).map_err(|e| {
            JobError::new(
                ErrorKind::Invalid,
                format!(
                    "no model asset at {} ({e}); import one with `pond model import DIR` or `pond model fetch`",
                    dir.display()
                ),
            )
        })?;
        serde_json::from_slice(&bytes)
            .map_err(|e| JobError::new(ErrorKind::Internal, format!("json: {e}")))
    }

    /// Write this manifest into the asset folder `dir`.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(dir.join("manifest.json"), json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        Manifest {
            name: "tiny".into(),
            dims: 4,
            max_tokens: 16,
            query_prefix: "query: ".into(),
            passage_prefix: "passage: ".into(),
            pooling: "mean".into(),
            dtype: "int8".into(),
            source_dtype: "f32".into(),
            parameters: 10,
            weights: Some("0123456789abcdef".into()),
            revision: None,
        }
    }

    /// A manifest written before weights were hashed or revisions recorded (the fields
    /// absent) still reads, and one read back is the one written.
    #[test]
    fn manifests_read_back_and_old_ones_read() {
        let dir = tempfile::tempdir().unwrap();
        let m = manifest();
        m.write(dir.path()).unwrap();
        assert_eq!(Manifest::read(dir.path()).unwrap(), m);
        let written = std::fs::read_to_string(dir.path().join("manifest.json")).unwrap();
        assert!(!written.contains("revision"), "{written}");
        let old = r#"{"name":"old","dims":4,"max_tokens":16,"query_prefix":"","passage_prefix":"",
            "pooling":"mean","dtype":"f16","source_dtype":"f32","parameters":10}"#;
        std::fs::write(dir.path().join("manifest.json"), old).unwrap();
        let read = Manifest::read(dir.path()).unwrap();
        assert_eq!(
            (read.weights.clone(), read.vector_key()),
            (None, "old".into())
        );
        let missing = Manifest::read(&dir.path().join("nothing")).unwrap_err();
        assert_eq!(missing.kind, ErrorKind::Invalid);
        assert!(missing.message.contains("pond model import"), "{missing}");
    }
}
