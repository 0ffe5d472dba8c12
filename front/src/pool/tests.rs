use super::*;

/// Workers whose "pond" is a shell script that ignores the worker arguments.
fn fake(script: &str) -> Workers {
    let mut config = WorkersConfig::new(WorkerCommand {
        exe: "/bin/sh".into(),
        args: vec!["-c".into(), script.into(), "sh".into()],
    });
    config.connect_timeout = Duration::from_millis(300);
    Workers::start(config)
}

fn sql_status(w: &Workers) -> WorkerStatus {
    w.status()
        .into_iter()
        .find(|s| s.kind == WorkerKind::Sql)
        .unwrap()
}

#[tokio::test]
async fn a_worker_that_never_connects_is_killed_at_the_connect_deadline() {
    let w = fake("sleep 30");
    let started = Instant::now();
    let e = w.run(Job::Ping, JobOptions::default()).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Crashed);
    assert!(e.message.contains("did not connect within 0.3 s"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(2));
    let s = sql_status(&w);
    assert_eq!((s.pid, s.crashes), (None, 1));
    w.shutdown().await;
}

#[tokio::test]
async fn a_worker_that_keeps_dying_is_reported_not_restarted_in_a_loop() {
    let w = fake("echo 'cannot start' >&2; exit 3");
    let started = Instant::now();
    for _ in 0..MAX_CRASHES {
        let e = w.run(Job::Ping, JobOptions::default()).await.unwrap_err();
        assert!(e.message.contains("exited with code 3"), "{e}");
    }
    // Backoff between the attempts: 0.1 + 0.2 + 0.4 + 0.8 s.
    assert!(started.elapsed() >= Duration::from_millis(1500));
    let refused_at = Instant::now();
    let e = w.run(Job::Ping, JobOptions::default()).await.unwrap_err();
    assert!(
        e.message.contains("crashed 5 times in the last minute"),
        "{e}"
    );
    assert!(
        e.message.contains("exited with code 3"),
        "the last exit is named: {e}"
    );
    assert!(
        refused_at.elapsed() < Duration::from_millis(100),
        "no spawn, no wait"
    );
    assert_eq!(sql_status(&w).crashes, 5);
    w.shutdown().await;
}

#[tokio::test]
async fn jobs_after_shutdown_fail_cleanly() {
    let w = fake("exit 0");
    w.shutdown().await;
    let e = w.run(Job::Ping, JobOptions::default()).await.unwrap_err();
    assert!(e.message.contains("shutting down"), "{e}");
}

/// A kind's slots without actors behind them: `busy[i]` jobs outstanding, `live[i]` a pid.
fn slots(kind: WorkerKind, busy: &[usize], live: &[bool]) -> Vec<Handle> {
    busy.iter()
        .zip(live)
        .enumerate()
        .map(|(slot, (&n, &live))| {
            let mut status = WorkerStatus::new(kind, slot);
            status.pid = live.then_some(1000 + slot as u32);
            Handle {
                tx: mpsc::channel(1).0,
                status: Arc::new(Mutex::new(status)),
                outstanding: Arc::new(AtomicUsize::new(n)),
            }
        })
        .collect()
}

fn sql() -> Job {
    Job::Sql(pond_protocol::job::SqlJob {
        query: "SELECT 1".into(),
        format: Default::default(),
        max_rows: 1,
        max_bytes: 100,
        timeout_ms: 1000,
        reveal_secrets: false,
    })
}

#[test]
fn a_sql_job_goes_to_an_idle_slot_the_live_one_first() {
    // A quiet front keeps one worker: the live idle one is reused, not a second started.
    assert_eq!(
        pick(&sql(), &slots(WorkerKind::Sql, &[0, 0], &[false, true])),
        1
    );
    assert_eq!(
        pick(&sql(), &slots(WorkerKind::Sql, &[0, 0], &[false, false])),
        0
    );
    // One client's long query holds slot 0: the next query takes slot 1, not the queue.
    assert_eq!(
        pick(&sql(), &slots(WorkerKind::Sql, &[1, 0], &[true, false])),
        1
    );
    // Both busy: the shorter queue.
    assert_eq!(
        pick(&sql(), &slots(WorkerKind::Sql, &[3, 1], &[true, true])),
        1
    );
    assert_eq!(pick(&sql(), &slots(WorkerKind::Sql, &[1], &[true])), 0);
}

#[test]
fn a_query_embedding_never_waits_behind_a_backfill() {
    let backfill = Job::Backfill(pond_protocol::job::BackfillRequest { limit: 0 });
    let query = Job::Embed(pond_protocol::job::EmbedJob {
        texts: vec!["how did we fix the flaky test".into()],
        query: true,
    });
    let embed = slots(WorkerKind::Embed, &[0, 1], &[true, true]);
    assert_eq!(pick(&backfill, &embed), 1);
    assert_eq!(
        pick(&query, &embed),
        0,
        "the backfill's slot is busy: not this one"
    );
    // One slot configured: both share it.
    let one = slots(WorkerKind::Embed, &[0], &[false]);
    assert_eq!((pick(&backfill, &one), pick(&query, &one)), (0, 0));
}

#[tokio::test]
async fn a_sql_worker_yields_the_cpu_to_searches() {
    // The fake worker says its nice value, then dies: the error carries its last words.
    let w = fake("echo nice=$(cut -d' ' -f19 /proc/$$/stat) >&2; exit 3");
    let e = w.run(Job::Ping, JobOptions::default()).await.unwrap_err();
    let nice: i32 = e
        .message
        .split("nice=")
        .nth(1)
        .and_then(|s| s.split(|c: char| !c.is_ascii_digit() && c != '-').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no nice value in {e}"));
    assert!(nice >= process::niceness(WorkerKind::Sql, 0), "{e}");
    assert!(nice >= 5, "{e}");
    w.shutdown().await;
}
