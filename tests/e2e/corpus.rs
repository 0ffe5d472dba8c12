//! The real session files in `../shared/corpus`: every line of every file is accounted for,
//! stored as a record or skipped with a reason. Skipped (with a message) when the folder is
//! absent, as in a fresh clone.

use std::path::PathBuf;

use crate::common::Env;

fn shared_corpus() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if !p.is_dir() {
        eprintln!("skipped: ../shared/corpus is absent (a fresh clone has no shared corpus)");
    }
    p.is_dir().then_some(p)
}

/// A copy of the shared corpus (or of some of its folders) under `dir`: tests must not
/// depend on the corpus folder being writable or stable.
fn corpus_copy(dir: &std::path::Path, parts: &[&str]) -> Option<PathBuf> {
    let corpus = shared_corpus()?;
    let src = dir.join("corpus");
    if parts.is_empty() {
        crate::common::copy_dir(&corpus, &src);
    }
    for part in parts {
        crate::common::copy_dir(&corpus.join(part), &src.join(part));
    }
    Some(src)
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
    let env = Env::new();
    let Some(src) = corpus_copy(env.dir.path(), &[]) else {
        return;
    };
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

/// Every message id a session page lists, following `more_after` to the end.
fn listed(env: &Env, session: &str, extra: &[&str]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut args = vec![
            "get-session",
            session,
            "--limit",
            "500",
            "--max-bytes",
            "100000000",
            "--json",
        ];
        args.extend(extra);
        if let Some(a) = &after {
            args.extend(["--after", a.as_str()]);
        }
        let page = env.json(&args);
        for m in page["messages"].as_array().unwrap() {
            out.push((
                m["id"].as_str().unwrap().to_owned(),
                m["role"].as_str().unwrap().to_owned(),
            ));
        }
        match page["more_after"].as_str() {
            Some(a) => after = Some(a.to_owned()),
            None => return out,
        }
    }
}

fn json_lines(path: &std::path::Path) -> Vec<(u64, serde_json::Value)> {
    let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            serde_json::from_str::<serde_json::Value>(l)
                .ok()
                .filter(serde_json::Value::is_object)
                .map(|v| (i as u64 + 1, v))
        })
        .collect()
}

/// The uuids of a Claude Code file's user and assistant message lines.
fn message_uuids(lines: &[(u64, serde_json::Value)]) -> Vec<String> {
    lines
        .iter()
        .filter(|(_, v)| {
            matches!(v["type"].as_str(), Some("user" | "assistant"))
                && v.get("message").is_some()
                && v["uuid"].is_string()
        })
        .map(|(_, v)| v["uuid"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn every_session_of_the_shared_corpus_lists_every_message_of_its_own_file() {
    let env = Env::new();
    let Some(src) = corpus_copy(env.dir.path(), &[]) else {
        return;
    };
    env.sync(&src);
    let files = env.sql_json("SELECT id, source_path, source_agent FROM sessions ORDER BY id");
    let mut checked = (0, 0);
    for s in files.as_array().unwrap() {
        let (id, path, agent) = (
            s["id"].as_str().unwrap(),
            std::path::Path::new(s["source_path"].as_str().unwrap()),
            s["source_agent"].as_str().unwrap(),
        );
        let lines = json_lines(path);
        let expected: Vec<String> = match agent {
            // A session file's own user and assistant lines, by uuid.
            "claude-code" => message_uuids(&lines),
            // A rollout's response items that are messages, by `<session>:<line>`.
            "codex" => lines
                .iter()
                .filter(|(_, v)| {
                    let item = if v["type"] == "response_item" {
                        &v["payload"]
                    } else {
                        v
                    };
                    // Developer messages are system messages, left out of both sides.
                    let conversational = item["type"] != "message"
                        || matches!(item["role"].as_str(), Some("user" | "assistant"));
                    conversational
                        && matches!(
                            item["type"].as_str(),
                            Some(
                                "message"
                                    | "reasoning"
                                    | "function_call"
                                    | "function_call_output"
                                    | "custom_tool_call"
                                    | "custom_tool_call_output"
                                    | "local_shell_call"
                                    | "local_shell_call_output"
                                    | "web_search_call"
                                    | "tool_search_call"
                                    | "tool_search_output"
                            )
                        )
                })
                .map(|(line, _)| format!("{id}:{line}"))
                .collect(),
            _ => continue,
        };
        let mut want = expected.clone();
        want.sort();
        want.dedup();
        let mut got: Vec<String> = listed(&env, id, &[])
            .into_iter()
            .filter(|(_, role)| role != "system")
            .map(|(m, _)| m)
            .collect();
        got.sort();
        assert_eq!(got, want, "session {id} ({})", path.display());
        if agent == "codex" {
            checked.1 += 1;
        } else {
            checked.0 += 1;
        }
    }
    assert!(checked.0 > 50 && checked.1 > 3, "{checked:?}");
    // A subagent lists its own lines by default, and every line with its replayed context.
    let subs = env.sql_json(
        "SELECT id, source_path FROM sessions WHERE source_agent = 'claude-code/subagent' ORDER BY id",
    );
    for s in subs.as_array().unwrap() {
        let (id, path) = (
            s["id"].as_str().unwrap(),
            s["source_path"].as_str().unwrap(),
        );
        let mut want = message_uuids(&json_lines(std::path::Path::new(path)));
        want.sort();
        want.dedup();
        let mut all: Vec<String> = listed(&env, id, &["--include-replayed"])
            .into_iter()
            .filter(|(_, role)| role != "system")
            .map(|(m, _)| m)
            .collect();
        all.sort();
        assert_eq!(all, want, "subagent {id}");
    }
}

/// What a reader sees of a store: every session's pages, a sample of messages, searches.
fn corpus_answers(env: &Env) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    let sessions = env.sql_json("SELECT id FROM sessions ORDER BY id");
    for s in sessions.as_array().unwrap() {
        let id = s["id"].as_str().unwrap();
        for extra in [&[][..], &["--include-replayed"][..]] {
            let mut args = vec!["get-session", id, "--limit", "500", "--json"];
            args.extend(extra);
            out.insert(format!("session {id} {extra:?}"), env.json(&args));
        }
    }
    let ids = env.sql_json("SELECT DISTINCT id FROM messages ORDER BY id");
    for m in ids.as_array().unwrap().iter().step_by(40) {
        let id = m["id"].as_str().unwrap();
        out.insert(
            format!("message {id}"),
            env.json(&["get-message", id, "--json"]),
        );
    }
    for q in [
        "error",
        "test",
        "build",
        "config",
        "install",
        "commit",
        "docker",
        "python",
        "permission denied",
        "refactor the parser",
        "配置",
        "测试",
    ] {
        let args = ["search", q, "--limit", "50", "--json"];
        out.insert(format!("search {q}"), env.json(&args));
    }
    serde_json::Value::Object(out)
}

#[test]
fn the_shared_corpus_answers_alike_whatever_order_its_files_are_synced_in() {
    // The archive with every replay of the corpus (8 sessions whose subagents replay their
    // lines) and the smallest real runs of both clients: syncing every file of the whole
    // corpus one by one, three times, takes half an hour here.
    let dir = tempfile::tempdir().unwrap();
    let parts = [
        "4thehalibit-omarchy-backup",
        "kvsankar-agent-history",
        "tenequm-pond",
    ];
    let Some(src) = corpus_copy(dir.path(), &parts) else {
        return;
    };
    let mut files = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl")
                && !matches!(
                    p.file_name().and_then(|f| f.to_str()),
                    Some("history.jsonl" | "session_index.jsonl")
                )
            {
                files.push(p);
            }
        }
    }
    files.sort();
    let is_sub = |p: &std::path::PathBuf| p.to_string_lossy().contains("/agent-");
    let parents_first: Vec<_> = files
        .iter()
        .filter(|p| !is_sub(p))
        .chain(files.iter().filter(|p| is_sub(p)))
        .cloned()
        .collect();
    let subagents_first: Vec<_> = files
        .iter()
        .rev()
        .filter(|p| is_sub(p))
        .chain(files.iter().rev().filter(|p| !is_sub(p)))
        .cloned()
        .collect();
    let mut shuffled = files.clone();
    let mut rng = 7u64;
    for i in (1..shuffled.len()).rev() {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        shuffled.swap(i, (rng >> 33) as usize % (i + 1));
    }
    let mut results = Vec::new();
    for order in [parents_first, subagents_first, shuffled] {
        let env = Env::new();
        for f in &order {
            env.ok(&["sync", "--path", f.to_str().unwrap(), "--json"]);
        }
        results.push(corpus_answers(&env));
    }
    for (i, r) in results.iter().enumerate().skip(1) {
        for (k, v) in results[0].as_object().unwrap() {
            assert_eq!(r.get(k), Some(v), "order {i}: {k} differs");
        }
        assert_eq!(r, &results[0]);
    }
}

#[test]
fn every_session_of_the_shared_corpus_is_restored_byte_for_byte() {
    let env = Env::new();
    let Some(src) = corpus_copy(env.dir.path(), &[]) else {
        return;
    };
    env.sync(&src);
    let originals = crate::common::files_under(&src);
    std::fs::remove_dir_all(&src).unwrap();
    // Top-level sessions, and subagents whose parent the corpus does not hold.
    let top = env.sql_json(
        "SELECT id FROM sessions WHERE parent_session_id IS NULL \
         OR parent_session_id NOT IN (SELECT id FROM sessions)",
    );
    let ids: Vec<&str> = top
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let mut restored = 0;
    for id in &ids {
        let r = env.json(&["restore", id, "--json"]);
        for f in r["files"].as_array().unwrap() {
            let path = PathBuf::from(f["path"].as_str().unwrap());
            let state = f["state"].as_str().unwrap();
            // A file two sessions claim (a resumed session) is written once.
            assert!(state == "written" || state == "present", "{id}: {f}");
            let original = originals
                .get(&path)
                .unwrap_or_else(|| panic!("{} was not in the corpus", path.display()));
            assert!(
                std::fs::read(&path).unwrap() == *original,
                "{} differs from the original ({f})",
                path.display()
            );
            restored += 1;
        }
    }
    let sessions = env.count("sessions") as usize;
    assert_eq!(
        restored, sessions,
        "every stored session's file is restored"
    );
    eprintln!(
        "{} sessions ({restored} files with subagents) restored byte for byte",
        ids.len()
    );
}
