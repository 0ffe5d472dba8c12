//! The generation slot: the open map, swapped when a rebuild renames a new file in.

use super::*;

/// The identity of a file generation: a new map is a new inode (temp + rename).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileIdent {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) len: u64,
    pub(crate) mtime_ns: i128,
}

impl FileIdent {
    pub(crate) fn of(path: &Path) -> Option<FileIdent> {
        Some(FileIdent::of_meta(&std::fs::metadata(path).ok()?))
    }

    pub(crate) fn of_meta(m: &std::fs::Metadata) -> FileIdent {
        use std::os::unix::fs::MetadataExt;
        FileIdent {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
        }
    }
}

/// The open row map of a store, swapped for the new generation when the file is replaced.
/// A serving front asks it on every query: the cost is one `stat`.
#[derive(Default)]
pub struct MapSlot {
    /// The file generation last looked at, and the map opened from it (`None` if damaged).
    pub(crate) open: Mutex<Option<(FileIdent, Option<Arc<RowMap>>)>>,
}

impl MapSlot {
    /// The current map at `path`, opened again if the file changed since the last call;
    /// `None` when there is no map or it is damaged (logged once per generation).
    pub fn current(&self, path: &Path) -> Option<Arc<RowMap>> {
        let ident = FileIdent::of(path);
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let Some(ident) = ident else {
            *open = None;
            return None;
        };
        if let Some((seen, map)) = open.as_ref() {
            if *seen == ident {
                return map.clone();
            }
        }
        let map = match RowMap::open(path) {
            Ok(map) => Some(Arc::new(map)),
            Err(e) => {
                tracing::warn!(path = %path.display(), "row map not used: {e}");
                None
            }
        };
        *open = Some((ident, map.clone()));
        map
    }

    /// Stop using the open map (a read of it failed): readers take every row from Lance
    /// until the file is replaced.
    pub fn distrust(&self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, map)) = open.as_mut() {
            *map = None;
        }
    }
}
