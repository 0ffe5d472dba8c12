//! The row map (`.rmm`): per-row metadata of `messages`, keyed by Lance row id, in one file
//! the front maps read-only, so it can filter, rank and render hits without reading Lance data
//! pages.
//!
//! Layout (little-endian; every section 8-byte aligned; offsets are from the file start):
//!
//! | section | content |
//! |---|---|
//! | header (160 bytes) | magic `PONDRMM\0`, version, counts, section offsets and lengths, the `messages` fragments covered (last fragment id, deleted rows), xxh3 of the header |
//! | text | search text in zstd blocks of [`BLOCK_ROWS`] rows: `(BLOCK_ROWS + 1) u32` offsets, then the bytes |
//! | blocks | per block: offset u64, compressed length u32, raw length u32 |
//! | rows | per row, sorted by row id ([`ROW_LEN`] bytes): row id u64, timestamp i64 (ms), message id offset u64, source line u64, message id length u32 into `ids`, session u32, project u32 (`NONE` for none), agent u16, role u8, flags u8 (1 searchable, 2 UUID id, 4 replayed copy, bits 3-4 the origin) |
//! | ids | message id bytes: a canonical lowercase UUID as its 16 bytes (row flag 2), any other id as text |
//! | id index | (xxh3-64 of the message id text u64, row index u32) for every row, sorted by hash: an id held by several sessions has an entry per row |
//! | dicts | sessions, projects, agents, roles: each a count u64, `count + 1` u64 offsets, bytes |
//! | sessions | per session code: first index into `session rows` u64, row count u32, pad u32, newest timestamp i64 |
//! | session rows | row indices u32, grouped by session, each group in (timestamp, source line, row id) order |
//!
//! The writer ([`RowMapWriter`]) takes rows in row-id order in one pass: each block's text is
//! compressed and written as soon as the block is full, so only the fixed row headers, the
//! dictionaries and the id hashes stay in memory; message ids are spilled to a side file. It
//! writes a temp file, fsyncs it and renames it into place. Opening ([`RowMap::open`])
//! checks the magic, the version, the header checksum and that every section lies inside
//! the file; every later read is bounds-checked, so a corrupt or truncated file is an error,
//! never a crash.
//!
//! How readers use it: `Store::mapped` checks the map against the `messages` version at hand
//! ([`Mapped::check`]). A map names the last fragment it covers and how many of its rows had
//! been deleted; it fits while those fragments hold exactly the rows it was built from. A
//! sync only appends, except to demote an owner (a delete), and compaction gives fragments
//! new ids: either retires the map until the next build. Fragments after the covered ones are
//! the *delta*, rows newer than the map, which readers take from Lance by row id. A map that
//! does not fit or does not open is not used (and `pond status` says so); one that fails a
//! read is distrusted for its generation ([`MapSlot::distrust`]) and the request answered
//! again from Lance (`Store::with_map_fallback`). [`MapSlot`] reopens the file when a build
//! renames a new generation in, so a serving front switches without a restart.
//!
//! When it is built: by `pond rebuild` in the index worker, and after a sync
//! (`Store::refresh_rowmap`) when the map is missing, damaged, does not fit, or lags by more
//! than [`delta_limit`] rows; always under the store lock.

mod build;
mod checked;
mod fit;
mod reader;
mod slot;
#[cfg(test)]
mod tests;
mod writer;

pub use build::*;
pub use checked::*;
pub use fit::*;
pub use reader::*;
pub use slot::*;
pub use writer::*;

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use lance::table::format::Fragment;
use lance::Dataset;
use pond_rows::Origin;

use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use crate::error::{Result, StoreError};
use crate::read::{bool_at, primitive_col, string_col, ts_at, u64_at, MESSAGE_COLUMNS};

pub const MAGIC: [u8; 8] = *b"PONDRMM\0";
pub const VERSION: u32 = 3;
/// Rows per compressed text block.
pub const BLOCK_ROWS: usize = 256;
pub const HEADER_LEN: usize = 160;
pub const ROW_LEN: usize = 48;
pub(crate) const BLOCK_ENTRY_LEN: usize = 16;
pub(crate) const ID_ENTRY_LEN: usize = 12;
pub(crate) const SESSION_LEN: usize = 24;
/// A project code meaning "no project".
pub const NONE: u32 = u32::MAX;
pub(crate) const FLAG_SEARCHABLE: u8 = 1;
/// The message id is a canonical lowercase UUID stored as its 16 bytes.
pub(crate) const FLAG_UUID_ID: u8 = 2;
/// Another session's row owns the message id (`messages.replayed`).
pub(crate) const FLAG_REPLAYED: u8 = 4;
/// The row's `pond_rows::Origin`, as its index in `Origin::ALL`, in flag bits 3-4.
pub(crate) const ORIGIN_SHIFT: u8 = 3;
pub(crate) const ZSTD_LEVEL: i32 = 3;
/// The largest text block (decompressed) a map holds: a reader never allocates more for one.
pub(crate) const MAX_BLOCK_BYTES: usize = 256 << 20;

pub(crate) fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("row map damaged: {what}"))
}

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RowHeader {
    pub(crate) row_id: u64,
    pub(crate) timestamp: i64,
    pub(crate) id_off: u64,
    pub(crate) source_line: u64,
    pub(crate) id_len: u32,
    pub(crate) session: u32,
    pub(crate) project: u32,
    pub(crate) agent: u16,
    pub(crate) role: u8,
    pub(crate) flags: u8,
}

impl RowHeader {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.row_id.to_le_bytes());
        out.extend_from_slice(&self.timestamp.to_le_bytes());
        out.extend_from_slice(&self.id_off.to_le_bytes());
        out.extend_from_slice(&self.source_line.to_le_bytes());
        out.extend_from_slice(&self.id_len.to_le_bytes());
        out.extend_from_slice(&self.session.to_le_bytes());
        out.extend_from_slice(&self.project.to_le_bytes());
        out.extend_from_slice(&self.agent.to_le_bytes());
        out.push(self.role);
        out.push(self.flags);
    }

    pub(crate) fn decode(b: &[u8]) -> RowHeader {
        RowHeader {
            row_id: le_u64(b, 0),
            timestamp: le_u64(b, 8) as i64,
            id_off: le_u64(b, 16),
            source_line: le_u64(b, 24),
            id_len: le_u32(b, 32),
            session: le_u32(b, 36),
            project: le_u32(b, 40),
            agent: u16::from_le_bytes([b[44], b[45]]),
            role: b[46],
            flags: b[47],
        }
    }
}

pub(crate) fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

pub(crate) fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) rows: u64,
    pub(crate) source_version: u64,
    pub(crate) blocks: u64,
    pub(crate) blocks_off: u64,
    pub(crate) rows_off: u64,
    pub(crate) ids_off: u64,
    pub(crate) ids_len: u64,
    pub(crate) id_index_off: u64,
    pub(crate) dicts_off: u64,
    pub(crate) dicts_len: u64,
    pub(crate) sessions: u64,
    pub(crate) sessions_off: u64,
    pub(crate) session_rows_off: u64,
    pub(crate) file_len: u64,
    /// The newest `messages` fragment the map covers ([`NO_FRAGMENT`]: none).
    pub(crate) last_fragment_id: u64,
    /// Rows deleted from the covered fragments when the map was built.
    pub(crate) deleted_rows: u64,
    /// xxh3 of every byte after the header: a torn page anywhere is caught at open.
    pub(crate) body_hash: u64,
}

/// `last_fragment_id` of a map that covers no fragment.
pub(crate) const NO_FRAGMENT: u64 = u64::MAX;

impl Header {
    pub(crate) fn fields(&self) -> [u64; 17] {
        [
            self.rows,
            self.source_version,
            self.blocks,
            self.blocks_off,
            self.rows_off,
            self.ids_off,
            self.ids_len,
            self.id_index_off,
            self.dicts_off,
            self.dicts_len,
            self.sessions,
            self.sessions_off,
            self.session_rows_off,
            self.file_len,
            self.last_fragment_id,
            self.deleted_rows,
            self.body_hash,
        ]
    }

    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
        for (i, v) in self.fields().iter().enumerate() {
            b[16 + 8 * i..24 + 8 * i].copy_from_slice(&v.to_le_bytes());
        }
        let sum = xxh3_64(&b[..HEADER_LEN - 8]);
        b[HEADER_LEN - 8..].copy_from_slice(&sum.to_le_bytes());
        b
    }

    /// A file of `len` bytes is as long as the header says.
    pub(crate) fn check_len(&self, len: u64) -> Result<()> {
        if self.file_len != len {
            return Err(corrupt(format!(
                "truncated or extended: {len} bytes, the header says {}",
                self.file_len
            )));
        }
        Ok(())
    }

    /// The body hashes (`hash`, its xxh3) as the header says.
    pub(crate) fn check_body(&self, hash: u64) -> Result<()> {
        if hash != self.body_hash {
            return Err(corrupt("checksum mismatch (a damaged page)"));
        }
        Ok(())
    }

    pub(crate) fn decode(b: &[u8]) -> Result<Header> {
        if b.len() < HEADER_LEN {
            return Err(corrupt("shorter than its header"));
        }
        if b[..8] != MAGIC {
            return Err(corrupt("not a pond row map (bad magic)"));
        }
        let version = le_u32(b, 8);
        if version != VERSION {
            return Err(corrupt(format!(
                "version {version}, this pond reads {VERSION}"
            )));
        }
        if xxh3_64(&b[..HEADER_LEN - 8]) != le_u64(b, HEADER_LEN - 8) {
            return Err(corrupt("header checksum mismatch"));
        }
        let f = |i: usize| le_u64(b, 16 + 8 * i);
        Ok(Header {
            rows: f(0),
            source_version: f(1),
            blocks: f(2),
            blocks_off: f(3),
            rows_off: f(4),
            ids_off: f(5),
            ids_len: f(6),
            id_index_off: f(7),
            dicts_off: f(8),
            dicts_len: f(9),
            sessions: f(10),
            sessions_off: f(11),
            session_rows_off: f(12),
            file_len: f(13),
            last_fragment_id: f(14),
            deleted_rows: f(15),
            body_hash: f(16),
        })
    }
}

/// The 16 bytes of a canonical lowercase UUID (`8-4-4-4-12` hex digits); `None` for any
/// other id, which is stored as text. Only ids that format back identically are packed.
pub(crate) fn uuid_bytes(id: &str) -> Option<[u8; 16]> {
    let b = id.as_bytes();
    if b.len() != 36 || [8, 13, 18, 23].iter().any(|&i| b[i] != b'-') {
        return None;
    }
    let mut out = [0u8; 16];
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let hex: Vec<u8> = b.iter().copied().filter(|&c| c != b'-').collect();
    if hex.len() != 32 {
        return None;
    }
    for (n, pair) in hex.chunks(2).enumerate() {
        out[n] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

pub(crate) fn uuid_text(b: &[u8]) -> String {
    let mut s = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push_str(&format!("{byte:02x}"));
    }
    s
}

/// Read a whole file (for tests of corrupt bytes).
#[cfg(test)]
fn read_all(path: &Path) -> Vec<u8> {
    use std::io::Read;
    let mut v = Vec::new();
    File::open(path).unwrap().read_to_end(&mut v).unwrap();
    v
}
