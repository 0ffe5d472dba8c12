//! A sync is one transaction: readers, and backfills, see only what a finished sync
//! committed; a killed sync's rows and the vectors made of them are gone after recovery.

use pond_ingest::{FileBatch, MessageRow, Origin, RecordRow, Role};
use pond_store::{schema, search, vectors, Store, StoreConfig, SyncWriter};

fn message(id: &str, text: &str) -> FileBatch {
    let mut b = FileBatch::default();
    b.messages.push(MessageRow {
        session_id: "s".into(),
        id: id.into(),
        timestamp: 1_700_000_000_000,
        role: Role::User,
        source_agent: "claude-code".into(),
        project: None,
        search_text: Some(text.into()),
        model: None,
        source_path: "/x/s.jsonl".into(),
        source_line: 1,
        origin: Origin::Own,
    });
    b.records.push(RecordRow {
        source_path: "/x/s.jsonl".into(),
        line: 1,
        byte_offset: 0,
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
