//! `pond serve --http`: MCP over streamable HTTP from a loopback client, and what must be
//! refused: a foreign `Host` or `Origin` (DNS rebinding), a non-loopback address without
//! `--allow-remote` and a token, a request without the token when one is set.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{alive, signal, wait_for, Env};

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

/// `pond serve --http ADDR` with its socket under `run`; the server and its URL.
fn serve(env: &Env, run: &Path, args: &[&str]) -> (Child, String) {
    let mut child = env
        .cmd(&["serve"])
        .args(args)
        .env("XDG_RUNTIME_DIR", run)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut url = None;
    let up = wait_for(20.0, || {
        let out = env
            .cmd(&["status"])
            .env("XDG_RUNTIME_DIR", run)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
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
    (child, url)
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

fn stop(mut server: Child) {
    let pid = server.id();
    signal(pid, nix::sys::signal::Signal::SIGTERM);
    assert!(wait_for(10.0, || !alive(pid) || server.try_wait().unwrap().is_some()));
    let _ = server.wait();
}

#[test]
fn a_loopback_http_client_searches_and_foreign_hosts_and_origins_are_refused() {
    let env = Env::new();
    env.sync(&env.sources());
    let run = tempfile::tempdir().unwrap();
    let (server, url) = serve(&env, run.path(), &["--http", "127.0.0.1:0"]);

    let s = session(&url, &[]);
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

    // DNS rebinding: a page of evil.example resolving to 127.0.0.1, or calling from its
    // origin, is refused before anything is read.
    let port = authority(&url).rsplit(':').next().unwrap().to_owned();
    let evil_host = format!("evil.example:{port}");
    let foreign = request(&url, "POST", "/mcp", &[("Host", &evil_host)], &initialize());
    assert_eq!(foreign.status, 403, "{}", foreign.head);
    let origin = request(
        &url,
        "POST",
        "/mcp",
        &[("Origin", "http://evil.example")],
        &initialize(),
    );
    assert_eq!(origin.status, 403, "{}", origin.head);
    assert!(origin.message.is_none());
    // A page served from loopback (a local web UI) may call.
    let local = request(
        &url,
        "POST",
        "/mcp",
        &[("Origin", "http://localhost:5173")],
        &initialize(),
    );
    assert_eq!(local.status, 200, "{}", local.head);
    let elsewhere = request(&url, "POST", "/other", &[], &initialize());
    assert_eq!(elsewhere.status, 404);
    stop(server);
    assert!(
        std::fs::read_dir(run.path().join("pond"))
            .map(|d| d.count())
            .unwrap_or(0)
            == 0,
        "the stopped server left files"
    );
}

#[test]
fn the_mcp_inspector_searches_over_http() {
    let env = Env::new();
    env.sync(&env.sources());
    let run = tempfile::tempdir().unwrap();
    let (server, url) = serve(&env, run.path(), &["--http", "127.0.0.1:0"]);
    let target = [url.as_str(), "--transport", "http"].map(std::ffi::OsStr::new);
    if let Some(found) = crate::inspector::run(target, &crate::inspector::SEARCH_TOKENIZER) {
        crate::inspector::found_the_tokenizer_session(&found);
    }
    stop(server);
}

#[test]
fn a_non_loopback_address_takes_the_flag_and_a_token_and_every_request_carries_it() {
    let env = Env::new();
    env.sync(&env.sources());
    let run = tempfile::tempdir().unwrap();
    let refused = |args: &[&str], vars: &[(&str, &str)]| {
        let mut cmd = env.cmd(&["serve"]);
        cmd.args(args).env("XDG_RUNTIME_DIR", run.path());
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

    let (server, url) = serve(
        &env,
        run.path(),
        &[
            "--http",
            "0.0.0.0:0",
            "--allow-remote",
            "--http-token",
            TOKEN,
        ],
    );
    // The URL names the bound address; the test reaches it over loopback.
    let url = url.replace("0.0.0.0", "127.0.0.1");
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
    stop(server);
}
