//! Embeddings end to end: model import, backfill in the embed worker, vector and hybrid
//! search from the CLI and over MCP, the worker's idle exit and respawn.

use std::path::PathBuf;

use pond_embed::random_bert::{self, Shape};
use serde_json::{json, Value};

use crate::common::Env;

/// A synced store with a tiny random model imported.
pub(crate) fn with_tiny_model() -> Env {
    let env = Env::new();
    env.sync(&env.sources());
    import_tiny_model(&env);
    env
}

/// Write a tiny random BERT and import it into `env`'s store as `tiny`.
pub(crate) fn import_tiny_model(env: &Env) {
    let model = env.dir.path().join("tiny-model");
    random_bert::write(&model, Shape::tiny(), 3).unwrap();
    let out = env.ok(&["model", "import", model.to_str().unwrap(), "--name", "tiny"]);
    assert!(out.contains("imported tiny"), "{out}");
}

/// A store synced from a generated corpus of `messages` messages, the tiny model imported.
fn generated_with_tiny_model(messages: u64, seed: u64) -> Env {
    let env = Env::new();
    let corpus = env.dir.path().join("corpus");
    pond_benches::corpus::generate(&corpus, &pond_benches::corpus::Spec::new(messages, seed))
        .unwrap();
    env.sync(&corpus);
    import_tiny_model(&env);
    env
}

fn search(env: &Env, mode: &str, query: &str) -> Value {
    env.json(&["search", "--mode", mode, query, "--json"])
}

fn first_session(v: &Value) -> &str {
    v["sessions"][0]["session_id"].as_str().unwrap_or("")
}

#[test]
fn embed_backfills_resumably_and_vector_search_answers() {
    let env = with_tiny_model();
    let model = env.ok(&["model", "show"]);
    assert!(model.contains("\"dtype\": \"int8\""), "{model}");

    // Before any vector: a clear error naming the fix.
    let err = env.fails(&["search", "--mode", "vector", "checkout"]);
    assert!(err.contains("pond embed"), "{err}");

    // A limit stops part-way; the next run does the rest, nothing twice.
    let r = env.json(&["embed", "--limit", "4", "--json"]);
    assert_eq!(
        (r["embedded"].as_u64(), r["remaining"].as_u64()),
        (Some(4), Some(7)),
        "{r}"
    );
    // Newest first: the four vectors are of the archive's four newest searchable messages,
    // and the status says which time they cover.
    let e = &env.json(&["status", "--json"])["embeddings"];
    assert_eq!(
        (&e["covered_from"], &e["covered_to"]),
        (
            &json!("2026-03-01T10:00:20Z"),
            &json!("2026-03-01T11:00:05Z")
        ),
        "{e}"
    );
    let text = env.ok(&["status"]);
    assert!(
        text.contains("messages from 2026-03-01 10:00 UTC to 2026-03-01 11:00 UTC"),
        "{text}"
    );
    let r = env.json(&["embed", "--json"]);
    assert_eq!(
        (r["embedded"].as_u64(), r["already"].as_u64()),
        (Some(7), Some(4)),
        "{r}"
    );
    assert_eq!(r["remaining"], 0);
    let r = env.json(&["embed", "--json"]);
    assert_eq!(r["embedded"], 0, "{r}");
    assert!(env.ok(&["model", "show"]).contains("11 vectors from tiny"));
    let status = env.json(&["status", "--json"]);
    let e = &status["embeddings"];
    assert_eq!(
        (&e["model"], &e["vectors"], &e["searchable"]),
        (&json!("tiny"), &json!(11), &json!(11)),
        "{e}"
    );
    let text = env.ok(&["status"]);
    assert!(
        text.contains("model tiny; 11 of 11 searchable messages"),
        "{text}"
    );

    let v = search(
        &env,
        "vector",
        "why does the checkout total drift by a cent?",
    );
    assert_eq!(v["mode"], "vector");
    assert_eq!(v["in_scope"], 11, "{v}");
    // The exact text of a stored message is its own nearest neighbour.
    let top = &v["sessions"][0]["hits"][0];
    assert_eq!(top["message_id"], "c-u2", "{v}");
    assert!(top["score"].as_f64().unwrap() > 0.99, "{top}");
    // Filters apply to vector search.
    let v = env.json(&[
        "search", "--mode", "vector", "checkout", "--agent", "codex", "--json",
    ]);
    for s in v["sessions"].as_array().unwrap() {
        assert_eq!(s["source_agent"], "codex", "{v}");
    }
    let h = search(&env, "hybrid", "tokenizer");
    assert_eq!(h["mode"], "hybrid");
    assert_eq!(
        first_session(&h),
        "22222222-2222-4222-8222-222222222222",
        "{h}"
    );

    // A sync embeds what it added.
    env.sync_one_more_message();
    let report = env.sync(&env.sources());
    assert_eq!(report["embedding"]["embedded"], 0, "{report}");
    let v = search(&env, "vector", "hello there, the quokka parser");
    assert_eq!(v["sessions"][0]["hits"][0]["message_id"], "zz", "{v}");
}

#[test]
fn import_refuses_what_it_cannot_serve() {
    let env = Env::new();
    // An empty store (status makes none).
    std::fs::create_dir(env.store()).unwrap();
    let status = env.json(&["status", "--json"]);
    assert!(status["embeddings"]["model"].is_null(), "{status}");
    assert!(env.ok(&["status"]).contains("embeddings: no model"));
    let missing = env.fails(&["model", "import", "/nonexistent/model"]);
    assert!(missing.contains("config.json"), "{missing}");
    let err = env.fails(&["model", "show"]);
    assert!(err.contains("pond model import"), "{err}");
    // A folder whose weights are not safetensors: refused, nothing half-written.
    let bad = env.dir.path().join("bad");
    random_bert::write(&bad, Shape::tiny(), 1).unwrap();
    std::fs::write(bad.join("model.safetensors"), b"\x00garbage").unwrap();
    env.fails(&["model", "import", bad.to_str().unwrap()]);
    assert!(!env.store().join("model").exists());
    // A config the encoder cannot be built from (zero heads divide by zero): refused at
    // import, and, if an asset has it anyway, by the embed worker without a crash.
    let zero = env.dir.path().join("zero-heads");
    random_bert::write(&zero, Shape::tiny(), 1).unwrap();
    let config = std::fs::read_to_string(zero.join("config.json")).unwrap();
    let mut v: Value = serde_json::from_str(&config).unwrap();
    v["num_attention_heads"] = 0.into();
    std::fs::write(zero.join("config.json"), v.to_string()).unwrap();
    let err = env.fails(&["model", "import", zero.to_str().unwrap()]);
    assert!(err.contains("num_attention_heads"), "{err}");
    import_tiny_model(&env);
    std::fs::write(env.store().join("model/config.json"), v.to_string()).unwrap();
    // The sync archives, then says why it could not embed.
    let src = env.sources();
    let err = env.fails(&["sync", "--path", src.to_str().unwrap()]);
    assert!(err.contains("num_attention_heads"), "{err}");
    let hits = env.json(&["search", "checkout total", "--json"]);
    assert!(hits["hits"].as_u64().unwrap() > 0, "{hits}");
    let err = env.fails(&["embed"]);
    assert!(
        err.contains("num_attention_heads") && !err.contains("died"),
        "{err}"
    );
}

/// all-MiniLM-L6-v2 from PyPI (`scripts/test.sh` fetches it and sets `POND_TEST_MINILM`).
fn minilm() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("POND_TEST_MINILM")?);
    dir.join("model.safetensors").exists().then_some(dir)
}

#[test]
fn a_real_model_finds_a_paraphrase_in_a_synced_store() {
    let Some(model) = minilm() else {
        eprintln!("skipped: POND_TEST_MINILM is not set (scripts/test.sh sets it)");
        return;
    };
    let env = Env::new();
    env.ok(&["model", "import", model.to_str().unwrap()]);
    // With a model, the sync embeds as it goes.
    let report = env.sync(&env.sources());
    assert_eq!(report["embedding"]["embedded"], 11, "{report}");
    // No word in common with the stored "why does the checkout total drift by a cent?" /
    // "Switch the cart to Decimal ... quantize to cents".
    let v = search(
        &env,
        "vector",
        "rounding error when adding up what the customer pays",
    );
    assert_eq!(
        first_session(&v),
        "11111111-1111-4111-8111-111111111111",
        "{v}"
    );
    let fts = env.json(&[
        "search",
        "rounding error when adding up what the customer pays",
        "--json",
    ]);
    assert_ne!(
        first_session(&fts),
        "11111111-1111-4111-8111-111111111111",
        "full-text alone does not find it first: {fts}"
    );
}

/// A minimal HTTP server in front of a folder, standing in for the Hugging Face hub:
/// `GET /<repo>/resolve/main/<file>` answers with the file, anything else 404.
fn serve_folder(repo: &str, dir: PathBuf) -> String {
    serve_folder_with(repo, dir, None)
}

/// [`serve_folder`] that names `model.safetensors`' sha256 as the hub does for LFS files
/// (`X-Linked-Etag`), and a commit (`X-Repo-Commit`).
fn serve_folder_with(repo: &str, dir: PathBuf, weights_sha256: Option<String>) -> String {
    let prefix = format!("/{repo}/resolve/main/");
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            reader.read_line(&mut request).unwrap();
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let path = request.split_whitespace().nth(1).unwrap_or("").to_owned();
            let file = path.rsplit('/').next().unwrap_or("");
            let mut out = stream;
            match std::fs::read(dir.join(file)) {
                Ok(body) if path.starts_with(&prefix) => {
                    let etag = match &weights_sha256 {
                        Some(h) if file == "model.safetensors" => {
                            format!("X-Linked-Etag: \"{h}\"\r\n")
                        }
                        _ => String::new(),
                    };
                    let _ = write!(
                        out,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nX-Repo-Commit: 0123456789abcdef0123456789abcdef01234567\r\n{etag}Connection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = out.write_all(&body);
                }
                _ => {
                    let _ = out.write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                }
            }
        }
    });
    format!("http://{addr}")
}

/// `pond model import` runs in an index worker, or in the CLI's own process with
/// `--in-process`: the same asset and answers either way, a relative folder read from the
/// caller's directory.
#[test]
fn model_import_answers_alike_in_a_worker_and_in_process() {
    let (worker, local) = (Env::new(), Env::new());
    let cwd = worker.dir.path();
    random_bert::write(&cwd.join("tiny-model"), Shape::tiny(), 3).unwrap();
    let import = |env: &Env, flags: &[&str]| {
        let args = [flags, &["model", "import", "tiny-model"]].concat();
        let out = env.cmd(&args).current_dir(cwd).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        stdout.replace(env.store().to_str().unwrap(), "STORE")
    };
    let imported = import(&worker, &[]);
    assert!(
        imported.starts_with("imported tiny-model (") && imported.contains("into STORE/model;"),
        "{imported}"
    );
    assert_eq!(import(&local, &["--in-process"]), imported);
    assert_eq!(
        local.ok(&["--in-process", "model", "show"]),
        worker.ok(&["model", "show"])
    );
}

#[test]
fn model_fetch_downloads_and_imports() {
    let env = Env::new();
    let hub = env.dir.path().join("hub");
    random_bert::write(&hub, Shape::tiny(), 5).unwrap();
    let endpoint = serve_folder("someone/tiny-e5", hub);
    let hub = [("POND_HF_ENDPOINT", endpoint.as_str())];
    let fetched = env.run_with(&["model", "fetch", "someone/tiny-e5"], &hub);
    assert!(fetched.status.success(), "{fetched:?}");
    // The download's progress, from the index worker that fetches, once per MiB of a file.
    let stderr = String::from_utf8_lossy(&fetched.stderr);
    let size = std::fs::metadata(env.dir.path().join("hub/model.safetensors"))
        .unwrap()
        .len();
    assert!(
        stderr.contains("\rconfig.json: 0 MiB of 0 MiB   ")
            && stderr.contains(&format!(
                "\rmodel.safetensors: 0 MiB of {} MiB   \n",
                size >> 20
            )),
        "{stderr}"
    );
    let shown = env.ok(&["model", "show"]);
    assert!(
        shown.contains("\"name\": \"someone/tiny-e5\"") && shown.contains("\"query: \""),
        "{shown}"
    );
    assert!(!env.store().join("model.download").exists());
    // A repo the hub does not have: a clear error, the imported model untouched.
    let err = env.fails_with(&["model", "fetch", "someone/missing"], &hub);
    assert!(
        err.contains("404") && err.contains("pond model import"),
        "{err}"
    );
    assert!(env.ok(&["model", "show"]).contains("someone/tiny-e5"));
}

#[test]
fn model_fetch_checks_what_it_downloads_and_keys_vectors_by_the_weights() {
    let env = Env::new();
    env.sync(&env.sources());
    let hub = env.dir.path().join("hub");
    random_bert::write(&hub, Shape::tiny(), 5).unwrap();
    // Weights that do not hash as the hub says: refused, nothing imported.
    let endpoint = serve_folder_with("someone/tiny-e5", hub.clone(), Some("0".repeat(64)));
    let vars = [("POND_HF_ENDPOINT", endpoint.as_str())];
    let err = env.fails_with(&["model", "fetch", "someone/tiny-e5"], &vars);
    assert!(
        err.contains("sha256") && err.contains("not imported"),
        "{err}"
    );
    assert!(env.fails(&["model", "show"]).contains("no model asset"));
    // Plain http anywhere but this machine is refused before connecting.
    let err = env.fails_with(
        &["model", "fetch", "someone/tiny-e5"],
        &[("POND_HF_ENDPOINT", "http://example.invalid")],
    );
    assert!(err.contains("use https"), "{err}");
    // The right hash: imported, with the hub's commit recorded.
    use sha2_hex::sha256_hex;
    let sha = sha256_hex(&std::fs::read(hub.join("model.safetensors")).unwrap());
    let endpoint = serve_folder_with("someone/tiny-e5", hub, Some(sha));
    let vars = [("POND_HF_ENDPOINT", endpoint.as_str())];
    env.ok_with(&["model", "fetch", "someone/tiny-e5"], &vars);
    let shown = env.ok(&["model", "show"]);
    assert!(
        shown.contains("0123456789abcdef0123456789abcdef01234567"),
        "{shown}"
    );
    // Vectors are keyed by the name and the weights' hash: another model under the same
    // name does not reuse them.
    env.ok(&["embed"]);
    let before = env.ok(&["model", "show"]);
    assert!(
        before.contains("11 vectors from someone/tiny-e5@"),
        "{before}"
    );
    let other = env.dir.path().join("other");
    random_bert::write(&other, Shape::tiny(), 6).unwrap();
    env.ok(&[
        "model",
        "import",
        other.to_str().unwrap(),
        "--name",
        "someone/tiny-e5",
    ]);
    let r = env.json(&["embed", "--json"]);
    assert_eq!(
        (r["already"].as_u64(), r["embedded"].as_u64()),
        (Some(0), Some(11)),
        "{r}"
    );
}

/// sha256 for the test above, through the `sha2` crate pond-embed uses.
mod sha2_hex {
    pub fn sha256_hex(bytes: &[u8]) -> String {
        use sha2::Digest;
        sha2::Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

#[test]
fn the_vector_index_is_built_past_its_threshold_and_exact_text_is_still_found_first() {
    let env = generated_with_tiny_model(4000, 9);
    let threshold = [("POND_VECTOR_INDEX_MIN_ROWS", "500")];
    let r = env.json_with(&["embed", "--json"], &threshold);
    assert!(r["embedded"].as_u64().unwrap() > 500, "{r}");
    assert_eq!(r["vector_index"], "created", "{r}");

    // A stored message's own text finds it through the index.
    let rows = env.sql_json(
        "SELECT id, search_text FROM messages WHERE searchable AND length(search_text) > 80 ORDER BY id LIMIT 3",
    );
    for row in rows.as_array().unwrap() {
        let text = row["search_text"].as_str().unwrap();
        let v = search(&env, "vector", text);
        assert_eq!(v["sessions"][0]["hits"][0]["message_id"], row["id"], "{v}");
    }
    let r = env.json_with(&["rebuild", "--vectors", "--json"], &threshold);
    let steps = r["steps"].to_string();
    assert!(steps.contains("vector index: created"), "{r}");
}

#[test]
fn a_backfill_killed_in_the_middle_resumes_without_loss_or_duplicates() {
    use crate::common::{children, running, signal, wait_for};
    use nix::sys::signal::Signal;
    let env = generated_with_tiny_model(3000, 4);
    let searchable = env.sql_json("SELECT count(*) AS n FROM messages WHERE searchable")[0]["n"]
        .as_u64()
        .unwrap();

    // Many small chunks (about 90), each its own commit; kill the worker after a few.
    let cli = env
        .cmd(&["embed", "--json"])
        .env("POND_EMBED_CHUNK_ROWS", "10")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let versions = env.store().join("embeddings.lance/_versions");
    // Committed versions only: Lance stages each manifest in the same folder
    // (`.tmp_7.manifest_<uuid>`) before renaming it, so a plain count runs ahead.
    let commits = || {
        std::fs::read_dir(&versions).map_or(0, |d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".manifest"))
                .count()
        })
    };
    assert!(wait_for(120.0, || commits() >= 4), "no chunk was committed");
    let worker = children(cli.id());
    assert_eq!(worker.len(), 1, "one embed worker: {worker:?}");
    assert!(running(worker[0]));
    signal(worker[0], Signal::SIGKILL);
    let out = cli.wait_with_output().unwrap();
    assert!(!out.status.success(), "the backfill was not cut short");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("worker"), "{err}");

    // What was committed stays; the next run does exactly the rest.
    let r = env.json(&["embed", "--json"]);
    let (embedded, already) = (
        r["embedded"].as_u64().unwrap(),
        r["already"].as_u64().unwrap(),
    );
    assert!(already >= 30 && already < searchable, "{r}");
    assert_eq!(embedded + already, searchable, "{r}");
    assert_eq!(r["remaining"], 0, "{r}");
    let shown = env.ok(&["model", "show"]);
    assert!(
        shown.contains(&format!("{searchable} vectors from tiny")),
        "no vector twice: {shown}"
    );
    let row = &env.sql_json(
        "SELECT id, search_text FROM messages WHERE searchable AND length(search_text) > 80 ORDER BY id LIMIT 1",
    )[0];
    let v = search(&env, "vector", row["search_text"].as_str().unwrap());
    assert_eq!(v["sessions"][0]["hits"][0]["message_id"], row["id"], "{v}");
}
