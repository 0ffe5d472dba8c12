//! A sync is one transaction: readers, and backfills, see only what a finished sync
//! committed; a killed sync's rows and the vectors made of them are gone after recovery.
//! What a backfill embeds first, and how often it embeds a text.

use pond_rows::{FileBatch, MessageRow, Origin, RecordRow, Role};
use pond_store::{schema, search, vectors, Store, StoreConfig, SyncWriter};

fn message(id: &str, text: &str) -> FileBatch {
    message_at(id, text, 1_700_000_000_000, 1)
}

/// A message written at `timestamp` from line `line` of the session's file.
fn message_at(id: &str, text: &str, timestamp: i64, line: u64) -> FileBatch {
    let mut b = FileBatch::default();
    b.messages.push(MessageRow {
        session_id: "s".into(),
        id: id.into(),
        timestamp,
        role: Role::User,
        source_agent: "claude-code".into(),
        project: None,
        search_text: Some(text.into()),
        model: None,
        source_path: "/x/s.jsonl".into(),
        source_line: line,
        origin: Origin::Own,
    });
    b.records.push(RecordRow {
        source_path: "/x/s.jsonl".into(),
        line,
        byte_offset: line * 100,
        session_id: Some("s".into()),
        record_type: Some("user".into()),
        raw: "{}".into(),
    });
    b
}

async fn backfill(store: &Store) -> vectors::BackfillStats {
    let mut embed = |texts: &[&str]| Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect());
    vectors::backfill(store, "fake", 2, 0, 16, &mut embed, &mut |_, _| {})
        .await
        .unwrap()
}

async fn messages(store: &Store) -> usize {
    match store.dataset(schema::MESSAGES).await.unwrap() {
        Some(ds) => ds.count_rows(None).await.unwrap(),
        None => 0,
    }
}

#[tokio::test]
async fn readers_and_backfills_see_only_committed_rows_and_recovery_drops_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreConfig::default()).unwrap();
    let mut w = SyncWriter::begin(&store).await.unwrap();
    w.write(message("m1", "committed words"), &[])
        .await
        .unwrap();
    drop(w.commit(Vec::new()).await.unwrap());
    assert_eq!(messages(&store).await, 1);

    // A sync writes a row and is "killed" (never commits).
    let mut w = SyncWriter::begin(&store).await.unwrap();
    w.write(message("m2", "uncommitted words"), &[])
        .await
        .unwrap();
    assert_eq!(
        messages(&store).await,
        1,
        "readers do not see the open sync's rows"
    );
    let b = backfill(&store).await;
    assert_eq!(b.embedded, 1, "a backfill embeds committed rows only");
    drop(w);

    // A vector of a row that never existed, as an older pond's backfill could leave.
    let stale = vectors::Pending {
        row_id: 9_999,
        message_id: "gone".into(),
        session_id: "s".into(),
        timestamp: 0,
        role: "user".into(),
        source_agent: "claude-code".into(),
        project: None,
        text: String::new(),
    };
    vectors::append(&store, "fake", 2, &[(stale, vec![0.0, 1.0])])
        .await
        .unwrap();

    // The next writer recovers: the open sync's row is rolled back, the stale vector pruned.
    let w = SyncWriter::begin(&store).await.unwrap();
    assert!(w.recovered);
    drop(w);
    assert_eq!(messages(&store).await, 1);
    let counts = vectors::counts(&store).await.unwrap();
    assert_eq!(counts, vec![("fake".to_owned(), 1)]);

    // Vector search answers from what exists.
    let req = search::SearchRequest {
        query: "words".into(),
        filters: Default::default(),
        sort: search::SortBy::Relevance,
        limit: 10,
        mode: search::SearchMode::Vector,
        reveal_secrets: false,
    };
    let v = search::QueryVector {
        model: "fake".into(),
        vector: vec![1.0, 0.0],
    };
    let r = search::search(&store, &req, Some(&v)).await.unwrap();
    assert_eq!(r.hits, 1);
}

/// The message ids that have a vector.
async fn with_vectors(store: &Store) -> Vec<String> {
    use futures::TryStreamExt;
    let ds = store.dataset(vectors::EMBEDDINGS).await.unwrap().unwrap();
    let mut scan = ds.scan();
    scan.project(&["message_id"]).unwrap();
    let batches: Vec<_> = scan
        .try_into_stream()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut ids: Vec<String> = batches
        .iter()
        .flat_map(|b| {
            let col = b
                .column(0)
                .as_any()
                .downcast_ref::<arrow_array::StringArray>()
                .unwrap();
            col.iter().flatten().map(str::to_owned).collect::<Vec<_>>()
        })
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn a_backfill_embeds_the_newest_first_and_each_distinct_text_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreConfig::default()).unwrap();
    let mut w = SyncWriter::begin(&store).await.unwrap();
    // Ten messages a second apart, m0 oldest; every text twice (m0 and m5 say "words 0").
    for i in 0..10u64 {
        let text = format!("words {}", i % 5);
        let at = 1_700_000_000_000 + i as i64 * 1000;
        w.write(message_at(&format!("m{i}"), &text, at, i + 1), &[])
            .await
            .unwrap();
    }
    drop(w.commit(Vec::new()).await.unwrap());
    let mut asked: Vec<String> = Vec::new();
    let mut embed = |texts: &[&str]| {
        asked.extend(texts.iter().map(|t| t.to_string()));
        Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect())
    };
    let first = vectors::backfill(&store, "fake", 2, 4, 16, &mut embed, &mut |_, _| {})
        .await
        .unwrap();
    assert_eq!((first.embedded, first.remaining), (4, 6));
    assert_eq!(with_vectors(&store).await, ["m6", "m7", "m8", "m9"]);
    let rest = vectors::backfill(&store, "fake", 2, 0, 16, &mut embed, &mut |_, _| {})
        .await
        .unwrap();
    assert_eq!((rest.embedded, rest.remaining), (6, 0));
    assert_eq!(with_vectors(&store).await.len(), 10);
    // m0..m5 hold five distinct texts ("words 0" twice): each embedded once.
    assert_eq!(asked.len(), 4 + 5, "{asked:?}");
}
