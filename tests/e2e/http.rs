//! `pond serve --http`: MCP over streamable HTTP from a loopback client, and what must be
//! refused: a request without the token (from any account of the machine), a foreign `Host`
//! or `Origin` (DNS rebinding), a non-loopback address without `--allow-remote` and a token,
//! a token on the command line; and what one caller can hold: connections, half-sent
//! requests, large bodies, sessions.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{alive, signal, wait_for, Env};

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

/// A running `pond serve --http`: its process, URL and the token its requests carry.
struct Server {
    child: Child,
    url: String,
    token: String,
}

impl Server {
    /// `Authorization: Bearer TOKEN`.
    fn auth(&self) -> (&'static str, String) {
        ("Authorization", format!("Bearer {}", self.token))
    }
}

/// `pond serve --http ADDR` with its socket under `run` (and no POND_HTTP_TOKEN unless in
/// `vars`); the token is the one `pond status` shows.
fn serve(env: &Env, run: &Path, args: &[&str], vars: &[(&str, &str)]) -> Server {
    let mut child = env
        .cmd(&["serve"])
        .args(args)
        .env("XDG_RUNTIME_DIR", run)
        .env_remove("POND_HTTP_TOKEN")
        .envs(vars.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut url = None;
    let mut text = String::new();
    let up = wait_for(20.0, || {
        let out = env
            .cmd(&["status"])
            .env("XDG_RUNTIME_DIR", run)
            .output()
            .unwrap();
        text = String::from_utf8_lossy(&out.stdout).into_owned();
        url = text
            .split([',', ' ', '\n'])
            .find(|w| w.starts_with("http://"))
            .map(String::from);
        url.is_some() || child.try_wait().unwrap().is_some()
    });
    let Some(url) = url.filter(|_| up) else {
        let _ = child.kill();
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        panic!("the server did not serve HTTP: {err}");
    };
    let status = |args: &[&str]| {
        let out = env
            .cmd(&["status"])
            .args(args)
            .env("XDG_RUNTIME_DIR", run)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let json: Value = serde_json::from_str(&status(&["--json", "--reveal-secrets"])).unwrap();
    let token = json["server"]["http_token"]
        .as_str()
        .expect("pond status --json shows the owner the HTTP token")
        .to_owned();
    let shown = status(&["--reveal-secrets"]);
    assert!(
        shown.contains(&format!("server HTTP token: {token}")),
        "{shown}"
    );
    // Masked like any secret otherwise, so that it stays out of what an agent reads.
    assert!(
        text.contains("server HTTP token: ") && !text.contains(&token),
        "{text}"
    );
    Server { child, url, token }
}

/// The `host:port` of `http://host:port/mcp`.
fn authority(url: &str) -> &str {
    url.trim_start_matches("http://").trim_end_matches("/mcp")
}

struct Answer {
    status: u16,
    head: String,
    /// The JSON-RPC message of the body (a JSON body or an SSE event's data), if any.
    message: Option<Value>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// One HTTP/1.1 request to `url`'s server with `headers` (a `Host` of the URL's unless
/// given), read until the JSON-RPC answer or the end.
fn request(url: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut s = TcpStream::connect(authority(url)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {}\r\n", authority(url)));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!(
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    let started = Instant::now();
    loop {
        let n = s.read(&mut buf).unwrap_or(0);
        raw.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&raw).into_owned();
        let answered = text
            .split_once("\r\n\r\n")
            .is_some_and(|(_, b)| message(b).is_some_and(|m| m.get("id").is_some()));
        if n == 0 || answered || started.elapsed() > Duration::from_secs(10) {
            break;
        }
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Answer {
        status,
        head: head.to_owned(),
        message: message(body),
        body: body.to_owned(),
    }
}

/// The JSON-RPC message in a body: the body itself, or an SSE event's `data:` line.
fn message(body: &str) -> Option<Value> {
    serde_json::from_str(body.trim()).ok().or_else(|| {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("jsonrpc").is_some())
    })
}

fn rpc(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn initialize() -> String {
    rpc(
        1,
        "initialize",
        json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "pond-test", "version": "0"}
        }),
    )
}

/// A session: initialize, then the initialized notification; its id and protocol version.
fn session(url: &str, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let init = request(url, "POST", "/mcp", extra, &initialize());
    assert_eq!(init.status, 200, "{}\n{}", init.head, init.body);
    let m = init.message.as_ref().expect("an initialize answer");
    assert_eq!(m["result"]["serverInfo"]["name"], "pond", "{m}");
    let id = init
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let mut headers: Vec<(String, String)> = extra
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    headers.push(("Mcp-Session-Id".into(), id));
    headers.push(("MCP-Protocol-Version".into(), "2025-06-18".into()));
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let acked = request(url, "POST", "/mcp", &borrowed(&headers), &note);
    assert_eq!(acked.status, 202, "{}", acked.head);
    headers
}

fn borrowed(h: &[(String, String)]) -> Vec<(&str, &str)> {
    h.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

fn tool(url: &str, headers: &[(String, String)], id: u64, name: &str, args: Value) -> Value {
    let body = rpc(id, "tools/call", json!({"name": name, "arguments": args}));
    let a = request(url, "POST", "/mcp", &borrowed(headers), &body);
    assert_eq!(a.status, 200, "{}\n{}", a.head, a.body);
    a.message.expect("a tools/call answer")
}

fn stop(server: Server) {
    let mut child = server.child;
    let pid = child.id();
    signal(pid, nix::sys::signal::Signal::SIGTERM);
    assert!(wait_for(10.0, || !alive(pid) || child.try_wait().unwrap().is_some()));
    let _ = child.wait();
}

#[test]
fn a_loopback_http_client_searches_and_foreign_hosts_and_origins_are_refused() {
    let env = Env::new();
    env.sync(&env.sources());
    let run = tempfile::tempdir().unwrap();
    let server = serve(&env, run.path(), &["--http", "127.0.0.1:0"], &[]);
    let url = server.url.clone();
    let (k, v) = server.auth();
    let auth = [(k, v.as_str())];

    let s = session(&url, &auth);
    let hit = tool(&url, &s, 2, "pond_search", json!({"query": "tokenizer"}));
    crate::inspector::found_the_tokenizer_session(&hit["result"]);
    // A caller's mistake is a tool error, over HTTP as well.
    let bad = tool(
        &url,
        &s,
        3,
        "pond_sql",
        json!({"query": "DROP TABLE messages"}),
    );
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    // The session is one of the server's clients.
    let status = request(
        &url,
        "POST",
        "/mcp",
        &borrowed(&s),
        &rpc(4, "resources/read", json!({"uri": "pond://status"})),
    );
    let text = status.message.unwrap()["result"]["contents"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("client (http)"), "{text}");
    // The token is the owner's `pond status`'s, not in an answer an agent keeps.
    assert!(!text.contains(&server.token), "{text}");

    // DNS rebinding: a page of evil.example resolving to 127.0.0.1, or calling from its
    // origin, is refused before anything is read.
    let port = authority(&url).rsplit(':').next().unwrap().to_owned();
    let evil_host = format!("evil.example:{port}");
    let foreign = request(
        &url,
        "POST",
        "/mcp",
        &[auth[0], ("Host", &evil_host)],
        &initialize(),
    );
    assert_eq!(foreign.status, 403, "{}", foreign.head);
    assert!(
        foreign.body.contains("--allow-host NAME"),
        "{}",
        foreign.body
    );
    let origin = request(
        &url,
        "POST",
        "/mcp",
        &[auth[0], ("Origin", "http://evil.example")],
        &initialize(),
    );
    assert_eq!(origin.status, 403, "{}", origin.head);
    assert!(origin.message.is_none());
    // A page served from loopback (a local web UI) may call.
    let local = request(
        &url,
        "POST",
        "/mcp",
        &[auth[0], ("Origin", "http://localhost:5173")],
        &initialize(),
    );
    assert_eq!(local.status, 200, "{}", local.head);
    let elsewhere = request(&url, "POST", "/other", &auth, &initialize());
    assert_eq!(elsewhere.status, 404);
    // A session ended on request: 204 (clients such as the Python SDK's take 200 or 204).
    let ended = request(&url, "DELETE", "/mcp", &borrowed(&s), "");
    assert_eq!(ended.status, 204, "{}\n{}", ended.head, ended.body);
    let gone = request(
        &url,
        "POST",
        "/mcp",
        &borrowed(&s),
        &rpc(5, "tools/list", json!({})),
    );
    assert_eq!(gone.status, 404, "{}", gone.head);
    stop(server);
    assert!(
        std::fs::read_dir(run.path().join("pond"))
            .map(|d| d.count())
            .unwrap_or(0)
            == 0,
        "the stopped server left files"
    );
}

/// The MCP Inspector that sends headers (`--header`, from 0.16): the one `npx` has cached
/// under the bare name may be older.
const INSPECTOR_WITH_HEADERS: &str = "@modelcontextprotocol/inspector@0.17.2";

#[test]
fn the_mcp_inspector_searches_over_http() {
    let env = Env::new();
    env.sync(&env.sources());
    let run = tempfile::tempdir().unwrap();
    let server = serve(&env, run.path(), &["--http", "127.0.0.1:0"], &[]);
    let header = format!("Authorization: Bearer {}", server.token);
    let out = Command::new("npx")
        .args(["-y", INSPECTOR_WITH_HEADERS, "--cli", &server.url])
        .args(["--transport", "http", "--header", &header])
        .args(crate::inspector::SEARCH_TOKENIZER)
        .output();
    match out {
        Err(e) => {
            eprintln!("skipped: npx cannot run ({e}); install node to run the MCP Inspector test")
        }
        Ok(o) if !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("npm ") => {
            eprintln!(
                "skipped: npx could not fetch {INSPECTOR_WITH_HEADERS}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        Ok(o) => {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let found: Value =
                serde_json::from_slice(&o.stdout).expect("the inspector prints JSON");
            crate::inspector::found_the_tokenizer_session(&found);
        }
    }
    stop(server);
}

/// The HTTP status of a POST `initialize` to `url` by curl run as `uid` (none: as us), with
/// `headers`.
fn curl_as(uid: Option<u32>, url: &str, headers: &[&str]) -> String {
    let mut cmd = match uid {
        Some(uid) => {
            let mut c = Command::new("setpriv");
            let id = uid.to_string();
            c.args(["--reuid", &id, "--regid", &id, "--clear-groups", "curl"]);
            c
        }
        None => Command::new("curl"),
    };
    cmd.args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "10"])
        .args(["-H", "Content-Type: application/json"])
        .args(["-H", "Accept: application/json, text/event-stream"]);
    for h in headers {
        cmd.args(["-H", h]);
    }
    let out = cmd.args(["--data", &initialize(), url]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn loopback_http_takes_the_token_the_owner_alone_can_read() {
    let env = Env::new();
    env.sync(&env.sources());
    let run = tempfile::tempdir().unwrap();
    let server = serve(&env, run.path(), &["--http", "127.0.0.1:0"], &[]);
    let url = server.url.clone();
    assert_eq!(server.token.len(), 64, "{}", server.token);

    // Every local account reaches a loopback port: without the token, nothing; another
    // account's connection is closed before anything is read, token or not.
    assert_eq!(curl_as(None, &url, &[]), "401");
    let bearer = format!("Authorization: Bearer {}", server.token);
    assert_eq!(curl_as(Some(4343), &url, &[]), "000");
    assert_eq!(curl_as(Some(4343), &url, &[&bearer]), "000");
    assert_eq!(curl_as(None, &url, &[&bearer]), "200");
    // The scheme is case-insensitive (RFC 7235).
    let lower = format!("Authorization: bearer {}", server.token);
    assert_eq!(curl_as(None, &url, &[&lower]), "200");
    assert_eq!(
        curl_as(None, &url, &["Authorization: Basic dXNlcjpwYXNz"]),
        "401"
    );

    // The token is kept where only the owner reads it.
    let states: Vec<_> = std::fs::read_dir(run.path().join("pond"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".state"))
        .collect();
    assert_eq!(states.len(), 1, "{states:?}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&states[0]).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    assert!(std::fs::read_to_string(&states[0])
        .unwrap()
        .contains(&server.token));
    // Another account's `pond status` of this store shows no token.
    let other = Command::new("setpriv")
        .args(["--reuid", "4343", "--regid", "4343", "--clear-groups"])
        .arg(crate::common::pond_bin())
        .args([
            "--store",
            &env.store().to_string_lossy(),
            "status",
            "--json",
        ])
        .env("XDG_RUNTIME_DIR", run.path())
        .env("HOME", "/nonexistent")
        .output()
        .unwrap();
    let seen = String::from_utf8_lossy(&other.stdout).into_owned()
        + &String::from_utf8_lossy(&other.stderr);
    assert!(!seen.contains(&server.token), "{seen}");
    stop(server);
}

#[test]
fn a_non_loopback_address_takes_the_flag_and_a_token_and_every_request_carries_it() {
    let env = Env::new();
    env.sync(&env.sources());
    let run = tempfile::tempdir().unwrap();
    let refused = |args: &[&str], vars: &[(&str, &str)]| {
        let mut cmd = env.cmd(&["serve"]);
        cmd.args(args)
            .env("XDG_RUNTIME_DIR", run.path())
            .env_remove("POND_HTTP_TOKEN");
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(!out.status.success(), "{args:?} was served");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = refused(&["--http", "0.0.0.0:0"], &[]);
    assert!(
        e.contains("not a loopback address") && e.contains("--allow-remote"),
        "{e}"
    );
    let e = refused(&["--http", "0.0.0.0:0", "--allow-remote"], &[]);
    assert!(e.contains("POND_HTTP_TOKEN"), "{e}");
    let e = refused(
        &["--http", "127.0.0.1:0"],
        &[("POND_HTTP_TOKEN", "guessable")],
    );
    assert!(e.contains("at least 16"), "{e}");
    // A token on the command line is in /proc/PID/cmdline for every local user to read.
    let e = refused(&["--http", "127.0.0.1:0", "--http-token", TOKEN], &[]);
    assert!(e.contains("set POND_HTTP_TOKEN"), "{e}");

    let server = serve(
        &env,
        run.path(),
        &["--http", "0.0.0.0:0", "--allow-remote"],
        &[("POND_HTTP_TOKEN", TOKEN)],
    );
    assert_eq!(server.token, TOKEN);
    // The URL names the bound address; the test reaches it over loopback.
    let url = server.url.replace("0.0.0.0", "127.0.0.1");
    let none = request(&url, "POST", "/mcp", &[], &initialize());
    assert_eq!(none.status, 401, "{}", none.head);
    assert_eq!(none.header("www-authenticate"), Some("Bearer"));
    let wrong = request(
        &url,
        "POST",
        "/mcp",
        &[("Authorization", "Bearer 0123456789abcdef0123456789abcdeX")],
        &initialize(),
    );
    assert_eq!(wrong.status, 401);
    let bearer = format!("Bearer {TOKEN}");
    let s = session(&url, &[("Authorization", &bearer)]);
    let rows = tool(
        &url,
        &s,
        2,
        "pond_sql",
        json!({"query": "SELECT count(*) AS n FROM sessions"}),
    );
    assert_eq!(rows["result"]["isError"], false, "{rows}");

    // A wildcard bind answers at the machine's own addresses, and names stay refused.
    let port = authority(&url).rsplit(':').next().unwrap().to_owned();
    let own = Command::new("hostname").arg("-I").output().unwrap();
    let own = String::from_utf8_lossy(&own.stdout).into_owned();
    let mine: Vec<&str> = own.split_whitespace().collect();
    if mine.is_empty() {
        eprintln!("no non-loopback address on this machine: the own-address check is skipped");
    }
    for ip in mine {
        let host = if ip.contains(':') {
            format!("[{ip}]:{port}")
        } else {
            format!("{ip}:{port}")
        };
        let a = request(
            &url,
            "POST",
            "/mcp",
            &[("Authorization", &bearer), ("Host", &host)],
            &initialize(),
        );
        assert_eq!(a.status, 200, "Host {host}: {}\n{}", a.head, a.body);
    }
    let named = request(
        &url,
        "POST",
        "/mcp",
        &[("Authorization", &bearer), ("Host", "pond.example")],
        &initialize(),
    );
    assert_eq!(named.status, 403, "{}", named.head);
    stop(server);
}

/// A connection to `url`'s server that sends `sent` and then holds.
fn held(url: &str, sent: &str) -> TcpStream {
    let mut s = TcpStream::connect(authority(url)).unwrap();
    s.write_all(sent.as_bytes()).unwrap();
    s
}

/// Whether the server closed `s` (EOF or reset) within `secs`; what it sent before.
fn closed_within(s: &mut TcpStream, secs: f64) -> (bool, String) {
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return (false, String::from_utf8_lossy(&got).into_owned());
        }
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut buf) {
            Ok(0) => return (true, String::from_utf8_lossy(&got).into_owned()),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                return (false, String::from_utf8_lossy(&got).into_owned())
            }
            Err(_) => return (true, String::from_utf8_lossy(&got).into_owned()),
        }
    }
}

#[test]
fn held_connections_are_capped_and_closed_and_bodies_are_bounded() {
    let env = Env::new();
    env.sync(&env.sources());
    let run = tempfile::tempdir().unwrap();
    let server = serve(&env, run.path(), &["--http", "127.0.0.1:0"], &[]);
    let url = server.url.clone();
    let (k, v) = server.auth();
    let auth = [(k, v.as_str())];

    // A body over the cap (1 MiB) is refused, by its length or as it streams.
    let big = format!("{{\"pad\":\"{}\"}}", "x".repeat(2 << 20));
    let a = request(&url, "POST", "/mcp", &auth, &big);
    assert_eq!(a.status, 413, "{}\n{}", a.head, a.body);
    // A body that does not arrive is given up on after the read deadline (10 s).
    let started = Instant::now();
    let mut half = held(
        &url,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\"",
            authority(&url),
            v
        ),
    );
    let (closed, said) = closed_within(&mut half, 20.0);
    assert!(closed && said.starts_with("HTTP/1.1 408"), "{said}");
    assert!(
        started.elapsed() >= Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );

    // 300 connections hold half a head, or nothing: more than the server serves at once.
    let started = Instant::now();
    let head = format!("POST /mcp HTTP/1.1\r\nHost: {}\r\n", authority(&url));
    let mut slow: Vec<TcpStream> = (0..300)
        .map(|i| held(&url, if i % 2 == 0 { &head } else { "" }))
        .collect();
    // A client past the cap waits for a free connection, and is then served.
    let late = std::thread::spawn({
        let url = url.clone();
        let v = v.clone();
        move || {
            let a = request(
                &url,
                "POST",
                "/mcp",
                &[("Authorization", &v)],
                &initialize(),
            );
            (a.status, Instant::now())
        }
    });
    // The server closes every one after the deadline (10 s; those that waited in the
    // listen queue 10 s after they were accepted).
    for (i, s) in slow.iter_mut().enumerate() {
        let left = 35.0 - started.elapsed().as_secs_f64();
        let (closed, _) = closed_within(s, left.max(0.1));
        assert!(
            closed,
            "connection {i} still open after {:?}",
            started.elapsed()
        );
    }
    let (status, at) = late.join().unwrap();
    assert_eq!(status, 200);
    assert!(
        at.duration_since(started) >= Duration::from_secs(8),
        "a connection past the cap was served at once"
    );
    let s = session(&url, &auth);
    let rows = tool(&url, &s, 2, "pond_sql", json!({"query": "SELECT 1 AS one"}));
    assert_eq!(rows["result"]["isError"], false, "{rows}");
    stop(server);
}

/// The `pond://status` resource's count of the server's clients.
fn clients(url: &str, session: &[(String, String)]) -> u64 {
    let a = request(
        url,
        "POST",
        "/mcp",
        &borrowed(session),
        &rpc(9, "resources/read", json!({"uri": "pond://status"})),
    );
    let text = a.message.expect("a status")["result"]["contents"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    text.lines().filter(|l| l.starts_with("client (")).count() as u64
}

#[test]
fn a_flood_of_sessions_is_capped_and_the_least_recently_used_go_first() {
    let env = Env::new();
    env.sync(&env.sources());
    let run = tempfile::tempdir().unwrap();
    let server = serve(&env, run.path(), &["--http", "127.0.0.1:0"], &[]);
    let url = server.url.clone();
    let (k, v) = server.auth();
    let auth = [(k, v.as_str())];
    let pid = server.child.id();

    let kept = session(&url, &auth);
    let first = tool(&url, &kept, 2, "pond_search", json!({"query": "tokenizer"}));
    crate::inspector::found_the_tokenizer_session(&first["result"]);
    // Warm: what the flood's checks use (SQL, the status) has run once.
    let one = tool(
        &url,
        &kept,
        3,
        "pond_sql",
        json!({"query": "SELECT 1 AS one"}),
    );
    assert_eq!(one["result"]["isError"], false, "{one}");
    let count_before = clients(&url, &kept);
    let before = crate::common::footprint_kib(pid);
    let flood = |n: usize| -> Vec<Vec<(String, String)>> {
        (0..n)
            .map(|i| {
                let s = session(&url, &auth);
                // The kept session stays in use, so the flood's own are the idle ones.
                if i % 50 == 0 {
                    clients(&url, &kept);
                }
                s
            })
            .collect()
    };
    let flooded = flood(300);
    let mut live = 0;
    assert!(
        wait_for(5.0, || {
            live = clients(&url, &kept);
            live <= 64
        }),
        "{live} sessions live (from {count_before})"
    );
    // The oldest of the flood were closed; the newest and the one in use were not.
    let oldest = request(
        &url,
        "POST",
        "/mcp",
        &borrowed(&flooded[0]),
        &rpc(3, "tools/list", json!({})),
    );
    assert_eq!(oldest.status, 404, "{}", oldest.head);
    let newest = tool(
        &url,
        &flooded[299],
        3,
        "pond_sql",
        json!({"query": "SELECT 1 AS one"}),
    );
    assert_eq!(newest["result"]["isError"], false, "{newest}");
    let again = tool(&url, &kept, 4, "pond_search", json!({"query": "tokenizer"}));
    crate::inspector::found_the_tokenizer_session(&again["result"]);
    // A new client is served.
    let fresh = session(&url, &auth);
    let rows = tool(
        &url,
        &fresh,
        2,
        "pond_sql",
        json!({"query": "SELECT 1 AS one"}),
    );
    assert_eq!(rows["result"]["isError"], false, "{rows}");

    // Memory: what a flood leaves is what the capped sessions hold (the server gives the
    // rest back at its next 10 s trim tick), and a second flood adds nothing.
    std::thread::sleep(Duration::from_secs(11));
    let after = crate::common::footprint_kib(pid);
    let flooded = flood(300);
    std::thread::sleep(Duration::from_secs(11));
    let second = crate::common::footprint_kib(pid);
    // Once the flood's sessions end, the memory goes back.
    for s in &flooded[300 - 64..] {
        request(&url, "DELETE", "/mcp", &borrowed(s), "");
    }
    // Given back at a trim tick (every 10 s): the lowest of the next three ticks counts.
    let mut ended = u64::MAX;
    crate::common::wait_for(32.0, || {
        ended = ended.min(crate::common::footprint_kib(pid));
        std::thread::sleep(Duration::from_millis(500));
        ended <= before + before / 10
    });
    eprintln!("footprint after the flood's sessions ended: {ended} KiB");
    assert!(
        ended <= before + before / 10,
        "footprint {before} KiB -> {ended} KiB once the flood's sessions ended"
    );
    eprintln!(
        "footprint: before {before} KiB, after 300 sessions {after} KiB, after 600 {second} KiB"
    );
    // 64 live sessions at most, each well under 128 KiB.
    assert!(
        after <= before + before / 10 + 64 * 128,
        "footprint {before} KiB -> {after} KiB after a flood of sessions"
    );
    assert!(
        second <= after + after / 10,
        "footprint {after} KiB -> {second} KiB after a second flood"
    );
    stop(server);
}
