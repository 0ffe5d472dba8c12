//! One file, one identity: paths are canonical, so a folder synced under several spellings
//! stores its lines once; a store that holds a file under two spellings (written before
//! paths were canonical) is repaired by the next sync or rebuild; a store written by an
//! older pond (one message row per id) is upgraded from its stored lines.

use std::path::Path;

use futures::TryStreamExt;
use pond_ingest::{discover, read_file, FileCursor};
use pond_store::{Store, StoreConfig, SyncWriter};

use crate::common::Env;

fn sync_json(env: &Env, cwd: &Path, path: &str) -> serde_json::Value {
    let out = env
        .cmd(&["sync", "--path", path, "--json"])
        .current_dir(cwd)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn one_folder_under_every_spelling_is_stored_once() {
    let env = Env::new();
    let src = env.sources();
    let r = sync_json(&env, env.dir.path(), "sources");
    assert_eq!(r["records_added"], 37, "{r}");
    let r = sync_json(&env, &src, ".");
    assert_eq!(
        (r["files_new"].as_u64(), r["records_added"].as_u64()),
        (Some(0), Some(0)),
        "{r}"
    );
    assert_eq!(env.sync(&src)["records_added"], 0);
    std::os::unix::fs::symlink(&src, env.dir.path().join("link")).unwrap();
    let r = env.sync(&env.dir.path().join("link"));
    assert_eq!(
        (r["files_new"].as_u64(), r["records_added"].as_u64()),
        (Some(0), Some(0)),
        "{r}"
    );
    let r = env.sync(&src.join("claude/../claude/projects"));
    assert_eq!(r["records_added"], 0, "{r}");
    assert_eq!(env.count("records"), 37);
    assert_eq!(env.count("files"), 5);
    let paths = env.sql_json("SELECT path FROM files ORDER BY path");
    let canonical = std::fs::canonicalize(&src).unwrap();
    for p in paths.as_array().unwrap() {
        assert!(
            Path::new(p["path"].as_str().unwrap()).starts_with(&canonical),
            "{p}"
        );
    }
}

/// Write `env`'s fixtures into its store twice, as a pond that kept paths as given did when
/// a folder was synced as `sources` (relative, from `env.dir`) and then by its absolute
/// path: every line stored under both spellings, every cursor twice.
fn store_with_two_spellings(env: &Env) {
    let src = env.sources();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = Store::open(&env.store(), StoreConfig::default()).unwrap();
        let mut writer = SyncWriter::begin(&store).await.unwrap();
        let mut cursors: Vec<(String, FileCursor)> = Vec::new();
        let prefix = std::fs::canonicalize(env.dir.path()).unwrap();
        for relative in [false, true] {
            for f in discover(&src, None) {
                let out = read_file(&f, None);
                let mut batch = out.batch;
                let mut path = f.path.to_string_lossy().into_owned();
                if relative {
                    let rel = f.path.strip_prefix(&prefix).unwrap();
                    path = rel.to_string_lossy().into_owned();
                    for r in &mut batch.records {
                        r.source_path.clone_from(&path);
                    }
                    for m in &mut batch.messages {
                        m.source_path.clone_from(&path);
                    }
                    for s in &mut batch.sessions {
                        s.source_path.clone_from(&path);
                    }
                }
                writer.write(batch, &[]).await.unwrap();
                cursors.push((path, out.cursor));
            }
        }
        writer.commit(cursors).await.unwrap();
    });
    assert_eq!(env.count("records"), 74);
    assert_eq!(env.count("files"), 10);
}

#[test]
fn a_store_holding_a_file_under_two_spellings_is_repaired_by_the_next_sync() {
    let env = Env::new();
    store_with_two_spellings(&env);
    let r = env.sync(&env.sources());
    assert_eq!(r["paths_repaired"], 5, "{r}");
    assert_eq!(r["rederived"], true);
    assert_eq!(r["records_added"], 0);
    assert_eq!(env.count("records"), 37);
    assert_eq!(env.count("files"), 5);
    assert_eq!(env.count("messages"), 23);
    let text = env.ok(&["sync", "--path", env.sources().to_str().unwrap()]);
    assert!(!text.contains("upgraded"), "repaired once: {text}");
    // Each message once (c-u2 and c-a3), in the session that owns it.
    let hits = env.json(&["search", "drift OR cent", "--json"]);
    assert_eq!(hits["hits"], 2, "{hits}");
    assert_eq!(hits["sessions"].as_array().unwrap().len(), 1, "{hits}");
    assert_eq!(
        hits["sessions"][0]["session_id"],
        "11111111-1111-4111-8111-111111111111"
    );
}

#[test]
fn a_store_holding_a_file_under_two_spellings_is_repaired_by_rebuild() {
    let env = Env::new();
    store_with_two_spellings(&env);
    let r = env.json(&["rebuild", "--json"]);
    assert_eq!(
        (r["paths_repaired"].as_u64(), r["rederived"].as_bool()),
        (Some(5), Some(true)),
        "{r}"
    );
    assert_eq!(env.count("records"), 37);
    assert_eq!(env.count("files"), 5);
    // The relative spelling was the duplicate: what stays is canonical.
    let rel = env.sql_json("SELECT count(*) AS n FROM records WHERE source_path NOT LIKE '/%'");
    assert_eq!(rel[0]["n"], 0);
    let r = env.sync(&env.sources());
    assert_eq!(
        (r["records_added"].as_u64(), r["files_new"].as_u64()),
        (Some(0), Some(0)),
        "{r}"
    );
}

/// Rewrite `messages` as an older pond kept it: one row per message id (no replayed
/// copies), without the `origin` and `replayed` columns; drop its row map.
fn downgrade(env: &Env) {
    use arrow_array::{BooleanArray, RecordBatch, RecordBatchIterator};
    let uri = env.store().join("messages.lance");
    let uri = uri.to_str().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let ds = lance::Dataset::open(uri).await.unwrap();
        let batches: Vec<RecordBatch> = ds
            .scan()
            .try_into_stream()
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let mut old = Vec::new();
        for b in &batches {
            let replayed = b
                .column_by_name("replayed")
                .unwrap()
                .as_any()
                .downcast_ref::<BooleanArray>()
                .unwrap();
            let owners = BooleanArray::from_iter(replayed.iter().map(|r| Some(!r.unwrap())));
            let b = arrow_select::filter::filter_record_batch(b, &owners).unwrap();
            let keep: Vec<usize> = (0..b.num_columns())
                .filter(|&i| !["origin", "replayed"].contains(&b.schema().field(i).name().as_str()))
                .collect();
            old.push(b.project(&keep).unwrap());
        }
        let schema = old[0].schema();
        let params = lance::dataset::WriteParams {
            mode: lance::dataset::WriteMode::Overwrite,
            enable_stable_row_ids: true,
            ..Default::default()
        };
        let reader = RecordBatchIterator::new(old.into_iter().map(Ok), schema);
        lance::Dataset::write(reader, uri, Some(params))
            .await
            .unwrap();
    });
    std::fs::remove_file(env.store().join("messages.rmm")).unwrap();
}

#[test]
fn a_store_written_by_an_older_pond_is_upgraded_from_its_lines() {
    let env = Env::new();
    let replays = env.dir.path().join("replays");
    crate::common::copy_dir(
        &std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/replays/projects"),
        &replays,
    );
    env.sync(&replays);
    crate::embed::import_tiny_model(&env);
    let e = env.json(&["embed", "--json"]);
    let vectors = e["embedded"].as_u64().unwrap();
    assert!(vectors > 0);
    let expected = crate::replays::answers(&env);
    let near = env.json(&["search", "--mode", "vector", "export stall", "--json"]);

    downgrade(&env);
    let err = env.fails(&["search", "export"]);
    assert!(err.contains("pond rebuild"), "{err}");

    let r = env.json(&[
        "sync",
        "--path",
        replays.to_str().unwrap(),
        "--json",
        "--no-embed",
    ]);
    assert_eq!(
        (r["rederived"].as_bool(), r["paths_repaired"].as_u64()),
        (Some(true), Some(0)),
        "{r}"
    );
    assert_eq!(r["records_added"], 0);
    assert_eq!(crate::replays::answers(&env), expected);
    // The vectors moved to the new rows: none is computed again, vector search answers alike.
    let e = env.json(&["embed", "--json"]);
    assert_eq!(
        (e["embedded"].as_u64(), e["already"].as_u64()),
        (Some(0), Some(vectors)),
        "{e}"
    );
    assert_eq!(
        env.json(&["search", "--mode", "vector", "export stall", "--json"]),
        near
    );
}
