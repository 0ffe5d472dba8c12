//! The query language on a real store with its full-text index: phrases keep their order,
//! exclusions remove, OR widens, prefixes expand, inline filters equal their flags, stop
//! words are said, a query finding nothing is loosened or respelled.

use pond_rows::{FileBatch, MessageRow, Origin, RecordRow, Role};
use pond_store::search::{self, SearchFilters, SearchMode, SearchRequest, SearchResults, SortBy};
use pond_store::{indexes, Store, StoreConfig, SyncWriter};

const DAY: i64 = 86_400_000;
const T0: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

/// (id, role, days after T0, project, text)
const MESSAGES: [(&str, Role, i64, &str, &str); 8] = [
    (
        "m1",
        Role::User,
        0,
        "/home/a/Volcano",
        "How do I install Ventoy on a USB stick?",
    ),
    (
        "m2",
        Role::Assistant,
        1,
        "/home/a/Volcano",
        "Ventoy needs you to install grub first, then nixos boots.",
    ),
    (
        "m3",
        Role::Assistant,
        2,
        "/home/a/shop",
        "The ventilation fan in the server room is loud.",
    ),
    (
        "m4",
        Role::User,
        3,
        "/home/a/shop",
        "Rebuild nixos with the new flake and reboot.",
    ),
    (
        "m5",
        Role::Assistant,
        4,
        "/home/a/shop",
        "Grub menu shows two entries after the update.",
    ),
    (
        "m6",
        Role::User,
        5,
        "/home/a/Volcano",
        "Ventoy copies ISO files; nothing else to install.",
    ),
    (
        "m8",
        Role::User,
        7,
        "/home/a/shop",
        "Our configuration keeps running; 请帮我查询开发机的状态。",
    ),
    (
        "m7",
        Role::Assistant,
        6,
        "/home/a/Volcano",
        "The decimal parser fails on CRLF input.",
    ),
];

async fn store(dir: &std::path::Path) -> Store {
    let store = Store::open(dir, StoreConfig::default()).unwrap();
    let mut b = FileBatch::default();
    for (line, (id, role, day, project, text)) in MESSAGES.iter().enumerate() {
        let line = line as u64 + 1;
        let session = if project.ends_with("shop") {
            "s-shop"
        } else {
            "s-volcano"
        };
        b.messages.push(MessageRow {
            session_id: session.into(),
            id: (*id).into(),
            timestamp: T0 + day * DAY,
            role: *role,
            source_agent: "claude-code".into(),
            project: Some((*project).into()),
            search_text: Some((*text).into()),
            model: None,
            source_path: format!("/x/{session}.jsonl"),
            source_line: line,
            origin: Origin::Own,
        });
        b.records.push(RecordRow {
            source_path: format!("/x/{session}.jsonl"),
            line,
            byte_offset: line * 100,
            session_id: Some(session.into()),
            record_type: Some("user".into()),
            raw: "{}".into(),
        });
    }
    let mut w = SyncWriter::begin(&store).await.unwrap();
    w.write(b, &[]).await.unwrap();
    drop(w.commit(Vec::new()).await.unwrap());
    indexes::ensure_indexes(&store, true).await.unwrap();
    store
}

fn request(query: &str, filters: SearchFilters) -> SearchRequest {
    SearchRequest {
        query: query.into(),
        filters,
        sort: SortBy::Recency,
        limit: 50,
        mode: SearchMode::Fts,
        reveal_secrets: false,
    }
}

async fn run(store: &Store, query: &str) -> SearchResults {
    run_with(store, query, SearchFilters::default()).await
}

async fn run_with(store: &Store, query: &str, filters: SearchFilters) -> SearchResults {
    search::search(store, &request(query, filters), None)
        .await
        .unwrap_or_else(|e| panic!("{query}: {e}"))
}

fn ids(r: &SearchResults) -> Vec<String> {
    let mut ids: Vec<String> = r
        .sessions
        .iter()
        .flat_map(|s| s.hits.iter().map(|h| h.row.message_id.clone()))
        .collect();
    ids.sort();
    ids
}

async fn found(store: &Store, query: &str) -> Vec<String> {
    ids(&run(store, query).await)
}

#[tokio::test]
async fn the_query_language_on_a_real_index() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path()).await;

    // Words: all must match.
    assert_eq!(found(&store, "install ventoy").await, ["m1", "m2", "m6"]);
    assert_eq!(found(&store, "ventoy grub").await, ["m2"]);
    // A phrase keeps its order and adjacency (punctuation and case aside).
    assert_eq!(found(&store, "\"install ventoy\"").await, ["m1"]);
    assert_eq!(
        found(&store, "\"ventoy install\"").await,
        Vec::<String>::new()
    );
    assert_eq!(found(&store, "\"INSTALL, Ventoy\"").await, ["m1"]);
    // Exclusion removes, written either way, a word or a phrase.
    assert_eq!(found(&store, "ventoy -nixos").await, ["m1", "m6"]);
    assert_eq!(found(&store, "ventoy NOT nixos").await, ["m1", "m6"]);
    assert_eq!(
        found(&store, "ventoy -\"install ventoy\"").await,
        ["m2", "m6"]
    );
    // OR widens.
    assert_eq!(found(&store, "grub OR flake").await, ["m2", "m4", "m5"]);
    assert_eq!(found(&store, "nixos grub OR flake").await, ["m2", "m4"]);
    // A prefix takes in every word it begins, not the word itself only.
    assert_eq!(found(&store, "vent*").await, ["m1", "m2", "m3", "m6"]);
    assert_eq!(found(&store, "ventil*").await, ["m3"]);
    // word~: within edits.
    assert_eq!(found(&store, "ventoi~").await, ["m1", "m2", "m6"]);
    // Accents and case do not matter.
    assert_eq!(found(&store, "DÉCIMAL").await, ["m7"]);

    // Inline filters equal their flags.
    let flag = |f: SearchFilters| run_with(&store, "ventoy", f);
    let by_flag = ids(&flag(SearchFilters {
        role: Some("user".into()),
        ..Default::default()
    })
    .await);
    assert_eq!(found(&store, "ventoy role:user").await, by_flag);
    assert_eq!(by_flag, ["m1", "m6"]);
    let by_flag = ids(&flag(SearchFilters {
        project: Some("volcano".into()),
        ..Default::default()
    })
    .await);
    assert_eq!(found(&store, "ventoy project:volcano").await, by_flag);
    assert_eq!(found(&store, "nixos project:\"a/shop\"").await, ["m4"]);
    let by_flag = ids(&flag(SearchFilters {
        from: Some(search::parse_date("2026-01-02").unwrap()),
        to: Some(search::parse_end_date("2026-01-05").unwrap()),
        ..Default::default()
    })
    .await);
    assert_eq!(
        found(&store, "ventoy after:2026-01-02 to:2026-01-05").await,
        by_flag
    );
    assert_eq!(by_flag, ["m2"]);
    assert_eq!(found(&store, "ventoy before:2026-01-02").await, ["m1"]);
    assert_eq!(
        found(&store, "ventoy client:claude-code").await,
        ["m1", "m2", "m6"]
    );
    // A word with a colon that is no filter is a word.
    assert_eq!(found(&store, "crlf:").await, ["m7"]);

    // Stop words are said, not silently matched against nothing.
    let r = run(&store, "the").await;
    assert_eq!(r.hits, 0);
    assert!(r.notes[0].contains("stop word"), "{:?}", r.notes);
    let r = run(&store, "the ventilation").await;
    assert_eq!(ids(&r), ["m3"]);
    assert!(r.notes[0].contains("the"), "{:?}", r.notes);

    // Nothing with every word: loosened to any, and said.
    let r = run(&store, "ventilation flake").await;
    assert_eq!(ids(&r), ["m3", "m4"]);
    assert!(
        r.notes[0].contains("no message holds all of"),
        "{:?}",
        r.notes
    );
    // A misspelling finds nothing and is respelled.
    let r = run(&store, "ventoi").await;
    assert_eq!(r.hits, 0);
    assert_eq!(r.suggestion.as_deref(), Some("ventoy"));
    let r = run(&store, "install ventoi project:volcano").await;
    assert_eq!(
        r.suggestion.as_deref(),
        Some("install ventoy project:volcano")
    );
}

#[tokio::test]
async fn what_the_index_cannot_decide_is_checked_in_the_text() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path()).await;
    // A prefix is at least as wide as its word, also when it is longer than the stem the
    // index holds (`install` is held as `instal`, `running` as `run`), and in Chinese.
    for (prefix, word) in [
        ("install*", "install"),
        ("running*", "running"),
        ("configuration*", "configuration"),
        ("开发机*", "开发机"),
    ] {
        let p = found(&store, prefix).await;
        let w = found(&store, word).await;
        assert!(
            !w.is_empty() && w.iter().all(|id| p.contains(id)),
            "{prefix} {p:?} {word} {w:?}"
        );
    }
    // A phrase in a script without spaces sits inside a run of text.
    assert_eq!(found(&store, "\"查询开发机\"").await, ["m8"]);
    assert_eq!(found(&store, "\"开发机的状态\"").await, ["m8"]);
    // A phrase on one side of OR is still a phrase.
    assert_eq!(
        found(&store, "\"ventoy install\" OR qqqqzz").await,
        Vec::<String>::new()
    );
    assert_eq!(
        found(&store, "\"install ventoy\" OR flake").await,
        ["m1", "m4"]
    );
    // A long word~ one edit from its word, whose stem is further.
    assert_eq!(found(&store, "configuraton~").await, ["m8"]);
    // A date past year 9999 (or before year 1) is no bound on that side.
    let f = SearchFilters {
        to: Some(search::parse_end_date("9999-12-31").unwrap()),
        ..Default::default()
    };
    assert_eq!(
        ids(&run_with(&store, "ventoy", f).await),
        ["m1", "m2", "m6"]
    );
    assert_eq!(
        found(&store, "ventoy since:20000y").await,
        ["m1", "m2", "m6"]
    );
    // A suggestion is given with loosened hits too, and never a stop word.
    let r = run(&store, "ventoi flake").await;
    assert_eq!(r.suggestion.as_deref(), Some("ventoy flake"), "{r:?}");
    let r = run(&store, "teh").await;
    assert_ne!(r.suggestion.as_deref(), Some("the"));
    // Marks are not stop words.
    let r = run(&store, "ventoy -").await;
    assert!(r.notes[0].contains("no letter or digit"), "{:?}", r.notes);
}

#[tokio::test]
async fn vector_search_keeps_the_exclusions_and_phrases() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path()).await;
    let mut embed = |texts: &[&str]| Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect());
    pond_store::vectors::backfill(&store, "fake", 2, 0, 16, &mut embed, &mut |_, _| {})
        .await
        .unwrap();
    let v = search::QueryVector {
        model: "fake".into(),
        vector: vec![1.0, 0.0],
    };
    for mode in [SearchMode::Vector, SearchMode::Hybrid] {
        let mut req = request(
            "ventoy -nixos -\"ventilation fan\"",
            SearchFilters::default(),
        );
        req.mode = mode;
        let r = search::search(&store, &req, Some(&v)).await.unwrap();
        assert_eq!(ids(&r), ["m1", "m5", "m6", "m7", "m8"], "{mode:?}");
        let mut req = request("\"install ventoy\"", SearchFilters::default());
        req.mode = mode;
        let r = search::search(&store, &req, Some(&v)).await.unwrap();
        assert_eq!(ids(&r), ["m1"], "{mode:?}");
    }
}

#[tokio::test]
async fn a_rare_phrase_is_found_behind_many_matches_of_its_words() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreConfig::default()).unwrap();
    let mut b = FileBatch::default();
    let mut push = |i: u64, text: String| {
        b.messages.push(MessageRow {
            session_id: "s".into(),
            id: format!("m{i}"),
            timestamp: T0 + i as i64,
            role: Role::User,
            source_agent: "claude-code".into(),
            project: None,
            search_text: Some(text),
            model: None,
            source_path: "/x/s.jsonl".into(),
            source_line: i + 1,
            origin: Origin::Own,
        });
        b.records.push(RecordRow {
            source_path: "/x/s.jsonl".into(),
            line: i + 1,
            byte_offset: i * 100,
            session_id: Some("s".into()),
            record_type: Some("user".into()),
            raw: "{}".into(),
        });
    };
    for i in 0..1500 {
        push(i, "alpha gamma beta".into());
    }
    // The phrase in a long message ranks below every short one holding both words.
    push(1500, format!("{} alpha beta", "delta ".repeat(400)));
    let mut w = SyncWriter::begin(&store).await.unwrap();
    w.write(b, &[]).await.unwrap();
    drop(w.commit(Vec::new()).await.unwrap());
    indexes::ensure_indexes(&store, true).await.unwrap();
    let mut req = request("\"alpha beta\"", SearchFilters::default());
    req.sort = SortBy::Relevance;
    req.limit = 10;
    let r = search::search(&store, &req, None).await.unwrap();
    assert_eq!(ids(&r), ["m1500"], "{r:?}");
}

#[tokio::test]
async fn query_mistakes_are_refused_with_the_syntax() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path()).await;
    for (query, says) in [
        ("\"install ventoy", "quote is not closed"),
        ("-ventoy", "only excludes"),
        ("OR ventoy", "OR needs a word on each side"),
        ("ventoy OR", "OR needs a word on each side"),
        ("ventoy OR -grub", "cannot be one side of OR"),
        ("ventoy NOT", "NOT ends the query"),
        ("project:volcano", "only filters"),
        ("ventoy after:someday", "cannot read date"),
        ("ventoy role:robot", "unknown role"),
        ("ventoy project:a project:b", "given twice"),
        ("*", "no letters before its *"),
        ("ventoy -after:2026-01-02", "cannot exclude"),
        ("\"\" \"\"", "no words to look for"),
    ] {
        let err = search::search(&store, &request(query, SearchFilters::default()), None)
            .await
            .expect_err(query)
            .to_string();
        assert!(err.contains(says), "{query}: {err}");
    }
    let many = vec!["word"; 65].join(" ");
    let err = search::search(&store, &request(&many, SearchFilters::default()), None)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("over the 64"), "{err}");
    // An inline filter and a flag that disagree.
    let f = SearchFilters {
        project: Some("shop".into()),
        ..Default::default()
    };
    let err = search::search(&store, &request("ventoy project:volcano", f), None)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("given twice"), "{err}");
}
