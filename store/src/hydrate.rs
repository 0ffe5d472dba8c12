//! Hydration: from the row ids a ranked query returns to what a hit shows (session, message
//! id, role, time, project, agent, text). Rows the row map covers are read from the map
//! (memory-mapped, no Lance data pages); rows newer than the map, or every row when there
//! is no usable map, are taken from `messages` by row id. A row that no longer exists (a
//! vector whose message a sync rewrote, a hit from an index that predates a rewrite) is
//! skipped, never an error.

use std::collections::HashMap;

use arrow_array::types::UInt64Type;
use arrow_array::RecordBatch;
use lance::dataset::ProjectionRequest;
use lance::Dataset;
use serde::Serialize;

use crate::error::{Result, StoreError};
use crate::read::{opt_str, primitive_col, string_col, ts_at};
use crate::rowmap::Mapped;

/// What a hit shows of its row, besides score and text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HitRow {
    pub session_id: String,
    pub message_id: String,
    pub role: String,
    pub timestamp: i64,
    pub project: Option<String>,
    pub source_agent: String,
}

/// A hydrated row and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowMeta {
    pub row_id: u64,
    /// The row's position in the row map, `None` when it came from Lance.
    pub map_pos: Option<usize>,
    pub row: HitRow,
}

const META_COLUMNS: [&str; 6] = [
    "session_id",
    "id",
    "role",
    "timestamp",
    "project",
    "source_agent",
];

/// Rows of `messages` by row id (distinct), and for each id asked the index of its row in
/// the batch (`None`: no such row any more).
pub(crate) async fn take(
    ds: &Dataset,
    row_ids: &[u64],
    columns: &[&str],
) -> Result<(RecordBatch, Vec<Option<usize>>)> {
    for c in columns {
        if ds.schema().field(c).is_none() {
            return Err(StoreError::NotFound(format!("messages has no column {c}")));
        }
    }
    let mut with_id = vec!["_rowid"];
    with_id.extend_from_slice(columns);
    let projection = ProjectionRequest::from_columns(with_id, ds.schema());
    let b = ds.take_rows(row_ids, projection).await?;
    let got = primitive_col::<UInt64Type>(&b, "_rowid")?;
    let at: HashMap<u64, usize> = got
        .values()
        .iter()
        .enumerate()
        .map(|(i, r)| (*r, i))
        .collect();
    let index = row_ids.iter().map(|r| at.get(r).copied()).collect();
    Ok((b, index))
}

/// The metadata of `row_ids` (distinct), in the same order; `None` for a row that no
/// longer exists.
pub async fn metas(
    ds: &Dataset,
    mapped: Option<&Mapped>,
    row_ids: &[u64],
) -> Result<Vec<Option<RowMeta>>> {
    let mut out: Vec<Option<RowMeta>> = vec![None; row_ids.len()];
    let mut missing = Vec::new();
    for (i, &row_id) in row_ids.iter().enumerate() {
        let pos = match mapped {
            Some(m) => m.position(row_id)?,
            None => None,
        };
        match (mapped, pos) {
            (Some(m), Some(pos)) => {
                let r = m.map.row(pos)?;
                out[i] = Some(RowMeta {
                    row_id,
                    map_pos: Some(pos),
                    row: HitRow {
                        session_id: r.session_id.to_owned(),
                        message_id: r.message_id.into_owned(),
                        role: r.role.to_owned(),
                        timestamp: r.timestamp,
                        project: r.project.map(str::to_owned),
                        source_agent: r.source_agent.to_owned(),
                    },
                });
            }
            _ => missing.push(i),
        }
    }
    if !missing.is_empty() {
        let ids: Vec<u64> = missing.iter().map(|&i| row_ids[i]).collect();
        let (b, index) = take(ds, &ids, &META_COLUMNS).await?;
        let (session, id, role, project, agent) = (
            string_col(&b, "session_id")?,
            string_col(&b, "id")?,
            string_col(&b, "role")?,
            string_col(&b, "project")?,
            string_col(&b, "source_agent")?,
        );
        for (&i, k) in missing.iter().zip(index) {
            let Some(k) = k else { continue };
            out[i] = Some(RowMeta {
                row_id: row_ids[i],
                map_pos: None,
                row: HitRow {
                    session_id: session.value(k).to_owned(),
                    message_id: id.value(k).to_owned(),
                    role: role.value(k).to_owned(),
                    timestamp: ts_at(&b, "timestamp", k)?.unwrap_or_default(),
                    project: opt_str(project, k),
                    source_agent: agent.value(k).to_owned(),
                },
            });
        }
    }
    Ok(out)
}

/// The search text of each row (`None` for a message with none), in the same order.
pub async fn texts(
    ds: &Dataset,
    mapped: Option<&Mapped>,
    rows: &[&RowMeta],
) -> Result<Vec<Option<String>>> {
    let mut out = vec![None; rows.len()];
    let mut missing = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        match (mapped, r.map_pos) {
            (Some(m), Some(pos)) => out[i] = m.map.text(pos)?,
            _ => missing.push(i),
        }
    }
    if !missing.is_empty() {
        let ids: Vec<u64> = missing.iter().map(|&i| rows[i].row_id).collect();
        let (b, index) = take(ds, &ids, &["search_text"]).await?;
        let text = string_col(&b, "search_text")?;
        for (&i, k) in missing.iter().zip(index) {
            out[i] = k.and_then(|k| opt_str(text, k));
        }
    }
    Ok(out)
}
