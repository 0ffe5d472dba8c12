//! Full-text query latency.
//!
//! `cargo bench --workspace --bench fts_bench -- [--messages N] [--queries Q] [--work DIR]`
//! Generates and syncs (once) a corpus of N messages, then runs Q one-to-three-word queries
//! (fixed seed) through a freshly opened store with pond's default cache caps, the way the
//! front runs them: cold first query, then p50/p95 over the rest. Then hydration of 10
//! random hits from the row map versus from Lance by row id. Then what masking secrets
//! costs a search answer (search, render, mask against search, render, secrets revealed).
//! Then the same queries with every word fuzzy (`word~`) against them as written, in turn,
//! and `pond sessions`' listing (the newest page, and one filtered by project).

use std::time::Instant;

use pond_benches::corpus::Rng;
use pond_benches::report::r2;
use pond_benches::{report, work};
use pond_store::hydrate;
use pond_store::search::{search, SearchFilters, SearchMode, SearchRequest, SortBy};
use pond_store::{Store, StoreConfig};
use serde_json::json;

fn main() {
    pond_benches::work::accept(&["--messages", "--queries"], &[]);
    let messages = work::num("--messages", 100_000);
    let queries: usize = work::arg("--queries").map_or(200, |q| q.parse().expect("--queries Q"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let figures = rt.block_on(async {
        let store_dir = work::synced_store(messages).await;
        let store = Store::open(&store_dir, StoreConfig::default()).unwrap();
        let counts = store.counts().await.unwrap();
        let mut rng = Rng::new(42);
        let mut lat = Vec::with_capacity(queries);
        let mut cold_ms = 0.0;
        let mut hits = 0;
        for i in 0..=queries {
            let mut q = rng.pick(work::QUERY_TERMS).to_string();
            if rng.chance(0.3) {
                q.push(' ');
                q.push_str(rng.pick::<&str>(work::QUERY_TERMS));
            }
            let req = SearchRequest { query: q, filters: SearchFilters::default(), sort: SortBy::Relevance, limit: 10, mode: SearchMode::Fts, reveal_secrets: false };
            let t = Instant::now();
            let r = search(&store, &req, None).await.expect("search");
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            hits += r.hits;
            if i == 0 { cold_ms = ms } else { lat.push(ms) }
        }
        let mut filtered = Vec::new();
        for _ in 0..queries / 4 {
            let req = SearchRequest {
                query: rng.pick(work::QUERY_TERMS).to_string(),
                filters: SearchFilters { project: Some("shop".into()), role: Some("user".into()), ..Default::default() },
                sort: SortBy::Relevance,
                limit: 10,
                mode: SearchMode::Fts,
                reveal_secrets: false,
            };
            let t = Instant::now();
            search(&store, &req, None).await.expect("search");
            filtered.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        // A search answer as MCP gives it (search, render, mask), against the same answer
        // with secrets revealed: what masking costs. Both ways per query, in turn first.
        let (mut revealed, mut masked) = (Vec::new(), Vec::new());
        for i in 0..queries {
            let query = rng.pick(work::QUERY_TERMS).to_string();
            for reveal in [i % 2 == 0, i % 2 == 1] {
                let req = SearchRequest { query: query.clone(), filters: SearchFilters::default(), sort: SortBy::Relevance, limit: 10, mode: SearchMode::Fts, reveal_secrets: reveal };
                let t = Instant::now();
                let r = search(&store, &req, None).await.expect("search");
                let text = pond_front::render::search(&r);
                let shown = if reveal { text.len() } else { pond_front::render::masked(&text).len() };
                let ms = t.elapsed().as_secs_f64() * 1000.0;
                assert!(shown > 0);
                if reveal { revealed.push(ms) } else { masked.push(ms) }
            }
        }
        // Fuzzy (`word~`: within an edit or two) against exact, the same query in turn.
        let (mut exact, mut fuzzy) = (Vec::new(), Vec::new());
        for i in 0..queries {
            let mut words = vec![rng.pick(work::QUERY_TERMS).to_string()];
            if rng.chance(0.3) {
                words.push(rng.pick::<&str>(work::QUERY_TERMS).to_string());
            }
            let fuzzed: Vec<String> = words.iter().map(|w| format!("{w}~")).collect();
            let forms = [(false, words.join(" ")), (true, fuzzed.join(" "))];
            let order = if i % 2 == 0 { [0, 1] } else { [1, 0] };
            for k in order {
                let (is_fuzzy, query) = &forms[k];
                let req = SearchRequest { query: query.clone(), filters: SearchFilters::default(), sort: SortBy::Relevance, limit: 10, mode: SearchMode::Fts, reveal_secrets: false };
                let t = Instant::now();
                search(&store, &req, None).await.expect("search");
                let ms = t.elapsed().as_secs_f64() * 1000.0;
                if *is_fuzzy { fuzzy.push(ms) } else { exact.push(ms) }
            }
        }
        let exact_p50 = report::percentile(&mut exact, 50.0);
        let fuzzy_p50 = report::percentile(&mut fuzzy, 50.0);
        // `pond sessions`: the newest page, and a page filtered by project.
        let (mut newest, mut by_project) = (Vec::new(), Vec::new());
        let mut listed_sessions = 0;
        for _ in 0..queries.min(100) {
            for (filters, out) in [
                (SearchFilters::default(), &mut newest),
                (SearchFilters { project: Some("shop".into()), ..Default::default() }, &mut by_project),
            ] {
                let req = pond_store::sessions::SessionsRequest { filters, limit: pond_store::sessions::DEFAULT_LIMIT, offset: 0 };
                let t = Instant::now();
                let list = pond_store::sessions::list(&store, &req).await.expect("sessions");
                out.push(t.elapsed().as_secs_f64() * 1000.0);
                listed_sessions = listed_sessions.max(list.total);
            }
        }
        let revealed_p50 = report::percentile(&mut revealed, 50.0);
        let masked_p50 = report::percentile(&mut masked, 50.0);
        // Hydration of 10 hits: from the row map, and from Lance by row id (what the front
        // does for rows newer than the map, and for every row without one).
        let ds = store.require(pond_store::schema::MESSAGES).await.unwrap();
        let mapped = store.mapped(&ds).expect("the bench store has a current row map");
        let (mut from_map, mut from_lance) = (Vec::new(), Vec::new());
        for _ in 0..queries {
            let ids: Vec<u64> = (0..10)
                .map(|_| {
                    let pos = rng.below(mapped.map.rows() as u64) as usize;
                    mapped.map.row(pos).unwrap().row_id
                })
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            for (source, out) in [(Some(&mapped), &mut from_map), (None, &mut from_lance)] {
                let t = Instant::now();
                let metas = hydrate::metas(&ds, source, &ids).await.unwrap();
                let rows: Vec<_> = metas.iter().flatten().collect();
                let texts = hydrate::texts(&ds, source, &rows).await.unwrap();
                out.push(t.elapsed().as_secs_f64() * 1000.0);
                assert_eq!(texts.len(), ids.len());
            }
        }
        json!({
            "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
            "messages": counts.messages,
            "searchable_messages": counts.searchable_messages,
            "queries": queries,
            "limit": 10,
            "avg_hits": hits / (queries + 1),
            "cold_first_query_ms": r2(cold_ms),
            "p50_ms": r2(report::percentile(&mut lat, 50.0)),
            "p95_ms": r2(report::percentile(&mut lat, 95.0)),
            "filtered_p50_ms": r2(report::percentile(&mut filtered, 50.0)),
            "filtered_p95_ms": r2(report::percentile(&mut filtered, 95.0)),
            "hydrate10_map_p50_ms": (report::percentile(&mut from_map, 50.0) * 1000.0).round() / 1000.0,
            "hydrate10_map_p95_ms": (report::percentile(&mut from_map, 95.0) * 1000.0).round() / 1000.0,
            "hydrate10_lance_p50_ms": r2(report::percentile(&mut from_lance, 50.0)),
            "hydrate10_lance_p95_ms": r2(report::percentile(&mut from_lance, 95.0)),
            "answer_revealed_p50_ms": r2(revealed_p50),
            "answer_masked_p50_ms": r2(masked_p50),
            "mask_overhead_pct": r2((masked_p50 / revealed_p50 - 1.0) * 100.0),
            "exact_p50_ms": r2(exact_p50),
            "fuzzy_p50_ms": r2(fuzzy_p50),
            "fuzzy_p95_ms": r2(report::percentile(&mut fuzzy, 95.0)),
            "fuzzy_over_exact": r2(fuzzy_p50 / exact_p50),
            "sessions": listed_sessions,
            "sessions_list_p50_ms": r2(report::percentile(&mut newest, 50.0)),
            "sessions_list_p95_ms": r2(report::percentile(&mut newest, 95.0)),
            "sessions_project_p50_ms": r2(report::percentile(&mut by_project, 50.0)),
            "index_cache_mib": StoreConfig::default().index_cache_bytes >> 20,
            "process_footprint_mib": pond_front::footprint::of_self().map_or(0, |f| f.footprint_kib() / 1024),
        })
    });
    report::print("fts_bench", &figures);
}
