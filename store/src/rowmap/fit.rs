//! Whether a map describes a `messages` dataset: the fragments it covers, and the delta.

use super::*;

/// Which `messages` fragments a map was built from: the newest fragment's id, and how many
/// of their rows had been deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coverage {
    pub last_fragment_id: u64,
    pub deleted_rows: u64,
}

impl Coverage {
    /// Every fragment of `ds`.
    pub fn of(ds: &Dataset) -> Result<Coverage> {
        let mut c = Coverage {
            last_fragment_id: NO_FRAGMENT,
            deleted_rows: 0,
        };
        for f in ds.fragments().iter() {
            let (_, deleted) = fragment_rows(f)
                .ok_or_else(|| corrupt("a messages fragment does not record its row count"))?;
            if c.last_fragment_id == NO_FRAGMENT || f.id > c.last_fragment_id {
                c.last_fragment_id = f.id;
            }
            c.deleted_rows += deleted as u64;
        }
        Ok(c)
    }
}

/// A fragment's (live, deleted) rows, when Lance recorded them.
pub(crate) fn fragment_rows(f: &Fragment) -> Option<(usize, usize)> {
    let physical = f.physical_rows?;
    let deleted = match &f.deletion_file {
        Some(d) => d.num_deleted_rows?,
        None => 0,
    };
    Some((physical.checked_sub(deleted)?, deleted))
}

/// A row map checked against the `messages` dataset at hand. A sync only appends to
/// `messages`, except when it rewrites an owner as a replayed copy (a delete, and the row
/// appended again), so a map covers the fragments up to the one it names, as long as they
/// still hold exactly the rows it was built from (no row deleted since); the fragments
/// after it ([`Mapped::delta`]) hold the rows newer than the map, which readers take from
/// Lance.
#[derive(Debug, Clone)]
pub struct Mapped {
    pub map: Arc<RowMap>,
    /// Fragments of `messages` written after the map was built.
    pub delta: Vec<Fragment>,
    pub delta_rows: usize,
}

impl Mapped {
    /// `None` when `map` does not describe `ds`'s fragments up to the one it names: built
    /// from a later version or from another store, or rows were deleted since.
    pub fn check(map: Arc<RowMap>, ds: &Dataset) -> Option<Mapped> {
        let (delta, delta_rows) = delta_of(&map.header, ds)?;
        Some(Mapped {
            map,
            delta,
            delta_rows,
        })
    }

    /// The map's position of a row id, `None` for a row newer than the map.
    pub fn position(&self, row_id: u64) -> Result<Option<usize>> {
        self.map.position_of_row_id(row_id)
    }
}

/// The fragments of `ds` newer than the map with `header`, and their live rows; `None` when
/// the map does not describe `ds`'s fragments up to the one it names (see [`Mapped`]).
pub(crate) fn delta_of(header: &Header, ds: &Dataset) -> Option<(Vec<Fragment>, usize)> {
    if header.source_version > ds.version().version {
        return None;
    }
    // New fragments always take ids above every earlier one (a compacted fragment too,
    // wherever Lance places it), so the map covers the ids up to the one it names.
    let last = header.last_fragment_id;
    let covered = |f: &Fragment| last != NO_FRAGMENT && f.id <= last;
    let (mut live, mut deleted) = (0u64, 0u64);
    let mut delta = Vec::new();
    let mut delta_rows = 0;
    for f in ds.fragments().iter() {
        let (l, d) = fragment_rows(f)?;
        if covered(f) {
            live += l as u64;
            deleted += d as u64;
        } else {
            delta_rows += l;
            delta.push(f.clone());
        }
    }
    if live != header.rows || deleted != header.deleted_rows {
        return None;
    }
    Some((delta, delta_rows))
}
