//! The real session files in `../shared/corpus`: every line of every file is accounted for,
//! stored as a record or skipped with a reason. Skipped (with a message) when the folder is
//! absent, as in a fresh clone.

use std::path::PathBuf;

use crate::common::Env;

fn shared_corpus() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    p.is_dir().then_some(p)
}

fn transcript_lines(dir: &std::path::Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            n += transcript_lines(&p);
        } else if p.extension().is_some_and(|x| x == "jsonl")
            && !matches!(
                p.file_name().and_then(|f| f.to_str()),
                Some("history.jsonl" | "session_index.jsonl")
            )
        {
            let bytes = std::fs::read(&p).unwrap();
            let newlines = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
            n += newlines + u64::from(!bytes.is_empty() && !bytes.ends_with(b"\n"));
        }
    }
    n
}

#[test]
fn every_line_of_the_shared_corpus_is_accounted_for() {
    let Some(corpus) = shared_corpus() else {
        eprintln!("skipped: ../shared/corpus is absent (a fresh clone has no shared corpus)");
        return;
    };
    let env = Env::new();
    // Copy: the test must not depend on the corpus folder being writable or stable.
    let src = env.dir.path().join("corpus");
    crate::common::copy_dir(&corpus, &src);
    let lines = transcript_lines(&src);
    let r = env.sync(&src);
    let records = r["records_added"].as_u64().unwrap();
    let skipped = r["skipped"].as_u64().unwrap();
    assert_eq!(records + skipped, lines, "{r}");
    assert_eq!(env.count("records") as u64, records);
    for ex in r["skip_examples"].as_array().unwrap() {
        assert!(!ex["reason"].as_str().unwrap().is_empty());
    }
    // Real data is searchable and gettable.
    assert!(env.count("messages") > 1000);
    let sessions = env.sql_json("SELECT id FROM sessions ORDER BY id LIMIT 1");
    let id = sessions[0]["id"].as_str().unwrap();
    env.ok(&["get-session", id]);
    let again = env.sync(&src);
    assert_eq!(again["records_added"], 0);
}
