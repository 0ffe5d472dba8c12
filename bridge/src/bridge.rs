//! `pond mcp` as a bridge: the MCP host's stdio joined to the store's resident server
//! (`pond serve`), which it starts when none runs. The bridge opens no store and loads no
//! heavy library: it copies lines, and remembers just enough of them to survive the
//! server's death: the client's `initialize` and `notifications/initialized` (replayed to
//! a new server, whose answer to the replayed `initialize` is swallowed) and the ids of the
//! requests in flight (each answered with an error that says to retry).
//!
//! Starting is serialized by a lock beside the socket, so bridges started at the same
//! instant start one server.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::rendezvous as socket;

/// The id the bridge gives a replayed `initialize`, so that its answer can be swallowed.
const REPLAY_ID: &str = "pond-bridge-replay";
/// How long a started server may take to listen.
const START_WAIT: Duration = Duration::from_secs(20);
/// Give up after this many server restarts within a minute.
const MAX_RESTARTS: usize = 5;
/// The longest message the bridge passes on: a longer one is answered with an error and
/// not kept (the server would drop it unanswered).
const MAX_LINE: usize = 16 << 20;
/// The server's log is rotated past this size.
const LOG_KEEP: u64 = 8 << 20;

/// How to reach (and start) the store's server.
pub struct Bridge {
    pub socket: PathBuf,
    /// Where a started server logs.
    pub log: PathBuf,
    /// `pond` and its arguments for `pond … serve …`.
    pub exe: PathBuf,
    pub serve_args: Vec<OsString>,
}

/// Just what the bridge reads of a message.
#[derive(Deserialize)]
struct Peek {
    id: Option<serde_json::Value>,
    method: Option<String>,
}

#[derive(Default)]
struct Session {
    initialize: Option<serde_json::Value>,
    initialized: Option<String>,
    /// Ids (as JSON text) of the client's requests not yet answered.
    in_flight: HashSet<String>,
}

impl Bridge {
    /// Connect to the running server, or start one and connect.
    ///
    /// Nothing is sent before the socket's folder is known to be this user's alone and the
    /// process that answers to run as this user: another local user can neither stand in
    /// for the server nor read what the agent asks.
    pub fn connect(&self) -> Result<UnixStream, String> {
        let dir = self.socket.parent().unwrap_or(Path::new("."));
        socket::private_dir(dir)?;
        socket::refuse_folder(&self.socket)?;
        if let Ok(s) = self.reach()? {
            return Ok(s);
        }
        let lock_path = socket::with_suffix(&self.socket, ".start");
        let lock = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
        lock.lock().map_err(|e| e.to_string())?;
        // Another bridge may have started it while this one waited.
        if let Ok(s) = self.reach()? {
            return Ok(s);
        }
        if socket::running(&self.socket).is_none() {
            self.start()?;
        }
        let since = Instant::now();
        loop {
            match self.reach()? {
                Ok(s) => return Ok(s),
                Err(e) if since.elapsed() > START_WAIT => {
                    return Err(format!(
                        "the pond server did not listen on {} within {START_WAIT:?} ({e}); see {}",
                        self.socket.display(),
                        self.log.display()
                    ))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// A connection to the server at the socket (inside: why none, when nothing listens
    /// there yet), or an error when what listens there is not this user's: never talked to.
    fn reach(&self) -> Result<std::io::Result<UnixStream>, String> {
        let s = match UnixStream::connect(&self.socket) {
            Ok(s) => s,
            Err(e) => return Ok(Err(e)),
        };
        socket::peer_is_me(&s)
            .map_err(|e| format!("refusing the server at {}: {e}", self.socket.display()))?;
        Ok(Ok(s))
    }

    /// Become `pond-bridge` (the binary beside `pond`) with this bridge's settings; returns
    /// only if that cannot be done, saying why.
    pub fn exec(&self) -> String {
        let Some(dir) = self.exe.parent() else {
            return "no folder for pond-bridge".into();
        };
        let small = dir.join("pond-bridge");
        if !small.is_file() {
            return format!("{} is missing", small.display());
        }
        let e = std::process::Command::new(&small)
            .arg(&self.socket)
            .arg(&self.log)
            .arg(&self.exe)
            .args(&self.serve_args)
            .exec();
        format!("cannot run {}: {e}", small.display())
    }

    /// `pond serve` detached: its own session, no terminal, its log in a file, and not this
    /// process's child. `pond mcp` starts the server and then becomes `pond-bridge` (exec),
    /// which knows nothing of the child: a server it started would, once it exited, stay a
    /// zombie for as long as that agent's bridge lived. So the server is started through a
    /// child that forks it and exits at once: the server is then the child of init (or of
    /// the nearest subreaper), which reaps it.
    fn start(&self) -> Result<(), String> {
        if let Some(dir) = self.log.parent() {
            socket::private_dir(dir)?;
        }
        rotate(&self.log);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| format!("cannot open {}: {e}", self.log.display()))?;
        let mut cmd = std::process::Command::new(&self.exe);
        cmd.args(&self.serve_args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(log);
        // SAFETY: between fork and exec only async-signal-safe calls run (setsid, fork,
        // _exit), touching no memory of the parent. The child forked here is single-threaded.
        unsafe {
            cmd.pre_exec(|| {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                match nix::unistd::fork().map_err(std::io::Error::from)? {
                    // The go-between exits at once; its child goes on to exec the server.
                    nix::unistd::ForkResult::Parent { .. } => nix::libc::_exit(0),
                    nix::unistd::ForkResult::Child => Ok(()),
                }
            });
        }
        // `spawn` returns once the server has exec'd (or says why it could not).
        let mut go_between = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.exe.display()))?;
        let _ = go_between.wait();
        Ok(())
    }

    /// Join stdin/stdout to the server on `first` until the client closes stdin.
    pub fn run(&self, first: UnixStream) -> Result<(), String> {
        let writer = Arc::new(Mutex::new(first.try_clone().map_err(|e| e.to_string())?));
        let session = Arc::new(Mutex::new(Session::default()));
        let closing = Arc::new(std::sync::atomic::AtomicBool::new(false));
        {
            let (writer, session, closing) = (writer.clone(), session.clone(), closing.clone());
            std::thread::spawn(move || upstream(&writer, &session, &closing));
        }
        let mut reader = BufReader::new(first);
        let mut restarts: Vec<Instant> = Vec::new();
        let stdout = std::io::stdout();
        let mut line = String::new();
        loop {
            line.clear();
            let read = reader.read_line(&mut line);
            if matches!(read, Ok(n) if n > 0) {
                deliver(&line, &session, &mut stdout.lock());
                continue;
            }
            if closing.load(std::sync::atomic::Ordering::SeqCst) {
                return Ok(());
            }
            // The server is gone: answer what was in flight, start another, replay the hello.
            let mut w = writer.lock().expect("writer lock");
            let mut s = session.lock().expect("session lock");
            {
                let mut out = stdout.lock();
                for id in s.in_flight.drain() {
                    let _ = writeln!(out, "{}", retry_error(&id));
                }
                let _ = out.flush();
            }
            let (fresh, fresh_reader) = self.reopen(&s, &mut restarts)?;
            drop(s);
            *w = fresh;
            drop(w);
            reader = fresh_reader;
        }
    }

    /// A connection to a new server that has answered the client's replayed `initialize`
    /// (a connection a dying server accepted ends before that, and is made again).
    fn reopen(
        &self,
        s: &Session,
        restarts: &mut Vec<Instant>,
    ) -> Result<(UnixStream, BufReader<UnixStream>), String> {
        loop {
            restarts.retain(|t| t.elapsed() < Duration::from_secs(60));
            if restarts.len() >= MAX_RESTARTS {
                return Err(format!(
                    "the pond server stopped {MAX_RESTARTS} times in a minute; see {}",
                    self.log.display()
                ));
            }
            restarts.push(Instant::now());
            let fresh = self.connect()?;
            let mut reader = BufReader::new(fresh.try_clone().map_err(|e| e.to_string())?);
            let Some(init) = &s.initialize else {
                return Ok((fresh, reader));
            };
            let mut replay = init.clone();
            replay["id"] = REPLAY_ID.into();
            if writeln!(&fresh, "{replay}").is_err() {
                continue;
            }
            let mut line = String::new();
            let answered = loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(n) if n > 0 => {}
                    _ => break false,
                }
                let answer = serde_json::from_str::<Peek>(&line).is_ok_and(|p| {
                    p.method.is_none() && p.id.as_ref().and_then(|i| i.as_str()) == Some(REPLAY_ID)
                });
                if answer {
                    break true;
                }
                // Anything else the server says first goes to the client.
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(line.as_bytes());
                let _ = out.flush();
            };
            if !answered {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            if let Some(done) = &s.initialized {
                let _ = writeln!(&fresh, "{}", done.trim_end());
            }
            return Ok((fresh, reader));
        }
    }
}

/// The server's log grows by every start: past [`LOG_KEEP`] it is moved to `serve.log.1`
/// (replacing the one before) and a new one begun.
fn rotate(log: &Path) {
    if std::fs::metadata(log).is_ok_and(|m| m.len() > LOG_KEEP) {
        let _ = std::fs::rename(log, socket::with_suffix(log, ".1"));
    }
}

/// One message from the server to the client; an answer takes its id out of flight.
fn deliver(line: &str, session: &Mutex<Session>, out: &mut impl Write) {
    if let Ok(Peek {
        id: Some(id),
        method: None,
    }) = serde_json::from_str::<Peek>(line)
    {
        session
            .lock()
            .expect("session lock")
            .in_flight
            .remove(&id.to_string());
    }
    let _ = out.write_all(line.as_bytes());
    let _ = out.flush();
}

/// The client's messages to the server, a line each; remembers the hello and what is in
/// flight. At the end of stdin, the server's side is closed for writing.
fn upstream(
    writer: &Mutex<UnixStream>,
    session: &Mutex<Session>,
    closing: &std::sync::atomic::AtomicBool,
) {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        if bytes.capacity() > 1 << 20 {
            // A large request's buffer is not kept for the session's life.
            bytes = Vec::new();
        }
        let line = match read_message(&mut input, &mut bytes) {
            Message::End => break,
            Message::Line(line) => line,
            Message::TooLong(id) => {
                if let Some(id) = id {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "{}", too_long_error(&id));
                    let _ = out.flush();
                }
                continue;
            }
            // Not UTF-8, so not JSON: no request to answer, and no reason to stop.
            Message::NotText => continue,
        };
        if line.trim().is_empty() {
            continue;
        }
        // The writer first, then the session: the order the restart takes them in, so a
        // request is either answered by the old server's error or sent to the new one.
        let w = writer.lock().expect("writer lock");
        if let Ok(p) = serde_json::from_str::<Peek>(line) {
            let mut s = session.lock().expect("session lock");
            match (p.method.as_deref(), &p.id) {
                (Some("initialize"), _) => s.initialize = serde_json::from_str(line).ok(),
                (Some("notifications/initialized"), _) => s.initialized = Some(line.to_owned()),
                _ => {}
            }
            if let (Some(_), Some(id)) = (&p.method, &p.id) {
                s.in_flight.insert(id.to_string());
            }
        }
        // A failed write: the server died; the reader restarts it and answers in flight.
        let _ = (&*w).write_all(line.as_bytes());
    }
    closing.store(true, std::sync::atomic::Ordering::SeqCst);
    let w = writer.lock().expect("writer lock");
    let _ = w.shutdown(std::net::Shutdown::Write);
}

/// One line the client sent.
enum Message<'a> {
    Line(&'a str),
    /// Over [`MAX_LINE`]: the rest was read and dropped; the request's id if its first bytes
    /// say it.
    TooLong(Option<String>),
    NotText,
    End,
}

/// The next line of `input` into `buf`, read in bounded steps: a line over [`MAX_LINE`] is
/// read to its end but not kept.
fn read_message<'a>(input: &mut impl BufRead, buf: &'a mut Vec<u8>) -> Message<'a> {
    let mut dropped = false;
    loop {
        let (done, used) = match input.fill_buf() {
            Ok([]) => {
                if buf.is_empty() && !dropped {
                    return Message::End;
                }
                (true, 0)
            }
            Ok(chunk) => match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    if !dropped {
                        buf.extend_from_slice(&chunk[..=i]);
                    }
                    (true, i + 1)
                }
                None => {
                    if !dropped {
                        buf.extend_from_slice(chunk);
                    }
                    (false, chunk.len())
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Message::End,
        };
        input.consume(used);
        if !dropped && buf.len() > MAX_LINE {
            dropped = true;
            // What the first bytes say of the id; the rest is not kept.
            buf.truncate(4096);
        }
        if done {
            break;
        }
    }
    if dropped {
        return Message::TooLong(leading_id(buf));
    }
    match std::str::from_utf8(buf) {
        Ok(line) => Message::Line(line),
        Err(_) => Message::NotText,
    }
}

/// The `"id"` of a JSON-RPC message from its first bytes, as JSON text (a number or a
/// string), when it stands there.
fn leading_id(head: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(head);
    let at = text.find("\"id\"")? + 4;
    let rest = text[at..].trim_start().strip_prefix(':')?.trim_start();
    let end = if let Some(s) = rest.strip_prefix('"') {
        1 + s.find('"')? + 1
    } else {
        rest.find(|c: char| !(c.is_ascii_digit() || c == '-'))
            .unwrap_or(rest.len())
    };
    let id = &rest[..end];
    serde_json::from_str::<serde_json::Value>(id)
        .ok()
        .filter(|v| v.is_string() || v.is_number())
        .map(|v| v.to_string())
}

/// The answer to a request over [`MAX_LINE`].
fn too_long_error(id: &str) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":-32600,\"message\":\"this request is longer than pond accepts ({} MiB); send a shorter one\"}}}}",
        MAX_LINE >> 20
    )
}

/// The answer to a request the server died holding.
fn retry_error(id: &str) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":-32000,\"message\":\"pond's server stopped while answering this request and has been restarted: retry it\"}}}}"
    )
}
