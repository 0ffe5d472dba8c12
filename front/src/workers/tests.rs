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
