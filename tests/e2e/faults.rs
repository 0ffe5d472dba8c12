//! A sync killed with SIGKILL at any point leaves a store that opens, and the next sync
//! completes the work with nothing lost and nothing doubled.

use std::time::Duration;

use crate::common::Env;

#[test]
fn sigkill_mid_sync_then_resync_matches_a_clean_sync() {
    let env = Env::new();
    let corpus = env.dir.path().join("corpus");
    pond_benches::corpus::generate(&corpus, &pond_benches::corpus::Spec::new(6_000, 3)).unwrap();

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
    let r = env.sync(&corpus);
    assert_eq!(r["skipped"], 0);
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
