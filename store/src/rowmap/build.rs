//! Building the map from the `messages` dataset, and when to.

use super::*;

/// The row map's file in a store's folder.
pub fn path_in(root: &Path) -> PathBuf {
    root.join("messages.rmm")
}

/// Build the store's row map from `messages` in one streaming pass (rows in row-id order,
/// batches of 4,096), replacing the old one atomically. The caller holds the store lock, so
/// no sync writes while the map is built and two builds never overlap.
///
/// Row ids are stable (they survive compaction), but fragment order need not follow them:
/// Lance may place a compacted fragment after newer ones. The row ids are read first (no
/// data pages); when the scan order is not row-id order, the rows are taken by sorted id.
pub async fn build(ds: &Dataset, path: &Path) -> Result<RowMapStats> {
    use futures::TryStreamExt;

    sweep_temps(path);
    let mut writer = RowMapWriter::create(path, ds.version_id(), Coverage::of(ds)?)?;
    let mut columns = MESSAGE_COLUMNS.to_vec();
    columns.extend(["source_line", "origin", "replayed"]);
    let ids = row_ids_in_scan_order(ds).await?;
    if ids.windows(2).all(|w| w[0] < w[1]) {
        let mut scan = ds.scan();
        scan.with_row_id()
            .project(&columns)?
            .batch_size(BUILD_BATCH)
            .scan_in_order(true);
        let mut stream = scan.try_into_stream().await?;
        while let Some(b) = stream.try_next().await? {
            push_batch(&mut writer, &b)?;
        }
    } else {
        let mut ids = ids;
        ids.sort_unstable();
        ids.dedup();
        let mut with_id = vec!["_rowid"];
        with_id.extend_from_slice(&columns);
        for chunk in ids.chunks(BUILD_BATCH) {
            let projection = lance::dataset::ProjectionRequest::from_columns(
                with_id.iter().copied(),
                ds.schema(),
            );
            let b = ds.take_rows(chunk, projection).await?;
            let b = sorted_by_row_id(&b)?;
            push_batch(&mut writer, &b)?;
        }
    }
    let stats = writer.finish()?;
    checked::note_whole(path);
    Ok(stats)
}

pub(crate) const BUILD_BATCH: usize = 4096;

/// Every row id of `messages`, in the order a scan yields them.
pub(crate) async fn row_ids_in_scan_order(ds: &Dataset) -> Result<Vec<u64>> {
    use futures::TryStreamExt;

    let mut scan = ds.scan();
    scan.with_row_id()
        .project::<&str>(&[])?
        .batch_size(64 * BUILD_BATCH)
        .scan_in_order(true);
    let mut stream = scan.try_into_stream().await?;
    let mut ids = Vec::new();
    while let Some(b) = stream.try_next().await? {
        ids.extend_from_slice(
            primitive_col::<arrow_array::types::UInt64Type>(&b, "_rowid")?.values(),
        );
    }
    Ok(ids)
}

/// `b` with its rows in increasing `_rowid` order.
pub(crate) fn sorted_by_row_id(b: &arrow_array::RecordBatch) -> Result<arrow_array::RecordBatch> {
    let ids = primitive_col::<arrow_array::types::UInt64Type>(b, "_rowid")?;
    let mut order: Vec<u32> = (0..b.num_rows() as u32).collect();
    order.sort_unstable_by_key(|&i| ids.value(i as usize));
    let order = arrow_array::UInt32Array::from(order);
    Ok(arrow_select::take::take_record_batch(b, &order)?)
}

pub(crate) fn push_batch(writer: &mut RowMapWriter, b: &arrow_array::RecordBatch) -> Result<()> {
    use arrow_array::Array;

    let row_ids = primitive_col::<arrow_array::types::UInt64Type>(b, "_rowid")?;
    let (session, id, role, agent, project, text, origin) = (
        string_col(b, "session_id")?,
        string_col(b, "id")?,
        string_col(b, "role")?,
        string_col(b, "source_agent")?,
        string_col(b, "project")?,
        string_col(b, "search_text")?,
        string_col(b, "origin")?,
    );
    for i in 0..b.num_rows() {
        let origin = Origin::parse(origin.value(i))
            .ok_or_else(|| corrupt(format!("unknown origin {:?}", origin.value(i))))?;
        writer.push(RowInput {
            row_id: row_ids.value(i),
            timestamp: ts_at(b, "timestamp", i)?.unwrap_or_default(),
            message_id: id.value(i),
            session_id: session.value(i),
            project: project.is_valid(i).then(|| project.value(i)),
            source_agent: agent.value(i),
            role: role.value(i),
            text: text.is_valid(i).then(|| text.value(i)),
            source_line: u64_at(b, "source_line", i)?,
            origin,
            replayed: bool_at(b, "replayed", i)? == Some(true),
        })?;
    }
    Ok(())
}

/// Rows newer than the map above which a sync rebuilds it. Below, readers take those rows
/// from the newest Lance fragments (the delta), which stays cheap while it is small; a
/// rebuild costs about 1.5 s per million rows.
pub fn delta_limit(map_rows: usize) -> usize {
    (map_rows / 20).max(20_000)
}

/// Whether a fitting map lags `messages` by more than [`delta_limit`] rows (a sync then
/// rebuilds it).
pub fn lags(m: &Mapped) -> bool {
    lags_by(m.map.rows(), m.delta_rows)
}

/// Whether a map of `map_rows` rows with `delta_rows` rows newer than it lags.
pub(crate) fn lags_by(map_rows: usize, delta_rows: usize) -> bool {
    delta_rows > delta_limit(map_rows)
}
