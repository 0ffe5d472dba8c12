//! The small files a client keeps beside its sessions, read for what they say of a session
//! (Cursor's `worker.log`, Gemini's `.project_root` and `projects.json`, Copilot's
//! `workspace.yaml`, VS Code's `workspace.json`).
//!
//! Such a file only adds to a session (its project, its title): it is read with a cap on
//! its bytes, never from a device or a FIFO, and a file that cannot be read that way is
//! ignored, so one bad side file never stops a session from being read.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// The most read of a side file that holds one small value (a path, a title, a folder's
/// URI): one larger than this is not such a file, and is ignored.
pub(crate) const SIDE_FILE_BYTES: u64 = 64 << 10;

/// Open `path` for reading without blocking (a FIFO must not hang a sync), and only when it
/// is a regular file: the path is checked before it is opened (opening some devices acts),
/// and the file opened after (the path may have changed in between).
pub(crate) fn open_regular(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let not_regular = || std::io::Error::other("not a regular file");
    if !std::fs::metadata(path)?.is_file() {
        return Err(not_regular());
    }
    let f = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(not_regular());
    }
    Ok(f)
}

/// The text of the side file at `path` (bytes that are not UTF-8 replaced), or `None`: it
/// is missing, not a regular file, unreadable, or longer than `cap` bytes.
pub(crate) fn read_side_file(path: &Path, cap: u64) -> Option<String> {
    let f = open_regular(path).ok()?;
    let mut bytes = Vec::new();
    f.take(cap + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > cap {
        return None;
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The first line of the side file at `path`, among its first `cap` bytes, that `find`
/// finds something in: what it found. A log is read a line at a time up to that line.
pub(crate) fn find_in_side_file<T>(
    path: &Path,
    cap: u64,
    mut find: impl FnMut(&str) -> Option<T>,
) -> Option<T> {
    let mut r = BufReader::new(open_regular(path).ok()?.take(cap));
    let mut line = Vec::new();
    loop {
        line.clear();
        if r.read_until(b'\n', &mut line).ok()? == 0 {
            return None;
        }
        if let Some(found) = find(&String::from_utf8_lossy(&line)) {
            return Some(found);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn side_files_are_read_capped_and_only_when_regular() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small");
        std::fs::write(&small, "/home/dev/x\n").unwrap();
        assert_eq!(
            read_side_file(&small, SIDE_FILE_BYTES).as_deref(),
            Some("/home/dev/x\n")
        );
        // Over the cap: not such a file.
        assert_eq!(read_side_file(&small, 4), None);
        // A link to a device, a FIFO (opened without waiting for a writer), a folder,
        // nothing.
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for p in [zero, fifo, dir.path().to_owned(), dir.path().join("none")] {
            assert_eq!(read_side_file(&p, SIDE_FILE_BYTES), None, "{p:?}");
            assert_eq!(find_in_side_file(&p, 1 << 20, |l| Some(l.len())), None);
        }
    }

    #[test]
    fn a_log_is_read_up_to_the_line_sought_and_no_further_than_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("worker.log");
        std::fs::write(&log, "a\nb key=1\nc key=2\n").unwrap();
        let key = |l: &str| l.find("key=").map(|at| l[at + 4..].trim().to_owned());
        assert_eq!(find_in_side_file(&log, 1 << 20, key).as_deref(), Some("1"));
        assert_eq!(find_in_side_file(&log, 4, key), None);
    }
}
