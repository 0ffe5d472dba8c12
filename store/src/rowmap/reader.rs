//! The row map reader: a mapped file, checked at open, every read bounds-checked.

use super::*;

/// One dictionary inside the mapped file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DictView {
    pub(crate) count: u64,
    pub(crate) offsets_at: usize,
    pub(crate) bytes_at: usize,
    pub(crate) bytes_len: usize,
}

/// A row map opened for reading. It holds the file's bytes (memory-mapped by
/// [`RowMap::open`]); every accessor is bounds-checked.
pub struct RowMap {
    pub(crate) bytes: Bytes,
    // (fields below are read from `bytes` once, at open)
    pub(crate) header: Header,
    pub(crate) dicts: [DictView; 4],
}

impl std::fmt::Debug for RowMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowMap")
            .field("rows", &self.header.rows)
            .field("sessions", &self.header.sessions)
            .field("source_version", &self.header.source_version)
            .finish()
    }
}

/// Whether opening a map checks its body's checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Body {
    Hash,
    /// Checked before (by the caller, or by a sync for this very file: [`Checked`]).
    Trusted,
}

pub(crate) enum Bytes {
    Mapped(memmap2::Mmap),
    #[cfg(test)]
    Owned(Vec<u8>),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            #[cfg(test)]
            Bytes::Owned(v) => v,
        }
    }
}

/// One row as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowView<'a> {
    pub row_id: u64,
    pub timestamp: i64,
    /// Borrowed from the file, or formatted from its 16 bytes for a UUID.
    pub message_id: Cow<'a, str>,
    pub session_id: &'a str,
    pub project: Option<&'a str>,
    pub source_agent: &'a str,
    pub role: &'a str,
    pub searchable: bool,
    pub source_line: u64,
    pub origin: Origin,
    /// Another session's row owns this message id.
    pub replayed: bool,
}

/// Per session: how many rows, and the newest timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionEntry {
    pub code: u32,
    pub rows: u32,
    pub newest: i64,
}

impl RowMap {
    /// Map `path` read-only and validate it, its body's checksum included (every page is
    /// read once): what a front serves from.
    pub fn open(path: &Path) -> Result<RowMap> {
        RowMap::map(&File::open(path)?, Body::Hash)
    }

    /// Map an open map file read-only and validate it; `body`: whether its body's checksum
    /// is checked here (see [`Checked`] for a sync, which checks it once per file).
    pub(crate) fn map(file: &File, body: Body) -> Result<RowMap> {
        // SAFETY: the file is only ever replaced by rename, never written in place, so the
        // mapped bytes do not change under us.
        let map = unsafe { memmap2::Mmap::map(file)? };
        RowMap::from_bytes(Bytes::Mapped(map), body)
    }

    pub(crate) fn from_bytes(bytes: Bytes, body: Body) -> Result<RowMap> {
        let header = Header::decode(&bytes)?;
        let len = bytes.len() as u64;
        header.check_len(len)?;
        if body == Body::Hash {
            header.check_body(xxh3_64(&bytes[HEADER_LEN..]))?;
        }
        let fits = |off: u64, n: u64| off.checked_add(n).is_some_and(|end| end <= len);
        let sections = [
            (
                header.blocks_off,
                header.blocks.checked_mul(BLOCK_ENTRY_LEN as u64),
            ),
            (header.rows_off, header.rows.checked_mul(ROW_LEN as u64)),
            (header.ids_off, Some(header.ids_len)),
            (
                header.id_index_off,
                header.rows.checked_mul(ID_ENTRY_LEN as u64),
            ),
            (header.dicts_off, Some(header.dicts_len)),
            (
                header.sessions_off,
                header.sessions.checked_mul(SESSION_LEN as u64),
            ),
            (header.session_rows_off, header.rows.checked_mul(4)),
        ];
        for (off, n) in sections {
            if !n.is_some_and(|n| fits(off, n)) {
                return Err(corrupt("a section lies outside the file"));
            }
        }
        if header.blocks != header.rows.div_ceil(BLOCK_ROWS as u64) {
            return Err(corrupt("block count does not match the row count"));
        }
        let mut dicts = [DictView {
            count: 0,
            offsets_at: 0,
            bytes_at: 0,
            bytes_len: 0,
        }; 4];
        let mut at = header.dicts_off;
        let end = header.dicts_off + header.dicts_len;
        for d in &mut dicts {
            if !fits(at, 8) || at + 8 > end {
                return Err(corrupt("dictionaries cut short"));
            }
            let count = le_u64(&bytes, at as usize);
            let offsets = count
                .checked_add(1)
                .and_then(|c| c.checked_mul(8))
                .filter(|n| at.checked_add(8 + n).is_some_and(|e| e <= end))
                .ok_or_else(|| corrupt("dictionary offsets cut short"))?;
            let offsets_at = at + 8;
            let bytes_len = le_u64(&bytes, (offsets_at + offsets - 8) as usize);
            let bytes_at = offsets_at + offsets;
            if bytes_at.checked_add(bytes_len).is_none_or(|e| e > end) {
                return Err(corrupt("dictionary bytes cut short"));
            }
            *d = DictView {
                count,
                offsets_at: offsets_at as usize,
                bytes_at: bytes_at as usize,
                bytes_len: bytes_len as usize,
            };
            at = (bytes_at + bytes_len).next_multiple_of(8);
        }
        if dicts[SESSIONS_DICT].count != header.sessions {
            return Err(corrupt("session count does not match its dictionary"));
        }
        Ok(RowMap {
            bytes,
            header,
            dicts,
        })
    }

    pub fn rows(&self) -> usize {
        self.header.rows as usize
    }

    pub fn sessions(&self) -> usize {
        self.header.sessions as usize
    }

    /// The `messages` version the map was built from.
    pub fn source_version(&self) -> u64 {
        self.header.source_version
    }

    pub(crate) fn str_at(&self, off: u64, len: u64, what: &str) -> Result<&str> {
        let start = off as usize;
        let bytes = start
            .checked_add(len as usize)
            .and_then(|end| self.bytes.get(start..end))
            .ok_or_else(|| corrupt(format!("{what} out of bounds")))?;
        std::str::from_utf8(bytes).map_err(|_| corrupt(format!("{what} is not UTF-8")))
    }

    pub(crate) fn dict(&self, which: usize, code: u32) -> Result<&str> {
        let d = &self.dicts[which];
        if code as u64 >= d.count {
            return Err(corrupt("dictionary code out of range"));
        }
        let at = d.offsets_at + 8 * code as usize;
        let (a, b) = (le_u64(&self.bytes, at), le_u64(&self.bytes, at + 8));
        if a > b || b as usize > d.bytes_len {
            return Err(corrupt("dictionary offsets out of order"));
        }
        self.str_at(d.bytes_at as u64 + a, b - a, "dictionary entry")
    }

    pub(crate) fn header_of(&self, idx: usize) -> Result<RowHeader> {
        if idx >= self.rows() {
            return Err(corrupt(format!("row {idx} out of range")));
        }
        let at = self.header.rows_off as usize + idx * ROW_LEN;
        Ok(RowHeader::decode(&self.bytes[at..at + ROW_LEN]))
    }

    /// The row at position `idx` (0-based, in row-id order).
    pub fn row(&self, idx: usize) -> Result<RowView<'_>> {
        let h = self.header_of(idx)?;
        if h.id_off
            .checked_add(h.id_len as u64)
            .is_none_or(|e| e > self.header.ids_len)
        {
            return Err(corrupt("message id out of bounds"));
        }
        Ok(RowView {
            row_id: h.row_id,
            timestamp: h.timestamp,
            message_id: if h.flags & FLAG_UUID_ID != 0 {
                let at = (self.header.ids_off + h.id_off) as usize;
                let bytes = self
                    .bytes
                    .get(at..at + 16)
                    .filter(|_| h.id_len == 16)
                    .ok_or_else(|| corrupt("UUID message id out of bounds"))?;
                Cow::Owned(uuid_text(bytes))
            } else {
                Cow::Borrowed(self.str_at(
                    self.header.ids_off + h.id_off,
                    h.id_len as u64,
                    "message id",
                )?)
            },
            session_id: self.dict(SESSIONS_DICT, h.session)?,
            project: match h.project {
                NONE => None,
                p => Some(self.dict(PROJECTS_DICT, p)?),
            },
            source_agent: self.dict(AGENTS_DICT, h.agent as u32)?,
            role: self.dict(ROLES_DICT, h.role as u32)?,
            searchable: h.flags & FLAG_SEARCHABLE != 0,
            source_line: h.source_line,
            origin: Origin::ALL
                .get(((h.flags >> ORIGIN_SHIFT) & 3) as usize)
                .copied()
                .ok_or_else(|| corrupt("origin out of range"))?,
            replayed: h.flags & FLAG_REPLAYED != 0,
        })
    }

    /// The position of a Lance row id; `None` if the map does not have it (a newer row).
    pub fn position_of_row_id(&self, row_id: u64) -> Result<Option<usize>> {
        let (mut lo, mut hi) = (0usize, self.rows());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let at = self.header_of(mid)?.row_id;
            match at.cmp(&row_id) {
                std::cmp::Ordering::Equal => return Ok(Some(mid)),
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
            }
        }
        Ok(None)
    }

    /// The positions of every row of a message id (one per session that holds it).
    pub fn positions_of_message(&self, message_id: &str) -> Result<Vec<usize>> {
        let want = xxh3_64(message_id.as_bytes());
        let base = self.header.id_index_off as usize;
        let entry = |i: usize| {
            let at = base + i * ID_ENTRY_LEN;
            (
                le_u64(&self.bytes, at),
                le_u32(&self.bytes, at + 8) as usize,
            )
        };
        let n = self.rows();
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if entry(mid).0 < want {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let mut out = Vec::new();
        while lo < n && entry(lo).0 == want {
            let pos = entry(lo).1;
            if self.row(pos)?.message_id == message_id {
                out.push(pos);
            }
            lo += 1;
        }
        Ok(out)
    }

    /// The position of the row that owns a message id (the one that is not a replayed
    /// copy).
    pub fn position_of_message(&self, message_id: &str) -> Result<Option<usize>> {
        for pos in self.positions_of_message(message_id)? {
            if !self.row(pos)?.replayed {
                return Ok(Some(pos));
            }
        }
        Ok(None)
    }

    /// The search text of the row at `idx` (`None` if not searchable).
    pub fn text(&self, idx: usize) -> Result<Option<String>> {
        let h = self.header_of(idx)?;
        if h.flags & FLAG_SEARCHABLE == 0 {
            return Ok(None);
        }
        let block = idx / BLOCK_ROWS;
        let at = self.header.blocks_off as usize + block * BLOCK_ENTRY_LEN;
        let (off, clen, rlen) = (
            le_u64(&self.bytes, at),
            le_u32(&self.bytes, at + 8) as usize,
            le_u32(&self.bytes, at + 12) as usize,
        );
        let packed = (off as usize)
            .checked_add(clen)
            .and_then(|end| self.bytes.get(off as usize..end))
            .ok_or_else(|| corrupt("text block out of bounds"))?;
        if rlen > MAX_BLOCK_BYTES {
            return Err(corrupt("text block larger than any the writer makes"));
        }
        let raw = zstd::bulk::decompress(packed, rlen)
            .map_err(|e| corrupt(format!("text block does not decompress: {e}")))?;
        let offsets_len = 4 * (BLOCK_ROWS + 1);
        if raw.len() < offsets_len {
            return Err(corrupt("text block shorter than its offsets"));
        }
        let i = idx % BLOCK_ROWS;
        let (a, b) = (
            le_u32(&raw, 4 * i) as usize,
            le_u32(&raw, 4 * i + 4) as usize,
        );
        let text = raw
            .get(offsets_len + a..offsets_len + b)
            .filter(|_| a <= b)
            .ok_or_else(|| corrupt("text offsets out of bounds"))?;
        String::from_utf8(text.to_vec())
            .map(Some)
            .map_err(|_| corrupt("text is not UTF-8"))
    }

    /// A session's entry by id.
    pub fn session(&self, session_id: &str) -> Result<Option<SessionEntry>> {
        // Dictionary codes are in first-seen order, not sorted: scan the (small) dictionary.
        for code in 0..self.dicts[SESSIONS_DICT].count as u32 {
            if self.dict(SESSIONS_DICT, code)? == session_id {
                let at = self.header.sessions_off as usize + code as usize * SESSION_LEN;
                return Ok(Some(SessionEntry {
                    code,
                    rows: le_u32(&self.bytes, at + 8),
                    newest: le_u64(&self.bytes, at + 16) as i64,
                }));
            }
        }
        Ok(None)
    }

    /// The positions of a session's rows, in (timestamp, row id) order.
    pub fn session_rows(&self, entry: SessionEntry) -> Result<Vec<usize>> {
        let at = self.header.sessions_off as usize + entry.code as usize * SESSION_LEN;
        let start = le_u64(&self.bytes, at) as usize;
        let count = le_u32(&self.bytes, at + 8) as usize;
        if start.checked_add(count).is_none_or(|e| e > self.rows()) {
            return Err(corrupt("session rows out of bounds"));
        }
        let base = self.header.session_rows_off as usize;
        (start..start + count)
            .map(|i| {
                let pos = le_u32(&self.bytes, base + 4 * i) as usize;
                if pos < self.rows() {
                    Ok(pos)
                } else {
                    Err(corrupt("session row out of range"))
                }
            })
            .collect()
    }
}
