//! `pond model fetch`: download a model folder from the Hugging Face hub, then import it.
//!
//! What is fetched is pinned: the default model at a fixed commit (a branch could change
//! under it), any other at the revision asked for; the hub's commit is recorded. Files the
//! hub keeps in LFS (the weights) are checked against the sha256 it names for them
//! (`X-Linked-Etag`); only https is spoken, but to a hub on this machine (tests, mirrors).

use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::{EmbedError, Result};

/// pond's default model.
pub const DEFAULT_MODEL: &str = "intfloat/multilingual-e5-small";
/// The commit of [`DEFAULT_MODEL`] fetched unless another revision is asked for.
pub const DEFAULT_REVISION: &str = "614241f622f53c4eeff9890bdc4f31cfecc418b3";
const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// The revision to fetch `repo` at when none is given.
pub fn default_revision(repo: &str) -> &'static str {
    if repo == DEFAULT_MODEL {
        DEFAULT_REVISION
    } else {
        "main"
    }
}

/// What a download fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The commit the hub served (`X-Repo-Commit`), else the revision asked for.
    pub revision: String,
}

/// The hub's base URL: `POND_HF_ENDPOINT` or huggingface.co; plain http only to loopback.
fn endpoint() -> Result<String> {
    let base =
        std::env::var("POND_HF_ENDPOINT").unwrap_or_else(|_| "https://huggingface.co".into());
    let url = reqwest::Url::parse(&base)
        .map_err(|e| EmbedError::Invalid(format!("POND_HF_ENDPOINT {base:?} is not a URL: {e}")))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match url.scheme() {
        "https" => Ok(base.trim_end_matches('/').to_owned()),
        "http" if loopback => Ok(base.trim_end_matches('/').to_owned()),
        other => Err(EmbedError::Invalid(format!(
            "refusing to fetch model weights over {other}:// from {base}: use https (plain http only to this machine)"
        ))),
    }
}

/// Download `repo`'s `config.json`, `tokenizer.json` and `model.safetensors` at `revision`
/// (streamed to disk, never held in memory) into `dir`, calling `progress(file, bytes so
/// far, total)`.
pub async fn download(
    repo: &str,
    revision: &str,
    dir: &Path,
    progress: &mut (dyn FnMut(&str, u64, Option<u64>) + Send),
) -> Result<Fetched> {
    let base = endpoint()?;
    let client = reqwest::Client::builder()
        .user_agent(concat!("pond/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| EmbedError::Invalid(format!("http client: {e}")))?;
    std::fs::create_dir_all(dir)?;
    let mut fetched = Fetched {
        revision: revision.to_owned(),
    };
    for file in FILES {
        let url = format!("{base}/{repo}/resolve/{revision}/{file}");
        let mut resp = client
            .get(&url)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| {
                EmbedError::Invalid(format!(
                    "cannot download {url}: {e} (without internet here, download the folder elsewhere and run `pond model import DIR`)"
                ))
            })?;
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(|v| v.trim_matches('"').to_owned())
        };
        if let Some(commit) = header("x-repo-commit") {
            fetched.revision = commit;
        }
        let expected = header("x-linked-etag").filter(|e| e.len() == 64);
        let total = resp.content_length();
        let path = dir.join(file);
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
        let mut sha = Sha256::new();
        let mut got = 0u64;
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| EmbedError::Invalid(format!("download of {url} broke off: {e}")))?
        {
            out.write_all(&chunk)?;
            sha.update(&chunk);
            got += chunk.len() as u64;
            progress(file, got, total);
        }
        out.flush()?;
        if total.is_some_and(|t| t != got) {
            return Err(EmbedError::Invalid(format!(
                "download of {url} ended at {got} of {} bytes",
                total.unwrap_or_default()
            )));
        }
        let actual: String = sha.finalize().iter().map(|b| format!("{b:02x}")).collect();
        if let Some(expected) = expected {
            if actual != expected {
                let _ = std::fs::remove_file(&path);
                return Err(EmbedError::Invalid(format!(
                    "{file} from {url} has sha256 {actual}, the hub names {expected}: not imported"
                )));
            }
        }
    }
    Ok(fetched)
}
