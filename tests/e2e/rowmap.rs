//! The row map built by the rebuild worker: built, reported, damaged, rebuilt.

use crate::common::Env;

#[test]
fn rebuild_writes_the_row_map_and_status_reports_it() {
    let env = Env::new();
    let src = env.sources();
    env.sync(&src);
    let status = env.json(&["status", "--json"]);
    assert!(
        status["rowmap"].as_str().unwrap().contains("not built"),
        "{status}"
    );

    let r = env.json(&["rebuild", "--rowmap", "--json"]);
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{r}");
    assert!(
        steps[0][0]
            .as_str()
            .unwrap()
            .contains("23 rows, 5 sessions"),
        "{r}"
    );
    let file = env.store().join("messages.rmm");
    assert_eq!(r["rowmap_bytes"], std::fs::metadata(&file).unwrap().len());
    let status = env.json(&["status", "--json"]);
    assert!(
        status["rowmap"]
            .as_str()
            .unwrap()
            .contains("23 rows, 5 sessions"),
        "{status}"
    );
    assert!(
        status["rowmap"].as_str().unwrap().contains("current"),
        "{status}"
    );

    // New rows: the map says how far behind it is.
    let more = env.dir.path().join("more");
    std::fs::create_dir_all(&more).unwrap();
    std::fs::write(
        more.join("s9.jsonl"),
        r#"{"type":"user","uuid":"zz","sessionId":"s9","timestamp":"2026-03-03T00:00:00Z","cwd":"/x","message":{"role":"user","content":"hello there"}}
"#,
    )
    .unwrap();
    env.ok(&[
        "sync",
        "--path",
        more.to_str().unwrap(),
        "--source",
        "claude-code",
    ]);
    let status = env.json(&["status", "--json"]);
    assert!(
        status["rowmap"]
            .as_str()
            .unwrap()
            .contains("1 rows newer than the map"),
        "{status}"
    );

    // A damaged map is reported, never trusted, and a rebuild replaces it.
    let mut bytes = std::fs::read(&file).unwrap();
    let half = bytes.len() / 2;
    bytes.truncate(half);
    std::fs::write(&file, &bytes).unwrap();
    let status = env.json(&["status", "--json"]);
    assert!(
        status["rowmap"].as_str().unwrap().contains("damaged"),
        "{status}"
    );
    env.ok(&["rebuild", "--rowmap"]);
    let status = env.json(&["status", "--json"]);
    assert!(
        status["rowmap"]
            .as_str()
            .unwrap()
            .contains("24 rows, 6 sessions"),
        "{status}"
    );
    let leftovers: Vec<_> = std::fs::read_dir(env.store())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "no temp files: {leftovers:?}");
}
