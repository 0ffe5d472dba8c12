//! The row map: built by sync and rebuild, reported, used to answer search and get, with
//! rows newer than it read from Lance; damaged or foreign maps are never trusted.

use serde_json::Value;

use crate::common::Env;

/// The row map line of `pond status`.
fn rowmap_state(env: &Env) -> String {
    let status = env.ok(&["status"]);
    status
        .lines()
        .find(|l| l.contains("row map"))
        .unwrap_or_else(|| panic!("no row map line: {status}"))
        .to_owned()
}

/// Every answer search and get give over the store: searches (filters, recency), every
/// session's first and last pages, every message with its neighbours.
fn answers(env: &Env) -> Vec<Value> {
    let mut out = Vec::new();
    for args in [
        &["search", "tokenizer"][..],
        &["search", "invoices", "--sort", "recency"],
        &["search", "prices", "--agent", "claude-code"],
        &["search", "parser", "--role", "assistant", "--limit", "3"],
        &["search", "hello", "--from", "2026-01-01"],
        &["search", "the", "--limit", "50"],
    ] {
        let mut a = args.to_vec();
        a.push("--json");
        out.push(env.json(&a));
    }
    let ids = |table: &str| -> Vec<String> {
        let rows = env.sql_json(&format!("SELECT id FROM {table} ORDER BY id"));
        let rows = rows.as_array().unwrap();
        rows.iter()
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect()
    };
    for id in ids("sessions") {
        out.push(env.json(&["get-session", &id, "--limit", "3", "--json"]));
        out.push(env.json(&[
            "get-session",
            &id,
            "--from",
            "end",
            "--limit",
            "2",
            "--json",
        ]));
    }
    for id in ids("messages") {
        out.push(env.json(&["get-message", &id, "--context", "2", "--json"]));
    }
    out
}

fn assert_no_temp_files(env: &Env) {
    let leftovers: Vec<_> = std::fs::read_dir(env.store())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "no temp files: {leftovers:?}");
}

fn assert_same(a: &[Value], b: &[Value], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x, y, "{what}");
    }
}

#[test]
fn sync_builds_the_map_and_answers_match_lance_with_and_without_it() {
    let env = Env::new();
    let src = env.sources();
    let report = env.sync(&src);
    assert_eq!(report["rowmap_rows"], 23, "{report}");
    let state = rowmap_state(&env);
    assert!(
        state.contains("23 rows, 5 sessions") && state.contains("current"),
        "{state}"
    );
    // `status --json` says the same in numbers.
    let json = &env.json(&["status", "--json"])["rowmap"];
    assert_eq!(
        (
            &json["state"],
            &json["rows"],
            &json["sessions"],
            &json["delta_rows"]
        ),
        (
            &Value::from("serving"),
            &Value::from(23),
            &Value::from(5),
            &Value::from(0)
        ),
        "{json}"
    );
    let file = env.store().join("messages.rmm");
    let mapped = answers(&env);
    assert!(mapped.len() > 30);

    // Without the map every row comes from Lance: the same answers.
    std::fs::remove_file(&file).unwrap();
    assert!(rowmap_state(&env).contains("not built"));
    assert_same(&mapped, &answers(&env), "no map");

    // A rebuilt map: the same answers again.
    let r = env.json(&["rebuild", "--rowmap", "--json"]);
    assert_eq!(r["rowmap_bytes"], std::fs::metadata(&file).unwrap().len());
    assert_same(&mapped, &answers(&env), "rebuilt map");

    // A small sync leaves the map as it is: the new rows are read from Lance.
    env.sync_one_more_message();
    let state = rowmap_state(&env);
    assert!(state.contains("1 rows newer than the map"), "{state}");
    let with_delta = answers(&env);
    let hit = &env.json(&["search", "quokka", "--json"])["sessions"][0];
    assert_eq!(hit["session_id"], "s9", "{hit}");
    assert_eq!(hit["hits"][0]["message_id"], "zz", "{hit}");
    let page = env.json(&["get-session", "s9", "--json"]);
    assert_eq!(
        page["messages"][0]["text"],
        "hello there, the quokka parser"
    );
    std::fs::rename(&file, env.dir.path().join("map.bak")).unwrap();
    assert_same(&with_delta, &answers(&env), "delta rows, no map");
    std::fs::rename(env.dir.path().join("map.bak"), &file).unwrap();

    // A sync finding the map missing builds it.
    std::fs::remove_file(&file).unwrap();
    let report = env.sync(&src);
    assert_eq!(report["messages_added"], 0);
    assert_eq!(report["rowmap_rows"], 24, "{report}");
    assert_same(&with_delta, &answers(&env), "map built by a no-op sync");
}

#[test]
fn damaged_or_foreign_maps_are_not_used_and_sync_replaces_them() {
    let env = Env::new();
    let src = env.sources();
    env.sync(&src);
    let file = env.store().join("messages.rmm");
    let good = answers(&env);

    // Truncated: reported, not trusted; answers come from Lance.
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    let state = rowmap_state(&env);
    assert!(
        state.contains("damaged") && state.contains("not used"),
        "{state}"
    );
    assert_same(&good, &answers(&env), "truncated map");
    // Flipped bytes in the row headers: still no crash, never wrong answers.
    let mut flipped = bytes.clone();
    for b in flipped.iter_mut().skip(200).step_by(97) {
        *b ^= 0x5a;
    }
    std::fs::write(&file, &flipped).unwrap();
    for args in [
        &["search", "tokenizer", "--json"][..],
        &["status", "--json"],
    ] {
        let out = env.run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.code().is_some() && !err.contains("panicked"),
            "no crash on {args:?}: {err}"
        );
    }

    // A map from another store (fewer rows than this one's fragments add up to).
    let other = Env::new();
    let one = other.dir.path().join("one");
    std::fs::create_dir_all(&one).unwrap();
    std::fs::copy(
        src.join("claude/projects/-home-dev-legacy/22222222-2222-4222-8222-222222222222.jsonl"),
        one.join("22222222-2222-4222-8222-222222222222.jsonl"),
    )
    .unwrap();
    other.sync(&one);
    std::fs::copy(other.store().join("messages.rmm"), &file).unwrap();
    let state = rowmap_state(&env);
    assert!(state.contains("does not match"), "{state}");
    assert_same(&good, &answers(&env), "foreign map");

    // The next sync replaces it.
    let report = env.sync(&src);
    assert_eq!(report["rowmap_rows"], 23, "{report}");
    assert!(rowmap_state(&env).contains("current"));
    assert_no_temp_files(&env);
}

/// A sync that finds nothing new reads the map's header, not its body: a sync checked this
/// file's body once (it built it), so damage that left its inode, length and mtime as they
/// were goes unnoticed by syncs, while the front, which checks every file it opens, reports
/// it and answers from Lance. A map changed in place (a new mtime) is checked again, and
/// the next sync replaces it.
#[test]
fn a_no_op_sync_reads_the_map_header_only_and_a_changed_map_is_checked_again() {
    let env = Env::new();
    let src = env.sources();
    env.sync(&src);
    let file = env.store().join("messages.rmm");
    let good = answers(&env);
    let whole = std::fs::read(&file).unwrap();
    let mut flipped = whole.clone();
    let at = flipped.len() - 64;
    flipped[at] ^= 0x5a;
    let write_in_place = |bytes: &[u8], keep_mtime: bool| {
        let f = std::fs::File::options().write(true).open(&file).unwrap();
        let mtime = f.metadata().unwrap().modified().unwrap();
        std::os::unix::fs::FileExt::write_all_at(&f, bytes, 0).unwrap();
        let bump = std::time::Duration::from_secs(if keep_mtime { 0 } else { 2 });
        f.set_modified(mtime + bump).unwrap();
    };
    write_in_place(&flipped, true);
    let report = env.sync(&src);
    assert_eq!(report["messages_added"], 0, "{report}");
    assert_eq!(report["rowmap_rows"], 0, "not rebuilt: {report}");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        flipped,
        "the map was not replaced"
    );
    let state = rowmap_state(&env);
    assert!(
        state.contains("checksum") && state.contains("not used"),
        "{state}"
    );
    assert_same(&good, &answers(&env), "a damaged map the sync trusts");

    write_in_place(&flipped, false);
    let report = env.sync(&src);
    assert_eq!(report["rowmap_rows"], 23, "rebuilt: {report}");
    assert!(rowmap_state(&env).contains("current"));
    assert_same(&good, &answers(&env), "after the rebuild");
}

#[test]
fn concurrent_rebuilds_one_builds_the_others_refuse_and_the_map_stays_whole() {
    let env = Env::new();
    env.sync(&env.sources());
    let good = answers(&env);
    let children: Vec<_> = (0..4)
        .map(|_| {
            env.cmd(&["rebuild", "--rowmap"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let built = outs.iter().filter(|o| o.status.success()).count();
    assert!(built >= 1, "at least one rebuild runs");
    for o in outs.iter().filter(|o| !o.status.success()) {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("lock"),
            "a refused rebuild names the lock: {err}"
        );
    }
    let state = rowmap_state(&env);
    assert!(
        state.contains("23 rows, 5 sessions") && state.contains("current"),
        "{state}"
    );
    assert_same(&good, &answers(&env), "after concurrent rebuilds");
    assert_no_temp_files(&env);
}
