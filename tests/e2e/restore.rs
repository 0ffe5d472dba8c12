//! `pond restore` and `pond export`: a session deleted by its client comes back byte for
//! byte from `records` (with its subagents, CRLF line ends, blank lines and a last line
//! without a newline), nothing is overwritten, and `--out` writes elsewhere.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use crate::common::{files_under, Env};

const SHOP: &str = "11111111-1111-4111-8111-111111111111";
const LEGACY: &str = "22222222-2222-4222-8222-222222222222";
const CODEX: &str = "33333333-3333-4333-8333-333333333333";

fn find(files: &BTreeMap<PathBuf, Vec<u8>>, id: &str) -> PathBuf {
    files
        .keys()
        .find(|p| p.to_string_lossy().ends_with(&format!("{id}.jsonl")))
        .unwrap_or_else(|| panic!("no file of {id}"))
        .clone()
}

/// The fixtures, made harder: the shop session gets a blank line and loses its last
/// newline, the Codex session is written with CRLF, the legacy one gets a malformed line.
fn sources(env: &Env) -> (PathBuf, BTreeMap<PathBuf, Vec<u8>>) {
    let src = env.sources();
    let files = files_under(&src);
    let shop = find(&files, SHOP);
    let text = String::from_utf8(files[&shop].clone()).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(2, "");
    std::fs::write(&shop, lines.join("\n")).unwrap();
    let codex = find(&files, CODEX);
    let text = String::from_utf8(files[&codex].clone()).unwrap();
    std::fs::write(&codex, text.replace('\n', "\r\n")).unwrap();
    let legacy = find(&files, LEGACY);
    let text = String::from_utf8(files[&legacy].clone()).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(1, "{not json");
    std::fs::write(&legacy, lines.join("\n") + "\n").unwrap();
    let files = files_under(&src);
    (src, files)
}

fn states(report: &Value) -> Vec<String> {
    report["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["state"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_deleted_session_comes_back_byte_for_byte_and_nothing_is_overwritten() {
    let env = Env::new();
    let (src, originals) = sources(&env);
    env.sync(&src);
    std::fs::remove_dir_all(&src).unwrap();

    // The shop session and its subagent, back where they were, byte for byte.
    let r = env.json(&["restore", SHOP, "--json"]);
    assert_eq!(states(&r), ["written", "written"], "{r}");
    let shop = find(&originals, SHOP);
    let sub: PathBuf = originals
        .keys()
        .find(|p| p.to_string_lossy().contains("agent-a1b2c3"))
        .unwrap()
        .clone();
    for p in [&shop, &sub] {
        assert_eq!(std::fs::read(p).unwrap(), originals[p], "{}", p.display());
    }
    // Its time is the session's last message, as the client left it.
    let modified = std::fs::metadata(&shop).unwrap().modified().unwrap();
    assert!(modified < std::time::SystemTime::now() - std::time::Duration::from_secs(86400));

    // CRLF line ends come back too; a malformed line that was never stored is named.
    let r = env.json(&["restore", CODEX, "--json"]);
    let codex = find(&originals, CODEX);
    assert_eq!(std::fs::read(&codex).unwrap(), originals[&codex]);
    assert_eq!(r["files"][0]["lines_missing"], 0, "{r}");
    let out = env.ok(&["restore", LEGACY]);
    assert!(
        out.contains("1 line") && out.contains("not stored"),
        "{out}"
    );

    // Again: everything is already there, nothing is written.
    let r = env.json(&["restore", SHOP, "--json"]);
    assert_eq!(states(&r), ["present", "present"], "{r}");

    // A file that differs is never overwritten, and then nothing is written at all.
    std::fs::remove_file(&sub).unwrap();
    std::fs::write(&shop, b"{\"changed\":true}\n").unwrap();
    let err = env.fails(&["restore", SHOP]);
    assert!(err.contains("differ") && err.contains("--out"), "{err}");
    assert_eq!(std::fs::read(&shop).unwrap(), b"{\"changed\":true}\n");
    assert!(!sub.exists(), "a refused restore wrote the subagent");
    let dry = env.json(&["restore", SHOP, "--dry-run", "--json"]);
    assert_eq!(states(&dry), ["differs", "missing"], "{dry}");
    assert!(!sub.exists(), "a dry run wrote");

    // Elsewhere: the subagent keeps its folder beside the session file.
    let out_dir = env.dir.path().join("out");
    let r = env.json(&[
        "restore",
        SHOP,
        "--out",
        out_dir.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(states(&r), ["written", "written"], "{r}");
    let restored = files_under(&out_dir);
    let main = out_dir.join(shop.file_name().unwrap());
    assert_eq!(restored[&main], originals[&shop]);
    let sub_rel = sub.strip_prefix(shop.parent().unwrap()).unwrap();
    assert_eq!(restored[&out_dir.join(sub_rel)], originals[&sub]);

    // Unknown ids are a clear error.
    let err = env.fails(&["restore", "no-such-session"]);
    assert!(err.contains("no stored session"), "{err}");
}

#[test]
fn export_writes_the_lines_or_a_readable_document_with_secrets_masked() {
    let env = Env::new();
    let src = env.sources();
    env.sync(&src);
    let originals = files_under(&src);
    let codex = find(&originals, CODEX);
    let jsonl = env.ok(&["export", CODEX, "--format", "jsonl"]);
    assert_eq!(jsonl.as_bytes(), originals[&codex].as_slice());

    let md = env.ok(&["export", SHOP, "--format", "markdown"]);
    assert!(md.starts_with("# "), "{md}");
    assert!(md.contains(&format!("- session: `{SHOP}`")), "{md}");
    assert!(md.contains("## User"), "{md}");
    assert!(md.contains("## Assistant"), "{md}");

    // A secret in a session is masked unless revealed.
    let more = env.dir.path().join("more");
    std::fs::create_dir_all(&more).unwrap();
    let key = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    std::fs::write(
        more.join("s9.jsonl"),
        format!(
            "{{\"type\":\"user\",\"uuid\":\"zz\",\"sessionId\":\"s9\",\"timestamp\":\"2026-03-03T00:00:00Z\",\"cwd\":\"/x\",\"message\":{{\"role\":\"user\",\"content\":\"my token is {key}\"}}}}\n"
        ),
    )
    .unwrap();
    env.ok(&[
        "sync",
        "--path",
        more.to_str().unwrap(),
        "--source",
        "claude-code",
    ]);
    for format in ["jsonl", "markdown"] {
        let out = env.ok(&["export", "s9", "--format", format]);
        assert!(out.contains("[secret:") && !out.contains(key), "{out}");
        let out = env.ok(&["export", "s9", "--format", format, "--reveal-secrets"]);
        assert!(out.contains(key), "{out}");
    }
}

#[test]
fn a_reader_that_goes_away_ends_export_quietly() {
    let env = Env::new();
    env.sync(&env.sources());
    // `pond export ID | head -0`: the pipe's reader is gone before pond writes.
    let mut child = env
        .cmd(&["export", SHOP, "--format", "markdown"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{err}");
    assert!(
        !err.contains("panicked") && !err.contains("internal error"),
        "{err}"
    );
}
