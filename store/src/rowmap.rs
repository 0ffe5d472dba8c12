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

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use lance::table::format::Fragment;
use lance::Dataset;
use pond_ingest::Origin;

use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use crate::error::{Result, StoreError};
use crate::read::{bool_at, primitive_col, string_col, ts_at, u64_at, MESSAGE_COLUMNS};
use crate::schema::MESSAGES;
use crate::store::{Store, StoreLock};

pub const MAGIC: [u8; 8] = *b"PONDRMM\0";
pub const VERSION: u32 = 3;
/// Rows per compressed text block.
pub const BLOCK_ROWS: usize = 256;
pub const HEADER_LEN: usize = 160;
pub const ROW_LEN: usize = 48;
const BLOCK_ENTRY_LEN: usize = 16;
const ID_ENTRY_LEN: usize = 12;
const SESSION_LEN: usize = 24;
/// A project code meaning "no project".
pub const NONE: u32 = u32::MAX;
const FLAG_SEARCHABLE: u8 = 1;
/// The message id is a canonical lowercase UUID stored as its 16 bytes.
const FLAG_UUID_ID: u8 = 2;
/// Another session's row owns the message id (`messages.replayed`).
const FLAG_REPLAYED: u8 = 4;
/// The row's `pond_ingest::Origin`, as its index in `Origin::ALL`, in flag bits 3-4.
const ORIGIN_SHIFT: u8 = 3;
const ZSTD_LEVEL: i32 = 3;
/// The largest text block (decompressed) a map holds: a reader never allocates more for one.
const MAX_BLOCK_BYTES: usize = 256 << 20;

fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("row map damaged: {what}"))
}

/// One row as the writer takes it.
#[derive(Debug, Clone, Copy)]
pub struct RowInput<'a> {
    pub row_id: u64,
    pub timestamp: i64,
    pub message_id: &'a str,
    pub session_id: &'a str,
    pub project: Option<&'a str>,
    pub source_agent: &'a str,
    pub role: &'a str,
    /// The search text; `None` for a message that is not searchable.
    pub text: Option<&'a str>,
    pub source_line: u64,
    pub origin: Origin,
    pub replayed: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct RowHeader {
    row_id: u64,
    timestamp: i64,
    id_off: u64,
    source_line: u64,
    id_len: u32,
    session: u32,
    project: u32,
    agent: u16,
    role: u8,
    flags: u8,
}

impl RowHeader {
    fn encode(&self, out: &mut Vec<u8>) {
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

    fn decode(b: &[u8]) -> RowHeader {
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

fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// Strings to dense codes; the writer owns its keys (no borrows into rows).
#[derive(Default)]
struct Dict {
    codes: HashMap<String, u32>,
    values: Vec<String>,
}

impl Dict {
    fn code(&mut self, s: &str) -> u32 {
        if let Some(&c) = self.codes.get(s) {
            return c;
        }
        let c = self.values.len() as u32;
        self.codes.insert(s.to_owned(), c);
        self.values.push(s.to_owned());
        c
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.values.len() as u64).to_le_bytes());
        let mut off = 0u64;
        out.extend_from_slice(&off.to_le_bytes());
        for v in &self.values {
            off += v.len() as u64;
            out.extend_from_slice(&off.to_le_bytes());
        }
        for v in &self.values {
            out.extend_from_slice(v.as_bytes());
        }
        pad8(out);
    }
}

fn pad8(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
}

/// The map file's writer past the header: every byte written is hashed on the way.
struct Hashing {
    file: BufWriter<File>,
    hash: Xxh3,
}

impl Write for Hashing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// What a finished build wrote.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct RowMapStats {
    pub rows: u64,
    pub sessions: u64,
    pub blocks: u64,
    pub text_bytes: u64,
    pub compressed_text_bytes: u64,
    pub file_bytes: u64,
}

/// Streams rows (in row-id order) into a new row map file.
pub struct RowMapWriter {
    path: PathBuf,
    tmp: PathBuf,
    ids_tmp: PathBuf,
    out: Hashing,
    ids: BufWriter<File>,
    source_version: u64,
    coverage: Coverage,
    pos: u64,
    ids_len: u64,
    rows: Vec<RowHeader>,
    id_hashes: Vec<(u64, u32)>,
    dicts: [Dict; 4],
    block: Vec<u8>,
    block_offsets: Vec<u32>,
    blocks: Vec<(u64, u32, u32)>,
    text_bytes: u64,
}

const SESSIONS_DICT: usize = 0;
const PROJECTS_DICT: usize = 1;
const AGENTS_DICT: usize = 2;
const ROLES_DICT: usize = 3;

impl RowMapWriter {
    /// Start a row map that will replace `path` when finished. `source_version` is the
    /// `messages` version the rows come from, `coverage` its fragments.
    pub fn create(path: &Path, source_version: u64, coverage: Coverage) -> Result<RowMapWriter> {
        let tmp = temp_path(path, "tmp");
        let ids_tmp = temp_path(path, "ids.tmp");
        let mut file = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
        file.write_all(&[0u8; HEADER_LEN])?;
        let out = Hashing {
            file,
            hash: Xxh3::new(),
        };
        let ids = BufWriter::with_capacity(1 << 20, File::create(&ids_tmp)?);
        Ok(RowMapWriter {
            path: path.to_path_buf(),
            tmp,
            ids_tmp,
            out,
            ids,
            source_version,
            coverage,
            pos: HEADER_LEN as u64,
            ids_len: 0,
            rows: Vec::new(),
            id_hashes: Vec::new(),
            dicts: Default::default(),
            block: Vec::new(),
            block_offsets: vec![0],
            blocks: Vec::new(),
            text_bytes: 0,
        })
    }

    pub fn push(&mut self, r: RowInput) -> Result<()> {
        if let Some(last) = self.rows.last() {
            if r.row_id <= last.row_id {
                return Err(StoreError::Corrupt(format!(
                    "row map build: rows must arrive in increasing row id order; {} came after {}",
                    r.row_id, last.row_id
                )));
            }
        }
        let agent = self.dicts[AGENTS_DICT].code(r.source_agent);
        let role = self.dicts[ROLES_DICT].code(r.role);
        if agent > u16::MAX as u32 || role > u8::MAX as u32 {
            return Err(StoreError::Corrupt(
                "row map build: more than 65,535 agents or 255 roles".into(),
            ));
        }
        let packed = uuid_bytes(r.message_id);
        let id_bytes: &[u8] = match &packed {
            Some(b) => b,
            None => r.message_id.as_bytes(),
        };
        let mut flags = if r.text.is_some() { FLAG_SEARCHABLE } else { 0 };
        if packed.is_some() {
            flags |= FLAG_UUID_ID;
        }
        if r.replayed {
            flags |= FLAG_REPLAYED;
        }
        let origin = Origin::ALL.iter().position(|o| *o == r.origin).unwrap_or(0);
        flags |= (origin as u8) << ORIGIN_SHIFT;
        let header = RowHeader {
            row_id: r.row_id,
            timestamp: r.timestamp,
            id_off: self.ids_len,
            source_line: r.source_line,
            id_len: id_bytes.len() as u32,
            session: self.dicts[SESSIONS_DICT].code(r.session_id),
            project: r
                .project
                .map_or(NONE, |p| self.dicts[PROJECTS_DICT].code(p)),
            agent: agent as u16,
            role: role as u8,
            flags,
        };
        self.ids.write_all(id_bytes)?;
        self.ids_len += id_bytes.len() as u64;
        self.id_hashes
            .push((xxh3_64(r.message_id.as_bytes()), self.rows.len() as u32));
        self.rows.push(header);
        let text = r.text.unwrap_or("");
        self.block.extend_from_slice(text.as_bytes());
        self.text_bytes += text.len() as u64;
        self.block_offsets.push(self.block.len() as u32);
        if self.block_offsets.len() == BLOCK_ROWS + 1 {
            self.flush_block()?;
        }
        Ok(())
    }

    /// Compress the current block, write it, and drop its text.
    fn flush_block(&mut self) -> Result<()> {
        if self.block_offsets.len() == 1 {
            return Ok(());
        }
        if self.block.len() + 4 * (BLOCK_ROWS + 1) > MAX_BLOCK_BYTES {
            return Err(StoreError::Corrupt(format!(
                "row map build: {} rows hold over {} MiB of search text; the map is not built (readers use Lance)",
                BLOCK_ROWS,
                MAX_BLOCK_BYTES >> 20
            )));
        }
        let mut raw = Vec::with_capacity(4 * self.block_offsets.len() + self.block.len());
        // A short last block is padded to BLOCK_ROWS + 1 offsets, so every block reads alike.
        let last = *self.block_offsets.last().expect("offsets");
        self.block_offsets.resize(BLOCK_ROWS + 1, last);
        for o in &self.block_offsets {
            raw.extend_from_slice(&o.to_le_bytes());
        }
        raw.extend_from_slice(&self.block);
        let packed = zstd::bulk::compress(&raw, ZSTD_LEVEL)?;
        self.out.write_all(&packed)?;
        self.blocks
            .push((self.pos, packed.len() as u32, raw.len() as u32));
        self.pos += packed.len() as u64;
        self.block.clear();
        self.block_offsets.clear();
        self.block_offsets.push(0);
        Ok(())
    }

    /// Write the remaining sections and the header, fsync, and rename into place.
    pub fn finish(mut self) -> Result<RowMapStats> {
        self.flush_block()?;
        let compressed = self.pos - HEADER_LEN as u64;
        let mut buf = Vec::new();
        let align = |w: &mut Hashing, pos: &mut u64| -> Result<()> {
            while !pos.is_multiple_of(8) {
                w.write_all(&[0])?;
                *pos += 1;
            }
            Ok(())
        };
        let section = |w: &mut Hashing, pos: &mut u64, bytes: &[u8]| -> Result<u64> {
            align(w, pos)?;
            let at = *pos;
            w.write_all(bytes)?;
            *pos += bytes.len() as u64;
            Ok(at)
        };
        let mut pos = self.pos;
        for (off, clen, rlen) in &self.blocks {
            buf.extend_from_slice(&off.to_le_bytes());
            buf.extend_from_slice(&clen.to_le_bytes());
            buf.extend_from_slice(&rlen.to_le_bytes());
        }
        let blocks_off = section(&mut self.out, &mut pos, &buf)?;
        buf.clear();
        for r in &self.rows {
            r.encode(&mut buf);
        }
        let rows_off = section(&mut self.out, &mut pos, &buf)?;
        buf = Vec::new();
        // The ids, copied from their side file.
        self.ids.flush()?;
        align(&mut self.out, &mut pos)?;
        let ids_off = pos;
        let mut ids = File::open(&self.ids_tmp)?;
        pos += std::io::copy(&mut ids, &mut self.out)?;
        drop(ids);
        let _ = std::fs::remove_file(&self.ids_tmp);
        self.id_hashes.sort_unstable();
        for (h, row) in &self.id_hashes {
            buf.extend_from_slice(&h.to_le_bytes());
            buf.extend_from_slice(&row.to_le_bytes());
        }
        let id_index_off = section(&mut self.out, &mut pos, &buf)?;
        self.id_hashes = Vec::new();
        buf.clear();
        for d in &self.dicts {
            d.encode(&mut buf);
        }
        let dicts_off = section(&mut self.out, &mut pos, &buf)?;
        let dicts_len = buf.len() as u64;
        // Sessions: group row indices by session, each in (timestamp, source line, row id)
        // order.
        let sessions = self.dicts[SESSIONS_DICT].values.len();
        let mut order: Vec<u32> = (0..self.rows.len() as u32).collect();
        order.sort_by_key(|&i| {
            let r = &self.rows[i as usize];
            (r.session, r.timestamp, r.source_line, r.row_id)
        });
        buf.clear();
        let mut start = 0usize;
        for code in 0..sessions as u32 {
            let mut end = start;
            let mut newest = i64::MIN;
            while end < order.len() && self.rows[order[end] as usize].session == code {
                newest = newest.max(self.rows[order[end] as usize].timestamp);
                end += 1;
            }
            buf.extend_from_slice(&(start as u64).to_le_bytes());
            buf.extend_from_slice(&((end - start) as u32).to_le_bytes());
            buf.extend_from_slice(&0u32.to_le_bytes());
            buf.extend_from_slice(&newest.to_le_bytes());
            start = end;
        }
        let sessions_off = section(&mut self.out, &mut pos, &buf)?;
        buf.clear();
        for i in &order {
            buf.extend_from_slice(&i.to_le_bytes());
        }
        let session_rows_off = section(&mut self.out, &mut pos, &buf)?;
        let file_len = pos;

        let header = Header {
            rows: self.rows.len() as u64,
            source_version: self.source_version,
            blocks: self.blocks.len() as u64,
            blocks_off,
            rows_off,
            ids_off,
            ids_len: self.ids_len,
            id_index_off,
            dicts_off,
            dicts_len,
            sessions: sessions as u64,
            sessions_off,
            session_rows_off,
            file_len,
            last_fragment_id: self.coverage.last_fragment_id,
            deleted_rows: self.coverage.deleted_rows,
            body_hash: self.out.hash.digest(),
        };
        self.out.flush()?;
        let mut file = self.out.file.get_ref().try_clone()?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&header.encode())?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&self.tmp, &self.path)?;
        if let Some(dir) = self.path.parent() {
            File::open(dir)?.sync_all()?;
        }
        Ok(RowMapStats {
            rows: header.rows,
            sessions: header.sessions,
            blocks: header.blocks,
            text_bytes: self.text_bytes,
            compressed_text_bytes: compressed,
            file_bytes: file_len,
        })
    }
}

impl Drop for RowMapWriter {
    /// An abandoned build leaves no temp files behind (a finished one has renamed its own).
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.tmp);
        let _ = std::fs::remove_file(&self.ids_tmp);
    }
}

fn temp_path(path: &Path, suffix: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "rowmap".into());
    path.with_file_name(format!(".{name}.{}.{suffix}", std::process::id()))
}

/// Remove temp files that builds which died left beside `path`.
pub fn sweep_temps(path: &Path) -> usize {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return 0;
    };
    let prefix = format!(".{}.", name.to_string_lossy());
    let mut removed = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with(&prefix) && n.ends_with(".tmp") && std::fs::remove_file(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    rows: u64,
    source_version: u64,
    blocks: u64,
    blocks_off: u64,
    rows_off: u64,
    ids_off: u64,
    ids_len: u64,
    id_index_off: u64,
    dicts_off: u64,
    dicts_len: u64,
    sessions: u64,
    sessions_off: u64,
    session_rows_off: u64,
    file_len: u64,
    /// The newest `messages` fragment the map covers ([`NO_FRAGMENT`]: none).
    last_fragment_id: u64,
    /// Rows deleted from the covered fragments when the map was built.
    deleted_rows: u64,
    /// xxh3 of every byte after the header: a torn page anywhere is caught at open.
    body_hash: u64,
}

/// `last_fragment_id` of a map that covers no fragment.
const NO_FRAGMENT: u64 = u64::MAX;

impl Header {
    fn fields(&self) -> [u64; 17] {
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

    fn encode(&self) -> [u8; HEADER_LEN] {
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

    fn decode(b: &[u8]) -> Result<Header> {
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

/// One dictionary inside the mapped file.
#[derive(Debug, Clone, Copy)]
struct DictView {
    count: u64,
    offsets_at: usize,
    bytes_at: usize,
    bytes_len: usize,
}

/// A row map opened for reading. It holds the file's bytes (memory-mapped by
/// [`RowMap::open`]); every accessor is bounds-checked.
pub struct RowMap {
    bytes: Bytes,
    // (fields below are read from `bytes` once, at open)
    header: Header,
    dicts: [DictView; 4],
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

enum Bytes {
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
    /// Map `path` read-only and validate it.
    pub fn open(path: &Path) -> Result<RowMap> {
        let file = File::open(path)?;
        // SAFETY: the file is only ever replaced by rename, never written in place, so the
        // mapped bytes do not change under us.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        RowMap::from_bytes(Bytes::Mapped(map))
    }

    fn from_bytes(bytes: Bytes) -> Result<RowMap> {
        let header = Header::decode(&bytes)?;
        let len = bytes.len() as u64;
        if header.file_len != len {
            return Err(corrupt(format!(
                "truncated or extended: {len} bytes, the header says {}",
                header.file_len
            )));
        }
        if xxh3_64(&bytes[HEADER_LEN..]) != header.body_hash {
            return Err(corrupt("checksum mismatch (a damaged page)"));
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

    fn str_at(&self, off: u64, len: u64, what: &str) -> Result<&str> {
        let start = off as usize;
        let bytes = start
            .checked_add(len as usize)
            .and_then(|end| self.bytes.get(start..end))
            .ok_or_else(|| corrupt(format!("{what} out of bounds")))?;
        std::str::from_utf8(bytes).map_err(|_| corrupt(format!("{what} is not UTF-8")))
    }

    fn dict(&self, which: usize, code: u32) -> Result<&str> {
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

    fn header_of(&self, idx: usize) -> Result<RowHeader> {
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

/// The 16 bytes of a canonical lowercase UUID (`8-4-4-4-12` hex digits); `None` for any
/// other id, which is stored as text. Only ids that format back identically are packed.
fn uuid_bytes(id: &str) -> Option<[u8; 16]> {
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

fn uuid_text(b: &[u8]) -> String {
    let mut s = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push_str(&format!("{byte:02x}"));
    }
    s
}

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
fn fragment_rows(f: &Fragment) -> Option<(usize, usize)> {
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
        if map.source_version() > ds.version().version {
            return None;
        }
        // New fragments always take ids above every earlier one (a compacted fragment too,
        // wherever Lance places it), so the map covers the ids up to the one it names.
        let last = map.header.last_fragment_id;
        let covered = |f: &Fragment| last != NO_FRAGMENT && f.id <= last;
        let (mut live, mut deleted) = (0usize, 0usize);
        let mut delta = Vec::new();
        let mut delta_rows = 0;
        for f in ds.fragments().iter() {
            let (l, d) = fragment_rows(f)?;
            if covered(f) {
                live += l;
                deleted += d;
            } else {
                delta_rows += l;
                delta.push(f.clone());
            }
        }
        if live != map.rows() || deleted as u64 != map.header.deleted_rows {
            return None;
        }
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

/// The identity of a file generation: a new map is a new inode (temp + rename).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileIdent {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
}

impl FileIdent {
    fn of(path: &Path) -> Option<FileIdent> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        Some(FileIdent {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
        })
    }
}

/// The open row map of a store, swapped for the new generation when the file is replaced.
/// A serving front asks it on every query: the cost is one `stat`.
#[derive(Default)]
pub struct MapSlot {
    /// The file generation last looked at, and the map opened from it (`None` if damaged).
    open: Mutex<Option<(FileIdent, Option<Arc<RowMap>>)>>,
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

/// The row map's file in a store.
pub fn path_in(store: &Store) -> PathBuf {
    store.root().join("messages.rmm")
}

/// Build the store's row map from `messages` in one streaming pass (rows in row-id order,
/// batches of 4,096), replacing the old one atomically. The caller holds the store lock, so
/// no sync writes while the map is built and two builds never overlap.
///
/// Row ids are stable (they survive compaction), but fragment order need not follow them:
/// Lance may place a compacted fragment after newer ones. The row ids are read first (no
/// data pages); when the scan order is not row-id order, the rows are taken by sorted id.
pub async fn build(store: &Store, _lock: &StoreLock) -> Result<RowMapStats> {
    use futures::TryStreamExt;

    let path = path_in(store);
    sweep_temps(&path);
    let ds = store.messages().await?;
    let mut writer = RowMapWriter::create(&path, ds.version_id(), Coverage::of(&ds)?)?;
    let mut columns = MESSAGE_COLUMNS.to_vec();
    columns.extend(["source_line", "origin", "replayed"]);
    let ids = row_ids_in_scan_order(&ds).await?;
    if ids.windows(2).all(|w| w[0] < w[1]) {
        let mut scan = ds.scan();
        scan.with_row_id()
            .project(&columns)?
            .batch_size(BUILD_BATCH)
            .scan_in_order(true);
        let mut stream = scan.try_into_stream().await?;
        while let Some(b) = stream.try_next().await? {
            push_batch(&mut writer, &b)?;
        }
    } else {
        let mut ids = ids;
        ids.sort_unstable();
        ids.dedup();
        let mut with_id = vec!["_rowid"];
        with_id.extend_from_slice(&columns);
        for chunk in ids.chunks(BUILD_BATCH) {
            let projection = lance::dataset::ProjectionRequest::from_columns(
                with_id.iter().copied(),
                ds.schema(),
            );
            let b = ds.take_rows(chunk, projection).await?;
            let b = sorted_by_row_id(&b)?;
            push_batch(&mut writer, &b)?;
        }
    }
    writer.finish()
}

const BUILD_BATCH: usize = 4096;

/// Every row id of `messages`, in the order a scan yields them.
async fn row_ids_in_scan_order(ds: &Dataset) -> Result<Vec<u64>> {
    use futures::TryStreamExt;

    let mut scan = ds.scan();
    scan.with_row_id()
        .project::<&str>(&[])?
        .batch_size(64 * BUILD_BATCH)
        .scan_in_order(true);
    let mut stream = scan.try_into_stream().await?;
    let mut ids = Vec::new();
    while let Some(b) = stream.try_next().await? {
        ids.extend_from_slice(
            primitive_col::<arrow_array::types::UInt64Type>(&b, "_rowid")?.values(),
        );
    }
    Ok(ids)
}

/// `b` with its rows in increasing `_rowid` order.
fn sorted_by_row_id(b: &arrow_array::RecordBatch) -> Result<arrow_array::RecordBatch> {
    let ids = primitive_col::<arrow_array::types::UInt64Type>(b, "_rowid")?;
    let mut order: Vec<u32> = (0..b.num_rows() as u32).collect();
    order.sort_unstable_by_key(|&i| ids.value(i as usize));
    let order = arrow_array::UInt32Array::from(order);
    Ok(arrow_select::take::take_record_batch(b, &order)?)
}

fn push_batch(writer: &mut RowMapWriter, b: &arrow_array::RecordBatch) -> Result<()> {
    use arrow_array::Array;

    let row_ids = primitive_col::<arrow_array::types::UInt64Type>(b, "_rowid")?;
    let (session, id, role, agent, project, text, origin) = (
        string_col(b, "session_id")?,
        string_col(b, "id")?,
        string_col(b, "role")?,
        string_col(b, "source_agent")?,
        string_col(b, "project")?,
        string_col(b, "search_text")?,
        string_col(b, "origin")?,
    );
    for i in 0..b.num_rows() {
        let origin = Origin::parse(origin.value(i))
            .ok_or_else(|| corrupt(format!("unknown origin {:?}", origin.value(i))))?;
        writer.push(RowInput {
            row_id: row_ids.value(i),
            timestamp: ts_at(b, "timestamp", i)?.unwrap_or_default(),
            message_id: id.value(i),
            session_id: session.value(i),
            project: project.is_valid(i).then(|| project.value(i)),
            source_agent: agent.value(i),
            role: role.value(i),
            text: text.is_valid(i).then(|| text.value(i)),
            source_line: u64_at(b, "source_line", i)?,
            origin,
            replayed: bool_at(b, "replayed", i)? == Some(true),
        })?;
    }
    Ok(())
}

/// Rows newer than the map above which a sync rebuilds it. Below, readers take those rows
/// from the newest Lance fragments (the delta), which stays cheap while it is small; a
/// rebuild costs about 1.5 s per million rows.
pub fn delta_limit(map_rows: usize) -> usize {
    (map_rows / 20).max(20_000)
}

/// After a sync: rebuild the map if it is missing, damaged, does not match `messages`, or
/// lags by more than [`delta_limit`] rows. Returns what was built, if anything.
pub async fn refresh(store: &Store, lock: &StoreLock) -> Result<Option<RowMapStats>> {
    let Some(ds) = store.dataset(MESSAGES).await? else {
        return Ok(None);
    };
    let stale = match store.mapped(&ds) {
        Some(m) => m.delta_rows > delta_limit(m.map.rows()),
        None => ds.count_rows(None).await? > 0,
    };
    if !stale {
        return Ok(None);
    }
    build(store, lock).await.map(Some)
}

/// The row map's state as this process serves it, for status displays.
pub fn describe(store: &Store, messages: Option<&Dataset>) -> String {
    let path = path_in(store);
    if !path.exists() {
        return "row map: not built (`pond sync` or `pond rebuild --rowmap` builds it)".into();
    }
    let fix = "`pond rebuild --rowmap` rebuilds it (so does the next sync)";
    let Some(ds) = messages else {
        return format!("row map: present but the store has no messages; {fix}");
    };
    match store.mapped(ds) {
        Some(m) => {
            let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
            let age = if m.delta_rows > 0 {
                format!(
                    "{} rows newer than the map (read from Lance; a sync rebuilds it past {})",
                    m.delta_rows,
                    delta_limit(m.map.rows())
                )
            } else {
                "current".into()
            };
            format!(
                "row map: {} rows, {} sessions, {:.1} MiB, {age}",
                m.map.rows(),
                m.map.sessions(),
                bytes as f64 / (1 << 20) as f64
            )
        }
        None => match RowMap::open(&path) {
            Err(e) => format!("{e}; not used; {fix}"),
            Ok(_) => format!("row map: does not match the messages dataset; not used; {fix}"),
        },
    }
}

/// Read a whole file (for tests of corrupt bytes).
#[cfg(test)]
fn read_all(path: &Path) -> Vec<u8> {
    use std::io::Read;
    let mut v = Vec::new();
    File::open(path).unwrap().read_to_end(&mut v).unwrap();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// row id, timestamp, message id, session, project, agent, role, text
    type Row = (
        u64,
        i64,
        String,
        String,
        Option<String>,
        String,
        String,
        Option<String>,
    );

    fn sample(n: usize) -> Vec<Row> {
        (0..n)
            .map(|i| {
                let text = match i % 5 {
                    0 => None,
                    1 => Some(String::new()),
                    2 => Some(format!("héllo wörld {i} 兼容 ✓")),
                    _ => Some("x".repeat(i % 700)),
                };
                (
                    (i as u64) * 3 + 1,
                    1_700_000_000_000 + ((i * 7919) % 1000) as i64,
                    match i % 3 {
                        // Lowercase UUIDs are packed; uppercase ones and others stay text.
                        0 => format!(
                            "{i:08x}-{:04x}-4{:03x}-8abc-{:012x}",
                            i % 65536,
                            i % 4096,
                            i * 7
                        ),
                        1 => format!("{i:08X}-AAAA-4BBB-8CCC-{:012X}", i),
                        _ => format!("msg-{i}"),
                    },
                    format!("session-{}", i % 13),
                    (i % 4 != 0).then(|| format!("/home/dev/p{}", i % 3)),
                    if i % 2 == 0 { "claude-code" } else { "codex" }.to_owned(),
                    ["user", "assistant", "tool"][i % 3].to_owned(),
                    text,
                )
            })
            .collect()
    }

    const COVERAGE: Coverage = Coverage {
        last_fragment_id: 7,
        deleted_rows: 0,
    };

    /// The source line, origin and replayed flag of sample row `i`.
    fn extras(i: usize) -> (u64, Origin, bool) {
        (i as u64 * 2 + 1, Origin::ALL[i % 3], i % 7 == 3)
    }

    fn write(path: &Path, rows: &[Row]) -> RowMapStats {
        let mut w = RowMapWriter::create(path, 42, COVERAGE).unwrap();
        for (i, r) in rows.iter().enumerate() {
            let (source_line, origin, replayed) = extras(i);
            w.push(RowInput {
                row_id: r.0,
                timestamp: r.1,
                message_id: &r.2,
                session_id: &r.3,
                project: r.4.as_deref(),
                source_agent: &r.5,
                role: &r.6,
                text: r.7.as_deref(),
                source_line,
                origin,
                replayed,
            })
            .unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn round_trip_reads_every_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("messages.rmm");
        let rows = sample(1000);
        let stats = write(&path, &rows);
        assert_eq!((stats.rows, stats.sessions, stats.blocks), (1000, 13, 4));
        let map = RowMap::open(&path).unwrap();
        assert_eq!(map.source_version(), 42);
        for (i, r) in rows.iter().enumerate() {
            let v = map.row(i).unwrap();
            assert_eq!(
                (
                    v.row_id,
                    v.timestamp,
                    v.message_id.as_ref(),
                    v.session_id,
                    v.project,
                    v.source_agent,
                    v.role
                ),
                (
                    r.0,
                    r.1,
                    r.2.as_str(),
                    r.3.as_str(),
                    r.4.as_deref(),
                    r.5.as_str(),
                    r.6.as_str()
                )
            );
            assert_eq!(v.searchable, r.7.is_some());
            assert_eq!((v.source_line, v.origin, v.replayed), extras(i));
            assert_eq!(map.text(i).unwrap(), r.7, "row {i}");
            assert_eq!(map.position_of_row_id(r.0).unwrap(), Some(i));
            assert_eq!(map.positions_of_message(&r.2).unwrap(), vec![i]);
            let owner = (!v.replayed).then_some(i);
            assert_eq!(map.position_of_message(&r.2).unwrap(), owner);
        }
        assert_eq!(map.position_of_row_id(2).unwrap(), None);
        assert_eq!(map.position_of_message("nope").unwrap(), None);
        let s = map.session("session-5").unwrap().unwrap();
        let positions = map.session_rows(s).unwrap();
        assert_eq!(
            positions.len(),
            rows.iter().filter(|r| r.3 == "session-5").count()
        );
        assert_eq!(s.rows as usize, positions.len());
        let times: Vec<i64> = positions
            .iter()
            .map(|&p| map.row(p).unwrap().timestamp)
            .collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "in time order");
        assert_eq!(s.newest, *times.last().unwrap());
        assert!(map.session("session-99").unwrap().is_none());
        // No temp files are left beside it.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("messages.rmm")]);
    }

    #[test]
    fn only_canonical_lowercase_uuids_are_packed() {
        let id = "0b8c2f9e-1d2a-4c3b-9e8f-7a6b5c4d3e2f";
        let packed = uuid_bytes(id).unwrap();
        assert_eq!(uuid_text(&packed), id);
        for other in [
            "0B8C2F9E-1D2A-4C3B-9E8F-7A6B5C4D3E2F",
            "0b8c2f9e1d2a4c3b9e8f7a6b5c4d3e2f",
            "0b8c2f9e-1d2a-4c3b-9e8f-7a6b5c4d3e2",
            "0b8c2f9e-1d2a-4c3b-9e8f-7a6b5c4d3e2g",
            "0b8c2f9e-1d2a-4c3b-9e8f-7a6b5c4d3e2f0",
            "session:12",
            "",
        ] {
            assert!(uuid_bytes(other).is_none(), "{other}");
        }
    }

    #[test]
    fn an_empty_map_opens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.rmm");
        write(&path, &[]);
        let map = RowMap::open(&path).unwrap();
        assert_eq!((map.rows(), map.sessions()), (0, 0));
        assert_eq!(map.position_of_message("x").unwrap(), None);
        assert!(map.row(0).is_err());
    }

    #[test]
    fn rows_out_of_order_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RowMapWriter::create(&dir.path().join("m.rmm"), 1, COVERAGE).unwrap();
        let row = |row_id| RowInput {
            row_id,
            timestamp: 0,
            message_id: "m",
            session_id: "s",
            project: None,
            source_agent: "codex",
            role: "user",
            text: None,
            source_line: 1,
            origin: Origin::Own,
            replayed: false,
        };
        w.push(row(5)).unwrap();
        let e = w.push(row(5)).unwrap_err();
        assert!(e.to_string().contains("increasing row id"), "{e}");
        assert!(w.push(row(4)).is_err());
        drop(w);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "an abandoned build leaves nothing"
        );
    }

    #[test]
    fn corrupt_and_truncated_files_are_errors_not_crashes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.rmm");
        write(&path, &sample(600));
        let good = read_all(&path);
        let open = |bytes: Vec<u8>| RowMap::from_bytes(Bytes::Owned(bytes));
        for cut in [
            0,
            10,
            HEADER_LEN - 1,
            HEADER_LEN,
            good.len() / 2,
            good.len() - 1,
        ] {
            assert!(open(good[..cut].to_vec()).is_err(), "cut at {cut}");
        }
        let mut bad = good.clone();
        bad[0] = b'X';
        assert!(open(bad).unwrap_err().to_string().contains("magic"));
        let mut bad = good.clone();
        bad[20] ^= 1;
        assert!(open(bad).unwrap_err().to_string().contains("checksum"));
        // Damage past the header: opening may succeed, but every read is checked.
        let mut rng = 12345u64;
        for _ in 0..200 {
            let mut bad = good.clone();
            for _ in 0..8 {
                rng = rng
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let at = HEADER_LEN + (rng >> 33) as usize % (good.len() - HEADER_LEN);
                bad[at] = (rng >> 17) as u8;
            }
            if let Ok(map) = open(bad) {
                for i in 0..map.rows() {
                    let _ = map.row(i);
                    let _ = map.text(i);
                }
                let _ = map.position_of_message("msg-7");
                if let Ok(Some(s)) = map.session("session-1") {
                    let _ = map.session_rows(s);
                }
            }
        }
    }

    /// `bytes` with the body checksum and the header checksum made valid again: damage
    /// that a checksum would not catch (a crafted file) must still never panic a reader.
    fn resealed(mut bytes: Vec<u8>) -> Vec<u8> {
        let mut h = Header::decode(&bytes).unwrap();
        h.body_hash = xxh3_64(&bytes[HEADER_LEN..]);
        bytes[..HEADER_LEN].copy_from_slice(&h.encode());
        bytes
    }

    fn read_everything(map: &RowMap) {
        for i in 0..map.rows() {
            let _ = map.row(i);
            let _ = map.text(i);
        }
        let _ = map.position_of_message("msg-7");
        let _ = map.positions_of_message("session-1");
        for code in 0..20 {
            if let Ok(Some(s)) = map.session(&format!("session-{code}")) {
                let _ = map.session_rows(s);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        #[test]
        fn a_damaged_map_is_an_error_or_a_map_never_a_panic(
            edits in proptest::collection::vec((0usize..1_000_000, proptest::prelude::any::<u8>()), 1..12),
            reseal in proptest::prelude::any::<bool>(),
        ) {
            static GOOD: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
            let good = GOOD.get_or_init(|| {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("m.rmm");
                write(&path, &sample(600));
                read_all(&path)
            });
            let mut bad = good.clone();
            for (at, byte) in edits {
                let at = at % bad.len();
                bad[at] = byte;
            }
            let bad = if reseal && Header::decode(&bad).is_ok() { resealed(bad) } else { bad };
            if let Ok(map) = RowMap::from_bytes(Bytes::Owned(bad)) {
                read_everything(&map);
            }
        }
    }

    #[test]
    fn a_torn_page_is_caught_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.rmm");
        write(&path, &sample(2000));
        let mut bad = read_all(&path);
        // A 4 KiB page of the row headers zeroed, as a torn write leaves it.
        let page = HEADER_LEN + 4096 * 3;
        bad[page..page + 4096].fill(0);
        let e = RowMap::from_bytes(Bytes::Owned(bad)).unwrap_err();
        assert!(e.to_string().contains("checksum"), "{e}");
    }

    #[test]
    fn stale_temps_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.rmm");
        std::fs::write(dir.path().join(".m.rmm.999.tmp"), b"x").unwrap();
        std::fs::write(dir.path().join(".m.rmm.999.ids.tmp"), b"x").unwrap();
        std::fs::write(dir.path().join("keep.tmp"), b"x").unwrap();
        assert_eq!(sweep_temps(&path), 2);
        assert!(dir.path().join("keep.tmp").exists());
    }
}
