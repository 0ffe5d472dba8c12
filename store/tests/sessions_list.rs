//! `pond sessions` over a store of 17,000 sessions (issue 43's figure: p50 <= 100 ms).
//! Ignored by default: building the store takes a while in a debug build. Run with
//! `cargo test -p pond-store --test sessions_list -- --ignored --nocapture`.

use std::time::Instant;

use pond_rows::{FileBatch, MessageRow, Origin, RecordRow, Role, SessionRow};
use pond_store::search::SearchFilters;
use pond_store::sessions::{self, SessionsRequest};
use pond_store::{indexes, Store, StoreConfig, SyncWriter};

const SESSIONS: usize = 17_000;
const MESSAGES_PER_SESSION: usize = 6;

fn batch(from: usize, to: usize) -> FileBatch {
    let mut b = FileBatch::default();
    for s in from..to {
        let id = format!("{s:08x}-0000-4000-8000-{s:012x}");
        let path = format!("/home/a/.claude/projects/p{}/{id}.jsonl", s % 40);
        let project = format!("/home/a/repo-{}", s % 40);
        let start = 1_700_000_000_000 + s as i64 * 60_000;
        b.sessions.push(SessionRow {
            id: id.clone(),
            source_agent: "claude-code".into(),
            project: Some(project.clone()),
            created_at: Some(start),
            updated_at: Some(start + MESSAGES_PER_SESSION as i64 * 1000),
            source_path: path.clone(),
            ..SessionRow::default()
        });
        for m in 0..MESSAGES_PER_SESSION {
            let role = if m % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            let line = m as u64 + 1;
            b.messages.push(MessageRow {
                session_id: id.clone(),
                id: format!("{id}:{m}"),
                timestamp: start + m as i64 * 1000,
                role,
                source_agent: "claude-code".into(),
                project: Some(project.clone()),
                search_text: Some(format!(
                    "/plan\n```\nlog line {s}\n```\nmake the importer {s} stream its input, step {m}"
                )),
                model: None,
                source_path: path.clone(),
                source_line: line,
                origin: Origin::Own,
            });
            b.records.push(RecordRow {
                source_path: path.clone(),
                line,
                byte_offset: line * 200,
                session_id: Some(id.clone()),
                record_type: Some(role.as_str().into()),
                raw: "{}".into(),
            });
        }
    }
    b
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "builds a 17,000-session store; run by hand for the figure"]
async fn listing_17000_sessions_takes_under_100_ms_at_the_median() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreConfig::default()).unwrap();
    let mut w = SyncWriter::begin(&store).await.unwrap();
    for from in (0..SESSIONS).step_by(4_250) {
        w.write(batch(from, from + 4_250), &[]).await.unwrap();
    }
    let lock = w.commit(Vec::new()).await.unwrap();
    indexes::ensure_indexes(&store, true).await.unwrap();
    store.refresh_rowmap(&lock).await.unwrap();
    drop(lock);

    let requests = [
        SessionsRequest {
            limit: sessions::DEFAULT_LIMIT,
            ..SessionsRequest::default()
        },
        SessionsRequest {
            filters: SearchFilters {
                project: Some("REPO-7".into()),
                ..SearchFilters::default()
            },
            limit: 50,
            ..SessionsRequest::default()
        },
        SessionsRequest {
            limit: sessions::MAX_LIMIT,
            offset: 8_000,
            ..SessionsRequest::default()
        },
    ];
    for req in &requests {
        let mut ms = Vec::new();
        for _ in 0..15 {
            let t = Instant::now();
            let list = sessions::list(&store, req).await.unwrap();
            ms.push(t.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(list.sessions.len(), req.limit.min(list.total));
            assert!(list.sessions.iter().all(|s| s.title.is_some()));
            assert!(list.sessions[0]
                .title
                .as_deref()
                .unwrap()
                .starts_with("make the importer"));
        }
        ms.sort_by(f64::total_cmp);
        println!(
            "sessions over {SESSIONS}: limit {} offset {} project {:?}: p50 {:.1} ms, max {:.1} ms",
            req.limit,
            req.offset,
            req.filters.project,
            ms[ms.len() / 2],
            ms[ms.len() - 1]
        );
    }
}
