//! `pond restore`: a session's source files, with its subagent sessions' files, written
//! back from `records` where the client reads them (or under another folder), so that
//! `claude --resume ID` or `codex resume ID` works after the client deleted them.
//!
//! Nothing is overwritten: every file is compared with what is already there first, and if
//! one exists and differs nothing is written at all. A file is written under a temporary
//! name and linked into place, so a file that appears meanwhile is not clobbered either.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, UNIX_EPOCH};

use pond_protocol::job::{FileState, ForgetRequest, RestoreReport, RestoreRequest, RestoredFile};
use pond_store::restore::{session_files, write_file, StoredFile};
use pond_store::{forgotten, Result, Store, StoreError};

pub async fn run(store: &Store, req: &RestoreRequest) -> Result<RestoreReport> {
    let started = Instant::now();
    let select = ForgetRequest {
        session: Some(req.session.clone()),
        ..ForgetRequest::default()
    };
    let sessions = forgotten::select(store, &select).await?;
    let mut files = session_files(store, &sessions).await?;
    // The session's own file first, then its subagents' by path.
    files.sort_by(|a, b| {
        (a.session.id != req.session, &a.path).cmp(&(b.session.id != req.session, &b.path))
    });
    let main = files
        .iter()
        .find(|f| f.session.id == req.session)
        .map(|f| PathBuf::from(&f.path));
    let mut report = RestoreReport {
        session: req.session.clone(),
        dry_run: req.dry_run,
        ..RestoreReport::default()
    };
    // A client that keeps its sessions in a database: pond never writes into it; a copy of
    // the session's lines goes elsewhere.
    let in_database = files.iter().find(|f| {
        f.cursor.as_ref().is_some_and(|c| c.rows.is_some())
            || pond_ingest::Source::of_agent(&f.session.source_agent)
                .is_some_and(|s| s.database.is_some())
    });
    if let (Some(f), None) = (in_database, &req.out_dir) {
        return Err(StoreError::InvalidQuery(format!(
            "{} keeps session {} in its database, which pond never writes to; write a copy of \
             the session's stored lines with --out DIR",
            f.session.source_agent, f.session.id
        )));
    }
    let mut plan = Vec::new();
    for file in &files {
        let target = target(file, main.as_deref(), req.out_dir.as_deref());
        let (state, fidelity) = compare(file, &target)?;
        report.files.push(RestoredFile {
            session_id: file.session.id.clone(),
            path: target.display().to_string(),
            lines: fidelity.lines,
            bytes: fidelity.bytes,
            lines_missing: fidelity.lines_missing,
            superseded: file.superseded,
            state,
        });
        plan.push((file, target));
    }
    let differs: Vec<&str> = report
        .files
        .iter()
        .filter(|f| f.state == FileState::Differs)
        .map(|f| f.path.as_str())
        .collect();
    if !differs.is_empty() && !req.dry_run {
        return Err(StoreError::InvalidQuery(format!(
            "nothing restored: {} already exist{} and differ{} from the stored session; move \
             {} away, or restore elsewhere with --out DIR",
            differs.join(", "),
            if differs.len() == 1 { "s" } else { "" },
            if differs.len() == 1 { "s" } else { "" },
            if differs.len() == 1 { "it" } else { "them" },
        )));
    }
    if !req.dry_run {
        for ((file, target), out) in plan.iter().zip(report.files.iter_mut()) {
            if out.state == FileState::Missing {
                write_new(file, target)?;
                out.state = FileState::Written;
            }
        }
    }
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    Ok(report)
}

/// Where `file` goes: its own path, or under `out` at its place relative to the main
/// session's folder (subagent files keep their subfolder).
fn target(file: &StoredFile, main: Option<&Path>, out: Option<&Path>) -> PathBuf {
    let path = PathBuf::from(&file.path);
    let Some(out) = out else {
        return path;
    };
    let relative = main
        .and_then(Path::parent)
        .and_then(|dir| path.strip_prefix(dir).ok())
        .map(Path::to_path_buf)
        .or_else(|| path.file_name().map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(&file.session.id));
    out.join(relative)
}

/// Whether `target` is missing, holds exactly what would be written, or differs; and what
/// would be written. Nothing is written.
fn compare(file: &StoredFile, target: &Path) -> Result<(FileState, pond_store::restore::Fidelity)> {
    match File::open(target) {
        Ok(existing) => {
            let mut same = SameAs {
                existing: BufReader::new(existing),
                same: true,
                theirs: Vec::new(),
            };
            let fidelity = write_file(file, &mut same)?;
            let mut rest = [0u8; 1];
            let longer = same.same && same.existing.read(&mut rest)? > 0;
            let state = if same.same && !longer {
                FileState::Present
            } else {
                FileState::Differs
            };
            Ok((state, fidelity))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let fidelity = write_file(file, &mut std::io::sink())?;
            Ok((FileState::Missing, fidelity))
        }
        Err(e) => Err(StoreError::Failed(format!(
            "cannot read {}: {e}",
            target.display()
        ))),
    }
}

/// Write `file` at `target`, which must not exist: under a temporary name beside it, then
/// linked to its name (which fails if a file appeared there meanwhile). Its modification
/// time is the session's last message, as the client left it.
fn write_new(file: &StoredFile, target: &Path) -> Result<()> {
    let dir = target.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| {
        let dangling = dir
            .ancestors()
            .find(|a| std::fs::symlink_metadata(a).is_ok_and(|m| m.is_symlink()) && !a.exists());
        StoreError::Failed(match dangling {
            Some(link) => format!(
                "cannot write into {}: it is a link to a folder that does not exist",
                link.display()
            ),
            None => format!("cannot make the folder {}: {e}", dir.display()),
        })
    })?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.pond-restore.{}", std::process::id()));
    let modified = (file.session.updated_at)
        .or(file.session.created_at)
        .map(|ms| UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64));
    let written = (|| -> Result<()> {
        let mut w = BufWriter::new(File::create(&temp)?);
        write_file(file, &mut w)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        if let Some(t) = modified {
            let _ = f.set_modified(t);
        }
        f.sync_all()?;
        let failed = |e: std::io::Error| {
            StoreError::Failed(format!("cannot write {}: {e}", target.display()))
        };
        match std::fs::hard_link(&temp, target) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(failed(e)),
            // A file system without hard links (FAT, exFAT, some network and FUSE mounts):
            // the same bytes copied to a name that must still be new.
            Err(_) => {
                let mut to = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(target)
                    .map_err(failed)?;
                std::io::copy(&mut File::open(&temp)?, &mut to).map_err(failed)?;
                if let Some(t) = modified {
                    let _ = to.set_modified(t);
                }
                to.sync_all().map_err(failed)
            }
        }
    })();
    let _ = std::fs::remove_file(&temp);
    written
}

/// A writer that compares what is written with a file's bytes and keeps only whether they
/// are the same so far.
struct SameAs<R> {
    existing: R,
    same: bool,
    /// The existing bytes for one write, kept between writes.
    theirs: Vec<u8>,
}

impl<R: Read> Write for SameAs<R> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.same {
            self.theirs.resize(buf.len(), 0);
            let mut got = 0;
            while got < buf.len() {
                match self.existing.read(&mut self.theirs[got..])? {
                    0 => break,
                    n => got += n,
                }
            }
            self.same = got == buf.len() && self.theirs == buf;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
