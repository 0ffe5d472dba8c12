//! The row map writer: rows in row-id order in one pass, each text block compressed as
//! it fills, then the index sections and the header; temp file, fsync, rename.

use super::*;

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

/// Strings to dense codes; the writer owns its keys (no borrows into rows).
#[derive(Default)]
pub(crate) struct Dict {
    pub(crate) codes: HashMap<String, u32>,
    pub(crate) values: Vec<String>,
}

impl Dict {
    pub(crate) fn code(&mut self, s: &str) -> u32 {
        if let Some(&c) = self.codes.get(s) {
            return c;
        }
        let c = self.values.len() as u32;
        self.codes.insert(s.to_owned(), c);
        self.values.push(s.to_owned());
        c
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
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

pub(crate) fn pad8(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
}

/// The map file's writer past the header: every byte written is hashed on the way.
pub(crate) struct Hashing {
    pub(crate) file: BufWriter<File>,
    pub(crate) hash: Xxh3,
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
    pub(crate) path: PathBuf,
    pub(crate) tmp: PathBuf,
    pub(crate) ids_tmp: PathBuf,
    pub(crate) out: Hashing,
    pub(crate) ids: BufWriter<File>,
    pub(crate) source_version: u64,
    pub(crate) coverage: Coverage,
    pub(crate) pos: u64,
    pub(crate) ids_len: u64,
    pub(crate) rows: Vec<RowHeader>,
    pub(crate) id_hashes: Vec<(u64, u32)>,
    pub(crate) dicts: [Dict; 4],
    pub(crate) block: Vec<u8>,
    pub(crate) block_offsets: Vec<u32>,
    pub(crate) blocks: Vec<(u64, u32, u32)>,
    pub(crate) text_bytes: u64,
}

pub(crate) const SESSIONS_DICT: usize = 0;
pub(crate) const PROJECTS_DICT: usize = 1;
pub(crate) const AGENTS_DICT: usize = 2;
pub(crate) const ROLES_DICT: usize = 3;

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
    pub(crate) fn flush_block(&mut self) -> Result<()> {
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

pub(crate) fn temp_path(path: &Path, suffix: &str) -> PathBuf {
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
