//! `pond model fetch`: download a model folder from the Hugging Face hub, then import it.

use std::io::Write;
use std::path::Path;

use crate::{EmbedError, Result};

/// pond's default model.
pub const DEFAULT_MODEL: &str = "intfloat/multilingual-e5-small";
const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// Download `repo`'s `config.json`, `tokenizer.json` and `model.safetensors` (streamed to
/// disk, never held in memory) into `dir`, calling `progress(file, bytes so far, total)`.
pub async fn download(
    repo: &str,
    dir: &Path,
    progress: &mut (dyn FnMut(&str, u64, Option<u64>) + Send),
) -> Result<()> {
    let base =
        std::env::var("POND_HF_ENDPOINT").unwrap_or_else(|_| "https://huggingface.co".into());
    let client = reqwest::Client::builder()
        .user_agent(concat!("pond/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| EmbedError::Invalid(format!("http client: {e}")))?;
    std::fs::create_dir_all(dir)?;
    for file in FILES {
        let url = format!("{base}/{repo}/resolve/main/{file}");
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
        let total = resp.content_length();
        let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join(file))?);
        let mut got = 0u64;
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| EmbedError::Invalid(format!("download of {url} broke off: {e}")))?
        {
            out.write_all(&chunk)?;
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
    }
    Ok(())
}
