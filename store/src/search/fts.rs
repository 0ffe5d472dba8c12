//! The full-text arm: BM25 over `messages.search_text`, ranked in Lance.

use arrow_array::types::{Float32Type, UInt64Type};
use lance_index::scalar::FullTextSearchQuery;

use crate::error::Result;
use crate::filters::SearchFilters;
use crate::read::primitive_col;
use crate::search::fold_accents;

/// BM25 ranking: (row id, score) of the best `pool` matches, and the searchable messages in
/// the filters' scope. Lance returns row ids and scores only.
pub(super) async fn rank_fts(
    ds: &lance::Dataset,
    query: &str,
    filters: &SearchFilters,
    pool: usize,
) -> Result<(Vec<(u64, f32)>, usize)> {
    let filter = filters.to_sql()?;
    let scope_filter = match &filter {
        Some(f) => format!("searchable AND {f}"),
        None => "searchable".to_owned(),
    };
    let fts = FullTextSearchQuery::new(fold_accents(query))
        .with_column("search_text".into())?
        .limit(Some(pool as i64));
    let mut scan = ds.scan();
    scan.full_text_search(fts)?
        .with_row_id()
        .project(&["_score"])?
        .prefilter(true)
        .limit(Some(pool as i64), None)?;
    if let Some(f) = &filter {
        scan.filter(f)?;
    }
    // The scope count and the ranked query read different columns: run them together.
    let ranked = async {
        let stream = scan.try_into_stream().await?;
        futures::TryStreamExt::try_collect::<Vec<_>>(stream).await
    };
    let (in_scope, batches) = futures::try_join!(ds.count_rows(Some(scope_filter)), ranked)?;
    let mut ranked: Vec<(u64, f32)> = Vec::new();
    for b in &batches {
        let row_id = primitive_col::<UInt64Type>(b, "_rowid")?;
        let score = primitive_col::<Float32Type>(b, "_score")?;
        ranked.extend((0..b.num_rows()).map(|i| (row_id.value(i), score.value(i))));
    }
    Ok((ranked, in_scope))
}
