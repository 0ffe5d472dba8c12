//! A file's path as a key: the text the store keeps it under (records, cursors, messages).
//!
//! Paths are bytes on Unix. A path that is valid UTF-8 is its own key; any other is keyed
//! `bytes:` and the hex of its bytes, so two names that differ only in bytes that are not
//! UTF-8 stay two files (a lossy conversion made them one). Keys of canonical paths start
//! with `/`, so the two forms never meet.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

const BYTES: &str = "bytes:";

/// The key of `s` (a path or one of its components).
pub fn os_key(s: &OsStr) -> String {
    match s.to_str() {
        Some(t) => t.to_owned(),
        None => {
            let mut k = String::from(BYTES);
            crate::common::push_hex(&mut k, s.as_bytes());
            k
        }
    }
}

pub fn path_key(p: &Path) -> String {
    os_key(p.as_os_str())
}

/// The path a key names.
pub fn key_path(k: &str) -> PathBuf {
    let bytes = k.strip_prefix(BYTES).and_then(|hex| {
        (hex.len() % 2 == 0)
            .then(|| {
                (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
                    .collect::<Option<Vec<u8>>>()
            })
            .flatten()
    });
    match bytes {
        Some(b) => PathBuf::from(OsString::from_vec(b)),
        None => PathBuf::from(k),
    }
}

/// The path of a `file://` URI, percent-decoded (`None`: another scheme, or not UTF-8).
pub(crate) fn file_uri_path(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    // `file://host/path`: the path starts at the first `/`.
    let path = &rest[rest.find('/')?..];
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h)? * 16 + hex(l)?) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok().filter(|p| !p.is_empty())
}

/// The folder a VS Code window (or a fork's: Cursor) was opened on, from its workspace
/// storage folder's `workspace.json`: `folder`, or for a multi-root workspace the folder of
/// its `.code-workspace` file.
pub(crate) fn workspace_folder(dir: &Path) -> Option<String> {
    let text =
        crate::side::read_side_file(&dir.join("workspace.json"), crate::side::SIDE_FILE_BYTES)?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    if let Some(f) = v.get("folder").and_then(serde_json::Value::as_str) {
        return file_uri_path(f);
    }
    // A multi-root workspace: the folder of its `.code-workspace` file.
    let file = file_uri_path(v.get("workspace")?.as_str()?)?;
    Path::new(&file)
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_differ_in_bytes_that_are_not_utf8_are_two_keys() {
        let a = PathBuf::from(OsString::from_vec(b"/x/s\xff.jsonl".to_vec()));
        let b = PathBuf::from(OsString::from_vec(b"/x/s\xfe.jsonl".to_vec()));
        assert_ne!(path_key(&a), path_key(&b));
        for p in [a, b, PathBuf::from("/x/plain é.jsonl")] {
            assert_eq!(key_path(&path_key(&p)), p);
        }
        assert_eq!(path_key(Path::new("/x/y")), "/x/y");
    }

    #[test]
    fn file_uris_are_paths() {
        assert_eq!(
            file_uri_path("file:///home/a/my%20proj").as_deref(),
            Some("/home/a/my proj")
        );
        assert_eq!(
            file_uri_path("file://host/srv/x").as_deref(),
            Some("/srv/x")
        );
        assert_eq!(file_uri_path("vscode-remote://ssh/x"), None);
        assert_eq!(file_uri_path("file:///bad%zz").as_deref(), Some("/bad%zz"));
    }
}
