//! The read stage's windows: the files a sync reads, cut into windows of about
//! [`WINDOW_BYTES`] of unread data, each parsed on one thread per core while the window
//! before it is written.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use pond_ingest::paths::path_key;
use pond_ingest::reader::{read_file_part, HeldDatabases};
use pond_ingest::{FileCursor, ReadOutcome, SourceFile};
use tokio::task::JoinHandle;

use super::SyncError;
use crate::quarantine::{Quarantine, NOTED_BYTES};

/// Unread bytes per read window (two windows are in memory at once: one parsed, one read).
const WINDOW_BYTES: u64 = 32 << 20;
const WINDOW_FILES: usize = 512;

/// One file's outcome: its index, the offset it was read from, and the outcome.
pub(super) type Outcome = (usize, u64, ReadOutcome);

/// The files of a sync read window by window: while window k is written, window k+1 is
/// parsed on blocking threads (one per core), so parsing overlaps writing and uses every
/// core. A file is read at most [`WINDOW_BYTES`] at a time: the rest of a larger one goes
/// first into the next window (its read continues from the partial cursor), so memory
/// follows the window, not the largest file. Outcomes come in window order.
pub(super) struct Reader {
    files: Arc<Vec<SourceFile>>,
    /// A database its client keeps locked is waited for once in this sync, not per session.
    held: Arc<HeldDatabases>,
    queue: Windows,
    /// The large files of the window being read: with those of the one being written,
    /// what a dead worker is blamed on (see `crate::quarantine`).
    reading_now: Vec<PathBuf>,
    next: Option<JoinHandle<(Vec<Outcome>, u64)>>,
}

impl Reader {
    /// Start reading the first window of `files`, each from its stored cursor; `unread` is
    /// what each has left ([`unread_bytes`]).
    pub(super) fn start(
        files: Vec<SourceFile>,
        unread: Vec<u64>,
        cursors: &HashMap<String, FileCursor>,
        quarantine: &Quarantine,
    ) -> Reader {
        let mut reader = Reader {
            files: Arc::new(files),
            held: Arc::new(HeldDatabases::default()),
            queue: Windows {
                next: 0,
                unread,
                carried: Vec::new(),
            },
            reading_now: Vec::new(),
            next: None,
        };
        let first = reader.queue.window(&reader.files, cursors, quarantine);
        reader.reading_now = reader.noted(first.as_deref());
        quarantine.reading(&as_paths(&reader.reading_now));
        reader.next = first.map(|tasks| reader.spawn(tasks));
        reader
    }

    /// The outcomes of the window read last and the wall time it took, once the next
    /// window is being read; `None` when every file is read.
    pub(super) async fn next(
        &mut self,
        cursors: &HashMap<String, FileCursor>,
        quarantine: &Quarantine,
    ) -> Result<Option<(Vec<Outcome>, u64)>, SyncError> {
        let Some(reading) = self.next.take() else {
            return Ok(None);
        };
        let (outcomes, read_ms) = reading
            .await
            .map_err(|e| SyncError::Reader(e.to_string()))?;
        self.queue.carried = outcomes
            .iter()
            .filter(|o| o.2.cursor.partial)
            .map(|o| Task {
                file: o.0,
                from: Some(o.2.cursor.clone()),
                skip: None,
            })
            .collect();
        let window = self.queue.window(&self.files, cursors, quarantine);
        let noted = self.noted(window.as_deref());
        let writing = std::mem::replace(&mut self.reading_now, noted);
        let in_flight: Vec<PathBuf> = writing
            .into_iter()
            .chain(self.reading_now.clone())
            .collect();
        quarantine.reading(&as_paths(&in_flight));
        self.next = window.map(|tasks| self.spawn(tasks));
        Ok(Some((outcomes, read_ms)))
    }

    pub(super) fn files(&self) -> &[SourceFile] {
        &self.files
    }

    /// What file `i` had left to read when the sync began.
    pub(super) fn unread(&self, i: usize) -> u64 {
        self.queue.unread[i]
    }

    fn spawn(&self, tasks: Vec<Task>) -> JoinHandle<(Vec<Outcome>, u64)> {
        let (files, held) = (self.files.clone(), self.held.clone());
        tokio::task::spawn_blocking(move || read_window(&files, tasks, &held))
    }

    /// The files of `tasks` with at least [`NOTED_BYTES`] left to read.
    fn noted(&self, tasks: Option<&[Task]>) -> Vec<PathBuf> {
        tasks
            .unwrap_or_default()
            .iter()
            .filter(|t| queue_unread(&self.files[t.file], t.from.as_ref()) >= NOTED_BYTES)
            .map(|t| self.files[t.file].path.clone())
            .collect()
    }
}

fn as_paths(paths: &[PathBuf]) -> Vec<&Path> {
    paths.iter().map(PathBuf::as_path).collect()
}

/// One file to read in a window, from its stored cursor or where its last part stopped,
/// unless it is set aside (`skip`: why).
struct Task {
    file: usize,
    from: Option<FileCursor>,
    skip: Option<String>,
}

/// What each file has left to read. A session of a database has no file of its own: it
/// counts as an equal share of its database, so a read window holds about
/// [`WINDOW_BYTES`] of a database's rows, not [`WINDOW_FILES`] of its sessions (at
/// OpenCode's size 512 sessions are about 200 MiB of rows, and two windows are held at
/// once). A session read before counts as read: the estimate is for a first read.
pub(super) fn unread_bytes(
    files: &[SourceFile],
    cursors: &HashMap<String, FileCursor>,
) -> Vec<u64> {
    // A database session's path is the database's followed by the session's id.
    let in_database: Vec<Option<&Path>> = files
        .iter()
        .map(|f| f.database().and(f.path.parent()))
        .collect();
    let mut databases: HashMap<&Path, (u64, u64)> = HashMap::new();
    for db in in_database.iter().flatten() {
        databases
            .entry(db)
            .or_insert_with(|| (std::fs::metadata(db).map_or(0, |m| m.len()), 0))
            .1 += 1;
    }
    files
        .iter()
        .zip(&in_database)
        .map(|(f, db)| {
            let size = match db {
                Some(db) => {
                    let (bytes, sessions) = databases[db];
                    bytes / sessions.max(1)
                }
                None => std::fs::metadata(&f.path).map_or(0, |m| m.len()),
            };
            let done = cursors
                .get(&path_key(&f.path))
                .map_or(0, |c| c.offset.min(size));
            size - done
        })
        .collect()
}

/// What is left to read of `f` from `from`.
fn queue_unread(f: &SourceFile, from: Option<&FileCursor>) -> u64 {
    let size = std::fs::metadata(&f.path).map_or(0, |m| m.len());
    size.saturating_sub(from.map_or(0, |c| c.offset))
}

/// The files left to read, cut into windows of about [`WINDOW_BYTES`] of unread data.
struct Windows {
    /// The next file not read yet.
    next: usize,
    /// Each file's unread bytes.
    unread: Vec<u64>,
    /// Files whose read stopped at the window's budget: they open the next window.
    carried: Vec<Task>,
}

impl Windows {
    fn window(
        &mut self,
        files: &[SourceFile],
        cursors: &HashMap<String, FileCursor>,
        quarantine: &Quarantine,
    ) -> Option<Vec<Task>> {
        let mut tasks = std::mem::take(&mut self.carried);
        let mut bytes = tasks.len() as u64 * WINDOW_BYTES;
        while self.next < self.unread.len() && bytes < WINDOW_BYTES && tasks.len() < WINDOW_FILES {
            let path = path_key(&files[self.next].path);
            bytes += self.unread[self.next].min(WINDOW_BYTES);
            tasks.push(Task {
                file: self.next,
                from: cursors.get(&path).cloned(),
                skip: quarantine.set_aside(&files[self.next].path),
            });
            self.next += 1;
        }
        (!tasks.is_empty()).then_some(tasks)
    }
}

/// Read the files of one window on one thread per core, each up to [`WINDOW_BYTES`];
/// outcomes in window order, and the wall time it took.
fn read_window(
    files: &[SourceFile],
    tasks: Vec<Task>,
    held: &HeldDatabases,
) -> (Vec<Outcome>, u64) {
    let started = Instant::now();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = AtomicUsize::new(0);
    let mut all: Vec<(usize, Outcome)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(task) = tasks.get(k) else {
                            break mine;
                        };
                        let f = &files[task.file];
                        let before = task.from.as_ref().map_or(0, |c| c.offset);
                        let out = match &task.skip {
                            Some(why) => ReadOutcome::skipped(f, task.from.as_ref(), why.clone()),
                            None => read_file_part(f, task.from.as_ref(), WINDOW_BYTES, held),
                        };
                        mine.push((k, (task.file, before, out)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("reader thread"))
            .collect()
    });
    all.sort_by_key(|(k, _)| *k);
    let outcomes = all.into_iter().map(|(_, o)| o).collect();
    (outcomes, started.elapsed().as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pond_ingest::discover::classify;
    use pond_ingest::Source;

    fn file(path: PathBuf, source: &str) -> SourceFile {
        classify(path, Source::parse(source))
    }

    /// A window holds about [`WINDOW_BYTES`] of unread data; a file whose read stopped at
    /// the budget opens the next window alone, before the files not read yet.
    #[test]
    fn windows_hold_a_budget_and_a_carried_file_goes_first() {
        let dir = tempfile::tempdir().unwrap();
        let quarantine = Quarantine::load(dir.path());
        let files: Vec<SourceFile> = (0..4)
            .map(|i| file(dir.path().join(format!("s{i}.jsonl")), "claude-code"))
            .collect();
        let mut queue = Windows {
            next: 0,
            unread: vec![40 << 20, 10 << 20, 30 << 20, 1],
            carried: Vec::new(),
        };
        let cursors = HashMap::new();
        let window = |queue: &mut Windows| {
            queue
                .window(&files, &cursors, &quarantine)
                .map(|tasks| tasks.iter().map(|t| t.file).collect::<Vec<_>>())
        };
        assert_eq!(window(&mut queue), Some(vec![0]));
        queue.carried = vec![Task {
            file: 0,
            from: Some(FileCursor::default()),
            skip: None,
        }];
        assert_eq!(window(&mut queue), Some(vec![0]));
        assert_eq!(window(&mut queue), Some(vec![1, 2]));
        assert_eq!(window(&mut queue), Some(vec![3]));
        assert_eq!(window(&mut queue), None);
    }

    #[test]
    fn a_database_session_counts_as_its_share_of_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("opencode.db");
        std::fs::write(&db, vec![0u8; 3000]).unwrap();
        let log = dir.path().join("s.jsonl");
        std::fs::write(&log, vec![b'x'; 700]).unwrap();
        let files = vec![
            file(db.join("ses_a"), "opencode"),
            file(db.join("ses_b"), "opencode"),
            file(db.join("ses_c"), "opencode"),
            file(log.clone(), "claude-code"),
        ];
        let mut cursors = HashMap::new();
        assert_eq!(unread_bytes(&files, &cursors), [1000, 1000, 1000, 700]);
        // Read before: nothing is estimated left (a grown session is not known until read).
        let read = |offset| FileCursor {
            offset,
            ..FileCursor::default()
        };
        cursors.insert(path_key(&db.join("ses_b")), read(4000));
        cursors.insert(path_key(&log), read(200));
        assert_eq!(unread_bytes(&files, &cursors), [1000, 0, 1000, 500]);
    }
}
