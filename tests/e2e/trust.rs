//! Who may reach the resident server, and what pond refuses before it does harm: a socket
//! folder or a server of another local user (the tests run as root; the other user is uid
//! 4343 through `setpriv`), folders pond did not make, settings out of range, lines a
//! bridge cannot pass on, calls their client cancelled, and read-only commands on a path
//! that holds no store.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{wait_for, Env};

/// The other local user.
const OTHER_UID: u32 = 4343;

/// A Python the other user can run (a shim under root's home is out of its reach).
fn python() -> &'static str {
    if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

/// A JSON-RPC client over a child's stdio, line by line, that can send any bytes.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    stderr: PathBuf,
}

impl Raw {
    fn start(mut cmd: Command, stderr: PathBuf) -> Raw {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("start pond");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut raw = Raw {
            child,
            stdin,
            lines,
            stderr,
        };
        raw.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "trust-test", "version": "0"}}}),
        );
        raw.answer(0, 60);
        raw.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        raw
    }

    fn send(&mut self, message: &Value) {
        self.send_bytes(format!("{message}\n").as_bytes());
    }

    fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    fn call(&mut self, id: i64, tool: &str, args: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}));
    }

    /// The message answering `id`, within `secs`.
    fn answer(&self, id: i64, secs: u64) -> Value {
        let until = Instant::now() + Duration::from_secs(secs);
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|_| {
                panic!(
                    "no answer to {id} within {secs} s; stderr: {}",
                    std::fs::read_to_string(&self.stderr).unwrap_or_default()
                )
            });
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of a tool answer.
fn text(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// `pond mcp` as a bridge, its sockets under `run`.
fn bridge_cmd(env: &Env, run: &Path) -> Command {
    let mut cmd = env.cmd(&["mcp"]);
    cmd.env("POND_STANDALONE", "false")
        .env("XDG_RUNTIME_DIR", run)
        .env("POND_IDLE_EXIT_SECS", "5");
    cmd
}

/// Where the server of `env`'s store listens under `run`.
fn socket_under(env: &Env, run: &Path) -> PathBuf {
    let root = env.store().canonicalize().unwrap();
    run.join("pond")
        .join(pond_front::rendezvous::socket_name(&root))
}

/// A program listening on `socket` that answers every line as an attacker would and logs
/// every byte it receives to `spy/log` (`spy/ready` once it listens; `spy` is open to
/// all). With `bind_then_drop`, it binds as root and runs (and listens) as the other user;
/// else it runs as the other user from the start.
fn impostor(socket: &Path, spy: &Path, bind_then_drop: bool) -> Child {
    let script = r#"
import os, socket, sys, threading
path, spy, bind_then_drop, uid = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, 0o777)
if bind_then_drop:
    os.setgid(uid); os.setuid(uid)
s.listen(8)
open(os.path.join(spy, "ready"), "w").close()
def serve(c):
    while True:
        data = c.recv(65536)
        if not data:
            break
        with open(os.path.join(spy, "log"), "ab") as f:
            f.write(data)
        for line in data.splitlines():
            c.sendall(b'{"jsonrpc":"2.0","id":0,"result":{"content":[{"type":"text","text":"ATTACKER ANSWER"}]}}\n')
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"#;
    std::fs::create_dir_all(spy).unwrap();
    std::fs::set_permissions(spy, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut cmd = if bind_then_drop {
        Command::new(python())
    } else {
        let mut c = Command::new("setpriv");
        let uid = OTHER_UID.to_string();
        c.args(["--reuid", &uid, "--regid", &uid, "--clear-groups", python()]);
        c
    };
    let child = cmd
        .arg("-c")
        .arg(script)
        .arg(socket)
        .arg(spy)
        .arg(if bind_then_drop { "1" } else { "0" })
        .arg(OTHER_UID.to_string())
        .spawn()
        .expect("python3");
    assert!(
        wait_for(10.0, || spy.join("ready").exists()),
        "the impostor did not listen"
    );
    child
}

/// What the impostor received.
fn received(spy: &Path) -> Vec<u8> {
    std::fs::read(spy.join("log")).unwrap_or_default()
}

fn chown(path: &Path, uid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(uid)).unwrap();
}

fn searched(raw: &mut Raw) -> String {
    raw.call(
        1,
        "pond_search",
        json!({"query": "my private query about the acquisition"}),
    );
    text(&raw.answer(1, 60))
}

#[test]
fn a_socket_folder_made_by_another_user_is_refused_and_nothing_is_sent_there() {
    let env = Env::new();
    env.sync(&env.sources());
    let run = env.dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    // The other user got there first: `pond` under the runtime folder is theirs, open to all.
    let folder = run.join("pond");
    std::fs::create_dir(&folder).unwrap();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o777)).unwrap();
    chown(&folder, OTHER_UID);
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(env.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let spy = env.dir.path().join("spy");
    let mut fake = impostor(&socket_under(&env, &run), &spy, false);

    let mut raw = Raw::start(bridge_cmd(&env, &run), env.dir.path().join("stderr"));
    let answer = searched(&mut raw);
    assert!(!answer.contains("ATTACKER"), "{answer}");
    assert!(
        raw.stderr().contains("belongs to uid 4343"),
        "{}",
        raw.stderr()
    );
    drop(raw);
    let _ = fake.kill();
    let _ = fake.wait();
    assert_eq!(received(&spy), b"", "bytes reached the impostor");
    // pond changed nothing it did not make.
    let meta = std::fs::metadata(&folder).unwrap();
    assert_eq!((meta.mode() & 0o7777, meta.uid()), (0o777, OTHER_UID));
}

#[test]
fn a_server_of_another_user_in_our_own_folder_is_never_sent_a_byte() {
    let env = Env::new();
    env.sync(&env.sources());
    let run = env.dir.path().join("run");
    std::fs::create_dir_all(run.join("pond")).unwrap();
    std::fs::set_permissions(run.join("pond"), std::fs::Permissions::from_mode(0o700)).unwrap();
    // The other user may pass through to its spy folder, no further.
    std::fs::set_permissions(env.dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let spy = env.dir.path().join("spy");
    // Bound in our folder (as root could), listening as the other user: SO_PEERCRED says so.
    let mut fake = impostor(&socket_under(&env, &run), &spy, true);

    let mut raw = Raw::start(bridge_cmd(&env, &run), env.dir.path().join("stderr"));
    let answer = searched(&mut raw);
    assert!(!answer.contains("ATTACKER"), "{answer}");
    assert!(
        raw.stderr().contains("runs as uid 4343"),
        "{}",
        raw.stderr()
    );
    drop(raw);
    let _ = fake.kill();
    let _ = fake.wait();
    assert_eq!(received(&spy), b"", "bytes reached the impostor");
}

#[test]
fn the_server_answers_only_its_own_user() {
    let env = Env::new();
    env.sync(&env.sources());
    let dir = env.dir.path().join("sock");
    std::fs::create_dir(&dir).unwrap();
    // Others may pass through (not write): the folder is still pond's to use.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o711)).unwrap();
    std::fs::set_permissions(env.dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let socket = dir.join("pond.sock");
    let mut server = env
        .cmd(&["serve", "--socket", socket.to_str().unwrap()])
        .env("POND_IDLE_EXIT_SECS", "30")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_for(20.0, || socket.exists()),
        "the server did not listen"
    );
    // Even were the socket open to everyone, another user gets no answer.
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let script = r#"
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(20)
s.connect(sys.argv[1])
init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}}
try:
    # The server may close the connection before the request is even sent.
    s.sendall((json.dumps(init) + "\n").encode())
    data = s.recv(65536)
except OSError:
    data = b""
print("ANSWERED" if data else "SILENT")
"#;
    let as_user = |uid: Option<u32>| {
        let mut cmd = match uid {
            Some(uid) => {
                let mut c = Command::new("setpriv");
                let uid = uid.to_string();
                c.args(["--reuid", &uid, "--regid", &uid, "--clear-groups", python()]);
                c
            }
            None => Command::new(python()),
        };
        let out = cmd.arg("-c").arg(script).arg(&socket).output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    assert_eq!(as_user(Some(OTHER_UID)), "SILENT");
    assert_eq!(as_user(None), "ANSWERED");
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn serve_refuses_a_socket_folder_others_can_write_and_changes_no_mode() {
    let env = Env::new();
    env.sync(&env.sources());
    let shared = env.dir.path().join("faketmp");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let socket = shared.join("pond.sock");
    let err = env.fails(&["serve", "--socket", socket.to_str().unwrap()]);
    assert!(err.contains("can be written by other users"), "{err}");
    let mode = std::fs::metadata(&shared).unwrap().mode() & 0o7777;
    assert_eq!(mode, 0o1777, "pond changed a folder it did not make");
    assert!(!socket.exists());
}

#[test]
fn a_folder_at_the_socket_path_is_said_at_once() {
    let env = Env::new();
    env.sync(&env.sources());
    let run = env.dir.path().join("run");
    let socket = socket_under(&env, &run);
    std::fs::create_dir_all(&socket).unwrap();
    std::fs::set_permissions(run.join("pond"), std::fs::Permissions::from_mode(0o700)).unwrap();
    let t = Instant::now();
    let mut raw = Raw::start(bridge_cmd(&env, &run), env.dir.path().join("stderr"));
    // Served all the same (in the bridge's own process), without waiting for a server.
    assert!(!searched(&mut raw).is_empty());
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    assert!(raw.stderr().contains("is a folder"), "{}", raw.stderr());
    let err = env.fails(&["serve", "--socket", socket.to_str().unwrap()]);
    assert!(err.contains("is a folder"), "{err}");
}

#[test]
fn the_bridge_skips_what_is_not_text_and_answers_what_is_too_long() {
    let env = Env::new();
    env.sync(&env.sources());
    let run = env.dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    // A server's log past its size is set aside when a bridge starts the server.
    let log = env.store().join("serve.log");
    std::fs::write(&log, vec![b'x'; 9 << 20]).unwrap();
    let mut raw = Raw::start(bridge_cmd(&env, &run), env.dir.path().join("stderr"));
    assert_eq!(
        std::fs::metadata(env.store().join("serve.log.1"))
            .unwrap()
            .len(),
        9 << 20
    );
    assert!(std::fs::metadata(&log).unwrap().len() < 1 << 20);

    // Latin-1, then bytes that are no text at all: passed over, the session goes on.
    raw.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"pond_search\",\"arguments\":{\"query\":\"caf\xe9\"}}}\n\xff\xfe garbage\n");
    raw.call(6, "pond_sql", json!({"query": "SELECT 1 AS one"}));
    assert!(text(&raw.answer(6, 60)).contains('1'));

    // A request longer than pond takes: an error for its id, not silence.
    let mut long = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pond_search","arguments":{"query":""#.to_vec();
    long.extend(std::iter::repeat_n(b'a', 17 << 20));
    long.extend(b"\"}}}\n");
    raw.send_bytes(&long);
    let answer = raw.answer(7, 60);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than pond accepts"),
        "{answer}"
    );
    raw.call(8, "pond_sql", json!({"query": "SELECT 2 AS two"}));
    assert!(text(&raw.answer(8, 60)).contains('2'));
}

#[test]
fn a_cancelled_call_gives_up_its_turn_and_its_worker() {
    let env = Env::new();
    env.sync(&env.sources());
    let mut raw = Raw::start(env.cmd(&["mcp"]), env.dir.path().join("stderr"));
    raw.call(
        2,
        "pond_sql",
        json!({"query": "SELECT count(*) FROM generate_series(1, 50000000000)", "timeout_seconds": 120}),
    );
    std::thread::sleep(Duration::from_millis(1500));
    raw.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "the user pressed escape"}}),
    );
    // The same client's next query (one SQL query at a time per client) is not held up.
    let t = Instant::now();
    raw.call(3, "pond_sql", json!({"query": "SELECT 1 AS one"}));
    assert!(text(&raw.answer(3, 60)).contains('1'));
    assert!(
        t.elapsed() < Duration::from_secs(15),
        "waited {:?} behind a cancelled query",
        t.elapsed()
    );
}

#[test]
fn settings_out_of_range_are_refused_by_name() {
    let env = Env::new();
    env.sync(&env.sources());
    let err = env.fails(&["--sql-memory-mib", "18014398509481984", "sql", "SELECT 1"]);
    assert!(
        err.contains("--sql-memory-mib") && err.contains("out of range"),
        "{err}"
    );
    let err = env.fails(&[
        "--worker-idle-secs",
        "18446744073709551615",
        "sql",
        "SELECT 1",
    ]);
    assert!(err.contains("--worker-idle-secs"), "{err}");
    let config = env.dir.path().join("config.toml");
    std::fs::write(&config, "[cache]\nindex_mib = 17592186044416\n").unwrap();
    let err = env.fails(&["--config", config.to_str().unwrap(), "status"]);
    assert!(err.contains("cache.index_mib"), "{err}");
    // At the top of each range, still fine.
    env.ok(&["--worker-idle-secs", "31536000", "sql", "SELECT 1"]);
}

#[test]
fn read_only_commands_make_no_store_at_a_mistyped_path() {
    let env = Env::new();
    let typo = env.dir.path().join("typo");
    let store = typo.join("store");
    for args in [vec!["search", "x"], vec!["status"], vec!["sql", "SELECT 1"]] {
        let out = Command::new(crate::common::pond_bin())
            .arg("--store")
            .arg(&store)
            .args(&args)
            .env("HOME", env.dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(err.contains("no store at"), "{args:?}: {err}");
        assert!(!typo.exists(), "{args:?} made {}", typo.display());
    }
}

#[test]
fn sync_of_a_missing_path_or_of_no_sessions_fails_clearly() {
    let env = Env::new();
    let missing = env.dir.path().join("nowhere");
    let err = env.fails(&["sync", "--path", missing.to_str().unwrap()]);
    assert!(err.contains("does not exist"), "{err}");
    let notes = env.dir.path().join("notes.jsonl");
    std::fs::write(&notes, "{\"a\": 1}\n{\"b\": 2}\n").unwrap();
    let err = env.fails(&["sync", "--path", notes.to_str().unwrap()]);
    assert!(err.contains("holds no session"), "{err}");
}

#[test]
fn restore_into_a_dangling_link_says_what_is_wrong() {
    let env = Env::new();
    env.sync(&env.sources());
    let out = env.dir.path().join("restored");
    std::os::unix::fs::symlink(env.dir.path().join("gone"), &out).unwrap();
    let err = env.fails(&[
        "restore",
        "11111111-1111-4111-8111-111111111111",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        err.contains("link to a folder that does not exist"),
        "{err}"
    );
}

/// A Python client of the server's socket: `sessions` MCP sessions from this one process,
/// each sending `query`; with `wait`, prints the seconds until the first answer.
const SOCKET_CLIENT: &str = r#"
import json, socket, sys, time
path, sessions, query, wait = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"
def rpc(s, msg):
    s.sendall((json.dumps(msg) + "\n").encode())
def line(f):
    return json.loads(f.readline())
conns = []
for i in range(sessions):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    f = s.makefile("r")
    rpc(s, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "p", "version": "0"}}})
    line(f)
    rpc(s, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    conns.append((s, f))
t = time.time()
for s, f in conns:
    rpc(s, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "pond_sql", "arguments": {"query": query, "timeout_seconds": 60}}})
if wait:
    line(conns[0][1])
    print(round(time.time() - t, 2), flush=True)
else:
    print("sent", flush=True)
    time.sleep(120)
"#;

#[test]
fn one_peer_with_many_sessions_leaves_a_sql_worker_to_the_others() {
    let env = Env::new();
    env.sync(&env.sources());
    let dir = env.dir.path().join("sock");
    std::fs::create_dir(&dir).unwrap();
    let socket = dir.join("pond.sock");
    let mut server = env
        .cmd(&["serve", "--socket", socket.to_str().unwrap()])
        .env("POND_IDLE_EXIT_SECS", "60")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_for(20.0, || socket.exists()),
        "the server did not listen"
    );
    // One process, three sessions, three long queries: with a SQL turn per session they
    // took both SQL workers.
    let mut greedy = Command::new(python())
        .arg("-c")
        .arg(SOCKET_CLIENT)
        .arg(&socket)
        .arg("3")
        .arg("SELECT count(*) FROM generate_series(1, 50000000000)")
        .arg("0")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    BufReader::new(greedy.stdout.take().unwrap())
        .read_line(&mut said)
        .unwrap();
    assert_eq!(said.trim(), "sent");
    std::thread::sleep(Duration::from_secs(2));
    let other = Command::new(python())
        .arg("-c")
        .arg(SOCKET_CLIENT)
        .arg(&socket)
        .arg("1")
        .arg("SELECT 1 AS one")
        .arg("1")
        .output()
        .unwrap();
    let secs: f64 = String::from_utf8_lossy(&other.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&other.stderr)));
    let _ = greedy.kill();
    let _ = greedy.wait();
    let _ = server.kill();
    let _ = server.wait();
    assert!(secs < 15.0, "another peer's SELECT 1 waited {secs} s");
}
