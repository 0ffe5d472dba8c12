//! `pond mcp` over stdio with real worker processes: rmcp's client for the tools and
//! resources, a raw JSON-RPC pipe for garbage, stdin closing and signals.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult, ReadResourceRequestParams};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

use nix::sys::signal::Signal;

use crate::common::{alive, children, footprint_kib, pond_bin, running, signal, wait_for, Env};

/// A query that runs for minutes: a three-way cross join with no useful plan.
const RUNAWAY: &str = "SELECT count(*) AS n FROM records a, records b, records c, records d, records e WHERE length(a.raw || b.raw || c.raw || d.raw || e.raw) < 0";

fn synced() -> Env {
    let env = Env::new();
    let src = env.sources();
    env.sync(&src);
    env
}

pub(crate) struct Client {
    pub(crate) service: RunningService<RoleClient, ()>,
    pid: u32,
    _child: tokio::process::Child,
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

pub(crate) async fn connect(env: &Env, extra: &[&str]) -> Client {
    connect_with(env, extra, &[]).await
}

/// `env.cmd` as a tokio command (the store, the test's homes and variables) with `vars`.
pub(crate) fn tokio_cmd(env: &Env, vars: &[(&str, &str)]) -> tokio::process::Command {
    let mut std_cmd = env.cmd(&[]);
    std_cmd.envs(vars.iter().copied());
    let mut cmd = tokio::process::Command::new(pond_bin());
    cmd.args(std_cmd.get_args());
    for (k, v) in std_cmd.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd
}

async fn connect_with(env: &Env, extra: &[&str], vars: &[(&str, &str)]) -> Client {
    let mut cmd = tokio_cmd(env, vars);
    cmd.args(extra).arg("mcp");
    let s = pond_benches::stdio::spawn(cmd).expect("start pond mcp");
    let service = ().serve(s.io).await.expect("MCP handshake");
    Client {
        service,
        pid: s.pid,
        _child: s.child,
    }
}

impl Client {
    async fn call(&self, name: &str, args: Value) -> CallToolResult {
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        self.service
            .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
            .await
            .unwrap_or_else(|e| panic!("{name}: protocol error {e}"))
    }

    pub(crate) async fn ok(&self, name: &str, args: Value) -> String {
        let r = self.call(name, args.clone()).await;
        let t = text(&r);
        assert_eq!(r.is_error, Some(false), "{name} {args}: {t}");
        t
    }

    pub(crate) async fn mistake(&self, name: &str, args: Value) -> String {
        let r = self.call(name, args.clone()).await;
        let t = text(&r);
        assert_eq!(r.is_error, Some(true), "{name} {args} should fail: {t}");
        t
    }

    pub(crate) async fn resource(&self, uri: &str) -> String {
        let r = self
            .service
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .expect("read resource");
        let v = serde_json::to_value(&r.contents[0]).unwrap();
        v["text"].as_str().unwrap().to_owned()
    }
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn mcp_lists_and_calls_every_tool_and_resource() {
    let env = synced();
    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let info = c.service.peer_info().expect("server info");
        assert!(info.instructions.as_deref().unwrap_or("").contains("pond_search"));
        let tools = c.service.list_all_tools().await.unwrap();
        let mut names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "pond_get_message",
                "pond_get_session",
                "pond_search",
                "pond_sessions",
                "pond_sql",
                "pond_usage"
            ]
        );
        for t in &tools {
            assert!(t.description.as_deref().unwrap_or("").len() > 60, "{}", t.name);
            assert!(t.input_schema["properties"].as_object().is_some(), "{}", t.name);
        }

        let hits = c.ok("pond_search", json!({"query": "invoices table"})).await;
        assert!(hits.contains("33333333-3333-4333-8333-333333333333"), "{hits}");
        assert!(hits.contains("messages in scope"), "{hits}");
        let filtered = c
            .ok(
                "pond_search",
                json!({"query": "migrations", "source_agent": "codex", "sort_by": "recency", "limit": "5"}),
            )
            .await;
        assert!(filtered.contains("codex"), "{filtered}");

        let page = c
            .ok(
                "pond_get_session",
                json!({"id": "33333333-3333-4333-8333-333333333333", "limit": 2}),
            )
            .await;
        assert!(page.contains("after"), "a first page of two says how to go on: {page}");
        let msg = c
            .ok("pond_get_message", json!({"id": "c-a3", "context_before": 1, "context_after": 0}))
            .await;
        assert!(msg.to_lowercase().contains("decimal"), "{msg}");

        let sql = c
            .ok("pond_sql", json!({"query": "SELECT count(*) AS n FROM messages", "format": "json"}))
            .await;
        assert!(sql.contains("\"n\":23"), "{sql}");
        assert!(sql.contains("1 rows"), "{sql}");

        let resources = c.service.list_all_resources().await.unwrap();
        assert_eq!(resources.len(), 2);
        let schema = c.resource("pond://schema").await;
        assert!(schema.contains("## messages") && schema.contains("search_text"), "{schema}");
        assert!(schema.contains("GROUP BY"), "worked examples: {schema}");
        let status = c.resource("pond://status").await;
        assert!(status.contains("messages 23"), "{status}");
        assert!(status.contains("worker sql: idle, pid"), "the SQL worker stays for the next query: {status}");
        assert!(status.contains("front: pid"), "{status}");
        c.service.cancel().await.unwrap();
    });
}

#[test]
fn mcp_caller_mistakes_are_tool_errors_with_hints() {
    let env = synced();
    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let t = c
            .mistake("pond_search", json!({"query": "x", "sessionid": "s"}))
            .await;
        assert!(
            t.contains("unknown field") && t.contains("session_id"),
            "{t}"
        );
        let t = c.mistake("pond_search", json!({"limit": 3})).await;
        assert!(t.contains("query"), "{t}");
        let t = c
            .mistake("pond_search", json!({"query": "x", "limit": "many"}))
            .await;
        assert!(t.contains("whole number"), "{t}");
        let t = c
            .mistake("pond_search", json!({"query": "x", "mode": "vector"}))
            .await;
        assert!(t.contains("fts"), "{t}");
        let t = c
            .mistake(
                "pond_search",
                json!({"query": "x", "from_date": "last tuesday"}),
            )
            .await;
        assert!(t.contains("YYYY-MM-DD"), "{t}");
        let t = c
            .mistake("pond_get_session", json!({"id": "no-such-session"}))
            .await;
        assert!(t.contains("no session"), "{t}");
        let t = c
            .mistake("pond_get_message", json!({"id": "no-such-message"}))
            .await;
        assert!(t.contains("no message"), "{t}");
        let t = c
            .mistake("pond_sql", json!({"query": "DELETE FROM messages"}))
            .await;
        assert!(t.contains("read-only"), "{t}");
        let t = c
            .mistake("pond_sql", json!({"query": "SELECT nope FROM messages"}))
            .await;
        assert!(t.contains("nope"), "{t}");
        let t = c.mistake("pond_teleport", json!({})).await;
        assert!(t.contains("pond_search"), "{t}");
        // Nothing was changed, and the server still serves.
        let n = c
            .ok(
                "pond_sql",
                json!({"query": "SELECT count(*) FROM messages"}),
            )
            .await;
        assert!(n.contains("23"), "{n}");
        c.service.cancel().await.unwrap();
    });
}

#[test]
fn mcp_killed_sql_worker_fails_the_call_fast_and_the_next_call_works() {
    let env = synced();
    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let slow = c.call(
            "pond_sql",
            json!({"query": RUNAWAY, "timeout_seconds": 120}),
        );
        let killer = async {
            let front = c.pid;
            let mut worker = None;
            assert!(wait_for(20.0, || {
                worker = children(front).first().copied();
                worker.is_some()
            }));
            // Let the query start computing.
            tokio::time::sleep(Duration::from_millis(500)).await;
            let pid = worker.unwrap();
            signal(pid, Signal::SIGKILL);
            (pid, Instant::now())
        };
        let (r, (pid, killed_at)) = tokio::join!(slow, killer);
        let waited = killed_at.elapsed();
        let t = text(&r);
        assert_eq!(r.is_error, Some(true), "{t}");
        assert!(t.contains("died") && t.contains("SIGKILL"), "{t}");
        assert!(
            waited < Duration::from_secs(1),
            "answered {waited:?} after the kill"
        );
        assert!(wait_for(2.0, || !alive(pid)), "the dead worker was reaped");
        let n = c
            .ok(
                "pond_sql",
                json!({"query": "SELECT count(*) AS n FROM sessions"}),
            )
            .await;
        assert!(n.contains('5'), "{n}");
        let status = c.resource("pond://status").await;
        assert!(status.contains("1 crashes"), "{status}");
        c.service.cancel().await.unwrap();
    });
}

#[test]
fn mcp_runaway_sql_ends_at_its_timeout_and_the_front_does_not_grow() {
    let env = synced();
    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        // Warm up: the worker exists and the front has served a query.
        c.ok("pond_sql", json!({"query": "SELECT 1"})).await;
        let before = footprint_kib(c.pid);
        let worker = children(c.pid)[0];
        let started = Instant::now();
        let t = c
            .mistake("pond_sql", json!({"query": RUNAWAY, "timeout_seconds": 2}))
            .await;
        let took = started.elapsed();
        // The rule the CLI keeps too (`Front::sql`): the query's own timeout ends it, the
        // worker is killed only if it has not answered 5 s later.
        let graceful = t.contains("timed out after 2 s");
        let killed = t.contains("deadline of 7 s") && t.contains("killed");
        assert!(graceful || killed, "{t}");
        assert!(t.contains("Narrow the query"), "{t}");
        assert!(took < Duration::from_secs(9), "stopped after {took:?}");
        assert!(
            wait_for(5.0, || !alive(worker)),
            "the runaway worker is gone"
        );
        let after = footprint_kib(c.pid);
        assert!(
            after < before + 16 * 1024,
            "front footprint {before} KiB -> {after} KiB"
        );
        let n = c
            .ok(
                "pond_sql",
                json!({"query": "SELECT count(*) AS n FROM parts"}),
            )
            .await;
        assert!(n.contains("24"), "a fresh worker answers: {n}");
        c.service.cancel().await.unwrap();
    });
}

#[test]
fn mcp_fifty_concurrent_calls_complete() {
    let env = synced();
    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let calls = (0..50).map(|i| {
            let (name, args) = match i % 4 {
                0 => ("pond_search", json!({"query": "invoices"})),
                1 => (
                    "pond_sql",
                    json!({"query": format!("SELECT {i} AS i, count(*) FROM messages")}),
                ),
                2 => ("pond_get_message", json!({"id": "c-a3"})),
                _ => (
                    "pond_get_session",
                    json!({"id": "33333333-3333-4333-8333-333333333333"}),
                ),
            };
            let c = &c;
            async move { (i, c.call(name, args).await) }
        });
        let results = futures::future::join_all(calls).await;
        assert_eq!(results.len(), 50);
        for (i, r) in results {
            assert_eq!(r.is_error, Some(false), "call {i}: {}", text(&r));
            if i % 4 == 1 {
                assert!(
                    text(&r).contains(&format!("| {i} ")),
                    "call {i}: {}",
                    text(&r)
                );
            }
        }
        c.service.cancel().await.unwrap();
    });
}

#[test]
fn mcp_in_process_mode_runs_sql_without_workers() {
    let env = synced();
    runtime().block_on(async {
        let c = connect(&env, &["--in-process"]).await;
        let n = c
            .ok(
                "pond_sql",
                json!({"query": "SELECT count(*) AS n FROM messages"}),
            )
            .await;
        assert!(n.contains("23"), "{n}");
        assert!(children(c.pid).is_empty(), "no worker in --in-process mode");
        let status = c.resource("pond://status").await;
        assert!(status.contains("in-process"), "{status}");
        c.service.cancel().await.unwrap();
    });
}

/// `pond mcp` driven by hand over its pipes.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
}

impl Raw {
    fn start(env: &Env) -> Raw {
        let mut child = env
            .cmd(&["mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                let v = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("server wrote non-JSON ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let mut raw = Raw {
            stdin: child.stdin.take(),
            child,
            lines,
        };
        raw.send_line(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}})
            .to_string(),
        );
        raw.reply(0);
        raw.send_line(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        );
        raw
    }

    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn call(&mut self, id: u64, tool: &str, args: Value) -> Value {
        self.send_line(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": args}})
            .to_string(),
        );
        self.reply(id)
    }

    fn reply(&mut self, id: u64) -> Value {
        loop {
            let v = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .expect("a reply within 30 s");
            if v["id"] == id {
                return v;
            }
        }
    }

    fn wait_exit(&mut self, secs: f64) -> bool {
        wait_for(secs, || self.child.try_wait().unwrap().is_some())
    }
}

#[test]
fn mcp_garbage_is_ignored_bad_requests_are_answered_and_serving_goes_on() {
    let env = synced();
    let mut raw = Raw::start(&env);
    raw.send_line("this is not json {{{");
    raw.send_line("\u{0}\u{1}binary\u{7f}");
    raw.send_line(&"x".repeat(1 << 20));
    raw.send_line(r#"{"jsonrpc":"2.0","id":7,"method":"no/such/method"}"#);
    let v = raw.reply(7);
    assert!(v["error"]["code"].is_i64(), "{v}");
    raw.send_line(
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"pond_search"}}"#,
    );
    let v = raw.reply(8);
    assert_eq!(
        v["result"]["isError"], true,
        "missing arguments are a tool error: {v}"
    );
    let v = raw.call(9, "pond_search", json!({"query": "invoices"}));
    assert_eq!(v["result"]["isError"], false, "{v}");
    drop(raw.stdin.take());
    assert!(raw.wait_exit(3.0));
}

#[test]
fn mcp_closing_stdin_leaves_no_pond_process() {
    let env = synced();
    let mut raw = Raw::start(&env);
    let v = raw.call(1, "pond_sql", json!({"query": "SELECT 1"}));
    assert_eq!(v["result"]["isError"], false, "{v}");
    let front = raw.child.id();
    let workers = children(front);
    assert_eq!(workers.len(), 1, "one SQL worker: {workers:?}");
    let closed = Instant::now();
    drop(raw.stdin.take());
    assert!(raw.wait_exit(2.0), "the front exits when stdin closes");
    assert!(
        closed.elapsed() < Duration::from_millis(1500),
        "{:?}",
        closed.elapsed()
    );
    assert!(wait_for(1.0, || !alive(workers[0])), "no orphaned worker");
}

#[test]
fn mcp_sigterm_stops_front_and_busy_workers() {
    let env = synced();
    let mut raw = Raw::start(&env);
    raw.send_line(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "pond_sql", "arguments": {"query": RUNAWAY, "timeout_seconds": 120}}})
        .to_string(),
    );
    let front = raw.child.id();
    let mut workers = Vec::new();
    assert!(wait_for(20.0, || {
        workers = children(front);
        !workers.is_empty()
    }));
    std::thread::sleep(Duration::from_millis(300));
    let sent = Instant::now();
    signal(front, Signal::SIGTERM);
    assert!(raw.wait_exit(2.0), "the front exits on SIGTERM");
    assert!(
        sent.elapsed() < Duration::from_millis(1500),
        "{:?}",
        sent.elapsed()
    );
    assert!(
        wait_for(1.0, || workers.iter().all(|w| !alive(*w))),
        "no orphaned worker"
    );
}

#[test]
fn rebuild_while_serving_keeps_answers_and_holds_the_store_lock() {
    let env = synced();
    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let query = json!({"query": "invoices table"});
        let expected = c.ok("pond_search", query.clone()).await;
        let first_line = |s: &str| s.lines().next().unwrap_or("").to_owned();
        let store = env.store();
        let rebuilds = tokio::task::spawn_blocking({
            let mut cmds: Vec<_> = (0..3).map(|_| env.cmd(&["rebuild", "--json"])).collect();
            move || {
                cmds.iter_mut()
                    .map(|c| c.output().unwrap())
                    .collect::<Vec<_>>()
            }
        });
        let mut answers = 0;
        while !rebuilds.is_finished() {
            let got = c.ok("pond_search", query.clone()).await;
            assert_eq!(first_line(&got), first_line(&expected), "{got}");
            answers += 1;
        }
        for out in rebuilds.await.unwrap() {
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let r: Value = serde_json::from_slice(&out.stdout).unwrap();
            // A step per index (with parts' two n-gram indexes of exact search), and the rest.
            assert_eq!(r["steps"].as_array().unwrap().len(), 9, "{r}");
            assert_eq!(r["unindexed_rows"], 0, "{r}");
        }
        assert!(answers > 0);
        let after = c.ok("pond_search", query.clone()).await;
        assert_eq!(after, expected);

        // A rebuild never overlaps another writer: with the store lock held elsewhere it
        // refuses at once.
        let lock = std::fs::File::options()
            .write(true)
            .open(store.join("pond.lock"))
            .unwrap();
        lock.try_lock().unwrap();
        let err = env.fails(&["rebuild"]);
        assert!(err.contains("lock"), "{err}");
        drop(lock);
        env.ok(&["rebuild", "--fts"]);
        c.service.cancel().await.unwrap();
    });
}

#[test]
fn a_serving_front_reads_new_rows_and_switches_to_a_new_row_map() {
    let env = synced();
    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        let status = c.resource("pond://status").await;
        assert!(status.contains("row map: 23 rows, 5 sessions"), "{status}");

        // Rows synced while it serves are found before the map includes them.
        env.sync_one_more_message();
        let status = c.resource("pond://status").await;
        assert!(status.contains("1 rows newer than the map"), "{status}");
        let hit = c.ok("pond_search", json!({"query": "quokka"})).await;
        assert!(hit.contains("zz") && hit.contains("s9"), "{hit}");
        let got = c.ok("pond_get_message", json!({"id": "zz"})).await;
        assert!(got.contains("hello there, the quokka parser"), "{got}");

        // A new generation replaces the file: the front switches on its next query.
        env.ok(&["rebuild", "--rowmap"]);
        let status = c.resource("pond://status").await;
        assert!(
            status.contains("row map: 24 rows, 6 sessions") && status.contains("current"),
            "{status}"
        );
        assert_eq!(c.ok("pond_search", json!({"query": "quokka"})).await, hit);
        let page = c.ok("pond_get_session", json!({"id": "s9"})).await;
        assert!(page.contains("hello there, the quokka parser"), "{page}");
        let before = c
            .ok("pond_search", json!({"query": "invoices table"}))
            .await;

        // The map removed under it: answers come from Lance, unchanged.
        std::fs::remove_file(env.store().join("messages.rmm")).unwrap();
        let status = c.resource("pond://status").await;
        assert!(status.contains("row map: not built"), "{status}");
        assert_eq!(c.ok("pond_search", json!({"query": "quokka"})).await, hit);
        assert_eq!(
            c.ok("pond_search", json!({"query": "invoices table"}))
                .await,
            before
        );
        c.service.cancel().await.unwrap();
    });
}

#[test]
fn mcp_vector_search_starts_the_embed_worker_which_exits_when_idle() {
    let env = crate::embed::with_tiny_model();
    env.ok(&["embed"]);
    runtime().block_on(async {
        let c = connect(&env, &["--worker-idle-secs", "2"]).await;
        let q = json!({"query": "why does the checkout total drift by a cent?", "mode": "vector"});
        let text = c.ok("pond_search", q).await;
        assert!(text.contains("c-u2") && text.contains("(vector)"), "{text}");
        let workers = children(c.pid);
        assert_eq!(workers.len(), 1, "the embed worker runs: {workers:?}");
        let worker = workers[0];

        // Idle: it exits, and the model with it; the next query starts a new one.
        assert!(
            wait_for(10.0, || !alive(worker)),
            "the idle embed worker exits"
        );
        let text = c
            .ok(
                "pond_search",
                json!({"query": "tokenizer", "mode": "hybrid"}),
            )
            .await;
        assert!(text.contains("(hybrid)"), "{text}");
        let again = children(c.pid);
        assert_eq!(again.len(), 1, "{again:?}");
        assert_ne!(again[0], worker, "a fresh worker");

        // Killed: the next query gets a new one.
        signal(again[0], Signal::SIGKILL);
        assert!(wait_for(5.0, || !alive(again[0])));
        let text = c
            .ok("pond_search", json!({"query": "prices", "mode": "vector"}))
            .await;
        assert!(text.contains("(vector)"), "{text}");
        let status = c.resource("pond://status").await;
        assert!(status.contains("embed"), "{status}");
        c.service.cancel().await.unwrap();
    });
}

#[test]
fn mcp_sql_worker_over_its_memory_budget_is_killed() {
    let env = synced();
    runtime().block_on(async {
        // A 1 MiB budget: any worker is over it at the first sample.
        let c = connect(&env, &["--sql-memory-mib", "1"]).await;
        let t = c
            .mistake("pond_sql", json!({"query": "SELECT count(*) FROM records"}))
            .await;
        assert!(t.contains("past the budget of 1 MiB"), "{t}");
        assert!(
            wait_for(2.0, || children(c.pid).is_empty()),
            "killed and reaped"
        );
        let status = c.resource("pond://status").await;
        assert!(status.contains("over its budget"), "{status}");
        c.service.cancel().await.unwrap();
    });
}

#[test]
fn mcp_idle_sql_worker_exits_and_the_next_query_starts_a_new_one() {
    let env = synced();
    runtime().block_on(async {
        let c = connect(&env, &["--worker-idle-secs", "1"]).await;
        c.ok("pond_sql", json!({"query": "SELECT 1"})).await;
        let first = children(c.pid);
        assert_eq!(first.len(), 1, "{first:?}");
        assert!(
            wait_for(5.0, || children(c.pid).is_empty()),
            "the idle worker exits"
        );
        assert!(!alive(first[0]), "and is reaped");
        let n = c
            .ok(
                "pond_sql",
                json!({"query": "SELECT count(*) AS n FROM files"}),
            )
            .await;
        assert!(n.contains('5'), "{n}");
        let status = c.resource("pond://status").await;
        assert!(status.contains("started 2 times"), "{status}");
        assert!(
            status.contains("0 crashes"),
            "an idle exit is not a crash: {status}"
        );
        c.service.cancel().await.unwrap();
    });
}

#[test]
fn mcp_syncs_the_default_homes_in_the_background() {
    let env = Env::new();
    // The user's Claude Code home, as `pond sync` finds it by default.
    crate::common::copy_dir(
        &crate::common::fixtures().join("claude"),
        &env.dir.path().join(".claude"),
    );
    runtime().block_on(async {
        let c = connect_with(&env, &[], &[("POND_AUTO_SYNC_MINS", "1")]).await;
        let mut found = String::new();
        let synced = async {
            loop {
                let r = c.call("pond_search", json!({"query": "drifting"})).await;
                found = text(&r);
                if r.is_error == Some(false) && found.contains("c-u2") {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(60), synced)
            .await
            .unwrap_or_else(|_| panic!("no background sync within 60 s: {found}"));
        // Rows are searchable once committed; the job then updates indexes and reports, and
        // its one-shot worker exits.
        let mut status = String::new();
        for _ in 0..300 {
            status = c.resource("pond://status").await;
            if status.contains("last background sync")
                && status.contains("worker sync: not running")
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(status.contains("12 messages added"), "{status}");
        assert!(
            status.contains("worker sync: not running"),
            "one-shot: {status}"
        );
        assert!(status.contains("started 1 times, 1 jobs"), "{status}");
        c.service.cancel().await.unwrap();
    });
}

#[test]
fn the_background_sync_embeds_what_it_adds_when_the_store_has_a_model() {
    let env = Env::new();
    crate::embed::import_tiny_model(&env);
    crate::common::copy_dir(
        &crate::common::fixtures().join("claude"),
        &env.dir.path().join(".claude"),
    );
    runtime().block_on(async {
        let c = connect_with(&env, &[], &[("POND_AUTO_SYNC_MINS", "1")]).await;
        let mut status = String::new();
        for _ in 0..600 {
            status = c.resource("pond://status").await;
            if status.contains("last background sync") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(status.contains("12 messages added"), "{status}");
        let embedded = env.sql_json("SELECT count(*) AS n FROM messages WHERE searchable")[0]["n"]
            .as_u64()
            .unwrap();
        assert!(
            status.contains(&format!(", {embedded} embedded")),
            "{embedded}: {status}"
        );
        let found = c
            .ok(
                "pond_search",
                json!({"query": "why does the checkout total drift by a cent?", "mode": "vector"}),
            )
            .await;
        assert!(found.contains("c-u2"), "{found}");
        c.service.cancel().await.unwrap();
    });
}

#[test]
fn a_front_killed_outright_takes_its_workers_with_it() {
    let env = synced();
    let mut raw = Raw::start(&env);
    let v = raw.call(1, "pond_sql", json!({"query": "SELECT 1"}));
    assert_eq!(v["result"]["isError"], false, "{v}");
    let front = raw.child.id();
    let workers = children(front);
    assert_eq!(workers.len(), 1, "{workers:?}");
    // No chance to clean up: the worker must notice on its own (PR_SET_PDEATHSIG).
    signal(front, Signal::SIGKILL);
    assert!(raw.wait_exit(2.0));
    assert!(
        wait_for(2.0, || !running(workers[0])),
        "the SQL worker died with its front"
    );
}

#[test]
fn mcp_hostile_calls_get_answers_and_the_server_keeps_serving() {
    let env = synced();
    runtime().block_on(async {
        let c = connect(&env, &[]).await;
        // Deep expressions: a tool error that says what to shorten, never a crashed worker
        // nor a refusal of the next queries.
        for q in [
            format!("SELECT {}", vec!["1"; 500].join("+")),
            format!("SELECT 1 WHERE {}", vec!["1=1"; 1000].join(" OR ")),
            format!("SELECT {}", vec!["'a'"; 600].join("||")),
            format!("SELECT {}", vec!["1"; 500].join("+")),
            format!("SELECT {}", vec!["1"; 500].join("+")),
            format!("SELECT {}", vec!["1"; 500].join("+")),
        ] {
            let t = c.mistake("pond_sql", json!({ "query": q })).await;
            assert!(t.contains("nests expressions"), "{t}");
        }
        let n = c
            .ok(
                "pond_sql",
                json!({"query": "SELECT count(*) AS n FROM sessions"}),
            )
            .await;
        assert!(n.contains('5'), "{n}");
        let status = c.resource("pond://status").await;
        assert!(
            !status.contains("crashes 1") && !status.contains("1 crashes"),
            "{status}"
        );
        // Writes inside a query are refused before planning.
        let t = c
            .mistake(
                "pond_sql",
                json!({"query": "WITH t AS (SELECT 1) INSERT INTO sessions SELECT * FROM t"}),
            )
            .await;
        assert!(t.contains("read-only"), "{t}");
        // A value that would be huge is refused; one merely long is cut to the answer's cap.
        let t = c
            .mistake(
                "pond_sql",
                json!({"query": "SELECT repeat('x', 200000000) AS v"}),
            )
            .await;
        assert!(t.contains("repeat"), "{t}");
        let t = c
            .ok(
                "pond_sql",
                json!({"query": "SELECT repeat('x', 3000000) AS v", "format": "json"}),
            )
            .await;
        assert!(t.len() < 120 * 1024, "{}", t.len());
        assert!(t.contains("more bytes"), "{}", &t[t.len() - 200..]);
        // Paging past either end of a session: an empty page that says so.
        let id = "11111111-1111-4111-8111-111111111111";
        let only_id = |page: String| {
            page.lines()
                .find(|l| l.starts_with('#'))
                // `#1 2026-01-01 10:00:00 UTC user <id>`: the id after the time's zone.
                .and_then(|l| l.split_whitespace().nth(5))
                .unwrap()
                .to_owned()
        };
        let last = c.ok(
            "pond_get_session",
            json!({"id": id, "from": "end", "limit": 1}),
        );
        let first = c.ok("pond_get_session", json!({"id": id, "limit": 1}));
        for (page, key) in [(last.await, "after"), (first.await, "before")] {
            let t = c
                .ok("pond_get_session", json!({"id": id, key: only_id(page)}))
                .await;
            assert!(t.contains("no messages in this page"), "{key}: {t}");
        }
        // An oversized search query is refused at the edge.
        let t = c
            .mistake("pond_search", json!({"query": "word ".repeat(100_000)}))
            .await;
        assert!(t.contains("query is"), "{t}");
        c.service.cancel().await.unwrap();
    });
}
