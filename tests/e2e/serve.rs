//! One resident server per store: `pond mcp` bridges started at once start one `pond
//! serve`, answer as a standalone front does, survive the server's death (the call in
//! flight gets an error, the next works), and the server exits when idle leaving nothing.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

use crate::common::{alive, signal, wait_for, Env};
use crate::mcp::{connect, runtime, tokio_cmd};

struct Bridge {
    service: RunningService<RoleClient, ()>,
    _child: tokio::process::Child,
}

/// `pond mcp` as a bridge (the tests' default is standalone), with its sockets under
/// `runtime_dir` and a server that exits after `idle_secs` without clients.
async fn bridge(env: &Env, runtime_dir: &Path, idle_secs: u64) -> Bridge {
    let mut cmd = tokio_cmd(env, &[]);
    cmd.env_remove("POND_STANDALONE")
        .env("XDG_RUNTIME_DIR", runtime_dir)
        .env("POND_IDLE_EXIT_SECS", idle_secs.to_string())
        .arg("mcp");
    let s = pond_benches::stdio::spawn(cmd).expect("start pond mcp");
    let service = ().serve(s.io).await.expect("MCP handshake through the bridge");
    Bridge {
        service,
        _child: s.child,
    }
}

async fn call(
    service: &RunningService<RoleClient, ()>,
    name: &str,
    args: Value,
) -> Result<String, String> {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    match service
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
        .await
    {
        Ok(r) => {
            let t: Vec<String> = r
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect();
            Ok(t.join("\n"))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Processes whose command line holds `store` and `word` (a server: "serve"; a worker:
/// "worker").
fn processes(store: &Path, word: &str) -> Vec<u32> {
    let store = store.to_string_lossy().into_owned();
    pond_benches::procs::all()
        .into_iter()
        .filter(|(pid, args)| {
            // `pond-bridge` carries the server's arguments to start one: not a server.
            let bridge = args[0].ends_with("pond-bridge");
            // A zombie holds no memory and no socket: only the living count.
            !bridge
                && args.iter().any(|a| a == &store)
                && args.iter().any(|a| a == word)
                && !pond_benches::procs::zombie(*pid)
        })
        .map(|(pid, _)| pid)
        .collect()
}

fn sockets_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir.join("pond"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// `pond status` with the sockets under `runtime_dir`.
fn status_of(env: &Env, runtime_dir: &Path) -> String {
    let out = env
        .cmd(&["status"])
        .env("XDG_RUNTIME_DIR", runtime_dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const QUERIES: [(&str, &str); 3] = [
    ("pond_search", r#"{"query": "invoices table"}"#),
    (
        "pond_get_session",
        r#"{"id": "11111111-1111-4111-8111-111111111111"}"#,
    ),
    (
        "pond_sql",
        r#"{"query": "SELECT id, role FROM messages ORDER BY id LIMIT 5"}"#,
    ),
];

#[test]
fn eight_bridges_started_at_once_share_one_server_and_answer_as_a_standalone_front() {
    let env = Env::new();
    env.sync(&env.sources());
    let run = tempfile::tempdir().unwrap();
    let store = env.store().canonicalize().unwrap();
    runtime().block_on(async {
        let alone = connect(&env, &[]).await;
        let mut want = Vec::new();
        for (tool, args) in QUERIES {
            want.push(alone.ok(tool, serde_json::from_str(args).unwrap()).await);
        }
        drop(alone);

        let bridges = futures::future::join_all((0..8).map(|_| bridge(&env, run.path(), 60))).await;
        assert_eq!(
            processes(&store, "serve").len(),
            1,
            "one server for eight bridges"
        );
        let answers = futures::future::join_all(bridges.iter().map(|b| async {
            let mut got = Vec::new();
            for (tool, args) in QUERIES {
                got.push(
                    call(&b.service, tool, serde_json::from_str(args).unwrap())
                        .await
                        .unwrap(),
                );
            }
            got
        }))
        .await;
        for got in answers {
            // The SQL footer holds the query's time: compare the tables.
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g.lines().next(), w.lines().next());
                assert_eq!(g.lines().count(), w.lines().count(), "{g}\n---\n{w}");
            }
            assert_eq!(got[0], want[0]);
            assert_eq!(got[1], want[1]);
        }
        // The status names the server and its clients, from the CLI and over MCP.
        let server = processes(&store, "serve")[0];
        let status = status_of(&env, run.path());
        assert!(
            status.contains(&format!("server: pid {server}")),
            "{status}"
        );
        assert!(status.contains("8 clients"), "{status}");
        let resource = bridges[0]
            .service
            .read_resource(rmcp::model::ReadResourceRequestParams::new("pond://status"))
            .await
            .unwrap();
        let text = serde_json::to_value(&resource.contents[0]).unwrap()["text"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(text.matches("client (unix)").count(), 8, "{text}");
        assert!(text.contains("3 calls"), "{text}");
        // A second server for the same store refuses and names the first.
        let out = env
            .cmd(&["serve"])
            .env("XDG_RUNTIME_DIR", run.path())
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("pid {server}")), "{err}");
        drop(bridges);
        signal(server, nix::sys::signal::Signal::SIGTERM);
        assert!(
            wait_for(10.0, || !alive(server)),
            "the server did not stop on SIGTERM"
        );
        assert!(
            sockets_in(run.path()).is_empty(),
            "{:?}",
            sockets_in(run.path())
        );
        let status = status_of(&env, run.path());
        assert!(status.contains("server: none running"), "{status}");
    });
}

#[test]
fn a_killed_server_fails_the_call_in_flight_and_the_next_call_starts_another() {
    let env = Env::new();
    env.sync(&env.sources());
    let run = tempfile::tempdir().unwrap();
    let store = env.store().canonicalize().unwrap();
    runtime().block_on(async {
        let b = bridge(&env, run.path(), 60).await;
        call(&b.service, "pond_search", json!({"query": "invoices"})).await.unwrap();
        let server = processes(&store, "serve")[0];
        let slow = json!({"query": "SELECT count(*) AS n FROM range(100000000000)", "timeout_seconds": 60});
        let in_flight = call(&b.service, "pond_sql", slow);
        let killer = async {
            // The query reaches the sql worker, then the server dies.
            assert!(wait_for(20.0, || !processes(&store, "worker").is_empty()));
            tokio::time::sleep(Duration::from_millis(300)).await;
            signal(server, nix::sys::signal::Signal::SIGKILL);
            Instant::now()
        };
        let (answer, killed_at) = tokio::join!(in_flight, killer);
        let err = answer.expect_err("the call in flight fails");
        assert!(killed_at.elapsed() < Duration::from_secs(2), "the error came late");
        assert!(err.contains("retry"), "{err}");
        // The next call works: a new server, the same session.
        let log = || std::fs::read_to_string(store.join("serve.log")).unwrap_or_default();
        let hits = call(&b.service, "pond_search", json!({"query": "invoices"}))
            .await
            .unwrap_or_else(|e| panic!("{e}; the servers' log:\n{}", log()));
        assert!(hits.contains("invoices"), "{hits}");
        let now = processes(&store, "serve");
        assert_eq!(now.len(), 1);
        assert_ne!(now[0], server);
        // The dead server's sql worker does not outlive it.
        assert!(wait_for(10.0, || processes(&store, "worker").is_empty()), "orphaned worker");
        drop(b);
        signal(now[0], nix::sys::signal::Signal::SIGTERM);
        assert!(wait_for(10.0, || !alive(now[0])));
    });
}

#[test]
fn the_server_exits_when_the_last_client_leaves_and_leaves_nothing_behind() {
    let env = Env::new();
    env.sync(&env.sources());
    let run = tempfile::tempdir().unwrap();
    let store = env.store().canonicalize().unwrap();
    runtime().block_on(async {
        let b = bridge(&env, run.path(), 2).await;
        call(
            &b.service,
            "pond_sql",
            json!({"query": "SELECT count(*) AS n FROM messages"}),
        )
        .await
        .unwrap();
        let server = processes(&store, "serve")[0];
        let sockets = sockets_in(run.path());
        assert!(
            sockets
                .iter()
                .any(|p| p.extension().is_some_and(|x| x == "sock")),
            "{sockets:?}"
        );
        // Still in use: it stays.
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(alive(server));
        let Bridge { service, _child } = b;
        service.cancel().await.unwrap();
        drop(_child);
        assert!(
            wait_for(15.0, || !alive(server)),
            "the idle server did not exit"
        );
        assert!(
            sockets_in(run.path()).is_empty(),
            "{:?}",
            sockets_in(run.path())
        );
        assert!(
            processes(&store, "worker").is_empty(),
            "a worker outlived the server"
        );
    });
}

/// The parent pid of `pid`, from `/proc/<pid>/stat` (the field after the name).
fn parent_of(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    after_name.split(' ').nth(1).unwrap().parse().unwrap()
}

#[test]
fn the_server_a_bridge_starts_is_not_its_child_and_leaves_no_zombie() {
    let env = Env::new();
    let run = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        let b = bridge(&env, run.path(), 60).await;
        let store = env.store().canonicalize().unwrap();
        let bridge_pid = b._child.id().unwrap();
        let server = processes(&store, "serve")[0];
        // `pond mcp` started it, then became `pond-bridge`, which would never reap it.
        assert_ne!(parent_of(server), bridge_pid);
        signal(server, nix::sys::signal::Signal::SIGTERM);
        // Gone while the bridge that started it lives: not a zombie waiting for it.
        assert!(
            wait_for(10.0, || !alive(server)),
            "the server is {}",
            std::fs::read_to_string(format!("/proc/{server}/stat")).unwrap_or_default()
        );
        assert!(alive(bridge_pid));
        let Bridge { service, _child } = b;
        service.cancel().await.unwrap();
        drop(_child);
        // The server the bridge started again after the first one's death.
        for s in processes(&store, "serve") {
            signal(s, nix::sys::signal::Signal::SIGTERM);
            assert!(wait_for(10.0, || !alive(s)));
        }
    });
}

#[test]
fn one_clients_long_query_does_not_hold_up_another_clients_sql_or_search() {
    let env = Env::new();
    env.sync(&env.sources());
    let run = tempfile::tempdir().unwrap();
    let store = env.store().canonicalize().unwrap();
    runtime().block_on(async {
        let (a, b) = tokio::join!(bridge(&env, run.path(), 60), bridge(&env, run.path(), 60));
        let slow = json!({"query": "SELECT count(*) AS n FROM range(100000000000)", "timeout_seconds": 120});
        let mut long = Box::pin(call(&a.service, "pond_sql", slow));
        let others = async {
            // A's query is running in a worker before B asks.
            assert!(wait_for(20.0, || !processes(&store, "worker").is_empty()));
            tokio::time::sleep(Duration::from_millis(300)).await;
            let sql = call(
                &b.service,
                "pond_sql",
                json!({"query": "SELECT count(*) AS n FROM sessions"}),
            )
            .await
            .unwrap();
            let hits = call(&b.service, "pond_search", json!({"query": "invoices"}))
                .await
                .unwrap();
            (sql, hits)
        };
        // A's call is polled first (sent), then B's calls wait for its worker.
        let (sql, hits) = tokio::select! {
            biased;
            done = &mut long => panic!("A's endless query ended first: {done:?}"),
            both = others => both,
        };
        assert!(sql.contains("1 rows in"), "{sql}");
        assert!(hits.contains("invoices"), "{hits}");
        // Two SQL workers ran at once.
        assert!(processes(&store, "worker").len() >= 2);
        drop(b);
        drop(long);
        let Bridge { service, _child } = a;
        service.cancel().await.unwrap();
        let server = processes(&store, "serve")[0];
        signal(server, nix::sys::signal::Signal::SIGTERM);
        assert!(wait_for(10.0, || !alive(server)));
        assert!(wait_for(10.0, || processes(&store, "worker").is_empty()), "orphaned worker");
    });
}

#[test]
fn a_stale_socket_is_replaced_and_the_socket_is_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let run = tempfile::tempdir().unwrap();
    let dir = run.path().join("pond");
    // Made owner-only whatever the test's umask: pond uses a folder it did not make only when
    // nobody else can write it, and never changes its mode.
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
    }
    let socket = dir.join("stale.sock");
    // A dead server's leftovers: its socket file, and its lock with a pid, not held.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    std::fs::write(dir.join("stale.sock.lock"), "999999999").unwrap();
    assert!(std::os::unix::net::UnixStream::connect(&socket).is_err());
    let mut server = env
        .cmd(&["serve", "--socket"])
        .arg(&socket)
        .spawn()
        .unwrap();
    assert!(
        wait_for(20.0, || std::os::unix::net::UnixStream::connect(&socket)
            .is_ok()),
        "the server did not take the stale socket's place"
    );
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&socket), 0o600);
    assert_eq!(mode(&dir), 0o700);
    let pid = std::fs::read_to_string(dir.join("stale.sock.lock")).unwrap();
    assert_eq!(pid, server.id().to_string());
    signal(server.id(), nix::sys::signal::Signal::SIGTERM);
    assert!(server.wait().unwrap().success());
    assert!(!socket.exists() && !dir.join("stale.sock.lock").exists());
}
