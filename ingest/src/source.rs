//! What a client is to pond (a [`Source`]), what its parser does (`RecordParser`), and
//! one file of it ([`SourceFile`]): the interface every client module implements. The list
//! of clients is `crate::sources`.

use std::path::{Path, PathBuf};

use pond_rows::Client;
use serde_json::Value;

use crate::common::Common;
use crate::model::{FileBatch, Skip};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    pub path: PathBuf,
    pub kind: Option<SourceKind>,
    /// For a Claude subagent file: the parent session id when the layout tells it.
    pub parent_session: Option<String>,
    pub is_subagent: bool,
}

impl SourceFile {
    /// The file's path as rows and skips record it.
    pub(crate) fn key(&self) -> String {
        crate::paths::path_key(&self.path)
    }

    /// The file's name without its extension, as a key (a session id, for the clients
    /// that name a file after its session).
    pub(crate) fn stem(&self) -> String {
        self.path
            .file_stem()
            .map(crate::paths::os_key)
            .unwrap_or_default()
    }

    /// The database this session is read from, when it is a session of one
    /// (`crate::database`): its path is under the database file's and names no file of
    /// its own. A file of the lines such a read makes (a restored copy) is read as lines.
    pub fn database(&self) -> Option<&'static Database> {
        self.kind
            .and_then(|k| k.database)
            .filter(|_| !self.path.is_file())
    }

    /// Start the session of a database's session file (`crate::database`) in `c`: its id
    /// from the path until its row says, its parent from discovery. Whether it is a
    /// subagent's.
    pub(crate) fn start_database_session(&self, c: &mut Common) -> bool {
        if c.session.id.is_empty() {
            c.session.id = self.stem();
        }
        if c.session.parent_id.is_none() {
            c.session.parent_id.clone_from(&self.parent_session);
        }
        self.is_subagent || c.session.parent_id.is_some()
    }

    /// Whether the file is one JSON document of its client ([`Source::documents`]).
    pub(crate) fn is_document(&self) -> bool {
        self.kind.is_some_and(|k| k.document(&self.path))
    }

    /// Whether the file is a plain-text transcript of its client ([`Source::text`]).
    pub(crate) fn is_text(&self) -> bool {
        self.kind.is_some_and(|k| k.text_file(&self.path))
    }

    /// Whether a changed file is read again whole ([`Source::reads_whole`]).
    pub(crate) fn read_whole(&self) -> bool {
        self.kind.is_some_and(|k| k.reads_whole(&self.path))
    }
}

fn is_json(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
}

pub(crate) fn is_txt(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "txt")
}

/// One client: who it is, where its sessions are, how its records are read. Its names
/// (`name`, `aliases`, `agents`) and homes (`home_var`, `home_default`, ...,
/// [`Client::homes`]) are its [`Client`]'s, read through it.
pub struct Source {
    /// Its names and homes, defined in `pond-rows` (the store and the front read them
    /// without the parsers).
    pub client: &'static Client,
    /// The folders under its home that hold its session files; when none of them exists,
    /// the folder given is searched whole (a copy of the files, a test fixture).
    pub layout: &'static [&'static str],
    /// Which files found under its folders are session files (others there are the
    /// client's own state).
    pub transcript: fn(&Path) -> bool,
    /// Whether one record (a parsed line) is this client's.
    pub(crate) sniff: fn(&Value) -> bool,
    /// A parser for one pass over one file.
    pub(crate) parser: fn(&SourceFile, &mut Common) -> Box<dyn RecordParser>,
    /// For a client that keeps its sessions in a database rather than in JSONL files: the
    /// database, whose sessions are read one at a time as if each were a file.
    pub database: Option<&'static Database>,
    /// Whether a session is what its whole file says, not what its lines add up to (a log of
    /// changes to one document): a changed file is read again from its first line, in one
    /// part.
    pub(crate) replayed: bool,
    /// Whether its `.json` session files are each one JSON document (a whole chat, written
    /// again whole as it grows): one record, read again whole when the file changes.
    pub(crate) documents: bool,
    /// Whether its `.txt` session files are transcripts in plain text (Cursor's older agent
    /// transcripts): each line a record as it is, read by [`RecordParser::text_line`], the
    /// file read again whole when it changes (a turn spans lines).
    pub(crate) text: bool,
}

/// A client's database (SQLite) of sessions. Each session is a [`SourceFile`] whose path
/// is the database's path with the session's id under it (`.../opencode.db/ses_1`: a path
/// that is never a file, so nothing of the client's can be mistaken for it), and whose
/// "lines" are the rows read from it, one JSON object per message with its parts (see
/// `crate::database`).
pub struct Database {
    /// The database's file name in the client's home.
    pub file: &'static str,
    /// The folder in the client's home where older builds kept the same sessions as files,
    /// read as the database is (see [`Tree`]).
    pub(crate) tree: Option<Tree>,
    /// The sessions it holds, oldest first.
    pub(crate) sessions: fn(&rusqlite::Connection) -> rusqlite::Result<Vec<DbSession>>,
    /// A session's stamp: how many rows it has and its newest update (ms). A session whose
    /// stamp is what the last read saw is not read again.
    pub(crate) stamp: fn(&rusqlite::Connection, &str) -> rusqlite::Result<Stamp>,
    /// A session's own row, and its messages updated after a time (ms), in order (every
    /// message, when the database keeps no update times: see `timed`).
    pub(crate) rows: fn(&rusqlite::Connection, &str, i64) -> rusqlite::Result<Rows>,
    /// Whether a message's [`Unit::version`] is its update time, so messages not updated
    /// since a read need not be looked at again. Else the version is a digest of the
    /// message's rows, and every message of a changed session is compared with what was read.
    pub(crate) timed: bool,
}

/// Sessions an older build kept as a tree of files (OpenCode's `storage/`), read through an
/// in-memory copy of the database's tables so the same queries serve both. A session of the
/// tree is a [`SourceFile`] at `<folder>/<session id>`; a session that is in the database
/// too is read from the database only.
pub(crate) struct Tree {
    /// The folder's name in the client's home.
    pub folder: &'static str,
    /// The tables made from the folder: every session's own row (`None`), or one session's
    /// rows; with the files that could not be read, as skips.
    pub load: fn(&Path, Option<&str>) -> Result<Loaded, String>,
    /// A session's stamp from its files' names and times alone (how many, the newest), so
    /// an unchanged session costs a listing, not a read: it stands for the
    /// [`Database::stamp`] of a tree's sessions.
    pub stamp: fn(&Path, &str) -> Result<Stamp, String>,
}

/// A session's stamp: how many rows it has and its newest update (ms).
pub(crate) type Stamp = (u64, i64);

/// A connection to the tables a [`Tree`] was read into, and the files that could not be.
pub(crate) type Loaded = (rusqlite::Connection, Vec<Skip>);

/// A message of a session as the database holds it.
pub(crate) struct Unit {
    pub id: String,
    /// Its newest update (ms): the message row's or any of its parts', or, in a database
    /// that keeps no time per message, the session's.
    pub updated: i64,
    /// What a read remembers it by: its update time, or a digest of its rows (see
    /// [`Database::timed`]). A message is read again when its version changes.
    pub version: i64,
    /// Whether the client has finished writing it.
    pub complete: bool,
    /// The message with its parts, as one line of JSON.
    pub line: String,
    /// The bytes of its rows, when they are over [`MAX_LINE_BYTES`](crate::common::MAX_LINE_BYTES):
    /// its line is not built (it is empty), and the message is skipped with the reason.
    pub too_large: Option<u64>,
}

impl Unit {
    /// Whether rows of `bytes` are too large to be made a line: their line would be over
    /// [`MAX_LINE_BYTES`](crate::common::MAX_LINE_BYTES), so they are not read.
    pub fn too_large(bytes: u64) -> bool {
        bytes > crate::common::MAX_LINE_BYTES as u64
    }
}

/// What one look at a session found.
pub(crate) struct Rows {
    /// The session's own row as a line, with its version (its update time, or a digest of
    /// the line): it is read again when that changes (`None`: no such row).
    pub session: Option<(i64, String)>,
    /// Its messages updated after the time asked for, in order.
    pub units: Vec<Unit>,
}

/// A session a [`Database`] lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbSession {
    pub id: String,
    /// The session that started it (a subagent's), when there is one.
    pub parent: Option<String>,
}

/// Which client wrote a file: an entry of [`SOURCES`](crate::sources::SOURCES).
pub type SourceKind = &'static Source;

impl PartialEq for Source {
    fn eq(&self, other: &Source) -> bool {
        self.name == other.name
    }
}

impl Eq for Source {}

/// A client's names read as the client's own: `source.name` is `source.client.name`.
impl std::ops::Deref for Source {
    type Target = Client;

    fn deref(&self) -> &Client {
        self.client
    }
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// A client's parser: one record at a time, in file order, with the pass's shared state.
pub(crate) trait RecordParser: Send {
    /// Handle one record (a JSON object): push its rows into `out`; returns its record type.
    fn line(
        &mut self,
        c: &mut Common,
        line_no: u64,
        v: &Value,
        raw: &str,
        out: &mut FileBatch,
    ) -> Option<String>;

    /// The `source_agent` of the file's session.
    fn source_agent(&self) -> &'static str;

    /// Handle one line of a plain-text transcript ([`Source::text`]; blank lines are not
    /// passed: a gap in the numbers is one): returns its record type.
    fn text_line(
        &mut self,
        _c: &mut Common,
        _line_no: u64,
        _text: &str,
        _out: &mut FileBatch,
    ) -> Option<String> {
        None
    }

    /// After the pass's last record: push the rows that only the whole file makes.
    fn finish(&mut self, _c: &mut Common, _out: &mut FileBatch) {}
}

impl Source {
    /// The `source_agent` of its sessions: its name, or for a subagent's session its first
    /// variant (its name when it has none).
    pub fn agent(&self, subagent: bool) -> &'static str {
        match self.agents.first() {
            Some(sub) if subagent => sub,
            _ => self.name,
        }
    }

    /// Whether discovery takes the file at `path` as one of its sessions: a `.jsonl` file
    /// (or, for a client of documents, a `.json` file; of text transcripts, a `.txt` file)
    /// its [`Source::transcript`] accepts.
    pub fn session_file(&self, path: &Path) -> bool {
        (path.extension().is_some_and(|e| e == "jsonl")
            || self.document(path)
            || self.text_file(path))
            && (self.transcript)(path)
    }

    /// Whether its file at `path` is one JSON document ([`Source::documents`]).
    fn document(&self, path: &Path) -> bool {
        self.documents && is_json(path)
    }

    /// Whether its file at `path` is a plain-text transcript ([`Source::text`]).
    fn text_file(&self, path: &Path) -> bool {
        self.text && is_txt(path)
    }

    /// Whether its file at `path` is read again whole, from its start and in one part, when
    /// it changes: a replayed client's file, a document, or a plain-text transcript.
    pub(crate) fn reads_whole(&self, path: &Path) -> bool {
        self.replayed || self.document(path) || self.text_file(path)
    }

    /// The folders of `dir` that hold session files (see [`Source::layout`]).
    pub fn roots(&self, dir: &Path) -> Vec<PathBuf> {
        if self.layout.iter().any(|l| dir.join(l).is_dir()) {
            self.layout.iter().map(|l| dir.join(l)).collect()
        } else {
            vec![dir.to_path_buf()]
        }
    }
}

/// For [`Source::transcript`]: every file found is a session file.
pub(crate) fn every_file(_: &Path) -> bool {
    true
}
