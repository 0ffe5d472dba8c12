//! The row map as a sync reads it: its header, and its body's checksum once per file.
//!
//! A front maps the whole map and checks its body's checksum whenever it opens a new file
//! ([`RowMap::open`]): it serves from every page. A sync asks less of it: the header says
//! whether the map fits `messages` and how far it lags, and the owners' lookups
//! (`crate::owners`) touch a few pages. Checking the body at every sync read every page (151
//! MiB at 1M messages, all of it resident in the sync worker) to learn nothing new. So a sync
//! checks a file's body once, reading it in chunks (not mapped: the pages do not count
//! against the worker), and notes that file (device, inode, length, mtime) beside the map; a
//! later sync that finds the same file reads its header alone. A build notes the file it
//! wrote. The map is only replaced by rename (a new inode), and a write in place changes its
//! mtime, so either is checked again; damage that changes neither (a bad sector) is still
//! caught by the front, which checks every file it opens and reports it in `pond status`.

use std::io::ErrorKind;
use std::os::unix::fs::FileExt;

use super::*;

/// Bytes of the body hashed at a time when a sync checks it.
const CHUNK: usize = 1 << 20;

/// The file beside the map that names the last map file whose body a sync checked.
pub(crate) fn note_path(map: &Path) -> PathBuf {
    let mut name = map.as_os_str().to_owned();
    name.push(".checked");
    PathBuf::from(name)
}

fn note_of(ident: &FileIdent) -> String {
    format!(
        "{} {} {} {}\n",
        ident.dev, ident.ino, ident.len, ident.mtime_ns
    )
}

/// Note the map at `path` as whole: it was just written and renamed into place.
pub(crate) fn note_whole(path: &Path) {
    if let Some(ident) = FileIdent::of(path) {
        remember(path, &note_of(&ident));
    }
}

fn remember(path: &Path, note: &str) {
    // A note not written only costs the next sync one more check.
    if let Err(e) = std::fs::write(note_path(path), note) {
        tracing::warn!("could not note the row map as checked: {e}");
    }
}

/// A map file open for a sync: its header read and its body checked, now or by an earlier
/// sync (see the module docs).
pub struct Checked {
    pub(crate) header: Header,
    file: File,
}

impl Checked {
    /// The map at `path`: `Ok(None)` when there is none, an error when it is damaged.
    pub fn open(path: &Path) -> Result<Option<Checked>> {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let meta = file.metadata()?;
        let mut head = [0u8; HEADER_LEN];
        file.read_exact_at(&mut head, 0)
            .map_err(|_| corrupt("shorter than its header"))?;
        let header = Header::decode(&head)?;
        header.check_len(meta.len())?;
        let note = note_of(&FileIdent::of_meta(&meta));
        if std::fs::read_to_string(note_path(path)).ok().as_deref() != Some(note.as_str()) {
            header.check_body(body_hash(&file, meta.len())?)?;
            remember(path, &note);
        }
        Ok(Some(Checked { header, file }))
    }

    /// Whether the map lags `ds` (`lags`); `None` when it does not describe `ds`.
    pub fn lags(&self, ds: &Dataset) -> Option<bool> {
        let (_, delta_rows) = delta_of(&self.header, ds)?;
        Some(lags_by(self.header.rows as usize, delta_rows))
    }

    /// The map itself, mapped; its body is not hashed again (every read is bounds-checked).
    pub fn map(self) -> Result<RowMap> {
        RowMap::map(&self.file, Body::Trusted)
    }
}

/// xxh3 of the bytes after the header, read a chunk at a time.
fn body_hash(file: &File, len: u64) -> Result<u64> {
    let mut hasher = Xxh3::new();
    let mut buf = vec![0u8; CHUNK];
    let mut at = HEADER_LEN as u64;
    while at < len {
        let n = (len - at).min(CHUNK as u64) as usize;
        file.read_exact_at(&mut buf[..n], at)
            .map_err(|e| corrupt(format!("unreadable: {e}")))?;
        hasher.update(&buf[..n]);
        at += n as u64;
    }
    Ok(hasher.digest())
}
