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
            for b in s.as_bytes() {
                k.push_str(&format!("{b:02x}"));
            }
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
}
