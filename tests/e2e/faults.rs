//! A sync killed with SIGKILL at any point leaves a store that opens, and the next sync
//! completes the work with nothing lost and nothing doubled.

use std::time::Duration;

use crate::common::Env;

#[test]
fn sigkill_mid_sync_then_resync_matches_a_clean_sync() {
    killed_syncs_match_a_clean_sync(pond_benches::corpus::Spec::new(6_000, 3));
}

/// The same with every client of the registry in the corpus (Gemini's replaced copies, Cursor's
/// lines without ids, Copilot's events).
#[test]
fn sigkill_mid_sync_of_every_client_then_resync_matches_a_clean_sync() {
    killed_syncs_match_a_clean_sync(pond_benches::corpus::Spec {
        copilot_share: 0.2,
        cursor_share: 0.2,
        gemini_share: 0.2,
        ..pond_benches::corpus::Spec::new(6_000, 4)
    });
}

fn killed_syncs_match_a_clean_sync(spec: pond_benches::corpus::Spec) {
    let env = Env::new();
    let corpus = env.dir.path().join("corpus");
    pond_benches::corpus::generate(&corpus, &spec).unwrap();

    let clean = Env::new();
    clean.sync(&corpus);
    let expect = (
        clean.count("messages"),
        clean.count("parts"),
        clean.count("records"),
        clean.count("sessions"),
    );
    assert!(expect.0 >= 6_000);

    for delay_ms in [150u64, 400, 900, 1600] {
        env.kill_after(
            &["sync", "--path", corpus.to_str().unwrap()],
            Duration::from_millis(delay_ms),
        );
        // The store opens and answers between the kill and the next sync.
        let _ = env.run(&["status"]);
    }
    let mut r = env.sync(&corpus);
    // A large file the worker was reading at two of the kills looks like a file that kills
    // it: it is set aside until it changes. It changes (as a live session does), and is read.
    let set_aside: Vec<String> = r["set_aside"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_owned())
        .collect();
    if !set_aside.is_empty() {
        for path in &set_aside {
            let f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
            f.set_modified(std::time::SystemTime::now()).unwrap();
        }
        r = env.sync(&corpus);
        assert!(r["set_aside"].as_array().unwrap().is_empty(), "{r}");
    }
    assert_eq!(r["skipped"], 0, "{r}");
    let got = (
        env.count("messages"),
        env.count("parts"),
        env.count("records"),
        env.count("sessions"),
    );
    assert_eq!(got, expect);
    let again = env.sync(&corpus);
    assert_eq!(again["messages_added"], 0);
    let hits = env.json(&["search", "checkout", "--json"]);
    assert!(hits["hits"].as_u64().unwrap() > 0);
}
